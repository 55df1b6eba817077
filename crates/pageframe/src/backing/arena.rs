//! The real backing: a memfd the size of the machine, mapped shared into the
//! process as its direct map, with `mprotect` to remove pages from it and put
//! them back, and each CPU's mermap window in an agent process that maps the
//! same memfd (see `agent`).
//!
//! Layout: PFN `p` is byte `p * page_size` of the memfd, of the direct map
//! and of every agent's view. A slot maps `span_pages` pages of an agent's
//! view, a second view of the pages, so it works while the direct map of
//! those pages is `PROT_NONE`; the agents fork when the arena is built, one
//! per host CPU the building thread may use (at most one per window), and
//! die with it.
//!
//! Ordering: mermap zeroing and writes are posted to the agent and done
//! later; every other access to page contents (the direct-map accessors,
//! [`Backing::direct_map_ptr`], [`Backing::remap_direct`], reads through
//! the mermap, owner views) first waits for everything posted, so callers
//! see the same bytes as with a synchronous mermap.
//!
//! File I/O access ([`MermapAccess::FileIo`], an option beyond the series,
//! off by default): no agent exists and a slot maps nothing; the mermap's
//! bytes are copied with `pwrite`/`pread` at the page's offset in the memfd,
//! zeroing with `pwrite` from a page of zeros. The slot bookkeeping (bump
//! allocation, wraps with their local-flush count, fault injection and the
//! reserved slot, every counter) runs as in `Window` mode, so both modes
//! count the same events. A 4 KiB `pwrite` costs about 0.6 µs. What it means
//! for security: no second user-space mapping of the page exists at any
//! time, so no stale translation lingers until a wrap; the data passes
//! through the host kernel's own mapping of the page, as guest_memfd's
//! write() copies through the kernel's in the series. A wrap's "local
//! flush" has nothing to flush in this mode and is bookkeeping only.
//!
//! Invariants: those of [`Backing`], where a page's state bit says mapped iff
//! its direct-map range is `PROT_READ | PROT_WRITE`; an agent maps a page
//! only while a live slot of its windows holds it. The kernel flushes the
//! TLB on every protection drop and unmap: with a thread of this process on
//! another CPU, `unmap_direct` is a real cross-CPU shootdown, as
//! flush_tlb_kernel_range() is in the kernel; an agent's address space runs
//! on its CPU only, so its flushes are local.
//!
//! Byte accesses go through raw pointers only (copies and fills), never
//! references, as vm-memory treats guest memory, or through file I/O: a page
//! belongs to whoever the allocator gave it to, and that owner serialises
//! accesses to it.

use std::ops::Range;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::agent::WindowAgents;
use super::core::BackingCore;
use super::costs::SimCosts;
use super::counters::{BackingCounters, HostCounters};
use super::direct_map::DirectMap;
use super::mermap::{Mermap, MermapAccess, MermapConfig, MermapSlots};
use super::os::{
    host_online_nodes, host_page_size, memfd, read_exact_at, write_all_at, write_zeros_at, Mapping,
};
use super::{Backing, BackingError, BackingKind, OwnerView};
use crate::machine::format_size;
use crate::types::{CpuId, Pfn};

/// How to build an [`ArenaBacking`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArenaConfig {
    /// Pages in the arena (PFNs `0..nr_pages`), at least one.
    pub nr_pages: u64,
    /// Bytes per page: a power of two and a multiple of the host's page size.
    pub page_size: usize,
    /// CPUs, each with a mermap window; at least one.
    pub nr_cpus: usize,
    /// Fault every page in at creation, so that timing runs do not measure
    /// the host's first-touch faults.
    pub populate: bool,
    /// `(node, start_pfn, end_pfn)`: the PFN range of each emulated node.
    /// When the host has several NUMA nodes, each range is bound (`mbind`) to
    /// host node `node % host_nodes`; on a single-node host nothing is bound.
    pub node_ranges: Vec<(u32, u64, u64)>,
    /// The mermap windows.
    pub mermap: MermapConfig,
}

/// How an arena's mermap slots reach their pages (`MermapConfig::access`).
#[derive(Debug)]
enum SlotAccess {
    /// Through the windows of the mermap agents (see `agent`).
    Window(WindowAgents),
    /// By file I/O on the memfd; no window exists.
    FileIo,
}

/// The arena's side of the mermap.
#[derive(Debug)]
struct ArenaSlots {
    file: OwnedFd,
    page_size: usize,
    access: SlotAccess,
    /// `pwrite`/`pread` calls made in file I/O mode.
    file_io_calls: AtomicU64,
}

/// A page in a slot: the CPU whose window holds it and its byte offset in
/// the memfd (a span's pages follow each other `page_size` bytes apart).
#[derive(Clone, Copy, Debug)]
struct SlotPage {
    cpu: usize,
    offset: u64,
}

impl ArenaSlots {
    fn count_file_io(&self, calls: u64) {
        self.file_io_calls.fetch_add(calls, Ordering::Relaxed);
    }

    /// Waits for every mermap request posted so far (a no-op for file I/O,
    /// which is done when its call returns).
    fn drain(&self) -> Result<(), BackingError> {
        match &self.access {
            SlotAccess::Window(agents) => agents.drain_all(),
            SlotAccess::FileIo => Ok(()),
        }
    }
}

impl MermapSlots for ArenaSlots {
    type Page = SlotPage;

    fn map_slot(
        &self,
        cpu: usize,
        slot: u32,
        first: Pfn,
        nr_pages: u64,
    ) -> Result<SlotPage, BackingError> {
        let offset = first.0 * self.page_size as u64;
        if let SlotAccess::Window(agents) = &self.access {
            agents.map(cpu, slot, offset, nr_pages as usize * self.page_size)?;
        }
        // File I/O maps nothing: the page is reached at its place in the file.
        Ok(SlotPage { cpu, offset })
    }

    fn page_in_span(&self, first: SlotPage, index: u64) -> SlotPage {
        SlotPage {
            offset: first.offset + index * self.page_size as u64,
            ..first
        }
    }

    fn zero_page(&self, page: SlotPage) -> Result<(), BackingError> {
        match &self.access {
            SlotAccess::Window(agents) => agents.zero(page.cpu, page.offset, self.page_size),
            SlotAccess::FileIo => {
                // One pwrite per host page of zeros (see write_zeros_at).
                self.count_file_io(self.page_size.div_ceil(4096) as u64);
                write_zeros_at(&self.file, page.offset, self.page_size)
            }
        }
    }

    fn write(&self, page: SlotPage, offset: usize, bytes: &[u8]) -> Result<(), BackingError> {
        let at = page.offset + offset as u64;
        match &self.access {
            SlotAccess::Window(agents) => agents.write(page.cpu, at, bytes),
            SlotAccess::FileIo => {
                self.count_file_io(1);
                write_all_at(&self.file, bytes, at)
            }
        }
    }

    fn read(&self, page: SlotPage, offset: usize, out: &mut [u8]) -> Result<(), BackingError> {
        let at = page.offset + offset as u64;
        match &self.access {
            SlotAccess::Window(agents) => agents.read(page.cpu, at, out),
            SlotAccess::FileIo => {
                self.count_file_io(1);
                read_exact_at(&self.file, out, at)
            }
        }
    }

    fn flush_slots(&self, cpu: usize, first: u32, count: u32) -> Result<(), BackingError> {
        match &self.access {
            SlotAccess::Window(agents) => agents.flush(cpu, first, count),
            // No slot maps anything: nothing to drop or flush.
            SlotAccess::FileIo => Ok(()),
        }
    }
}

/// A backing over real memory: see the module documentation. Dropping it
/// ends the agents, unmaps the direct map and closes the memfd.
#[derive(Debug)]
pub struct ArenaBacking {
    core: BackingCore<ArenaSlots>,
    /// The direct map itself: the whole memfd, shared, read-write but for
    /// unmapped pages.
    direct_mapping: Mapping,
    /// The host's online NUMA nodes.
    host_nodes: Vec<u32>,
    /// True when the node ranges were bound to host nodes.
    bound: bool,
}

impl ArenaBacking {
    /// Builds the arena: memfd, direct map (bound per node on a NUMA host,
    /// populated if asked), mermap windows. Fails with `Unsupported` on a bad
    /// configuration, `OutOfRange` on a node range outside the arena, and
    /// `Os` when the host refuses (an arena larger than the address space,
    /// say); whatever was built by then is released.
    pub fn new(config: ArenaConfig) -> Result<ArenaBacking, BackingError> {
        let ArenaConfig {
            nr_pages,
            page_size,
            nr_cpus,
            populate,
            node_ranges,
            mermap,
        } = config;
        DirectMap::check_geometry(nr_pages, page_size)?;
        Mermap::<ArenaSlots>::check(&mermap, nr_cpus)?;
        if page_size % host_page_size()? != 0 {
            return Err(BackingError::Unsupported(
                "the arena's page size must be a multiple of the host's",
            ));
        }
        const TOO_BIG: BackingError =
            BackingError::Unsupported("the arena does not fit in the address space");
        let len = usize::try_from(nr_pages)
            .ok()
            .and_then(|pages| pages.checked_mul(page_size))
            .ok_or(TOO_BIG)?;
        for &(_, start, end) in &node_ranges {
            if start > end || end > nr_pages {
                return Err(BackingError::OutOfRange {
                    start: Pfn(start),
                    nr_pages: end.saturating_sub(start),
                });
            }
        }
        let host_nodes = host_online_nodes();
        let bound = host_nodes.len() > 1 && !node_ranges.is_empty();

        let file = memfd(c"pageframe-arena", len as u64)?;
        // Pages must be faulted in after the binding to land on their node.
        let direct_mapping = Mapping::shared(&file, len, populate && !bound)?;
        if bound {
            for &(node, start, end) in node_ranges.iter().filter(|range| range.1 < range.2) {
                let host_node = host_nodes[node as usize % host_nodes.len()];
                let (offset, range_len) = (
                    start as usize * page_size,
                    (end - start) as usize * page_size,
                );
                direct_mapping.bind(offset, range_len, host_node)?;
            }
            if populate {
                direct_mapping.populate_write()?;
            }
        }
        // The agents fork before the allocator builds anything on the heap.
        let access = match mermap.access {
            MermapAccess::Window => SlotAccess::Window(WindowAgents::spawn(
                &file,
                len,
                page_size,
                nr_cpus,
                mermap.slots_per_cpu as usize + 1,
            )?),
            MermapAccess::FileIo => SlotAccess::FileIo,
        };
        let slots = ArenaSlots {
            file,
            page_size,
            access,
            file_io_calls: AtomicU64::new(0),
        };
        Ok(ArenaBacking {
            core: BackingCore::new(nr_pages, page_size, nr_cpus, mermap, slots, SimCosts::NONE)?,
            direct_mapping,
            host_nodes,
            bound,
        })
    }

    /// The direct-map protection change for pages `pages` (mprotect).
    fn protect(&self, pages: Range<u64>, valid: bool) -> Result<(), BackingError> {
        let page_size = self.core.direct_map.page_size();
        let len = (pages.end - pages.start) as usize * page_size;
        self.direct_mapping
            .protect(pages.start as usize * page_size, len, valid)
    }
}

impl Backing for ArenaBacking {
    fn kind(&self) -> BackingKind {
        BackingKind::Arena
    }

    fn page_size(&self) -> usize {
        self.core.direct_map.page_size()
    }

    fn nr_pages(&self) -> u64 {
        self.core.direct_map.nr_pages()
    }

    /// Waits for the mermap first: the pointer may be read at once.
    fn direct_map_ptr(&self, pfn: Pfn) -> Option<NonNull<u8>> {
        self.core.mermap.slots().drain().ok()?;
        let page_size = self.core.direct_map.page_size();
        let offset = usize::try_from(pfn.0).ok()?.checked_mul(page_size)?;
        self.direct_mapping.at(offset, page_size).ok()
    }

    fn is_direct_mapped(&self, pfn: Pfn) -> bool {
        self.core.direct_map.is_mapped(pfn)
    }

    fn page_bytes(&self, pfn: Pfn) -> Option<NonNull<u8>> {
        if !self.is_direct_mapped(pfn) {
            return None;
        }
        self.direct_map_ptr(pfn)
    }

    /// One `mprotect(PROT_NONE)`, after which the kernel flushes the range
    /// from every CPU's TLB that may cache it.
    fn unmap_direct(&self, start: Pfn, nr_pages: u64) -> Result<(), BackingError> {
        self.core
            .direct_map
            .set_valid(&self.core.counters, start, nr_pages, false, |pages| {
                self.protect(pages, false)
            })
    }

    fn remap_direct(&self, start: Pfn, nr_pages: u64) -> Result<(), BackingError> {
        self.core.mermap.slots().drain()?;
        self.core
            .direct_map
            .set_valid(&self.core.counters, start, nr_pages, true, |pages| {
                self.protect(pages, true)
            })
    }

    fn write_mapped(&self, pfn: Pfn, offset: usize, bytes: &[u8]) -> Result<(), BackingError> {
        self.core.mermap.slots().drain()?;
        let start = self
            .core
            .direct_map
            .check_mapped_bytes(pfn, offset, bytes.len())?;
        let dst = self.direct_mapping.at(start as usize, bytes.len())?;
        // SAFETY: `at` checked the range against the direct map, and
        // `check_mapped_bytes` that every page of it is mapped read-write;
        // the pages' owner (the caller) serialises accesses to them; `bytes`
        // is a Rust slice outside the arena; bytes are copied, no reference
        // to the shared memory is made.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.as_ptr(), bytes.len()) };
        Ok(())
    }

    fn read_mapped(&self, pfn: Pfn, offset: usize, out: &mut [u8]) -> Result<(), BackingError> {
        self.core.mermap.slots().drain()?;
        let start = self
            .core
            .direct_map
            .check_mapped_bytes(pfn, offset, out.len())?;
        let src = self.direct_mapping.at(start as usize, out.len())?;
        // SAFETY: as in `write_mapped`, with source and destination swapped.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn zero_mapped(&self, start: Pfn, nr_pages: u64) -> Result<(), BackingError> {
        self.core.mermap.slots().drain()?;
        let pages = self.core.direct_map.check_mapped(start, nr_pages)?;
        let page_size = self.core.direct_map.page_size();
        let len = nr_pages as usize * page_size;
        let addr = self
            .direct_mapping
            .at(pages.start as usize * page_size, len)?;
        // SAFETY: the range lies inside the direct map (checked by `at`) and
        // every page of it is mapped read-write (checked by `check_mapped`;
        // the caller owns the pages, so nobody unmaps or uses them meanwhile);
        // the bytes are filled, no reference to them is made.
        unsafe { std::ptr::write_bytes(addr.as_ptr(), 0, len) };
        self.core.counters.pages_zeroed(nr_pages);
        Ok(())
    }

    fn zero_unmapped(&self, cpu: CpuId, start: Pfn, nr_pages: u64) -> Result<(), BackingError> {
        self.core.zero_unmapped(cpu, start, nr_pages)
    }

    fn wait_for_mermap(&self) -> Result<(), BackingError> {
        self.core.mermap.slots().drain()
    }

    fn write_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), BackingError> {
        self.core.write_unmapped(cpu, pfn, offset, bytes)
    }

    fn read_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), BackingError> {
        self.core.read_unmapped(cpu, pfn, offset, out)
    }

    fn counters(&self) -> BackingCounters {
        self.core.counters()
    }

    fn owner_view(&self, pfns: &[Pfn]) -> Result<OwnerView, BackingError> {
        let nr_pages = self.core.direct_map.nr_pages();
        if let Some(&pfn) = pfns.iter().find(|pfn| pfn.0 >= nr_pages) {
            return Err(BackingError::OutOfRange {
                start: pfn,
                nr_pages: 1,
            });
        }
        let slots = self.core.mermap.slots();
        slots.drain()?;
        OwnerView::new(&slots.file, self.core.direct_map.page_size(), pfns)
    }

    /// One `mprotect` per protection change, the file I/O calls, and what
    /// the mermap agents counted.
    fn host_counters(&self) -> HostCounters {
        let events = self.core.counters();
        let slots = self.core.mermap.slots();
        let mut host = HostCounters {
            syscalls: events.direct_map_unmaps
                + events.direct_map_remaps
                + slots.file_io_calls.load(Ordering::Relaxed),
            agent_minor_faults: 0,
        };
        if let SlotAccess::Window(agents) = &slots.access {
            let agent_counts = agents.counts();
            host.syscalls += agent_counts.syscalls;
            host.agent_minor_faults = agent_counts.minor_faults;
        }
        host
    }

    fn describe(&self) -> String {
        let binding = if self.bound {
            format!(
                "emulated node n bound to host node n % {}",
                self.host_nodes.len()
            )
        } else if self.host_nodes.len() > 1 {
            "no node ranges bound".to_string()
        } else {
            format!("emulated nodes share host node {}", self.host_nodes[0])
        };
        format!(
            "arena: memfd {}, direct map at {:p}, host NUMA nodes: {} ({}), mermap {} slots x {} CPUs{}",
            format_size(self.core.direct_map.nr_pages() * self.core.direct_map.page_size() as u64),
            self.direct_mapping.start(),
            self.host_nodes.len(),
            binding,
            self.core.mermap.config().slots_per_cpu,
            self.core.mermap.nr_cpus(),
            match &self.core.mermap.slots().access {
                SlotAccess::Window(agents) => format!(" (agents on host CPUs {:?})", agents.host_cpus()),
                SlotAccess::FileIo => " (file I/O access)".into(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(nr_pages: u64, page_size: usize) -> ArenaConfig {
        ArenaConfig {
            nr_pages,
            page_size,
            nr_cpus: 2,
            populate: true,
            node_ranges: vec![(0, 0, nr_pages)],
            mermap: MermapConfig::default(),
        }
    }

    #[test]
    fn impossible_arenas_are_errors() {
        let too_large = ArenaBacking::new(config(1 << 50, 4096));
        assert!(matches!(
            too_large,
            Err(BackingError::Os { call: "mmap", .. })
        ));
        let overflowing = ArenaBacking::new(config(1 << 60, 4096));
        assert!(matches!(overflowing, Err(BackingError::Unsupported(_))));
        for page_size in [2048, 12288] {
            let bad_page = ArenaBacking::new(config(16, page_size));
            assert!(matches!(bad_page, Err(BackingError::Unsupported(_))));
        }
        let mut outside = config(16, 4096);
        outside.node_ranges = vec![(0, 0, 8), (1, 8, 17)];
        assert_eq!(
            ArenaBacking::new(outside).unwrap_err(),
            BackingError::OutOfRange {
                start: Pfn(8),
                nr_pages: 9
            }
        );
    }

    #[test]
    fn larger_pages_are_multiples_of_the_host_page() {
        let backing = ArenaBacking::new(config(16, 2 * host_page_size().unwrap())).unwrap();
        backing.unmap_direct(Pfn(3), 2).unwrap();
        backing
            .write_unmapped(CpuId(1), Pfn(4), 8000, b"far")
            .unwrap();
        let mut out = [0u8; 3];
        backing
            .read_unmapped(CpuId(0), Pfn(4), 8000, &mut out)
            .unwrap();
        assert_eq!(&out, b"far");
        assert!(backing
            .describe()
            .starts_with("arena: memfd 128K, direct map at 0x"));
    }

    #[test]
    fn direct_map_and_mermap_are_views_of_the_same_bytes() {
        for access in [MermapAccess::Window, MermapAccess::FileIo] {
            let mut config = config(64, 4096);
            config.mermap.access = access;
            let backing = ArenaBacking::new(config).unwrap();
            let page = |pfn| backing.direct_map_ptr(Pfn(pfn)).unwrap().as_ptr();
            // SAFETY: page 5 is mapped and this test is its only user.
            unsafe { page(5).add(10).write_bytes(0xAB, 4) };
            let mut out = [0u8; 4];
            backing
                .read_unmapped(CpuId(0), Pfn(5), 10, &mut out)
                .unwrap();
            assert_eq!(out, [0xAB; 4], "{access:?}");

            backing.unmap_direct(Pfn(6), 1).unwrap();
            backing
                .write_unmapped(CpuId(1), Pfn(6), 0, b"secret")
                .unwrap();
            assert_eq!(
                backing.zero_mapped(Pfn(5), 2),
                Err(BackingError::NotMapped(Pfn(6)))
            );
            backing.remap_direct(Pfn(6), 1).unwrap();
            // SAFETY: page 6 is mapped again and this test is its only user.
            assert_eq!(unsafe { page(6).read() }, b's', "{access:?}");

            backing.zero_mapped(Pfn(5), 2).unwrap();
            // SAFETY: pages 5 and 6 are mapped and this test is their only user.
            let zeroed = unsafe { (0..2 * 4096).all(|i| page(5).add(i).read() == 0) };
            assert!(zeroed, "{access:?}");
            assert_eq!(backing.counters().pages_zeroed, 2);
            assert_eq!(
                backing.describe().ends_with("(file I/O access)"),
                access == MermapAccess::FileIo
            );
        }
    }

    #[test]
    fn waiting_for_the_mermap_makes_posted_writes_visible() {
        let backing = ArenaBacking::new(config(64, 4096)).unwrap();
        // The address is taken first: taking it waits for the mermap.
        let page = backing.direct_map_ptr(Pfn(7)).unwrap().as_ptr();
        let before = backing.host_counters().syscalls;
        for (cpu, offset) in [(0, 0), (1, 100)] {
            backing
                .write_unmapped(CpuId(cpu), Pfn(7), offset, b"posted")
                .unwrap();
        }
        backing.wait_for_mermap().unwrap();
        // SAFETY: page 7 is mapped and this test is its only user; every
        // write to it is done.
        let written = unsafe {
            [0, 100].map(|offset| std::slice::from_raw_parts(page.add(offset), 6).to_vec())
        };
        assert_eq!(written, [b"posted".to_vec(), b"posted".to_vec()]);
        // The agents' entry writes and their futex calls were counted.
        assert!(backing.host_counters().syscalls > before);
        backing.wait_for_mermap().unwrap();
    }
}
