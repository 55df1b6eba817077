//! Round trip of the block trace and its errors.

use super::*;

fn records() -> Vec<TraceRecord> {
    let text: Vec<u8> = b"block trace ".iter().copied().cycle().take(4096).collect();
    vec![
        TraceRecord::Step {
            round: 1,
            label: "mkfs".into(),
            real: None,
        },
        TraceRecord::write_of(7, &text).unwrap(),
        TraceRecord::write_of(8, &[0u8; 4096]).unwrap(),
        TraceRecord::write_of(3, &text).unwrap(),
        TraceRecord::Discard { first: 3, pages: 6 },
        TraceRecord::Step {
            round: 1,
            label: "untar".into(),
            real: Some(RealStat {
                orig: 1 << 30,
                compr: 300 << 20,
                used: 310 << 20,
            }),
        },
    ]
}

fn write(path: &Path, records: &[TraceRecord]) {
    let mut writer = TraceWriter::create(path, 3).unwrap();
    for record in records {
        writer.record(record).unwrap();
    }
    writer.finish().unwrap();
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "pageframe-block-trace-{name}-{}",
        std::process::id()
    ))
}

#[test]
fn records_round_trip() {
    let path = scratch("round-trip");
    let records = records();
    assert!(matches!(records[2], TraceRecord::Write { sizes: None, .. }));
    match records[1] {
        TraceRecord::Write {
            page: 7,
            sizes: Some(sizes),
        } => assert!(sizes.iter().all(|size| *size > 0 && *size < 4096)),
        ref other => panic!("{other:?}"),
    }
    write(&path, &records);
    assert_eq!(read_trace(&path).unwrap(), records);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn truncated_and_foreign_files_name_the_offset() {
    let path = scratch("bad");
    std::fs::write(&path, b"GIF89a not a trace").unwrap();
    let err = read_trace(&path).unwrap_err().to_string();
    assert!(
        err.contains("no PFZBLKT1 magic) at byte 0 of the file"),
        "{err}"
    );
    // A writer that never finished: no end record.
    let mut writer = TraceWriter::create(&path, 3).unwrap();
    for record in records() {
        writer.record(&record).unwrap();
    }
    writer.stream.do_finish().unwrap();
    drop(writer);
    let err = read_trace(&path).unwrap_err().to_string();
    assert!(
        err.contains("no end record") && err.contains("of the record stream"),
        "{err}"
    );
    // A file cut in the compressed stream.
    write(&path, &records());
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
    let err = read_trace(&path).unwrap_err().to_string();
    assert!(
        err.contains("end early") && err.contains(&format!("byte {}", bytes.len() - 5)),
        "{err}"
    );
    // A record cut short inside the stream.
    let mut stream = Vec::new();
    let mut encoder = Encoder::default();
    for record in records() {
        encoder.encode(&record, &mut stream);
    }
    let (offset, what) = decode(&stream[..stream.len() - 2]).unwrap_err();
    assert_eq!(what, "truncated record");
    assert!(offset > 0 && offset < stream.len() as u64);
    std::fs::remove_file(&path).unwrap();
}
