//! Helpers shared by the lab's tests: the shipped trace's prefix, events
//! built by hand, a small machine to replay on, and the environment knobs
//! of the random conformance tests.
//!
//! Every test binary compiles this module and uses a different subset of it.
#![allow(dead_code)]

use pageframe::MachineDesc;
use pageframe_lab::trace::{self, EventKind, ReplayOptions, Trace, TraceEvent};

/// The first `count` events of the shipped trace, with its metadata.
pub fn shipped_prefix(count: usize) -> Trace {
    let mut trace = trace::read_file(&trace::shipped_trace_path()).unwrap();
    trace.events.truncate(count);
    trace
}

pub fn alloc(time: u64, cpu: u16, pfn: u64, order: u8, gfp: u32) -> TraceEvent {
    let mut event = TraceEvent::new(EventKind::Alloc, time, cpu, pfn);
    event.order = order;
    event.gfp = gfp;
    event
}

pub fn free(time: u64, cpu: u16, pfn: u64, order: u8) -> TraceEvent {
    let mut event = TraceEvent::new(EventKind::Free, time, cpu, pfn);
    event.order = order;
    event
}

pub fn small_machine() -> ReplayOptions {
    ReplayOptions {
        machine: Some(MachineDesc::uniform(256 << 20, 1, 2).unwrap()),
        samples: 4,
        check_invariants: true,
        ..ReplayOptions::default()
    }
}

/// A number from the environment variable `name`, or `default`.
pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Each DIFF row of a suite's result as `case`, then the kernel's and
/// pageframe's results on their own lines.
pub fn diff_rows(result: &pageframe_lab::conform::SuiteResult) -> Vec<String> {
    result
        .diffs()
        .map(|row| {
            format!(
                "{}\n  kernel:    {}\n  pageframe: {}",
                row.case, row.kernel, row.pageframe
            )
        })
        .collect()
}
