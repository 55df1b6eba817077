//! The row fields (columns) of `scaling`: one home for each name, used by
//! the run that writes the rows and by the headline and plots that read
//! them.

/// Column `allocator`.
pub const ALLOCATOR: &str = "allocator";
/// Column `threads`.
pub const THREADS: &str = "threads";
/// Column `pattern`.
pub const PATTERN: &str = "pattern";
/// Column `mpages_per_s`.
pub const MPAGES_PER_S: &str = "mpages_per_s";
/// Column `ns_per_page`.
pub const NS_PER_PAGE: &str = "ns_per_page";
/// Column `zone_lock_acquired`.
pub const ZONE_LOCK_ACQUIRED: &str = "zone_lock_acquired";
/// Column `zone_lock_contended`.
pub const ZONE_LOCK_CONTENDED: &str = "zone_lock_contended";
/// Column `pcp_trylock_fail`.
pub const PCP_TRYLOCK_FAIL: &str = "pcp_trylock_fail";
