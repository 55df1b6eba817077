//! The rows of `unmapped-populate`, typed: the one home of its column names
//! (field names, in column order), written by the run and read back by the
//! headline and the plots. Column order follows the document's table
//! (variant | samples | mean | min | histogram | max | Δμ), then the
//! document's figures and the counts.

use serde::{Deserialize, Serialize};

/// One variant on one backing: the real arena (timed samples and host
/// counts) or the simulated machine (one modelled populate).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PopulateRow {
    /// The variant's name.
    pub variant: String,
    /// `arena` or `sim`.
    pub backing: String,
    /// Timed samples (1 on `sim`).
    pub samples: u64,
    /// Mean populate time, ms (arena).
    pub mean_ms: Option<f64>,
    /// Fastest sample, ms (arena).
    pub min_ms: Option<f64>,
    /// The samples' histogram as block characters (arena).
    pub histogram: Option<String>,
    /// Slowest sample, ms (arena).
    pub max_ms: Option<f64>,
    /// The cost model's charge, ms (sim).
    pub modelled_ms: Option<f64>,
    /// The fraction by which the time differs from the baseline's; `None`
    /// for the baseline itself.
    pub delta_vs_baseline: Option<f64>,
    /// The document's mean, ms.
    pub reference_mean_ms: f64,
    /// The document's change against its baseline.
    pub reference_delta: Option<f64>,
    /// Global TLB flushes per sample.
    pub tlb_flushes: f64,
    /// Local TLB flushes per sample.
    pub local_flushes: f64,
    /// Pages populated per sample.
    pub pages: u64,
    /// Coefficient of variation of the samples (arena).
    pub cv: Option<f64>,
    /// TLB shootdowns received per sample by the populating thread's host
    /// CPU, from /proc/interrupts (arena).
    pub ipis_populating_cpu: Option<f64>,
    /// TLB shootdowns received per sample by every other host CPU (arena).
    pub ipis_other_cpus: Option<f64>,
    /// The backing's host system calls per sample (arena).
    pub syscalls: Option<f64>,
    /// The process's minor faults per sample (arena).
    pub minor_faults: Option<f64>,
    /// The process's major faults per sample (arena).
    pub major_faults: Option<f64>,
    /// The mermap agents' minor faults per sample (arena).
    pub agent_minor_faults: Option<f64>,
}
