//! `pageframe trace record|import|replay`: glue over
//! `pageframe_lab::trace`. Record and import print the trace's summary
//! line; replay prints the side-by-side rows in the chosen format and
//! writes the fragmentation plot when asked. Every trace error is one line
//! (its offset, line or mismatch named) with exit status 2.

use crate::error::CliError;
use pageframe_lab::report::Format;
use pageframe_lab::trace::{self, RecordOptions, RecordTarget, ReplayOptions, TraceError};
use std::io::Write;
use std::path::PathBuf;

/// `pageframe trace ...`, validated.
#[derive(Debug)]
pub enum TracePlan {
    /// Record live into `output`.
    Record {
        /// A command or a duration.
        target: RecordTarget,
        /// Keep at most this many events.
        max_events: Option<usize>,
        /// The .pftrace file.
        output: PathBuf,
    },
    /// Read `file`, write it as .pftrace to `output` if given.
    Import {
        /// The trace read.
        file: PathBuf,
        /// The .pftrace file written.
        output: Option<PathBuf>,
    },
    /// Replay `file`.
    Replay {
        /// The trace replayed.
        file: PathBuf,
        /// Machine, policy switches, seed, fit (boxed: the largest variant).
        options: Box<ReplayOptions>,
        /// How to print the rows.
        format: Format,
        /// Where to write the SVG plot.
        plot: Option<PathBuf>,
    },
}

impl From<TraceError> for CliError {
    fn from(err: TraceError) -> CliError {
        CliError::Invalid(err.to_string())
    }
}

/// Runs the trace command of the plan.
pub fn execute(plan: &TracePlan, out: &mut dyn Write) -> Result<(), CliError> {
    match plan {
        TracePlan::Record {
            target,
            max_events,
            output,
        } => {
            let mut options = RecordOptions::new(target.clone());
            options.max_events = *max_events;
            let recorded = trace::record(&options)?;
            trace::write_file(output, &recorded)?;
            writeln!(out, "{}: {}", output.display(), trace::summary(&recorded))?;
        }
        TracePlan::Import { file, output } => {
            let imported = trace::import(file)?;
            if let Some(output) = output {
                trace::write_file(output, &imported)?;
            }
            writeln!(out, "{}: {}", file.display(), trace::summary(&imported))?;
        }
        TracePlan::Replay {
            file,
            options,
            format,
            plot,
        } => replay(file, options, *format, plot.as_deref(), out)?,
    }
    Ok(())
}

fn replay(
    file: &std::path::Path,
    options: &ReplayOptions,
    format: Format,
    plot: Option<&std::path::Path>,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let imported = trace::import(file)?;
    let report = trace::run_replay(&imported, options)?;
    if let Some(path) = plot {
        trace::plot::write_svg(&imported, &report, path)?;
    }
    let rendered = trace::replay_report(file, &imported, &report, options);
    out.write_all(rendered.render(format).as_bytes())?;
    Ok(())
}
