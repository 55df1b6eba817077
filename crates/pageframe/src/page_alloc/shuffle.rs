//! Free-list shuffling: a Fisher–Yates pass over each zone's free blocks of
//! SHUFFLE_ORDER at boot and after every memory-hotplug online, so that the
//! order in which the allocator hands out physical memory stops following
//! physical addresses. mirrors mm/shuffle.c (shuffle_free_memory(),
//! shuffle_zone(), __shuffle_zone(), shuffle_valid_page()); the random
//! head/tail choice on free (shuffle_pick_tail()) is `zone::PickTail`.
//!
//! ```text
//!  zone of 4 order-10 blocks, free list after boot (to the tail, in order):
//!    head -> [0] -> [1024] -> [2048] -> [3072]
//!  after shuffle_zone (each block swapped with a random free one):
//!    head -> [2048] -> [0] -> [3072] -> [1024]
//! ```
//!
//! Like the kernel's, the pass "need not be a perfect shuffle": it does not
//! correct modulo bias, it skips a block when ten random picks find no free
//! block of the same order, and it never swaps blocks of different
//! migratetypes (they sit on different lists).
//!
//! Policy: on when the layout says so (`page_alloc.shuffle=1`, or a
//! memory-side cache without `page_alloc.shuffle=0`); off costs one compare
//! of the freed order against u8::MAX on the buddy free path and nothing on
//! the per-CPU paths.
//!
//! Lock order: the zone lock only, dropped and retaken every 100 blocks.

use super::PageAllocator;
use crate::freetype::FreeTypeIdx;
use crate::memmap::{FrameIdx, PageState};
use crate::sync::LockFamily;
use crate::types::{Order, Pfn, ZoneIdx};

/// Random picks tried for a swap partner before a block is skipped.
pub const SHUFFLE_RETRY: u32 = 10;

/// The zone lock is dropped every this many blocks (`cond_resched()` point).
const BLOCKS_PER_LOCK_HOLD: u64 = 100;

/// What one shuffle pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShuffleStats {
    /// Free blocks of the shuffle order visited.
    pub blocks: u64,
    /// Blocks swapped with a partner.
    pub swapped: u64,
    /// Blocks skipped: SHUFFLE_RETRY picks found no free partner.
    pub no_partner: u64,
    /// Blocks skipped: the partner's migratetype differs.
    pub type_mismatch: u64,
}

impl std::ops::AddAssign for ShuffleStats {
    fn add_assign(&mut self, other: ShuffleStats) {
        self.blocks += other.blocks;
        self.swapped += other.swapped;
        self.no_partner += other.no_partner;
        self.type_mismatch += other.type_mismatch;
    }
}

impl<L: LockFamily> PageAllocator<L> {
    /// True when the free lists are shuffled
    /// (/sys/module/page_alloc/parameters/shuffle).
    pub fn shuffle_enabled(&self) -> bool {
        self.layout.shuffle
    }

    /// The order whose blocks are shuffled, if shuffling is on.
    pub fn shuffle_order(&self) -> Option<Order> {
        self.layout.shuffle.then_some(self.layout.shuffle_order)
    }

    /// Shuffles every zone, if shuffling is on. mirrors shuffle_free_memory().
    pub fn shuffle_free_memory(&mut self) -> ShuffleStats {
        let mut stats = ShuffleStats::default();
        for zone in self.zone_ids().collect::<Vec<_>>() {
            stats += self.shuffle_zone(zone);
        }
        stats
    }

    /// Shuffles one zone's free blocks of the shuffle order, if shuffling is
    /// on. mirrors shuffle_zone() and __shuffle_zone().
    pub fn shuffle_zone(&mut self, zone: ZoneIdx) -> ShuffleStats {
        let mut stats = ShuffleStats::default();
        let Some(order) = self.shuffle_order() else {
            return stats;
        };
        let order_pages = order.nr_pages();
        let slot = &self.zones[zone.index()];
        let (zone_start, spanned) = (slot.start_pfn, slot.spanned_pages);
        if spanned == 0 {
            return stats;
        }
        let zone_end = zone_start + spanned;
        // The RNG is taken out for the pass so that the zone guard's borrow
        // of `self` does not conflict with it; it goes back below.
        let mut rng = std::mem::replace(&mut self.rng, crate::rng::MachineRng::new(0));
        let mut buddy = self.lock_zone(zone);
        let mut pfn = zone_start.div_ceil(order_pages) * order_pages;
        while pfn < zone_end {
            let i = pfn;
            pfn += order_pages;
            let Some(list_i) = self.shuffle_valid_page(zone, Pfn(i), order) else {
                continue;
            };
            stats.blocks += 1;
            let mut partner = None;
            for _ in 0..SHUFFLE_RETRY {
                let offset = rng.below(spanned) / order_pages * order_pages;
                let j = zone_start + offset;
                if j == i {
                    continue;
                }
                if let Some(list_j) = self.shuffle_valid_page(zone, Pfn(j), order) {
                    partner = Some((j, list_j));
                    break;
                }
            }
            let Some((j, list_j)) = partner else {
                stats.no_partner += 1;
                continue;
            };
            if list_j != list_i {
                stats.type_mismatch += 1;
                continue;
            }
            buddy.swap_free_list_entries(
                &self.frames,
                FrameIdx::covered(Pfn(i)),
                FrameIdx::covered(Pfn(j)),
                order,
                list_i,
            );
            stats.swapped += 1;
            // Take it easy on the zone lock, as the kernel does.
            if i % (BLOCKS_PER_LOCK_HOLD * order_pages) == 0 {
                drop(buddy);
                buddy = self.lock_zone(zone);
            }
        }
        self.publish(zone, &buddy);
        drop(buddy);
        self.rng = rng;
        stats
    }

    /// The freetype list of the block at `pfn` if it is a free block of
    /// exactly `order` in `zone` (not a hole, not another zone's memory, not
    /// allocated or split). mirrors shuffle_valid_page().
    fn shuffle_valid_page(&self, zone: ZoneIdx, pfn: Pfn, order: Order) -> Option<FreeTypeIdx> {
        if !self.frames.memmap.covers(pfn) || self.frames.blocks.zone(pfn) != Some(zone) {
            return None;
        }
        let info = self.frames.memmap.info(FrameIdx::covered(pfn));
        (info.state() == PageState::Buddy && info.order() == order).then_some(info.freetype())
    }
}
