//! The `zoneinfo` conformance suite: per zone of the host, its sizes
//! (start_pfn, spanned, present, managed), the watermarks (min, low, high,
//! promo, each less the `boost` the zone shows: the host's fallbacks boost
//! its watermarks for a while), the protection (lowmem_reserve) and each CPU's pageset sizes
//! (batch, high_min, high_max) of `/proc/zoneinfo` beside pageframe's
//! `/proc/zoneinfo` view of a machine booted with the host's memory map,
//! zones, reserved pages, CPUs and THP setting (`HostMachine`; both texts
//! are read by the same parser); then min_free_kbytes as pageframe
//! computes it for that memory beside the host's, and the sysctls the
//! formulas use.
//!
//! Not compared (see the README): a CPU's current `high`, which the
//! adaptive per-CPU lists move with the host's workload between `high_min`
//! and `high_max`; the ZONE_DEVICE zone and its protection column, which
//! hold no memory the page allocator manages. Until pageframe's view prints
//! `high_min`, its `high` (the static size, which is `high_min`) stands for
//! it; `high_max` is compared once the view prints it.

use super::host::{is_root, read, read_number, HostStateLock};
use super::host_machine::HostMachine;
use super::{ConformError, ConformRow, SuiteOutcome, SuiteResult};
use crate::trace::host::ZoneText;
use pageframe::{AllocOptions, LocalPageAllocator, VmSysctl};

/// The suite's name.
const SUITE: &str = "zoneinfo";

/// The size lines compared: where the zone starts, the pages its bounds
/// span, those present, those managed (present less reserved).
const SIZES: [&str; 4] = ["start_pfn", "spanned", "present", "managed"];

/// The watermark lines compared.
pub(super) const WATERMARKS: [&str; 4] = ["min", "low", "high", "promo"];

/// The pageset fields compared, with the pageframe field standing in when
/// its view lacks the first.
const PAGESET: [(&str, Option<&str>); 3] = [
    ("batch", None),
    ("high_min", Some("high")),
    ("high_max", None),
];

fn show(values: &[u64]) -> String {
    let values: Vec<String> = values.iter().map(u64::to_string).collect();
    format!("({})", values.join(", "))
}

/// The rows of one zone both sides have: the `lines` given (sizes,
/// watermarks), the protection and each CPU's pageset, each case named
/// after `prefix`.
pub(super) fn zone_rows(
    prefix: &str,
    lines: &[&str],
    host: &ZoneText,
    ours: &ZoneText,
    rows: &mut Vec<ConformRow>,
) {
    let zone = format!("{prefix}node {} {}", host.node, host.name);
    let number = |value: Option<u64>| value.map_or("absent".to_string(), |value| value.to_string());
    for &mark in lines {
        if ours.field(mark).is_none() && host.field(mark).is_none() {
            continue;
        }
        // A watermark as the kernel sets it: zoneinfo prints it with the
        // boost in force added (wmark_pages()), and the host's boost comes
        // and goes with its workload's fallbacks.
        let base = |zone: &ZoneText| {
            let value = zone.field(mark)?;
            Some(if WATERMARKS.contains(&mark) {
                value.saturating_sub(zone.field("boost").unwrap_or(0))
            } else {
                value
            })
        };
        rows.push(ConformRow::compare(
            format!("{zone} {mark}"),
            number(base(host)),
            number(base(ours)),
        ));
    }
    // The host may list more zone types (ZONE_DEVICE) than pageframe has.
    let columns = ours.protection.len().min(host.protection.len());
    rows.push(ConformRow::compare(
        format!("{zone} protection"),
        show(&host.protection[..columns]),
        show(&ours.protection),
    ));
    for (cpu, host_cpu) in host.pcp.iter().enumerate() {
        let ours_cpu = ours.pcp.get(cpu);
        for (field, stand_in) in PAGESET {
            let Some(kernel) = host_cpu.get(field) else {
                continue;
            };
            let value = ours_cpu.and_then(|fields| {
                fields
                    .get(field)
                    .or_else(|| stand_in.and_then(|other| fields.get(other)))
            });
            if value.is_none() && stand_in.is_none() && field != "batch" {
                // Not in pageframe's view yet (high_max): not a case.
                continue;
            }
            rows.push(ConformRow::compare(
                format!("{zone} cpu {cpu} {field}"),
                kernel.to_string(),
                number(value.copied()),
            ));
        }
    }
}

/// Each zone of the host beside pageframe's zone of the same node and
/// name, for the zones both have.
pub(super) fn zone_pairs<'a>(
    host: &'a [ZoneText],
    ours: &'a [ZoneText],
) -> impl Iterator<Item = (&'a ZoneText, &'a ZoneText)> {
    host.iter().filter_map(|zone| {
        let mine = ours
            .iter()
            .find(|mine| mine.node == zone.node && mine.name == zone.name)?;
        Some((zone, mine))
    })
}

/// The sysctls the formulas read besides min_free_kbytes (its own row),
/// host beside pageframe's defaults: each value pageframe has (the host's
/// lowmem_reserve_ratio also has ZONE_DEVICE's).
fn sysctl_rows(
    allocator: &LocalPageAllocator,
    rows: &mut Vec<ConformRow>,
) -> Result<(), ConformError> {
    for sysctl in VmSysctl::ALL {
        if sysctl == VmSysctl::MinFreeKbytes {
            continue;
        }
        let host: Vec<u64> = read(&format!("/proc/sys/vm/{}", sysctl.name()))?
            .split_whitespace()
            .filter_map(|value| value.parse().ok())
            .collect();
        let ours = allocator.sysctl_values(sysctl);
        let (host, ours) = if ours.len() == 1 {
            (
                host.first().map_or("absent".into(), u64::to_string),
                ours[0].to_string(),
            )
        } else {
            (show(&host[..ours.len().min(host.len())]), show(&ours))
        };
        rows.push(ConformRow::compare(
            format!("vm.{}", sysctl.name()),
            host,
            ours,
        ));
    }
    Ok(())
}

/// Runs the suite; skipped without root (`/proc/iomem` shows addresses to
/// root only).
pub fn run() -> Result<SuiteResult, ConformError> {
    if !is_root() {
        return Ok(SuiteResult::skipped(
            SUITE,
            "not root (/proc/iomem shows the memory map to root only)",
        ));
    }
    let _lock = HostStateLock::take(false)?;
    let host = HostMachine::read()?;
    let allocator = LocalPageAllocator::boot_layout(host.layout()?, AllocOptions::default())
        .map_err(|err| ConformError::Boot(err.to_string()))?;
    let ours = crate::trace::host::parse_zoneinfo(&pageframe::proc::zoneinfo(&allocator));
    let mut rows = Vec::new();
    sysctl_rows(&allocator, &mut rows)?;
    for (zone, mine) in zone_pairs(&host.zones, &ours) {
        zone_rows("", &[SIZES, WATERMARKS].concat(), zone, mine, &mut rows);
    }
    rows.push(ConformRow::compare(
        format!(
            "min_free_kbytes for the host's memory (THP {})",
            if host.desc.transparent_hugepage {
                "on"
            } else {
                "off"
            }
        ),
        read_number("/proc/sys/vm/min_free_kbytes")?.to_string(),
        allocator.min_free_kbytes().to_string(),
    ));
    Ok(SuiteResult {
        suite: SUITE,
        outcome: SuiteOutcome::Ran(rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::Verdict;
    use crate::trace::host::parse_zoneinfo;

    /// A zone's text with these watermarks and boost.
    fn zone(boost: u64, min: u64) -> ZoneText {
        let text = format!(
            "Node 0, zone   Normal\n  pages free     1000\n        boost    {boost}\n        min      {}\n        low      {}\n        high     {}\n        promo    {}\n",
            min + boost,
            min + 10 + boost,
            min + 20 + boost,
            min + 30 + boost
        );
        parse_zoneinfo(&text).remove(0)
    }

    /// A boost in force on the host (2 560 pages were seen in a CI run)
    /// is not a difference in how the watermarks are set; a different min
    /// is.
    #[test]
    fn watermarks_are_compared_less_the_boost() {
        let mut rows = Vec::new();
        zone_rows(
            "",
            &WATERMARKS,
            &zone(2560, 14_769),
            &zone(0, 14_769),
            &mut rows,
        );
        assert!(
            rows.iter().all(|row| row.verdict == Verdict::Match),
            "{rows:?}"
        );
        let mut rows = Vec::new();
        zone_rows(
            "",
            &WATERMARKS,
            &zone(0, 14_770),
            &zone(0, 14_769),
            &mut rows,
        );
        assert_eq!(rows[0].verdict, Verdict::Diff);
    }
}
