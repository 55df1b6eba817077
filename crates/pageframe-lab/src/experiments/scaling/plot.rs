//! Plot of `scaling`: pages per second against threads, one line per
//! access pattern.

use super::columns;
use crate::plots::{number, text, Plot, PlotKind, Series};
use crate::report::Report;

/// The plots of a `scaling` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let mut patterns: Vec<&str> = Vec::new();
    for row in &report.rows {
        if let Some(pattern) = text(row, columns::PATTERN) {
            if !patterns.contains(&pattern) {
                patterns.push(pattern);
            }
        }
    }
    let series = patterns
        .iter()
        .map(|pattern| Series {
            name: (*pattern).to_string(),
            points: report
                .rows
                .iter()
                .filter(|row| text(row, columns::PATTERN) == Some(pattern))
                .filter_map(|row| {
                    Some((
                        number(row, columns::THREADS)?,
                        number(row, columns::MPAGES_PER_S)?,
                    ))
                })
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
