//! Experiment results and their three output formats (DESIGN.md's output
//! contract): a table for people, one JSON object, or CSV.
//!
//! A [`Report`] is a list of rows; a row is an ordered list of named values.
//! The table shows every column; a `reference` column (the source document's
//! figure) sits beside ours wherever the document has one.
//!
//! Rows with a text cell in the [`SERIES`] column are samples of a named
//! series (say, a score over simulated time) rather than results. They stay
//! in `rows`, so JSON and CSV carry them like any row and the JSON is still
//! one object; the table shows the results and one line per series (how
//! many samples, which columns), and the plots pick them out by name.
//!
//! Typed rows: an experiment may define its rows as structs deriving
//! `Serialize` and `Deserialize` (the struct is then the one home of its
//! column names). [`Row::from_typed`] turns one into a row, a column per
//! field in declaration order, so tables, JSON, CSV and the site see the
//! same rows as if they were built with [`Row::with`];
//! [`Report::results_as`] and [`Report::series_as`] read them back typed,
//! for headlines and plots, also from a report loaded from JSON.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt::Write;
use thiserror::Error;

/// The column that marks a row as a sample of a series (its value: the
/// series' name); see the module comment.
pub const SERIES: &str = "series";

/// How to print a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns with a header, for a terminal.
    Table,
    /// One JSON object per report.
    Json,
    /// A header line and one line per row.
    Csv,
}

impl Format {
    /// Parses `table`, `json` or `csv`.
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "table" => Some(Format::Table),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }
}

/// A typed row that does not serialize to one JSON object of columns.
#[derive(Debug, Error)]
#[error("a typed row must serialize to a JSON object: {0}")]
pub struct RowError(String);

/// `value` rounded to `decimals` places, so that output is stable and
/// readable.
pub fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// One row: column names and values, in column order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    cells: Vec<(String, Value)>,
}

impl Row {
    /// An empty row.
    pub fn new() -> Row {
        Row::default()
    }

    /// Adds a column (builder style).
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Row {
        self.cells.push((name.to_string(), value.into()));
        self
    }

    /// Adds a float rounded to `decimals` places, so that output is stable
    /// and readable.
    pub fn with_f64(self, name: &str, value: f64, decimals: i32) -> Row {
        self.with(name, round_to(value, decimals))
    }

    /// The row of a typed row (see the module comment): a column per
    /// field, in declaration order, as serde_json writes them (`None` is
    /// null, a non-finite float is null, a `#[serde(flatten)]` field adds
    /// its columns in place).
    pub fn from_typed(typed: &impl Serialize) -> Result<Row, RowError> {
        match serde_json::to_value(typed) {
            Ok(Value::Object(columns)) => Ok(Row {
                cells: columns.into_iter().collect(),
            }),
            Ok(other) => Err(RowError(format!("got {other}"))),
            Err(err) => Err(RowError(err.to_string())),
        }
    }

    /// A sample of series `name` from a typed row: the [`SERIES`] column,
    /// then the typed row's columns.
    pub fn series_sample(name: &str, typed: &impl Serialize) -> Result<Row, RowError> {
        let mut row = Row::new().with(SERIES, name);
        row.cells.extend(Row::from_typed(typed)?.cells);
        Ok(row)
    }

    /// The row read back as `T`; `None` when a column `T` needs is missing
    /// or of another type (columns `T` does not name are ignored).
    pub fn to_typed<T: DeserializeOwned>(&self) -> Option<T> {
        let columns: Map<String, Value> = self.cells.iter().cloned().collect();
        serde_json::from_value(Value::Object(columns)).ok()
    }

    /// A column's value.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.cells
            .iter()
            .find(|(column, _)| column == name)
            .map(|(_, value)| value)
    }

    /// The cells.
    pub fn cells(&self) -> &[(String, Value)] {
        &self.cells
    }
}

/// The result of one experiment run.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Experiment name.
    pub experiment: String,
    /// The seed of the run.
    pub seed: u64,
    /// `quick` or `full`.
    pub scale: String,
    /// The rows.
    pub rows: Vec<Row>,
    /// Lines printed under the table (what the numbers mean, the machine).
    pub notes: Vec<String>,
}

impl Report {
    /// Renders the report.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => self.to_json().to_string() + "\n",
            Format::Csv => self.to_csv(),
            Format::Table => self.to_table(),
        }
    }

    /// The JSON object of the output contract.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|row| Value::Object(row.cells.iter().cloned().collect::<Map<String, Value>>()))
            .collect();
        let mut object = Map::new();
        object.insert("experiment".into(), self.experiment.clone().into());
        object.insert("seed".into(), self.seed.into());
        object.insert("scale".into(), self.scale.clone().into());
        object.insert("rows".into(), Value::Array(rows));
        Value::Object(object)
    }

    /// Every column name, in first-seen order.
    pub fn columns(&self) -> Vec<String> {
        columns_of(self.rows.iter())
    }

    /// The result rows: every row that is not a sample of a series.
    pub fn results(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|row| series_name(row).is_none())
    }

    /// The samples of series `name`, in row order.
    pub fn series<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows
            .iter()
            .filter(move |row| series_name(row) == Some(name))
    }

    /// The result rows that read back as `T` ([`Row::to_typed`]).
    pub fn results_as<'a, T: DeserializeOwned + 'a>(&'a self) -> impl Iterator<Item = T> + 'a {
        self.results().filter_map(Row::to_typed)
    }

    /// The samples of series `name` that read back as `T`.
    pub fn series_as<'a, T: DeserializeOwned + 'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = T> + 'a {
        self.series(name).filter_map(Row::to_typed)
    }

    /// The names of the report's series, in first-seen order.
    pub fn series_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for name in self.rows.iter().filter_map(series_name) {
            if !names.iter().any(|known| known == name) {
                names.push(name.to_string());
            }
        }
        names
    }

    fn to_csv(&self) -> String {
        let columns = self.columns();
        let mut out = columns.join(",") + "\n";
        for row in &self.rows {
            let line: Vec<String> = columns
                .iter()
                .map(|column| row.get(column).map(csv_cell).unwrap_or_default())
                .collect();
            out += &line.join(",");
            out.push('\n');
        }
        out
    }

    fn to_table(&self) -> String {
        let results: Vec<&Row> = self.results().collect();
        let columns = columns_of(results.iter().copied());
        let cells: Vec<Vec<String>> = results
            .iter()
            .map(|row| {
                columns
                    .iter()
                    .map(|column| {
                        row.get(column)
                            .map(|value| one_line(&table_cell(value)))
                            .unwrap_or_else(|| "-".into())
                    })
                    .collect()
            })
            .collect();
        let widths: Vec<usize> = columns
            .iter()
            .enumerate()
            .map(|(at, column)| {
                cells
                    .iter()
                    .map(|row| row[at].chars().count())
                    .chain([column.chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# {} (seed {}, scale {})",
            self.experiment, self.seed, self.scale
        );
        let header: Vec<String> = columns
            .iter()
            .zip(&widths)
            .map(|(column, width)| pad_left(column, *width))
            .collect();
        let _ = writeln!(out, "{}", header.join("  "));
        for row in &cells {
            let line: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| pad_left(cell, *width))
                .collect();
            let _ = writeln!(out, "{}", line.join("  "));
        }
        for name in self.series_names() {
            let samples: Vec<&Row> = self.series(&name).collect();
            let columns: Vec<String> = columns_of(samples.iter().copied())
                .into_iter()
                .filter(|column| column != SERIES)
                .collect();
            let _ = writeln!(
                out,
                "series {name}: {} samples of {} (in --format json or csv, plotted with --out)",
                samples.len(),
                columns.join(", ")
            );
        }
        for note in &self.notes {
            let _ = writeln!(out, "{note}");
        }
        out
    }
}

/// The series a row is a sample of, if it is one.
fn series_name(row: &Row) -> Option<&str> {
    row.get(SERIES).and_then(Value::as_str)
}

/// Every column name of `rows`, in first-seen order.
pub fn columns_of<'a>(rows: impl Iterator<Item = &'a Row>) -> Vec<String> {
    let mut columns: Vec<String> = Vec::new();
    for row in rows {
        for (name, _) in &row.cells {
            if !columns.contains(name) {
                columns.push(name.clone());
            }
        }
    }
    columns
}

/// `text` right-aligned in `width` characters. Padded by hand: a format
/// width (`{:>width$}`) panics past 65535, and a cell holds whatever a
/// trace's label held.
fn pad_left(text: &str, width: usize) -> String {
    let pad = width.saturating_sub(text.chars().count());
    " ".repeat(pad) + text
}

/// `text` as one printable line, for a terminal: every line break a reader
/// may split on (\r, vertical tab, form feed, NEL, the Unicode line and
/// paragraph separators, as well as \n) joins the trimmed lines around it
/// with `; `, and any other control character (an escape that would start
/// a terminal sequence) shows as `?`. Table cells and the command's error
/// lines both go through it.
pub fn one_line(text: &str) -> String {
    let breaks = |c: char| {
        matches!(
            c,
            '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    };
    text.split(breaks)
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
        .replace(|c: char| c.is_control(), "?")
}

fn table_cell(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// A value as one CSV cell (quoted when it holds a comma, quote or newline).
pub fn csv_cell(value: &Value) -> String {
    match value {
        Value::String(text) if text.contains([',', '"', '\n']) => {
            format!("\"{}\"", text.replace('"', "\"\""))
        }
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        Report {
            experiment: "bulk".into(),
            seed: 42,
            scale: "quick".into(),
            rows: vec![
                Row::new()
                    .with("batch", 0)
                    .with_f64("ns_per_page", 12.3456, 2)
                    .with("reference_cycles", 158),
                Row::new()
                    .with("batch", 32)
                    .with_f64("ns_per_page", 3.21, 2)
                    .with("note", "a,b"),
            ],
            notes: vec!["note line".into()],
        }
    }

    #[test]
    fn json_follows_the_output_contract() {
        let json = sample().to_json();
        assert_eq!(json["experiment"], "bulk");
        assert_eq!(json["seed"], 42);
        assert_eq!(json["scale"], "quick");
        assert_eq!(json["rows"][0]["ns_per_page"], 12.35);
        assert_eq!(json["rows"][1]["batch"], 32);
    }

    #[test]
    fn csv_has_every_column_and_quotes() {
        let csv = sample().render(Format::Csv);
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some("batch,ns_per_page,reference_cycles,note")
        );
        assert_eq!(lines.next(), Some("0,12.35,158,"));
        assert_eq!(lines.next(), Some("32,3.21,,\"a,b\""));
    }

    #[test]
    fn series_rows_are_in_json_and_csv_and_named_under_the_table() {
        let mut report = sample();
        for t in [1, 2] {
            report.rows.push(
                Row::new()
                    .with(SERIES, "timeline")
                    .with("t_s", t)
                    .with("score", 10 * t),
            );
        }
        assert_eq!(report.results().count(), 2);
        assert_eq!(report.series_names(), vec!["timeline".to_string()]);
        assert_eq!(report.series("timeline").count(), 2);
        assert_eq!(report.to_json()["rows"].as_array().unwrap().len(), 4);
        assert_eq!(report.render(Format::Csv).lines().count(), 5);
        let table = report.render(Format::Table);
        assert!(!table.contains("t_s  "), "{table}");
        assert!(
            table.contains("series timeline: 2 samples of t_s, score"),
            "{table}"
        );
    }

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Typed {
        batch: u64,
        ns_per_page: f64,
        note: Option<String>,
    }

    #[test]
    fn typed_rows_are_rows_in_field_order_and_read_back() {
        let typed = Typed {
            batch: 32,
            ns_per_page: round_to(3.214, 2),
            note: None,
        };
        let row = Row::from_typed(&typed).unwrap();
        assert_eq!(
            row,
            Row::new()
                .with("batch", 32)
                .with_f64("ns_per_page", 3.214, 2)
                .with("note", Value::Null)
        );
        assert_eq!(row.to_typed::<Typed>(), Some(typed));
        let mut report = sample();
        report.rows.push(
            Row::series_sample(
                "timeline",
                &Typed {
                    batch: 1,
                    ns_per_page: 1.0,
                    note: Some("x".into()),
                },
            )
            .unwrap(),
        );
        // A missing `Option` column reads as `None`, a column the type does
        // not name (`reference_cycles`) is ignored, a missing plain column
        // leaves the row out.
        let results: Vec<Typed> = report.results_as().collect();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].note, None);
        assert_eq!(results[1].note.as_deref(), Some("a,b"));
        assert_eq!(Row::new().with("batch", 1).to_typed::<Typed>(), None);
        assert_eq!(report.series_as::<Typed>("timeline").count(), 1);
        assert!(Row::from_typed(&3).is_err());
    }

    #[test]
    fn table_aligns_columns() {
        let table = sample().render(Format::Table);
        assert!(table.starts_with("# bulk (seed 42, scale quick)\n"));
        assert!(table.contains("note line"));
        let widths: Vec<usize> = table.lines().skip(1).take(3).map(str::len).collect();
        assert!(widths.windows(2).all(|pair| pair[0] == pair[1]), "{table}");
    }

    #[test]
    fn a_cell_wider_than_a_format_width_and_controls_in_cells_do_not_break_the_table() {
        // A zram-untar trace's step label of 65536 bytes panicked
        // ("Formatting argument out of range"); a label with \n, \r or an
        // escape split the table's lines or reached the terminal raw.
        let mut report = sample();
        let long = "x".repeat(70_000);
        report.rows.push(Row::new().with("note", long.as_str()));
        report
            .rows
            .push(Row::new().with("note", "a\nb\rc\u{1b}[31m"));
        let table = report.render(Format::Table);
        assert_eq!(table.lines().count(), 1 + 1 + 4 + 1, "{table}");
        assert!(table.contains(&long));
        assert!(table.contains("a; b; c?[31m"), "{table}");
        assert!(!table.contains('\u{1b}'));
        let widths: Vec<usize> = table.lines().skip(1).take(5).map(str::len).collect();
        assert!(widths.windows(2).all(|pair| pair[0] == pair[1]), "{table}");
    }
}
