//! Pageblock flags: per pageblock, one word holding a byte of bits
//! (migratetype and freetype flags) and the zone the block
//! belongs to, so that the free path learns both with one load.
//!
//! Like `pageblock_flags` in the kernel, the bits change under the zone lock
//! and are read without it (the free path reads the migratetype locklessly).
//! A block's zone is fixed while the block is online. Writers change their
//! part of the word with an atomic read-modify-write, so a bits update and a
//! zone update never undo each other.

use crate::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::freetype::{FreeType, FreeTypeFlags, MigrateType};
use crate::types::{Order, Pfn, ZoneIdx};

const MIGRATETYPE_MASK: u32 = 0b0111;
const UNMAPPED_BIT: u32 = 0b1000;
const BITS_MASK: u32 = 0xff;
const ZONE_SHIFT: u32 = 16;

/// Zone index of a pageblock with no zone (a hole).
pub const NO_ZONE: u16 = u16::MAX;

/// The freetype of each value of the migratetype and UNMAPPED bits; values
/// that are no migratetype read as MOVABLE, what a block starts as.
const FREETYPES: [FreeType; 16] = {
    let mut table = [FreeType::plain(MigrateType::Movable); 16];
    let mut bits = 0;
    while bits < 16 {
        let migratetype = match MigrateType::from_index(bits & MIGRATETYPE_MASK as usize) {
            Some(migratetype) => migratetype,
            None => MigrateType::Movable,
        };
        let flags = if bits as u32 & UNMAPPED_BIT != 0 {
            FreeTypeFlags::UNMAPPED
        } else {
            FreeTypeFlags::NONE
        };
        table[bits] = FreeType { migratetype, flags };
        bits += 1;
    }
    table
};

/// What the free path needs of a pageblock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// The zone.
    pub zone: ZoneIdx,
    /// The freetype.
    pub freetype: FreeType,
}

/// Flags and zone of every pageblock of the machine.
pub struct PageblockTable {
    words: Box<[AtomicU32]>,
    order: Order,
}

impl PageblockTable {
    /// Bytes of one block's record.
    pub const RECORD_BYTES: usize = std::mem::size_of::<AtomicU32>();

    /// A table for PFNs `0..end_pfn`: every block MOVABLE (as memmap_init()
    /// leaves them) and in no zone.
    pub fn new(end_pfn: Pfn, pageblock_order: Order) -> PageblockTable {
        let blocks = Self::nr_blocks(end_pfn, pageblock_order);
        let initial = MigrateType::Movable as u32 | (NO_ZONE as u32) << ZONE_SHIFT;
        PageblockTable {
            words: (0..blocks).map(|_| AtomicU32::new(initial)).collect(),
            order: pageblock_order,
        }
    }

    #[inline]
    fn block(&self, pfn: Pfn) -> usize {
        (pfn.0 >> self.order.0) as usize
    }

    #[inline]
    fn bits(&self, pfn: Pfn) -> u32 {
        self.words[self.block(pfn)].load(Relaxed) & BITS_MASK
    }

    /// Replaces the bits selected by `mask` of the block holding `pfn`.
    fn update(&self, pfn: Pfn, mask: u32, value: u32) {
        let replace = |word: u32| Some(word & !mask | value & mask);
        let _ = self.words[self.block(pfn)].fetch_update(Relaxed, Relaxed, replace);
    }

    /// The records a table for PFNs `0..end_pfn` has: one per pageblock
    /// and one more, so the block of `end_pfn` itself has a record.
    pub fn nr_blocks(end_pfn: Pfn, pageblock_order: Order) -> usize {
        (end_pfn.0 >> pageblock_order.0) as usize + 1
    }

    /// Number of blocks in the table.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// The migratetype of the block holding `pfn` (`get_pfnblock_migratetype()`).
    #[inline]
    pub fn migratetype(&self, pfn: Pfn) -> MigrateType {
        self.freetype(pfn).migratetype
    }

    /// The freetype of the block holding `pfn`.
    #[inline]
    pub fn freetype(&self, pfn: Pfn) -> FreeType {
        FREETYPES[(self.bits(pfn) & (MIGRATETYPE_MASK | UNMAPPED_BIT)) as usize]
    }

    /// Sets the freetype of the block holding `pfn` (`set_pageblock_migratetype()`).
    /// The skip bit is kept.
    #[inline]
    pub fn set_freetype(&self, pfn: Pfn, freetype: FreeType) {
        let mut bits = freetype.migratetype as u32;
        if freetype.flags.contains(FreeTypeFlags::UNMAPPED) {
            bits |= UNMAPPED_BIT;
        }
        self.update(pfn, MIGRATETYPE_MASK | UNMAPPED_BIT, bits);
    }

    /// The zone index of the block holding `pfn`, if it is in a zone.
    #[inline]
    pub fn zone(&self, pfn: Pfn) -> Option<ZoneIdx> {
        self.lookup(pfn).map(|block| block.zone)
    }

    /// Zone and freetype of the block holding `pfn`, with one load; `None`
    /// when the block is in no zone.
    #[inline]
    pub fn lookup(&self, pfn: Pfn) -> Option<BlockInfo> {
        PageblockTable::decode(self.word(pfn)?)
    }

    /// The word of the block holding `pfn` (its zone and bits), for a
    /// caller that looks at many blocks: blocks with equal words have the
    /// same [`Self::decode`]. `None` past the table.
    #[inline]
    pub fn word(&self, pfn: Pfn) -> Option<u32> {
        Some(self.words.get(self.block(pfn))?.load(Relaxed))
    }

    /// Zone and freetype of a block whose word is `word`; `None` when the
    /// block is in no zone.
    #[inline]
    pub fn decode(word: u32) -> Option<BlockInfo> {
        match (word >> ZONE_SHIFT) as u16 {
            NO_ZONE => None,
            zone => Some(BlockInfo {
                zone: ZoneIdx(zone),
                freetype: FREETYPES[(word & (MIGRATETYPE_MASK | UNMAPPED_BIT)) as usize],
            }),
        }
    }

    /// A copy of the table for PFNs `0..end_pfn` (memory hotplug); blocks
    /// beyond the old end start MOVABLE and in no zone.
    pub fn grown(&self, end_pfn: Pfn) -> PageblockTable {
        let grown = PageblockTable::new(end_pfn, self.order);
        for (old, new) in self.words.iter().zip(grown.words.iter()) {
            new.store(old.load(Relaxed), Relaxed);
        }
        grown
    }

    /// Takes the block holding `pfn` out of every zone (memory offline).
    pub fn clear_zone(&self, pfn: Pfn) {
        self.set_zone(pfn, ZoneIdx(NO_ZONE));
    }

    /// Puts the block holding `pfn` in zone `zone`.
    pub fn set_zone(&self, pfn: Pfn, zone: ZoneIdx) {
        self.update(pfn, !BITS_MASK, u32::from(zone.0) << ZONE_SHIFT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_start_movable_in_no_zone() {
        let table = PageblockTable::new(Pfn(4096), Order(9));
        assert_eq!(table.migratetype(Pfn(0)), MigrateType::Movable);
        assert_eq!(table.zone(Pfn(100)), None);
    }

    #[test]
    fn freetype_and_zone_are_independent() {
        let table = PageblockTable::new(Pfn(4096), Order(9));
        table.set_zone(Pfn(600), ZoneIdx(3));
        let unmapped = FreeType {
            migratetype: MigrateType::Unmovable,
            flags: FreeTypeFlags::UNMAPPED,
        };
        table.set_freetype(Pfn(512), unmapped);
        assert_eq!(table.freetype(Pfn(1023)), unmapped);
        assert_eq!(table.zone(Pfn(512)), Some(ZoneIdx(3)));
        table.set_freetype(Pfn(512), FreeType::plain(MigrateType::Reclaimable));
        assert_eq!(
            table.freetype(Pfn(512)),
            FreeType::plain(MigrateType::Reclaimable)
        );
        assert_eq!(table.zone(Pfn(512)), Some(ZoneIdx(3)));
        assert_eq!(table.zone(Pfn(0)), None);
    }
}
