//! `pageframe`: the command line over the laboratory. This file is glue:
//! parse the arguments ([`args`]), turn them into a validated [`plan::Plan`]
//! (names checked, sizes parsed, machine laid out, config file read), then
//! execute it. Every error is one line, `pageframe: <message>`, on stderr,
//! with exit status 2; `--help` and `--version` exit 0; `conform` exits 1
//! when a suite found a DIFF not listed as not modelled.

mod arg_checks;
mod args;
mod calibrate;
mod conform;
mod error;
mod info;
mod perf_table;
mod plan;
mod proc_views;
mod progress;
#[cfg(test)]
mod props;
mod run;
mod sweep;
mod trace;
mod zram;

use clap::error::ErrorKind;
use clap::Parser;
use error::CliError;
use pageframe_lab::{callgrind, experiments};
use std::io::Write;
use std::process::ExitCode;

/// Exit status of every error, usage errors included (as clap's).
const EXIT_ERROR: u8 = 2;
/// Exit status of `conform` when a suite found an unlisted DIFF.
const EXIT_DIFFERENCES: u8 = 1;

fn main() -> ExitCode {
    // The hidden probe command: this binary re-run under callgrind to count
    // instructions (see pageframe_lab::callgrind); not part of the interface.
    // args_os(): args() panics on an argument that is not UTF-8, which
    // clap reports as a usage error below.
    let mut argv = std::env::args_os().skip(1);
    if argv
        .next()
        .is_some_and(|command| command == callgrind::PROBE_COMMAND)
    {
        let name = argv
            .next()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        return match experiments::callgrind_probe(&name) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => fail(&CliError::Invalid(err)),
        };
    }
    callgrind::enable_probe();
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err)
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) =>
        {
            // Help and version go to stdout; a closed stdout is not an error here.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            return fail(&CliError::Usage(format!(
                "a command is required: {} (see 'pageframe --help')",
                command_names()
            )))
        }
        Err(err) => return fail(&CliError::Usage(args::one_line(&err))),
    };
    let outcome = plan::Plan::from_args(cli).and_then(|plan| {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        let completion = plan.execute(&mut out)?;
        out.flush().map_err(CliError::from)?;
        Ok(completion)
    });
    match outcome {
        Ok(error::Completion::Clean) => ExitCode::SUCCESS,
        Ok(error::Completion::Differences) => ExitCode::from(EXIT_DIFFERENCES),
        Err(err) if err.is_broken_pipe() => ExitCode::SUCCESS,
        Err(err) => fail(&err),
    }
}

/// The commands, as clap knows them ("run, proc, ... or calibrate"): a
/// list written out by hand left out those added later.
fn command_names() -> String {
    use clap::CommandFactory;
    let names: Vec<String> = args::Cli::command()
        .get_subcommands()
        .filter(|command| !command.is_hide_set())
        .map(|command| command.get_name().to_string())
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Prints the error as one line and returns the error status.
fn fail(err: &CliError) -> ExitCode {
    eprintln!("pageframe: {err}");
    ExitCode::from(EXIT_ERROR)
}
