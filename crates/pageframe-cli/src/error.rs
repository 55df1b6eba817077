//! The command's one error type: everything the user can get wrong, and
//! output that cannot be written. Each displays as a single line.

use std::fmt;
use std::io;

/// How a plan that ran to its end ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Everything as expected.
    Clean,
    /// `conform` found a DIFF not listed as not modelled (exit status 1).
    Differences,
}

/// Why the command stopped.
#[derive(Debug)]
pub enum CliError {
    /// The arguments do not parse (clap's message, cut to one line).
    Usage(String),
    /// A value is not valid: a name, a size, a machine description.
    Invalid(String),
    /// Standard output could not be written.
    Output(io::Error),
}

impl CliError {
    /// True when the reader of our output went away (`pageframe ... | head`):
    /// not worth a message.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Output(err) if err.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(message) | CliError::Invalid(message) => {
                write!(f, "{}", single_line(message))
            }
            CliError::Output(err) => write!(f, "cannot write output: {err}"),
        }
    }
}

impl From<io::Error> for CliError {
    fn from(err: io::Error) -> CliError {
        CliError::Output(err)
    }
}

impl From<pageframe::DescError> for CliError {
    fn from(err: pageframe::DescError) -> CliError {
        CliError::Invalid(err.to_string())
    }
}

impl From<pageframe::BootError> for CliError {
    fn from(err: pageframe::BootError) -> CliError {
        CliError::Invalid(err.to_string())
    }
}

/// Joins the lines of a message, so that no error spans two lines.
fn single_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}
