//! The plot of an experiment that has no plot of its own: the first numeric
//! column of ours per row (named by the row's first text cells), beside the
//! `reference` column where it is numeric.

use super::{number, BarSeries, Plot, PlotKind};
use crate::report::Report;
use serde_json::Value;

/// Most bars drawn; later rows are left out of the plot (not the table).
const MAX_BARS: usize = 24;

/// One bar plot of the report, or none when no column is numeric.
pub fn plots(report: &Report) -> Vec<Plot> {
    let columns = report.columns();
    let is_reference = |name: &str| name.starts_with("reference");
    let numeric = columns.iter().find(|column| {
        !is_reference(column)
            && report
                .rows
                .iter()
                .any(|row| matches!(row.get(column), Some(Value::Number(_))))
    });
    let Some(numeric) = numeric else {
        return Vec::new();
    };
    let labels: Vec<&String> = columns
        .iter()
        .filter(|column| {
            report
                .rows
                .iter()
                .all(|row| matches!(row.get(column), Some(Value::String(_)) | None))
        })
        .take(2)
        .collect();
    let rows: Vec<_> = report.rows.iter().take(MAX_BARS).collect();
    let categories = rows
        .iter()
        .enumerate()
        .map(|(at, row)| {
            let parts: Vec<&str> = labels
                .iter()
                .filter_map(|column| row.get(column).and_then(Value::as_str))
                .collect();
            if parts.is_empty() {
                format!("row {}", at + 1)
            } else {
                parts.join(" ")
            }
        })
        .collect();
    let mut series = vec![BarSeries {
        name: format!("pageframe: {numeric}"),
        values: rows.iter().map(|row| number(row, numeric)).collect(),
        ranges: vec![None; rows.len()],
        reference: false,
    }];
    if columns.iter().any(|column| column == "reference") {
        series.push(BarSeries {
            name: "document (reference)".into(),
            values: rows.iter().map(|row| number(row, "reference")).collect(),
            ranges: vec![None; rows.len()],
            reference: true,
        });
    }
    vec![Plot {
        name: numeric.replace('_', "-"),
        title: format!("{}: {numeric}", report.experiment),
        caption: format!("{numeric} per row of the table below; pale: the source document's figure where the row has one (a generic plot: this experiment has no plot of its own yet)."),
        value_label: numeric.clone(),
        kind: PlotKind::Bars { categories, series },
    }]
}
