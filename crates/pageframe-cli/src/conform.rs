//! `pageframe conform`: conformance suites of `pageframe_lab::conform`,
//! run in the order given. The table prints each suite's DIFF rows (every
//! row with `--all`) and its summary line, suites separated by a blank
//! line; JSON prints one object for all of them, which `--out DIR` also
//! writes as `DIR/conform.json` for the report page. The caller turns an
//! unlisted DIFF into exit status 1.

use crate::error::{CliError, Completion};
use pageframe_lab::conform::suites::SuiteRun;
use pageframe_lab::conform::{saved, suites};
use std::io::Write;
use std::path::PathBuf;

/// `pageframe conform`, validated.
#[derive(Debug)]
pub struct ConformPlan {
    /// The suites, in run order.
    pub suites: Vec<(&'static str, SuiteRun)>,
    /// One JSON object instead of the table.
    pub json: bool,
    /// Print the MATCH rows too.
    pub all: bool,
    /// Also write the results as `DIR/conform.json`.
    pub out: Option<PathBuf>,
}

/// Runs the suites of the plan and prints their results.
pub fn execute(plan: &ConformPlan, out: &mut dyn Write) -> Result<Completion, CliError> {
    let mut results = Vec::new();
    for (name, run) in &plan.suites {
        let result = run().map_err(|err| CliError::Invalid(format!("conform {name}: {err}")))?;
        if !plan.json {
            if !results.is_empty() {
                writeln!(out)?;
            }
            out.write_all(result.render(plan.all).as_bytes())?;
            out.flush()?;
        }
        results.push(result);
    }
    if plan.json || plan.out.is_some() {
        let value = suites::to_json(&results);
        if plan.json {
            writeln!(out, "{value}")?;
        }
        if let Some(dir) = &plan.out {
            saved::write(dir, &value).map_err(CliError::Invalid)?;
        }
    }
    let unlisted: usize = results.iter().map(suites::unlisted_diffs).sum();
    Ok(if unlisted == 0 {
        Completion::Clean
    } else {
        Completion::Differences
    })
}
