//! Spec parsing, point records and gathering (no experiment is run here:
//! the records are written by hand; the CLI's tests run a real sweep).

use super::run::{point_path, stored};
use super::*;
use serde_json::json;
use std::num::NonZeroUsize;

const SPEC: &str = r#"
experiment = "numa-balancing"
seeds = [1, 2]
[params]
pattern = ["uniform", "zipf"]
processes = 2
[shapes.small]
cpus_per_node = 1
[shapes.big]
cpus_per_node = 2
"#;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pageframe-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_spec_expands_to_the_cross_product_in_order() {
    let sweep = Sweep::parse("spec.toml", SPEC).unwrap();
    assert_eq!(sweep.experiment.name(), "numa-balancing");
    assert_eq!(sweep.swept, ["pattern"]);
    assert_eq!(sweep.shapes, ["big", "small"]);
    let keys: Vec<&str> = sweep.points.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "shape=big;pattern=uniform;seed=1",
            "shape=big;pattern=uniform;seed=2",
            "shape=big;pattern=zipf;seed=1",
            "shape=big;pattern=zipf;seed=2",
            "shape=small;pattern=uniform;seed=1",
            "shape=small;pattern=uniform;seed=2",
            "shape=small;pattern=zipf;seed=1",
            "shape=small;pattern=zipf;seed=2",
        ]
    );
    let last = &sweep.points[7].params;
    assert_eq!(last.int("cpus_per_node"), 1);
    assert_eq!(last.int("processes"), 2);
    assert_eq!(last.choice("pattern"), "zipf");
    assert_eq!(sweep.points[0].params.choice("pattern"), "uniform");
}

#[test]
fn seed_counts_and_defaults() {
    let sweep = Sweep::parse("s", "experiment = \"shuffle-cache\"\nseeds = 3").unwrap();
    let seeds: Vec<u64> = sweep.points.iter().map(|p| p.seed).collect();
    assert_eq!(seeds, [1, 2, 3]);
    assert!(sweep.swept.is_empty() && sweep.shapes.is_empty());
    let sweep = Sweep::parse("s", "experiment = \"shuffle-cache\"").unwrap();
    assert_eq!(sweep.points.len(), 1);
    assert_eq!(sweep.points[0].key, "seed=1");
}

#[test]
fn bad_specs_are_one_line_errors_naming_the_problem() {
    let cases = [
        ("", "'experiment' is missing"),
        ("experiment = \"nope\"", "unknown experiment 'nope'"),
        (
            "experiment = \"bulk\"\nscale = \"huge\"",
            "bad scale 'huge'",
        ),
        ("experiment = \"bulk\"\nseeds = 0", "'seeds' must be"),
        ("experiment = \"bulk\"\nseeds = [1, 1]", "'seeds' must be"),
        ("experiment = \"bulk\"\nseeds = [-1]", "'seeds' must be"),
        ("experiment = \"bulk\"\nbogus = 1", "unknown key 'bogus'"),
        (
            "experiment = \"bulk\"\n[params]\nnope = [1]",
            "unknown key 'bulk.nope'",
        ),
        (
            "experiment = \"bulk\"\n[params]\nrounds = []",
            "params.rounds is an empty list",
        ),
        (
            "experiment = \"bulk\"\n[params]\nrounds = [0]",
            "bad value for 'bulk.rounds'",
        ),
        (
            "experiment = \"bulk\"\nseeds = 100000\n[params]\nrounds = [1, 2]",
            "more than 100000 points",
        ),
        (
            "experiment = \"bulk\"\n[params]\nrounds = [3]\n[shapes.a]\nrounds = 2",
            "set both",
        ),
        ("experiment = [", "s: "),
        (
            "experiment = \"bulk\"\n[params]\nrounds = [1, 2, 1]",
            "params.rounds lists 1 twice",
        ),
        (
            "experiment = \"bulk\"\n[shapes.a]\nrounds = 5\n[shapes.b]\nrounds = 0x5",
            "shapes.a and shapes.b give the same parameters",
        ),
        (
            "experiment = \"bulk\"\n[params]\nrounds = [0x10, 16]",
            "params.rounds lists 16 twice",
        ),
        (
            "experiment = \"numa-balancing\"\n[params]\nzipf_s = [2, 1.5, 2.0]",
            "params.zipf_s lists 2 twice (as 2 and 2.0)",
        ),
        (
            "experiment = \"numa-balancing\"\n[shapes.a]\nzipf_s = 0.0\n[shapes.b]\nzipf_s = -0.0",
            "shapes.a and shapes.b give the same parameters",
        ),
        (
            "experiment = \"numa-balancing\"\n[params]\nzipf_s = [0.0, -0.0]",
            "params.zipf_s lists 0.0 twice (as 0.0 and -0.0)",
        ),
    ];
    for (text, expected) in cases {
        let error = Sweep::parse("s", text).unwrap_err();
        assert!(error.contains(expected), "{text:?}: {error}");
        assert!(
            error.starts_with("s: ") || error.starts_with("s:"),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
    }
}

#[test]
fn a_point_file_that_never_ends_is_no_record_not_a_full_memory() {
    // Regression: the point file was read whole; one replaced by a link
    // to /dev/zero read until memory ran out.
    let dir = scratch("endless");
    let sweep = Sweep::parse("s", "experiment = \"shuffle-cache\"").unwrap();
    let path = point_path(&dir, &sweep.points[0].key);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    assert!(stored(&dir, &sweep.points[0]).is_none());
    assert_eq!(pending(&sweep, &dir), [0]);
}

#[test]
fn records_round_trip_and_decide_what_is_pending() {
    let dir = scratch("pending");
    let sweep = Sweep::parse("s", "experiment = \"shuffle-cache\"\nseeds = 3").unwrap();
    assert_eq!(pending(&sweep, &dir), [0, 1, 2]);
    let ok = PointRecord {
        key: sweep.points[0].key.clone(),
        outcome: Ok(json!({"rows": []})),
        seconds: 1.5,
    };
    let failed = PointRecord {
        key: sweep.points[1].key.clone(),
        outcome: Err("boom".into()),
        seconds: 0.25,
    };
    ok.write(&dir).unwrap();
    failed.write(&dir).unwrap();
    assert_eq!(PointRecord::from_json(&ok.to_json()), Some(ok.clone()));
    assert_eq!(PointRecord::from_json(&failed.to_json()), Some(failed));
    // A failed point runs again; an ok one does not.
    assert_eq!(pending(&sweep, &dir), [1, 2]);
    // A file holding another key (a hash collision, a stale file) is not a record of the point.
    let other = point_path(&dir, &sweep.points[2].key);
    std::fs::write(&other, ok.to_json().to_string()).unwrap();
    assert_eq!(pending(&sweep, &dir), [1, 2]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_point_out_of_range_is_a_failed_record_not_a_panic() {
    let sweep = Sweep::parse("s", "experiment = \"shuffle-cache\"").unwrap();
    let record = run_point(&sweep, 5, NonZeroUsize::MIN, Box::new(|_, _| {}));
    assert_eq!(record.outcome, Err("no point 5 (the sweep has 1)".into()));
}

#[test]
fn gather_writes_the_table_with_failures_and_the_page_with_plots() {
    let dir = scratch("gather");
    let spec =
        "experiment = \"numa-balancing\"\nseeds = 2\n[params]\npattern = [\"uniform\", \"zipf\"]";
    let sweep = Sweep::parse("s", spec).unwrap();
    for (at, point) in sweep.points.iter().enumerate() {
        let outcome = if at == 3 {
            Err("out of memory, \"really\"".to_string())
        } else {
            Ok(json!({"rows": [
                {"policy": "a", "score": at as f64},
                {"policy": "b", "score": 10.0 * at as f64},
                {"series": "s", "t": 1},
            ]}))
        };
        PointRecord {
            key: point.key.clone(),
            outcome,
            seconds: 1.0,
        }
        .write(&dir)
        .unwrap();
    }
    let gathered = gather(&sweep, &dir, spec).unwrap();
    assert_eq!((gathered.ok, gathered.failed, gathered.missing), (3, 1, 0));
    let csv = std::fs::read_to_string(&gathered.table).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "seed,pattern,status,error,seconds,policy,score");
    assert_eq!(lines[1], "1,uniform,ok,,1.0,a,0.0");
    assert_eq!(lines[2], "1,uniform,ok,,1.0,b,0.0");
    assert_eq!(lines[6], "1,zipf,ok,,1.0,b,20.0");
    assert_eq!(
        lines[7],
        "2,zipf,error,\"out of memory, \"\"really\"\"\",1.0,,"
    );
    assert_eq!(lines.len(), 8, "{csv}");
    let page = std::fs::read_to_string(&gathered.page).unwrap();
    assert!(page.contains("score by pattern"), "{page}");
    assert!(page.contains("<svg"), "no plot");
    assert!(page.contains("out of memory"), "failed point not listed");
    let _ = std::fs::remove_dir_all(&dir);
}
