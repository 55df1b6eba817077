//! The rows of `zram-untar`, typed: one struct per workload's row, built
//! from shared groups of columns, the one home of its column names (field
//! names, in column order), written by the run and read back by the
//! headline and the plot. Sizes are in MiB, ratios in % of `compr_size`.

use serde::{Deserialize, Serialize};

/// The columns every row starts with: the step and the allocator's sizes
/// after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    /// The allocator's label.
    pub allocator: String,
    /// The round, from 1.
    pub round: u32,
    /// `untar`, `rm <dir>` or `compact`.
    pub step: String,
    /// mm_stat's orig_data_size.
    pub orig_size: f64,
    /// mm_stat's compr_data_size.
    pub compr_size: f64,
    /// mm_stat's mem_used_total.
    pub used_size: f64,
    /// `used_size - compr_size`.
    pub overhead: f64,
    /// The overhead in % of `compr_size`.
    pub overhead_ratio: f64,
    /// afmalloc's real overhead: metadata and chunk rounding.
    pub real_overhead: Option<f64>,
    /// The real overhead in % of `compr_size`.
    pub real_overhead_ratio: Option<f64>,
}

/// The document's overhead ratios for a step, where it prints them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceRatios {
    /// The document's overhead ratio.
    pub reference_overhead_ratio: Option<f64>,
    /// The document's real overhead ratio (afmalloc).
    pub reference_real_overhead_ratio: Option<f64>,
}

/// The document's sizes for a step (only when the whole kernel tarball was
/// written, so that sizes compare).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceSizes {
    /// The document's orig_data_size.
    pub reference_orig_size: Option<f64>,
    /// The document's compr_data_size.
    pub reference_compr_size: Option<f64>,
    /// The document's mem_used_total.
    pub reference_used_size: Option<f64>,
}

/// The real /dev/zram's sizes at a step of a block trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelSizes {
    /// The real device's orig_data_size.
    pub kernel_orig_size: f64,
    /// The real device's compr_data_size.
    pub kernel_compr_size: f64,
    /// The real device's mem_used_total.
    pub kernel_used_size: f64,
}

/// A step of the `files` workload (the model without a file system).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FilesRow {
    /// The step and the sizes.
    #[serde(flatten)]
    pub sizes: Sizes,
    /// The document's sizes; no columns unless the whole kernel was written.
    #[serde(flatten)]
    pub reference_sizes: Option<ReferenceSizes>,
    /// The document's ratios.
    #[serde(flatten)]
    pub reference: ReferenceRatios,
    /// Pages freed by compaction; a column of the `compact` row only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_compacted: Option<u64>,
}

/// A step of a replayed block trace (the `ext4-trace` workload); a
/// [`FilesRow`] reads back as one without the kernel's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayRow {
    /// The step and the sizes.
    #[serde(flatten)]
    pub sizes: Sizes,
    /// The real device's sizes; no columns when the trace has none.
    #[serde(flatten)]
    pub kernel_sizes: Option<KernelSizes>,
    /// The real device's overhead ratio.
    pub kernel_overhead_ratio: Option<f64>,
    /// The overhead ratio of a real /dev/zram given this trace's own stream
    /// (`kernel_replay`, root); no column unless measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_replay_overhead_ratio: Option<f64>,
    /// The kernel's band over `kernel_runs` fresh runs; no columns unless
    /// measured.
    #[serde(flatten)]
    pub kernel_band: Option<KernelBandColumns>,
    /// The document's ratios.
    #[serde(flatten)]
    pub reference: ReferenceRatios,
}

/// The kernel's overhead ratio at a step over several fresh runs of the
/// workload on a real /dev/zram (`kernel_runs`), and whether this row's
/// figures lie within that band widened by 2 points on each side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelBandColumns {
    /// The smallest of the runs' overhead ratios.
    pub kernel_band_min: f64,
    /// The largest.
    pub kernel_band_max: f64,
    /// Their mean.
    pub kernel_band_mean: f64,
    /// Whether `overhead_ratio` lies within `[min − 2, max + 2]`.
    pub in_kernel_band: bool,
    /// Whether `kernel_replay_overhead_ratio` does; no column unless the
    /// kernel replay ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_replay_in_kernel_band: Option<bool>,
}
