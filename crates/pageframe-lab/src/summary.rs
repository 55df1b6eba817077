//! The closing summary of `run all`: one headline number per experiment,
//! ours beside the source document's, and whether ours moves the same way
//! as the document's (the claim an experiment reproduces is a direction —
//! "bulk is cheaper per page", "shuffle lowers the conflict rate" — more
//! than an absolute number from another machine). Each experiment computes
//! its own headline (`Experiment::headline`); this module lays them out.

use crate::report::{Report, Row};
use std::fmt::Write;

/// The headline of one experiment's report.
#[derive(Clone, Debug, PartialEq)]
pub struct Headline {
    /// What is measured, briefly.
    pub metric: String,
    /// Our number, with its unit.
    pub ours: String,
    /// The document's number ("-" when the document has none).
    pub document: String,
    /// Whether ours moves in the document's direction; `None` when the
    /// document has no figure to compare with.
    pub direction_matches: Option<bool>,
}

/// One summary line: the experiment and its headline, if it has one.
pub type SummaryLine = (String, Option<Headline>);

/// The summary table as text.
pub fn render(lines: &[SummaryLine]) -> String {
    let header = ["experiment", "headline", "ours", "document", "direction"];
    let cells: Vec<[String; 5]> = lines
        .iter()
        .map(|(name, headline)| match headline {
            Some(headline) => [
                name.clone(),
                headline.metric.clone(),
                headline.ours.clone(),
                headline.document.clone(),
                direction_word(headline.direction_matches).into(),
            ],
            None => [
                name.clone(),
                "(no headline yet)".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ],
        })
        .collect();
    let width = |at: usize| {
        cells
            .iter()
            .map(|row| row[at].chars().count())
            .chain([header[at].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let mut out = String::from("# summary: ours beside the source documents\n");
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let _ = writeln!(out, "{}", line(header.to_vec()));
    for row in &cells {
        let _ = writeln!(out, "{}", line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `matches`, `DIFFERS` or `n/a`.
pub fn direction_word(matches: Option<bool>) -> &'static str {
    match matches {
        Some(true) => "matches",
        Some(false) => "DIFFERS",
        None => "n/a",
    }
}

/// The first result row (not a series sample) that passes `test`.
pub fn find_result(report: &Report, test: impl Fn(&Row) -> bool) -> Option<&Row> {
    report.results().find(|row| test(row))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::bulk::rows::CostRow;
    use crate::experiments::bulk::Bulk;
    use crate::experiments::Experiment;

    fn report(name: &str, rows: Vec<Row>) -> Report {
        Report {
            experiment: name.into(),
            seed: 42,
            scale: "quick".into(),
            rows,
            notes: Vec::new(),
        }
    }

    fn bulk_row(batch: u64, cycles: f64, reference: u64) -> Row {
        Row::from_typed(&CostRow {
            allocator: "pageframe".into(),
            variant: "default".into(),
            order: 0,
            batch,
            ns_per_page: cycles / 3.0,
            cycles_per_page: cycles,
            instructions_per_page: None,
            ratio: None,
            reference_cycles: Some(reference),
            reference_ns: None,
        })
        .unwrap()
    }

    #[test]
    fn bulk_headline_compares_directions() {
        let headline = Bulk
            .headline(&report(
                "bulk",
                vec![bulk_row(0, 70.0, 158), bulk_row(32, 40.0, 85)],
            ))
            .unwrap();
        assert_eq!(headline.ours, "40 (70)");
        assert_eq!(headline.document, "85 (158)");
        assert_eq!(headline.direction_matches, Some(true));
        let worse = Bulk
            .headline(&report(
                "bulk",
                vec![bulk_row(0, 30.0, 158), bulk_row(32, 40.0, 85)],
            ))
            .unwrap();
        assert_eq!(worse.direction_matches, Some(false));
        assert!(Bulk.headline(&report("bulk", Vec::new())).is_none());
    }

    #[test]
    fn summary_table_has_a_line_per_experiment() {
        let lines = vec![
            (
                "bulk".to_string(),
                Bulk.headline(&report(
                    "bulk",
                    vec![bulk_row(0, 70.0, 158), bulk_row(32, 40.0, 85)],
                )),
            ),
            ("zram-untar".to_string(), None),
        ];
        let text = render(&lines);
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.contains("matches"));
        assert!(text.contains("(no headline yet)"));
    }
}
