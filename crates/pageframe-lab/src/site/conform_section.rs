//! The report page's conformance section: one summary row per suite (cases,
//! MATCH, DIFF, where the result came from, or the skip reason), the DIFF
//! rows of every suite that has any, and the differences listed as not
//! modelled. MATCH rows are not embedded (mempolicy alone has thousands):
//! `conform.json` beside the page holds them when it was written.

use super::markup::escape;
use crate::conform::saved::{Source, SuiteSummary, SummaryState};
use crate::conform::suites;
use std::fmt::Write;

/// Appends the section (`<h2 id="conform">`) for `summaries`.
pub fn section(out: &mut String, summaries: &[SuiteSummary]) {
    let _ = writeln!(
        out,
        "<h2 id=\"conform\">Conformance with the running kernel</h2>"
    );
    let _ = writeln!(
        out,
        "<p>The cases of <code>pageframe conform</code>, run on this host's kernel and on pageframe booted like it. A skipped suite says why; it is never counted as a result.</p>"
    );
    let _ = writeln!(
        out,
        "<table class=\"conform\" data-table=\"conform\"><thead><tr><th>suite</th><th>cases</th><th>MATCH</th><th>DIFF</th><th>status</th></tr></thead><tbody>"
    );
    for summary in summaries {
        let name = escape(&summary.suite);
        let from = match summary.source {
            Source::ThisRun => "ran with this page",
            Source::File => "from conform.json",
        };
        match &summary.state {
            SummaryState::Ran {
                cases,
                matches,
                diffs,
            } => {
                let _ = writeln!(
                    out,
                    "<tr data-suite=\"{name}\" data-status=\"ran\"><td class=\"text\">{name}</td><td>{cases}</td><td>{matches}</td><td>{}</td><td class=\"text\">{from}</td></tr>",
                    diffs.len()
                );
            }
            SummaryState::Skipped { reason } => {
                let _ = writeln!(
                    out,
                    "<tr data-suite=\"{name}\" data-status=\"skipped\"><td class=\"text\">{name}</td><td>-</td><td>-</td><td>-</td><td class=\"text\">skipped: {}</td></tr>",
                    escape(reason)
                );
            }
            SummaryState::Failed { error } => {
                let _ = writeln!(
                    out,
                    "<tr data-suite=\"{name}\" data-status=\"failed\"><td class=\"text\">{name}</td><td>-</td><td>-</td><td>-</td><td class=\"text\">could not run: {}</td></tr>",
                    escape(error)
                );
            }
        }
    }
    let _ = writeln!(out, "</tbody></table>");
    for summary in summaries {
        if let SummaryState::Ran { diffs, .. } = &summary.state {
            if diffs.is_empty() {
                continue;
            }
            let name = escape(&summary.suite);
            let _ = writeln!(
                out,
                "<h3>{name}: DIFF rows</h3>\n<div class=\"scroll\"><table class=\"conform-diffs\" data-suite=\"{name}\"><thead><tr><th>case</th><th>kernel</th><th>pageframe</th><th>listed</th></tr></thead><tbody>"
            );
            for row in diffs {
                let _ = writeln!(
                    out,
                    "<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td></tr>",
                    escape(&row.case),
                    escape(&row.kernel),
                    escape(&row.pageframe),
                    escape(row.listed.as_deref().unwrap_or("no"))
                );
            }
            let _ = writeln!(out, "</tbody></table></div>");
        }
    }
    if suites::LISTED_DIFFS.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"notes\" id=\"conform-listed\">Listed exceptions (differences accepted as not modelled): none.</p>"
        );
    } else {
        let _ = writeln!(
            out,
            "<p class=\"notes\" id=\"conform-listed\">Listed exceptions (differences accepted as not modelled):</p><ul class=\"notes\">"
        );
        for (suite, case, reason) in suites::LISTED_DIFFS {
            let _ = writeln!(
                out,
                "<li>{}: {}: {}</li>",
                escape(suite),
                escape(case),
                escape(reason)
            );
        }
        let _ = writeln!(out, "</ul>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::saved::DiffRow;

    #[test]
    fn shows_counts_diff_rows_and_skip_reasons() {
        let summaries = [
            SuiteSummary {
                suite: "mempolicy".into(),
                source: Source::File,
                state: SummaryState::Ran {
                    cases: 3,
                    matches: 2,
                    diffs: vec![DiffRow {
                        case: "mbind(<len>)".into(),
                        kernel: "0".into(),
                        pageframe: "EINVAL".into(),
                        listed: None,
                    }],
                },
            },
            SuiteSummary {
                suite: "zsmalloc".into(),
                source: Source::ThisRun,
                state: SummaryState::Skipped {
                    reason: "not root".into(),
                },
            },
        ];
        let mut out = String::new();
        section(&mut out, &summaries);
        assert!(out.contains("<td class=\"text\">mempolicy</td><td>3</td><td>2</td><td>1</td><td class=\"text\">from conform.json</td>"), "{out}");
        assert!(out.contains("data-status=\"skipped\"") && out.contains("skipped: not root"));
        assert!(
            out.contains("<td class=\"text\">mbind(&lt;len&gt;)</td>"),
            "{out}"
        );
        assert!(out.contains("id=\"conform-listed\""));
    }
}
