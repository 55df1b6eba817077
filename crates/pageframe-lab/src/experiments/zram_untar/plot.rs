//! Plot of `zram-untar`: the overhead ratio after every step of every round,
//! one line per allocator (and afmalloc's real overhead), beside the
//! afmalloc document's figures (dashed, in the rounds it prints).

use super::rows::ReplayRow;
use crate::plots::{Plot, PlotKind, Series};
use crate::report::Report;

/// Steps per round: untar and five removals.
const STEPS_PER_ROUND: f64 = 6.0;

/// The x position of an untar row: steps since the start, 1-based. The
/// removals follow it one by one (rows are written in step order).
fn untar_position(row: &ReplayRow) -> Option<f64> {
    let round = f64::from(row.sizes.round);
    (row.sizes.step == "untar").then_some((round - 1.0) * STEPS_PER_ROUND + 1.0)
}

/// A column of a row, where it has a value.
type Column = fn(&ReplayRow) -> Option<f64>;

/// Rows of one allocator with their x positions, compact rows left out.
fn points(rows: &[ReplayRow], allocator: &str, column: Column) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut x = None;
    for row in rows.iter().filter(|row| row.sizes.allocator == allocator) {
        x = match untar_position(row) {
            Some(start) => Some(start),
            None if row.sizes.step == "compact" => continue,
            None => x.map(|x: f64| x + 1.0),
        };
        if let (Some(x), Some(y)) = (x, column(row)) {
            out.push((x, y));
        }
    }
    out
}

/// The plots of a `zram-untar` report (every row reads as a [`ReplayRow`]).
pub fn plots(report: &Report) -> Vec<Plot> {
    let rows: Vec<ReplayRow> = report.results_as().collect();
    let overhead: Column = |row| Some(row.sizes.overhead_ratio);
    let real_overhead: Column = |row| row.sizes.real_overhead_ratio;
    let kernel_overhead: Column = |row| row.kernel_overhead_ratio;
    let reference_overhead: Column = |row| row.reference.reference_overhead_ratio;
    let reference_real_overhead: Column = |row| row.reference.reference_real_overhead_ratio;
    let mut allocators: Vec<&str> = Vec::new();
    for row in &rows {
        if !allocators.contains(&row.sizes.allocator.as_str()) {
            allocators.push(&row.sizes.allocator);
        }
    }
    let mut series = Vec::new();
    for (colour, allocator) in allocators.iter().enumerate() {
        series.push(Series {
            name: format!("{allocator}: overhead"),
            points: points(&rows, allocator, overhead),
            reference: false,
            colour: Some(colour),
        });
        let real = points(&rows, allocator, real_overhead);
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
        let kernel = points(&rows, first, kernel_overhead);
        if !kernel.is_empty() {
            series.push(Series {
                name: "this kernel's zram (zsmalloc): overhead".into(),
                points: kernel,
                reference: false,
                colour: Some(allocators.len() + 2),
            });
        }
        // The kernel's band over `kernel_runs`, when measured.
        let band_min: Column = |row| row.kernel_band.as_ref().map(|band| band.kernel_band_min);
        let band_max: Column = |row| row.kernel_band.as_ref().map(|band| band.kernel_band_max);
        for (name, column) in [("min", band_min), ("max", band_max)] {
            let band = points(&rows, first, column);
            if !band.is_empty() {
                series.push(Series {
                    name: format!("this kernel's zram over kernel_runs: {name}"),
                    points: band,
                    reference: false,
                    colour: Some(allocators.len() + 3),
                });
            }
        }
    }
    // The document's figures, once per allocator kind.
    let zsmalloc = allocators.iter().find(|name| name.starts_with("zsmalloc"));
    if let Some(name) = zsmalloc {
        series.push(Series {
            name: "document: zsmalloc overhead".into(),
            points: points(&rows, name, reference_overhead),
            reference: true,
            colour: Some(0),
        });
    }
    if allocators.contains(&"afmalloc") {
        let colour = allocators.iter().position(|name| *name == "afmalloc");
        series.push(Series {
            name: "document: afmalloc overhead".into(),
            points: points(&rows, "afmalloc", reference_overhead),
            reference: true,
            colour,
        });
        series.push(Series {
            name: "document: afmalloc real overhead".into(),
            points: points(&rows, "afmalloc", reference_real_overhead),
            reference: true,
            colour: Some(allocators.len() + 1),
        });
    }
    let rounds = rows
        .iter()
        .map(|row| f64::from(row.sizes.round))
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
        caption: "(used − compressed) / compressed after each step: untar, then rm drivers, arch, fs, sound, include, round after round; afmalloc's real overhead counts only its metadata and chunk rounding; with a block trace, the real kernel's zram measured in the same run, and with kernel_runs the least and greatest of the kernel's own runs. Dashed: the afmalloc document's figures where it prints them.".into(),
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
    use super::super::rows::{ReferenceRatios, Sizes};
    use super::*;
    use crate::report::Row;

    fn step(round: u32, step: &str, overhead_ratio: f64, real: Option<f64>) -> Row {
        let sizes = Sizes {
            allocator: "afmalloc".into(),
            round,
            step: step.into(),
            orig_size: 0.0,
            compr_size: 0.0,
            used_size: 0.0,
            overhead: 0.0,
            overhead_ratio,
            real_overhead: real,
            real_overhead_ratio: real,
        };
        Row::from_typed(&ReplayRow {
            sizes,
            kernel_sizes: None,
            kernel_overhead_ratio: None,
            kernel_replay_overhead_ratio: None,
            kernel_band: None,
            reference: ReferenceRatios {
                reference_overhead_ratio: real.map(|_| 4.0),
                reference_real_overhead_ratio: None,
            },
        })
        .unwrap()
    }

    /// A quick-scale report of `rows`.
    fn report_of(rows: Vec<Row>) -> Report {
        Report {
            experiment: "zram-untar".into(),
            seed: 1,
            scale: "quick".into(),
            rows,
            notes: Vec::new(),
        }
    }

    #[test]
    fn steps_are_placed_round_after_round() {
        let mut rows = Vec::new();
        for round in 1..=2 {
            for (at, name) in ["untar", "rm drivers", "rm arch"].iter().enumerate() {
                rows.push(step(round, name, at as f64, Some(3.5)));
            }
        }
        rows.push(step(2, "compact", 1.0, None));
        let plots = plots(&report_of(rows));
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
        assert!(!series.iter().any(|line| line.name.contains("kernel_runs")));
    }

    #[test]
    fn the_kernel_band_is_drawn_when_measured() {
        let mut rows = Vec::new();
        for (at, name) in ["untar", "rm drivers"].iter().enumerate() {
            let mut row: ReplayRow = step(1, name, at as f64, None).to_typed().unwrap();
            row.kernel_band = Some(super::super::rows::KernelBandColumns {
                kernel_band_min: 1.0 + at as f64,
                kernel_band_max: 3.0 + at as f64,
                kernel_band_mean: 2.0 + at as f64,
                in_kernel_band: true,
                kernel_replay_in_kernel_band: None,
            });
            rows.push(Row::from_typed(&row).unwrap());
        }
        let plots = plots(&report_of(rows));
        let PlotKind::Lines { series, .. } = &plots[0].kind else {
            panic!("lines expected");
        };
        let band = |name: &str| {
            series
                .iter()
                .find(|line| line.name.ends_with(name))
                .map(|line| line.points.clone())
        };
        assert_eq!(band("kernel_runs: min"), Some(vec![(1.0, 1.0), (2.0, 2.0)]));
        assert_eq!(band("kernel_runs: max"), Some(vec![(1.0, 3.0), (2.0, 4.0)]));
    }
}
