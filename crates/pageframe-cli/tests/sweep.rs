//! `pageframe sweep`: a tiny real sweep (every point's rows equal a plain
//! `run` of the same seed and parameters), a re-run that skips the points
//! done, and bad specs as one-line errors with exit status 2.

mod common;

use common::{pageframe, temp_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};

const SPEC: &str = r#"
experiment = "numa-balancing"
seeds = [1, 2]
[params]
duration_s = 4
eater_exit_s = 2
map_mib = 8
eater_mib = 16
pattern = ["uniform", "zipf"]
"#;

fn point_files(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("points"))
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
            (path, modified)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_sweep_runs_every_point_like_run_and_resumes() {
    let dir = temp_dir("sweep-resume");
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, SPEC).unwrap();
    let out = dir.join("results");
    let args = [
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--jobs",
        "2",
    ];
    let first = pageframe(&args);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let stdout = String::from_utf8(first.stdout).unwrap();
    assert!(
        stdout.starts_with("4 points: 4 ok, 0 failed; 4 run now"),
        "{stdout}"
    );
    let files = point_files(&out);
    assert_eq!(files.len(), 4);

    // Point (zipf, seed 2) holds the report a plain run prints.
    let config = dir.join("params.toml");
    std::fs::write(
        &config,
        "[numa-balancing]\nduration_s = 4\neater_exit_s = 2\nmap_mib = 8\neater_mib = 16\npattern = \"zipf\"\n",
    )
    .unwrap();
    let run = pageframe(&[
        "run",
        "numa-balancing",
        "--seed",
        "2",
        "--format",
        "json",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert!(run.status.success());
    let expected: Value = serde_json::from_slice(&run.stdout).unwrap();
    let records: Vec<Value> = files
        .iter()
        .map(|(path, _)| serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
        .collect();
    let record = records
        .iter()
        .find(|record| record["key"] == "pattern=zipf;seed=2")
        .expect("the point's record");
    assert_eq!(record["status"], "ok");
    assert_eq!(record["report"], expected);

    // The table: one line per result row, led by the point's columns.
    let table = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(
        table.starts_with("seed,pattern,status,error,seconds,policy,"),
        "{table}"
    );
    let results = expected["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| !row["series"].is_string())
        .count();
    assert_eq!(table.lines().count(), 1 + 4 * results);
    assert!(std::fs::read_to_string(out.join("index.html"))
        .unwrap()
        .contains("by pattern"));

    let second = pageframe(&args);
    assert!(second.status.success());
    let stdout = String::from_utf8(second.stdout).unwrap();
    assert!(
        stdout.starts_with("4 points: 4 ok, 0 failed; 0 run now"),
        "{stdout}"
    );
    assert_eq!(point_files(&out), files, "done points ran again");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_specs_are_one_line_errors_with_status_2() {
    let dir = temp_dir("sweep-bad");
    let cases = [
        ("experiment = \"nope\"", "unknown experiment 'nope'"),
        (
            "experiment = \"numa-balancing\"\n[params]\npattern = [\"spiral\"]",
            "numa-balancing.pattern",
        ),
        (
            "experiment = \"numa-balancing\"\nseeds = \"many\"",
            "'seeds' must be",
        ),
    ];
    for (text, expected) in cases {
        let spec = dir.join("spec.toml");
        std::fs::write(&spec, text).unwrap();
        let output = pageframe(&[
            "sweep",
            spec.to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ]);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("pageframe: ") && stderr.contains(expected),
            "{stderr}"
        );
        assert!(
            !dir.join("out").exists(),
            "a bad spec created the results directory"
        );
    }
    let missing = pageframe(&["sweep", dir.join("missing.toml").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    // A thread per job: a number of jobs no machine runs is refused before
    // anything starts.
    let spec = dir.join("spec.toml");
    std::fs::write(&spec, "experiment = \"numa-balancing\"").unwrap();
    let out = dir.join("out");
    let many = pageframe(&[
        "sweep",
        spec.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--jobs",
        "1000000",
    ]);
    let stderr = String::from_utf8(many.stderr).unwrap();
    assert_eq!(many.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--jobs: at most 1024"), "{stderr}");
    assert!(!out.exists(), "refused jobs created the results directory");
    let _ = std::fs::remove_dir_all(&dir);
}
