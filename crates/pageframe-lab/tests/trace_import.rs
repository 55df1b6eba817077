//! Importing text traces: tracefs's `trace` file and `perf script` output
//! (samples cut from real recordings on these machines), GFP flag names,
//! and errors naming the line.

use pageframe::Gfp;
use pageframe_lab::trace::gfp_names::parse_gfp;
use pageframe_lab::trace::text_import::import_text;
use pageframe_lab::trace::{self, EventKind, TraceClock, TraceError};
use std::path::Path;

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/trace_data")
        .join(name)
}

#[test]
fn tracefs_trace_file_imports() {
    let trace = trace::import(&data("tracefs_trace.txt")).unwrap();
    trace.check_invariants().unwrap();
    assert_eq!(trace.events.len(), 52);
    assert_eq!(trace.meta("cpus"), Some("2"), "from the header's #P:2");
    let first = trace.events[0];
    assert_eq!(first.kind, EventKind::Alloc);
    assert_eq!(
        (first.cpu, first.pfn, first.order, first.migratetype),
        (0, 0x3e90c2, 1, 2)
    );
    let expected = Gfp::RECLAIMABLE.bits()
        | Gfp::IO.bits()
        | Gfp::FS.bits()
        | Gfp::NOWARN.bits()
        | Gfp::NORETRY.bits()
        | Gfp::COMP.bits()
        | Gfp::NOMEMALLOC.bits();
    assert_eq!(first.gfp, expected);
    assert_eq!(first.timestamp, 0, "rebased to the first event");
    let refills = trace
        .events
        .iter()
        .filter(|event| event.kind == EventKind::ZoneLocked && event.flag)
        .count();
    assert_eq!(refills, 8);
    // Task names with spaces ("lto cgu.0.rcgu.-3079") parse too.
    assert!(trace
        .events
        .iter()
        .any(|event| event.pfn == 0x104fd9 && event.kind == EventKind::Free));
    // 2450.893837 s to 2450.894033 s.
    assert_eq!(trace.events[1].timestamp, 196_000);
}

#[test]
fn perf_script_output_imports() {
    let trace = trace::import(&data("perf_script.txt")).unwrap();
    assert_eq!(trace.events.len(), 36);
    let counts = trace.counts();
    assert_eq!(counts[EventKind::Alloc as usize], 20);
    assert_eq!(counts[EventKind::Free as usize], 10);
    assert_eq!(counts[EventKind::ZoneLocked as usize], 6);
    let alloc = trace
        .events
        .iter()
        .find(|event| event.pfn == 0x1092c6)
        .unwrap();
    assert_eq!(alloc.gfp, (Gfp::HIGHUSER | Gfp::ACCOUNT).bits());
}

#[test]
fn trace_cmd_report_lines_import() {
    let text = "cpus=2\n\
        \x20           tar-2150  [001]  1234.500000: mm_page_alloc:        page=0xffffea0000123400 pfn=0x48d0 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_ZERO\n\
        \x20           tar-2150  [001]  1234.500001: mm_page_alloc_extfrag: page=0xffffea0000123400 pfn=0x48d0 alloc_order=0 fallback_order=9 pageblock_order=9 alloc_migratetype=0 fallback_migratetype=1 fragmenting=0 change_ownership=1\n\
        \x20           tar-2150  [000]  1234.500002: mm_page_pcpu_drain:   page=0xffffea0000123400 pfn=0x48d0 order=0 migratetype=1\n\
        CPU:0 [LOST 7 EVENTS]\n";
    let trace = import_text(text).unwrap();
    assert_eq!(trace.meta("cpus"), Some("2"));
    assert_eq!(trace.meta("lost_events"), Some("7"));
    assert_eq!(trace.events.len(), 3);
    let extfrag = trace.events[1];
    assert_eq!(extfrag.kind, EventKind::Extfrag);
    assert_eq!(
        (
            extfrag.order,
            extfrag.fallback_order,
            extfrag.migratetype,
            extfrag.fallback_migratetype,
            extfrag.flag
        ),
        (0, 9, 0, 1, true)
    );
    assert_eq!(
        trace.events[0].gfp,
        (Gfp::HIGHUSER_MOVABLE | Gfp::ZERO).bits()
    );
}

#[test]
fn failed_allocations_and_other_events_are_told_apart() {
    let text = "x-1 [000] .... 1.000000: mm_page_alloc: page=0000000000000000 pfn=0x0 order=3 migratetype=0 gfp_flags=GFP_ATOMIC\n\
                x-1 [000] .... 1.000001: kmalloc: call_site=foo ptr=0 bytes_req=8\n\
                x-1 [000] .... 1.000002: mm_page_free: page=00000000ab12cd34 pfn=0x10 order=0\n";
    let trace = import_text(text).unwrap();
    assert_eq!(trace.events.len(), 2);
    assert_eq!(trace.events[0].pfn, u64::MAX, "a failed allocation");
    assert_eq!(trace.events[1].pfn, 0x10);
}

/// The vmstat worker's runs import from the workqueue event as tracefs and
/// perf print it; other work functions are other events.
#[test]
fn vmstat_worker_runs_import_and_other_work_is_skipped() {
    let text = "kworker/0:0-24594 [000] ..... 55200.135719: workqueue_execute_start: work struct 00000000574c6cbf: function vmstat_update\n\
                kworker/1:1-29794 [001] ..... 55200.200000: workqueue_execute_start: work struct 000000007bca0640: function flush_to_ldisc\n\
                x-1 [001] .... 55200.300000: mm_page_free: page=00000000ab12cd34 pfn=0x10 order=0\n\
                kworker/1:1 29794 [001] 55201.255707: workqueue:workqueue_execute_start: work struct 0xffff8881: function vmstat_update\n\
                kworker/0:0-24594 [000] ..... 55201.300000: workqueue_execute_start: work struct 00000000574c6cbf: function vmstat_update+0x0/0x90\n\
                kworker/0:0-24594 [000] ..... 55201.400000: workqueue_execute_start: work struct 00000000574c6cbf: function vmstat_updater\n";
    let trace = import_text(text).unwrap();
    let kinds: Vec<(EventKind, u16)> = trace.events.iter().map(|e| (e.kind, e.cpu)).collect();
    assert_eq!(
        kinds,
        [
            (EventKind::VmstatWork, 0),
            (EventKind::Free, 1),
            (EventKind::VmstatWork, 1),
            (EventKind::VmstatWork, 0)
        ]
    );
    assert!(trace.records_vmstat_worker());
    assert_eq!(trace.events[0].pfn, 0);
    // Without its CPU, a worker run cannot be placed: an error, as for kmem.
    let text = "kworker/0:0-24594 55200.135719: workqueue_execute_start: work struct 00000000574c6cbf: function vmstat_update\n";
    let err = import_text(text).unwrap_err();
    assert!(matches!(err, TraceError::Text { line: 1, .. }), "{err}");
    assert!(err.to_string().contains("vmstat worker event"), "{err}");
    let plain =
        import_text("x-1 [000] .... 1.0: mm_page_free: page=00000000ab12cd34 pfn=0x1 order=0\n")
            .unwrap();
    assert!(!plain.records_vmstat_worker());
}

#[test]
fn bad_lines_name_their_line_number() {
    let text = "# header\nx-1 [000] .... 1.000000: mm_page_free: page=00000000ab12cd34 order=0\n";
    let err = import_text(text).unwrap_err();
    assert!(matches!(err, TraceError::Text { line: 2, .. }), "{err}");
    assert!(err.to_string().starts_with("text trace line 2:"), "{err}");
    let text = "x-1 [000] .... 1.0: mm_page_alloc: page=00000000ab12cd34 pfn=0x1 order=0 migratetype=0 gfp_flags=GFP_BOGUS\n";
    let err = import_text(text).unwrap_err();
    assert!(err.to_string().contains("GFP_BOGUS"), "{err}");
    let text = "x-1 [000] .... 1.0: mm_page_free: page=00000000ab12cd34 pfn=0x1 order=300\n";
    assert!(matches!(
        import_text(text),
        Err(TraceError::Text { line: 1, .. })
    ));
}

#[test]
fn gfp_names_map_to_the_kernel_bits() {
    assert_eq!(parse_gfp("GFP_KERNEL"), Some(Gfp::KERNEL.bits()));
    assert_eq!(
        parse_gfp("GFP_NOWAIT|__GFP_COMP"),
        Some((Gfp::NOWAIT | Gfp::COMP).bits())
    );
    assert_eq!(parse_gfp("GFP_TRANSHUGE"), Some(0x001c_24ca));
    assert_eq!(parse_gfp("none"), Some(0));
    assert_eq!(parse_gfp("__GFP_HIGH|0x4000000"), Some(0x0400_0020));
    assert_eq!(parse_gfp("GFP_WHATEVER"), None);
}

/// A line of exactly the limit is read; one byte more is an error naming
/// its line, and the reader stops there rather than holding it all.
#[test]
fn a_line_is_read_up_to_the_limit_and_no_further() {
    use pageframe_lab::trace::text_import::{import_reader, MAX_LINE_BYTES};
    let event = "x-1 [000] .... 1.000000: mm_page_free: page=00000000ab12cd34 pfn=0x10 order=0 ";
    let line = |len: usize| format!("{event}{}\n", "y".repeat(len - event.len()));
    let at_limit = format!("# header\n{}", line(MAX_LINE_BYTES));
    let trace = import_reader(at_limit.as_bytes()).unwrap();
    assert_eq!(trace.events.len(), 1);
    let over = format!("# header\n{}", line(MAX_LINE_BYTES + 1));
    let err = import_reader(over.as_bytes()).unwrap_err();
    assert!(matches!(err, TraceError::Text { line: 2, .. }), "{err}");
}

/// A file with text but no event line is not a trace (a config file, a
/// binary read lossily); a trace whose lines are all other events, or only
/// headers, is an empty trace.
#[test]
fn text_with_no_event_line_is_not_a_trace() {
    let err =
        import_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/:/bin/sh\n").unwrap_err();
    assert!(matches!(err, TraceError::Text { line: 1, .. }), "{err}");
    assert!(err.to_string().contains("not a tracefs"), "{err}");
    let err = import_text("# tracer: nop\n\nhello\n").unwrap_err();
    assert!(matches!(err, TraceError::Text { line: 3, .. }), "{err}");
    let other = "x-1 [000] .... 1.000001: kmalloc: call_site=foo ptr=0 bytes_req=8\n";
    assert_eq!(import_text(other).unwrap().events.len(), 0);
    assert_eq!(
        import_text(&format!("note\n{other}")).unwrap().events.len(),
        0
    );
    let headers = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:2\n";
    assert_eq!(import_text(headers).unwrap().events.len(), 0);
    assert_eq!(
        import_text("version = 6\nCPU 0 is empty\ncpus=2\n")
            .unwrap()
            .events
            .len(),
        0
    );
    assert_eq!(import_text("").unwrap().events.len(), 0);
}

/// A trace recorded with a clock tracefs prints as a bare integer
/// (`x86-tsc` here, cut from a recording on this machine; `counter` and
/// `uptime` print the same way) imports in ticks: events keep their order,
/// the clock is recorded and survives the .pftrace round trip, and the
/// summary does not call ticks seconds.
#[test]
fn tick_clock_traces_import_in_ticks() {
    let trace = trace::import(&data("tracefs_x86_tsc.txt")).unwrap();
    trace.check_invariants().unwrap();
    assert_eq!(trace.clock(), TraceClock::Ticks);
    assert_eq!(trace.events.len(), 40);
    let counts = trace.counts();
    assert_eq!(counts[EventKind::ZoneLocked as usize], 20);
    // 120028006662186 to 120028006666372 TSC cycles.
    assert_eq!(trace.events[1].timestamp - trace.events[0].timestamp, 4186);
    let summary = trace::summary(&trace);
    assert!(summary.contains("clock ticks"), "{summary}");
    assert!(!summary.contains(" s on "), "{summary}");
    let round_trip = trace::decode(&trace::encode(&trace).unwrap()).unwrap();
    assert_eq!(round_trip.clock(), TraceClock::Ticks);
    assert_eq!(round_trip.events, trace.events);
    let seconds = trace::import(&data("tracefs_trace.txt")).unwrap();
    assert_eq!(seconds.clock(), TraceClock::Nanoseconds);
}

/// One trace has one clock: a line in seconds after lines in ticks is an
/// error naming both lines, not a timeline of mixed units.
#[test]
fn a_trace_mixing_clocks_is_refused() {
    let alloc = "mm_page_alloc: page=0000000071d402fe pfn=0x482e79 order=0 \
                 migratetype=0 gfp_flags=GFP_KERNEL";
    let text =
        format!("bash-1 [001] 120027945114570: {alloc}\n# c\nbash-1 [001] 46232.695304: {alloc}\n");
    let err = import_text(&text).unwrap_err();
    assert!(matches!(err, TraceError::Text { line: 3, .. }), "{err}");
    assert!(err.to_string().contains("line 1"), "{err}");
}

/// Times that step back at many events are gaps, not times (`perf script
/// --deltatime`): sorting them would scramble the trace, so the import
/// refuses them, naming the first step back. A few steps back (two CPUs'
/// clocks a little apart) are sorted into order.
#[test]
fn gaps_instead_of_times_are_refused() {
    let line = |seconds: &str, pfn: u64| {
        format!(
            "cc1 27766 [000] {seconds}: kmem:mm_page_alloc: page=0x{pfn:x} pfn=0x{pfn:x} \
             order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n"
        )
    };
    let gaps = ["0.000000", "0.000004", "0.000001", "0.000009", "0.000002"];
    let text: String = (0..40)
        .map(|index| line(gaps[index % gaps.len()], 0x1000 + index as u64))
        .collect();
    let err = import_text(&text).unwrap_err();
    assert!(matches!(err, TraceError::Text { line: 3, .. }), "{err}");
    assert!(err.to_string().contains("--deltatime"), "{err}");

    let mut times: Vec<u64> = (0..40).map(|index| 100 + index * 3).collect();
    times.swap(10, 11);
    times.swap(30, 31);
    let text: String = times
        .iter()
        .enumerate()
        .map(|(index, micros)| line(&format!("5.{micros:06}"), 0x1000 + index as u64))
        .collect();
    let trace = import_text(&text).unwrap();
    trace.check_invariants().unwrap();
    assert_eq!(trace.events.len(), 40);
    assert_eq!(trace.events[10].pfn, 0x1000 + 11, "sorted into time order");
}

/// An event line without its CPU (perf script -F without cpu) or a time
/// that cannot be read is an error naming the line and the field, not a
/// line skipped.
#[test]
fn an_event_without_its_cpu_is_named() {
    let text = "# header\nperf 8984 49550.069055: kmem:mm_page_alloc_zone_locked: \
                page=0x106d05 pfn=0x106d05 order=0 migratetype=0 percpu_refill=1\n";
    let err = import_text(text).unwrap_err();
    assert!(matches!(err, TraceError::Text { line: 2, .. }), "{err}");
    assert!(err.to_string().contains("without its CPU"), "{err}");
    // So is one whose time cannot be read (past 2^64 ticks or nanoseconds,
    // or ten fraction digits).
    for time in [
        "99999999999999999999",
        "18446744073.709551616",
        "1.0000000001",
    ] {
        let text = format!(
            "bash-1 [001] {time}: mm_page_alloc: page=0x1 pfn=0x1 order=0 \
             migratetype=0 gfp_flags=GFP_KERNEL\n"
        );
        let err = import_text(&text).unwrap_err();
        assert!(err.to_string().contains("readable time"), "{time}: {err}");
    }
}
