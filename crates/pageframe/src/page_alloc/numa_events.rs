//! The NUMA events of an allocation (zone_statistics()): `pgalloc` and
//! `numa_hit` or `numa_miss`/`numa_foreign`, and `numa_local` or
//! `numa_other` by the allocating CPU's node. Shared by the single-block
//! paths and the bulk path.

use super::events::{VmEvent, ZoneCounters};
use super::{CpuSlot, ZoneOnCpu};
use crate::sync::LockFamily;
use crate::types::NodeId;

/// The NUMA miss side of [`PageAllocator::account_alloc`]: `pgalloc`,
/// `numa_miss` and local/other on the zone allocated from, `numa_foreign`
/// on the preferred one.
#[cold]
pub(super) fn account_numa_miss<L: LockFamily>(
    cpu_slot: &CpuSlot<L>,
    preferred: ZoneOnCpu<'_, L>,
    zone: ZoneOnCpu<'_, L>,
    pages: u64,
    calls: u64,
) {
    let counters = &zone.cpu.events;
    counters.add(VmEvent::Pgalloc, pages);
    counters.add(VmEvent::NumaMiss, calls);
    counters.add(local_or_other(cpu_slot, zone.slot.node), calls);
    preferred.cpu.events.add(VmEvent::NumaForeign, calls);
}

/// `numa_local` when the zone's node is the CPU's, else `numa_other`.
#[inline(always)]
fn local_or_other<L: LockFamily>(cpu_slot: &CpuSlot<L>, node: NodeId) -> VmEvent {
    if node == cpu_slot.node {
        VmEvent::NumaLocal
    } else {
        VmEvent::NumaOther
    }
}

/// The events of an allocation from a zone of the preferred node (a NUMA
/// hit): `pgalloc`, `numa_hit` and local/other, on `counters`, `cpu_slot`'s
/// counters of a zone whose node is `node`.
#[inline(always)]
pub(super) fn count_alloc_events<L: LockFamily>(
    cpu_slot: &CpuSlot<L>,
    counters: &ZoneCounters,
    node: NodeId,
    pages: u64,
    calls: u64,
) {
    counters.add(VmEvent::Pgalloc, pages);
    counters.add(VmEvent::NumaHit, calls);
    counters.add(local_or_other(cpu_slot, node), calls);
}
