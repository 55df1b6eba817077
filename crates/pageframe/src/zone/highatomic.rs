//! The high-order atomic reserve: pageblocks set aside after a high-order
//! atomic allocation succeeds, so that the next one finds a block too.
//! mirrors reserve_highatomic_pageblock() and unreserve_highatomic_pageblock().

use super::Zone;
use crate::frames::Frames;
use crate::freetype::{FreeType, FreeTypeIdx, MigrateType};
use crate::memmap::FrameIdx;
use crate::types::Order;

impl Zone {
    /// Limit of the reserve: one pageblock or about 1% of the zone.
    pub(crate) fn highatomic_limit(&self) -> u64 {
        self.managed / 100 + self.pageblock_nr_pages()
    }

    /// Moves the pageblock(s) of the block just allocated at `pfn` into the
    /// HIGHATOMIC reserve, unless the reserve is full or the block is not of a
    /// plain mergeable type.
    pub(crate) fn reserve_highatomic_pageblock(
        &mut self,
        frames: &Frames,
        pfn: FrameIdx,
        order: Order,
    ) {
        if self.nr_reserved_highatomic >= self.highatomic_limit() {
            return;
        }
        let block_type = frames.blocks.freetype(pfn.pfn());
        if !block_type.migratetype.is_mergeable() || block_type.is_unmapped() {
            return;
        }
        let highatomic = FreeType::plain(MigrateType::HighAtomic);
        if order < self.pageblock_order {
            let block_start = pfn.align_down(self.pageblock_order);
            if self
                .prep_move_freepages_block(frames, block_start)
                .is_none()
            {
                return;
            }
            frames.blocks.set_freetype(block_start.pfn(), highatomic);
            self.move_freepages_block(
                frames,
                block_start,
                FreeTypeIdx::of(MigrateType::HighAtomic),
            );
            self.nr_reserved_highatomic += self.pageblock_nr_pages();
        } else {
            self.set_blocks_freetype(frames, pfn, order, highatomic);
            self.nr_reserved_highatomic += order.nr_pages();
        }
        self.events.highatomic_reserved += 1;
    }

    /// Gives one reserved pageblock that has free pages back to `to`.
    /// Unless `force`, the last pageblock of the reserve is kept.
    /// Returns true when a block was released.
    pub(crate) fn unreserve_highatomic_pageblock(
        &mut self,
        frames: &Frames,
        to: MigrateType,
        force: bool,
    ) -> bool {
        if !force && self.nr_reserved_highatomic <= self.pageblock_nr_pages() {
            return false;
        }
        let highatomic = FreeTypeIdx::of(MigrateType::HighAtomic);
        for order in (0..=self.max_order.0).map(Order) {
            let Some(pfn) = self.first_on_list(order, highatomic) else {
                continue;
            };
            if frames.blocks.migratetype(pfn.pfn()) == MigrateType::HighAtomic {
                let size = self.pageblock_nr_pages().max(order.nr_pages());
                self.nr_reserved_highatomic -= size.min(self.nr_reserved_highatomic);
            }
            if order >= self.pageblock_order {
                // The free block covers whole pageblocks: convert them all.
                self.set_blocks_freetype(frames, pfn, order, FreeType::plain(to));
                self.move_to_free_list(frames, pfn, order, highatomic, FreeTypeIdx::of(to));
            } else {
                let block_start = pfn.align_down(self.pageblock_order);
                frames
                    .blocks
                    .set_freetype(block_start.pfn(), FreeType::plain(to));
                self.move_freepages_block(frames, block_start, FreeTypeIdx::of(to));
            }
            self.events.highatomic_unreserved += 1;
            return true;
        }
        false
    }
}
