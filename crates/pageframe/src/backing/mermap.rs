//! The mermap ("epheMERal mapping"): per-CPU windows of short-lived mappings
//! through which pages are reached whatever their direct-map state. The
//! bookkeeping here is shared by both backings; what mapping a page into a
//! slot, copying bytes through it and flushing slots mean is each backing's
//! [`MermapSlots`]: this core never touches a byte.
//!
//! Each CPU owns a window of `slots_per_cpu` slots plus one reserved slot.
//! [`Mermap::get`] (mirrors mermap_get()) bump-allocates the next slot; a slot
//! is handed out once between two local flushes, so [`Mermap::put`] (mirrors
//! mermap_put()) of a window slot leaves the mapping in place: the stale
//! translation is harmless until the slot is reused, and the window is flushed
//! as a whole, once, when it wraps. That is the series' trade: one local flush
//! per `slots_per_cpu` pages instead of one per page. `get` may fail (fault
//! injection, as the series added for mermap_get()); the caller then falls
//! back on the CPU's reserved slot: map, use, unmap and flush at once.
//!
//! Invariants, per CPU: `next_slot <= slots_per_cpu`; slots `0..next_slot`
//! may hold mappings, slots `next_slot..slots_per_cpu` and the reserved slot
//! hold none; counters: `mermap_wraps` local flushes of whole windows plus
//! `mermap_fallbacks` flushes of the reserved slot make `tlb_flush_local`.
//!
//! Spans (an option beyond the series, off by default): with `span_pages`
//! above 1, a get maps the aligned run of `span_pages` pages around the page
//! into one slot, and a later get of a page inside a span still live in the
//! window uses that mapping instead of a new slot. In the kernel a slot is a
//! PTE write; in user space it is an `mmap` call costing microseconds, and a
//! span pays it once per run of pages that are populated in order. The
//! price: neighbours of the page asked for are reachable through this
//! CPU's window until it wraps.
//!
//! Access (an option beyond the series, [`MermapAccess`], `Window` by
//! default): how a backing reaches the page a slot hands out. The core's
//! bookkeeping (bump allocation, wraps and their local-flush count, fault
//! injection and the reserved slot, every counter) is the same in both
//! modes; only the backing's slot layer reads the setting. See the arena's
//! module documentation for what `FileIo` does there and why.
//!
//! Lock order: one CPU's window lock at a time, held across get, access and
//! put (the kernel holds off migration for as long); one CPU = one handle, so
//! it is uncontended.

use std::ops::Range;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rand::Rng;
use rand_pcg::Pcg64;

use super::counters::EventCounters;
use super::direct_map::DirectMap;
use super::BackingError;
use crate::types::{CpuId, Pfn};

/// How a backing reaches the page in a mermap slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MermapAccess {
    /// The series' mermap (default): a slot maps the page into the CPU's
    /// window and bytes are copied through that mapping.
    #[default]
    Window,
    /// Beyond the series: a slot maps nothing, and bytes are copied by file
    /// I/O at the page's offset in the backing's file (`pwrite`/`pread` of
    /// the arena's memfd). Slots are still handed out, wrapped, flushed and
    /// counted as in `Window`. The simulated backing has no file and
    /// behaves the same in both modes.
    FileIo,
}

/// How the mermap is sized, how it reaches pages and whether `mermap_get`
/// fails on purpose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MermapConfig {
    /// Slots per CPU window, at least 1 (default 64). The reserved slot comes
    /// on top.
    pub slots_per_cpu: u32,
    /// Probability in `0.0..=1.0` that a `mermap_get` fails and the reserved
    /// slot is used instead (default 0.0).
    pub fail_probability: f64,
    /// Seed of the fault injection: CPU `c` draws from its own PCG stream of
    /// `(seed, c)`, so a run does not depend on how CPUs interleave.
    pub seed: u64,
    /// Pages a window slot maps: 1 (default) is the series' mermap, one page
    /// per get; a power of two above 1 maps aligned spans and reuses live
    /// ones (see the module documentation).
    pub span_pages: u32,
    /// How the backing reaches a slot's page: `Window` (default) or
    /// `FileIo` (see [`MermapAccess`]).
    pub access: MermapAccess,
}

impl Default for MermapConfig {
    fn default() -> MermapConfig {
        MermapConfig {
            slots_per_cpu: 64,
            fail_probability: 0.0,
            seed: 0,
            span_pages: 1,
            access: MermapAccess::Window,
        }
    }
}

impl MermapConfig {
    /// Checks the ranges of the fields.
    pub fn validate(&self) -> Result<(), BackingError> {
        if self.slots_per_cpu == 0 {
            return Err(BackingError::Unsupported(
                "the mermap needs at least one slot per CPU",
            ));
        }
        if !(0.0..=1.0).contains(&self.fail_probability) {
            return Err(BackingError::Unsupported(
                "the mermap fail probability must lie in 0.0..=1.0",
            ));
        }
        if !self.span_pages.is_power_of_two() || self.span_pages > 1 << 20 {
            return Err(BackingError::Unsupported(
                "the mermap span must be a power of two up to 2^20 pages",
            ));
        }
        Ok(())
    }
}

/// What a backing does for the mermap: map a page into a slot, copy bytes
/// to and from a page in a slot, drop slots. The core calls the byte
/// methods only with pages it got from `map_slot` (or `page_in_span` of
/// them), between the map and the flush of their slot, with byte ranges it
/// checked to lie inside one page.
pub(crate) trait MermapSlots: Send + Sync {
    /// How a page in a slot is reached (an address, a file offset, nothing):
    /// the backing's business.
    type Page: Copy + Send + std::fmt::Debug;

    /// Maps `nr_pages` pages from `first` into slot `slot` of `cpu`'s window
    /// (slot `slots_per_cpu` is the reserved one; a slot has room for
    /// `span_pages` pages). Returns how the first page is reached until the
    /// slot is flushed.
    fn map_slot(
        &self,
        cpu: usize,
        slot: u32,
        first: Pfn,
        nr_pages: u64,
    ) -> Result<Self::Page, BackingError>;

    /// The page `index` pages after `first` in the span `map_slot` mapped.
    fn page_in_span(&self, first: Self::Page, index: u64) -> Self::Page;

    /// Zeroes the whole page (clear_page()).
    fn zero_page(&self, page: Self::Page) -> Result<(), BackingError>;

    /// Copies `bytes` into the page at `offset`.
    fn write(&self, page: Self::Page, offset: usize, bytes: &[u8]) -> Result<(), BackingError>;

    /// Copies bytes of the page from `offset` into `out`.
    fn read(&self, page: Self::Page, offset: usize, out: &mut [u8]) -> Result<(), BackingError>;

    /// Drops the mappings of slots `first..first + count` of `cpu`'s window
    /// and flushes them from the TLB (a local flush).
    fn flush_slots(&self, cpu: usize, first: u32, count: u32) -> Result<(), BackingError>;
}

/// One CPU's window state.
#[derive(Debug)]
struct CpuWindow<P> {
    /// The next slot to hand out; `slots_per_cpu` when the window is used up.
    next_slot: u32,
    /// Fault injection for this CPU.
    rng: Pcg64,
    /// With spans: the first PFN of each handed-out slot's span and how its
    /// first page is reached.
    live: Vec<(u64, P)>,
}

/// A slot handed out by [`Mermap::get`], to return with [`Mermap::put`].
struct MermapSlot<P> {
    /// How the page is reached in the slot.
    page: P,
    /// True for the CPU's reserved slot.
    reserved: bool,
}

/// The mermap of one backing: a window per CPU over the backing's slots.
#[derive(Debug)]
pub(crate) struct Mermap<S: MermapSlots> {
    config: MermapConfig,
    slots: S,
    windows: Vec<Mutex<CpuWindow<S::Page>>>,
}

impl<S: MermapSlots> Mermap<S> {
    /// Windows for `nr_cpus` CPUs (at least one) over `slots`.
    pub(crate) fn new(
        config: MermapConfig,
        nr_cpus: usize,
        slots: S,
    ) -> Result<Mermap<S>, BackingError> {
        Mermap::<S>::check(&config, nr_cpus)?;
        let windows = (0..nr_cpus as u64)
            .map(|cpu| {
                Mutex::new(CpuWindow {
                    next_slot: 0,
                    // One PCG stream per CPU.
                    rng: Pcg64::new(u128::from(config.seed), u128::from(cpu)),
                    live: Vec::new(),
                })
            })
            .collect();
        Ok(Mermap {
            config,
            slots,
            windows,
        })
    }

    /// Checks what [`Mermap::new`] needs, before anything is built.
    pub(crate) fn check(config: &MermapConfig, nr_cpus: usize) -> Result<(), BackingError> {
        config.validate()?;
        if nr_cpus == 0 {
            return Err(BackingError::Unsupported(
                "a backing needs at least one CPU",
            ));
        }
        Ok(())
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &MermapConfig {
        &self.config
    }

    /// The backing's slot layer.
    pub(crate) fn slots(&self) -> &S {
        &self.slots
    }

    /// Number of CPU windows.
    pub(crate) fn nr_cpus(&self) -> usize {
        self.windows.len()
    }

    /// Zeroes `nr_pages` pages from `start` one page at a time through `cpu`'s
    /// window (clear_page() on a mermap address).
    pub(crate) fn zero(
        &self,
        map: &DirectMap,
        counters: &EventCounters,
        cpu: CpuId,
        start: Pfn,
        nr_pages: u64,
    ) -> Result<(), BackingError> {
        let pages = map.check_range(start, nr_pages)?;
        self.for_each_page(map, counters, cpu, pages, |page| {
            self.slots.zero_page(page)?;
            counters.pages_zeroed(1);
            Ok(())
        })
    }

    /// Copies `bytes` into page `pfn` at `offset` through `cpu`'s window.
    pub(crate) fn write(
        &self,
        map: &DirectMap,
        counters: &EventCounters,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), BackingError> {
        let page = map.check_range(pfn, 1)?;
        map.check_bytes(offset, bytes.len())?;
        self.for_each_page(map, counters, cpu, page, |page| {
            self.slots.write(page, offset, bytes)?;
            counters.bytes_written(bytes.len());
            Ok(())
        })
    }

    /// Copies bytes of page `pfn` from `offset` into `out` through `cpu`'s
    /// window.
    pub(crate) fn read(
        &self,
        map: &DirectMap,
        counters: &EventCounters,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), BackingError> {
        let page = map.check_range(pfn, 1)?;
        map.check_bytes(offset, out.len())?;
        self.for_each_page(map, counters, cpu, page, |page| {
            self.slots.read(page, offset, out)?;
            counters.bytes_read(out.len());
            Ok(())
        })
    }

    /// Gets a slot for each page of `pages` in turn from `cpu`'s window, runs
    /// `access` on the page in it and puts the slot back, even when `access`
    /// failed (so the reserved slot never stays mapped); stops at the first
    /// failure.
    fn for_each_page(
        &self,
        map: &DirectMap,
        counters: &EventCounters,
        cpu: CpuId,
        pages: Range<u64>,
        mut access: impl FnMut(S::Page) -> Result<(), BackingError>,
    ) -> Result<(), BackingError> {
        let mut window = self.lock(cpu)?;
        let end_pfn = map.nr_pages();
        for pfn in pages.map(Pfn) {
            let slot = self.get(&mut window, counters, cpu.index(), pfn, end_pfn)?;
            let accessed = access(slot.page);
            self.put(slot, counters, cpu.index())?;
            accessed?;
        }
        Ok(())
    }

    fn lock(&self, cpu: CpuId) -> Result<MutexGuard<'_, CpuWindow<S::Page>>, BackingError> {
        let window = self
            .windows
            .get(cpu.index())
            .ok_or(BackingError::NoSuchCpu(cpu))?;
        // A panic elsewhere cannot leave the window inconsistent: its fields
        // change only after the slot operation they record succeeded.
        Ok(window.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Hands out a slot mapping `pfn`: the window's next one, after flushing
    /// the window if it is used up, or the reserved slot when the get fails.
    /// mirrors mermap_get() and its caller's fallback.
    fn get(
        &self,
        window: &mut CpuWindow<S::Page>,
        counters: &EventCounters,
        cpu: usize,
        pfn: Pfn,
        end_pfn: u64,
    ) -> Result<MermapSlot<S::Page>, BackingError> {
        let slots = self.config.slots_per_cpu;
        if window.rng.gen_bool(self.config.fail_probability) {
            let page = self.slots.map_slot(cpu, slots, pfn, 1)?;
            counters.mermap_map();
            return Ok(MermapSlot {
                page,
                reserved: true,
            });
        }
        let span = u64::from(self.config.span_pages);
        let base = pfn.0 & !(span - 1);
        let in_span = |first| MermapSlot {
            page: self.slots.page_in_span(first, pfn.0 - base),
            reserved: false,
        };
        if span > 1 {
            if let Some(&(_, first)) = window.live.iter().find(|(start, _)| *start == base) {
                return Ok(in_span(first));
            }
        }
        if window.next_slot == slots {
            self.slots.flush_slots(cpu, 0, slots)?;
            counters.mermap_wrap();
            window.next_slot = 0;
            window.live.clear();
        }
        let nr_pages = span.min(end_pfn - base);
        let first = self
            .slots
            .map_slot(cpu, window.next_slot, Pfn(base), nr_pages)?;
        window.next_slot += 1;
        if span > 1 {
            window.live.push((base, first));
        }
        counters.mermap_map();
        Ok(in_span(first))
    }

    /// Returns a slot: a window slot stays mapped until the window wraps; the
    /// reserved slot is unmapped and flushed now. mirrors mermap_put().
    fn put(
        &self,
        slot: MermapSlot<S::Page>,
        counters: &EventCounters,
        cpu: usize,
    ) -> Result<(), BackingError> {
        if slot.reserved {
            self.slots.flush_slots(cpu, self.config.slots_per_cpu, 1)?;
            counters.mermap_fallback();
        }
        Ok(())
    }
}
