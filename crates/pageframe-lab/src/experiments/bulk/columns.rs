//! The row fields (columns) of `bulk`: one home for each name, used by
//! the run that writes the rows and by the headline and plots that read
//! them.

/// Column `allocator`.
pub const ALLOCATOR: &str = "allocator";
/// Column `variant`.
pub const VARIANT: &str = "variant";
/// Column `order`.
pub const ORDER: &str = "order";
/// Column `batch`.
pub const BATCH: &str = "batch";
/// Column `ns_per_page`.
pub const NS_PER_PAGE: &str = "ns_per_page";
/// Column `cycles_per_page`.
pub const CYCLES_PER_PAGE: &str = "cycles_per_page";
/// Column `ratio`.
pub const RATIO: &str = "ratio";
/// Column `reference_cycles`.
pub const REFERENCE_CYCLES: &str = "reference_cycles";
/// Column `reference_ns`.
pub const REFERENCE_NS: &str = "reference_ns";
/// Column `instructions_per_page`: callgrind-measured instructions per page
/// (per block for batch 0), null when callgrind could not run (the notes
/// say why).
pub const INSTRUCTIONS_PER_PAGE: &str = "instructions_per_page";
