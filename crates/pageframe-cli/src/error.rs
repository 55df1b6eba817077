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

/// The longest error line printed, in characters: a message that repeats
/// a long input (a 100 KB argument, a 1 MB key of a TOML file) keeps its
/// start and end, where the value and what is wrong with it are said.
const MAX_MESSAGE_CHARS: usize = 1000;

/// Joins the lines of a message, so that no error spans two lines, and cuts
/// the middle out of one longer than [`MAX_MESSAGE_CHARS`].
fn single_line(message: &str) -> String {
    let joined = pageframe_lab::report::one_line(message);
    let chars = joined.chars().count();
    if chars <= MAX_MESSAGE_CHARS {
        return joined;
    }
    let keep = MAX_MESSAGE_CHARS / 2 - 20;
    let head: String = joined.chars().take(keep).collect();
    let tail: String = joined.chars().skip(chars - keep).collect();
    format!("{head} [... {} characters ...] {tail}", chars - 2 * keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_line_break_joins_and_controls_show_as_marks() {
        let message = "--mem '64\rM\u{b}x\u{c}y\u{85}z\u{2028}w\u{2029}v\u{7}': not a size";
        let line = CliError::Invalid(message.into()).to_string();
        assert_eq!(line, "--mem '64; M; x; y; z; w; v?': not a size");
        assert_eq!(line.lines().count(), 1);
    }

    #[test]
    fn a_long_message_keeps_its_start_and_end_on_one_line() {
        let message = format!("--mem '{}': not a size\nsecond line", "9".repeat(100_000));
        let line = CliError::Invalid(message).to_string();
        assert!(line.chars().count() <= MAX_MESSAGE_CHARS, "{}", line.len());
        assert!(!line.contains('\n'));
        assert!(line.starts_with("--mem '999"), "{line}");
        assert!(line.ends_with("not a size; second line"), "{line}");
        let short = CliError::Invalid("a\n b".to_string()).to_string();
        assert_eq!(short, "a; b");
    }
}
