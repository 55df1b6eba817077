//! The rows of `scaling`, typed: the one home of its column names (field
//! names, in column order), written by the run and read back by the
//! headline and the plot.

use serde::{Deserialize, Serialize};

/// One configuration's result: the median of its runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThroughputRow {
    /// The allocator measured (`pageframe`).
    pub allocator: String,
    /// Threads allocating and freeing, each on its own CPU id.
    pub threads: u64,
    /// The access pattern (`local`, `remote-free`).
    pub pattern: String,
    /// Million pages allocated and freed per second, all threads together.
    pub mpages_per_s: f64,
    /// Nanoseconds per page (alloc plus free).
    pub ns_per_page: f64,
    /// The threads' CPU time over the timed window: how many CPUs they kept
    /// busy on average (the thread count when none waited).
    pub cpus_busy: f64,
    /// vmstat `zone_lock_acquired`.
    pub zone_lock_acquired: u64,
    /// vmstat `zone_lock_contended`.
    pub zone_lock_contended: u64,
    /// vmstat `pcp_trylock_fail`.
    pub pcp_trylock_fail: u64,
}
