//! The `.pftrace` format: the shipped trace parses, the format round-trips,
//! and bad files (truncated, foreign, corrupted) give one-line errors that
//! name the byte offset.

use pageframe_lab::trace::{self, decode, encode, EventKind, Trace, TraceError, TraceEvent};
use proptest::prelude::*;

fn shipped() -> (Vec<u8>, Trace) {
    let bytes = std::fs::read(trace::shipped_trace_path()).expect("the shipped trace exists");
    let trace = decode(&bytes).expect("the shipped trace decodes");
    (bytes, trace)
}

#[test]
fn shipped_trace_parses_with_its_metadata() {
    let (_, trace) = shipped();
    trace.check_invariants().unwrap();
    assert_eq!(trace.events.len(), 419_622);
    let counts = trace.counts();
    assert_eq!(counts[EventKind::Alloc as usize], 157_966);
    assert_eq!(counts[EventKind::Free as usize], 92_494);
    assert_eq!(counts[EventKind::FreeBatched as usize], 84_161);
    assert_eq!(counts[EventKind::ZoneLocked as usize], 85_001);
    assert_eq!(trace.meta("lost_events"), Some("0"));
    assert_eq!(trace.meta("cpus"), Some("2"));
    for name in [
        "zoneinfo",
        "buddyinfo",
        "pagetypeinfo",
        "vmstat",
        "min_free_kbytes",
    ] {
        assert!(
            trace.meta(&format!("host.start.{name}")).is_some(),
            "{name}"
        );
        assert!(trace.meta(&format!("host.end.{name}")).is_some(), "{name}");
    }
    assert!(trace.meta("workload").unwrap().contains("tar"));
    // Plausible fields: CPUs of a 2-CPU host, orders within MAX_PAGE_ORDER,
    // the three pcp migratetypes on allocations.
    assert!(trace.events.iter().all(|event| event.cpu < 2));
    assert!(trace.events.iter().all(|event| event.order <= 10));
    assert!(trace
        .events
        .iter()
        .filter(|event| event.kind == EventKind::Alloc)
        .all(|event| (0..=2).contains(&event.migratetype)));
    assert!(trace.events.first().unwrap().timestamp == 0);
}

#[test]
fn shipped_trace_round_trips_byte_for_byte() {
    let (bytes, trace) = shipped();
    assert_eq!(encode(&trace).unwrap(), bytes);
}

#[test]
fn truncated_files_name_the_offset() {
    let (bytes, _) = shipped();
    for cut in [
        0,
        5,
        12,
        17,
        30,
        2_000,
        bytes.len() / 2,
        bytes.len() - 9,
        bytes.len() - 1,
    ] {
        let err = decode(&bytes[..cut]).expect_err("a truncated file is refused");
        let message = err.to_string();
        assert!(
            matches!(err, TraceError::Truncated { .. }),
            "{cut}: {message}"
        );
        assert!(message.contains("byte offset"), "{message}");
        assert!(!message.contains('\n'), "one line: {message}");
    }
    // The payload cut short: the error is at the payload length's offset + 8.
    let err = decode(&bytes[..bytes.len() - 100]).unwrap_err();
    match err {
        TraceError::Truncated { offset, what } => {
            assert_eq!(what, "event payload");
            assert!(offset > 16 && (offset as usize) < bytes.len());
        }
        other => panic!("{other}"),
    }
}

#[test]
fn foreign_files_are_refused_at_offset_zero() {
    for foreign in [
        &b"\x89PNG\r\n\x1a\n0000000000000000"[..],
        b"# tracer: nop\n#\n",
        b"PGFTRACX00000000",
    ] {
        let err = decode(foreign).unwrap_err();
        assert!(
            matches!(err, TraceError::Foreign { offset: 0, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("byte offset 0"), "{err}");
    }
}

#[test]
fn corruption_is_caught_by_version_checksum_and_trailing_checks() {
    let (bytes, _) = shipped();
    let mut version = bytes.clone();
    version[8] = 9;
    assert!(decode(&version)
        .unwrap_err()
        .to_string()
        .contains("byte offset 8"));
    let mut flipped = bytes.clone();
    let middle = bytes.len() / 2;
    flipped[middle] ^= 0x40;
    let err = decode(&flipped).unwrap_err();
    assert!(err.to_string().contains("checksum"), "{err}");
    let mut longer = bytes.clone();
    longer.push(0);
    let err = decode(&longer).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("byte offset {}", bytes.len())),
        "{err}"
    );
}

#[test]
fn out_of_order_events_are_not_written() {
    let mut trace = Trace::default();
    trace
        .events
        .push(TraceEvent::new(EventKind::Free, 10, 0, 1));
    trace.events.push(TraceEvent::new(EventKind::Free, 5, 0, 2));
    assert!(matches!(encode(&trace), Err(TraceError::Invariant(_))));
}

fn arb_event() -> impl Strategy<Value = TraceEvent> {
    (
        0usize..EventKind::ALL.len(),
        0u64..5_000,
        0u16..300,
        any::<u64>(),
        0u8..=20,
        -1i8..5,
        any::<u32>(),
        0u8..=10,
        -1i8..5,
        any::<bool>(),
    )
        .prop_map(
            |(kind, gap, cpu, pfn, order, mt, gfp, fallback_order, fallback_mt, flag)| {
                let kind = EventKind::ALL[kind];
                if kind == EventKind::VmstatWork {
                    // A worker run carries no block: nothing but its time and CPU.
                    return TraceEvent::new(kind, gap, cpu, 0);
                }
                let mut event = TraceEvent::new(kind, gap, cpu, pfn);
                event.order = order;
                event.flag = flag && matches!(kind, EventKind::ZoneLocked | EventKind::Extfrag);
                if matches!(
                    kind,
                    EventKind::Alloc
                        | EventKind::ZoneLocked
                        | EventKind::PcpuDrain
                        | EventKind::Extfrag
                ) {
                    event.migratetype = mt;
                }
                if kind == EventKind::Alloc {
                    event.gfp = gfp;
                }
                if kind == EventKind::Extfrag {
                    event.fallback_order = fallback_order;
                    event.fallback_migratetype = fallback_mt;
                }
                event
            },
        )
}

proptest! {
    #[test]
    fn any_trace_round_trips(mut events in proptest::collection::vec(arb_event(), 0..200),
                             meta in proptest::collection::vec(("[a-z.]{1,12}", "\\PC{0,40}"), 0..5)) {
        let mut time = 0;
        for event in &mut events {
            time += event.timestamp;
            event.timestamp = time;
        }
        let trace = Trace { meta, events };
        let bytes = encode(&trace).unwrap();
        prop_assert_eq!(decode(&bytes).unwrap(), trace);
        // Every strict prefix is refused, never accepted or panicking.
        for cut in (0..bytes.len()).step_by(7) {
            prop_assert!(decode(&bytes[..cut]).is_err());
        }
    }
}

/// A trace without the vmstat worker's runs is written as version 1, which
/// builds before the runs read; one with runs as version 2. A version-1
/// file holding a run, or a run carrying a block's fields, is refused.
#[test]
fn worker_runs_need_version_2_and_carry_no_block() {
    let mut trace = Trace::default();
    let mut alloc = TraceEvent::new(EventKind::Alloc, 5, 1, 0x1234);
    alloc.gfp = 0xcc0;
    trace.events.push(alloc);
    let v1 = encode(&trace).unwrap();
    assert_eq!(v1[8..12], 1u32.to_le_bytes());
    trace
        .events
        .push(TraceEvent::new(EventKind::VmstatWork, 9, 1, 0));
    trace
        .events
        .push(TraceEvent::new(EventKind::Free, 11, 1, 0x1234));
    let v2 = encode(&trace).unwrap();
    assert_eq!(v2[8..12], 2u32.to_le_bytes());
    assert_eq!(decode(&v2).unwrap(), trace);
    let mut as_v1 = v2.clone();
    as_v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    let err = decode(&as_v1).unwrap_err().to_string();
    assert!(
        err.contains("unknown event kind 6 in a version 1 file"),
        "{err}"
    );
    let mut with_block = trace.clone();
    with_block.events[1].pfn = 7;
    assert!(encode(&with_block).is_err());
}
