//! The machine layer's error: [`DescError`], a description (TOML, flags,
//! kernel command line) that cannot be booted, naming the offending field.

use thiserror::Error;

/// A machine description that cannot be booted. Displays as one line that
/// starts with the offending field: `node[1].cpus: CPU 3 is on two nodes`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field}: {message}")]
pub struct DescError {
    /// The field, as a path into the description (`nodes`, `node[2].mem`, `distance`).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl DescError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> DescError {
        DescError {
            field: field.into(),
            message: message.into(),
        }
    }
}
