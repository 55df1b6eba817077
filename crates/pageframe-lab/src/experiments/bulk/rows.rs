//! The rows of `bulk`, typed: the one home of its column names (field
//! names, in column order), written by the run and read back by the
//! headline and the plots.

use serde::{Deserialize, Serialize};

/// One measured case: an allocator's cost per page at an order and batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostRow {
    /// `pageframe` or a peer's name.
    pub allocator: String,
    /// The knob setting measured (`default`, ...).
    pub variant: String,
    /// The order of the blocks.
    pub order: u64,
    /// Pages per `alloc_pages_bulk` call; 0 for one block at a time.
    pub batch: u64,
    /// Nanoseconds per page (alloc plus free), median over rounds.
    pub ns_per_page: f64,
    /// TSC cycles per page, median over rounds.
    pub cycles_per_page: f64,
    /// callgrind-measured instructions per page (per block for batch 0);
    /// `None` when callgrind could not run (the notes say why).
    pub instructions_per_page: Option<f64>,
    /// Cost over pageframe's default cost at the same order and batch.
    pub ratio: Option<f64>,
    /// The document's cycles per page, where it has the case.
    pub reference_cycles: Option<u64>,
    /// The document's nanoseconds per page, where it has the case.
    pub reference_ns: Option<f64>,
}

impl CostRow {
    /// Whether the row is `allocator`'s `variant` at order 0.
    pub fn is_order0(&self, allocator: &str, variant: &str) -> bool {
        self.allocator == allocator && self.variant == variant && self.order == 0
    }
}
