//! Per-CPU, per-zone event counters: the vm events and NUMA events the kernel
//! keeps per CPU and folds into /proc/vmstat and /proc/zoneinfo.
//! Each CPU's counters have one writer: the owner of the CPU.

use crate::sync::StatCounter;

/// An event counted per CPU and zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmEvent {
    /// Pages allocated from the zone (`pgalloc_<zone>`).
    Pgalloc,
    /// Pages freed to the zone (`pgfree`).
    Pgfree,
    /// Allocated on the preferred node (`numa_hit`).
    NumaHit,
    /// Allocated here though another node was preferred (`numa_miss`).
    NumaMiss,
    /// Preferred here but allocated elsewhere (`numa_foreign`).
    NumaForeign,
    /// Allocated on the allocating CPU's node (`numa_local`).
    NumaLocal,
    /// Allocated off the allocating CPU's node (`numa_other`).
    NumaOther,
    /// Allocations that failed with the zone first in their zonelist
    /// (pageframe's own counter).
    AllocFail,
    /// A pcp try-lock failed and the zone was used directly (pageframe's own).
    PcpTrylockFail,
}

impl VmEvent {
    /// Number of events.
    pub const COUNT: usize = 9;
    /// All events.
    pub const ALL: [VmEvent; VmEvent::COUNT] = [
        VmEvent::Pgalloc,
        VmEvent::Pgfree,
        VmEvent::NumaHit,
        VmEvent::NumaMiss,
        VmEvent::NumaForeign,
        VmEvent::NumaLocal,
        VmEvent::NumaOther,
        VmEvent::AllocFail,
        VmEvent::PcpTrylockFail,
    ];

    /// The /proc/vmstat name (zone-suffixed events get the zone name appended).
    pub fn name(self) -> &'static str {
        match self {
            VmEvent::Pgalloc => "pgalloc",
            VmEvent::Pgfree => "pgfree",
            VmEvent::NumaHit => "numa_hit",
            VmEvent::NumaMiss => "numa_miss",
            VmEvent::NumaForeign => "numa_foreign",
            VmEvent::NumaLocal => "numa_local",
            VmEvent::NumaOther => "numa_other",
            VmEvent::AllocFail => "pgalloc_fail",
            VmEvent::PcpTrylockFail => "pcp_trylock_fail",
        }
    }
}

/// One CPU's counters for one zone, cache-line aligned so that CPUs never
/// write the same line.
#[derive(Default)]
#[repr(align(64))]
pub(crate) struct ZoneCounters([StatCounter; VmEvent::COUNT]);

impl ZoneCounters {
    /// Adds to a counter. Only the CPU's owner calls this.
    #[inline]
    pub(crate) fn add(&self, event: VmEvent, delta: u64) {
        self.0[event as usize].add(delta);
    }

    /// Reads a counter.
    pub(crate) fn get(&self, event: VmEvent) -> u64 {
        self.0[event as usize].get()
    }
}
