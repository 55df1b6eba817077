//! The side-by-side report of a replay: what the traced kernel did and what
//! pageframe did with the same requests, as typed rows.
//!
//! Sections: `replay` (what was replayed and skipped), `extfrag` (fallbacks
//! per order, migratetype, fallback type and ownership change, ours as the
//! engine counts what the tracepoint would report: see
//! [`replay`](mod@super::replay); then the totals, ours from the engine's
//! claim and steal counters), `pcp`
//! (refills and drains), `buddyinfo` (free blocks per order at the end),
//! `pageblocks` (per migratetype at the end), and `unusable_index` /
//! `fragmentation_index` per order at the end (the series over time is in
//! [`super::replay::ReplayOutcome::samples`]). `kernel` is `None` where the
//! trace has no such figure, `pageframe` likewise.

use super::event::Trace;
use super::frag::sum_orders;
use super::host::{host_file, parse_buddyinfo, parse_pagetypeinfo, parse_pcp, HostPcp, Moment};
use super::replay::{FallbackKey, FragSample, ReplayOutcome};
use crate::report::Row;
use pageframe::MigrateType;

/// One line of the report.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ReplayRow {
    /// Which comparison.
    pub section: &'static str,
    /// What is compared.
    pub key: String,
    /// The traced kernel's figure.
    pub kernel: Option<f64>,
    /// Pageframe's figure.
    pub pageframe: Option<f64>,
}

impl ReplayRow {
    fn new(
        section: &'static str,
        key: impl Into<String>,
        kernel: Option<f64>,
        ours: Option<f64>,
    ) -> ReplayRow {
        ReplayRow {
            section,
            key: key.into(),
            kernel,
            pageframe: ours,
        }
    }

    /// The row in the lab's report form (columns section, key, kernel,
    /// pageframe; a missing figure is null).
    pub fn to_report_row(&self) -> Row {
        Row::new()
            .with("section", self.section)
            .with("key", self.key.clone())
            .with("kernel", self.kernel)
            .with("pageframe", self.pageframe)
    }
}

fn migratetype_name(migratetype: i8) -> String {
    usize::try_from(migratetype)
        .ok()
        .and_then(MigrateType::from_index)
        .map_or_else(|| migratetype.to_string(), |mt| mt.name().to_string())
}

fn fallback_label(key: &FallbackKey) -> String {
    format!(
        "order {} {} from {}{}",
        key.order,
        migratetype_name(key.migratetype),
        migratetype_name(key.fallback_migratetype),
        if key.change_ownership {
            " (claimed)"
        } else {
            ""
        }
    )
}

/// Pageblocks per migratetype summed over zones from /proc/pagetypeinfo's
/// "Number of blocks type" table.
fn host_pageblocks(pagetypeinfo: &str) -> Vec<(String, u64)> {
    let mut totals: Vec<(String, u64)> = Vec::new();
    for line in parse_pagetypeinfo(pagetypeinfo).blocks {
        for (name, count) in line.counts {
            match totals.iter_mut().find(|(seen, _)| *seen == name) {
                Some((_, total)) => *total = total.saturating_add(count),
                None => totals.push((name, count)),
            }
        }
    }
    totals
}

fn host_nr_free(trace: &Trace, moment: Moment) -> Option<Vec<u64>> {
    let lines = parse_buddyinfo(&host_file(trace, moment, "buddyinfo")?);
    Some(sum_orders(lines.iter().map(|line| line.nr_free.as_slice())))
}

/// The kernel's and pageframe's figures of a section's rows, each summed
/// (a row without a figure adds nothing).
pub fn section_totals(rows: &[ReplayRow], section: &str) -> (f64, f64) {
    rows.iter()
        .filter(|row| row.section == section)
        .fold((0.0, 0.0), |(kernel, ours), row| {
            (
                kernel + row.kernel.unwrap_or(0.0),
                ours + row.pageframe.unwrap_or(0.0),
            )
        })
}

/// The rows of a replay beside the trace it replayed.
pub fn compare(trace: &Trace, outcome: &ReplayOutcome) -> Vec<ReplayRow> {
    let counts = &outcome.counts;
    let mut rows = Vec::new();
    let kinds = trace.counts();
    let f = |value: u64| Some(value as f64);
    rows.push(ReplayRow::new(
        "replay",
        "allocations",
        f(kinds[0]),
        f(counts.allocs),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "failed allocations",
        f(counts.host_failed_allocs),
        f(counts.failed_allocs),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "allocations above max order (skipped)",
        None,
        f(counts.unreplayable_allocs),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "frees",
        f(kinds[1]),
        f(counts.frees),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "frees marked batched (mm_page_free_batched)",
        f(kinds[2]),
        f(counts.batched_marks),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "blocks from before the trace (held by stand-ins)",
        None,
        f(counts.pretrace_held),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "free blocks placed as the host's at the start",
        None,
        f(counts.host_free_placed),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "free blocks of the host's that did not fit",
        None,
        f(counts.host_free_unplaced),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "frees of unknown blocks (skipped)",
        None,
        f(counts.frees_unknown),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "of those, of blocks freed before and not allocated since",
        None,
        f(counts.frees_after_untraced_alloc),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "free order mismatches",
        None,
        f(counts.free_order_mismatches),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "reallocated while live",
        None,
        f(counts.reallocated_live),
    ));
    rows.push(ReplayRow::new(
        "replay",
        "blocks live at the end",
        None,
        f(counts.live_at_end),
    ));
    let lost = trace
        .meta("lost_events")
        .and_then(|text| text.parse::<u64>().ok());
    rows.push(ReplayRow::new(
        "replay",
        "lost events",
        lost.map(|lost| lost as f64),
        None,
    ));

    let mut keys: Vec<FallbackKey> = counts
        .trace_fallbacks
        .iter()
        .chain(&counts.fallbacks)
        .map(|(key, _)| *key)
        .collect();
    keys.sort();
    keys.dedup();
    // Both lists are sorted by key (`ReplayCounts`).
    let lookup = |list: &[(FallbackKey, u64)], key: &FallbackKey| {
        list.binary_search_by_key(key, |(k, _)| *k)
            .map_or(0, |at| list[at].1)
    };
    for key in &keys {
        rows.push(ReplayRow::new(
            "extfrag",
            fallback_label(key),
            f(lookup(&counts.trace_fallbacks, key)),
            f(lookup(&counts.fallbacks, key)),
        ));
    }
    let trace_claims = counts
        .trace_fallbacks
        .iter()
        .filter(|(k, _)| k.change_ownership)
        .map(|(_, c)| c)
        .sum();
    let trace_steals = counts
        .trace_fallbacks
        .iter()
        .filter(|(k, _)| !k.change_ownership)
        .map(|(_, c)| c)
        .sum();
    rows.push(ReplayRow::new(
        "extfrag",
        "total claimed (engine counter)",
        f(trace_claims),
        f(outcome.extfrag_claim),
    ));
    rows.push(ReplayRow::new(
        "extfrag",
        "total stolen (engine counter)",
        f(trace_steals),
        f(outcome.extfrag_steal),
    ));

    let host_pcp = |moment: Moment, field: fn(&HostPcp) -> u32| {
        host_file(trace, moment, "zoneinfo").map(|zoneinfo| {
            parse_pcp(&zoneinfo)
                .iter()
                .map(|pcp| f64::from(field(pcp)))
                .sum::<f64>()
        })
    };
    let pcp_rows = [
        (
            "refills (rmqueue_bulk calls)",
            f(counts.trace_refill_calls),
            outcome.pcp_refill,
        ),
        (
            "refill pages",
            f(counts.trace_refill_pages),
            outcome.pcp_refill_pages,
        ),
        (
            "pages listed at start",
            host_pcp(Moment::Start, |pcp| pcp.count),
            counts.host_pcp_pages,
        ),
        (
            "of those, on the lists the trace shows",
            None,
            counts.host_pcp_as_traced,
        ),
        (
            "of those, at their host frame's offset in a pageblock",
            None,
            counts.host_pcp_at_host_offset,
        ),
        (
            "pages the host listed that could not be",
            None,
            counts.host_pcp_dropped,
        ),
        (
            "pages listed at end",
            host_pcp(Moment::End, |pcp| pcp.count),
            outcome.pcp_pages_end,
        ),
        (
            "high at end (sum over CPUs and zones)",
            host_pcp(Moment::End, |pcp| pcp.high),
            outcome.pcp_high_end,
        ),
        (
            "drained pages",
            f(counts.trace_drain_pages),
            outcome.pcp_drain_pages,
        ),
        (
            "vmstat worker passes over one CPU's lists",
            trace
                .records_vmstat_worker()
                .then_some(counts.trace_vmstat_runs as f64),
            counts.vmstat_passes,
        ),
    ];
    for (key, kernel, ours) in pcp_rows {
        rows.push(ReplayRow::new("pcp", key, kernel, f(ours)));
    }

    let host_end = host_nr_free(trace, Moment::End);
    let moments = [
        (
            outcome.samples.first(),
            host_nr_free(trace, Moment::Start),
            "start",
        ),
        (outcome.samples.last(), host_end.clone(), "end"),
    ];
    for (ours, host, when) in moments {
        let ours = ours.map_or(&[][..], |sample| sample.nr_free.as_slice());
        for (order, ours) in ours.iter().enumerate() {
            let host = host.as_ref().and_then(|host| host.get(order)).copied();
            rows.push(ReplayRow::new(
                "buddyinfo",
                format!("order {order} free blocks at {when}"),
                host.map(|v| v as f64),
                f(*ours),
            ));
        }
    }
    if let Some(pagetypeinfo) = host_file(trace, Moment::End, "pagetypeinfo") {
        for (name, count) in host_pageblocks(&pagetypeinfo) {
            let ours = MigrateType::ALL
                .iter()
                .position(|mt| mt.name() == name)
                .map(|index| outcome.pageblocks[index]);
            rows.push(ReplayRow::new(
                "pageblocks",
                format!("{name} at end"),
                f(count),
                ours.map(|v| v as f64),
            ));
        }
    }
    let host_sample = host_end.map(|nr_free| FragSample::from_nr_free(0, 0, nr_free));
    if let Some(ours) = outcome.samples.last() {
        for order in 0..ours.nr_free.len() {
            let kernel = host_sample
                .as_ref()
                .and_then(|host| host.unusable.get(order))
                .map(|v| *v as f64 / 1000.0);
            rows.push(ReplayRow::new(
                "unusable_index",
                format!("order {order} at end"),
                kernel,
                Some(ours.unusable[order] as f64 / 1000.0),
            ));
        }
        for order in 0..ours.nr_free.len() {
            let kernel = host_sample
                .as_ref()
                .and_then(|host| host.fragmentation.get(order))
                .map(|v| *v as f64 / 1000.0);
            rows.push(ReplayRow::new(
                "fragmentation_index",
                format!("order {order} at end"),
                kernel,
                Some(ours.fragmentation[order] as f64 / 1000.0),
            ));
        }
    }
    rows
}
