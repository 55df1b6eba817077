//! Split and merge: mirrors expand(), __rmqueue_smallest(), __free_one_page()
//! and buddy_merge_likely() of mm/page_alloc.c.
//!
//! ```text
//!  order 2 block at PFN 8, split for an order-0 request:
//!  | 8 | 9 |10 |11 |      8 is returned,
//!  |ret|o0 |  o1   |      10..11 goes to the order-1 list head, 9 to order-0's
//! ```

use super::Zone;
use crate::frames::Frames;
use crate::freetype::{FreeType, FreeTypeIdx};
use crate::memmap::{FrameIdx, PageInfo};
use crate::types::{Order, Pfn};

impl Zone {
    /// Splits the block at `pfn` from order `high` down to `low`, putting each
    /// upper half at the head of its order's list. mirrors expand().
    #[inline]
    pub(crate) fn expand(
        &mut self,
        frames: &Frames,
        pfn: FrameIdx,
        low: Order,
        high: Order,
        freetype: FreeTypeIdx,
    ) {
        for half in (low.0..high.0).rev().map(Order) {
            self.add_to_free_list(frames, pfn.offset(1 << half.0), half, freetype, false);
        }
    }

    /// Takes the smallest free block of `freetype` that fits `order` and splits
    /// it down. mirrors __rmqueue_smallest().
    #[inline]
    pub(crate) fn rmqueue_smallest(
        &mut self,
        frames: &Frames,
        order: Order,
        freetype: FreeTypeIdx,
    ) -> Option<FrameIdx> {
        for current in (order.0..=self.max_order.0).map(Order) {
            if let Some(pfn) = self.first_on_list(current, freetype) {
                self.del_from_free_list(frames, pfn, current, freetype);
                self.expand(frames, pfn, order, current, freetype);
                return Some(pfn);
            }
        }
        None
    }

    /// Returns a block to the buddy lists, merging it with free buddies up to
    /// MAX_PAGE_ORDER. `freetype` is the freetype of the block's pageblock.
    /// `to_tail` forces the tail (FPI_TO_TAIL); otherwise a block of the
    /// shuffle order goes to a random end (shuffle_pick_tail()) and a smaller
    /// one to the end the kernel's buddy_merge_likely() heuristic picks.
    /// mirrors __free_one_page().
    pub(crate) fn free_block(
        &mut self,
        frames: &Frames,
        pfn: FrameIdx,
        order: Order,
        freetype: FreeType,
        to_tail: bool,
    ) {
        let list = freetype
            .index()
            .expect("a pageblock always has a valid freetype");
        // Only block heads carry state. The freed block's record (Freeing or
        // Pcp) is cleared now: if the block merges with a lower buddy it
        // becomes an inner page of the merged block, and add_to_free_list()
        // below re-marks whichever page ends up the head.
        frames.memmap.set_info(pfn, PageInfo::UNTRACKED);
        let (mut pfn, mut order) = (pfn, order);
        while order < self.max_order {
            let buddy = pfn.buddy(order);
            let Some(buddy_list) = self.free_buddy(frames, buddy, order) else {
                break;
            };
            if order >= self.pageblock_order {
                // Never merge across pageblocks when one of them is isolated or
                // a HIGHATOMIC reserve (those must keep their own blocks), nor
                // a mapped pageblock with an unmapped one.
                let buddy_type = frames.blocks.freetype(buddy.pfn());
                if !pageblocks_mergeable(freetype, buddy_type) {
                    break;
                }
                if buddy_type != freetype {
                    // The merged block goes to our list: keep the buddy's
                    // pageblocks in step with the list it will be on.
                    self.set_blocks_freetype(frames, buddy, order, freetype);
                }
            }
            self.del_from_free_list(frames, buddy, order, buddy_list);
            pfn = pfn.min(buddy);
            order = Order(order.0 + 1);
        }
        // mirrors the to_tail choice of __free_one_page(): FPI_TO_TAIL, else
        // a random end for shuffle-order blocks (shuffle_order is Order(u8::MAX)
        // when shuffling is off, so this is one compare), else the merge
        // heuristic.
        let tail = to_tail
            || if order >= self.shuffle_order {
                self.pick_tail.pick()
            } else {
                self.buddy_merge_likely(frames, pfn, order)
            };
        self.add_to_free_list(frames, pfn, order, list, tail);
    }

    /// The list of the buddy at `buddy` if it is a free block of exactly
    /// `order` in this zone (page_is_buddy()).
    #[inline]
    fn free_buddy(&self, frames: &Frames, buddy: FrameIdx, order: Order) -> Option<FreeTypeIdx> {
        let pfn = buddy.pfn();
        if !self.span.contains(pfn) {
            return None;
        }
        let info = frames.memmap.info(buddy);
        if info.state() != crate::memmap::PageState::Buddy || info.order() != order {
            return None;
        }
        if order >= self.pageblock_order && frames.blocks.zone(pfn) != Some(self.index) {
            return None;
        }
        Some(info.freetype())
    }

    /// If the block we just freed could merge with its buddy one order up once
    /// that buddy's own buddy is freed, put it at the tail so that it is not
    /// handed out again soon. mirrors buddy_merge_likely().
    #[inline]
    fn buddy_merge_likely(&self, frames: &Frames, pfn: FrameIdx, order: Order) -> bool {
        let higher_order = Order(order.0 + 1);
        if higher_order >= self.max_order {
            return false;
        }
        let higher = pfn.align_down(higher_order);
        let higher_buddy = higher.buddy(higher_order);
        self.free_buddy(frames, higher_buddy, higher_order)
            .is_some()
    }

    /// Sets the freetype of every pageblock of the block at `pfn`.
    pub(crate) fn set_blocks_freetype(
        &self,
        frames: &Frames,
        pfn: FrameIdx,
        order: Order,
        freetype: FreeType,
    ) {
        let first = pfn.pfn().0;
        let last = first + order.max(self.pageblock_order).nr_pages();
        let mut block = first;
        while block < last {
            frames.blocks.set_freetype(Pfn(block), freetype);
            block += self.pageblock_nr_pages();
        }
    }
}

/// True when free blocks of pageblocks of these two freetypes may merge
/// into one block (`migratetype_is_mergeable()` on both sides when the
/// types differ; the freetype flags must agree, as the series requires).
pub(crate) fn pageblocks_mergeable(mine: FreeType, theirs: FreeType) -> bool {
    if mine.flags != theirs.flags {
        return false;
    }
    mine.migratetype == theirs.migratetype
        || (mine.migratetype.is_mergeable() && theirs.migratetype.is_mergeable())
}
