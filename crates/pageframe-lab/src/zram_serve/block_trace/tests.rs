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

/// The record stream of `records` and an end record.
fn encode(records: &[TraceRecord]) -> Vec<u8> {
    let mut stream = Vec::new();
    let mut encoder = Encoder::default();
    for record in records {
        encoder.encode(record, &mut stream);
    }
    stream.push(TAG_END);
    stream
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

#[test]
fn records_past_the_largest_device_are_refused_where_they_stand() {
    let write = |page| TraceRecord::Write {
        page,
        sizes: Some([100, 100, 100]),
    };
    let last = MAX_TRACE_PAGES - 1;
    let fits = encode(&[
        write(last),
        TraceRecord::Discard {
            first: 0,
            pages: MAX_TRACE_PAGES,
        },
    ]);
    let records = decode(&fits).unwrap();
    assert_eq!(addressed_pages(&records), MAX_TRACE_PAGES);
    for (records, at) in [
        (vec![write(0), write(MAX_TRACE_PAGES)], 1),
        (vec![write(u64::MAX)], 0),
        (
            vec![TraceRecord::Discard {
                first: last,
                pages: 2,
            }],
            0,
        ),
        (
            vec![TraceRecord::Discard {
                first: u64::MAX,
                pages: u64::MAX,
            }],
            0,
        ),
    ] {
        let stream = encode(&records);
        let (offset, what) = decode(&stream).unwrap_err();
        assert!(what.contains("a trace may address"), "{what}");
        // The offset is the bad record's own.
        let before = encode(&records[..at]);
        assert_eq!(offset, (before.len() - 1) as u64, "{what}");
    }
}

#[test]
fn a_stream_that_decompresses_past_the_limit_is_refused() {
    let path = scratch("bomb");
    let mut stream = vec![TAG_WRITE, 0, FLAG_SAME];
    stream.resize(MAX_RECORD_STREAM as usize + 2, 0);
    let mut file = MAGIC.to_vec();
    file.extend(zstd::encode_all(&stream[..], 19).unwrap());
    std::fs::write(&path, &file).unwrap();
    let err = read_trace(&path).unwrap_err().to_string();
    assert!(err.contains("decompress to more than"), "{err}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_write_size_beyond_the_compression_buffer_is_refused_where_it_stands() {
    // Regression: a record claiming a 4 GiB object made the replay allocate
    // a stand-in of that size (and a table of every size below it), and the
    // run died of a failed allocation instead of an error.
    let write = |size| TraceRecord::Write {
        page: 0,
        sizes: Some([size, 100, 100]),
    };
    let largest = MAX_OBJECT_SIZE;
    assert!(decode(&encode(&[write(largest)])).is_ok());
    for size in [largest + 1, u32::MAX] {
        let records = [write(100), write(size)];
        let (offset, what) = decode(&encode(&records)).unwrap_err();
        assert!(what.contains("size out of range"), "{what}");
        assert_eq!(offset, (encode(&records[..1]).len() - 1) as u64, "{what}");
    }
}

#[test]
fn a_file_larger_than_any_trace_is_refused_before_it_fills_memory() {
    // Regression: `--trace /dev/zero` read zeros until memory ran out.
    let err = read_trace(Path::new("/dev/zero")).unwrap_err();
    assert_eq!(err.offset, MAX_FILE_BYTES, "{err}");
    assert!(err.to_string().contains("larger than"), "{err}");
}

#[test]
fn a_write_with_unknown_flags_is_refused_where_it_stands() {
    // Only bit 0 (same-filled) means anything: a record with another bit
    // set comes from another format or a damaged file, and its sizes
    // cannot be read as this format's.
    let mut stream = Vec::new();
    Encoder::default().encode(
        &TraceRecord::Write {
            page: 0,
            sizes: None,
        },
        &mut stream,
    );
    let first = stream.len() as u64;
    stream.extend_from_slice(&[TAG_WRITE, 0, 0xfe, TAG_END]);
    let (offset, what) = decode(&stream).unwrap_err();
    assert_eq!(offset, first, "{what}");
    assert!(what.contains("unknown write flags 0xfe"), "{what}");
}

#[test]
fn a_stream_of_more_records_than_the_limit_is_refused_where_it_passes_it() {
    // Each record costs tens of bytes in memory against as few as three in
    // the stream: the count, not only the stream's size, is bounded.
    let stream = encode(&vec![TraceRecord::Discard { first: 0, pages: 1 }; 4]);
    assert_eq!(decode_at_most(&stream, 4).unwrap().len(), 4);
    let (offset, what) = decode_at_most(&stream, 3).unwrap_err();
    assert_eq!(offset, 9, "{what}");
    assert!(what.contains("more than 3 records"), "{what}");
}

#[test]
fn a_stream_of_more_step_marks_than_the_limit_is_refused_where_it_passes_it() {
    // A million step marks compress to a few hundred bytes and made a
    // replay of 12 GB (a row per mark and allocator).
    let step = TraceRecord::Step {
        round: 1,
        label: "x".into(),
        real: None,
    };
    let stream = encode(&vec![step.clone(); MAX_TRACE_STEPS]);
    assert_eq!(decode(&stream).unwrap().len(), MAX_TRACE_STEPS);
    let stream = encode(&vec![step; MAX_TRACE_STEPS + 1]);
    let (offset, what) = decode(&stream).unwrap_err();
    assert_eq!(offset, 5 * MAX_TRACE_STEPS as u64, "{what}");
    assert!(what.contains("more than 4096 step marks"), "{what}");
}

/// A recording the rounds check allows stays readable: the shipped trace's
/// records a round, scaled to the allowed rounds, fit both limits. The
/// shipped trace is 3 rounds of linux-source-6.1, whose files hold 362 606
/// data pages (counted with `live::data_pages`).
#[test]
fn the_rounds_a_recording_may_take_keep_its_trace_readable() {
    const DATA_PAGES: u64 = 362_606;
    let shipped = read_trace(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/zram-untar-ext4-quick.pfzt"),
    )
    .unwrap();
    let per_round = shipped.len() as u64 / 3;
    let fit = rounds_that_fit(DATA_PAGES);
    assert!(fit >= 10, "the document's 10 rounds fit: {fit}");
    assert!(fit * per_round <= MAX_TRACE_RECORDS as u64);
    let stream = encode(&shipped).len() as u64;
    assert!(fit * stream.div_ceil(3) <= MAX_RECORD_STREAM, "{stream}");
    assert!(rounds_that_fit(0) > 0);
    assert_eq!(rounds_that_fit(u64::MAX), 0);
}

/// A full writer counts what comes after instead of failing the device's
/// write, and the trace it leaves is readable up to where it filled.
#[test]
fn a_full_writer_ends_a_readable_trace_and_counts_the_rest() {
    let records = records();
    let path = scratch("full-writer.pfzt");
    let mut writer = TraceWriter::create_within(&path, 3, 2, MAX_RECORD_STREAM).unwrap();
    for record in &records {
        writer.record(record).unwrap();
    }
    let not_recorded = writer.finish().unwrap();
    assert_eq!(not_recorded, records.len() as u64 - 2);
    assert_eq!(read_trace(&path).unwrap(), records[..2]);
    let stream_of_two = encode(&records[..2]).len() as u64;
    let mut writer = TraceWriter::create_within(&path, 3, usize::MAX, stream_of_two).unwrap();
    for record in &records {
        writer.record(record).unwrap();
    }
    assert_eq!(writer.finish().unwrap(), records.len() as u64 - 2);
    assert_eq!(read_trace(&path).unwrap(), records[..2]);
    let _ = std::fs::remove_file(path);
}
