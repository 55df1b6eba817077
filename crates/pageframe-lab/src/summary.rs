//! The closing summary of `run all`: one headline number per experiment,
//! ours beside the source document's, and whether ours moves the same way
//! as the document's (the claim an experiment reproduces is a direction —
//! "bulk is cheaper per page", "shuffle lowers the conflict rate" — more
//! than an absolute number from another machine).

use crate::plots::{number, text};
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

fn find(report: &Report, test: impl Fn(&Row) -> bool) -> Option<&Row> {
    report.results().find(|row| test(row))
}

/// `bulk`: cycles per page at batch 32 against the kernel's 85, and the
/// direction from one page per call (158 in the kernel) to batch 32.
pub fn bulk(report: &Report) -> Option<Headline> {
    let ours = |batch: f64| {
        find(report, |row| {
            text(row, "allocator") == Some("pageframe")
                && text(row, "variant") == Some("default")
                && number(row, "order") == Some(0.0)
                && number(row, "batch") == Some(batch)
        })
    };
    let bulk = ours(32.0)?;
    let single = ours(0.0)?;
    let (bulk_cycles, single_cycles) = (
        number(bulk, "cycles_per_page")?,
        number(single, "cycles_per_page")?,
    );
    let reference = number(bulk, "reference_cycles");
    let reference_single = number(single, "reference_cycles");
    Some(Headline {
        metric: "cycles/page at batch 32 (one at a time)".into(),
        ours: format!("{bulk_cycles:.0} ({single_cycles:.0})"),
        document: match (reference, reference_single) {
            (Some(bulk), Some(single)) => format!("{bulk:.0} ({single:.0})"),
            _ => "-".into(),
        },
        direction_matches: reference
            .zip(reference_single)
            .map(|(bulk, single)| (bulk < single) == (bulk_cycles < single_cycles)),
    })
}

/// `scaling`: the 2-thread speedup of the local pattern. No document has a
/// figure for it.
pub fn scaling(report: &Report) -> Option<Headline> {
    let rate = |threads: f64| {
        find(report, |row| {
            text(row, "pattern") == Some("local") && number(row, "threads") == Some(threads)
        })
        .and_then(|row| number(row, "mpages_per_s"))
    };
    let speedup = rate(2.0)? / rate(1.0)?;
    Some(Headline {
        metric: "2-thread speedup, local alloc+free".into(),
        ours: format!("{speedup:.2}x"),
        document: "-".into(),
        direction_matches: None,
    })
}

/// `shuffle-cache`: the conflict rate after aging, without and with
/// shuffle (document: 21% -> 11%).
pub fn shuffle_cache(report: &Report) -> Option<Headline> {
    let case = |name: &str| find(report, |row| text(row, "case") == Some(name));
    let (aged, shuffled) = (case("aged")?, case("aged+shuffle")?);
    let (ours_aged, ours_shuffled) = (
        number(aged, "conflict_rate")?,
        number(shuffled, "conflict_rate")?,
    );
    let reference = number(aged, "reference").zip(number(shuffled, "reference"));
    Some(Headline {
        metric: "conflict rate aged -> aged+shuffle".into(),
        ours: format!("{:.1}% -> {:.1}%", ours_aged * 100.0, ours_shuffled * 100.0),
        document: reference.map_or("-".into(), |(aged, shuffled)| {
            format!("{:.0}% -> {:.0}%", aged * 100.0, shuffled * 100.0)
        }),
        direction_matches: reference
            .map(|(aged, shuffled)| (shuffled < aged) == (ours_shuffled < ours_aged)),
    })
}

/// `numa-balancing`: the pmbench score change of MPOL_BIND with
/// MPOL_F_NUMA_BALANCING after the eater exits (document: +17.5%).
pub fn numa_balancing(report: &Report) -> Option<Headline> {
    let row = find(report, |row| {
        text(row, "policy").is_some_and(|policy| policy.contains("numa_balancing"))
            && number(row, "numa_balancing") != Some(0.0)
    })?;
    let ours = number(row, "improvement")?;
    let reference = number(row, "reference_improvement");
    Some(Headline {
        metric: "pmbench score change, bind+numa_balancing".into(),
        ours: format!("{:+.1}%", ours * 100.0),
        document: reference.map_or("-".into(), |reference| {
            format!("{:+.1}%", reference * 100.0)
        }),
        direction_matches: reference.map(|reference| (reference > 0.0) == (ours > 0.0)),
    })
}

/// `unmapped-populate`: the change of the mean populate latency against the
/// baseline on the real arena, for `gfp_unmapped` and `skip_flush`
/// (document: -70.0% and -68.8%).
pub fn unmapped_populate(report: &Report) -> Option<Headline> {
    let arena = |variant: &str| {
        find(report, |row| {
            text(row, "variant") == Some(variant) && text(row, "backing") == Some("arena")
        })
    };
    let (unmapped, skip) = (arena("gfp_unmapped")?, arena("skip_flush")?);
    let ours = (
        number(unmapped, "delta_vs_baseline")?,
        number(skip, "delta_vs_baseline")?,
    );
    let reference = number(unmapped, "reference_delta").zip(number(skip, "reference_delta"));
    let percent = |(a, b): (f64, f64)| format!("{:+.1}%, {:+.1}%", a * 100.0, b * 100.0);
    Some(Headline {
        metric: "populate latency vs baseline: gfp_unmapped, skip_flush".into(),
        ours: percent(ours),
        document: reference.map_or("-".into(), percent),
        direction_matches: reference
            .map(|(a, b)| (a < 0.0) == (ours.0 < 0.0) && (b < 0.0) == (ours.1 < 0.0)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        Row::new()
            .with("allocator", "pageframe")
            .with("variant", "default")
            .with("order", 0)
            .with("batch", batch)
            .with("cycles_per_page", cycles)
            .with("reference_cycles", reference)
    }

    #[test]
    fn bulk_headline_compares_directions() {
        let headline = bulk(&report(
            "bulk",
            vec![bulk_row(0, 70.0, 158), bulk_row(32, 40.0, 85)],
        ))
        .unwrap();
        assert_eq!(headline.ours, "40 (70)");
        assert_eq!(headline.document, "85 (158)");
        assert_eq!(headline.direction_matches, Some(true));
        let worse = bulk(&report(
            "bulk",
            vec![bulk_row(0, 30.0, 158), bulk_row(32, 40.0, 85)],
        ))
        .unwrap();
        assert_eq!(worse.direction_matches, Some(false));
        assert!(bulk(&report("bulk", Vec::new())).is_none());
    }

    #[test]
    fn summary_table_has_a_line_per_experiment() {
        let lines = vec![
            (
                "bulk".to_string(),
                bulk(&report(
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
