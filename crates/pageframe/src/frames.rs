//! The per-page and per-pageblock tables, together: what every zone and
//! per-CPU list operates on.

use crate::memmap::MemMap;
use crate::pageblock::PageblockTable;
use crate::types::{Order, Pfn};

/// The memmap and the pageblock flags of a machine.
pub struct Frames {
    /// One record per PFN.
    pub memmap: MemMap,
    /// Flags and zone per pageblock.
    pub blocks: PageblockTable,
}

impl Frames {
    /// Tables for PFNs `0..end_pfn`; `None` when the memmap cannot be allocated.
    pub fn new(end_pfn: Pfn, pageblock_order: Order) -> Option<Frames> {
        Some(Frames {
            memmap: MemMap::new(end_pfn.index())?,
            blocks: PageblockTable::new(end_pfn, pageblock_order),
        })
    }
}
