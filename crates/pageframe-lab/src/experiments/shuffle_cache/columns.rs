//! The row fields (columns) of `shuffle-cache`: one home for each name, used by
//! the run that writes the rows and by the headline and plots that read
//! them.

/// Column `case`.
pub const CASE: &str = "case";
/// Column `conflict_rate`.
pub const CONFLICT_RATE: &str = "conflict_rate";
/// Column `conflict_min`.
pub const CONFLICT_MIN: &str = "conflict_min";
/// Column `conflict_max`.
pub const CONFLICT_MAX: &str = "conflict_max";
/// Column `time_s`.
pub const TIME_S: &str = "time_s";
/// Column `speedup`.
pub const SPEEDUP: &str = "speedup";
/// Column `reference`.
pub const REFERENCE: &str = "reference";
/// Column `boot_ms`.
pub const BOOT_MS: &str = "boot_ms";
/// Column `shuffle_ms`.
pub const SHUFFLE_MS: &str = "shuffle_ms";
/// Column `shuffle_over_boot`.
pub const SHUFFLE_OVER_BOOT: &str = "shuffle_over_boot";
/// Column `blocks_swapped`.
pub const BLOCKS_SWAPPED: &str = "blocks_swapped";
/// Column `adjacent_rate`.
pub const ADJACENT_RATE: &str = "adjacent_rate";
/// Column `guess_rate`.
pub const GUESS_RATE: &str = "guess_rate";
/// Column `block_moves`.
pub const BLOCK_MOVES: &str = "block_moves";
/// Column `next_block_guess_rate`.
pub const NEXT_BLOCK_GUESS_RATE: &str = "next_block_guess_rate";
/// Column `run`: the benchmark run, from 1.
pub const RUN: &str = "run";
/// Column `colour_sharers`: other heap pages per heap page in the same
/// page-sized slice of the cache.
pub const COLOUR_SHARERS: &str = "colour_sharers";
/// Column `shuffle`.
pub const SHUFFLE: &str = "shuffle";
