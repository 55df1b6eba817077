//! Per-CPU page lists (`struct per_cpu_pages`): one list per (order up to
//! PAGE_ALLOC_COSTLY_ORDER, pcp migratetype), plus one for the THP order,
//! then a bank for (UNMOVABLE, UNMAPPED) pages: one list per low order plus
//! one for the THP order, as the `__GFP_UNMAPPED` series adds them ("separate
//! pcplists by freetype flags"; the series assumes UNMAPPED implies
//! UNMOVABLE, so the bank is not split by migratetype).
//!
//! A list is a vector of PFNs used as a stack: allocation and free work at
//! its end (the most recently freed, cache-hot page goes out first), draining
//! takes from its start (the oldest), as the kernel's list_add(),
//! list_first_entry() and list_last_entry() do. A drain shifts what remains,
//! which costs less over a batch than a deque's index arithmetic on every
//! allocation and free.
//!
//! How many pages the lists may hold and how many move at once (`high`,
//! `batch`, the adaptive sizing of Linux 6.7+) is [`high`]'s arithmetic.
//!
//! Invariants: `count` is the pages on all lists; every PFN listed has a Pcp
//! record of the list's order. A free that takes `count` to the `high` in
//! force drains at least the block it freed, and `high` never passes
//! `high_max`, so frees alone keep `count` below `high_max`; an allocation
//! refills an empty list without looking at `high` for high orders (as the
//! kernel's rmqueue_bulk() does), and every list can hold one refill at
//! once, so the checked bound is `count <= high_max + the sum over the lists
//! of one refill each` (a remote CPU's lists of a memory-only node, whose
//! limits are split over all CPUs, reach well past one refill).

mod high;

pub use high::{PcpHigh, ZonePressure};

use crate::error::InvariantError;
use crate::frames::Frames;
use crate::freetype::{FreeType, FreeTypeIdx, MigrateType, MIGRATE_PCPTYPES};
use crate::memmap::{FrameIdx, PageState};
use crate::types::Order;

/// `PAGE_ALLOC_COSTLY_ORDER`: orders above this are "costly".
pub const PAGE_ALLOC_COSTLY_ORDER: Order = Order(3);
/// Lists for orders 0..=3 of each pcp type (`NR_LOWORDER_PCP_LISTS`).
pub const NR_LOWORDER_PCP_LISTS: usize = MIGRATE_PCPTYPES * (PAGE_ALLOC_COSTLY_ORDER.index() + 1);
/// The THP list of the mapped pcp types.
const THP_PINDEX: usize = NR_LOWORDER_PCP_LISTS;
/// Lists of (UNMOVABLE, UNMAPPED) pages: orders 0..=3 and the THP order
/// (`NR_UNMAPPED_PCP_LISTS`).
pub const NR_UNMAPPED_PCP_LISTS: usize = PAGE_ALLOC_COSTLY_ORDER.index() + 2;
/// The first unmapped list.
const UNMAPPED_BASE: usize = THP_PINDEX + 1;
/// The unmapped THP list.
const UNMAPPED_THP_PINDEX: usize = UNMAPPED_BASE + PAGE_ALLOC_COSTLY_ORDER.index() + 1;
/// All lists (`NR_PCP_LISTS`).
pub const NR_PCP_LISTS: usize = UNMAPPED_BASE + NR_UNMAPPED_PCP_LISTS;

/// Which of a CPU's lists (the kernel's `pindex`), always below
/// [`NR_PCP_LISTS`]: only this module makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PcpIndex(u8);

impl PcpIndex {
    /// The first list, where a full drain starts its round robin.
    pub(crate) const FIRST: PcpIndex = PcpIndex::at(0);

    /// The index `pindex`, which callers compute below [`NR_PCP_LISTS`]
    /// by construction; the check (folded away where the compiler sees
    /// the bound, as for the order-0 lists) is what makes [`Self::index`]
    /// need none.
    #[inline(always)]
    const fn at(pindex: usize) -> PcpIndex {
        assert!(pindex < NR_PCP_LISTS, "pcp list index out of range");
        PcpIndex(pindex as u8)
    }

    /// The position in the list array, which indexing then trusts.
    #[inline(always)]
    fn index(self) -> usize {
        let at = self.0 as usize;
        // SAFETY: every PcpIndex is made by `at()` (the field is private to
        // this module), which asserts this bound.
        unsafe { std::hint::assert_unchecked(at < NR_PCP_LISTS) };
        at
    }
}

impl std::fmt::Display for PcpIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// One per-CPU list, the one list type of the allocation and free paths:
/// its index, the order of its blocks (which the index implies, kept so
/// that no caller passes it again), the freetype its refills take from the
/// buddy lists, and the freetype index its pages are recorded under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PcpList {
    pub(crate) pindex: PcpIndex,
    pub(crate) order: Order,
    pub(crate) freetype: FreeType,
    pub(crate) recorded: FreeTypeIdx,
}

impl PcpList {
    /// The list that serves an allocation of `freetype` at `order`, if that
    /// order and freetype use the per-CPU lists (`pcp_allowed_order()`).
    #[inline]
    pub(crate) fn of(freetype: FreeType, order: Order, thp_order: Order) -> Option<PcpList> {
        if !PerCpuPages::allowed_order(order, thp_order) {
            return None;
        }
        PcpList::serving(freetype, order)
    }

    /// The list a freed block of an allowed `order` from a pageblock of
    /// freetype `block` goes to, or `None` for the buddy lists. mirrors the
    /// freetype checks of free_unref_page(): HIGHATOMIC pages go on the
    /// MOVABLE list; ISOLATE pages, and freetypes without per-CPU lists
    /// ((MOVABLE, UNMAPPED)), go straight to the buddy lists.
    #[inline]
    pub(crate) fn for_free(block: FreeType, order: Order) -> Option<PcpList> {
        if block.migratetype == MigrateType::HighAtomic {
            return PcpList::serving(FreeType::plain(MigrateType::Movable), order);
        }
        PcpList::serving(block, order)
    }

    #[inline]
    fn serving(freetype: FreeType, order: Order) -> Option<PcpList> {
        let (pindex, recorded) = PerCpuPages::freetype_pindex(freetype, order)?;
        Some(PcpList {
            pindex,
            order,
            freetype,
            recorded,
        })
    }
}

/// The per-CPU lists of one CPU for one zone. Cache-line aligned (with its
/// lock) so that two CPUs' lists never share a line.
#[repr(align(64))]
pub struct PerCpuPages {
    lists: [Vec<FrameIdx>; NR_PCP_LISTS],
    count: u32,
    sizing: PcpHigh,
    thp_order: Order,
}

/// pageframe models no CPU caches: it takes every CPU's share of the
/// last-level cache to hold more than three batches (1 MiB or more per CPU
/// does, as on every x86-64 server), so setup_pcp_cacheinfo() would set
/// `PCPF_FREE_HIGH_BATCH`.
const FREE_HIGH_BATCH: bool = true;

impl PerCpuPages {
    /// Empty lists of a boot pageset (`high` 0, `batch` 1) until the zone's
    /// sizes are set; `thp_order` is the order of the THP list
    /// (pageblock_order).
    pub(crate) fn new(thp_order: Order) -> PerCpuPages {
        PerCpuPages {
            lists: Default::default(),
            count: 0,
            sizing: PcpHigh::boot(FREE_HIGH_BATCH),
            thp_order,
        }
    }

    /// Sets the limits and the batch (pageset_update(), at boot and after
    /// memory hotplug).
    pub(crate) fn set_high_and_batch(&mut self, high_min: u32, high_max: u32, batch: u32) {
        self.sizing.update(high_min, high_max, batch);
    }

    /// Sets when a high-order free run drains (see [`FreeHighThreshold`]).
    pub(crate) fn set_free_high_threshold(&mut self, threshold: crate::FreeHighThreshold) {
        self.sizing.set_free_high_threshold(threshold);
    }

    /// Orders that use the per-CPU lists (`pcp_allowed_order()`).
    #[inline]
    pub fn allowed_order(order: Order, thp_order: Order) -> bool {
        order <= PAGE_ALLOC_COSTLY_ORDER || order == thp_order
    }

    /// The list index of (pcp migratetype, order) for mapped pages
    /// (`order_to_pindex()`).
    #[inline]
    pub(crate) fn pindex(migratetype: MigrateType, order: Order) -> PcpIndex {
        PcpIndex::at(if order > PAGE_ALLOC_COSTLY_ORDER {
            THP_PINDEX
        } else {
            MIGRATE_PCPTYPES * order.index() + migratetype.index()
        })
    }

    /// The list of a block of `freetype` and an allowed `order`, with the
    /// freetype index its pages are recorded under; `None` when the freetype
    /// has no per-CPU lists (HIGHATOMIC and ISOLATE, whose callers redirect
    /// them, and (MOVABLE, UNMAPPED), which goes straight to the buddy lists).
    #[inline]
    pub(crate) fn freetype_pindex(
        freetype: FreeType,
        order: Order,
    ) -> Option<(PcpIndex, FreeTypeIdx)> {
        let migratetype = freetype.migratetype;
        if !freetype.is_unmapped() {
            return migratetype.is_pcptype().then(|| {
                (
                    PerCpuPages::pindex(migratetype, order),
                    FreeTypeIdx::of(migratetype),
                )
            });
        }
        if migratetype != MigrateType::Unmovable {
            return None;
        }
        let pindex = if order > PAGE_ALLOC_COSTLY_ORDER {
            UNMAPPED_THP_PINDEX
        } else {
            UNMAPPED_BASE + order.index()
        };
        Some((PcpIndex::at(pindex), FreeType::UNMAPPED_UNMOVABLE.index()?))
    }

    /// The order of a list (`pindex_to_order()`).
    #[inline]
    pub(crate) fn pindex_order(&self, pindex: PcpIndex) -> Order {
        match pindex.index() {
            THP_PINDEX | UNMAPPED_THP_PINDEX => self.thp_order,
            index if index >= UNMAPPED_BASE => Order((index - UNMAPPED_BASE) as u8),
            index => Order((index / MIGRATE_PCPTYPES) as u8),
        }
    }

    /// Pages on all lists.
    #[inline]
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The sizing state: `high`, its limits, `batch` and the scaling
    /// counters.
    pub fn sizing(&self) -> &PcpHigh {
        &self.sizing
    }

    /// Sets `high` within its limits (see `PageAllocator::set_pcp_high`).
    pub(crate) fn set_high(&mut self, high: u32) -> u32 {
        self.sizing.set_high(high)
    }

    /// Pops the hottest block of `list`.
    #[inline]
    pub(crate) fn pop(&mut self, list: PcpList) -> Option<FrameIdx> {
        let pfn = self.lists[list.pindex.index()].pop()?;
        self.count -= 1 << list.order.0;
        Some(pfn)
    }

    /// Removes blocks from `list` into the leading slots of `out` that are
    /// `vacant`, hottest first (the order repeated pops would give), until
    /// a slot is not vacant, `out` ends or the list is empty; `put` stores
    /// each. Returns how many were taken.
    #[inline]
    pub(crate) fn take_hottest_into<T>(
        &mut self,
        list: PcpList,
        out: &mut [T],
        vacant: impl Fn(&T) -> bool,
        mut put: impl FnMut(&mut T, FrameIdx),
    ) -> usize {
        let blocks = &mut self.lists[list.pindex.index()];
        let most = out.len().min(blocks.len());
        let (out, hottest) = (&mut out[..most], &blocks[blocks.len() - most..]);
        // One index walks both: the slots forward, the blocks from the hot
        // end back.
        let mut taken = 0;
        while taken < most {
            let slot = &mut out[taken];
            if !vacant(slot) {
                break;
            }
            put(slot, hottest[most - 1 - taken]);
            taken += 1;
        }
        blocks.truncate(blocks.len() - taken);
        self.count -= (taken as u32) << list.order.0;
        taken
    }

    /// Pushes a freed block at the hot end of `list`.
    #[inline]
    pub(crate) fn push(&mut self, list: PcpList, pfn: FrameIdx) {
        self.lists[list.pindex.index()].push(pfn);
        self.count += 1 << list.order.0;
    }

    /// Pushes freed order-0 pages at the hot end of `list`, the last one
    /// hottest, as many as can go before one would reach the `high` in
    /// force, with the sizing updated as freeing them one at a time would
    /// (free_unref_page_commit() for each); returns the pages not pushed.
    #[inline(always)]
    pub(crate) fn push_order0_run<'p>(
        &mut self,
        list: PcpList,
        pfns: &'p [FrameIdx],
        zone: ZonePressure,
    ) -> &'p [FrameIdx] {
        debug_assert_eq!(list.order, Order(0));
        let room = (self.sizing.order0_room(self.count, zone) as usize).min(pfns.len());
        let (now, later) = pfns.split_at(room);
        self.sizing.note_order0_frees(room as u32);
        self.lists[list.pindex.index()].extend_from_slice(now);
        self.count += room as u32;
        later
    }

    /// [`Self::push_order0_run`] for the first `len` pages of `run`, an
    /// array of a few: the whole array is copied to the list's end (a copy
    /// of a known size, without a call) and the list then cut back to the
    /// pages pushed. Returns how many were pushed, from the first.
    #[inline(always)]
    pub(crate) fn push_order0_array<const N: usize>(
        &mut self,
        list: PcpList,
        run: &[FrameIdx; N],
        len: usize,
        zone: ZonePressure,
    ) -> usize {
        debug_assert_eq!(list.order, Order(0));
        let room = (self.sizing.order0_room(self.count, zone) as usize).min(len);
        self.sizing.note_order0_frees(room as u32);
        let blocks = &mut self.lists[list.pindex.index()];
        let end = blocks.len() + room;
        blocks.extend_from_slice(run);
        blocks.truncate(end);
        self.count += room as u32;
        room
    }

    /// Fills an empty list with a refill batch, in the order the buddy
    /// lists gave the blocks: the first one goes out first (rmqueue_bulk()
    /// adds each at the list tail). Returns the blocks added.
    #[inline]
    pub(crate) fn fill_empty(
        &mut self,
        list: PcpList,
        pfns: impl Iterator<Item = FrameIdx>,
    ) -> u32 {
        let blocks = &mut self.lists[list.pindex.index()];
        debug_assert!(blocks.is_empty());
        blocks.extend(pfns);
        blocks.reverse();
        // At most `high` pages: the count fits.
        let added = blocks.len() as u32;
        self.count += added << list.order.0;
        added
    }

    /// True when a list is empty.
    #[inline]
    pub(crate) fn list_is_empty(&self, list: PcpList) -> bool {
        self.lists[list.pindex.index()].is_empty()
    }

    /// An allocation from the lists (rmqueue_pcplist()): halves the free run.
    #[inline]
    pub(crate) fn note_alloc(&mut self) {
        self.sizing.note_alloc();
    }

    /// Blocks of `order` a refill of an empty list takes (nr_pcp_alloc()),
    /// adapting `high` as the kernel does; `below_high` is the zone's
    /// `ZONE_BELOW_HIGH`.
    #[inline]
    pub(crate) fn refill_count(&mut self, order: Order, below_high: bool) -> u32 {
        self.sizing.nr_pcp_alloc(self.count, order, below_high)
    }

    /// After a block of `order` went on the lists: the pages to drain, if
    /// the lists reached the `high` in force. mirrors the sizing steps of
    /// free_unref_page_commit() (nr_pcp_high(), nr_pcp_free()). The common
    /// case (no high-order run, no zone pressure, below `high`, where
    /// nr_pcp_high() only clamps `high`) stays inline.
    #[inline(always)]
    pub(crate) fn after_free(&mut self, order: Order, zone: ZonePressure) -> Option<u32> {
        let free_high = self
            .sizing
            .note_free(order, self.count, PAGE_ALLOC_COSTLY_ORDER);
        if !free_high && zone == ZonePressure::default() && self.count < self.sizing.clamped_high()
        {
            return None;
        }
        self.drain_size(zone, free_high)
    }

    /// The rest of [`Self::after_free`].
    #[inline(never)]
    fn drain_size(&mut self, zone: ZonePressure, free_high: bool) -> Option<u32> {
        let high = self.sizing.nr_pcp_high(self.count, zone, free_high);
        (self.count >= high).then(|| self.sizing.nr_pcp_free(self.count, high, free_high))
    }

    /// The periodic decay of `high` (decay_pcp_high()): returns the pages
    /// now above `high`, which the caller drains a batch at a time, and
    /// whether `high` has further to decay.
    pub(crate) fn decay_high(&mut self) -> (u32, bool) {
        let more = self.sizing.decay(self.count);
        (self.count.saturating_sub(self.sizing.high()), more)
    }

    /// Removes up to `count` pages from the lists, round-robin from
    /// `first_pindex`, oldest first, as free_pcppages_bulk() picks them, and
    /// hands each (pfn, order) to `free` (which returns it to the zone).
    pub(crate) fn drain(
        &mut self,
        count: u32,
        first_pindex: PcpIndex,
        mut free: impl FnMut(FrameIdx, Order),
    ) {
        let mut count = count.min(self.count) as i64;
        let (mut min_pindex, mut max_pindex) = (0usize, NR_PCP_LISTS - 1);
        let mut pindex = first_pindex.index().wrapping_sub(1);
        while count > 0 {
            loop {
                pindex = pindex.wrapping_add(1);
                if pindex > max_pindex {
                    pindex = min_pindex;
                }
                if !self.lists[pindex].is_empty() {
                    break;
                }
                if pindex == max_pindex {
                    max_pindex -= 1;
                }
                if pindex == min_pindex {
                    min_pindex += 1;
                }
            }
            let order = self.pindex_order(PcpIndex::at(pindex));
            let nr_pages = 1i64 << order.0;
            let list = &mut self.lists[pindex];
            let take = (((count + nr_pages - 1) / nr_pages) as usize).min(list.len());
            for pfn in list.drain(..take) {
                free(pfn, order);
            }
            count -= take as i64 * nr_pages;
            self.count -= (take as u32) << order.0;
        }
    }

    /// Largest overshoot of `high_max` refills can cause: one refill on
    /// every list.
    fn max_refill_pages(&self) -> u32 {
        (0..NR_PCP_LISTS)
            .map(|pindex| {
                let order = self.pindex_order(PcpIndex::at(pindex));
                self.sizing.max_refill_blocks(order) << order.0
            })
            .sum()
    }

    /// Checks the lists against the memmap. Returns the pages listed.
    pub fn check_invariants(&self, frames: &Frames) -> Result<u64, InvariantError> {
        let mut pages = 0u64;
        for (pindex, list) in self.lists.iter().enumerate() {
            let order = self.pindex_order(PcpIndex::at(pindex));
            for &pfn in list {
                let info = frames.memmap.info(pfn);
                if info.state() != PageState::Pcp || info.order() != order {
                    return Err(InvariantError(format!(
                        "pcp list {pindex}: PFN {pfn} has record {:?} order {}",
                        info.state(),
                        info.order()
                    )));
                }
                if !pfn.is_aligned(order) {
                    return Err(InvariantError(format!(
                        "pcp list {pindex}: PFN {pfn} not aligned to order {order}"
                    )));
                }
                pages += order.nr_pages();
            }
        }
        if pages != self.count as u64 {
            return Err(InvariantError(format!(
                "pcp count {} but lists hold {pages}",
                self.count
            )));
        }
        self.sizing.check(self.count).map_err(InvariantError)?;
        if self.count > self.sizing.high_max() + self.max_refill_pages() {
            return Err(InvariantError(format!(
                "pcp count {} above high_max {} plus one refill per list",
                self.count,
                self.sizing.high_max()
            )));
        }
        Ok(pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pindex_layout_matches_the_kernel() {
        let at = PcpIndex::at;
        assert_eq!(PerCpuPages::pindex(MigrateType::Unmovable, Order(0)), at(0));
        assert_eq!(
            PerCpuPages::pindex(MigrateType::Reclaimable, Order(0)),
            at(2)
        );
        assert_eq!(PerCpuPages::pindex(MigrateType::Movable, Order(3)), at(10));
        assert_eq!(PerCpuPages::pindex(MigrateType::Movable, Order(9)), at(12));
        assert_eq!(NR_PCP_LISTS, 18);
        let pcp = PerCpuPages::new(Order(9));
        assert_eq!(pcp.pindex_order(at(12)), Order(9));
        assert_eq!(pcp.pindex_order(at(10)), Order(3));
        let unmapped = FreeType::UNMAPPED_UNMOVABLE;
        assert_eq!(
            PerCpuPages::freetype_pindex(unmapped, Order(0)),
            Some((at(13), FreeTypeIdx::new(5).unwrap()))
        );
        assert_eq!(
            PerCpuPages::freetype_pindex(unmapped, Order(3)),
            Some((at(16), FreeTypeIdx::new(5).unwrap()))
        );
        assert_eq!(
            PerCpuPages::freetype_pindex(unmapped, Order(9)),
            Some((at(17), FreeTypeIdx::new(5).unwrap()))
        );
        assert_eq!(pcp.pindex_order(at(16)), Order(3));
        assert_eq!(pcp.pindex_order(at(17)), Order(9));
        let movable_unmapped = FreeType {
            migratetype: MigrateType::Movable,
            flags: crate::freetype::FreeTypeFlags::UNMAPPED,
        };
        assert_eq!(
            PerCpuPages::freetype_pindex(movable_unmapped, Order(0)),
            None
        );
        let movable = FreeType::plain(MigrateType::Movable);
        assert_eq!(
            PerCpuPages::freetype_pindex(movable, Order(1)),
            Some((at(4), FreeTypeIdx::of(MigrateType::Movable)))
        );
    }

    #[test]
    fn drains_grow_with_the_free_run_then_clamp() {
        // Linux 6.12 sizes a drain by the pages freed in a row (free_count),
        // where 6.1 doubled a factor per drain: 63, then the run, at most
        // high - batch.
        let mut pcp = PerCpuPages::new(Order(9));
        pcp.set_high_and_batch(1000, 1000, 63);
        let list = PcpList::of(FreeType::plain(MigrateType::Movable), Order(0), Order(9)).unwrap();
        let frame = |pfn: u64| FrameIdx::new(crate::types::Pfn(pfn)).unwrap();
        let mut drains = Vec::new();
        for pfn in 0..3000 {
            pcp.push(list, frame(pfn));
            if let Some(nr) = pcp.after_free(Order(0), ZonePressure::default()) {
                drains.push(nr);
                pcp.drain(nr, list.pindex, |_, _| {});
            }
        }
        assert_eq!(drains, [937, 937, 937]);
        // The run stops counting at batch << 5; an allocation halves it.
        pcp.note_alloc();
        assert_eq!(pcp.sizing().free_count(), 1008);
    }

    #[test]
    fn drain_takes_oldest_round_robin() {
        let mut pcp = PerCpuPages::new(Order(9));
        pcp.set_high_and_batch(100, 100, 4);
        let unmovable =
            PcpList::of(FreeType::plain(MigrateType::Unmovable), Order(0), Order(9)).unwrap();
        let movable =
            PcpList::of(FreeType::plain(MigrateType::Movable), Order(0), Order(9)).unwrap();
        assert_eq!(
            (unmovable.pindex, movable.pindex),
            (PcpIndex::at(0), PcpIndex::at(1))
        );
        let frame = |pfn: u64| FrameIdx::new(crate::types::Pfn(pfn)).unwrap();
        for pfn in [10, 11, 12] {
            pcp.push(unmovable, frame(pfn));
        }
        pcp.push(movable, frame(20));
        assert_eq!(pcp.pop(unmovable), Some(frame(12)));
        pcp.push(unmovable, frame(12));
        let mut out = Vec::new();
        pcp.drain(3, PcpIndex::at(0), |pfn, order| out.push((pfn, order)));
        assert_eq!(
            out,
            vec![
                (frame(10), Order(0)),
                (frame(11), Order(0)),
                (frame(12), Order(0))
            ]
        );
        assert_eq!(pcp.count(), 1);
        out.clear();
        let all = pcp.count();
        pcp.drain(all, PcpIndex::at(0), |pfn, order| out.push((pfn, order)));
        assert_eq!(out, vec![(frame(20), Order(0))]);
    }
}
