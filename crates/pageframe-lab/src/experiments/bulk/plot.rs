//! Plots of `bulk`: cycles per page against batch size, ours beside the
//! kernel's curve of bulk-page-allocator.txt and the peers; and the cost of
//! the knobs at batch 32.

use super::rows::CostRow;
use crate::plots::{BarSeries, Plot, PlotKind, Series};
use crate::report::Report;

/// The plots of a `bulk` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let rows: Vec<CostRow> = report.results_as().collect();
    vec![cycles_per_page(&rows), knobs(&rows)]
}

/// A row's measured cycles per page.
fn measured(row: &CostRow) -> Option<f64> {
    Some(row.cycles_per_page)
}

/// The document's cycles per page for a row's case.
fn document(row: &CostRow) -> Option<f64> {
    row.reference_cycles.map(|cycles| cycles as f64)
}

fn cycles_per_page(rows: &[CostRow]) -> Plot {
    let batches: Vec<f64> = rows
        .iter()
        .map(|row| row.batch as f64)
        .filter(|batch| *batch > 0.0)
        .collect();
    let first = batches.iter().copied().fold(f64::INFINITY, f64::min);
    let last = batches.iter().copied().fold(0.0, f64::max);
    let curve = |allocator: &str, value: fn(&CostRow) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|row| row.is_order0(allocator, "default") && row.batch > 0)
            .filter_map(|row| Some((row.batch as f64, value(row)?)))
            .collect()
    };
    // A single-page cost is one number: a flat line across the batches.
    let flat = |allocator: &str, value: fn(&CostRow) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|row| row.is_order0(allocator, "default") && row.batch == 0)
            .filter_map(value)
            .take(1)
            .flat_map(|cost| [(first, cost), (last, cost)])
            .filter(|_| first <= last)
            .collect()
    };
    let mut series = vec![
        line(
            "pageframe alloc_pages_bulk",
            curve("pageframe", measured),
            false,
            0,
        ),
        line(
            "kernel alloc_pages_bulk (document)",
            curve("pageframe", document),
            true,
            0,
        ),
        line(
            "pageframe one page at a time",
            flat("pageframe", measured),
            false,
            1,
        ),
        line(
            "kernel one page at a time (document)",
            flat("pageframe", document),
            true,
            1,
        ),
    ];
    let mut peers: Vec<&str> = rows
        .iter()
        .map(|row| row.allocator.as_str())
        .filter(|name| *name != "pageframe")
        .collect();
    peers.dedup();
    // (peers measured at several orders repeat their name in a row)
    for (at, peer) in peers.into_iter().enumerate() {
        let bulk = curve(peer, measured);
        if bulk.len() > 1 {
            series.push(line(&format!("{peer} (peer)"), bulk, false, 2 + at));
        } else {
            series.push(line(
                &format!("{peer} one at a time (peer)"),
                flat(peer, measured),
                false,
                2 + at,
            ));
        }
    }
    series.retain(|line| !line.points.is_empty());
    Plot {
        name: "cycles-per-page".into(),
        title: "Order-0 cost per page vs batch size".into(),
        caption: "TSC cycles per page allocated and freed, by batch size of alloc_pages_bulk/free_pages_bulk (both axes logarithmic). Dashed: the kernel's figures from bulk-page-allocator.txt; flat lines: one page per call.".into(),
        value_label: "cycles per page".into(),
        kind: PlotKind::Lines {
            x_label: "batch size (pages per call)".into(),
            log_x: true,
            log_y: true,
            series,
            markers: Vec::new(),
        },
    }
}

fn line(name: &str, points: Vec<(f64, f64)>, reference: bool, colour: usize) -> Series {
    Series {
        name: name.into(),
        points,
        reference,
        colour: Some(colour),
    }
}

fn knobs(rows: &[CostRow]) -> Plot {
    let rows: Vec<&CostRow> = rows
        .iter()
        .filter(|row| row.allocator == "pageframe" && row.order == 0 && row.batch == 32)
        .collect();
    Plot {
        name: "knobs".into(),
        title: "Statistics and checks on the bulk path, batch 32".into(),
        caption: "Cost per page at batch 32 with the per-page statistics and free-time checks on and off (the document's two knobs); pale: the kernel at batch 32.".into(),
        value_label: "cycles per page".into(),
        kind: PlotKind::Bars {
            categories: rows
                .iter()
                .map(|row| row.variant.clone())
                .collect(),
            series: vec![
                BarSeries {
                    name: "pageframe".into(),
                    values: rows.iter().map(|row| measured(row)).collect(),
                    ranges: vec![None; rows.len()],
                    reference: false,
                },
                BarSeries {
                    name: "kernel (document)".into(),
                    values: rows.iter().map(|row| document(row)).collect(),
                    ranges: vec![None; rows.len()],
                    reference: true,
                },
            ],
        },
    }
}
