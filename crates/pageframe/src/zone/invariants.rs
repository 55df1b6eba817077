//! The zone's invariants as code (see the module header of `zone`).

use super::Zone;
use crate::error::InvariantError;
use crate::frames::Frames;
use crate::freetype::{FreeTypeIdx, MigrateType};
use crate::memmap::{FrameIdx, PageState};
use crate::types::{Order, Pfn};

impl Zone {
    /// Walks every free list and checks the zone's invariants. Returns the
    /// number of free pages found (ISOLATE included).
    pub fn check_invariants(&self, frames: &Frames) -> Result<u64, InvariantError> {
        let fail = |what: String| Err(InvariantError(format!("zone {}: {what}", self.index)));
        if self.watermark_boost > self.boost_ceiling || self.boost_limit > self.boost_ceiling {
            return fail(format!(
                "watermark boost {} or its limit {} above the ceiling {}",
                self.watermark_boost, self.boost_limit, self.boost_ceiling
            ));
        }
        let mut total = 0u64;
        let mut isolated = 0u64;
        for (order, area) in (0..=self.max_order.0).map(Order).zip(self.free_area.iter()) {
            let mut blocks = 0u64;
            for (freetype, list) in FreeTypeIdx::all().zip(&area.lists) {
                let mut prev = FrameIdx::NIL;
                let mut pfn = list.head;
                while pfn != FrameIdx::NIL {
                    let info = frames.memmap.info(pfn);
                    if info.state() != PageState::Buddy
                        || info.order() != order
                        || info.freetype() != freetype
                    {
                        return fail(format!(
                            "PFN {pfn} on list order {order} type {freetype} has record {:?}/{}/{}",
                            info.state(),
                            info.order(),
                            info.freetype()
                        ));
                    }
                    if !pfn.is_aligned(order) {
                        return fail(format!(
                            "PFN {pfn} on the order-{order} list is not aligned"
                        ));
                    }
                    let end = Pfn(pfn.pfn().0 + order.nr_pages() - 1);
                    if !self.span.contains(pfn.pfn()) || !self.span.contains(end) {
                        return fail(format!(
                            "order-{order} block at PFN {pfn} is outside the zone span"
                        ));
                    }
                    let block_type = frames.blocks.freetype(pfn.pfn());
                    if block_type.index() != Some(freetype) {
                        return fail(format!(
                            "PFN {pfn} is on the {} list but its pageblock is {block_type}",
                            freetype.freetype()
                        ));
                    }
                    if frames.memmap.prev(pfn) != prev {
                        return fail(format!("PFN {pfn} has a broken prev link"));
                    }
                    self.check_unmerged_buddy(frames, pfn, order)
                        .map_err(|what| InvariantError(format!("zone {}: {what}", self.index)))?;
                    blocks += 1;
                    if freetype == FreeTypeIdx::of(MigrateType::Isolate) {
                        isolated += order.nr_pages();
                    } else {
                        total += order.nr_pages();
                    }
                    prev = pfn;
                    pfn = frames.memmap.next(pfn);
                }
                if list.tail != prev {
                    return fail(format!(
                        "order {order} type {freetype}: tail is not the last entry"
                    ));
                }
                let listed = self.listed_orders[freetype.index()] >> order.0 & 1 == 1;
                if listed == list.is_empty() {
                    return fail(format!(
                        "order {order} type {freetype}: listed-orders bit {listed} but the list is {}",
                        if list.is_empty() { "empty" } else { "not empty" }
                    ));
                }
            }
            if blocks != area.nr_free {
                return fail(format!(
                    "order {order}: nr_free {} but {blocks} blocks listed",
                    area.nr_free
                ));
            }
        }
        let fallbacks = self.events.extfrag_claim + self.events.extfrag_steal;
        if self.extfrag.total() != fallbacks {
            return fail(format!(
                "{} fallback events by key but {fallbacks} claims and steals",
                self.extfrag.total()
            ));
        }
        if total != self.nr_free || isolated != self.nr_isolated_free {
            return fail(format!(
                "nr_free {} / isolated {} but lists hold {total} / {isolated}",
                self.nr_free, self.nr_isolated_free
            ));
        }
        Ok(total + isolated)
    }

    /// A free block and its free buddy of the same order must have merged,
    /// unless the merge was refused (MAX_PAGE_ORDER), or the two are whole
    /// pageblocks or larger: those merge only if their pageblocks'
    /// freetypes allow it when one is freed, and a pageblock's type can
    /// change later without a merge, as the kernel's move_to_free_list()
    /// and move_freepages_block() do when unreserve_highatomic_pageblock()
    /// or a fallback claim re-types a pageblock holding free blocks (a
    /// HIGHATOMIC order-9 block next to a free Unmovable one becomes
    /// Unmovable and stays unmerged until one of them is allocated). Below
    /// the pageblock order both lie in one pageblock: they must merge.
    fn check_unmerged_buddy(
        &self,
        frames: &Frames,
        pfn: FrameIdx,
        order: Order,
    ) -> Result<(), String> {
        if order >= self.max_order || order >= self.pageblock_order {
            return Ok(());
        }
        let buddy = pfn.buddy(order);
        if !self.span.contains(buddy.pfn()) {
            return Ok(());
        }
        let info = frames.memmap.info(buddy);
        if info.state() != PageState::Buddy || info.order() != order {
            return Ok(());
        }
        Err(format!(
            "free buddies {pfn} and {buddy} of order {order} are not merged"
        ))
    }
}
