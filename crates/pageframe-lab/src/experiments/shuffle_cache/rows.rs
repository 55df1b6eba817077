//! The rows of `shuffle-cache`, typed: one struct per kind of row, the one
//! home of its column names (field names, in column order), written by the
//! run and read back by the headline and the plots.

use serde::{Deserialize, Serialize};

/// A conflict rate with its spread: mean, min and max over runs and seeds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conflict {
    /// Conflict misses per access, mean.
    pub conflict_rate: f64,
    /// The smallest rate.
    pub conflict_min: f64,
    /// The largest rate.
    pub conflict_max: f64,
}

/// The two-instance STREAM case, without or with shuffle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamRow {
    /// `two-instances` or `two-instances+shuffle`.
    pub case: String,
    /// The conflict rate over the seeds.
    #[serde(flatten)]
    pub conflict: Conflict,
    /// Modelled time of the measured passes, s.
    pub time_s: f64,
    /// Time without shuffle over this time.
    pub speedup: f64,
    /// The document's speedup, where it has one.
    pub reference: Option<f64>,
}

/// A heap case: fresh or aged, without or with shuffle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeapCaseRow {
    /// `fresh`, `aged`, `aged+shuffle` or `fresh+shuffle`.
    pub case: String,
    /// The conflict rate over the case's runs and seeds.
    #[serde(flatten)]
    pub conflict: Conflict,
    /// Other heap pages per heap page in the same page-sized slice of the
    /// cache.
    pub colour_sharers: f64,
    /// The document's conflict rate, where it has one.
    pub reference: Option<f64>,
}

/// The time of one shuffle pass against a boot without shuffle.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShuffleCostRow {
    /// `shuffle-cost`.
    pub case: String,
    /// The boot without shuffle, ms.
    pub boot_ms: f64,
    /// One shuffle pass, ms.
    pub shuffle_ms: f64,
    /// `shuffle_ms / boot_ms`.
    pub shuffle_over_boot: f64,
    /// Blocks the shuffle swapped.
    pub blocks_swapped: u64,
    /// What the document says of the cost.
    pub reference: String,
}

/// How predictable consecutive order-0 allocations are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecurityRow {
    /// `security` or `security+shuffle`.
    pub case: String,
    /// Share of physically adjacent pairs.
    pub adjacent_rate: f64,
    /// Share of next PFNs a stride predictor guesses.
    pub guess_rate: f64,
    /// Moves to another 4 MiB block.
    pub block_moves: u64,
    /// Share of those moves to a neighbouring block.
    pub next_block_guess_rate: f64,
}

/// One sample of the `runs` series: a benchmark run's heap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// The benchmark run, from 1.
    pub run: u64,
    /// Whether the machine shuffles.
    pub shuffle: bool,
    /// The conflict rate over the seeds.
    #[serde(flatten)]
    pub conflict: Conflict,
    /// Other heap pages per heap page in the same page-sized slice of the
    /// cache.
    pub colour_sharers: f64,
}
