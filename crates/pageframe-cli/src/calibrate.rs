//! `pageframe calibrate`: times the simulation's priced events on a real
//! arena of this host and writes the calibration file the simulation reads
//! (written whole or not at all), then prints it.

use crate::args::CalibrateArgs;
use crate::error::CliError;
use pageframe::backing::{calibrate, SimCosts};
use pageframe_lab::site::{host_description, utc_now};
use std::io::Write;

/// Measures, writes the file, prints it.
pub fn execute(args: &CalibrateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let costs = calibrate(args.pages, args.rounds)
        .map_err(|err| CliError::Invalid(format!("calibration failed: {err}")))?;
    let text = costs.to_file_text(&[
        "pageframe calibrate: prices of the simulated backing, measured on a real arena".into(),
        format!(
            "{} pages, fastest of {} rounds, {}; host {}",
            args.pages,
            args.rounds,
            utc_now(),
            host_description()
        ),
        "ns per event (copy_byte_ps: picoseconds per byte)".into(),
    ]);
    // The file must parse back as written.
    debug_assert_eq!(SimCosts::from_file_text(&text), Ok(costs));
    pageframe_lab::files::write_atomic(&args.out, text.clone())
        .map_err(|err| CliError::Invalid(format!("cannot write {}: {err}", args.out.display())))?;
    out.write_all(text.as_bytes())?;
    writeln!(out, "# written to {}", args.out.display())?;
    Ok(())
}
