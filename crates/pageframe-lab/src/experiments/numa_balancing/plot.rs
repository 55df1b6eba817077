//! Plots of `numa-balancing`: the pmbench score change after the memory
//! eater exits, per policy, beside numa-balancing-bound-nodes.txt's +17.5%;
//! and from the report's `timeline` series, the score over simulated time
//! and the processes' pages per node over time, with the eater's exit
//! marked.

use super::rows::{RunRow, TimelineRow};
use super::TIMELINE;
use crate::plots::{BarSeries, Plot, PlotKind, Series};
use crate::report::Report;

/// The plots of a `numa-balancing` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let mut plots = vec![improvement(report)];
    plots.extend(score_over_time(report));
    plots.extend(pages_over_time(report));
    plots
}

fn improvement(report: &Report) -> Plot {
    let rows: Vec<RunRow> = report.results_as().collect();
    Plot {
        name: "improvement".into(),
        title: "pmbench score after the eater exits".into(),
        caption: "Change of the summed pmbench score from before the memory eater on node 3 exits to after, per policy and kernel.numa_balancing; pale: the document's +17.5% for MPOL_F_NUMA_BALANCING.".into(),
        value_label: "score change (%)".into(),
        kind: PlotKind::Bars {
            categories: rows.iter().map(|row| row.run.label()).collect(),
            series: vec![
                BarSeries {
                    name: "pageframe".into(),
                    values: rows.iter().map(|row| Some(row.improvement * 100.0)).collect(),
                    ranges: vec![None; rows.len()],
                    reference: false,
                },
                BarSeries {
                    name: "document".into(),
                    values: rows
                        .iter()
                        .map(|row| {
                            row.run
                                .is_balanced()
                                .then_some(row.reference_improvement * 100.0)
                        })
                        .collect(),
                    ranges: vec![None; rows.len()],
                    reference: true,
                },
            ],
        },
    }
}

/// The timeline's runs, in row order: (label, its samples).
fn runs(report: &Report) -> Vec<(String, Vec<TimelineRow>)> {
    let mut runs: Vec<(String, Vec<TimelineRow>)> = Vec::new();
    for row in report.series_as::<TimelineRow>(TIMELINE) {
        let label = row.run.label();
        match runs.iter_mut().find(|(known, _)| *known == label) {
            Some((_, samples)) => samples.push(row),
            None => runs.push((label, vec![row])),
        }
    }
    runs
}

/// The eater's exit as a marker, from the result rows.
fn exit_marker(report: &Report) -> Vec<(f64, String)> {
    report
        .results_as::<RunRow>()
        .next()
        .map(|row| vec![(row.eater_exit_s, " eater exits".to_string())])
        .unwrap_or_default()
}

fn points(samples: &[TimelineRow], value: impl Fn(&TimelineRow) -> Option<f64>) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|row| Some((row.t_s, value(row)?)))
        .collect()
}

fn score_over_time(report: &Report) -> Option<Plot> {
    let runs = runs(report);
    if runs.is_empty() {
        return None;
    }
    let mut series: Vec<Series> = runs
        .iter()
        .enumerate()
        .map(|(at, (label, samples))| Series {
            name: label.clone(),
            points: points(samples, |row| Some(row.score)),
            reference: false,
            colour: Some(at),
        })
        .collect();
    // The document's +17.5%, applied to our balanced run's score before
    // the exit, drawn over the time after it.
    let markers = exit_marker(report);
    let balanced = report
        .results_as::<RunRow>()
        .find(|row| row.run.is_balanced())
        .map(|row| (row.score_before, row.reference_improvement));
    let balanced_colour = runs
        .iter()
        .position(|(_, samples)| samples.first().is_some_and(|row| row.run.is_balanced()));
    if let (Some((before, reference)), Some((exit, _)), Some(colour)) =
        (balanced, markers.first(), balanced_colour)
    {
        let end = series
            .iter()
            .flat_map(|line| line.points.iter().map(|point| point.0))
            .fold(*exit, f64::max);
        let level = before * (1.0 + reference);
        series.push(Series {
            name: format!("document: {:+.1}% after the exit", reference * 100.0),
            points: vec![(*exit, level), (end, level)],
            reference: true,
            colour: Some(colour),
        });
    }
    Some(Plot {
        name: "score-over-time".into(),
        title: "pmbench score over simulated time".into(),
        caption: "Summed pmbench score of all processes in each sample window of simulated time, per run; the dashed vertical line is the memory eater's exit (runs where nothing moves draw one line over another). Dashed: the document's +17.5% over our balanced run's score before the exit.".into(),
        value_label: "score (M accesses / simulated s)".into(),
        kind: PlotKind::Lines {
            x_label: "simulated time (s)".into(),
            log_x: false,
            log_y: false,
            series,
            markers,
        },
    })
}

fn pages_over_time(report: &Report) -> Option<Plot> {
    let runs = runs(report);
    // The balanced run is where pages move; the plain bind run is its
    // baseline (dashed): what stays where first touch put it.
    let balanced = runs
        .iter()
        .find(|(_, samples)| samples.first().is_some_and(|row| row.run.is_balanced()))?;
    let baseline = runs
        .iter()
        .find(|(_, samples)| samples.first().map(|row| row.run.policy.as_str()) == Some("bind"));
    let nr_nodes = balanced.1.first().map_or(0, |row| row.pages_node.len());
    let nodes: Vec<usize> = (0..nr_nodes)
        .filter(|node| {
            balanced
                .1
                .iter()
                .any(|row| row.pages_node.get(*node).is_some_and(|pages| *pages > 0))
        })
        .collect();
    let pages_of =
        |node: usize| move |row: &TimelineRow| row.pages_node.get(node).map(|pages| *pages as f64);
    let mut series = Vec::new();
    for (at, node) in nodes.iter().enumerate() {
        series.push(Series {
            name: format!("node {node}, {}", balanced.0),
            points: points(&balanced.1, pages_of(*node)),
            reference: false,
            colour: Some(at),
        });
        if let Some((label, samples)) = baseline {
            series.push(Series {
                name: format!("node {node}, {label}"),
                points: points(samples, pages_of(*node)),
                reference: true,
                colour: Some(at),
            });
        }
    }
    Some(Plot {
        name: "pages-per-node".into(),
        title: "pmbench pages per node over simulated time".into(),
        caption: "Pages of all pmbench processes on each node (nodes holding none are left out), at the end of each sample window: solid with MPOL_F_NUMA_BALANCING, dashed with plain MPOL_BIND; the dashed vertical line is the memory eater's exit.".into(),
        value_label: "pages (4 KiB)".into(),
        kind: PlotKind::Lines {
            x_label: "simulated time (s)".into(),
            log_x: false,
            log_y: false,
            series,
            markers: exit_marker(report),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::super::NumaBalancing;
    use super::*;
    use crate::experiments::{Experiment, RunOptions, Scale};
    use crate::params::ConfigFile;

    #[test]
    fn a_small_run_draws_the_bars_and_both_time_series() {
        let params = ConfigFile::parse(
            "small.toml",
            "[numa-balancing]\nnode_mib = 128\ncpus_per_node = 2\nprocesses = 2\nmap_mib = 24\neater_mib = 100\nscan_size_mb = 8\neater_exit_s = 10\nduration_s = 40\ntick_ms = 40\nsample_s = 4\n",
            &["numa-balancing"],
        )
        .unwrap()
        .params("numa-balancing", &NumaBalancing.params(Scale::Quick))
        .unwrap();
        let report = NumaBalancing
            .run(&RunOptions::new(Scale::Quick, 1), &params)
            .unwrap();
        let plots = plots(&report);
        let names: Vec<&str> = plots.iter().map(|plot| plot.name.as_str()).collect();
        assert_eq!(names, ["improvement", "score-over-time", "pages-per-node"]);
        let PlotKind::Bars { categories, .. } = &plots[0].kind else {
            panic!("bars expected");
        };
        assert_eq!(categories.len(), 3, "result rows only");
        for plot in &plots[1..] {
            let PlotKind::Lines {
                series, markers, ..
            } = &plot.kind
            else {
                panic!("lines expected");
            };
            assert_eq!(markers.len(), 1);
            assert_eq!(markers[0].0, 10.0);
            assert!(
                series.iter().all(|line| !line.points.is_empty()),
                "{}",
                plot.name
            );
        }
        let PlotKind::Lines { series, .. } = &plots[2].kind else {
            unreachable!()
        };
        let names: Vec<&str> = series.iter().map(|line| line.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "node 1, bind+numa_balancing, sysctl=1",
                "node 1, bind, sysctl=1",
                "node 3, bind+numa_balancing, sysctl=1",
                "node 3, bind, sysctl=1"
            ]
        );
        for plot in &plots {
            assert!(crate::plots::render::to_svg(plot)
                .unwrap()
                .starts_with("<svg"));
        }
    }
}
