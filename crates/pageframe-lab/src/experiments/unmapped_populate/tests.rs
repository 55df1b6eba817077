use super::*;
use crate::params::Value as ParamValue;
use pageframe::Pfn;

fn tiny_run() -> Report {
    let mut list = UnmappedPopulate.params(Scale::Quick);
    for param in &mut list {
        param.default = match param.key {
            "region_mib" => ParamValue::Int(8),
            "samples" => ParamValue::Int(3),
            "sim_region_gib" => ParamValue::Int(1),
            _ => param.default,
        };
    }
    let options = RunOptions::new(Scale::Quick, 7);
    UnmappedPopulate
        .run(&options, &Params::defaults(&list))
        .unwrap()
}

fn row(report: &Report, variant: &str, backing: &str) -> PopulateRow {
    report
        .results_as::<PopulateRow>()
        .find(|row| row.variant == variant && row.backing == backing)
        .unwrap_or_else(|| panic!("no {variant} row on {backing}"))
}

#[test]
fn flushes_per_sample_are_one_per_page_one_per_pageblock_and_none() {
    let report = tiny_run();
    assert_eq!(report.rows.len(), 8);
    for variant in ["gfp_unmapped_span512", "gfp_unmapped_fileio"] {
        let arena = row(&report, variant, "arena");
        assert_eq!(
            arena.tlb_flushes,
            ((8u64 << 20) / PAGEBLOCK_BYTES) as f64,
            "{variant}"
        );
        assert_eq!(arena.reference_delta, Some(-0.7), "{variant}");
    }
    // File I/O keeps the mermap's bookkeeping: one slot per get, so the
    // window wraps as often as with the series' one-page slots.
    assert_eq!(
        row(&report, "gfp_unmapped_fileio", "arena").local_flushes,
        row(&report, "gfp_unmapped", "arena").local_flushes
    );
    for (backing, region_bytes) in [("arena", 8u64 << 20), ("sim", 1 << 30)] {
        let pages = region_bytes / PAGE_SIZE;
        let baseline = row(&report, "baseline", backing);
        let unmapped = row(&report, "gfp_unmapped", backing);
        let skip = row(&report, "skip_flush", backing);
        assert_eq!(baseline.pages, pages);
        assert_eq!(baseline.tlb_flushes, pages as f64, "{backing}");
        assert_eq!(
            unmapped.tlb_flushes,
            (region_bytes / PAGEBLOCK_BYTES) as f64,
            "{backing}"
        );
        assert_eq!(skip.tlb_flushes, 0.0, "{backing}");
        assert_eq!(baseline.delta_vs_baseline, None);
        assert_eq!(unmapped.reference_delta, Some(-0.7));
        assert_eq!(skip.reference_mean_ms, 325.8);
    }
    let arena = row(&report, "gfp_unmapped", "arena");
    assert_eq!(arena.samples, 3);
    let (min, mean, max) = (
        arena.min_ms.unwrap(),
        arena.mean_ms.unwrap(),
        arena.max_ms.unwrap(),
    );
    assert!(min <= mean);
    assert!(mean <= max);
    assert_eq!(arena.histogram.unwrap().chars().count(), 8);
    // The model charges a shootdown per page to the baseline only.
    let modelled = |variant| row(&report, variant, "sim").modelled_ms.unwrap();
    assert!(modelled("gfp_unmapped") < modelled("baseline"));
    assert!(modelled("skip_flush") < modelled("baseline"));
}

#[test]
fn sparkline_shows_empty_bins_low_and_the_fullest_high() {
    assert_eq!(sparkline(&[1.0, 1.0, 1.0, 2.0], 4), "█▁▁▄");
    assert_eq!(sparkline(&[5.0], 3), "█▁▁");
    assert_eq!(sparkline(&[], 3), "");
}

#[test]
fn adjacent_pfns_form_one_run_each() {
    let pfns = [3, 4, 5, 9, 11, 12].map(Pfn);
    assert_eq!(
        populate::adjacent_runs(&pfns),
        vec![(Pfn(3), 3), (Pfn(9), 1), (Pfn(11), 2)]
    );
    assert_eq!(populate::adjacent_runs(&[]), Vec::new());
}

#[test]
fn machines_hold_the_region_above_watermarks_and_per_cpu_lists() {
    let boot = |bytes| {
        pageframe::LocalPageAllocator::boot(&pageframe::MachineDesc::uniform(bytes, 1, 2).unwrap())
            .unwrap()
    };
    for region_mib in [2u64, 64, 512] {
        let region = region_mib << 20;
        let sized = boot(memory::machine_bytes(region).unwrap());
        populate::check_headroom(&sized, region / PAGE_SIZE).unwrap();
    }
    // The region plus the 64 MiB of watermark room alone leave the per-CPU
    // lists' eighth of the zone uncovered (72 MiB of 576 MiB).
    let lean = boot(576 << 20);
    let error = populate::check_headroom(&lean, (512 << 20) / PAGE_SIZE)
        .unwrap_err()
        .to_string();
    assert!(error.contains("above its high watermarks"), "{error}");
}
