//! The registry of conformance suites (the one list `pageframe conform`
//! knows them by), the differences listed as not modelled, and the
//! reports of several suites as one JSON object.
//!
//! Exit rule the CLI applies: a DIFF row that [`listed_reason`] does not
//! name is a conformance failure; a listed one is reported with its reason
//! and does not fail the run.

use super::{ConformError, ConformRow, SuiteOutcome, SuiteResult, Verdict};
use serde_json::{json, Value};

/// A suite's entry point.
pub type SuiteRun = fn() -> Result<SuiteResult, ConformError>;

/// Every suite, in the order `all` runs them.
pub const SUITES: &[(&str, SuiteRun)] = &[
    ("mempolicy", super::mempolicy::run),
    ("zoneinfo", super::zoneinfo::run),
    ("slab", super::slab::run),
    ("zsmalloc", super::zsmalloc::run),
    ("buddy", super::buddy::run),
    ("sysctl", super::sysctl::run),
    ("pagecache", super::pagecache::run),
];

/// Suites the report page of `pageframe run --out DIR` does not run itself,
/// and why: zsmalloc takes seconds (it writes pages into a real zram
/// device), sysctl changes the host's sysctls for a moment, pagecache
/// mounts a file system of its own. The page shows them from
/// `DIR/conform.json` (see `saved`).
pub const PAGE_SKIPS: &[(&str, &str)] = &[
    ("zsmalloc", "it takes seconds on a real device"),
    ("sysctl", "it writes the host's vm sysctls for a moment"),
    ("pagecache", "it mounts an ext4 of its own on a loop device"),
];

/// DIFF rows that are known and accepted: (suite, case, why pageframe
/// differs). A case listed here is reported but does not fail the run.
pub const LISTED_DIFFS: &[(&str, &str, &str)] = &[];

/// The names of [`SUITES`], in order.
pub fn names() -> Vec<&'static str> {
    SUITES.iter().map(|(name, _)| *name).collect()
}

/// Suites by name: each argument a name or a comma-separated list of them,
/// `all` (or no argument) for every suite. The first unknown name, a name
/// given twice, or `all` beside a name is the error (as
/// `experiments::parse_list` refuses a duplicate).
pub fn parse(args: &[String]) -> Result<Vec<(&'static str, SuiteRun)>, String> {
    let mut chosen: Vec<(&'static str, SuiteRun)> = Vec::new();
    let words: Vec<&str> = args
        .iter()
        .flat_map(|arg| arg.split(','))
        .map(str::trim)
        .collect();
    if words.is_empty() || words == ["all"] {
        return Ok(SUITES.to_vec());
    }
    if words.contains(&"all") {
        return Err("'all' runs every suite: name no other with it".into());
    }
    for word in words {
        let suite = SUITES
            .iter()
            .find(|(name, _)| *name == word)
            .ok_or_else(|| {
                format!(
                    "unknown conformance suite '{word}' (known: {}, all)",
                    names().join(", ")
                )
            })?;
        if chosen.iter().any(|(name, _)| *name == suite.0) {
            return Err(format!("conformance suite '{word}' is listed twice"));
        }
        chosen.push(*suite);
    }
    Ok(chosen)
}

/// Why a DIFF `row` of `suite` is accepted, if it is listed: by the suite
/// for this host, or in [`LISTED_DIFFS`].
pub fn listed_reason(suite: &str, row: &ConformRow) -> Option<&'static str> {
    row.listed.or_else(|| {
        LISTED_DIFFS
            .iter()
            .find(|(listed_suite, listed_case, _)| {
                *listed_suite == suite && *listed_case == row.case
            })
            .map(|(_, _, reason)| *reason)
    })
}

/// The DIFF rows of `result` that are not listed.
pub fn unlisted_diffs(result: &SuiteResult) -> usize {
    result
        .diffs()
        .filter(|row| listed_reason(result.suite, row).is_none())
        .count()
}

/// The results as one JSON object: `{"suites": [...], "unlisted_diffs": N}`;
/// each suite has its name, `status` (`ran` or `skipped`), and either its
/// counts and every row or the skip reason.
pub fn to_json(results: &[SuiteResult]) -> Value {
    let suites: Vec<Value> = results
        .iter()
        .map(|result| match &result.outcome {
            SuiteOutcome::Skipped { reason } => json!({
                "suite": result.suite,
                "status": "skipped",
                "reason": reason,
            }),
            SuiteOutcome::Ran(rows) => {
                let diffs = result.diffs().count();
                let rows: Vec<Value> = rows
                    .iter()
                    .map(|row| {
                        let listed = (row.verdict == Verdict::Diff)
                            .then(|| listed_reason(result.suite, row))
                            .flatten();
                        json!({
                            "case": row.case,
                            "kernel": row.kernel,
                            "pageframe": row.pageframe,
                            "verdict": row.verdict.label(),
                            "listed": listed,
                        })
                    })
                    .collect();
                json!({
                    "suite": result.suite,
                    "status": "ran",
                    "cases": rows.len(),
                    "match": rows.len() - diffs,
                    "diff": diffs,
                    "unlisted_diff": unlisted_diffs(result),
                    "rows": rows,
                })
            }
        })
        .collect();
    let unlisted: usize = results.iter().map(unlisted_diffs).sum();
    json!({ "suites": suites, "unlisted_diffs": unlisted })
}

#[cfg(test)]
mod tests {
    use super::super::ConformRow;
    use super::*;

    fn words(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| arg.to_string()).collect()
    }

    #[test]
    fn lists_and_all_parse_and_the_unknown_is_named() {
        let chosen = |args: &[&str]| {
            parse(&words(args)).map(|list| list.iter().map(|(n, _)| *n).collect::<Vec<_>>())
        };
        assert_eq!(chosen(&[]).unwrap(), names());
        assert_eq!(chosen(&["all"]).unwrap(), names());
        assert_eq!(chosen(&["buddy", "slab"]).unwrap(), ["buddy", "slab"]);
        let twice = chosen(&["mempolicy", "mempolicy"]).unwrap_err();
        assert_eq!(twice, "conformance suite 'mempolicy' is listed twice");
        assert!(chosen(&["all,slab"]).is_err());
        let err = chosen(&["mempolicy,nope"]).unwrap_err();
        assert!(err.starts_with("unknown conformance suite 'nope'"), "{err}");
    }

    #[test]
    fn json_counts_diffs_and_skips() {
        let ran = SuiteResult {
            suite: "mempolicy",
            outcome: SuiteOutcome::Ran(vec![
                ConformRow::compare("a".into(), "0".into(), "0".into()),
                ConformRow::compare("b".into(), "0".into(), "1".into()),
            ]),
        };
        let skipped = SuiteResult {
            suite: "other",
            outcome: SuiteOutcome::Skipped {
                reason: "not root".into(),
            },
        };
        let value = to_json(&[ran, skipped]);
        assert_eq!(value["unlisted_diffs"], 1);
        assert_eq!(value["suites"][0]["cases"], 2);
        assert_eq!(value["suites"][0]["diff"], 1);
        assert_eq!(value["suites"][0]["rows"][1]["verdict"], "DIFF");
        assert_eq!(value["suites"][1]["status"], "skipped");
        assert_eq!(value["suites"][1]["reason"], "not root");
    }

    /// A DIFF the suite lists for this host is reported with its reason
    /// and is not unlisted; a MATCH stays a MATCH whatever it is given.
    #[test]
    fn a_row_listed_by_its_suite_is_not_unlisted() {
        let ran = SuiteResult {
            suite: "buddy",
            outcome: SuiteOutcome::Ran(vec![
                ConformRow::compare("a".into(), "1".into(), "2".into()).listed_if(true, "why"),
                ConformRow::compare("b".into(), "1".into(), "2".into()).listed_if(false, "why"),
                ConformRow::compare("c".into(), "1".into(), "1".into()).listed_if(true, "why"),
            ]),
        };
        assert_eq!(unlisted_diffs(&ran), 1);
        let value = to_json(std::slice::from_ref(&ran));
        assert_eq!(value["unlisted_diffs"], 1);
        assert_eq!(value["suites"][0]["rows"][0]["listed"], "why");
        assert!(value["suites"][0]["rows"][1]["listed"].is_null());
        assert!(value["suites"][0]["rows"][2]["listed"].is_null());
        assert_eq!(value["suites"][0]["rows"][2]["verdict"], "MATCH");
        assert!(ran.render(true).contains("a | 1 | 2 | DIFF (listed: why)"));
    }
}
