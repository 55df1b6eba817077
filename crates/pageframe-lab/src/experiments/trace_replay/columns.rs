//! The row fields (columns) of `trace-replay`: one home for each name, used
//! by the run that writes the rows and by the headline and plots that read
//! them.

/// Column `policy`: the replay's policy (`kernel`, `shuffle`).
pub const POLICY: &str = "policy";
/// Column `section`: which comparison (`replay`, `extfrag`, `pcp`, ...).
pub const SECTION: &str = "section";
/// Column `key`: what is compared.
pub const KEY: &str = "key";
/// Column `kernel`: the traced kernel's figure (null where it has none).
pub const KERNEL: &str = "kernel";
/// Column `pageframe`: pageframe's figure (null where it has none).
pub const PAGEFRAME: &str = "pageframe";
/// Column `seconds`: trace time of a fragmentation sample.
pub const SECONDS: &str = "seconds";
/// Column `unusable_order_3`: unusable free index at order 3 (0..1).
pub const UNUSABLE_ORDER_3: &str = "unusable_order_3";
/// Column `unusable_order_9`: unusable free index at order 9 (0..1).
pub const UNUSABLE_ORDER_9: &str = "unusable_order_9";

/// The orders of the fragmentation series, with their columns: the costly
/// order (`PAGE_ALLOC_COSTLY_ORDER`) and the pageblock order.
pub const SERIES_ORDERS: [(usize, &str); 2] = [(3, UNUSABLE_ORDER_3), (9, UNUSABLE_ORDER_9)];

/// The series of fragmentation samples over the trace.
pub const FRAGMENTATION: &str = "fragmentation";

/// The `pcp` key the headline reads.
pub const REFILLS_KEY: &str = "refills (rmqueue_bulk calls)";
