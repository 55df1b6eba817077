//! Pageblock flags: per pageblock, a byte of bits (migratetype, freetype
//! flags, compaction skip) and the zone the block belongs to.
//!
//! Like `pageblock_flags` in the kernel, the bits change under the zone lock
//! and are read without it (the free path reads the migratetype locklessly).
//! A block's zone is fixed while the block is online.

use std::sync::atomic::{AtomicU16, AtomicU8, Ordering::Relaxed};

use crate::freetype::{FreeType, FreeTypeFlags, MigrateType};
use crate::types::Pfn;

const MIGRATETYPE_MASK: u8 = 0b0111;
const UNMAPPED_BIT: u8 = 0b1000;
const SKIP_BIT: u8 = 0b1_0000;

/// Zone index of a pageblock with no zone (a hole).
pub const NO_ZONE: u16 = u16::MAX;

/// Flags and zone of every pageblock of the machine.
pub struct PageblockTable {
    bits: Box<[AtomicU8]>,
    zone: Box<[AtomicU16]>,
    order: u8,
}

impl PageblockTable {
    /// A table for PFNs `0..end_pfn`: every block MOVABLE (as memmap_init()
    /// leaves them) and in no zone.
    pub fn new(end_pfn: Pfn, pageblock_order: u8) -> PageblockTable {
        let blocks = (end_pfn.0 >> pageblock_order) as usize + 1;
        PageblockTable {
            bits: (0..blocks)
                .map(|_| AtomicU8::new(MigrateType::Movable as u8))
                .collect(),
            zone: (0..blocks).map(|_| AtomicU16::new(NO_ZONE)).collect(),
            order: pageblock_order,
        }
    }

    #[inline]
    fn block(&self, pfn: Pfn) -> usize {
        (pfn.0 >> self.order) as usize
    }

    /// Number of blocks in the table.
    pub fn len(&self) -> usize {
        self.bits.len()
    }

    /// True when the table has no block.
    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    /// The migratetype of the block holding `pfn` (`get_pfnblock_migratetype()`).
    #[inline]
    pub fn migratetype(&self, pfn: Pfn) -> MigrateType {
        let bits = self.bits[self.block(pfn)].load(Relaxed);
        MigrateType::from_index((bits & MIGRATETYPE_MASK) as usize).unwrap_or(MigrateType::Movable)
    }

    /// The freetype of the block holding `pfn`.
    #[inline]
    pub fn freetype(&self, pfn: Pfn) -> FreeType {
        let bits = self.bits[self.block(pfn)].load(Relaxed);
        FreeType {
            migratetype: MigrateType::from_index((bits & MIGRATETYPE_MASK) as usize)
                .unwrap_or(MigrateType::Movable),
            flags: if bits & UNMAPPED_BIT != 0 {
                FreeTypeFlags::UNMAPPED
            } else {
                FreeTypeFlags::NONE
            },
        }
    }

    /// Sets the freetype of the block holding `pfn` (`set_pageblock_migratetype()`).
    /// The skip bit is kept.
    #[inline]
    pub fn set_freetype(&self, pfn: Pfn, freetype: FreeType) {
        let cell = &self.bits[self.block(pfn)];
        let mut bits = cell.load(Relaxed) & SKIP_BIT;
        bits |= freetype.migratetype as u8;
        if freetype.flags.contains(FreeTypeFlags::UNMAPPED) {
            bits |= UNMAPPED_BIT;
        }
        cell.store(bits, Relaxed);
    }

    /// The compaction skip bit of the block.
    pub fn skip(&self, pfn: Pfn) -> bool {
        self.bits[self.block(pfn)].load(Relaxed) & SKIP_BIT != 0
    }

    /// Sets or clears the compaction skip bit of the block.
    pub fn set_skip(&self, pfn: Pfn, skip: bool) {
        let cell = &self.bits[self.block(pfn)];
        let bits = cell.load(Relaxed);
        cell.store(
            if skip {
                bits | SKIP_BIT
            } else {
                bits & !SKIP_BIT
            },
            Relaxed,
        );
    }

    /// The zone index of the block holding `pfn`, if it is in a zone.
    #[inline]
    pub fn zone(&self, pfn: Pfn) -> Option<usize> {
        let block = self.block(pfn);
        match self.zone.get(block).map(|zone| zone.load(Relaxed)) {
            Some(NO_ZONE) | None => None,
            Some(zone) => Some(zone as usize),
        }
    }

    /// A copy of the table for PFNs `0..end_pfn` (memory hotplug); blocks
    /// beyond the old end start MOVABLE and in no zone.
    pub fn grown(&self, end_pfn: Pfn) -> PageblockTable {
        let grown = PageblockTable::new(end_pfn, self.order);
        for (block, (bits, zone)) in self.bits.iter().zip(self.zone.iter()).enumerate() {
            if block < grown.bits.len() {
                grown.bits[block].store(bits.load(Relaxed), Relaxed);
                grown.zone[block].store(zone.load(Relaxed), Relaxed);
            }
        }
        grown
    }

    /// Takes the block holding `pfn` out of every zone (memory offline).
    pub fn clear_zone(&self, pfn: Pfn) {
        self.zone[self.block(pfn)].store(NO_ZONE, Relaxed);
    }

    /// Puts the block holding `pfn` in zone `zone`.
    pub fn set_zone(&self, pfn: Pfn, zone: u16) {
        self.zone[self.block(pfn)].store(zone, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_start_movable_in_no_zone() {
        let table = PageblockTable::new(Pfn(4096), 9);
        assert_eq!(table.migratetype(Pfn(0)), MigrateType::Movable);
        assert_eq!(table.zone(Pfn(100)), None);
    }

    #[test]
    fn freetype_and_skip_bits_are_independent() {
        let table = PageblockTable::new(Pfn(4096), 9);
        table.set_skip(Pfn(600), true);
        let unmapped = FreeType {
            migratetype: MigrateType::Unmovable,
            flags: FreeTypeFlags::UNMAPPED,
        };
        table.set_freetype(Pfn(512), unmapped);
        assert_eq!(table.freetype(Pfn(1023)), unmapped);
        assert!(table.skip(Pfn(512)));
        table.set_freetype(Pfn(512), FreeType::plain(MigrateType::Reclaimable));
        assert_eq!(
            table.freetype(Pfn(512)),
            FreeType::plain(MigrateType::Reclaimable)
        );
        assert!(table.skip(Pfn(512)));
        assert!(!table.skip(Pfn(0)));
    }
}
