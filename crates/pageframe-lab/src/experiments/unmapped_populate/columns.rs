//! The row fields (columns) of `unmapped-populate`: one home for each name, used by
//! the run that writes the rows and by the headline and plots that read
//! them.

/// Column `variant`.
pub const VARIANT: &str = "variant";
/// Column `backing`.
pub const BACKING: &str = "backing";
/// Column `samples`.
pub const SAMPLES: &str = "samples";
/// Column `mean_ms`.
pub const MEAN_MS: &str = "mean_ms";
/// Column `min_ms`.
pub const MIN_MS: &str = "min_ms";
/// Column `histogram`.
pub const HISTOGRAM: &str = "histogram";
/// Column `max_ms`.
pub const MAX_MS: &str = "max_ms";
/// Column `modelled_ms`.
pub const MODELLED_MS: &str = "modelled_ms";
/// Column `delta_vs_baseline`.
pub const DELTA_VS_BASELINE: &str = "delta_vs_baseline";
/// Column `reference_mean_ms`.
pub const REFERENCE_MEAN_MS: &str = "reference_mean_ms";
/// Column `reference_delta`.
pub const REFERENCE_DELTA: &str = "reference_delta";
/// Column `tlb_flushes`.
pub const TLB_FLUSHES: &str = "tlb_flushes";
/// Column `local_flushes`.
pub const LOCAL_FLUSHES: &str = "local_flushes";
/// Column `pages`.
pub const PAGES: &str = "pages";
