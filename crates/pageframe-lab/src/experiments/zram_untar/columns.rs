//! The row fields (columns) of `zram-untar`: one home for each name, used by
//! the run that writes the rows and by the headline and plots that read
//! them.

/// Column `allocator`.
pub const ALLOCATOR: &str = "allocator";
/// Column `round`.
pub const ROUND: &str = "round";
/// Column `step`.
pub const STEP: &str = "step";
/// Column `orig_size`.
pub const ORIG_SIZE: &str = "orig_size";
/// Column `compr_size`.
pub const COMPR_SIZE: &str = "compr_size";
/// Column `used_size`.
pub const USED_SIZE: &str = "used_size";
/// Column `overhead`.
pub const OVERHEAD: &str = "overhead";
/// Column `overhead_ratio`.
pub const OVERHEAD_RATIO: &str = "overhead_ratio";
/// Column `real_overhead`.
pub const REAL_OVERHEAD: &str = "real_overhead";
/// Column `real_overhead_ratio`.
pub const REAL_OVERHEAD_RATIO: &str = "real_overhead_ratio";
/// Column `reference_overhead_ratio`.
pub const REFERENCE_OVERHEAD_RATIO: &str = "reference_overhead_ratio";
/// Column `reference_real_overhead_ratio`.
pub const REFERENCE_REAL_OVERHEAD_RATIO: &str = "reference_real_overhead_ratio";
/// Column `pages_compacted`.
pub const PAGES_COMPACTED: &str = "pages_compacted";
/// Column `reference_orig_size`.
pub const REFERENCE_ORIG_SIZE: &str = "reference_orig_size";
/// Column `reference_compr_size`.
pub const REFERENCE_COMPR_SIZE: &str = "reference_compr_size";
/// Column `reference_used_size`.
pub const REFERENCE_USED_SIZE: &str = "reference_used_size";
/// Column `kernel_orig_size`: the real /dev/zram's orig_data_size (MiB).
pub const KERNEL_ORIG_SIZE: &str = "kernel_orig_size";
/// Column `kernel_compr_size`.
pub const KERNEL_COMPR_SIZE: &str = "kernel_compr_size";
/// Column `kernel_used_size`.
pub const KERNEL_USED_SIZE: &str = "kernel_used_size";
/// Column `kernel_overhead_ratio`: the real device's (used − compr) / compr.
pub const KERNEL_OVERHEAD_RATIO: &str = "kernel_overhead_ratio";
