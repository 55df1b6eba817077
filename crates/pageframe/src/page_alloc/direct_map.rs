//! Pageblocks moving between the direct map and the unmapped pools.
//! mirrors __rmqueue_direct_map() of the `__GFP_UNMAPPED` series.
//!
//! When the lists of the wanted freetype are empty, a whole free block of at
//! least a pageblock (`max(order, pageblock_order)`) is taken from the lists
//! of the same migratetype with the other mapping, under the zone lock; the
//! lock is dropped for the mapping change (unmapping needs a TLB shootdown,
//! which may not wait under a spinlock); the block's pageblocks then take the
//! wanted freetype and what the caller does not need goes on its lists.
//!
//! - Unmapping: one protection change and one global TLB flush for the whole
//!   block, however many pages later come out of it.
//! - Mapping back: the block is zeroed before it becomes reachable through
//!   the direct map again, so nothing written while it was unmapped leaks
//!   into the mapped pool.
//!
//! As in the series, the other mapping of a freetype is the same
//! migratetype with the UNMAPPED flag flipped: a mapped MOVABLE request does
//! not take (UNMOVABLE, UNMAPPED) blocks. Callers that cannot block
//! (`ALLOC_NOBLOCK`) never convert.
//!
//! While the lock is dropped the block is recorded as allocated at the
//! conversion order, so the memmap walk of the invariants still finds every
//! page in one block.

use std::sync::atomic::Ordering::Relaxed;

use super::PageAllocator;
use crate::freetype::{FreeType, FreeTypeIdx, MigrateType};
use crate::gfp::AllocFlags;
use crate::memmap::{FrameIdx, PageInfo, PageState};
use crate::sync::LockFamily;
use crate::types::{Order, ZoneIdx};
use crate::zone::{RmqueueMode, Zone};

/// A free block taken off the lists for a conversion.
struct Taken {
    pfn: FrameIdx,
    order: Order,
    from: FreeType,
}

impl<L: LockFamily> PageAllocator<L> {
    /// Takes a block of `order` and `freetype` by converting a pageblock of
    /// the other mapping; `None` when not allowed, nothing to convert, or
    /// the mapping change failed (the block then goes back where it was).
    pub(crate) fn rmqueue_direct_map(
        &self,
        zone: ZoneIdx,
        order: Order,
        flags: AllocFlags,
        freetype: FreeType,
    ) -> Option<FrameIdx> {
        let other = freetype.with_mapping_flipped();
        other.index()?;
        if flags.contains(AllocFlags::NOBLOCK) {
            return None;
        }
        if !freetype.is_unmapped() && self.unmapped_pageblocks.load(Relaxed) == 0 {
            return None;
        }
        let alloc_order = order.max(self.layout.pageblock_order);
        let taken = self.take_for_conversion(zone, |buddy| {
            let pfn = buddy.take_block(
                &self.frames,
                alloc_order,
                other,
                flags,
                &mut RmqueueMode::Normal,
            )?;
            Some(Taken {
                pfn,
                order: alloc_order,
                from: other,
            })
        })?;
        let pfn = taken.pfn;
        let (mut buddy, converted) = self.convert_taken(zone, &taken, freetype);
        if converted {
            buddy.expand(&self.frames, pfn, order, alloc_order, freetype.index()?);
        } else {
            buddy.free_block(&self.frames, pfn, alloc_order, taken.from, false);
        }
        self.publish(zone, &buddy);
        converted.then_some(pfn)
    }

    /// Gives every wholly free unmapped pageblock back to the direct map:
    /// zeroed, remapped, and on the plain lists of its migratetype. Per-CPU
    /// lists are not drained first (call [`Self::drain_all_pages`] for
    /// that). Returns the pageblocks remapped. A policy hook beyond the
    /// series (which remaps only on demand, in __rmqueue_direct_map()): a
    /// shrinker of the unmapped pools, and the way an experiment starts each
    /// sample from a fully mapped machine.
    pub fn release_unmapped_pageblocks(&self) -> u64 {
        let pageblock_order = self.layout.pageblock_order;
        let before = self.unmapped_pageblocks.load(Relaxed);
        for zone in self.zone_ids() {
            while let Some(taken) = self.take_for_conversion(zone, |buddy| {
                let (pfn, order, from) =
                    buddy.take_free_unmapped_block(&self.frames, pageblock_order)?;
                Some(Taken { pfn, order, from })
            }) {
                let plain = FreeType::plain(taken.from.migratetype);
                let (mut buddy, converted) = self.convert_taken(zone, &taken, plain);
                let now = if converted { plain } else { taken.from };
                buddy.free_block(&self.frames, taken.pfn, taken.order, now, false);
                self.publish(zone, &buddy);
                if !converted {
                    break;
                }
            }
        }
        before - self.unmapped_pageblocks.load(Relaxed)
    }

    /// Takes a block off `zone`'s lists with `take` under the zone lock and
    /// records it in flight (allocated at its order).
    fn take_for_conversion(
        &self,
        zone: ZoneIdx,
        take: impl FnOnce(&mut Zone) -> Option<Taken>,
    ) -> Option<Taken> {
        let mut buddy = self.lock_zone(zone);
        let taken = take(&mut buddy);
        if let Some(taken) = &taken {
            let list = taken
                .from
                .index()
                .unwrap_or(FreeTypeIdx::of(MigrateType::Unmovable));
            let in_flight = PageInfo::new(PageState::Allocated, taken.order, list);
            self.frames.memmap.set_info(taken.pfn, in_flight);
        }
        self.publish(zone, &buddy);
        taken
    }

    /// Changes the mapping of a taken block to that of `to`, with no lock
    /// held (unmap + one flush, or remap + zero), then relocks the zone and,
    /// on success, gives the block's pageblocks freetype `to` and counts the
    /// conversion. Returns the zone guard and whether it succeeded; the
    /// caller puts the block on a list either way.
    fn convert_taken(
        &self,
        zone: ZoneIdx,
        taken: &Taken,
        to: FreeType,
    ) -> (L::Guard<'_, Zone>, bool) {
        let start = taken.pfn.pfn();
        let nr_pages = taken.order.nr_pages();
        let changed = if to.is_unmapped() {
            self.backing.unmap_direct(start, nr_pages)
        } else {
            self.backing
                .remap_direct(start, nr_pages)
                .and_then(|()| self.backing.zero_mapped(start, nr_pages))
        };
        let mut buddy = self.lock_zone(zone);
        if changed.is_err() {
            return (buddy, false);
        }
        buddy.set_blocks_freetype(&self.frames, taken.pfn, taken.order, to);
        let nr_pageblocks = 1u64 << (taken.order.0 - self.layout.pageblock_order.0);
        let events = buddy.events_mut();
        if to.is_unmapped() {
            events.direct_map_unmapped_blocks += nr_pageblocks;
            self.unmapped_pageblocks.fetch_add(nr_pageblocks, Relaxed);
        } else {
            events.direct_map_remapped_blocks += nr_pageblocks;
            self.unmapped_pageblocks.fetch_sub(nr_pageblocks, Relaxed);
        }
        (buddy, true)
    }
}
