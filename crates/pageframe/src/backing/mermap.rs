//! The mermap ("epheMERal mapping"): per-CPU windows of short-lived mappings
//! through which pages are reached whatever their direct-map state. The
//! bookkeeping here is shared by both backings; what mapping a page into a
//! slot and flushing slots mean is each backing's [`MermapSlots`].
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
//! Lock order: one CPU's window lock at a time, held across get, access and
//! put (the kernel holds off migration for as long); one CPU = one handle, so
//! it is uncontended.

use std::ops::Range;
use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rand::Rng;
use rand_pcg::Pcg64;

use super::counters::EventCounters;
use super::direct_map::DirectMap;
use super::BackingError;
use crate::types::{CpuId, Pfn};

/// How the mermap is sized and whether `mermap_get` fails on purpose.
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
}

impl Default for MermapConfig {
    fn default() -> MermapConfig {
        MermapConfig {
            slots_per_cpu: 64,
            fail_probability: 0.0,
            seed: 0,
            span_pages: 1,
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

/// What a backing does for the mermap: map a page into a slot, drop slots.
pub(crate) trait MermapSlots: Send + Sync {
    /// Maps `nr_pages` pages from `first` into slot `slot` of `cpu`'s window
    /// (slot `slots_per_cpu` is the reserved one; a slot has room for
    /// `span_pages` pages). Returns the address of the first page's first
    /// byte, valid until the slot is flushed, or `None` for a backing without
    /// bytes.
    fn map_slot(
        &self,
        cpu: usize,
        slot: u32,
        first: Pfn,
        nr_pages: u64,
    ) -> Result<Option<NonNull<u8>>, BackingError>;

    /// Bytes per page.
    fn page_size(&self) -> usize;

    /// Drops the mappings of slots `first..first + count` of `cpu`'s window
    /// and flushes them from the TLB (a local flush).
    fn flush_slots(&self, cpu: usize, first: u32, count: u32) -> Result<(), BackingError>;
}

/// One CPU's window state.
#[derive(Debug)]
struct CpuWindow {
    /// The next slot to hand out; `slots_per_cpu` when the window is used up.
    next_slot: u32,
    /// Fault injection for this CPU.
    rng: Pcg64,
    /// With spans: the first PFN and address of each handed-out slot's span.
    live: Vec<(u64, Option<usize>)>,
}

/// A slot handed out by [`Mermap::get`], to return with [`Mermap::put`].
struct MermapSlot {
    /// The page's first byte in the slot, `None` without bytes.
    addr: Option<NonNull<u8>>,
    /// True for the CPU's reserved slot.
    reserved: bool,
}

/// The mermap of one backing: a window per CPU over the backing's slots.
#[derive(Debug)]
pub(crate) struct Mermap<S> {
    config: MermapConfig,
    slots: S,
    windows: Vec<Mutex<CpuWindow>>,
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
        let page_size = map.page_size();
        self.for_each_page(map, counters, cpu, pages, |addr| {
            if let Some(addr) = addr {
                // SAFETY: `addr` is the first byte of a `page_size`-byte
                // read-write mapping of the page, live until the slot is put
                // back; the page's owner (the caller) is its only user.
                unsafe { std::ptr::write_bytes(addr.as_ptr(), 0, page_size) };
            }
            counters.pages_zeroed(1);
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
        self.for_each_page(map, counters, cpu, page, |addr| {
            if let Some(addr) = addr {
                // SAFETY: `offset + bytes.len() <= page_size` (checked above)
                // and `addr` starts a live `page_size`-byte read-write mapping
                // of the page, which cannot overlap `bytes` (a slot is mapped
                // by this backing only); bytes are copied, no reference to
                // the shared memory is made.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        addr.as_ptr().add(offset),
                        bytes.len(),
                    )
                };
            }
            counters.bytes_written(bytes.len());
        })
    }

    /// Copies bytes of page `pfn` from `offset` into `out` through `cpu`'s
    /// window; zeros when the backing has no bytes.
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
        self.for_each_page(map, counters, cpu, page, |addr| {
            match addr {
                // SAFETY: as in `write`, with source and destination swapped:
                // `offset + out.len() <= page_size`, the mapping is live and
                // readable, `out` is exclusively borrowed and not in a slot.
                Some(addr) => unsafe {
                    std::ptr::copy_nonoverlapping(
                        addr.as_ptr().add(offset),
                        out.as_mut_ptr(),
                        out.len(),
                    )
                },
                None => out.fill(0),
            }
            counters.bytes_read(out.len());
        })
    }

    /// Maps each page of `pages` in turn into a slot of `cpu`'s window, runs
    /// `access` on its address and puts the slot back.
    fn for_each_page(
        &self,
        map: &DirectMap,
        counters: &EventCounters,
        cpu: CpuId,
        pages: Range<u64>,
        mut access: impl FnMut(Option<NonNull<u8>>),
    ) -> Result<(), BackingError> {
        let mut window = self.lock(cpu)?;
        let end_pfn = map.nr_pages();
        for pfn in pages.map(Pfn) {
            let slot = self.get(&mut window, counters, cpu.index(), pfn, end_pfn)?;
            access(slot.addr);
            self.put(slot, counters, cpu.index())?;
        }
        Ok(())
    }

    fn lock(&self, cpu: CpuId) -> Result<MutexGuard<'_, CpuWindow>, BackingError> {
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
        window: &mut CpuWindow,
        counters: &EventCounters,
        cpu: usize,
        pfn: Pfn,
        end_pfn: u64,
    ) -> Result<MermapSlot, BackingError> {
        let slots = self.config.slots_per_cpu;
        if window.rng.gen_bool(self.config.fail_probability) {
            let addr = self.slots.map_slot(cpu, slots, pfn, 1)?;
            counters.mermap_map();
            return Ok(MermapSlot {
                addr,
                reserved: true,
            });
        }
        let span = u64::from(self.config.span_pages);
        let base = pfn.0 & !(span - 1);
        let page_size = self.slots.page_size();
        let in_span = |start: Option<usize>| {
            start.and_then(|addr| {
                NonNull::new((addr + (pfn.0 - base) as usize * page_size) as *mut u8)
            })
        };
        if span > 1 {
            if let Some(&(_, start)) = window.live.iter().find(|(first, _)| *first == base) {
                return Ok(MermapSlot {
                    addr: in_span(start),
                    reserved: false,
                });
            }
        }
        if window.next_slot == slots {
            self.slots.flush_slots(cpu, 0, slots)?;
            counters.mermap_wrap();
            window.next_slot = 0;
            window.live.clear();
        }
        let nr_pages = span.min(end_pfn - base);
        let start = self
            .slots
            .map_slot(cpu, window.next_slot, Pfn(base), nr_pages)?
            .map(|addr| addr.as_ptr() as usize);
        window.next_slot += 1;
        if span > 1 {
            window.live.push((base, start));
        }
        counters.mermap_map();
        Ok(MermapSlot {
            addr: in_span(start),
            reserved: false,
        })
    }

    /// Returns a slot: a window slot stays mapped until the window wraps; the
    /// reserved slot is unmapped and flushed now. mirrors mermap_put().
    fn put(
        &self,
        slot: MermapSlot,
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
