//! `pageframe conform` and `pageframe trace`, and the `trace-replay`
//! experiment, through the real binary: JSON that parses, skips instead of
//! failures without root, determinism, and one-line errors with exit 2.

mod common;

use common::{error_of, pageframe, running_as_root, temp_path};
use serde_json::Value;
use std::process::Output;

fn shipped_trace() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../traces/kernel-untar-build.pftrace"
    )
    .to_string()
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).expect("stdout is one JSON object")
}

/// Every suite, as `.ci/run` runs them: as root each one runs and finds
/// no DIFF the suites do not list (mempolicy none at all); otherwise each
/// is skipped with its reason, which is not a failure.
#[test]
fn conform_all_suites_json_show_no_unlisted_diff_as_root_or_a_skip() {
    let output = pageframe(&["conform", "--format", "json"]);
    let value = json_of(&output);
    let suites = value["suites"].as_array().expect("a suites array");
    let names: Vec<&str> = suites
        .iter()
        .filter_map(|suite| suite["suite"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "mempolicy",
            "zoneinfo",
            "slab",
            "zsmalloc",
            "buddy",
            "sysctl",
            "pagecache"
        ]
    );
    for suite in suites {
        match suite["status"].as_str() {
            Some("ran") => {
                assert!(
                    suite["cases"].as_u64().is_some_and(|cases| cases > 0),
                    "{}",
                    suite["suite"]
                );
                assert_eq!(suite["unlisted_diff"], 0, "{}", suite["rows"]);
                if suite["suite"] == "mempolicy" {
                    assert_eq!(suite["diff"], 0, "{}", suite["rows"]);
                }
            }
            Some("skipped") => {
                assert!(
                    !running_as_root() || suite["suite"] == "zsmalloc",
                    "skipped as root: {}",
                    suite["reason"]
                );
                assert!(suite["reason"].as_str().is_some_and(|r| !r.is_empty()));
            }
            other => panic!("unexpected status {other:?}"),
        }
    }
    assert_eq!(value["unlisted_diffs"], 0);
    assert_eq!(output.status.code(), Some(0), "a skip is not a failure");
}

#[test]
fn conform_mempolicy_alone_runs_only_mempolicy() {
    let output = pageframe(&["conform", "mempolicy", "--format", "json"]);
    let value = json_of(&output);
    assert_eq!(value["suites"].as_array().map(Vec::len), Some(1));
    assert_eq!(value["suites"][0]["suite"], "mempolicy");
}

#[test]
fn conform_table_ends_with_the_summary_line() {
    let output = pageframe(&["conform", "mempolicy"]);
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    let last = stdout.lines().last().expect("a summary line");
    assert!(last.starts_with("conform mempolicy: "), "{stdout}");
    assert!(
        last.contains(" cases, ") || last.contains("skipped: "),
        "{last}"
    );
}

#[test]
fn conform_bad_input_is_exit_2_and_help_states_the_exit_status() {
    assert!(error_of(&["conform", "nope"]).contains("unknown conformance suite 'nope'"));
    assert!(error_of(&["conform", "mempolicy,nope"]).contains("'nope'"));
    assert!(error_of(&["conform", "--format", "csv"]).contains("unknown format 'csv'"));
    let help = pageframe(&["conform", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8(help.stdout).expect("UTF-8");
    assert!(
        text.contains("Exit status: 0 when no suite found a DIFF"),
        "{text}"
    );
}

#[test]
fn trace_replay_of_the_shipped_trace_prints_json_rows() {
    let output = pageframe(&["trace", "replay", &shipped_trace(), "--format", "json"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let value = json_of(&output);
    let rows = value["rows"].as_array().expect("rows");
    let allocations = rows
        .iter()
        .find(|row| row["section"] == "replay" && row["key"] == "allocations")
        .expect("an allocations row");
    assert_eq!(allocations["kernel"], allocations["pageframe"]);
    assert!(allocations["kernel"].as_f64().is_some_and(|n| n > 0.0));
}

#[test]
fn trace_replay_writes_the_plot_and_takes_policy_switches() {
    let plot = temp_path("replay.svg");
    let output = pageframe(&[
        "trace",
        "replay",
        &shipped_trace(),
        "--cmdline",
        "page_alloc.shuffle=1",
        "--format",
        "csv",
        "--plot",
        plot.to_str().expect("UTF-8 path"),
    ]);
    assert_eq!(output.status.code(), Some(0));
    let svg = std::fs::read_to_string(&plot).expect("the plot is written");
    std::fs::remove_file(&plot).ok();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
    let csv = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(csv.starts_with("section,key,kernel,pageframe\n"), "{csv}");
}

#[test]
fn a_truncated_trace_is_one_line_naming_the_offset() {
    let bytes = std::fs::read(shipped_trace()).expect("the shipped trace exists");
    let truncated = temp_path("truncated.pftrace");
    std::fs::write(&truncated, &bytes[..100_000]).expect("temp dir is writable");
    let message = error_of(&["trace", "replay", truncated.to_str().expect("UTF-8")]);
    std::fs::remove_file(&truncated).ok();
    assert!(message.contains("truncated trace"), "{message}");
    assert!(message.contains("byte offset "), "{message}");
}

/// Regression: `--out` naming a file was found only when the results were
/// written, after every suite had run and printed its rows.
#[test]
fn conform_out_that_is_not_a_directory_fails_before_any_suite_runs() {
    let file = temp_path("conform-out-file");
    std::fs::write(&file, "a file").unwrap();
    let name = file.to_str().unwrap();
    let err = error_of(&["conform", "zoneinfo", "--out", name]);
    assert!(
        err.contains(&format!("--out {name}: not a directory")),
        "{err}"
    );
    // A directory to be made under a file cannot be made either.
    let under = format!("{name}/site");
    let err = error_of(&["conform", "zoneinfo", "--out", &under]);
    assert!(
        err.contains(&format!("--out {under}: {name} is not a directory")),
        "{err}"
    );
    std::fs::remove_file(file).unwrap();
}

#[test]
fn trace_bad_input_is_exit_2() {
    error_of(&["trace", "replay", &shipped_trace(), "--format", "xml"]);
    error_of(&["trace", "replay", "/nonexistent/trace.pftrace"]);
    error_of(&["trace", "record", "-o", "/nonexistent/out.pftrace"]);
    error_of(&["trace", "record", "-o", "x.pftrace", "--duration", "-1"]);
    let small = error_of(&["trace", "replay", &shipped_trace(), "--cpus", "1"]);
    assert!(small.contains("mismatch"), "{small}");
}

#[test]
fn trace_import_writes_a_pftrace_that_reads_back_the_same() {
    let copy = temp_path("copy.pftrace");
    let copy_name = copy.to_str().expect("UTF-8").to_string();
    let first = pageframe(&["trace", "import", &shipped_trace(), "-o", &copy_name]);
    assert_eq!(first.status.code(), Some(0));
    let second = pageframe(&["trace", "import", &copy_name]);
    std::fs::remove_file(&copy).ok();
    assert_eq!(second.status.code(), Some(0));
    let summary = |output: &Output| {
        let text = String::from_utf8_lossy(&output.stdout).to_string();
        text.split_once(": ")
            .map(|(_, summary)| summary.to_string())
    };
    assert!(summary(&first).is_some_and(|s| s.contains("419622 events")));
    assert_eq!(summary(&first), summary(&second));
}

#[test]
fn run_trace_replay_json_is_deterministic_per_seed() {
    let run = || {
        let output = pageframe(&["run", "trace-replay", "--format", "json", "--seed", "7"]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    };
    let first = run();
    assert_eq!(first, run());
    let value: Value = serde_json::from_slice(&first).expect("one JSON object");
    assert_eq!(value["experiment"], "trace-replay");
    assert_eq!(value["seed"], 7);
    let rows = value["rows"].as_array().expect("rows");
    for policy in ["kernel", "shuffle"] {
        assert!(rows
            .iter()
            .any(|row| row["policy"] == policy && row["key"] == "allocations"));
        assert!(rows
            .iter()
            .any(|row| row["policy"] == policy && row["series"] == "fragmentation"));
    }
}
