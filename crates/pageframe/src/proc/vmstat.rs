//! `/proc/vmstat`: one `name value` line per counter. The kernel's names come
//! first; counters of mechanisms the kernel keeps no vmstat for (fallback
//! claims and steals, highatomic reserve changes, pcp refills and drains,
//! zone-lock acquisitions, direct-map conversions, TLB flushes, zeroing and
//! the mermap) follow under names of their own.

use crate::page_alloc::VmEvent;
use crate::sync::LockFamily;
use crate::types::ZoneType;
use crate::PageAllocator;

/// The counters, in print order.
pub fn vmstat_counters<L: LockFamily>(allocator: &PageAllocator<L>) -> Vec<(String, u64)> {
    let zones = allocator.zone_snapshots();
    let sum = |value: &dyn Fn(&crate::ZoneSnapshot) -> u64| zones.iter().map(value).sum::<u64>();
    let mut counters = vec![("nr_free_pages".to_string(), sum(&|zone| zone.free))];
    counters.push((
        "nr_free_pcp_pages".to_string(),
        sum(&|zone| zone.pcp_pages()),
    ));
    for event in [
        VmEvent::NumaHit,
        VmEvent::NumaMiss,
        VmEvent::NumaForeign,
        VmEvent::NumaLocal,
        VmEvent::NumaOther,
    ] {
        counters.push((event.name().to_string(), sum(&|zone| zone.event(event))));
    }
    for zone_type in ZoneType::ALL {
        counters.push((
            format!("pgalloc_{}", zone_type.name().to_ascii_lowercase()),
            sum(&|zone| {
                if zone.zone_type == zone_type {
                    zone.event(VmEvent::Pgalloc)
                } else {
                    0
                }
            }),
        ));
    }
    counters.push((
        "pgfree".to_string(),
        sum(&|zone| zone.event(VmEvent::Pgfree)),
    ));
    counters.push((
        "pgalloc_fail".to_string(),
        sum(&|zone| zone.event(VmEvent::AllocFail)),
    ));
    counters.push((
        "pcp_trylock_fail".to_string(),
        sum(&|zone| zone.event(VmEvent::PcpTrylockFail)),
    ));
    counters.push((
        "pcp_refill".to_string(),
        sum(&|zone| zone.zone_events.pcp_refill),
    ));
    counters.push((
        "pcp_drain_pages".to_string(),
        sum(&|zone| zone.zone_events.pcp_drain_pages),
    ));
    counters.push((
        "extfrag_claim".to_string(),
        sum(&|zone| zone.zone_events.extfrag_claim),
    ));
    counters.push((
        "extfrag_steal".to_string(),
        sum(&|zone| zone.zone_events.extfrag_steal),
    ));
    counters.push((
        "highatomic_reserved".to_string(),
        sum(&|zone| zone.zone_events.highatomic_reserved),
    ));
    counters.push((
        "highatomic_unreserved".to_string(),
        sum(&|zone| zone.zone_events.highatomic_unreserved),
    ));
    counters.push((
        "zone_lock_acquired".to_string(),
        sum(&|zone| zone.lock_acquired),
    ));
    counters.push((
        "zone_lock_contended".to_string(),
        sum(&|zone| zone.lock_contended),
    ));
    counters.push((
        "nr_unmapped_pageblocks".to_string(),
        allocator.nr_unmapped_pageblocks(),
    ));
    counters.push((
        "direct_map_unmapped_blocks".to_string(),
        sum(&|zone| zone.zone_events.direct_map_unmapped_blocks),
    ));
    counters.push((
        "direct_map_remapped_blocks".to_string(),
        sum(&|zone| zone.zone_events.direct_map_remapped_blocks),
    ));
    let backing = allocator.backing().counters();
    for (name, value) in [
        ("tlb_flush_global", backing.tlb_flush_global),
        ("tlb_flush_local", backing.tlb_flush_local),
        ("pages_zeroed", backing.pages_zeroed),
        ("mermap_maps", backing.mermap_maps),
        ("mermap_wraps", backing.mermap_wraps),
        ("mermap_fallbacks", backing.mermap_fallbacks),
    ] {
        counters.push((name.to_string(), value));
    }
    counters
}

/// Renders `/proc/vmstat`.
pub fn vmstat<L: LockFamily>(allocator: &PageAllocator<L>) -> String {
    vmstat_counters(allocator)
        .into_iter()
        .map(|(name, value)| format!("{name} {value}\n"))
        .collect()
}
