//! Recording from tracefs: the ring-buffer decoder on hand-made
//! sub-buffers, and a live recording that skips (saying why) when not root
//! or without tracefs.

use pageframe_lab::trace::record::{
    record, unavailable_reason, RecordOptions, RecordTarget, TRACEFS,
};
use pageframe_lab::trace::tracefs::{EventFormat, RecordDecoder};
use pageframe_lab::trace::{self, EventKind};
use std::time::Duration;

const ALLOC_FORMAT: &str = "name: mm_page_alloc\nID: 653\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:unsigned long pfn;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:unsigned int order;\toffset:16;\tsize:4;\tsigned:0;\n\
\tfield:unsigned long gfp_flags;\toffset:24;\tsize:8;\tsigned:0;\n\
\tfield:int migratetype;\toffset:32;\tsize:4;\tsigned:1;\n\nprint fmt: \"...\"\n";

fn alloc_record(pfn: u64, order: u32, gfp: u64, migratetype: i32) -> Vec<u8> {
    let mut record = vec![0u8; 40];
    record[0..2].copy_from_slice(&653u16.to_le_bytes());
    record[8..16].copy_from_slice(&pfn.to_le_bytes());
    record[16..20].copy_from_slice(&order.to_le_bytes());
    record[24..32].copy_from_slice(&gfp.to_le_bytes());
    record[32..36].copy_from_slice(&migratetype.to_le_bytes());
    record
}

fn header(type_len: u32, delta: u32) -> [u8; 4] {
    (type_len | delta << 5).to_le_bytes()
}

#[test]
fn subbuffers_decode_with_time_extends_padding_and_missed_events() {
    let format = EventFormat::parse(EventKind::Alloc, ALLOC_FORMAT).unwrap();
    assert_eq!(format.id, 653);
    let decoder = RecordDecoder::new(&[format]).unwrap();
    let mut data = Vec::new();
    data.extend_from_slice(&header(10, 5)); // 40-byte event, +5 ns
    data.extend(alloc_record(0x1000, 2, 0xcc0, 0));
    data.extend_from_slice(&header(30, 3)); // time extend: +(1 << 27) + 3
    data.extend_from_slice(&1u32.to_le_bytes());
    // Padding: array[0] counts itself and what follows (rb_event_length()).
    data.extend_from_slice(&header(29, 1));
    data.extend_from_slice(&12u32.to_le_bytes());
    data.extend_from_slice(&[0u8; 8]);
    data.extend_from_slice(&header(0, 7)); // long form: length in array[0]
    data.extend_from_slice(&44u32.to_le_bytes());
    data.extend(alloc_record(0x2000, 0, 0x100cca, 1));
    let mut page = vec![0u8; 4096];
    page[0..8].copy_from_slice(&1_000u64.to_le_bytes());
    let commit = data.len() as u64 | 1 << 31 | 1 << 30;
    page[8..16].copy_from_slice(&commit.to_le_bytes());
    page[16..16 + data.len()].copy_from_slice(&data);
    page[16 + data.len()..24 + data.len()].copy_from_slice(&3u64.to_le_bytes());
    let mut events = Vec::new();
    let missed = decoder.decode_subbuffer(&page, 1, &mut events).unwrap();
    assert_eq!(missed, 3);
    assert_eq!(events.len(), 2);
    assert_eq!(
        (events[0].pfn, events[0].order, events[0].gfp, events[0].cpu),
        (0x1000, 2, 0xcc0, 1)
    );
    assert_eq!(events[0].timestamp, 1_005);
    assert_eq!(
        (events[1].pfn, events[1].migratetype, events[1].gfp),
        (0x2000, 1, 0x100cca)
    );
    assert_eq!(events[1].timestamp, 1_005 + (1 << 27) + 3 + 7);
    // A commit beyond the page is an error, not a panic.
    page[8..16].copy_from_slice(&5000u64.to_le_bytes());
    assert!(decoder.decode_subbuffer(&page, 1, &mut events).is_err());
    assert!(decoder
        .decode_subbuffer(&page[..10], 1, &mut events)
        .is_err());
}

fn our_instances() -> Vec<String> {
    let prefix = format!("pageframe-{}-", std::process::id());
    std::fs::read_dir(format!("{TRACEFS}/instances"))
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().to_string())
                .filter(|name| name.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn live_recording_of_a_command_and_of_the_machine() {
    if let Some(reason) = unavailable_reason() {
        println!("skipped: {reason}");
        return;
    }
    let command = vec![
        "sh".to_string(),
        "-c".to_string(),
        "d=$(mktemp -d) && dd if=/dev/urandom of=$d/f bs=1M count=16 status=none && sort $d/f > /dev/null; rm -rf $d".to_string(),
    ];
    let trace = record(&RecordOptions::new(RecordTarget::Command(command))).unwrap();
    trace.check_invariants().unwrap();
    assert!(our_instances().is_empty(), "the instance is removed");
    let counts = trace.counts();
    assert!(
        counts[EventKind::Alloc as usize] > 1_000,
        "{}",
        trace::summary(&trace)
    );
    assert_eq!(
        trace.meta("lost_events"),
        Some("0"),
        "{}",
        trace::summary(&trace)
    );
    assert_eq!(trace.meta("command_status"), Some("exit status: 0"));
    // The vmstat worker's runs are recorded wherever the kernel has the
    // workqueue event and can filter it to vmstat_update (by name since
    // 6.x's `.function` modifier, else by its kallsyms address).
    if std::path::Path::new("/sys/kernel/tracing/events/workqueue/workqueue_execute_start").exists()
    {
        assert_eq!(trace.meta("vmstat_worker"), Some("traced"));
        assert!(trace.records_vmstat_worker());
    } else {
        println!("no workqueue event here: {:?}", trace.meta("vmstat_worker"));
    }
    assert!(trace.meta("host.end.buddyinfo").unwrap().contains("Normal"));
    let bytes = trace::encode(&trace).unwrap();
    assert_eq!(trace::decode(&bytes).unwrap(), trace);

    let mut options = RecordOptions::new(RecordTarget::Duration(Duration::from_millis(300)));
    options.max_events = Some(10);
    let machine = record(&options).unwrap();
    assert!(machine.events.len() <= 10);
    assert_eq!(machine.meta("event_cap"), Some("10"));
    assert!(our_instances().is_empty());
    let failing = record(&RecordOptions::new(RecordTarget::Command(vec![
        "/nonexistent/program".to_string(),
    ])));
    assert!(failing.is_err());
    assert!(our_instances().is_empty(), "removed on error too");
}
