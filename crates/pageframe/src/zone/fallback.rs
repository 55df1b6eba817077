//! When the wanted freetype's lists are empty: claim a pageblock of another
//! type, or steal pages from one without converting it. mirrors __rmqueue(),
//! __rmqueue_claim(), __rmqueue_steal(), should_try_claim_block(),
//! find_suitable_fallback(), try_to_claim_block() and the move_freepages
//! helpers of mainline mm/page_alloc.c (the 6.15 rework of the fallback code),
//! with the watermark boost of a fallback into a foreign pageblock (`boost`).
//! Each claim and steal is counted per `mm_page_alloc_extfrag` key
//! (`extfrag`); the fallback table is the zone's `fallback_order`.

use super::{ExtfragKey, Zone};
use crate::frames::Frames;
use crate::freetype::{FreeType, FreeTypeIdx, MigrateType};
use crate::gfp::AllocFlags;
use crate::memmap::{FrameIdx, PageState};
use crate::types::{Order, Pfn};

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
    Found(FreeTypeIdx),
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
        order: Order,
        freetype: FreeType,
        alloc_flags: AllocFlags,
        mode: &mut RmqueueMode,
    ) -> Option<FrameIdx> {
        let migratetype = freetype.migratetype;
        if freetype.is_unmapped() {
            return self.rmqueue_smallest(frames, order, freetype.index()?);
        }
        if *mode == RmqueueMode::Normal {
            if let Some(pfn) = self.rmqueue_smallest(frames, order, FreeTypeIdx::of(migratetype)) {
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
    fn should_try_claim_block(&self, order: Order, start: MigrateType) -> bool {
        order >= self.pageblock_order
            || order.0 >= self.pageblock_order.0 / 2
            || matches!(start, MigrateType::Reclaimable | MigrateType::Unmovable)
    }

    /// mirrors find_suitable_fallback().
    fn find_suitable_fallback(
        &self,
        order: Order,
        start: MigrateType,
        claimable: bool,
    ) -> Fallback {
        if claimable && !self.should_try_claim_block(order, start) {
            return Fallback::OrderTooLowToClaim;
        }
        if self.free_area[order.index()].nr_free == 0 {
            return Fallback::NoneAtOrder;
        }
        self.fallback_order
            .fallbacks(start)
            .iter()
            .find(|&&fallback| !self.list_is_empty(order, FreeTypeIdx::of(fallback)))
            .map_or(Fallback::NoneAtOrder, |&fallback| {
                Fallback::Found(FreeTypeIdx::of(fallback))
            })
    }

    /// Looks for the largest block of a fallback type and tries to claim its
    /// pageblock for `start`. mirrors __rmqueue_claim().
    fn rmqueue_claim(
        &mut self,
        frames: &Frames,
        order: Order,
        start: MigrateType,
        flags: AllocFlags,
    ) -> Option<FrameIdx> {
        let min_order = if order < self.pageblock_order && flags.contains(AllocFlags::NOFRAGMENT) {
            self.pageblock_order
        } else {
            order
        };
        for current in (min_order.0..=self.max_order.0).rev().map(Order) {
            match self.find_suitable_fallback(current, start, true) {
                Fallback::NoneAtOrder => continue,
                Fallback::OrderTooLowToClaim => break,
                Fallback::Found(block_type) => {
                    let pfn = self.first_on_list(current, block_type)?;
                    if let Some(pfn) = self
                        .try_to_claim_block(frames, pfn, current, order, start, block_type, flags)
                    {
                        self.events.extfrag_claim += 1;
                        self.count_extfrag(frames, pfn, order, current, start, block_type);
                        return Some(pfn);
                    }
                }
            }
        }
        None
    }

    /// Takes the smallest block of a fallback type without touching its
    /// pageblock's type. mirrors __rmqueue_steal().
    fn rmqueue_steal(
        &mut self,
        frames: &Frames,
        order: Order,
        start: MigrateType,
    ) -> Option<FrameIdx> {
        for current in (order.0..=self.max_order.0).map(Order) {
            if let Fallback::Found(block_type) = self.find_suitable_fallback(current, start, false)
            {
                let pfn = self.first_on_list(current, block_type)?;
                self.del_from_free_list(frames, pfn, current, block_type);
                self.expand(frames, pfn, order, current, block_type);
                self.events.extfrag_steal += 1;
                self.count_extfrag(frames, pfn, order, current, start, block_type);
                return Some(pfn);
            }
        }
        None
    }

    /// mirrors try_to_claim_block(): a block of pageblock order or more
    /// changes type whole; for a smaller one the watermarks are boosted
    /// (kswapd is to be woken when the allocation may wake it), then its
    /// pageblock converts when at least half of it is free or already alike.
    #[allow(clippy::too_many_arguments)]
    fn try_to_claim_block(
        &mut self,
        frames: &Frames,
        pfn: FrameIdx,
        current: Order,
        order: Order,
        start: MigrateType,
        block_type: FreeTypeIdx,
        alloc_flags: AllocFlags,
    ) -> Option<FrameIdx> {
        let start_type = FreeType::plain(start);
        if current >= self.pageblock_order {
            self.del_from_free_list(frames, pfn, current, block_type);
            self.set_blocks_freetype(frames, pfn, current, start_type);
            self.expand(frames, pfn, order, current, FreeTypeIdx::of(start));
            return Some(pfn);
        }
        if self.boost_watermark() && alloc_flags.contains(AllocFlags::KSWAPD) {
            self.mark_boosted();
        }
        let (block_start, free_pages, movable_pages) =
            self.prep_move_freepages_block(frames, pfn)?;
        let alike_pages = if start == MigrateType::Movable {
            movable_pages
        } else if block_type == FreeTypeIdx::of(MigrateType::Movable) {
            self.pageblock_nr_pages() - (free_pages + movable_pages)
        } else {
            0
        };
        if free_pages + alike_pages >= self.pageblock_nr_pages() / 2 {
            self.move_freepages_block(frames, block_start, FreeTypeIdx::of(start));
            frames.blocks.set_freetype(block_start.pfn(), start_type);
            return self.rmqueue_smallest(frames, order, FreeTypeIdx::of(start));
        }
        None
    }

    /// Counts a claim or steal that handed out `frame` from a `block_type`
    /// block of order `current` for a request of `order` and `start`, as
    /// `mm_page_alloc_extfrag` reports it: `change_ownership` is whether the
    /// frame's pageblock now has the request's migratetype, read after the
    /// fact as the tracepoint reads it. mirrors the
    /// trace_mm_page_alloc_extfrag() calls of __rmqueue_claim() and
    /// __rmqueue_steal().
    fn count_extfrag(
        &mut self,
        frames: &Frames,
        frame: FrameIdx,
        order: Order,
        current: Order,
        start: MigrateType,
        block_type: FreeTypeIdx,
    ) {
        let change_ownership = frames.blocks.migratetype(frame.pfn()) == start;
        self.extfrag.count(ExtfragKey {
            alloc_order: order,
            fallback_order: current,
            alloc_migratetype: start,
            fallback_migratetype: block_type.freetype().migratetype,
            change_ownership,
        });
    }

    /// Counts the free and movable pages of the pageblock holding `pfn`; `None`
    /// when the block is not wholly inside the zone.
    /// mirrors prep_move_freepages_block().
    pub(crate) fn prep_move_freepages_block(
        &self,
        frames: &Frames,
        pfn: FrameIdx,
    ) -> Option<(FrameIdx, u64, u64)> {
        let start = pfn.align_down(self.pageblock_order);
        let end = start.pfn().0 + self.pageblock_nr_pages();
        if !self.span.contains(start.pfn()) || !self.span.contains(Pfn(end - 1)) {
            return None;
        }
        let (mut free, mut movable) = (0u64, 0u64);
        let mut at = start.pfn().0;
        while at < end {
            let info = frames.memmap.info(FrameIdx::covered(Pfn(at)));
            match info.state() {
                PageState::Buddy => {
                    free += info.order().nr_pages();
                    at += info.order().nr_pages();
                    continue;
                }
                PageState::Allocated
                    if info.freetype() == FreeTypeIdx::of(MigrateType::Movable) =>
                {
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
        block_start: FrameIdx,
        to: FreeTypeIdx,
    ) -> u64 {
        let end = block_start.pfn().0 + self.pageblock_nr_pages();
        let mut at = block_start.pfn().0;
        let mut moved = 0;
        while at < end {
            let info = frames.memmap.info(FrameIdx::covered(Pfn(at)));
            if info.state() != PageState::Buddy {
                at += 1;
                continue;
            }
            let order = info.order();
            if info.freetype() != to {
                self.move_to_free_list(
                    frames,
                    FrameIdx::covered(Pfn(at)),
                    order,
                    info.freetype(),
                    to,
                );
            }
            moved += order.nr_pages();
            at += order.nr_pages();
        }
        moved
    }
}
