//! Plot of `zram-untar`: the overhead ratio after every step of every round,
//! one line per allocator (and afmalloc's real overhead), beside the
//! afmalloc document's figures (dashed, in the rounds it prints).

use super::columns;
use crate::plots::{number, text, Plot, PlotKind, Series};
use crate::report::{Report, Row};

/// Steps per round: untar and five removals.
const STEPS_PER_ROUND: f64 = 6.0;

/// The x position of an untar row: steps since the start, 1-based. The
/// removals follow it one by one (rows are written in step order).
fn untar_position(row: &Row) -> Option<f64> {
    let round = number(row, columns::ROUND)?;
    (text(row, columns::STEP)? == "untar").then_some((round - 1.0) * STEPS_PER_ROUND + 1.0)
}

/// Rows of one allocator with their x positions, compact rows left out.
fn points(report: &Report, allocator: &str, column: &str) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut x = None;
    for row in report
        .rows
        .iter()
        .filter(|row| text(row, columns::ALLOCATOR) == Some(allocator))
    {
        x = match untar_position(row) {
            Some(start) => Some(start),
            None if text(row, columns::STEP) == Some("compact") => continue,
            None => x.map(|x: f64| x + 1.0),
        };
        if let (Some(x), Some(y)) = (x, number(row, column)) {
            out.push((x, y));
        }
    }
    out
}

/// The plots of a `zram-untar` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let mut allocators: Vec<&str> = Vec::new();
    for row in &report.rows {
        if let Some(allocator) = text(row, columns::ALLOCATOR) {
            if !allocators.contains(&allocator) {
                allocators.push(allocator);
            }
        }
    }
    let mut series = Vec::new();
    for (colour, allocator) in allocators.iter().enumerate() {
        series.push(Series {
            name: format!("{allocator}: overhead"),
            points: points(report, allocator, columns::OVERHEAD_RATIO),
            reference: false,
            colour: Some(colour),
        });
        let real = points(report, allocator, columns::REAL_OVERHEAD_RATIO);
        if !real.is_empty() {
            series.push(Series {
                name: format!("{allocator}: real overhead"),
                points: real,
                reference: false,
                colour: Some(allocators.len() + 1),
            });
        }
    }
    // The real kernel's zram of the same run (a trace workload), once.
    if let Some(first) = allocators.first() {
        let kernel = points(report, first, columns::KERNEL_OVERHEAD_RATIO);
        if !kernel.is_empty() {
            series.push(Series {
                name: "this kernel's zram (zsmalloc): overhead".into(),
                points: kernel,
                reference: false,
                colour: Some(allocators.len() + 2),
            });
        }
    }
    // The document's figures, once per allocator kind.
    let zsmalloc = allocators.iter().find(|name| name.starts_with("zsmalloc"));
    if let Some(name) = zsmalloc {
        series.push(Series {
            name: "document: zsmalloc overhead".into(),
            points: points(report, name, columns::REFERENCE_OVERHEAD_RATIO),
            reference: true,
            colour: Some(0),
        });
    }
    if allocators.contains(&"afmalloc") {
        let colour = allocators.iter().position(|name| *name == "afmalloc");
        series.push(Series {
            name: "document: afmalloc overhead".into(),
            points: points(report, "afmalloc", columns::REFERENCE_OVERHEAD_RATIO),
            reference: true,
            colour,
        });
        series.push(Series {
            name: "document: afmalloc real overhead".into(),
            points: points(report, "afmalloc", columns::REFERENCE_REAL_OVERHEAD_RATIO),
            reference: true,
            colour: Some(allocators.len() + 1),
        });
    }
    let rounds = report
        .rows
        .iter()
        .filter_map(|row| number(row, columns::ROUND))
        .fold(0.0, f64::max);
    let markers = (1..=rounds as u32)
        .map(|round| {
            (
                f64::from(round - 1) * STEPS_PER_ROUND + 1.0,
                format!("untar {round}"),
            )
        })
        .collect();
    vec![Plot {
        name: "overhead-ratio".into(),
        title: "Overhead ratio per step and round, per allocator".into(),
        caption: "(used − compressed) / compressed after each step: untar, then rm drivers, arch, fs, sound, include, round after round; afmalloc's real overhead counts only its metadata and chunk rounding; with a block trace, the real kernel's zram measured in the same run. Dashed: the afmalloc document's figures where it prints them.".into(),
        value_label: "overhead (% of compressed size)".into(),
        kind: PlotKind::Lines {
            x_label: "step (6 per round)".into(),
            log_x: false,
            log_y: false,
            series,
            markers,
        },
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_placed_round_after_round() {
        let mut rows = Vec::new();
        for round in 1..=2 {
            for (at, step) in ["untar", "rm drivers", "rm arch"].iter().enumerate() {
                rows.push(
                    Row::new()
                        .with(columns::ALLOCATOR, "afmalloc")
                        .with(columns::ROUND, round)
                        .with(columns::STEP, *step)
                        .with(columns::OVERHEAD_RATIO, at as f64)
                        .with(columns::REAL_OVERHEAD_RATIO, 3.5)
                        .with(columns::REFERENCE_OVERHEAD_RATIO, 4.0),
                );
            }
        }
        rows.push(
            Row::new()
                .with(columns::ALLOCATOR, "afmalloc")
                .with(columns::ROUND, 2)
                .with(columns::STEP, "compact")
                .with(columns::OVERHEAD_RATIO, 1.0),
        );
        let report = Report {
            experiment: "zram-untar".into(),
            seed: 1,
            scale: "quick".into(),
            rows,
            notes: Vec::new(),
        };
        let plots = plots(&report);
        let PlotKind::Lines {
            series, markers, ..
        } = &plots[0].kind
        else {
            panic!("lines expected");
        };
        let xs: Vec<f64> = series[0].points.iter().map(|point| point.0).collect();
        assert_eq!(xs, [1.0, 2.0, 3.0, 7.0, 8.0, 9.0]);
        assert_eq!(markers.len(), 2);
        assert!(series
            .iter()
            .any(|line| line.reference && !line.points.is_empty()));
    }
}
