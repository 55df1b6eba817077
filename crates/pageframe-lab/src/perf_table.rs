//! The README's performance section, regenerated from a run: the `bulk`
//! report (pageframe beside the kernel's figures, the peers, the knobs) and
//! the `scaling` report, with the machine and date they were measured on.
//! [`splice`] puts the section between the README's markers.

use crate::report::{Report, Row};
use serde_json::Value;
use std::fmt::Write;

/// Marks the start of the generated section in a document.
pub const BEGIN_MARKER: &str = "<!-- perf-table:begin -->";
/// Marks its end.
pub const END_MARKER: &str = "<!-- perf-table:end -->";
/// The bulk report's callgrind column (and the prefix of its note).
const INSTRUCTIONS: &str = "instructions_per_page";
/// The largest file `perf-table --write` updates (a README is far smaller).
pub const MAX_TARGET_BYTES: u64 = 16 << 20;

fn text(row: &Row, column: &str) -> String {
    match row.get(column) {
        Some(Value::String(value)) => value.clone(),
        Some(Value::Null) | None => "–".to_string(),
        Some(value) => value.to_string(),
    }
}

fn rows_where<'a>(
    report: &'a Report,
    column: &'a str,
    value: &'a str,
) -> impl Iterator<Item = &'a Row> + 'a {
    report
        .rows
        .iter()
        .filter(move |row| text(row, column) == value)
}

/// Renders the section (without markers).
pub fn render(bulk: &Report, scaling: &Report, machine: &str, date: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Measured on {machine}, {date}, `pageframe run bulk` and `pageframe run scaling` at {} scale \
         (regenerate with `cargo run --release -- perf-table --write README.md`).\n",
        bulk.scale
    );
    let _ = writeln!(
        out,
        "Order-0 cost per page, one CPU, beside the kernel's figures (bulk-page-allocator.txt):\n"
    );
    let _ = writeln!(
        out,
        "| batch | pageframe ns | pageframe cycles | pageframe instructions | kernel ns | kernel cycles |"
    );
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|");
    for row in rows_where(bulk, "allocator", "pageframe")
        .filter(|row| text(row, "variant") == "default" && text(row, "order") == "0")
    {
        let batch = text(row, "batch");
        let label = if batch == "0" {
            "single".to_string()
        } else {
            batch
        };
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} |",
            text(row, "ns_per_page"),
            text(row, "cycles_per_page"),
            text(row, INSTRUCTIONS),
            text(row, "reference_ns"),
            text(row, "reference_cycles")
        );
    }
    for note in bulk
        .notes
        .iter()
        .filter(|note| note.starts_with(INSTRUCTIONS))
    {
        let _ = writeln!(out, "\n{note}.");
    }
    let _ = writeln!(out, "\nPeers in the same run, one block at a time (ratio = cost / pageframe's at the same order; `after-order0-churn` = pageframe after 65536 order-0 pages were held and freed):\n");
    let _ = writeln!(
        out,
        "| allocator | order | ns per block | instructions per block | ratio |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    for row in bulk.rows.iter().filter(|row| {
        text(row, "batch") == "0"
            && matches!(
                text(row, "variant").as_str(),
                "default" | "after-order0-churn"
            )
    }) {
        let allocator = match text(row, "variant").as_str() {
            "default" => text(row, "allocator"),
            variant => format!("{} ({variant})", text(row, "allocator")),
        };
        let _ = writeln!(
            out,
            "| {allocator} | {} | {} | {} | {} |",
            text(row, "order"),
            text(row, "ns_per_page"),
            text(row, INSTRUCTIONS),
            text(row, "ratio")
        );
    }
    let _ = writeln!(out, "\nBulk at batch 32 against the `Vec<u32>` floor, and the document's knobs (statistics, checks):\n");
    let _ = writeln!(
        out,
        "| allocator | variant | batch | ns per page | instructions per page | ratio |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|");
    for row in bulk.rows.iter().filter(|row| {
        text(row, "batch") == "32"
            || (!matches!(
                text(row, "variant").as_str(),
                "default" | "after-order0-churn"
            ) && text(row, "batch") == "0")
    }) {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            text(row, "allocator"),
            text(row, "variant"),
            text(row, "batch"),
            text(row, "ns_per_page"),
            text(row, INSTRUCTIONS),
            text(row, "ratio")
        );
    }
    let _ = writeln!(
        out,
        "\nThreads (`SharedPageAllocator`, one registered CPU per thread):\n"
    );
    let _ = writeln!(
        out,
        "| pattern | threads | Mpages/s | CPUs busy | zone lock taken | contended |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for row in &scaling.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            text(row, "pattern"),
            text(row, "threads"),
            text(row, "mpages_per_s"),
            text(row, "cpus_busy"),
            text(row, "zone_lock_acquired"),
            text(row, "zone_lock_contended")
        );
    }
    let speedups: Vec<String> = ["local", "remote-free"]
        .into_iter()
        .filter_map(|pattern| {
            let rate = |threads: &str| {
                rows_where(scaling, "pattern", pattern)
                    .find(|row| text(row, "threads") == threads)
                    .and_then(|row| row.get("mpages_per_s").and_then(Value::as_f64))
            };
            let (one, two) = (rate("1")?, rate("2")?);
            (one > 0.0).then(|| format!("{pattern} {:.2}x", two / one))
        })
        .collect();
    if !speedups.is_empty() {
        let _ = writeln!(out, "\nTwo threads against one: {}.", speedups.join(", "));
    }
    out
}

/// Replaces what lies between the markers of `document` with `section`;
/// `None` when the markers are missing or out of order.
pub fn splice(document: &str, section: &str) -> Option<String> {
    let begin = document.find(BEGIN_MARKER)? + BEGIN_MARKER.len();
    let end = document.find(END_MARKER)?;
    (begin <= end).then(|| format!("{}\n{}{}", &document[..begin], section, &document[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &str, rows: Vec<Row>) -> Report {
        Report {
            experiment: name.into(),
            seed: 1,
            scale: "quick".into(),
            rows,
            notes: vec![],
        }
    }

    #[test]
    fn section_carries_the_measured_numbers() {
        let bulk = report(
            "bulk",
            vec![Row::new()
                .with("allocator", "pageframe")
                .with("variant", "default")
                .with("order", 0)
                .with("batch", 32)
                .with("ns_per_page", 4.25)
                .with("cycles_per_page", 11.0)
                .with("instructions_per_page", 61.5)
                .with("ratio", 1.0)
                .with("reference_cycles", 85)
                .with("reference_ns", 21.338)],
        );
        let scaling = report(
            "scaling",
            vec![
                Row::new()
                    .with("pattern", "local")
                    .with("threads", 1)
                    .with("mpages_per_s", 35.25),
                Row::new()
                    .with("pattern", "local")
                    .with("threads", 2)
                    .with("mpages_per_s", 70.5)
                    .with("cpus_busy", 1.98),
            ],
        );
        let section = render(&bulk, &scaling, "a test CPU", "2026-11-22");
        assert!(
            section.contains("| 32 | 4.25 | 11.0 | 61.5 | 21.338 | 85 |"),
            "{section}"
        );
        assert!(section.contains("| local | 2 | 70.5 |"), "{section}");
        assert!(section.contains("| local | 2 | 70.5 | 1.98 |"), "{section}");
        assert!(
            section.contains("Two threads against one: local 2.00x."),
            "{section}"
        );
        assert!(section.contains("a test CPU, 2026-11-22"));
        let mut without = bulk.clone();
        without.rows[0] = Row::new()
            .with("allocator", "pageframe")
            .with("variant", "default")
            .with("order", 0)
            .with("batch", 32)
            .with("ns_per_page", 4.25)
            .with("cycles_per_page", 11.0)
            .with("instructions_per_page", serde_json::Value::Null)
            .with("reference_cycles", 85)
            .with("reference_ns", 21.338);
        without
            .notes
            .push("instructions_per_page: not measured — valgrind is not installed".into());
        let section = render(&without, &scaling, "a test CPU", "2026-11-22");
        assert!(
            section.contains("| 32 | 4.25 | 11.0 | – | 21.338 | 85 |"),
            "{section}"
        );
        assert!(section.contains("not measured — valgrind is not installed."));
    }

    #[test]
    fn splice_replaces_only_between_markers() {
        let document = format!("head\n{BEGIN_MARKER}\nold\n{END_MARKER}\ntail\n");
        let spliced = splice(&document, "new\n").unwrap();
        assert_eq!(
            spliced,
            format!("head\n{BEGIN_MARKER}\nnew\n{END_MARKER}\ntail\n")
        );
        assert_eq!(splice("no markers", "x"), None);
    }
}
