//! Plots of `unmapped-populate`: the populate latency of each variant on the
//! real arena, mean with min–max whiskers, beside the document's figures;
//! and the cost model's charge for the same loops on the simulated machine.

use super::rows::PopulateRow;
use super::VARIANTS;
use crate::plots::{BarSeries, Plot, PlotKind};
use crate::report::Report;

/// The plots of an `unmapped-populate` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    vec![latency(report), modelled(report)]
}

fn rows_of(report: &Report, backing: &str) -> Vec<PopulateRow> {
    report
        .results_as::<PopulateRow>()
        .filter(|row| row.backing == backing)
        .collect()
}

fn latency(report: &Report) -> Plot {
    let rows = rows_of(report, "arena");
    // The document's whiskers are not in the rows (only its mean is), so
    // they come from the experiment's table of references.
    let reference_range = |row: &PopulateRow| {
        let variant = VARIANTS
            .into_iter()
            .find(|variant| variant.name() == row.variant)?;
        let reference = variant.reference();
        Some((reference.min_ms, reference.max_ms))
    };
    Plot {
        name: "populate-latency".into(),
        title: "Guest-memory populate latency by variant".into(),
        caption: "Time to populate the region, mean over the samples with min–max whiskers, on the real arena; pale: the document's Firecracker figures (Sapphire Rapids, 30 samples; the rows of the mermap options span512 and fileio show its gfp_unmapped figure).".into(),
        value_label: "populate latency (ms)".into(),
        kind: PlotKind::Bars {
            categories: rows
                .iter()
                .map(|row| row.variant.clone())
                .collect(),
            series: vec![
                BarSeries {
                    name: "pageframe (arena)".into(),
                    values: rows.iter().map(|row| row.mean_ms).collect(),
                    ranges: rows
                        .iter()
                        .map(|row| row.min_ms.zip(row.max_ms))
                        .collect(),
                    reference: false,
                },
                BarSeries {
                    name: "kernel (document)".into(),
                    values: rows
                        .iter()
                        .map(|row| Some(row.reference_mean_ms))
                        .collect(),
                    ranges: rows.iter().map(reference_range).collect(),
                    reference: true,
                },
            ],
        },
    }
}

fn modelled(report: &Report) -> Plot {
    let rows = rows_of(report, "sim");
    Plot {
        name: "modelled-latency".into(),
        title: "Populate latency charged by the cost model (simulated machine)".into(),
        caption: "The simulated backing's charge for one populate of the large region: protection changes, global and local flushes, zeroing, mermap mappings and copies at the default prices.".into(),
        value_label: "modelled time (ms)".into(),
        kind: PlotKind::Bars {
            categories: rows
                .iter()
                .map(|row| row.variant.clone())
                .collect(),
            series: vec![BarSeries {
                name: "pageframe (sim)".into(),
                values: rows.iter().map(|row| row.modelled_ms).collect(),
                ranges: vec![None; rows.len()],
                reference: false,
            }],
        },
    }
}
