//! Plots of `shuffle-cache`: the memory-side-cache conflict rate per case
//! beside shuffle-free-memory.txt's 8% / 21% / 11%, and the two-instance
//! STREAM speedup beside its 3x.

use super::{number, text, BarSeries, Plot, PlotKind};
use crate::report::{Report, Row};

/// The plots of a `shuffle-cache` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let heap: Vec<&Row> = report
        .rows
        .iter()
        .filter(|row| number(row, "conflict_rate").is_some())
        .filter(|row| !text(row, "case").unwrap_or("").starts_with("two-instances"))
        .collect();
    let streams: Vec<&Row> = report
        .rows
        .iter()
        .filter(|row| number(row, "speedup").is_some())
        .collect();
    vec![
        Plot {
            name: "conflict-rate".into(),
            title: "Memory-side cache conflict rate".into(),
            caption: "Conflict misses per access of a heap 3x the cache, fresh and after aging, without and with shuffle (whiskers: min and max over seeds); pale: shuffle-free-memory.txt.".into(),
            value_label: "conflict misses / accesses".into(),
            kind: bars(&heap, "conflict_rate", Some(("conflict_min", "conflict_max"))),
        },
        Plot {
            name: "two-instances".into(),
            title: "Two STREAM instances on cache-sized nodes".into(),
            caption: "Speedup of two STREAM instances on nodes 0 and 1 over the unshuffled run; pale: the document's 3x with shuffle.".into(),
            value_label: "speedup over no shuffle".into(),
            kind: bars(&streams, "speedup", None),
        },
    ]
}

fn bars(rows: &[&Row], column: &str, range: Option<(&str, &str)>) -> PlotKind {
    PlotKind::Bars {
        categories: rows
            .iter()
            .map(|row| text(row, "case").unwrap_or("?").to_string())
            .collect(),
        series: vec![
            BarSeries {
                name: "pageframe".into(),
                values: rows.iter().map(|row| number(row, column)).collect(),
                ranges: rows
                    .iter()
                    .map(|row| {
                        let (min, max) = range?;
                        Some((number(row, min)?, number(row, max)?))
                    })
                    .collect(),
                reference: false,
            },
            BarSeries {
                name: "document".into(),
                values: rows.iter().map(|row| number(row, "reference")).collect(),
                ranges: vec![None; rows.len()],
                reference: true,
            },
        ],
    }
}
