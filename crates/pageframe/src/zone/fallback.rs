//! When the wanted freetype's lists are empty: claim a pageblock of another
//! type, or steal pages from one without converting it. mirrors __rmqueue(),
//! __rmqueue_claim(), __rmqueue_steal(), should_try_claim_block(),
//! find_suitable_fallback(), try_to_claim_block() and the move_freepages
//! helpers of mainline mm/page_alloc.c (the 6.15 rework of the fallback code).
//! Watermark boosting on fallback is not modelled: it only feeds kswapd.

use super::Zone;
use crate::frames::Frames;
use crate::freetype::{FreeType, MigrateType};
use crate::gfp::AllocFlags;
use crate::memmap::PageState;
use crate::types::Pfn;

/// Where `rmqueue_bulk()` found pages last time, so that a batch refill does
/// not repeat failed searches (`enum rmqueue_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmqueueMode {
    /// Try the wanted freetype first.
    Normal,
    /// Claiming failed: go straight to stealing.
    Steal,
}

enum Fallback {
    Found(usize),
    NoneAtOrder,
    OrderTooLowToClaim,
}

impl Zone {
    /// Takes a block of `order` for a request of `freetype`. mirrors
    /// __rmqueue() (without CMA). Fallback (claim and steal) stays among the
    /// plain migratetypes: an unmapped request takes only unmapped blocks,
    /// and gets more of them by converting a pageblock (`direct_map`).
    pub(crate) fn take_block(
        &mut self,
        frames: &Frames,
        order: u8,
        freetype: FreeType,
        alloc_flags: AllocFlags,
        mode: &mut RmqueueMode,
    ) -> Option<u32> {
        let migratetype = freetype.migratetype;
        if freetype.is_unmapped() {
            return self.rmqueue_smallest(frames, order, freetype.index()?);
        }
        if *mode == RmqueueMode::Normal {
            if let Some(pfn) = self.rmqueue_smallest(frames, order, migratetype.index()) {
                return Some(pfn);
            }
        }
        if *mode != RmqueueMode::Steal {
            if let Some(pfn) = self.rmqueue_claim(frames, order, migratetype, alloc_flags) {
                *mode = RmqueueMode::Normal;
                return Some(pfn);
            }
        }
        if !alloc_flags.contains(AllocFlags::NOFRAGMENT) {
            if let Some(pfn) = self.rmqueue_steal(frames, order, migratetype) {
                *mode = RmqueueMode::Steal;
                return Some(pfn);
            }
        }
        None
    }

    /// mirrors should_try_claim_block().
    fn should_try_claim_block(&self, order: u8, start: MigrateType) -> bool {
        order >= self.pageblock_order
            || order >= self.pageblock_order / 2
            || matches!(start, MigrateType::Reclaimable | MigrateType::Unmovable)
    }

    /// mirrors find_suitable_fallback().
    fn find_suitable_fallback(&self, order: u8, start: MigrateType, claimable: bool) -> Fallback {
        if claimable && !self.should_try_claim_block(order, start) {
            return Fallback::OrderTooLowToClaim;
        }
        if self.free_area[order as usize].nr_free == 0 {
            return Fallback::NoneAtOrder;
        }
        start
            .fallbacks()
            .iter()
            .find(|fallback| !self.list_is_empty(order as usize, fallback.index()))
            .map_or(Fallback::NoneAtOrder, |fallback| {
                Fallback::Found(fallback.index())
            })
    }

    /// Looks for the largest block of a fallback type and tries to claim its
    /// pageblock for `start`. mirrors __rmqueue_claim().
    fn rmqueue_claim(
        &mut self,
        frames: &Frames,
        order: u8,
        start: MigrateType,
        flags: AllocFlags,
    ) -> Option<u32> {
        let min_order = if order < self.pageblock_order && flags.contains(AllocFlags::NOFRAGMENT) {
            self.pageblock_order
        } else {
            order
        };
        for current in (min_order..=self.max_order).rev() {
            match self.find_suitable_fallback(current, start, true) {
                Fallback::NoneAtOrder => continue,
                Fallback::OrderTooLowToClaim => break,
                Fallback::Found(block_type) => {
                    let pfn = self.first_on_list(current as usize, block_type)?;
                    if let Some(pfn) =
                        self.try_to_claim_block(frames, pfn, current, order, start, block_type)
                    {
                        self.events.extfrag_claim += 1;
                        return Some(pfn);
                    }
                }
            }
        }
        None
    }

    /// Takes the smallest block of a fallback type without touching its
    /// pageblock's type. mirrors __rmqueue_steal().
    fn rmqueue_steal(&mut self, frames: &Frames, order: u8, start: MigrateType) -> Option<u32> {
        for current in order..=self.max_order {
            if let Fallback::Found(block_type) = self.find_suitable_fallback(current, start, false)
            {
                let pfn = self.first_on_list(current as usize, block_type)?;
                self.del_from_free_list(frames, pfn, current, block_type);
                self.expand(frames, pfn, order, current, block_type);
                self.events.extfrag_steal += 1;
                return Some(pfn);
            }
        }
        None
    }

    /// mirrors try_to_claim_block(): a block of pageblock order or more
    /// changes type whole; a smaller one converts its pageblock when at least
    /// half of the block is free or already alike.
    fn try_to_claim_block(
        &mut self,
        frames: &Frames,
        pfn: u32,
        current: u8,
        order: u8,
        start: MigrateType,
        block_type: usize,
    ) -> Option<u32> {
        let start_type = FreeType::plain(start);
        if current >= self.pageblock_order {
            self.del_from_free_list(frames, pfn, current, block_type);
            self.set_blocks_freetype(frames, pfn, current, start_type);
            self.expand(frames, pfn, order, current, start.index());
            return Some(pfn);
        }
        let (block_start, free_pages, movable_pages) =
            self.prep_move_freepages_block(frames, pfn)?;
        let alike_pages = if start == MigrateType::Movable {
            movable_pages
        } else if block_type == MigrateType::Movable.index() {
            self.pageblock_nr_pages() - (free_pages + movable_pages)
        } else {
            0
        };
        if free_pages + alike_pages >= self.pageblock_nr_pages() / 2 {
            self.move_freepages_block(frames, block_start, start.index());
            frames
                .blocks
                .set_freetype(Pfn(block_start as u64), start_type);
            return self.rmqueue_smallest(frames, order, start.index());
        }
        None
    }

    /// Counts the free and movable pages of the pageblock holding `pfn`; `None`
    /// when the block is not wholly inside the zone.
    /// mirrors prep_move_freepages_block().
    pub(crate) fn prep_move_freepages_block(
        &self,
        frames: &Frames,
        pfn: u32,
    ) -> Option<(u32, u64, u64)> {
        let start = pfn & !((1u32 << self.pageblock_order) - 1);
        let end = start as u64 + self.pageblock_nr_pages();
        if !self.span.contains(Pfn(start as u64)) || !self.span.contains(Pfn(end - 1)) {
            return None;
        }
        let (mut free, mut movable) = (0u64, 0u64);
        let mut at = start as u64;
        while at < end {
            let info = frames.memmap.info(at as u32);
            match info.state() {
                PageState::Buddy => {
                    free += info.order().nr_pages();
                    at += info.order().nr_pages();
                    continue;
                }
                PageState::Allocated if info.freetype() == MigrateType::Movable.index() => {
                    movable += 1
                }
                _ => {}
            }
            at += 1;
        }
        Some((start, free, movable))
    }

    /// Moves every free block whose head lies in the pageblock at
    /// `block_start` to the lists of `to`; returns the pages moved.
    /// mirrors __move_freepages_block().
    pub(crate) fn move_freepages_block(
        &mut self,
        frames: &Frames,
        block_start: u32,
        to: usize,
    ) -> u64 {
        let end = block_start as u64 + self.pageblock_nr_pages();
        let mut at = block_start as u64;
        let mut moved = 0;
        while at < end {
            let info = frames.memmap.info(at as u32);
            if info.state() != PageState::Buddy {
                at += 1;
                continue;
            }
            let order = info.order();
            if info.freetype() != to {
                self.move_to_free_list(frames, at as u32, order.0, info.freetype(), to);
            }
            moved += order.nr_pages();
            at += order.nr_pages();
        }
        moved
    }
}
