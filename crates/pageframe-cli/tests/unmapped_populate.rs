//! `pageframe run unmapped-populate`, run as a user runs it, at a tiny
//! region: the JSON rows of the output contract, one per variant and
//! backing, with the flush counts each variant must have.

mod common;

use serde_json::Value;
use std::process::Command;

#[test]
fn unmapped_populate_reports_every_variant_with_its_flushes() {
    let path = common::temp_file(
        "unmapped-populate.toml",
        "[unmapped-populate]\nregion_mib = 4\nsamples = 2\nsim_region_gib = 1\n",
    );
    let output = Command::new(common::BINARY)
        .args(["run", "unmapped-populate", "--format", "json", "--config"])
        .arg(&path)
        .output()
        .expect("the pageframe binary runs");
    let _ = std::fs::remove_file(&path);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(json["experiment"], "unmapped-populate");
    let rows = json["rows"].as_array().expect("rows");
    let flushes = |variant: &str, backing: &str| {
        rows.iter()
            .find(|row| row["variant"] == variant && row["backing"] == backing)
            .and_then(|row| row["tlb_flushes"].as_f64())
    };
    for (backing, pages) in [("arena", 1024.0), ("sim", 262_144.0)] {
        assert_eq!(flushes("baseline", backing), Some(pages), "{backing}");
        assert_eq!(
            flushes("gfp_unmapped", backing),
            Some(pages / 512.0),
            "{backing}"
        );
        assert_eq!(flushes("skip_flush", backing), Some(0.0), "{backing}");
    }
    for variant in ["gfp_unmapped_span512", "gfp_unmapped_fileio"] {
        assert_eq!(flushes(variant, "arena"), Some(1024.0 / 512.0), "{variant}");
    }
    assert_eq!(rows.len(), 8);
}

/// Regression: the simulation's prices come from a calibration file anyone
/// can edit. Prices of u64::MAX overflowed the charge (a panic with
/// overflow checks, wrapped figures in release); the modelled time
/// saturates instead: at least u64::MAX picoseconds on every sim row.
#[test]
fn absurd_calibration_prices_saturate_the_modelled_time() {
    let config = common::temp_file(
        "unmapped-populate-absurd.toml",
        "[unmapped-populate]\nregion_mib = 2\nsamples = 1\nsim_region_gib = 1\n",
    );
    let prices: String = pageframe::backing::SimCosts::FILE_KEYS
        .iter()
        .map(|key| format!("{key} = {}\n", u64::MAX))
        .collect();
    let costs = common::temp_file("absurd-sim-costs.toml", &prices);
    let output = Command::new(common::BINARY)
        .args(["run", "unmapped-populate", "--format", "json", "--config"])
        .arg(&config)
        .env(pageframe::backing::SIM_COSTS_ENV, &costs)
        .output()
        .expect("the pageframe binary runs");
    let _ = std::fs::remove_file(&config);
    let _ = std::fs::remove_file(&costs);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let rows = json["rows"].as_array().expect("rows");
    let saturated_ms = u64::MAX as f64 / 1e9;
    for row in rows.iter().filter(|row| row["backing"] == "sim") {
        let modelled = row["modelled_ms"].as_f64().expect("a modelled time");
        assert!(modelled >= saturated_ms * 0.999, "{row}");
    }
}

/// Regression: a FIFO as the calibration file (named by the environment or
/// in the current directory) blocked in open(), and one that does not parse
/// (`/dev/zero`) was found after the arenas had been built and timed, and
/// after the experiments listed before had printed their reports.
#[test]
fn a_bad_or_fifo_calibration_file_is_refused_before_any_experiment_runs() {
    let fifo = common::fifo_in("sim-costs-fifo");
    let args = ["run", "bulk,unmapped-populate"];
    for costs in [fifo.as_path(), std::path::Path::new("/dev/zero")] {
        let output = Command::new(common::BINARY)
            .args(args)
            .env(pageframe::backing::SIM_COSTS_ENV, costs)
            .output()
            .expect("the pageframe binary runs");
        let message = common::one_line_error(&args, output);
        assert!(
            message.contains(&format!(
                "unmapped-populate: calibration file {}: ",
                costs.display()
            )),
            "{message}"
        );
    }
    let dir = common::temp_dir("sim-costs-cwd");
    let made = Command::new("mkfifo")
        .arg(dir.join(pageframe::backing::SIM_COSTS_FILE))
        .status();
    assert!(made.expect("mkfifo runs").success());
    let output = Command::new(common::BINARY)
        .args(args)
        .current_dir(&dir)
        .env_remove(pageframe::backing::SIM_COSTS_ENV)
        .output()
        .expect("the pageframe binary runs");
    let message = common::one_line_error(&args, output);
    assert!(
        message
            .contains("calibration file pageframe-sim-costs.toml: protection_change_ns is missing"),
        "{message}"
    );
}
