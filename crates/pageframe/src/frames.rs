//! The per-page and per-pageblock tables, together: what every zone and
//! per-CPU list operates on.

use crate::machine::MachineLayout;
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

/// What the per-page metadata of a machine costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetadataCost {
    /// Bytes of one memmap record.
    pub memmap_record_bytes: u64,
    /// Memmap records: one per PFN.
    pub memmap_records: u64,
    /// Bytes of one pageblock record (flags and zone).
    pub pageblock_record_bytes: u64,
    /// Pageblock records.
    pub pageblocks: u64,
}

impl MetadataCost {
    /// What the tables of a machine booted from `layout` cost, known before
    /// booting it (to refuse a machine whose tables the host cannot hold):
    /// the same figures [`crate::PageAllocator::metadata_cost`] gives after.
    pub fn for_layout(layout: &MachineLayout) -> MetadataCost {
        MetadataCost {
            memmap_record_bytes: MemMap::RECORD_BYTES as u64,
            memmap_records: layout.end_pfn.0,
            pageblock_record_bytes: PageblockTable::RECORD_BYTES as u64,
            pageblocks: PageblockTable::nr_blocks(layout.end_pfn, layout.pageblock_order) as u64,
        }
    }

    /// Bytes of both tables.
    pub fn total_bytes(&self) -> u64 {
        self.memmap_records * self.memmap_record_bytes
            + self.pageblocks * self.pageblock_record_bytes
    }
}

impl Frames {
    /// Tables for PFNs `0..end_pfn`; `None` when the memmap cannot be allocated.
    pub fn new(end_pfn: Pfn, pageblock_order: Order) -> Option<Frames> {
        // The memmap covers the last pageblock whole, as the kernel's covers
        // whole sections: walks over a pageblock (move_freepages_block(),
        // the invariants) then never leave it, wherever memory ends.
        let covered = end_pfn
            .0
            .checked_next_multiple_of(pageblock_order.nr_pages())?;
        Some(Frames {
            memmap: MemMap::new(usize::try_from(covered).ok()?)?,
            blocks: PageblockTable::new(end_pfn, pageblock_order),
        })
    }

    /// What the two tables cost.
    pub fn metadata_cost(&self) -> MetadataCost {
        MetadataCost {
            memmap_record_bytes: MemMap::RECORD_BYTES as u64,
            memmap_records: self.memmap.len() as u64,
            pageblock_record_bytes: PageblockTable::RECORD_BYTES as u64,
            pageblocks: self.blocks.len() as u64,
        }
    }
}
