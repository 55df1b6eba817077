//! Gathering a sweep's point files into its table and report page.
//!
//! The table (`results.csv`) has one line per result row of every point
//! (series samples left out), prefixed by the point's columns — seed, shape,
//! swept parameters, status, error, seconds — and one line with empty result
//! columns for a failed point. The page (`index.html`) has, for each swept
//! parameter (and the shape), one bar plot per result metric: the mean over
//! the points with that value (the seeds and the other parameters' values),
//! with whiskers from the smallest to the largest. Without a swept parameter
//! the plots show the mean and spread over the seeds.

use super::run::{stored, PointRecord};
use super::spec::Sweep;
use crate::files;
use crate::plots::{render, BarSeries, Plot, PlotKind};
use crate::report::{Format, Report, Row, SERIES};
use crate::site;
use serde_json::Value;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Metrics plotted per swept parameter, at most (the table has them all).
const MAX_METRICS: usize = 12;
/// Row labels (bars per category), at most.
const MAX_LABELS: usize = 8;

/// What [`gather`] wrote and found.
#[derive(Clone, Debug, PartialEq)]
pub struct Gathered {
    /// The CSV table.
    pub table: PathBuf,
    /// The report page.
    pub page: PathBuf,
    /// Points with an `ok` record.
    pub ok: usize,
    /// Points with an `error` record.
    pub failed: usize,
    /// Points without a record yet.
    pub missing: usize,
}

/// The point columns every table line starts with.
fn point_columns(sweep: &Sweep) -> Vec<String> {
    let mut columns = vec!["seed".to_string()];
    if !sweep.shapes.is_empty() {
        columns.push("shape".into());
    }
    columns.extend(sweep.swept.iter().cloned());
    columns.extend(["status", "error", "seconds"].map(String::from));
    columns
}

/// The most lines a sweep's table may have: its rows are held in memory
/// (tens of times the bytes of the point files), and the point files are
/// input (a results directory whose 8 files of 7 MB held 1.6 M rows took
/// 2.5 GB to gather). Real points have tens to hundreds of rows each.
pub const MAX_TABLE_ROWS: usize = 1 << 20;

/// The table of the sweep's stored records, as a report (its rows are the
/// table's lines), and the counts of ok, failed and missing points; an
/// error when the records hold more than [`MAX_TABLE_ROWS`] rows.
pub fn table(sweep: &Sweep, dir: &Path) -> Result<(Report, [usize; 3]), String> {
    table_within(sweep, dir, MAX_TABLE_ROWS)
}

/// [`table`] with at most `max_rows` rows.
fn table_within(
    sweep: &Sweep,
    dir: &Path,
    max_rows: usize,
) -> Result<(Report, [usize; 3]), String> {
    let mut rows = Vec::new();
    let mut counts = [0usize; 3];
    for point in &sweep.points {
        let Some(record) = stored(dir, point) else {
            counts[2] += 1;
            continue;
        };
        let mut base = Row::new().with("seed", point.seed);
        if let Some(shape) = &point.shape {
            base = base.with("shape", shape.as_str());
        }
        for (key, value) in &point.swept {
            base = base.with(key, value.as_str());
        }
        let PointRecord {
            outcome, seconds, ..
        } = record;
        match outcome {
            Ok(report) => {
                counts[0] += 1;
                let base = base
                    .with("status", "ok")
                    .with("error", "")
                    .with_f64("seconds", seconds, 3);
                let results = report.get("rows").and_then(Value::as_array);
                for result in results.into_iter().flatten() {
                    let Some(cells) = result.as_object() else {
                        continue;
                    };
                    if cells.get(SERIES).is_some_and(Value::is_string) {
                        continue;
                    }
                    let mut row = base.clone();
                    for (name, value) in cells {
                        if row.get(name).is_none() {
                            row = row.with(name, value.clone());
                        }
                    }
                    rows.push(row);
                    if rows.len() > max_rows {
                        return Err(format!(
                            "the points' records in {} hold more than {max_rows} rows in all",
                            dir.display()
                        ));
                    }
                }
            }
            Err(error) => {
                counts[1] += 1;
                rows.push(
                    base.with("status", "error")
                        .with("error", error)
                        .with_f64("seconds", seconds, 3),
                );
            }
        }
    }
    let report = Report {
        experiment: sweep.experiment.name().into(),
        seed: 0,
        scale: sweep.scale.name().into(),
        rows,
        notes: Vec::new(),
    };
    Ok((report, counts))
}

/// Writes `DIR/results.csv` and `DIR/index.html` from the stored records.
/// `spec_text` is shown on the page.
pub fn gather(sweep: &Sweep, dir: &Path, spec_text: &str) -> Result<Gathered, String> {
    let (report, [ok, failed, missing]) = table(sweep, dir)?;
    let write = |name: &str, bytes: &str| {
        let path = dir.join(name);
        files::write_atomic(&path, bytes)
            .map(|()| path.clone())
            .map_err(|err| format!("cannot write {}: {err}", path.display()))
    };
    let table = write("results.csv", &report.render(Format::Csv))?;
    let plots = plots(sweep, &report);
    let mut html = String::new();
    let title = format!("sweep of {}", sweep.experiment.name());
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>\n<h1>{title}</h1>\n<p>{} points: {ok} ok, {failed} failed, {missing} not run; scale {}; written {}. Table: <a href=\"results.csv\">results.csv</a>.</p>\n<pre>{}</pre>\n",
        sweep.points.len(),
        sweep.scale.name(),
        site::utc_now(),
        site::escape(spec_text)
    );
    if failed > 0 {
        html += "<h2>Failed points</h2>\n<ul>\n";
        for row in report
            .rows
            .iter()
            .filter(|row| row.get("status") == Some(&Value::from("error")))
        {
            let cells: Vec<String> = row
                .cells()
                .iter()
                .map(|(name, value)| format!("{name}={}", crate::report::csv_cell(value)))
                .collect();
            let _ = writeln!(html, "<li>{}</li>", site::escape(&cells.join(" ")));
        }
        html += "</ul>\n";
    }
    for plot in &plots {
        let svg = render::to_svg(plot)?;
        let _ = writeln!(
            html,
            "<figure>{svg}<figcaption>{}</figcaption></figure>",
            site::escape(&plot.caption)
        );
    }
    html += "</body></html>\n";
    let page = write("index.html", &html)?;
    Ok(Gathered {
        table,
        page,
        ok,
        failed,
        missing,
    })
}

/// The plots of the table: per swept dimension, one per metric.
fn plots(sweep: &Sweep, report: &Report) -> Vec<Plot> {
    let point_columns = point_columns(sweep);
    let ok_rows: Vec<&Row> = report
        .rows
        .iter()
        .filter(|row| row.get("status") == Some(&Value::from("ok")))
        .collect();
    let metrics: Vec<String> = crate::report::columns_of(ok_rows.iter().copied())
        .into_iter()
        .filter(|column| !point_columns.contains(column))
        .filter(|column| ok_rows.iter().any(|row| numeric(row, column).is_some()))
        .take(MAX_METRICS)
        .collect();
    let label_of = |row: &Row| -> String {
        let texts: Vec<&str> = row
            .cells()
            .iter()
            .filter(|(name, _)| !point_columns.contains(name))
            .filter_map(|(_, value)| value.as_str())
            .collect();
        if texts.is_empty() {
            "all".into()
        } else {
            texts.join(" ")
        }
    };
    let mut dimensions: Vec<String> = Vec::new();
    if sweep.shapes.len() > 1 {
        dimensions.push("shape".into());
    }
    dimensions.extend(sweep.swept.iter().cloned());
    let seeds_only = dimensions.is_empty();
    if seeds_only {
        dimensions.push("seed".into());
    }
    let mut labels: Vec<String> = Vec::new();
    for row in &ok_rows {
        let label = label_of(row);
        if !labels.contains(&label) && labels.len() < MAX_LABELS {
            labels.push(label);
        }
    }
    let mut plots = Vec::new();
    for dimension in &dimensions {
        let categories: Vec<String> = if seeds_only {
            vec!["all seeds".into()]
        } else {
            let mut seen: Vec<String> = Vec::new();
            for row in &ok_rows {
                let value = row.get(dimension).map(text_of).unwrap_or_default();
                if !seen.contains(&value) {
                    seen.push(value);
                }
            }
            seen
        };
        for metric in &metrics {
            let series: Vec<BarSeries> = labels
                .iter()
                .map(|label| {
                    let stats: Vec<Option<(f64, f64, f64)>> = categories
                        .iter()
                        .map(|category| {
                            let values: Vec<f64> = ok_rows
                                .iter()
                                .filter(|row| {
                                    seeds_only
                                        || row.get(dimension).map(text_of).as_ref()
                                            == Some(category)
                                })
                                .filter(|row| &label_of(row) == label)
                                .filter_map(|row| numeric(row, metric))
                                .collect();
                            spread(&values)
                        })
                        .collect();
                    BarSeries {
                        name: label.clone(),
                        values: stats.iter().map(|s| s.map(|(mean, _, _)| mean)).collect(),
                        ranges: stats
                            .iter()
                            .map(|s| s.map(|(_, low, high)| (low, high)))
                            .collect(),
                        reference: false,
                    }
                })
                .collect();
            let plot = Plot {
                name: format!("{dimension}-{metric}"),
                title: format!("{metric} by {dimension}"),
                caption: format!(
                    "{metric}: mean over the points of each {dimension} value (bars), smallest to largest (whiskers); one bar per result row."
                ),
                value_label: metric.clone(),
                kind: PlotKind::Bars {
                    categories: categories.clone(),
                    series,
                },
            };
            if plot.has_data() {
                plots.push(plot);
            }
        }
    }
    plots
}

/// A finite number cell.
fn numeric(row: &Row, column: &str) -> Option<f64> {
    crate::plots::number(row, column)
}

/// A cell as the table shows it.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// (mean, min, max) of `values`, if any.
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((mean, low, high))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::run::PointRecord;
    use serde_json::json;

    /// Point files are input: records holding more rows than a table may
    /// have are an error, not gigabytes of rows.
    #[test]
    fn records_past_the_row_limit_are_refused() {
        let dir =
            std::env::temp_dir().join(format!("pageframe-gather-rows-{}", std::process::id()));
        let spec = "experiment = \"numa-balancing\"\nseeds = 2";
        let sweep = Sweep::parse("s", spec).unwrap();
        for point in &sweep.points {
            let rows: Vec<Value> = (0..3).map(|row| json!({"score": row})).collect();
            PointRecord {
                key: point.key.clone(),
                outcome: Ok(json!({ "rows": rows })),
                seconds: 1.0,
            }
            .write(&dir)
            .unwrap();
        }
        assert_eq!(table_within(&sweep, &dir, 6).unwrap().0.rows.len(), 6);
        let err = table_within(&sweep, &dir, 5).unwrap_err();
        assert!(err.contains("more than 5 rows"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
