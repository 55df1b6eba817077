//! Plots of `shuffle-cache`: the memory-side-cache conflict rate per case
//! beside shuffle-free-memory.txt's 8% / 21% / 11%, the two-instance
//! STREAM speedup beside its 3x, and from the report's `runs` series the
//! conflict rate per benchmark run without and with shuffle.

use super::rows::{HeapCaseRow, RunRow, StreamRow};
use super::RUNS;
use crate::plots::{BarSeries, Plot, PlotKind, Series};
use crate::report::Report;

/// The plots of a `shuffle-cache` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let heap: Vec<Bar> = report
        .results_as::<HeapCaseRow>()
        .map(|row| Bar {
            case: row.case,
            value: row.conflict.conflict_rate,
            range: Some((row.conflict.conflict_min, row.conflict.conflict_max)),
            reference: row.reference,
        })
        .collect();
    let streams: Vec<Bar> = report
        .results_as::<StreamRow>()
        .map(|row| Bar {
            case: row.case,
            value: row.speedup,
            range: None,
            reference: row.reference,
        })
        .collect();
    let mut plots = vec![
        Plot {
            name: "conflict-rate".into(),
            title: "Memory-side cache conflict rate".into(),
            caption: "Conflict misses per access of a heap 3x the cache, fresh (run 1) and aged (the second half of the runs), without and with shuffle (whiskers: min and max over runs and seeds); pale: shuffle-free-memory.txt.".into(),
            value_label: "conflict misses / accesses".into(),
            kind: bars(&heap),
        },
        Plot {
            name: "two-instances".into(),
            title: "Two STREAM instances on cache-sized nodes".into(),
            caption: "Speedup of two STREAM instances on nodes 0 and 1 over the unshuffled run; pale: the document's 3x with shuffle.".into(),
            value_label: "speedup over no shuffle".into(),
            kind: bars(&streams),
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
            .series_as::<RunRow>(RUNS)
            .filter(|row| row.shuffle == shuffle)
            .map(|row| (row.run as f64, row.conflict.conflict_rate))
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
            .results_as::<HeapCaseRow>()
            .find(|row| row.case == case)
            .and_then(|row| row.reference);
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

/// One bar: a case's value, its range and the document's figure.
struct Bar {
    case: String,
    value: f64,
    range: Option<(f64, f64)>,
    reference: Option<f64>,
}

fn bars(bars: &[Bar]) -> PlotKind {
    PlotKind::Bars {
        categories: bars.iter().map(|bar| bar.case.clone()).collect(),
        series: vec![
            BarSeries {
                name: "pageframe".into(),
                values: bars.iter().map(|bar| Some(bar.value)).collect(),
                ranges: bars.iter().map(|bar| bar.range).collect(),
                reference: false,
            },
            BarSeries {
                name: "document".into(),
                values: bars.iter().map(|bar| bar.reference).collect(),
                ranges: vec![None; bars.len()],
                reference: true,
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::super::rows::Conflict;
    use super::*;
    use crate::report::Row;

    fn report() -> Report {
        let conflict = |rate: f64| Conflict {
            conflict_rate: rate,
            conflict_min: rate,
            conflict_max: rate,
        };
        let case = |name: &str, rate: f64, reference: f64| {
            Row::from_typed(&HeapCaseRow {
                case: name.into(),
                conflict: conflict(rate),
                colour_sharers: 2.0,
                reference: Some(reference),
            })
            .unwrap()
        };
        let mut rows = vec![
            case("fresh", 0.08, 0.08),
            case("aged", 0.2, 0.21),
            case("aged+shuffle", 0.1, 0.11),
        ];
        for shuffle in [false, true] {
            for run in [1, 2, 3] {
                let sample = RunRow {
                    run,
                    shuffle,
                    conflict: conflict(0.1),
                    colour_sharers: 2.0,
                };
                rows.push(Row::series_sample(RUNS, &sample).unwrap());
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
