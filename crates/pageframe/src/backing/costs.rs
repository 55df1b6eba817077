//! The prices of backing events in simulated time: what a
//! [`SimBacking`](super::SimBacking) charges per protection change, flush,
//! zeroed page, mermap map and copied byte. A real arena charges
//! [`SimCosts::NONE`] (its time is real); `pageframe calibrate` measures the
//! prices on the host ([`super::calibrate`]).

/// Prices of the events a [`SimBacking`](super::SimBacking) charges, in nanoseconds unless the
/// name says otherwise. The defaults are rough figures for a current x86
/// server (2-socket, 4 KiB pages); an experiment that depends on one should
/// say which it used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimCosts {
    /// One direct-map protection change (set_direct_map_valid_noflush()):
    /// a page-table walk and PTE writes under the CPA lock, per call.
    /// Default 500 ns; more when a huge mapping must be split.
    pub protection_change: u64,
    /// One global TLB flush (flush_tlb_kernel_range()): IPIs to every other
    /// CPU, each flushing, and the wait for the slowest acknowledgement.
    /// Default 5000 ns: shootdowns are measured at a few microseconds on
    /// servers with tens of CPUs, growing with the CPU count.
    pub global_flush: u64,
    /// One local TLB flush of a mermap window (INVLPG of its slots or a
    /// local flush of the mm-local range, no IPI). Default 300 ns: INVLPG
    /// costs some hundred cycles per page, and the refills follow.
    pub local_flush: u64,
    /// Zeroing one page (clear_page(), `rep stosb` on 4 KiB at some tens of
    /// GB/s). Default 150 ns.
    pub zero_page: u64,
    /// Mapping one page into a mermap slot (one PTE write in the mm-local
    /// region, page tables preallocated). Default 50 ns.
    pub mermap_map: u64,
    /// Copying one byte through the mermap, in picoseconds (copy_from_user()
    /// at about 10 GB/s). Default 100 ps.
    pub copy_byte_ps: u64,
}

impl SimCosts {
    /// Every event free: what a real arena charges, its time being real.
    pub const NONE: SimCosts = SimCosts {
        protection_change: 0,
        global_flush: 0,
        local_flush: 0,
        zero_page: 0,
        mermap_map: 0,
        copy_byte_ps: 0,
    };
}

impl Default for SimCosts {
    fn default() -> SimCosts {
        SimCosts {
            protection_change: 500,
            global_flush: 5_000,
            local_flush: 300,
            zero_page: 150,
            mermap_map: 50,
            copy_byte_ps: 100,
        }
    }
}
