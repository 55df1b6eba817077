//! `pageframe run`: experiments in order, each report printed as soon as it
//! is done. JSON gives one object per line; tables and CSV are separated by
//! a blank line.

use crate::error::CliError;
use crate::plan::RunPlan;
use pageframe_lab::experiments;
use pageframe_lab::report::Format;
use std::io::Write;

/// Runs every experiment of the plan.
pub fn execute(plan: &RunPlan, out: &mut dyn Write) -> Result<(), CliError> {
    for (index, name) in plan.experiments.iter().enumerate() {
        let report = experiments::run(name, &plan.options)
            .map_err(|err| CliError::Invalid(format!("{name}: {err}")))?;
        if index > 0 && plan.format != Format::Json {
            writeln!(out)?;
        }
        out.write_all(report.render(plan.format).as_bytes())?;
        out.flush()?;
    }
    Ok(())
}
