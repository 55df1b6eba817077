//! The experiments, by name. Each reproduces one source document's headline
//! result and computes every number it prints from a run.

pub mod bulk;
pub mod numa_balancing;
pub mod scaling;
pub mod shuffle_cache;
pub mod unmapped_populate;
pub mod zram_untar;

use crate::report::Report;
use thiserror::Error;

/// How big a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Well under a minute per experiment on 2 cores.
    Quick,
    /// The source document's setup, or the largest that fits 24 GiB.
    Full,
}

impl Scale {
    /// Parses `quick` or `full`.
    pub fn parse(text: &str) -> Option<Scale> {
        match text {
            "quick" => Some(Scale::Quick),
            "full" => Some(Scale::Full),
            _ => None,
        }
    }

    /// The name printed in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }
}

/// What every experiment run takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Size of the run.
    pub scale: Scale,
    /// Seed of every random choice.
    pub seed: u64,
}

/// Why an experiment could not run.
#[derive(Debug, Error)]
pub enum ExperimentError {
    /// No experiment has that name.
    #[error("unknown experiment '{0}' (known: {known})", known = NAMES.join(", "))]
    Unknown(String),
    /// The experiment's machine could not boot.
    #[error("{0}")]
    Machine(#[from] pageframe::DescError),
    /// The experiment failed while running.
    #[error("{0}")]
    Failed(String),
}

/// Every experiment, in the order `run all` runs them.
pub const NAMES: [&str; 6] = [
    "bulk",
    "scaling",
    "shuffle-cache",
    "numa-balancing",
    "zram-untar",
    "unmapped-populate",
];

/// Runs one experiment by name.
pub fn run(name: &str, options: &RunOptions) -> Result<Report, ExperimentError> {
    match name {
        "bulk" => bulk::run(options),
        "scaling" => scaling::run(options),
        "shuffle-cache" => shuffle_cache::run(options),
        "numa-balancing" => numa_balancing::run(options),
        "zram-untar" => zram_untar::run(options),
        "unmapped-populate" => unmapped_populate::run(options),
        _ => Err(ExperimentError::Unknown(name.to_string())),
    }
}
