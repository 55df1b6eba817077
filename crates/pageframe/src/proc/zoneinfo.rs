//! `/proc/zoneinfo`: per zone, free pages, the watermark boost and the
//! watermarks as wmark_pages() reads them (boost included), spans,
//! protection, counters and the per-CPU pagesets. mirrors
//! zoneinfo_show_print(), with the pageset lines of current kernels (6.7
//! added `high_min` and `high_max`; 6.18 aligns the values).

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
            "\n  pages free     {}\n        boost    {}\n        min      {}\n        low      {}\n        high     {}\n        promo    {}\n        spanned  {}\n        present  {}\n        managed  {}\n        cma      0",
            zone.free,
            zone.watermark_boost,
            zone.watermarks.min + zone.watermark_boost,
            zone.watermarks.low + zone.watermark_boost,
            zone.watermarks.high + zone.watermark_boost,
            zone.watermarks.promo + zone.watermark_boost,
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
        let threshold = stat_threshold(zone.managed, zone.pcp.len());
        for (cpu, pcp) in zone.pcp.iter().enumerate() {
            let _ = write!(
                out,
                "\n    cpu: {cpu}\n              count:    {}\n              high:     {}\n              batch:    {}\n              high_min: {}\n              high_max: {}\n  vm stats threshold: {threshold}",
                pcp.count, pcp.high, pcp.batch, pcp.high_min, pcp.high_max
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

/// The per-CPU vmstat threshold of a zone of `managed` pages on a machine
/// with `cpus` CPUs: `2 * fls(cpus) * (1 + fls(managed in 128 MiB units))`,
/// at most 125. mirrors calculate_normal_threshold() (4 KiB pages).
fn stat_threshold(managed: u64, cpus: usize) -> u32 {
    let fls = |value: u64| u64::BITS - value.leading_zeros();
    let units = managed >> (27 - 12);
    (2 * fls(cpus as u64) * (1 + fls(units))).min(125)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_threshold_as_on_the_host() {
        // This machine's 6.18 kernel: 2 CPUs, DMA 3 840 pages -> 4;
        // DMA32 with 772 917 -> 24; Normal with 5 394 266 -> 36.
        assert_eq!(stat_threshold(3840, 2), 4);
        assert_eq!(stat_threshold(772_917, 2), 24);
        assert_eq!(stat_threshold(5_394_266, 2), 36);
        assert_eq!(stat_threshold(u64::MAX >> 1, 1024), 125);
    }
}
