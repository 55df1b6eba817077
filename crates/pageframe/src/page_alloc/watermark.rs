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
            if self.zone_watermark_fast_at(slot, order, high, highest_zone, flags) {
                return true;
            }
            slot.flags.set_below_high(true);
        }
        self.zone_watermark_fast(slot, order, 0, highest_zone, flags)
    }

    /// zone_watermark_fast() at the watermark `flags` name as wmark_pages()
    /// reads it (the zone's mark plus its boost) plus `extra` pages.
    /// Inline everywhere, so that the fast path's check of a zone already
    /// below its high mark makes no call (an order-0 pair on such a zone:
    /// 276 instructions out of line, 251 inline).
    #[inline(always)]
    pub(crate) fn zone_watermark_fast(
        &self,
        slot: &ZoneSlot<L>,
        order: Order,
        extra: u64,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        let mark = slot.watermarks.get(flags.watermark_index()) + extra;
        let boost = slot.watermark_boost.get();
        self.zone_watermark_fast_at(slot, order, mark + boost, highest_zone, flags)
    }

    /// mirrors zone_watermark_fast() at a given mark: an order-0
    /// `__GFP_HIGH` request at the min watermark that fails it on a boosted
    /// zone is checked again at the plain min watermark, which boosting
    /// never raises, so that kswapd is woken only below the low watermark.
    #[inline(always)]
    fn zone_watermark_fast_at(
        &self,
        slot: &ZoneSlot<L>,
        order: Order,
        mark: u64,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        if self.zone_watermark_ok(slot, order, mark, highest_zone, flags) {
            return true;
        }
        // Tested here so that a caller whose flags name another watermark
        // (the fast paths: the low one) compiles no retry at all.
        flags.watermark_index() == 0 && self.min_reserve_retry(slot, order, highest_zone, flags)
    }

    /// The retry of [`Self::zone_watermark_fast_at`] at the plain min
    /// mark, for a request at the min watermark; out of line, as it is rare
    /// (a boosted zone, an order-0 `__GFP_HIGH` request).
    #[cold]
    #[inline(never)]
    fn min_reserve_retry(
        &self,
        slot: &ZoneSlot<L>,
        order: Order,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        order == Order(0)
            && slot.watermark_boost.get() > 0
            && flags.contains(AllocFlags::MIN_RESERVE)
            && self.zone_watermark_ok(slot, order, slot.watermarks.min, highest_zone, flags)
    }

    /// __zone_watermark_ok() of zone `index` for the reclaim layer, on
    /// `free_pages` it read (zone_watermark_ok_safe()'s snapshot, or
    /// should_reclaim_retry()'s free plus reclaimable pages) against an
    /// absolute `mark` (boost included where the caller's mark has it);
    /// false for a zone that does not exist.
    pub(crate) fn zone_watermark_ok_on(
        &self,
        index: usize,
        order: Order,
        mark: u64,
        highest_zone: ZoneType,
        flags: AllocFlags,
        free_pages: u64,
    ) -> bool {
        self.zones.get(index).is_some_and(|slot| {
            Self::zone_watermark_ok_free(slot, free_pages, order, mark, highest_zone, flags)
        })
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
        Self::zone_watermark_ok_free(
            slot,
            slot.free_pages.get(),
            order,
            mark,
            highest_zone,
            flags,
        )
    }

    /// [`Self::zone_watermark_ok`] on `free_pages` free pages.
    #[inline(always)]
    fn zone_watermark_ok_free(
        slot: &ZoneSlot<L>,
        free_pages: u64,
        order: Order,
        mark: u64,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
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

#[cfg(test)]
mod tests {
    use crate::gfp::AllocFlags;
    use crate::machine::MachineDesc;
    use crate::page_alloc::LocalPageAllocator;
    use crate::types::Order;

    /// get_page_from_freelist() tests the high mark with
    /// zone_watermark_fast(), whose retry at the plain min mark lets an
    /// order-0 `__GFP_HIGH` request at the min watermark pass a boosted
    /// zone without setting `ZONE_BELOW_HIGH`; at any other watermark, or
    /// without `ALLOC_MIN_RESERVE`, the same zone sets it.
    #[test]
    fn a_min_reserve_request_on_a_boosted_zone_passes_the_high_step_at_min() {
        let desc = MachineDesc::uniform(64 << 20, 1, 2).expect("machine");
        let cases = [
            (AllocFlags::MIN_RESERVE, Order(0), true),
            (
                AllocFlags::MIN_RESERVE | AllocFlags::WMARK_LOW,
                Order(0),
                false,
            ),
            (AllocFlags::empty(), Order(0), false),
            (AllocFlags::MIN_RESERVE, Order(1), false),
        ];
        for (flags, order, passes_without_flag) in cases {
            let allocator = LocalPageAllocator::boot(&desc).expect("boot");
            let slot = allocator
                .zones
                .iter()
                .find(|slot| slot.free_pages.get() > 0)
                .expect("a populated zone");
            let marks = slot.watermarks;
            // Boosted far above its high mark, with free pages just above
            // the plain min mark.
            slot.watermark_boost.set(2 * marks.high);
            slot.free_pages.set(marks.min + 1);
            let passes = allocator.zone_watermark_passes(slot, order, slot.zone_type, flags);
            assert_eq!(
                !slot.flags.below_high(),
                passes_without_flag,
                "{flags:?} order {order:?}"
            );
            if passes_without_flag {
                assert!(passes, "{flags:?}");
            }
        }
    }
}
