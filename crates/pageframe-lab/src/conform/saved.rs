//! Conformance results in a results directory: `pageframe conform --out DIR`
//! writes them as `DIR/conform.json` (the object of [`suites::to_json`]), and
//! the report page of `pageframe run --out DIR` shows them as one summary per
//! suite ([`SuiteSummary`]): its counts, its DIFF rows, or why it was skipped.
//!
//! Where the page's results come from ([`for_page`]): a suite found in
//! `DIR/conform.json` is taken from there; any other suite runs now, except
//! the suites of [`suites::PAGE_SKIPS`], which the page reports skipped with
//! the command that measures them. Nothing is made up: a suite that could not
//! run says why.

use super::suites::{self, SuiteRun};
use crate::files;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The file's name in the results directory.
pub const FILE_NAME: &str = "conform.json";

/// The largest `conform.json` read (every mempolicy row is in it).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Where a suite's summary came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Run while the page was written.
    ThisRun,
    /// Read from `conform.json`.
    File,
}

/// A DIFF row as the page shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffRow {
    /// The case.
    pub case: String,
    /// The kernel's result.
    pub kernel: String,
    /// Pageframe's result.
    pub pageframe: String,
    /// Why the difference is accepted, when it is listed.
    pub listed: Option<String>,
}

/// What a suite showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryState {
    /// It ran: case counts and the DIFF rows.
    Ran {
        /// Cases compared.
        cases: u64,
        /// Cases with the same result.
        matches: u64,
        /// The cases that differ.
        diffs: Vec<DiffRow>,
    },
    /// It could not run here.
    Skipped {
        /// Why.
        reason: String,
    },
    /// Reading the host or booting pageframe failed.
    Failed {
        /// The error.
        error: String,
    },
}

/// One suite's part of the page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteSummary {
    /// The suite's name.
    pub suite: String,
    /// Where the result came from.
    pub source: Source,
    /// Its result.
    pub state: SummaryState,
}

/// Writes `value` (an object of [`suites::to_json`]) as `dir/conform.json`,
/// whole or not at all; returns the path.
pub fn write(dir: &Path, value: &Value) -> Result<PathBuf, String> {
    let path = dir.join(FILE_NAME);
    std::fs::create_dir_all(dir)
        .and_then(|()| files::write_atomic(&path, format!("{value}\n")))
        .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    Ok(path)
}

/// The summaries of a [`suites::to_json`] object; a value of another shape
/// is an error naming what is missing.
pub fn summaries(value: &Value, source: &Source) -> Result<Vec<SuiteSummary>, String> {
    let list = value["suites"].as_array().ok_or("no \"suites\" array")?;
    list.iter()
        .map(|suite| summary(suite, source.clone()))
        .collect()
}

fn text(value: &Value, key: &str) -> Result<String, String> {
    value[key]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("no \"{key}\" text"))
}

fn count(value: &Value, key: &str) -> Result<u64, String> {
    value[key]
        .as_u64()
        .ok_or_else(|| format!("no \"{key}\" count"))
}

fn summary(value: &Value, source: Source) -> Result<SuiteSummary, String> {
    let suite = text(value, "suite")?;
    let state = match value["status"].as_str() {
        Some("skipped") => SummaryState::Skipped {
            reason: text(value, "reason")?,
        },
        Some("ran") => {
            let rows = value["rows"].as_array().ok_or("no \"rows\" array")?;
            let diffs = rows
                .iter()
                .filter(|row| row["verdict"] == "DIFF")
                .map(|row| {
                    Ok(DiffRow {
                        case: text(row, "case")?,
                        kernel: text(row, "kernel")?,
                        pageframe: text(row, "pageframe")?,
                        listed: row["listed"].as_str().map(str::to_string),
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            SummaryState::Ran {
                cases: count(value, "cases")?,
                matches: count(value, "match")?,
                diffs,
            }
        }
        _ => return Err(format!("suite {suite}: status is neither ran nor skipped")),
    };
    Ok(SuiteSummary {
        suite,
        source,
        state,
    })
}

/// The summaries of `dir/conform.json`: none when the file is absent, an
/// error when it cannot be read or has another shape.
fn from_file(dir: &Path) -> Result<Vec<SuiteSummary>, String> {
    let path = dir.join(FILE_NAME);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text = files::read_text(&path, MAX_FILE_BYTES)?;
    let value: Value =
        serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))?;
    summaries(&value, &Source::File).map_err(|err| format!("{}: {err}", path.display()))
}

/// Runs one suite for the page: its summary, or the error it failed with.
fn run_now(name: &'static str, run: SuiteRun) -> SuiteSummary {
    match run() {
        Ok(result) => summaries(&suites::to_json(&[result]), &Source::ThisRun)
            .ok()
            .and_then(|mut list| list.pop())
            .unwrap_or_else(|| SuiteSummary {
                suite: name.to_string(),
                source: Source::ThisRun,
                state: SummaryState::Failed {
                    error: "the suite's JSON has another shape".into(),
                },
            }),
        Err(err) => SuiteSummary {
            suite: name.to_string(),
            source: Source::ThisRun,
            state: SummaryState::Failed {
                error: err.to_string(),
            },
        },
    }
}

/// Every suite's summary for the report page of `dir`, in [`suites::SUITES`]
/// order (see the module header); an unreadable `conform.json` is the error.
pub fn for_page(dir: &Path) -> Result<Vec<SuiteSummary>, String> {
    let mut saved = from_file(dir)?;
    Ok(suites::SUITES
        .iter()
        .map(|(name, run)| {
            match saved.iter().position(|summary| summary.suite == *name) {
                Some(at) => saved.swap_remove(at),
                None => match suites::PAGE_SKIPS.iter().find(|(skipped, _)| skipped == name) {
                    Some((_, why)) => SuiteSummary {
                        suite: name.to_string(),
                        source: Source::ThisRun,
                        state: SummaryState::Skipped {
                            reason: format!(
                                "not run with the page ({why}): `pageframe conform {name} --out DIR` writes DIR/{FILE_NAME}, which the page then shows"
                            ),
                        },
                    },
                    None => run_now(name, *run),
                },
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::{ConformRow, SuiteOutcome, SuiteResult};
    use super::*;

    fn results() -> Vec<SuiteResult> {
        vec![
            SuiteResult {
                suite: "mempolicy",
                outcome: SuiteOutcome::Ran(vec![
                    ConformRow::compare("a".into(), "0".into(), "0".into()),
                    ConformRow::compare("b".into(), "0".into(), "EINVAL".into()),
                ]),
            },
            SuiteResult {
                suite: "zsmalloc",
                outcome: SuiteOutcome::Skipped {
                    reason: "not root".into(),
                },
            },
        ]
    }

    #[test]
    fn summaries_keep_counts_diff_rows_and_reasons() {
        let list = summaries(&suites::to_json(&results()), &Source::File).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(
            list[0].state,
            SummaryState::Ran {
                cases: 2,
                matches: 1,
                diffs: vec![DiffRow {
                    case: "b".into(),
                    kernel: "0".into(),
                    pageframe: "EINVAL".into(),
                    listed: None,
                }],
            }
        );
        assert_eq!(
            list[1].state,
            SummaryState::Skipped {
                reason: "not root".into()
            }
        );
        let err = summaries(
            &serde_json::json!({"suites": [{"suite": "x"}]}),
            &Source::File,
        )
        .unwrap_err();
        assert!(err.contains("neither ran nor skipped"), "{err}");
    }

    #[test]
    fn the_page_takes_saved_suites_from_the_file() {
        let dir =
            std::env::temp_dir().join(format!("pageframe-conform-saved-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = write(&dir, &suites::to_json(&results())).unwrap();
        assert!(path.ends_with(FILE_NAME));
        let saved = from_file(&dir).unwrap();
        assert_eq!(saved.len(), 2);
        assert!(saved.iter().all(|summary| summary.source == Source::File));
        std::fs::write(&path, "{}").unwrap();
        assert!(from_file(&dir).unwrap_err().contains("no \"suites\" array"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(from_file(&dir).unwrap().is_empty());
    }
}
