//! Plot of `scaling`: pages per second against threads, one line per
//! access pattern.

use super::rows::ThroughputRow;
use crate::plots::{Plot, PlotKind, Series};
use crate::report::Report;

/// The plots of a `scaling` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let rows: Vec<ThroughputRow> = report.results_as().collect();
    let mut patterns: Vec<&str> = Vec::new();
    for row in &rows {
        if !patterns.contains(&row.pattern.as_str()) {
            patterns.push(&row.pattern);
        }
    }
    let series = patterns
        .iter()
        .map(|pattern| Series {
            name: (*pattern).to_string(),
            points: rows
                .iter()
                .filter(|row| row.pattern == *pattern)
                .map(|row| (row.threads as f64, row.mpages_per_s))
                .collect(),
            reference: false,
            colour: None,
        })
        .collect();
    vec![Plot {
        name: "throughput".into(),
        title: "Order-0 alloc+free throughput vs threads".into(),
        caption: "Million pages allocated and freed per second, all threads together, with each thread on its own CPU id; past the machine's cores threads share them.".into(),
        value_label: "million pages per second".into(),
        kind: PlotKind::Lines {
            x_label: "threads".into(),
            log_x: false,
            log_y: false,
            series,
            markers: Vec::new(),
        },
    }]
}
