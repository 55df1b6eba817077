//! `pageframe perf-table`: runs `bulk` and `scaling`, prints the README's
//! performance section, and with `--write` splices it into the file
//! (written whole or not at all).

use crate::error::CliError;
use pageframe_lab::experiments::{self, RunOptions};
use pageframe_lab::perf_table::{render, splice};
use pageframe_lab::site::{host_description, utc_now};
use std::io::Write;

/// `pageframe perf-table`, validated.
#[derive(Debug)]
pub struct PerfTablePlan {
    /// Scale of the runs (seed 42).
    pub options: RunOptions,
    /// The file to update and its current text (checked for markers).
    pub target: Option<(std::path::PathBuf, String)>,
}

/// Runs the experiments and prints (and writes) the section.
pub fn execute(plan: &PerfTablePlan, out: &mut dyn Write) -> Result<(), CliError> {
    let run = |name: &str| {
        experiments::run(name, &plan.options)
            .map_err(|err| CliError::Invalid(format!("{name}: {err}")))
    };
    let section = render(
        &run("bulk")?,
        &run("scaling")?,
        &host_description(),
        &utc_now(),
    );
    out.write_all(section.as_bytes())?;
    if let Some((path, text)) = &plan.target {
        let updated = splice(text, &section).ok_or_else(|| {
            CliError::Invalid(format!("{} lost its perf-table markers", path.display()))
        })?;
        pageframe_lab::files::write_atomic(path, updated)
            .map_err(|err| CliError::Invalid(format!("cannot write {}: {err}", path.display())))?;
    }
    Ok(())
}
