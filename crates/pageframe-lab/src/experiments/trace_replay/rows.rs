//! The rows of `trace-replay`, typed: the one home of its column names
//! (field names, in column order), written by the run and read back by the
//! headline and the plot.

use serde::{Deserialize, Serialize};

/// The series of fragmentation samples over the trace.
pub const FRAGMENTATION: &str = "fragmentation";

/// The `pcp` key the headline reads.
pub const REFILLS_KEY: &str = "refills (rmqueue_bulk calls)";

/// One comparison: the traced kernel's figure beside pageframe's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// The replay's policy (`kernel`, `shuffle`, ...).
    pub policy: String,
    /// Which comparison (`replay`, `extfrag`, `pcp`, ...).
    pub section: String,
    /// What is compared.
    pub key: String,
    /// The traced kernel's figure; `None` where it has none.
    pub kernel: Option<f64>,
    /// pageframe's figure; `None` where it has none.
    pub pageframe: Option<f64>,
}

/// One sample of the [`FRAGMENTATION`] series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FragmentationRow {
    /// The replay's policy.
    pub policy: String,
    /// Trace time of the sample, s.
    pub seconds: f64,
    /// Unusable free index at order 3 (0..1).
    pub unusable_order_3: Option<f64>,
    /// Unusable free index at order 9 (0..1).
    pub unusable_order_9: Option<f64>,
}

impl FragmentationRow {
    /// The orders of the series: the costly order
    /// (`PAGE_ALLOC_COSTLY_ORDER`) and the pageblock order.
    pub const ORDERS: [usize; 2] = [3, 9];

    /// The unusable free index at `order`, one of [`Self::ORDERS`].
    pub fn unusable(&self, order: usize) -> Option<f64> {
        match order {
            3 => self.unusable_order_3,
            9 => self.unusable_order_9,
            _ => None,
        }
    }
}
