//! Replay: the vmstat worker's decay of the per-CPU lists' `high`, at the
//! runs a trace recorded or once a second of its time, and on a machine
//! with fewer CPUs than the trace.

mod common;

use common::{alloc, shipped_prefix, small_machine};
use pageframe_lab::trace::{
    self, EventKind, PcpDecay, ReplayOptions, Trace, TraceClock, TraceEvent,
};

/// Without the worker's runs in the trace, the vmstat decay runs once a
/// second of the trace's time: after a gap of seconds the lists' `high` is
/// lower than without it, and a gap of centuries (a damaged timestamp)
/// costs a few passes, not one a second.
#[test]
fn high_decays_once_a_second_of_the_traces_time() {
    let mut trace = shipped_prefix(4_000);
    assert!(!trace.records_vmstat_worker());
    let half = trace.events.len() / 2;
    for event in &mut trace.events[half..] {
        event.timestamp += 30_000_000_000;
    }
    let (decayed, kept) = (
        replay_decaying(&trace, PcpDecay::Worker),
        replay_decaying(&trace, PcpDecay::Off),
    );
    assert!(
        decayed.pcp_high_end < kept.pcp_high_end,
        "high at the end: {} with the decay, {} without",
        decayed.pcp_high_end,
        kept.pcp_high_end
    );
    // 30 seconds on 2 CPUs, or fewer once no list has further to decay.
    assert!((1..=30 * 2).contains(&decayed.counts.vmstat_passes));
    assert_eq!(
        replay_decaying(&trace, PcpDecay::Timer).pcp_high_end,
        decayed.pcp_high_end
    );
    // A clock of ticks (x86-tsc, counter) gives no seconds: no decay.
    let mut ticks = trace.clone();
    ticks.set_clock(TraceClock::Ticks);
    assert_eq!(
        replay_decaying(&ticks, PcpDecay::Worker).pcp_high_end,
        kept.pcp_high_end
    );
    let last = trace.events.len() - 1;
    trace.events[last].timestamp = u64::MAX - 1;
    let started = std::time::Instant::now();
    replay_decaying(&trace, PcpDecay::Worker);
    assert!(started.elapsed().as_secs() < 30);
}

fn replay_decaying(trace: &Trace, pcp_decay: PcpDecay) -> trace::ReplayOutcome {
    trace::replay(
        trace,
        &ReplayOptions {
            pcp_decay,
            check_invariants: true,
            ..ReplayOptions::default()
        },
    )
    .unwrap()
}

/// A trace that recorded the vmstat worker decays a CPU's lists at each
/// of its runs there, on any clock, and at no other time.
#[test]
fn high_decays_at_the_workers_traced_runs() {
    let base = shipped_prefix(4_000);
    let busiest = (0..2u16)
        .max_by_key(|&cpu| base.events.iter().filter(|e| e.cpu == cpu).count())
        .unwrap();
    let with_runs = |cpu: u16, clock: TraceClock| {
        let mut trace = base.clone();
        trace.set_meta("vmstat_worker", "traced");
        trace.set_clock(clock);
        let at = trace.events.len() * 3 / 4;
        let time = trace.events[at].timestamp;
        for pass in 0..3 {
            trace.events.insert(
                at + pass,
                TraceEvent::new(EventKind::VmstatWork, time, cpu, 0),
            );
        }
        trace
    };
    let mut none = base.clone();
    none.set_meta("vmstat_worker", "traced");
    let kept = replay_decaying(&none, PcpDecay::Worker);
    assert_eq!(kept.counts.vmstat_passes, 0);
    assert_eq!(
        kept.pcp_high_end,
        replay_decaying(&base, PcpDecay::Off).pcp_high_end
    );
    for clock in [TraceClock::Nanoseconds, TraceClock::Ticks] {
        let here = replay_decaying(&with_runs(busiest, clock), PcpDecay::Worker);
        assert_eq!(here.counts.trace_vmstat_runs, 3);
        assert_eq!(here.counts.vmstat_passes, 3);
        assert!(
            here.pcp_high_end < kept.pcp_high_end,
            "{clock:?}: high at the end {} after three runs, {} without",
            here.pcp_high_end,
            kept.pcp_high_end
        );
        // Asked for the clock, the replay ignores the runs (and the
        // prefix is under a second: no pass).
        let timer = replay_decaying(&with_runs(busiest, clock), PcpDecay::Timer);
        assert_eq!(timer.pcp_high_end, kept.pcp_high_end);
        assert_eq!(timer.counts.vmstat_passes, 0);
    }
    // The runs decay the lists of the CPU they ran on, not every CPU's.
    let here = replay_decaying(
        &with_runs(busiest, TraceClock::Nanoseconds),
        PcpDecay::Worker,
    );
    let other = replay_decaying(
        &with_runs(1 - busiest, TraceClock::Nanoseconds),
        PcpDecay::Worker,
    );
    assert_ne!(here.pcp_high_end, other.pcp_high_end);
}

/// On a real trace with the worker's runs (`traces/vmstat-worker-64m.pftrace`,
/// see `traces/README.md`) the kernel drained pages only because CPU 0's
/// worker had lowered `high` while its list was nearly empty: the replay
/// at the traced runs drains what the kernel drained; by the clock (the
/// trace is under a second) it drains nothing and lists more at the end.
#[test]
fn the_workers_traced_runs_give_the_kernels_drains() {
    let path = trace::shipped_trace_path().with_file_name("vmstat-worker-64m.pftrace");
    let trace = trace::read_file(&path).unwrap();
    assert!(trace.records_vmstat_worker());
    let kernel: u64 = trace
        .events
        .iter()
        .filter(|event| event.kind == EventKind::PcpuDrain)
        .map(|event| 1u64 << event.order)
        .sum();
    assert!(kernel > 1_000, "the kernel drained {kernel} pages");
    let runs = replay_decaying(&trace, PcpDecay::Worker);
    let clock = replay_decaying(&trace, PcpDecay::Timer);
    assert!(runs.counts.vmstat_passes > 0);
    assert_eq!(clock.counts.vmstat_passes, 0);
    assert!(
        runs.pcp_drain_pages.abs_diff(kernel) * 10 <= kernel,
        "at the runs: {} drained against the kernel's {kernel}",
        runs.pcp_drain_pages
    );
    assert!(
        clock.pcp_drain_pages.abs_diff(kernel) * 2 > kernel,
        "by the clock: {} drained against the kernel's {kernel}",
        clock.pcp_drain_pages
    );
    assert!(runs.pcp_pages_end < clock.pcp_pages_end);
}

/// A machine with fewer CPUs than the trace (`--fit`) takes each CPU's
/// worker runs from the traced CPU of its number only: four traced CPUs
/// folded onto two are decayed once per run of CPUs 0 and 1, not four
/// times.
#[test]
fn folded_cpus_take_the_worker_runs_of_one_traced_cpu() {
    let mut trace = Trace::default();
    trace.set_meta("vmstat_worker", "traced");
    let mut time = 0;
    for cpu in 0..4u16 {
        for page in 0..64u64 {
            time += 1;
            trace.events.push(alloc(
                time,
                cpu,
                0x10_000 + u64::from(cpu) * 0x1000 + page,
                0,
                pageframe::Gfp::KERNEL.bits(),
            ));
        }
    }
    for cpu in 0..4u16 {
        time += 1;
        trace
            .events
            .push(TraceEvent::new(EventKind::VmstatWork, time, cpu, 0));
    }
    let outcome = trace::replay(
        &trace,
        &ReplayOptions {
            fit: true,
            ..small_machine()
        },
    )
    .unwrap();
    assert_eq!(outcome.counts.trace_vmstat_runs, 4);
    assert_eq!(outcome.counts.vmstat_passes, 2);
}
