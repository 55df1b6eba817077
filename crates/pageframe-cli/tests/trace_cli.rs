//! `pageframe trace` as a user runs it: a live recording of a command and of
//! the whole machine replayed from the file it wrote (as root; skipped,
//! saying why, otherwise), and bad input (a truncated or foreign file, a
//! host bigger than the replay machine) as one-line errors with exit
//! status 2.

use pageframe_lab::trace::{self, record::unavailable_reason};
mod common;

use common::{error_of, stdout_of, temp_path};

/// The `pageframe` value of the replay row `key` in JSON output.
fn replayed(json: &str, key: &str) -> f64 {
    let report: serde_json::Value = serde_json::from_str(json).expect("JSON output");
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|row| row["key"] == key)
        .and_then(|row| row["pageframe"].as_f64())
        .unwrap_or_else(|| panic!("no row {key}"))
}

#[test]
fn live_recordings_replay_from_the_cli() {
    if let Some(reason) = unavailable_reason() {
        println!("skipped: {reason}");
        return;
    }
    // Two CPUs busy at once: each sorts 16 MiB of random lines.
    let workload = "for i in 1 2; do (d=$(mktemp -d) && dd if=/dev/urandom of=$d/f bs=1M count=16 status=none && sort $d/f > /dev/null; rm -rf $d) & done; wait";
    let file = temp_path("command.pftrace");
    let path = file.to_str().unwrap();
    let summary = stdout_of(&["trace", "record", "-o", path, "--", "sh", "-c", workload]);
    assert!(summary.contains("lost events: 0"), "{summary}");
    let recorded = trace::read_file(&file).unwrap();
    assert_eq!(recorded.meta("command_status"), Some("exit status: 0"));
    let allocations = recorded.counts()[0];
    assert!(allocations > 1_000, "{summary}");
    let json = stdout_of(&["trace", "replay", path, "--format", "json"]);
    assert_eq!(replayed(&json, "allocations"), allocations as f64);
    assert_eq!(replayed(&json, "failed allocations"), 0.0);
    // The host's free lists at the start, copied from its pagetypeinfo.
    let placed = "free blocks placed as the host's at the start";
    assert!(replayed(&json, placed) > 0.0, "{json}");
    let fresh = stdout_of(&[
        "trace",
        "replay",
        path,
        "--format",
        "json",
        "--fresh-free-lists",
    ]);
    assert_eq!(replayed(&fresh, placed), 0.0);
    assert_eq!(replayed(&fresh, "allocations"), allocations as f64);

    let machine = temp_path("duration.pftrace");
    let path = machine.to_str().unwrap();
    let summary = stdout_of(&["trace", "record", "-o", path, "--duration", "0.5"]);
    assert!(summary.contains("lost events: 0"), "{summary}");
    let recorded = trace::read_file(&machine).unwrap();
    let json = stdout_of(&["trace", "replay", path, "--format", "json"]);
    assert_eq!(replayed(&json, "allocations"), recorded.counts()[0] as f64);
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&machine);
    assert!(error_of(&["trace", "record", "-o", path]).contains("needs a command"));
}

#[test]
fn bad_trace_files_are_one_line_errors_naming_the_offset() {
    let bytes = std::fs::read(trace::shipped_trace_path()).unwrap();
    let truncated = temp_path("truncated.pftrace");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    for command in ["import", "replay"] {
        let message = error_of(&["trace", command, truncated.to_str().unwrap()]);
        assert!(message.contains("truncated trace"), "{message}");
        assert!(message.contains("at byte offset"), "{message}");
    }
    let foreign = temp_path("foreign.bin");
    std::fs::write(&foreign, b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0").unwrap();
    let message = error_of(&["trace", "replay", foreign.to_str().unwrap()]);
    assert!(message.contains("not a pageframe trace"), "{message}");
    assert!(message.contains("byte offset 0"), "{message}");
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    let corrupt = temp_path("corrupt.pftrace");
    std::fs::write(&corrupt, &flipped).unwrap();
    let message = error_of(&["trace", "replay", corrupt.to_str().unwrap()]);
    assert!(message.contains("byte offset"), "{message}");
    for file in [truncated, foreign, corrupt] {
        let _ = std::fs::remove_file(file);
    }
}

#[test]
fn endless_or_oversized_trace_input_is_refused_without_reading_it_whole() {
    // /dev/zero: binary and not ours, refused from its first bytes.
    for command in ["import", "replay"] {
        let message = error_of(&["trace", command, "/dev/zero"]);
        assert!(message.contains("not a pageframe trace"), "{message}");
    }
    // A text file with no line breaks.
    let endless_line = temp_path("endless-line.txt");
    std::fs::write(&endless_line, "x".repeat(100 << 10)).unwrap();
    let message = error_of(&["trace", "import", endless_line.to_str().unwrap()]);
    assert!(message.contains("line 1: longer than 64 KiB"), "{message}");
    // A .pftrace header claiming more events than a trace may hold.
    let mut bytes = std::fs::read(trace::shipped_trace_path()).unwrap();
    let meta_end = {
        let decoded = trace::decode(&bytes).unwrap();
        let encoded_meta: usize = decoded
            .meta
            .iter()
            .map(|(key, value)| 8 + key.len() + value.len())
            .sum();
        20 + encoded_meta
    };
    let claimed = (trace::MAX_TRACE_EVENTS as u64 + 1).to_le_bytes();
    bytes[meta_end..meta_end + 8].copy_from_slice(&claimed);
    let huge = temp_path("huge-count.pftrace");
    std::fs::write(&huge, &bytes).unwrap();
    let message = error_of(&["trace", "replay", huge.to_str().unwrap()]);
    assert!(message.contains("over the limit of 33554432"), "{message}");
    let shipped = trace::shipped_trace_path();
    let message = error_of(&[
        "trace",
        "replay",
        shipped.to_str().unwrap(),
        "--free-high",
        "7",
    ]);
    assert!(message.contains("--free-high 7: 6.12 or 6.16"), "{message}");
    // An output that cannot be written is refused before recording.
    let dir = std::env::temp_dir();
    let message = error_of(&["trace", "record", "-o", dir.to_str().unwrap(), "--", "true"]);
    assert!(message.contains("is a directory"), "{message}");
    let message = error_of(&["trace", "import", "/dev/null", "-o", "/no-such-dir/t"]);
    assert!(
        message.contains("/no-such-dir is not a directory"),
        "{message}"
    );
    for file in [endless_line, huge] {
        let _ = std::fs::remove_file(file);
    }
}

#[test]
fn a_host_bigger_than_the_machine_is_a_mismatch_unless_fitted() {
    let mut prefix = trace::read_file(&trace::shipped_trace_path()).unwrap();
    prefix.events.truncate(20_000);
    let file = temp_path("prefix.pftrace");
    trace::write_file(&file, &prefix).unwrap();
    let path = file.to_str().unwrap();
    let message = error_of(&["trace", "replay", path, "--mem", "1G"]);
    assert!(message.contains("mismatch"), "{message}");
    assert!(message.contains("MiB"), "{message}");
    let message = error_of(&["trace", "replay", path, "--cpus", "1"]);
    assert!(message.contains("mismatch"), "{message}");
    assert!(message.contains("CPUs"), "{message}");
    let json = stdout_of(&[
        "trace", "replay", path, "--mem", "1G", "--cpus", "1", "--fit", "--format", "json",
    ]);
    assert_eq!(
        replayed(&json, "allocations") + replayed(&json, "failed allocations"),
        prefix.counts()[0] as f64
    );
    let message = error_of(&["trace", "replay", path, "--fallback-order", "random"]);
    assert!(message.contains("kernel, reversed"), "{message}");
    let message = error_of(&["trace", "replay", path, "--pcp-high-fraction", "3"]);
    assert!(message.contains("at least 8"), "{message}");
    let switched = stdout_of(&[
        "trace",
        "replay",
        path,
        "--fallback-order",
        "reversed",
        "--pcp-high-fraction",
        "8",
        "--pcp-batch",
        "31",
        "--format",
        "json",
    ]);
    let kernel = stdout_of(&["trace", "replay", path, "--format", "json"]);
    assert_eq!(
        replayed(&switched, "allocations"),
        replayed(&kernel, "allocations")
    );
    assert_ne!(
        replayed(&switched, "refills (rmqueue_bulk calls)"),
        replayed(&kernel, "refills (rmqueue_bulk calls)"),
        "pcp sizing changes the refills"
    );
    let _ = std::fs::remove_file(&file);
}

/// Regression: `trace replay --config` ignored the machine file's
/// `[[hotplug]]` steps, which `proc` and `info` apply: a step on a node
/// that does not exist replayed without a word, and the 8 GiB that
/// examples/machines/hotplug.toml adds did not count, so the machine was
/// too small for the traced host. The replay now runs on the machine the
/// steps leave.
#[test]
fn the_replay_runs_on_the_machine_the_hotplug_steps_leave() {
    let mut prefix = trace::read_file(&trace::shipped_trace_path()).unwrap();
    prefix.events.truncate(20_000);
    let file = temp_path("hotplug-prefix.pftrace");
    trace::write_file(&file, &prefix).unwrap();
    let path = file.to_str().unwrap();
    let machine = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/machines/hotplug.toml"
    );
    let json = stdout_of(&[
        "trace", "replay", path, "--config", machine, "--format", "json",
    ]);
    assert!(replayed(&json, "allocations") > 0.0, "{json}");
    let bad = common::temp_file(
        "hotplug-node5.toml",
        "[[node]]\nmem = \"16G\"\ncpus = 4\n\n[[hotplug]]\naction = \"online\"\nstart = \"16G\"\nsize = \"128M\"\nnode = 5\n",
    );
    let message = error_of(&["trace", "replay", path, "--config", bad.to_str().unwrap()]);
    assert!(
        message.contains("config hotplug[0]: EINVAL: node 5 does not exist"),
        "{message}"
    );
    let _ = std::fs::remove_file(&file);
}
