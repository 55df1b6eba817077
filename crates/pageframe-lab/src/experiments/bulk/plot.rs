//! Plots of `bulk`: cycles per page against batch size, ours beside the
//! kernel's curve of bulk-page-allocator.txt and the peers; and the cost of
//! the knobs at batch 32.

use super::columns;
use crate::plots::{number, text, BarSeries, Plot, PlotKind, Series};
use crate::report::{Report, Row};

/// The plots of a `bulk` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    vec![cycles_per_page(report), knobs(report)]
}

fn is(row: &Row, allocator: &str, variant: &str) -> bool {
    text(row, columns::ALLOCATOR) == Some(allocator)
        && text(row, columns::VARIANT) == Some(variant)
        && number(row, columns::ORDER) == Some(0.0)
}

fn batch_of(row: &Row) -> Option<f64> {
    number(row, columns::BATCH)
}

fn cycles_per_page(report: &Report) -> Plot {
    let batches: Vec<f64> = report
        .rows
        .iter()
        .filter_map(batch_of)
        .filter(|batch| *batch > 0.0)
        .collect();
    let first = batches.iter().copied().fold(f64::INFINITY, f64::min);
    let last = batches.iter().copied().fold(0.0, f64::max);
    let curve = |allocator: &str, column: &str| -> Vec<(f64, f64)> {
        report
            .rows
            .iter()
            .filter(|row| is(row, allocator, "default"))
            .filter_map(|row| Some((batch_of(row)?, number(row, column)?)))
            .filter(|(batch, _)| *batch > 0.0)
            .collect()
    };
    // A single-page cost is one number: a flat line across the batches.
    let flat = |allocator: &str, column: &str| -> Vec<(f64, f64)> {
        report
            .rows
            .iter()
            .filter(|row| is(row, allocator, "default") && batch_of(row) == Some(0.0))
            .filter_map(|row| number(row, column))
            .take(1)
            .flat_map(|cost| [(first, cost), (last, cost)])
            .filter(|_| first <= last)
            .collect()
    };
    let mut series = vec![
        line(
            "pageframe alloc_pages_bulk",
            curve("pageframe", columns::CYCLES_PER_PAGE),
            false,
            0,
        ),
        line(
            "kernel alloc_pages_bulk (document)",
            curve("pageframe", columns::REFERENCE_CYCLES),
            true,
            0,
        ),
        line(
            "pageframe one page at a time",
            flat("pageframe", columns::CYCLES_PER_PAGE),
            false,
            1,
        ),
        line(
            "kernel one page at a time (document)",
            flat("pageframe", columns::REFERENCE_CYCLES),
            true,
            1,
        ),
    ];
    let mut peers: Vec<&str> = report
        .rows
        .iter()
        .filter_map(|row| text(row, columns::ALLOCATOR))
        .filter(|name| *name != "pageframe")
        .collect();
    peers.dedup();
    // (peers measured at several orders repeat their name in a row)
    for (at, peer) in peers.into_iter().enumerate() {
        let bulk = curve(peer, columns::CYCLES_PER_PAGE);
        if bulk.len() > 1 {
            series.push(line(&format!("{peer} (peer)"), bulk, false, 2 + at));
        } else {
            series.push(line(
                &format!("{peer} one at a time (peer)"),
                flat(peer, columns::CYCLES_PER_PAGE),
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

fn knobs(report: &Report) -> Plot {
    let rows: Vec<&Row> = report
        .rows
        .iter()
        .filter(|row| text(row, columns::ALLOCATOR) == Some("pageframe"))
        .filter(|row| number(row, columns::ORDER) == Some(0.0) && batch_of(row) == Some(32.0))
        .collect();
    Plot {
        name: "knobs".into(),
        title: "Statistics and checks on the bulk path, batch 32".into(),
        caption: "Cost per page at batch 32 with the per-page statistics and free-time checks on and off (the document's two knobs); pale: the kernel at batch 32.".into(),
        value_label: "cycles per page".into(),
        kind: PlotKind::Bars {
            categories: rows
                .iter()
                .map(|row| text(row, columns::VARIANT).unwrap_or("?").to_string())
                .collect(),
            series: vec![
                BarSeries {
                    name: "pageframe".into(),
                    values: rows.iter().map(|row| number(row, columns::CYCLES_PER_PAGE)).collect(),
                    ranges: vec![None; rows.len()],
                    reference: false,
                },
                BarSeries {
                    name: "kernel (document)".into(),
                    values: rows.iter().map(|row| number(row, columns::REFERENCE_CYCLES)).collect(),
                    ranges: vec![None; rows.len()],
                    reference: true,
                },
            ],
        },
    }
}
