//! Replays of a trace recorded on a host with most of its memory free
//! (`traces/untar-sync-free-memory-rich.pftrace`, see `traces/README.md`):
//! the host's free blocks are copied as its pagetypeinfo showed them, and
//! what the trace frees must merge with them as far as it merged on the
//! host, no further.

use pageframe_lab::trace::{self, ReplayOptions};

/// |ours − the kernel's| free blocks at the end, times the pages in each,
/// summed over orders; and the kernel's free pages at the end.
fn end_free_error(trace: &trace::Trace, outcome: &trace::ReplayOutcome) -> (u64, u64) {
    let rows = trace::compare(trace, outcome);
    let mut error = 0u64;
    let mut kernel_pages = 0u64;
    for order in 0..=10u32 {
        let key = format!("order {order} free blocks at end");
        let row = rows
            .iter()
            .find(|row| row.section == "buddyinfo" && row.key == key)
            .unwrap_or_else(|| panic!("no row {key}"));
        let (kernel, ours) = (row.kernel.unwrap() as u64, row.pageframe.unwrap() as u64);
        error += kernel.abs_diff(ours) << order;
        kernel_pages += kernel << order;
    }
    (error, kernel_pages)
}

/// The listed pages and stand-ins the replay frees are never the last held
/// page beside a copied free block, so drains do not merge whole runs of
/// copied blocks up to MAX_PAGE_ORDER: the free blocks at the end are
/// within 2% of the kernel's pages (they were 8%, 316 072 pages, when
/// those pages were handed out), every page the host listed is listed,
/// and the lists refill within 10% as often as the kernel's did.
#[test]
fn drains_on_a_free_memory_rich_host_merge_as_the_hosts_did() {
    let path = trace::shipped_trace_path().with_file_name("untar-sync-free-memory-rich.pftrace");
    let trace = trace::read_file(&path).unwrap();
    let options = ReplayOptions {
        check_invariants: true,
        ..ReplayOptions::default()
    };
    let outcome = trace::replay(&trace, &options).unwrap();
    let (error, kernel_pages) = end_free_error(&trace, &outcome);
    assert!(
        kernel_pages > 1 << 21,
        "the host had {kernel_pages} pages free"
    );
    assert!(
        error * 50 <= kernel_pages,
        "end free blocks {error} pages off the kernel's, of {kernel_pages}"
    );
    // Every page the host listed is listed once: a page handed out twice
    // would fail its second free onto a list.
    let listed = trace::compare(&trace, &outcome)
        .into_iter()
        .find(|row| row.key == "pages listed at start")
        .expect("a listed-pages row");
    assert_eq!(listed.kernel, listed.pageframe);
    let kernel_refills = outcome.counts.trace_refill_calls;
    assert!(
        outcome.pcp_refill.abs_diff(kernel_refills) * 10 <= kernel_refills,
        "refills {} against the kernel's {kernel_refills}",
        outcome.pcp_refill
    );
}

/// The trace's host counted the pageblocks of its present memory: the
/// replay's machine, shaped from the saved zoneinfo with the host's
/// unmanaged pages reserved, has as many pageblocks, and each zone the
/// host's spanned, present and managed pages.
#[test]
fn the_replay_machine_has_the_hosts_zones_and_pageblocks() {
    let path = trace::shipped_trace_path().with_file_name("untar-sync-free-memory-rich.pftrace");
    let trace = trace::read_file(&path).unwrap();
    let desc = trace::replay::replay_machine(&trace, &ReplayOptions::default()).unwrap();
    let layout = desc.layout().unwrap();
    let host = trace::host::parse_zoneinfo(
        &trace::host::host_file(&trace, trace::host::Moment::Start, "zoneinfo").unwrap(),
    );
    for zone in layout.zones().filter(|zone| zone.is_populated()) {
        let theirs = host
            .iter()
            .find(|host| host.node == zone.node.index() && host.name == zone.zone_type.name())
            .unwrap();
        assert_eq!(
            (
                zone.span.start.0,
                zone.spanned_pages(),
                zone.present_pages(),
                zone.managed_pages()
            ),
            (
                theirs.field("start_pfn").unwrap(),
                theirs.field("spanned").unwrap(),
                theirs.field("present").unwrap(),
                theirs.field("managed").unwrap()
            ),
            "{}",
            zone.zone_type.name()
        );
    }
    let outcome = trace::replay(&trace, &ReplayOptions::default()).unwrap();
    let (kernel, ours) = trace::section_totals(&trace::compare(&trace, &outcome), "pageblocks");
    assert_eq!(kernel, ours);
}
