//! Plots of `shuffle-cache`: the memory-side-cache conflict rate per case
//! beside shuffle-free-memory.txt's 8% / 21% / 11%, the two-instance
//! STREAM speedup beside its 3x, and from the report's `runs` series the
//! conflict rate per benchmark run without and with shuffle.

use super::columns;
use super::RUNS;
use crate::plots::{number, text, BarSeries, Plot, PlotKind, Series};
use crate::report::{Report, Row};

/// The plots of a `shuffle-cache` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let heap: Vec<&Row> = report
        .results()
        .filter(|row| number(row, columns::CONFLICT_RATE).is_some())
        .filter(|row| {
            !text(row, columns::CASE)
                .unwrap_or("")
                .starts_with("two-instances")
        })
        .collect();
    let streams: Vec<&Row> = report
        .results()
        .filter(|row| number(row, columns::SPEEDUP).is_some())
        .collect();
    let mut plots = vec![
        Plot {
            name: "conflict-rate".into(),
            title: "Memory-side cache conflict rate".into(),
            caption: "Conflict misses per access of a heap 3x the cache, fresh (run 1) and aged (the second half of the runs), without and with shuffle (whiskers: min and max over runs and seeds); pale: shuffle-free-memory.txt.".into(),
            value_label: "conflict misses / accesses".into(),
            kind: bars(&heap, columns::CONFLICT_RATE, Some((columns::CONFLICT_MIN, columns::CONFLICT_MAX))),
        },
        Plot {
            name: "two-instances".into(),
            title: "Two STREAM instances on cache-sized nodes".into(),
            caption: "Speedup of two STREAM instances on nodes 0 and 1 over the unshuffled run; pale: the document's 3x with shuffle.".into(),
            value_label: "speedup over no shuffle".into(),
            kind: bars(&streams, columns::SPEEDUP, None),
        },
    ];
    plots.extend(per_run(report));
    plots
}

/// The palette index of each line: ours and the document's figure for the
/// same setting share one.
const WITHOUT_SHUFFLE: usize = 0;
const WITH_SHUFFLE: usize = 1;
const FRESH: usize = 7;

/// Conflict rate per benchmark run, one line per shuffle setting, with the
/// document's fresh, aged and aged+shuffle figures as dashed levels.
fn per_run(report: &Report) -> Option<Plot> {
    let line = |shuffle: bool| -> Vec<(f64, f64)> {
        report
            .series(RUNS)
            .filter(|row| {
                row.get(columns::SHUFFLE)
                    .and_then(serde_json::Value::as_bool)
                    == Some(shuffle)
            })
            .filter_map(|row| {
                Some((
                    number(row, columns::RUN)?,
                    number(row, columns::CONFLICT_RATE)?,
                ))
            })
            .collect()
    };
    let (without, with) = (line(false), line(true));
    let xs = || without.iter().chain(&with).map(|point| point.0);
    let start = xs().reduce(f64::min)?;
    let end = xs().reduce(f64::max)?;
    let mut series = vec![
        Series {
            name: "without shuffle".into(),
            points: without,
            reference: false,
            colour: Some(WITHOUT_SHUFFLE),
        },
        Series {
            name: "with shuffle".into(),
            points: with,
            reference: false,
            colour: Some(WITH_SHUFFLE),
        },
    ];
    for (case, label, colour) in [
        ("fresh", "fresh", FRESH),
        ("aged", "aged", WITHOUT_SHUFFLE),
        ("aged+shuffle", "aged, shuffled", WITH_SHUFFLE),
    ] {
        let reference = report
            .results()
            .find(|row| text(row, columns::CASE) == Some(case))
            .and_then(|row| number(row, columns::REFERENCE));
        if let Some(level) = reference {
            series.push(Series {
                name: format!("document: {label} {:.0}%", level * 100.0),
                points: vec![(start, level), (end, level)],
                reference: true,
                colour: Some(colour),
            });
        }
    }
    Some(Plot {
        name: "conflict-per-run".into(),
        title: "Conflict rate per benchmark run".into(),
        caption: "Conflict misses per access of a heap 3x the cache at each run of the benchmark on a machine that also reads files through the page cache (mean over seeds), without and with shuffle. Dashed: shuffle-free-memory.txt's 8% fresh, 21% after aging and 11% after aging with shuffle.".into(),
        value_label: "conflict misses / accesses".into(),
        kind: PlotKind::Lines {
            x_label: "benchmark run".into(),
            log_x: false,
            log_y: false,
            series,
            markers: Vec::new(),
        },
    })
}

fn bars(rows: &[&Row], column: &str, range: Option<(&str, &str)>) -> PlotKind {
    PlotKind::Bars {
        categories: rows
            .iter()
            .map(|row| text(row, columns::CASE).unwrap_or("?").to_string())
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
                values: rows
                    .iter()
                    .map(|row| number(row, columns::REFERENCE))
                    .collect(),
                ranges: vec![None; rows.len()],
                reference: true,
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SERIES;

    fn report() -> Report {
        let mut rows = vec![
            Row::new()
                .with(columns::CASE, "fresh")
                .with(columns::CONFLICT_RATE, 0.08)
                .with(columns::REFERENCE, 0.08),
            Row::new()
                .with(columns::CASE, "aged")
                .with(columns::CONFLICT_RATE, 0.2)
                .with(columns::REFERENCE, 0.21),
            Row::new()
                .with(columns::CASE, "aged+shuffle")
                .with(columns::CONFLICT_RATE, 0.1)
                .with(columns::REFERENCE, 0.11),
        ];
        for shuffle in [false, true] {
            for run in [1, 2, 3] {
                rows.push(
                    Row::new()
                        .with(SERIES, RUNS)
                        .with(columns::RUN, run)
                        .with(columns::SHUFFLE, shuffle)
                        .with(columns::CONFLICT_RATE, 0.1),
                );
            }
        }
        Report {
            experiment: "shuffle-cache".into(),
            seed: 1,
            scale: "quick".into(),
            rows,
            notes: Vec::new(),
        }
    }

    /// The bars show the cases only; the series becomes two lines over
    /// the runs with the document's three figures as levels.
    #[test]
    fn the_runs_series_is_a_line_plot_and_not_a_bar() {
        let plots = plots(&report());
        let PlotKind::Bars { categories, .. } = &plots[0].kind else {
            panic!("bars expected");
        };
        assert_eq!(categories, &["fresh", "aged", "aged+shuffle"]);
        let aging = plots
            .iter()
            .find(|plot| plot.name == "conflict-per-run")
            .unwrap();
        let PlotKind::Lines { series, .. } = &aging.kind else {
            panic!("lines expected");
        };
        assert_eq!(series.len(), 5);
        assert_eq!(series[0].points, vec![(1.0, 0.1), (2.0, 0.1), (3.0, 0.1)]);
        assert_eq!(series[1].points.len(), 3);
        assert!(series[2..].iter().all(|line| line.reference));
        assert_eq!(series[3].points, vec![(1.0, 0.21), (3.0, 0.21)]);
    }
}
