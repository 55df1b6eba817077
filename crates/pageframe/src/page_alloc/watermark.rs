//! The watermark checks of the allocation paths, on what each zone
//! publishes for lockless readers (free pages, HIGHATOMIC reserve, boost,
//! the orders with a listed block): no zone lock, as the kernel reads
//! `NR_FREE_PAGES` and `free_area[]` racily. mirrors zone_watermark_fast()
//! and __zone_watermark_ok(), and the `ZONE_BELOW_HIGH` step of
//! get_page_from_freelist().

use super::{PageAllocator, ZoneSlot};
use crate::gfp::AllocFlags;
use crate::sync::LockFamily;
use crate::types::{Order, ZoneType};
use crate::zone::watermark::{watermark_free_ok, ZoneFree};
use crate::zone::BlockOrders;

impl<L: LockFamily> PageAllocator<L> {
    /// The watermark step of get_page_from_freelist() for one zone: above
    /// the high watermark (boost included, as high_wmark_pages() reads it)
    /// passes at once; an allocation that finds the zone below it sets
    /// `ZONE_BELOW_HIGH` (which shrinks the per-CPU lists' `high` on later
    /// frees); then the allocation's own watermark decides.
    #[inline(always)]
    pub(super) fn zone_watermark_passes(
        &self,
        slot: &ZoneSlot<L>,
        order: Order,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        if !slot.flags.below_high() {
            let high = slot.watermarks.high + slot.watermark_boost.get();
            if self.zone_watermark_ok(slot, order, high, highest_zone, flags) {
                return true;
            }
            slot.flags.set_below_high(true);
        }
        self.zone_watermark_fast(slot, order, 0, highest_zone, flags)
    }

    /// zone_watermark_fast() at the watermark `flags` name as wmark_pages()
    /// reads it (the zone's mark plus its boost) plus `extra` pages; an
    /// order-0 `__GFP_HIGH` request at the min watermark ignores the boost,
    /// so that kswapd is woken only below the low watermark.
    #[inline]
    pub(crate) fn zone_watermark_fast(
        &self,
        slot: &ZoneSlot<L>,
        order: Order,
        extra: u64,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        let index = flags.watermark_index();
        let mark = slot.watermarks.get(index) + extra;
        let boost = slot.watermark_boost.get();
        if self.zone_watermark_ok(slot, order, mark + boost, highest_zone, flags) {
            return true;
        }
        order == Order(0)
            && boost > 0
            && index == 0
            && flags.contains(AllocFlags::MIN_RESERVE)
            && self.zone_watermark_ok(slot, order, mark, highest_zone, flags)
    }

    /// mirrors zone_watermark_fast() at a given mark: for order 0, free
    /// pages above the mark (HIGHATOMIC reserves excluded unless the caller
    /// may use them) pass at once; everything else takes __zone_watermark_ok().
    #[inline]
    pub(crate) fn zone_watermark_ok(
        &self,
        slot: &ZoneSlot<L>,
        order: Order,
        mark: u64,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        let free_pages = slot.free_pages.get();
        let reserved_highatomic = slot.reserved_highatomic.get();
        let lowmem_reserve = slot.lowmem_reserve[highest_zone.index()];
        if order == Order(0) {
            let reserves = flags.intersects(AllocFlags::RESERVES);
            let reserved = if reserves { 0 } else { reserved_highatomic };
            let usable = free_pages - free_pages.min(reserved);
            if usable > mark + lowmem_reserve {
                return true;
            }
            // Without the reserves __zone_watermark_ok() would compare the
            // same sum for order 0 (no lowered mark, no block to find): the
            // answer is already known.
            if !reserves {
                return false;
            }
        }
        // Built here, not before the order-0 test, so that the common case
        // keeps the counts in registers.
        let free = ZoneFree {
            free_pages,
            reserved_highatomic,
            lowmem_reserve,
        };
        Self::zone_watermark_slow(slot, order, free, mark, flags)
    }

    /// The rest of [`Self::zone_watermark_ok`]: __zone_watermark_ok(), and
    /// for higher orders a free block of at least the order, read from the
    /// zone's published [`BlockOrders`] without the lock, as the kernel reads
    /// `free_area[].nr_free` and the list heads.
    #[inline(never)]
    fn zone_watermark_slow(
        slot: &ZoneSlot<L>,
        order: Order,
        free: ZoneFree,
        mark: u64,
        flags: AllocFlags,
    ) -> bool {
        if !watermark_free_ok(free, order, mark, flags) {
            return false;
        }
        if order == Order(0) {
            return true;
        }
        let highatomic = flags.intersects(AllocFlags::HIGHATOMIC | AllocFlags::OOM);
        BlockOrders(slot.block_orders.get()).has_block_at_or_above(order, highatomic)
    }
}
