//! The backing layer: the only module that touches the OS.
//!
//! A [`Backing`] is what stands behind the page frames: the "direct map"
//! through which the kernel would reach every page, the protection changes
//! that remove pages from it and put them back (each removal ends in a TLB
//! flush), and the mermap, a per-CPU window of ephemeral mappings through
//! which pages absent from the direct map are zeroed, written and read.
//!
//! Two implementations, one trait, one conformance suite (`tests`):
//! - [`SimBacking`]: page contents in a sparse store it owns (a buffer per
//!   written page, allocated on first write, dropped when the page is
//!   zeroed; unwritten pages read as zeros); every event is counted and
//!   charged a configurable cost in simulated nanoseconds, so a TiB machine
//!   runs the same code paths as a real arena.
//! - [`ArenaBacking`]: a memfd of the machine's size mapped shared into the
//!   process (the direct map), `mprotect` for unmapping and remapping, the
//!   mermap's windows in per-CPU agent processes that map the same memfd
//!   (or, as an option, `pwrite`/`pread` of the memfd: [`MermapAccess`]),
//!   `mbind` of each node's range when the host has several NUMA nodes.
//!
//! PFN `p` is byte offset `p * page_size` of the arena: holes in the machine's
//! PFN space cost nothing because the memfd is sparse.
//!
//! Shared by both: `core` (what both hold: the three parts below, and the
//! mermap accessors), `direct_map` (geometry, bounds checks, the
//! one-bit-per-page mapped state), `mermap` (per-CPU windows, wrap and
//! fallback bookkeeping) and `counters` (events and their simulated prices).
//! `page_store` is the simulation's page contents. `agent` is the arena's
//! mermap agents, `owner_view` a secret-memory owner's mapping, `calibrate`
//! the measurement of the simulation's prices. `os` holds every system call
//! of the crate.
//!
//! Invariants: a page is in exactly one of two states, mapped (readable and
//! writable through [`Backing::direct_map_ptr`]) or unmapped (any access
//! through the direct map faults); [`Backing::is_direct_mapped`] reports the
//! state. Every [`Backing::unmap_direct`] call is one protection change and
//! one global TLB flush, whatever its length (an empty range is a no-op that
//! counts nothing). A mermap slot is handed out
//! once between two local flushes of its CPU's window.
//!
//! Lock order: a backing takes only its own per-CPU mermap locks, never while
//! holding another; the allocator never calls it with a zone lock held.

mod agent;
mod arena;
mod calibrate;
mod core;
mod costs;
mod counters;
mod direct_map;
mod mermap;
mod os;
mod owner_view;
mod page_store;
mod sim;
#[cfg(test)]
mod tests;

pub use arena::{ArenaBacking, ArenaConfig};
pub use calibrate::{
    calibrate, calibrate_check, CostSource, CALIBRATE_MAX_PAGES, CALIBRATE_MAX_PAGE_ROUNDS,
    SIM_COSTS_ENV, SIM_COSTS_FILE, SIM_COSTS_MAX_BYTES,
};
pub use costs::SimCosts;
pub use counters::{BackingCounters, HostCounters};
pub(crate) use direct_map::page_pieces;
pub use mermap::{MermapAccess, MermapConfig};
pub use os::{
    allowed_cpus, host_numa_nodes, open_input, own_faults, own_thread_cpu_time, pin_current_thread,
};
pub use owner_view::OwnerView;
pub use sim::SimBacking;

use std::ptr::NonNull;

use thiserror::Error;

use crate::types::{CpuId, Pfn};

/// Which implementation a backing is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackingKind {
    /// Simulated: counts and costs, bytes in a sparse store.
    Sim,
    /// A real memfd arena.
    Arena,
}

/// Why a backing operation failed. Nothing changed when it is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum BackingError {
    /// An OS call failed.
    #[error("{call} failed: errno {errno}")]
    Os {
        /// The call (`memfd_create`, `mmap`, `mprotect`, `mbind`, ...).
        call: &'static str,
        /// The OS error number.
        errno: i32,
    },
    /// The range is not inside the backing.
    #[error("PFN range {start}+{nr_pages} is outside the backing")]
    OutOfRange {
        /// First PFN.
        start: Pfn,
        /// Pages asked for.
        nr_pages: u64,
    },
    /// A byte range that does not fit in the page.
    #[error("bytes {offset}..{end} do not fit in a page of {page_size} bytes")]
    BadOffset {
        /// First byte.
        offset: usize,
        /// One past the last byte.
        end: usize,
        /// Bytes per page.
        page_size: usize,
    },
    /// Direct-map access to a page that is not in the direct map.
    #[error("PFN {0} is not in the direct map")]
    NotMapped(Pfn),
    /// The CPU has no mermap window.
    #[error("CPU {0} has no mermap window")]
    NoSuchCpu(CpuId),
    /// The backing cannot be built as asked (page size, size, host).
    #[error("{0}")]
    Unsupported(&'static str),
}

/// What stands behind the page frames. See the module documentation.
pub trait Backing: Send + Sync {
    /// Which implementation this is.
    fn kind(&self) -> BackingKind;

    /// Bytes per page.
    fn page_size(&self) -> usize;

    /// PFNs `0..nr_pages()` are backed.
    fn nr_pages(&self) -> u64;

    /// The direct-map address of the first byte of `pfn`; `None` for a
    /// backing without a direct map in the address space (the simulation)
    /// or a PFN outside it. The pointer is valid for
    /// the backing's lifetime; accessing it while the page is unmapped faults.
    fn direct_map_ptr(&self, pfn: Pfn) -> Option<NonNull<u8>>;

    /// True while every page of `pfn` is reachable through the direct map.
    fn is_direct_mapped(&self, pfn: Pfn) -> bool;

    /// Where the bytes of page `pfn` can be copied in and out directly, for
    /// an owner that resolves its pages once and copies many times: the
    /// direct-map address on the arena, the store's buffer on the
    /// simulation (made now, zeroed, if the page has none). `None` when the
    /// page is outside the backing or not in the direct map (the owner then
    /// copies through the mermap), or when the simulation drops what is
    /// written ([`Backing::set_contents_kept`]). The `page_size` bytes stay
    /// valid while the page stays mapped and unzeroed and the backing lives:
    /// the allocator unmaps and zeroes only free or newly allocated pages,
    /// so for the owner of an allocated page that is until it frees it.
    fn page_bytes(&self, pfn: Pfn) -> Option<NonNull<u8>>;

    /// Removes `nr_pages` pages from the direct map: one protection change,
    /// then one global TLB flush (a shootdown of every CPU that may cache the
    /// translation), counted once whatever the length.
    /// mirrors set_direct_map_valid_noflush(.., false) + flush_tlb_kernel_range().
    fn unmap_direct(&self, start: Pfn, nr_pages: u64) -> Result<(), BackingError>;

    /// Puts `nr_pages` pages back into the direct map. Making a translation
    /// present needs no flush. mirrors set_direct_map_valid_noflush(.., true).
    fn remap_direct(&self, start: Pfn, nr_pages: u64) -> Result<(), BackingError>;

    /// Copies `bytes` to byte `offset` of the run of pages starting at
    /// `pfn`, through the direct map (`offset` may pass the first page);
    /// every page touched must be mapped. Nothing is copied on error.
    fn write_mapped(&self, pfn: Pfn, offset: usize, bytes: &[u8]) -> Result<(), BackingError>;

    /// Copies bytes from byte `offset` of the run of pages starting at `pfn`
    /// into `out`, through the direct map, as [`Backing::write_mapped`].
    fn read_mapped(&self, pfn: Pfn, offset: usize, out: &mut [u8]) -> Result<(), BackingError>;

    /// Zeroes mapped pages through the direct map (clear_page()).
    fn zero_mapped(&self, start: Pfn, nr_pages: u64) -> Result<(), BackingError>;

    /// Zeroes pages through `cpu`'s mermap window, whatever their mapping.
    fn zero_unmapped(&self, cpu: CpuId, start: Pfn, nr_pages: u64) -> Result<(), BackingError>;

    /// Copies `bytes` into page `pfn` at `offset` through `cpu`'s mermap
    /// window (guest_memfd's write() path).
    fn write_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), BackingError>;

    /// Copies bytes of page `pfn` from `offset` into `out` through `cpu`'s
    /// mermap window.
    fn read_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), BackingError>;

    /// Returns once every mermap access posted so far is done: a backing
    /// whose mermap works behind the caller's back (the arena's agents)
    /// waits for it, a synchronous one returns at once. A timed loop of
    /// mermap writes ends here, where the kernel's would have copied every
    /// byte.
    fn wait_for_mermap(&self) -> Result<(), BackingError> {
        Ok(())
    }

    /// Keeps (`true`, the default) or drops the bytes later writes copy in.
    /// Only the simulation can drop them: a cost-model run of more memory
    /// than the host has turns keeping off, and its writes are still counted
    /// and charged. A backing whose contents are real memory ignores it.
    fn set_contents_kept(&self, _kept: bool) {}

    /// The event counters (and, for the simulation, the charged time).
    fn counters(&self) -> BackingCounters;

    /// Maps `pfns`, in order, into a new range of this process that only
    /// the caller holds and no forked process inherits (a secret-memory
    /// owner's mapping), after every mermap write so far is done. The pages
    /// may be out of the direct map. `Unsupported` for a backing without
    /// memory to map (the simulation).
    fn owner_view(&self, _pfns: &[Pfn]) -> Result<OwnerView, BackingError> {
        Err(BackingError::Unsupported(
            "this backing has no memory to map into an owner",
        ))
    }

    /// What the backing cost the host in system calls and faults (zero for
    /// a backing that makes none).
    fn host_counters(&self) -> HostCounters {
        HostCounters::default()
    }

    /// Short description for `pageframe info` (host NUMA binding, sizes).
    fn describe(&self) -> String;
}
