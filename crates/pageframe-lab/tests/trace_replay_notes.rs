//! The notes under a replay's rows: what the replay could not take from
//! the trace or the host, said beside the figures it affects.

mod common;

use common::{alloc, free, shipped_prefix, small_machine};
use pageframe_lab::trace::{self, run_replay, ReplayOptions, Trace};

/// The report says when the replay could not start where the host stood:
/// a text import carries no host files, a recording does.
#[test]
fn the_report_names_a_start_without_host_state() {
    let text =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trace_data/tracefs_trace.txt");
    let mentions_fresh_start = |trace: &Trace, options: &ReplayOptions| {
        let report = run_replay(trace, options).unwrap();
        trace::replay_report(&text, trace, &report, options)
            .notes
            .iter()
            .any(|note| note.contains("no host state"))
    };
    let imported = trace::import(&text).unwrap();
    assert!(mentions_fresh_start(&imported, &small_machine()));
    assert!(!mentions_fresh_start(
        &shipped_prefix(2_000),
        &ReplayOptions::default()
    ));
}

/// The host's vmstat counters at the recording's start and end say when it
/// compacted or reclaimed memory during the trace, which the replay does
/// not do by itself: the notes name the counters' growth.
#[test]
fn the_report_names_the_hosts_compaction_and_reclaim() {
    let notes_for = |start: &str, end: &str| {
        let mut trace = shipped_prefix(2_000);
        trace.set_meta("host.start.vmstat", start);
        trace.set_meta("host.end.vmstat", end);
        let options = ReplayOptions::default();
        let report = run_replay(&trace, &options).unwrap();
        trace::replay_report(std::path::Path::new("t"), &trace, &report, &options).notes
    };
    let quiet = "pgmigrate_success 10\ncompact_stall 2\npgsteal_kswapd 5\npgsteal_direct 0\n";
    let notes = notes_for(quiet, quiet);
    assert!(
        !notes
            .iter()
            .any(|note| note.contains("compacted") || note.contains("reclaimed")),
        "{notes:?}"
    );
    let busy = "pgmigrate_success 510\ncompact_stall 3\npgsteal_kswapd 5\npgsteal_direct 40\n";
    let notes = notes_for(quiet, busy);
    let compacted = notes.iter().find(|note| note.contains("compacted"));
    assert!(
        compacted.is_some_and(
            |note| note.contains("pgmigrate_success +500") && note.contains("compact_stall +1")
        ),
        "{notes:?}"
    );
    let reclaimed = notes.iter().find(|note| note.contains("reclaimed"));
    assert!(
        reclaimed.is_some_and(
            |note| note.contains("pgsteal_kswapd +0") && note.contains("pgsteal_direct +40")
        ),
        "{notes:?}"
    );
    // A counter that went down (a different boot) says nothing.
    assert!(!notes_for(busy, quiet)
        .iter()
        .any(|note| note.contains("compacted")));
}

/// A host-shaped machine has the host's managed memory, the kernel's
/// pageblock counts cover its present memory: the note says how much of
/// it the kernel reserved at boot, when ours are fewer, and only on a
/// machine shaped like the host.
#[test]
fn the_report_names_the_memory_reserved_at_boot() {
    let trace = shipped_prefix(2_000);
    let options = ReplayOptions::default();
    let report = run_replay(&trace, &options).unwrap();
    let (kernel, ours) = trace::section_totals(&report.rows, "pageblocks");
    let fewer = ours < kernel;
    let notes = trace::replay_report(std::path::Path::new("t"), &trace, &report, &options).notes;
    let reserved = notes.iter().any(|note| note.contains("reserved at boot"));
    assert_eq!(reserved, fewer, "{notes:?}");
    assert!(fewer, "the shipped trace's host reserved memory at boot");
    // A machine given by hand is not the host's: no note.
    let small = ReplayOptions {
        fit: true,
        ..small_machine()
    };
    let report = run_replay(&trace, &small).unwrap();
    let notes = trace::replay_report(std::path::Path::new("t"), &trace, &report, &small).notes;
    assert!(
        !notes.iter().any(|note| note.contains("reserved at boot")),
        "{notes:?}"
    );
}

/// A block freed twice with no allocation between was allocated without
/// an event (alloc_pages_bulk()): its second free is skipped, counted
/// apart from other unknown frees, and named in a note.
#[test]
fn a_free_after_a_free_is_an_allocation_the_trace_missed() {
    let kernel = pageframe::Gfp::KERNEL.bits();
    let trace = Trace {
        events: vec![
            alloc(1, 0, 0x1000, 0, kernel),
            free(2, 0, 0x1000, 0),
            free(3, 0, 0x1000, 0),
            alloc(4, 0, 0x1000, 0, kernel),
            free(5, 0, 0x1000, 0),
            alloc(6, 0, 0x2000, 0, kernel),
            free(7, 1, 0x2000, 0),
        ],
        ..Trace::default()
    };
    let options = small_machine();
    let report = run_replay(&trace, &options).unwrap();
    let counts = &report.outcome.counts;
    assert_eq!(
        (
            counts.frees,
            counts.frees_unknown,
            counts.frees_after_untraced_alloc
        ),
        (3, 1, 1)
    );
    let notes = trace::replay_report(std::path::Path::new("t"), &trace, &report, &options).notes;
    assert!(
        notes.iter().any(|note| note
            .starts_with("frees of blocks the trace had freed and not allocated since (1)")),
        "{notes:?}"
    );
}
