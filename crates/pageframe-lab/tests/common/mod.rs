//! Helpers shared by the replay tests: the shipped trace's prefix, events
//! built by hand, and a small machine to replay on.
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
