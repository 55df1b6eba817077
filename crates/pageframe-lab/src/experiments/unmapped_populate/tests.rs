use super::*;
use crate::params::Value as ParamValue;

fn tiny_run() -> Report {
    let mut list = params(Scale::Quick);
    for param in &mut list {
        param.default = match param.key {
            "region_mib" => ParamValue::Int(8),
            "samples" => ParamValue::Int(3),
            "sim_region_gib" => ParamValue::Int(1),
            _ => param.default,
        };
    }
    let options = RunOptions::new(Scale::Quick, 7);
    run_with(&options, &Params::defaults(&list)).unwrap()
}

fn row<'a>(report: &'a Report, variant: &str, backing: &str) -> &'a Row {
    report
        .rows
        .iter()
        .find(|row| {
            row.get(columns::VARIANT).and_then(Value::as_str) == Some(variant)
                && row.get(columns::BACKING).and_then(Value::as_str) == Some(backing)
        })
        .unwrap_or_else(|| panic!("no {variant} row on {backing}"))
}

fn number(row: &Row, column: &str) -> f64 {
    row.get(column)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{column} is not a number: {row:?}"))
}

#[test]
fn flushes_per_sample_are_one_per_page_one_per_pageblock_and_none() {
    let report = tiny_run();
    assert_eq!(report.rows.len(), 8);
    for variant in ["gfp_unmapped_span512", "gfp_unmapped_fileio"] {
        let arena = row(&report, variant, "arena");
        assert_eq!(
            number(arena, columns::TLB_FLUSHES),
            ((8u64 << 20) / PAGEBLOCK_BYTES) as f64,
            "{variant}"
        );
        assert_eq!(number(arena, columns::REFERENCE_DELTA), -0.7, "{variant}");
    }
    // File I/O keeps the mermap's bookkeeping: one slot per get, so the
    // window wraps as often as with the series' one-page slots.
    assert_eq!(
        number(
            row(&report, "gfp_unmapped_fileio", "arena"),
            "local_flushes"
        ),
        number(row(&report, "gfp_unmapped", "arena"), "local_flushes")
    );
    for (backing, region_bytes) in [("arena", 8u64 << 20), ("sim", 1 << 30)] {
        let pages = (region_bytes / PAGE_SIZE) as f64;
        let baseline = row(&report, "baseline", backing);
        let unmapped = row(&report, "gfp_unmapped", backing);
        let skip = row(&report, "skip_flush", backing);
        assert_eq!(number(baseline, columns::PAGES), pages);
        assert_eq!(number(baseline, columns::TLB_FLUSHES), pages, "{backing}");
        assert_eq!(
            number(unmapped, columns::TLB_FLUSHES),
            (region_bytes / PAGEBLOCK_BYTES) as f64,
            "{backing}"
        );
        assert_eq!(number(skip, columns::TLB_FLUSHES), 0.0, "{backing}");
        assert!(baseline.get(columns::DELTA_VS_BASELINE).unwrap().is_null());
        assert_eq!(number(unmapped, columns::REFERENCE_DELTA), -0.7);
        assert_eq!(number(skip, columns::REFERENCE_MEAN_MS), 325.8);
    }
    let arena = row(&report, "gfp_unmapped", "arena");
    assert_eq!(number(arena, columns::SAMPLES), 3.0);
    assert!(number(arena, columns::MIN_MS) <= number(arena, columns::MEAN_MS));
    assert!(number(arena, columns::MEAN_MS) <= number(arena, columns::MAX_MS));
    assert_eq!(
        arena
            .get(columns::HISTOGRAM)
            .and_then(Value::as_str)
            .unwrap()
            .chars()
            .count(),
        8
    );
    // The model charges a shootdown per page to the baseline only.
    let modelled = |variant| number(row(&report, variant, "sim"), "modelled_ms");
    assert!(modelled("gfp_unmapped") < modelled("baseline"));
    assert!(modelled("skip_flush") < modelled("baseline"));
}

#[test]
fn sparkline_shows_empty_bins_low_and_the_fullest_high() {
    assert_eq!(sparkline(&[1.0, 1.0, 1.0, 2.0], 4), "█▁▁▄");
    assert_eq!(sparkline(&[5.0], 3), "█▁▁");
    assert_eq!(sparkline(&[], 3), "");
}
