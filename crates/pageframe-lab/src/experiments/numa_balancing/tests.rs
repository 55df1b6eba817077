//! Tests of `numa_balancing`.

use super::*;
use crate::params::ConfigFile;

/// A small machine with the experiment's ratios.
const SMALL: &str = "[numa-balancing]\nnode_mib = 192\ncpus_per_node = 2\nprocesses = 4\nmap_mib = 40\neater_mib = 160\nscan_size_mb = 16\neater_exit_s = 20\nduration_s = 120\ntick_ms = 20\nsample_s = 5\n";

fn params_of(text: &str) -> Result<Params, crate::params::ConfigError> {
    ConfigFile::parse("test.toml", text, &["numa-balancing"])?
        .params("numa-balancing", &NumaBalancing.params(Scale::Quick))
}

fn setup_of(text: &str) -> Setup {
    Setup::from_params(&params_of(text).unwrap()).unwrap()
}

fn simulate_small(flag: bool, sysctl: u8) -> Outcome {
    let setup = setup_of(SMALL);
    simulate(
        &setup,
        &CostModel::default(),
        flag,
        sysctl,
        1,
        &|_| {},
        None,
    )
    .unwrap()
}

/// The score improves after the eater exits only with
/// MPOL_F_NUMA_BALANCING and kernel.numa_balancing=1; balancing off
/// changes nothing.
#[test]
fn improvement_only_with_the_flag() {
    let bind = simulate_small(false, 1);
    let balanced = simulate_small(true, 1);
    let off = simulate_small(true, 0);
    assert!(bind.remote_before > 0.3, "{}", bind.remote_before);
    let same = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-9;
    assert!(same(bind.score_after, bind.score_before));
    assert_eq!(bind.counters.numa_pte_updates, 0);
    assert!(same(off.score_after, off.score_before));
    assert_eq!(
        off.counters,
        pageframe::vm::VmCounters {
            pgfault: off.counters.pgfault,
            ..Default::default()
        }
    );
    assert!(balanced.score_after > balanced.score_before * 1.05);
    assert!(balanced.remote_after < 0.05, "{}", balanced.remote_after);
    assert!(balanced.counters.numa_pages_migrated > 0);
}

/// The timeline: one sample per window, times increasing to the end of
/// the run, pages per node summing to the processes' pages and agreeing
/// with their page tables at the end; with balancing, pages leave node 1
/// for node 3 only after the eater exits, and the windowed score rises.
#[test]
fn timeline_follows_the_simulation() {
    let setup = setup_of(SMALL);
    let balanced = simulate_small(true, 1);
    let timeline = &balanced.timeline;
    assert_eq!(timeline.len() as u64, setup.samples());
    assert!(timeline
        .windows(2)
        .all(|pair| pair[0].end_ms < pair[1].end_ms));
    assert_eq!(timeline.last().unwrap().end_ms, setup.duration_ms);
    let map_pages = balanced.map_pages * setup.processes as u64;
    for sample in timeline {
        assert_eq!(sample.pages.iter().sum::<u64>(), map_pages, "{sample:?}");
        assert_eq!(sample.pages[0] + sample.pages[2], 0, "{sample:?}");
    }
    assert_eq!(timeline.last().unwrap().pages, balanced.mapped_pages);
    let at = |ms: u64| timeline.iter().find(|sample| sample.end_ms >= ms).unwrap();
    let first = &timeline[0];
    assert_eq!(at(setup.exit_ms).pages, first.pages, "nothing moves before");
    assert!(timeline.last().unwrap().pages[3] > first.pages[3]);
    assert!(timeline.last().unwrap().migrated > 0);
    let score = |sample: &Sample| sample.accesses / sample.window_ms as f64;
    assert!(score(timeline.last().unwrap()) > score(first) * 1.05);
    // Without balancing the pages never move.
    let bind = simulate_small(false, 1);
    assert!(bind
        .timeline
        .iter()
        .all(|sample| sample.pages == first.pages));
}

/// The runs are separate seeded machines: spreading them over threads
/// changes nothing in the report.
#[test]
fn the_report_is_the_same_on_one_thread_and_on_several() {
    let params = params_of(SMALL).unwrap();
    let reports: Vec<serde_json::Value> = [1, 2, 4]
        .into_iter()
        .map(|threads| {
            let options = RunOptions {
                threads: std::num::NonZeroUsize::new(threads).unwrap(),
                ..RunOptions::new(Scale::Quick, 3)
            };
            NumaBalancing.run(&options, &params).unwrap().to_json()
        })
        .collect();
    assert_eq!(reports[0], reports[1]);
    assert_eq!(reports[0], reports[2]);
}

#[test]
fn the_report_keeps_its_rows_and_adds_the_timeline() {
    let options = RunOptions::new(Scale::Quick, 3);
    let report = NumaBalancing
        .run(&options, &params_of(SMALL).unwrap())
        .unwrap();
    let results: Vec<&Row> = report.results().collect();
    assert_eq!(results.len(), RUNS.len());
    for row in &results {
        for column in [
            "policy",
            "score_before",
            "score_after",
            "improvement",
            "pages_migrated",
            "hint_faults",
            "reference_improvement",
        ] {
            assert!(row.get(column).is_some(), "{column} in {row:?}");
        }
    }
    let timeline: Vec<&Row> = report.series(TIMELINE).collect();
    assert_eq!(timeline.len(), RUNS.len() * 24);
    assert_eq!(report.series_names(), vec![TIMELINE.to_string()]);
    let json = report.to_json();
    assert_eq!(json["rows"].as_array().unwrap().len(), RUNS.len() * 25);
    let row = timeline[0];
    for column in [
        "t_s",
        "score",
        "pages_node0",
        "pages_node3",
        "pages_migrated",
    ] {
        assert!(row.get(column).is_some(), "{column} in {row:?}");
    }
}

#[test]
fn params_reach_the_setup_and_bad_combinations_name_their_keys() {
    let quick = setup_of("");
    assert_eq!(quick.processes, 16);
    assert_eq!(quick.ws_bytes, 160 * MIB);
    assert_eq!(quick.balancing.scan_size_mb, 64);
    assert_eq!(quick.pattern, Pattern::Uniform);
    let zipf = setup_of(
        "[numa-balancing]\npattern = \"zipf\"\nzipf_s = 0.8\nscan_period_max_ms = 30000\n",
    );
    assert_eq!(zipf.pattern, Pattern::Zipf { s: 0.8 });
    assert_eq!(zipf.balancing.scan_period_max_ms, 30_000);
    let full = Setup::from_params(&Params::defaults(&NumaBalancing.params(Scale::Full))).unwrap();
    assert_eq!(full.node_bytes, 48 << 30);
    assert_eq!(full.eater_bytes, 40 << 30);
    assert_eq!(full.processes * full.ws_bytes as usize, (64 * 640) << 20);
    let error = |text: &str| match Setup::from_params(&params_of(text).unwrap()) {
        Err(err) => err.to_string(),
        Ok(setup) => panic!("{setup:?}"),
    };
    assert!(error("[numa-balancing]\neater_mib = 4000\n").contains("eater_mib = 4000"));
    assert!(error("[numa-balancing]\nprocesses = 64\n").contains("processes x map_mib"));
    assert!(error("[numa-balancing]\neater_exit_s = 300\n").contains("duration_s = 200"));
    assert!(error("[numa-balancing]\nscan_period_min_ms = 70000\n").contains("scan_period_min_ms"));
    let unknown = params_of("[numa-balancing]\nscan_size = 3\n")
        .unwrap_err()
        .0;
    assert!(
        unknown.contains("unknown key 'numa-balancing.scan_size'"),
        "{unknown}"
    );
}
