//! `/proc/zoneinfo`: per zone, free pages, watermarks, spans, protection,
//! counters and the per-CPU pagesets. mirrors zoneinfo_show_print().

use crate::page_alloc::VmEvent;
use crate::sync::LockFamily;
use crate::PageAllocator;
use std::fmt::Write;

/// Renders `/proc/zoneinfo`.
pub fn zoneinfo<L: LockFamily>(allocator: &PageAllocator<L>) -> String {
    let mut out = String::new();
    for zone in allocator.zone_snapshots() {
        let _ = write!(out, "Node {}, zone {:>8}", zone.node, zone.name());
        let _ = write!(
            out,
            "\n  pages free     {}\n        boost    0\n        min      {}\n        low      {}\n        high     {}\n        promo    {}\n        spanned  {}\n        present  {}\n        managed  {}\n        cma      0",
            zone.free,
            zone.watermarks.min,
            zone.watermarks.low,
            zone.watermarks.high,
            zone.watermarks.promo,
            zone.spanned,
            zone.present,
            zone.managed
        );
        let protection: Vec<String> = zone.lowmem_reserve.iter().map(u64::to_string).collect();
        let _ = write!(out, "\n        protection: ({})", protection.join(", "));
        if !zone.is_populated() {
            out.push('\n');
            continue;
        }
        let _ = write!(out, "\n      {:<12} {}", "nr_free_pages", zone.free);
        for event in [
            VmEvent::NumaHit,
            VmEvent::NumaMiss,
            VmEvent::NumaForeign,
            VmEvent::NumaLocal,
            VmEvent::NumaOther,
        ] {
            let _ = write!(out, "\n      {:<12} {}", event.name(), zone.event(event));
        }
        out.push_str("\n  pagesets");
        for (cpu, pcp) in zone.pcp.iter().enumerate() {
            let _ = write!(
                out,
                "\n    cpu: {cpu}\n              count: {}\n              high:  {}\n              batch: {}",
                pcp.count, pcp.high, pcp.batch
            );
        }
        let _ = write!(
            out,
            "\n  node_unreclaimable:  0\n  start_pfn:           {}\n",
            zone.start_pfn
        );
    }
    out
}
