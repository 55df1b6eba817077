//! The host's free lists at the trace's start, copied onto the replay
//! machine: its free memory laid out as the host's /proc/pagetypeinfo
//! showed it when the recording began (per zone, as many free blocks of
//! each order on each migratetype's lists, and as many Unmovable and
//! Reclaimable pageblocks), the rest of its memory held, as the host's
//! workload held it. A fresh machine's free memory is a few MAX_PAGE_ORDER
//! blocks; a running host's is fragmented, and what the trace's
//! allocations split, steal and claim depends on it.
//!
//! How, for each of our zones that the host also had (same node, same
//! name):
//! 1. every page of the machine is allocated (order 0, movable, past the
//!    watermarks), so no page is free;
//! 2. pageblocks wholly held get their type
//!    ([`pageframe::PageAllocator::set_pageblock_migratetype`]): the host's
//!    number of Unmovable ones, then of Reclaimable ones, from the zone's
//!    start, the rest Movable;
//! 3. the host's free blocks are placed, largest order first, each in the
//!    lower half of an aligned range twice its size (a MAX_PAGE_ORDER block
//!    takes a whole one) whose upper half keeps a held page whatever is
//!    placed in it later, so no placed block has a free buddy: the buddy
//!    lists then hold exactly the placed blocks;
//! 4. their pages are freed and the per-CPU lists drained.
//!
//! Held pages are left over for the set-up's later steps
//! ([`HostFreeStart::take_spare`], per migratetype), except each held
//! run's guard: the last page of the buddy side of a placed block, handed
//! out only with a whole pageblock whose taker keeps a page of it held
//! ([`HostFreeStart::take_pageblock`]), so that no placed block merges
//! past what the host showed when the pages handed out come back.
//! Stand-ins of order 0 and the blocks listed on per-CPU lists come from
//! the held pages, not from the placed free blocks, as on the host neither
//! is in its buddy lists. Before
//! placing, as many wholly held pageblocks as the lists' blocks above order
//! 0 need are kept aside, and made spare only for the lists
//! ([`HostFreeStart::release_kept`]), after the stand-ins. Stand-ins of a
//! higher order are allocated: their zone gets as many extra Movable
//! blocks of their order placed first. Blocks that do not fit are counted
//! ([`HostFreeStart::unplaced`]), not placed; a zone the host's file does
//! not describe (in both of its tables), or describes with more free pages
//! than the zone has, or with all its managed pages free (a zone the host
//! never used), gets its memory back, as booted.

use super::event::Trace;
use super::host::{host_file, parse_pagetypeinfo, Moment};
use pageframe::{Gfp, LocalPageAllocator, MigrateType, NodeId, Order, Page, Pfn};

/// What the copy did, and the held pages it leaves for the set-up.
#[derive(Debug, Default)]
pub struct HostFreeStart {
    /// Per zone (an index of `zone_snapshots()`) and migratetype (in
    /// [`TYPES`] order): the ranges of held pages of its pageblocks, taken
    /// from the end: lowest last, so blocks come in ascending PFN order,
    /// except that the pageblocks [`HostFreeStart::release_kept`] adds at
    /// the end come first and the ranges [`HostFreeStart::give_back`] adds
    /// at the start come last.
    spare: Vec<[Vec<SpareRange>; 3]>,
    /// Per zone and migratetype: wholly held pageblocks kept for the
    /// per-CPU lists, out of `spare` until [`HostFreeStart::release_kept`]
    /// (the stand-ins, taken first, would use them up).
    kept: Vec<[Vec<u64>; 3]>,
    /// Free blocks placed as the host's.
    pub placed: u64,
    /// Free blocks of the host's that did not fit.
    pub unplaced: u64,
    /// Pages per pageblock.
    block_pages: u64,
    /// The order of a pageblock.
    pageblock_order: Order,
}

impl HostFreeStart {
    /// Makes the pageblocks kept for the per-CPU lists spare, taken before
    /// any other range.
    pub fn release_kept(&mut self) {
        let block_pages = self.block_pages;
        for (spare, kept) in self.spare.iter_mut().zip(&mut self.kept) {
            for (spare, kept) in spare.iter_mut().zip(kept) {
                // `spare` is taken from its end: the kept blocks go there.
                spare.extend(
                    kept.drain(..)
                        .rev()
                        .map(|block| SpareRange::open(block..block + block_pages)),
                );
            }
        }
    }

    /// Makes `ranges` of held pages of zone `zone`'s `migratetype`
    /// pageblocks spare again (the unused part of a pageblock taken whole),
    /// taken after every other spare range, lowest first.
    pub fn give_back(
        &mut self,
        zone: usize,
        migratetype: MigrateType,
        ranges: impl IntoIterator<Item = std::ops::Range<u64>>,
    ) {
        let Some(slot) = TYPES.iter().position(|&known| known == migratetype) else {
            return;
        };
        let Some(spare) = self
            .spare
            .get_mut(zone)
            .and_then(|spare| spare.get_mut(slot))
        else {
            return;
        };
        let mut given: Vec<SpareRange> = ranges
            .into_iter()
            .filter(|range| !range.is_empty())
            .map(SpareRange::open)
            .collect();
        // `spare` is taken from its end: these go before its start.
        given.sort_unstable_by_key(|range| std::cmp::Reverse(range.pages.start));
        spare.splice(0..0, given);
    }

    /// The first PFN of `2^order` held pages, aligned to `order`, of a
    /// pageblock of `migratetype` (Unmovable, Movable or Reclaimable) in
    /// zone `zone`, given up by the copy: each page is an allocated order-0
    /// block the caller frees, joins or keeps as a stand-in. Guards are not
    /// handed out.
    pub fn take_spare(
        &mut self,
        zone: usize,
        migratetype: MigrateType,
        order: Order,
    ) -> Option<Pfn> {
        self.take(zone, migratetype, order, false)
    }

    /// A whole pageblock of held pages, as [`HostFreeStart::take_spare`],
    /// its guard included if it ends with one: the caller keeps at least
    /// one of its pages held for good, and may give the rest back
    /// ([`HostFreeStart::give_back`]).
    pub fn take_pageblock(&mut self, zone: usize, migratetype: MigrateType) -> Option<Pfn> {
        self.take(zone, migratetype, self.pageblock_order, true)
    }

    fn take(
        &mut self,
        zone: usize,
        migratetype: MigrateType,
        order: Order,
        whole: bool,
    ) -> Option<Pfn> {
        let slot = TYPES.iter().position(|&known| known == migratetype)?;
        let ranges = self.spare.get_mut(zone)?.get_mut(slot)?;
        let pages = order.checked_nr_pages()?;
        let at = ranges
            .iter()
            .rposition(|range| range.room(pages, whole).is_some())?;
        let range = ranges[at].clone();
        let start = range.room(pages, whole)?;
        // The pieces left on either side, the higher one (with the guard,
        // if it is left) first: lowest last.
        let pieces = [
            SpareRange {
                pages: start + pages..range.pages.end,
                guarded: range.guarded,
            },
            SpareRange::open(range.pages.start..start),
        ];
        ranges.splice(at..=at, pieces.into_iter().filter(SpareRange::serves));
        Some(Pfn(start))
    }
}

/// A run of held pages handed out on request. A guarded one ends with a
/// guard: a page of the buddy side of a placed (or kept) free block, held
/// for good unless a whole pageblock is taken, so that no placed block
/// merges past the order the host showed when everything handed out comes
/// back (a host's free block had an allocated buddy). Handed out, guards
/// made a replay's drains merge whole staircases of placed blocks up to
/// MAX_PAGE_ORDER.
#[derive(Clone, Debug, PartialEq)]
struct SpareRange {
    pages: std::ops::Range<u64>,
    guarded: bool,
}

impl SpareRange {
    /// A run without a guard.
    fn open(pages: std::ops::Range<u64>) -> SpareRange {
        SpareRange {
            pages,
            guarded: false,
        }
    }

    /// Whether it has a page to hand out besides its guard (a run left
    /// with only its guard is dropped: kept, every order-0 request would
    /// step over it).
    fn serves(&self) -> bool {
        self.pages.end - self.pages.start > u64::from(self.guarded)
    }

    /// The first PFN of `pages` pages aligned to their size inside the
    /// run, leaving its guard unless `whole`.
    fn room(&self, pages: u64, whole: bool) -> Option<u64> {
        let end = self.pages.end - u64::from(self.guarded && !whole);
        let start = self.pages.start.checked_next_multiple_of(pages)?;
        start
            .checked_add(pages)
            .is_some_and(|block_end| block_end <= end)
            .then_some(start)
    }
}

/// Per-order block counts for each of the three pcp migratetypes.
type TypeCounts = [Vec<u64>; 3];

/// The three migratetypes a copy places, in [`TypeCounts`] order.
const TYPES: [MigrateType; 3] = [
    MigrateType::Unmovable,
    MigrateType::Movable,
    MigrateType::Reclaimable,
];

/// Copies the host's free lists at the trace's start onto `allocator`
/// through `handle`; `extra_movable` gives, per zone, blocks per order to
/// place on the Movable lists besides the host's, and `keep_pageblocks`,
/// per zone and migratetype (Unmovable, Movable, Reclaimable), wholly held pageblocks
/// to keep out of the placing, spare for the per-CPU lists
/// ([`super::host_pcp::HostLists::pageblocks_wanted`]). `None` (nothing changed)
/// when the trace saved no pagetypeinfo or it names none of our zones.
pub fn copy_host_free_lists<H: std::ops::Deref<Target = LocalPageAllocator>>(
    trace: &Trace,
    allocator: &LocalPageAllocator,
    handle: &pageframe::CpuHandle<H, pageframe::Local>,
    extra_movable: &[Vec<u64>],
    keep_pageblocks: &[[u64; 3]],
) -> Option<HostFreeStart> {
    let host = parse_pagetypeinfo(&host_file(trace, Moment::Start, "pagetypeinfo")?);
    let zones = allocator.zone_snapshots();
    let layout = allocator.layout();
    let max_order = layout.max_order.0;
    let orders = usize::from(max_order) + 1;
    // Per zone: the host's pageblocks and free blocks per type, if it had
    // the zone.
    let wanted: Vec<Option<([u64; 3], TypeCounts)>> = zones
        .iter()
        .map(|zone| {
            let named = |node: u32, name: &str| {
                node == u32::from(zone.node.0) && name == zone.zone_type.name()
            };
            let blocks = host
                .blocks
                .iter()
                .find(|line| named(line.node, &line.zone))?;
            // Both tables name the zone, or it is left as booted.
            host.free.iter().find(|line| named(line.node, &line.zone))?;
            let mut pageblocks = [0u64; 3];
            let mut free: TypeCounts = Default::default();
            for (slot, migratetype) in TYPES.iter().enumerate() {
                pageblocks[slot] = blocks
                    .counts
                    .iter()
                    .find(|(name, _)| name == migratetype.name())
                    .map_or(0, |(_, count)| *count);
                free[slot] = vec![0; orders];
                let line = host.free.iter().find(|line| {
                    named(line.node, &line.zone) && line.migratetype == migratetype.name()
                });
                for (order, &count) in line.into_iter().flat_map(|line| &line.nr_free).enumerate() {
                    if order < orders {
                        free[slot][order] = count;
                    }
                }
            }
            // A description with more free pages than the zone has is not
            // this zone's: left as booted. (Typed pageblocks beyond the
            // zone's are not checked: a host zone may span a hole ours
            // does not, and the types are given as far as blocks go.)
            let free_pages = free.iter().try_fold(0u64, |total, counts| {
                counts
                    .iter()
                    .enumerate()
                    .try_fold(total, |total, (order, &count)| {
                        count
                            .checked_shl(order as u32)
                            .filter(|pages| pages >> order == count)?
                            .checked_add(total)
                    })
            });
            if free_pages.is_none_or(|pages| pages > zone.spanned) {
                return None;
            }
            // Every managed page free: the host never used the zone, whose
            // lists are then those boot gives it (a machine shaped like the
            // host frees the same pages at boot as memblock_free_all()
            // did), so it is left as booted.
            if free_pages == Some(zone.managed) {
                return None;
            }
            Some((pageblocks, free))
        })
        .collect();
    if wanted.iter().all(Option::is_none) {
        return None;
    }

    // 1. Every page held.
    let end_pfn = layout.end_pfn.0;
    let mut held = vec![false; usize::try_from(end_pfn).ok()?];
    for node in 0..layout.nodes.len() {
        let node = NodeId(node as u16);
        let gfp = Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC;
        let mut drained = false;
        loop {
            match handle.alloc_pages(gfp, Order(0), node) {
                Ok(page) => {
                    held[page.pfn().0 as usize] = true;
                    drained = false;
                }
                // Pages left on other CPUs' lists come back to the buddy
                // lists, once, before the node counts as taken.
                Err(_) if !drained => {
                    allocator.drain_all_pages();
                    drained = true;
                }
                Err(_) => break,
            }
        }
    }

    let block_pages = layout.pageblock_order.nr_pages();
    let region_pages = layout.max_order.nr_pages();
    let mut copy = HostFreeStart {
        spare: vec![Default::default(); zones.len()],
        kept: vec![Default::default(); zones.len()],
        block_pages,
        pageblock_order: layout.pageblock_order,
        ..HostFreeStart::default()
    };
    let mut frees = Vec::new();
    for (index, zone) in zones.iter().enumerate() {
        let end = (zone.start_pfn + zone.spanned).min(end_pfn);
        let Some((pageblocks, mut free)) = wanted[index].clone() else {
            // A zone the host did not describe gets its memory back.
            frees.extend(
                (zone.start_pfn..end)
                    .filter(|&pfn| held[pfn as usize])
                    .map(|pfn| (pfn, 0)),
            );
            continue;
        };
        if let Some(extra) = extra_movable.get(index) {
            for (count, more) in free[1].iter_mut().zip(extra) {
                *count = count.saturating_add(*more);
            }
        }
        // 2. Types for the wholly held pageblocks, from the zone's start.
        let start = zone.start_pfn.div_ceil(block_pages) * block_pages;
        let wholly_held = |block: u64| {
            block + block_pages <= end
                && held[block as usize..(block + block_pages) as usize]
                    .iter()
                    .all(|&page| page)
        };
        let mut left = [pageblocks[0], pageblocks[2]];
        let mut block = start;
        while block + block_pages <= end {
            if wholly_held(block) {
                let migratetype = if left[0] > 0 {
                    left[0] -= 1;
                    MigrateType::Unmovable
                } else if left[1] > 0 {
                    left[1] -= 1;
                    MigrateType::Reclaimable
                } else {
                    MigrateType::Movable
                };
                // Wholly held: the call cannot find a free page.
                let _ = allocator.set_pageblock_migratetype(Pfn(block), migratetype);
            }
            block += block_pages;
        }
        // 3. Segments: wholly held MAX_PAGE_ORDER regions of one type, else
        // their wholly held pageblocks, per type and order.
        let mut pools: [Vec<Vec<u64>>; 3] = Default::default();
        for pool in &mut pools {
            *pool = vec![Vec::new(); orders];
        }
        let slot_of = |pfn: u64| {
            let migratetype = allocator.pageblock_migratetype(Pfn(pfn));
            TYPES.iter().position(|&known| Some(known) == migratetype)
        };
        let mut region = zone.start_pfn.div_ceil(region_pages) * region_pages;
        while region + region_pages <= end {
            let blocks: Vec<u64> = (region..region + region_pages)
                .step_by(block_pages as usize)
                .collect();
            let slots: Vec<Option<usize>> = blocks
                .iter()
                .map(|&block| wholly_held(block).then(|| slot_of(block)).flatten())
                .collect();
            if slots.iter().all(|slot| slot.is_some() && *slot == slots[0]) {
                if let Some(slot) = slots[0] {
                    pools[slot][usize::from(max_order)].push(region);
                }
            } else {
                for (&block, slot) in blocks.iter().zip(slots) {
                    if let Some(slot) = slot {
                        pools[slot][usize::from(layout.pageblock_order.0)].push(block);
                    }
                }
            }
            region += region_pages;
        }
        let pageblock_order = usize::from(layout.pageblock_order.0);
        let mut kept: [Vec<u64>; 3] = Default::default();
        for slot in 0..TYPES.len() {
            for pool in &mut pools[slot] {
                pool.reverse();
            }
            let keep = keep_pageblocks.get(index).map_or(0, |keep| keep[slot]);
            for _ in 0..keep {
                match take_whole(&mut pools[slot], pageblock_order) {
                    Some(block) => kept[slot].push(block),
                    None => break,
                }
            }
            for order in (0..orders).rev() {
                let wanted = free[slot][order];
                let mut placed = 0u64;
                // The pool only shrinks: once a block does not fit, no
                // further one of its order does (a saved count may be huge).
                while placed < wanted {
                    let Some(pfn) = place(&mut pools[slot], order, orders - 1) else {
                        break;
                    };
                    frees.push((pfn, order));
                    placed += 1;
                }
                copy.placed += placed;
                copy.unplaced = copy.unplaced.saturating_add(wanted - placed);
            }
        }
        copy.kept[index] = kept;
        // What stays held is spare, per type, lowest PFN last; a segment
        // below MAX_PAGE_ORDER is the buddy side of a block placed or kept
        // (or beside a pageblock of another type), and ends with a guard.
        for (spare, pools) in copy.spare[index].iter_mut().zip(&pools) {
            for (order, pool) in pools.iter().enumerate() {
                spare.extend(
                    pool.iter()
                        .map(|&segment| SpareRange {
                            pages: segment..segment + (1u64 << order),
                            guarded: order < usize::from(max_order),
                        })
                        .filter(SpareRange::serves),
                );
            }
            spare.sort_unstable_by_key(|range| std::cmp::Reverse(range.pages.start));
        }
    }
    // 4. The placed blocks' pages freed, then every list drained.
    for (pfn, order) in frees {
        for page in pfn..pfn + (1u64 << order) {
            let _ = handle.free_pages(Page::from_pfn(Pfn(page)), Order(0));
        }
    }
    allocator.drain_all_pages();
    Some(copy)
}

/// Takes one wholly held segment of exactly `order` from `pool` (segments
/// per order): one of that order, else the smallest above it halved down,
/// the upper halves going back to the pool. Returns its first PFN.
fn take_whole(pool: &mut [Vec<u64>], order: usize) -> Option<u64> {
    let (mut at, segment) =
        (order..pool.len()).find_map(|at| pool[at].pop().map(|segment| (at, segment)))?;
    while at > order {
        at -= 1;
        pool[at].push(segment + (1u64 << at));
    }
    Some(segment)
}

/// Takes room for one free block of `order` from `pool` (segments per
/// order, each wholly held): the smallest segment of an order above it (a
/// `max_order` block takes a whole `max_order` segment), halved down to
/// twice the block's size; the block is the lower half, and every upper
/// half goes back to the pool. Returns the block's first PFN.
fn place(pool: &mut [Vec<u64>], order: usize, max_order: usize) -> Option<u64> {
    let need = (order + 1).min(max_order);
    let (mut at, segment) =
        (need..=max_order).find_map(|at| pool[at].pop().map(|segment| (at, segment)))?;
    while at > need {
        at -= 1;
        pool[at].push(segment + (1u64 << at));
    }
    if order < max_order {
        pool[order].push(segment + (1u64 << order));
    }
    Some(segment)
}

#[cfg(test)]
mod tests {
    use super::{place, HostFreeStart, SpareRange};
    use pageframe::{MigrateType, Order, Pfn};

    /// Spare blocks come aligned, lowest first, from their type's ranges,
    /// and the pages skipped for alignment stay spare.
    #[test]
    fn spare_blocks_are_aligned_and_of_their_type() {
        let mut copy = HostFreeStart {
            spare: vec![[
                vec![],
                vec![SpareRange::open(40..48), SpareRange::open(3..12)],
                vec![],
            ]],
            ..HostFreeStart::default()
        };
        let mut take = |migratetype, order| copy.take_spare(0, migratetype, Order(order));
        assert_eq!(take(MigrateType::Movable, 0), Some(Pfn(3)));
        assert_eq!(take(MigrateType::Movable, 2), Some(Pfn(4)));
        assert_eq!(take(MigrateType::Movable, 3), Some(Pfn(40)));
        assert_eq!(take(MigrateType::Movable, 3), None);
        assert_eq!(take(MigrateType::Unmovable, 0), None);
        assert_eq!(take(MigrateType::HighAtomic, 0), None);
        assert_eq!(take(MigrateType::Movable, 64), None);
        let left: Vec<u64> =
            std::iter::from_fn(|| copy.take_spare(0, MigrateType::Movable, Order(0)))
                .map(|pfn| pfn.0)
                .collect();
        assert_eq!(left, vec![8, 9, 10, 11]);
        assert_eq!(copy.take_spare(1, MigrateType::Movable, Order(0)), None);
    }

    /// A guard is handed out only with a whole pageblock, and a run left
    /// with nothing but its guard is dropped.
    #[test]
    fn guards_go_only_with_a_whole_pageblock() {
        let guarded = |pages| SpareRange {
            pages,
            guarded: true,
        };
        let mut copy = HostFreeStart {
            spare: vec![[vec![], vec![guarded(512..1024), guarded(2..4)], vec![]]],
            pageblock_order: Order(9),
            block_pages: 512,
            ..HostFreeStart::default()
        };
        // 2..4 serves page 2; its guard, 3, is not handed out.
        assert_eq!(
            copy.take_spare(0, MigrateType::Movable, Order(0)),
            Some(Pfn(2))
        );
        assert_eq!(
            copy.spare[0][1],
            vec![guarded(512..1024)],
            "3 alone is dropped"
        );
        let pages: Vec<u64> =
            std::iter::from_fn(|| copy.take_spare(0, MigrateType::Movable, Order(0)))
                .map(|pfn| pfn.0)
                .collect();
        assert_eq!(pages, (512..1023).collect::<Vec<_>>(), "1023 is a guard");
        assert!(copy.spare[0][1].is_empty(), "{:?}", copy.spare[0][1]);
        // A whole pageblock takes its guard along.
        copy.give_back(0, MigrateType::Movable, std::iter::once(1024..1536));
        copy.spare[0][1][0].guarded = true;
        assert_eq!(copy.take_spare(0, MigrateType::Movable, Order(9)), None);
        assert_eq!(
            copy.take_pageblock(0, MigrateType::Movable),
            Some(Pfn(1024))
        );
    }

    /// Blocks placed never touch: each has a held page in its buddy.
    #[test]
    fn placed_blocks_keep_their_buddies_held() {
        let mut pool = vec![Vec::new(); 11];
        pool[10].push(0u64);
        let mut free = vec![false; 1024];
        let mut placed = Vec::new();
        for order in (0..10).rev() {
            for _ in 0..3 {
                let Some(pfn) = place(&mut pool, order, 10) else {
                    break;
                };
                for page in pfn..pfn + (1 << order) {
                    assert!(!free[page as usize], "placed twice");
                    free[page as usize] = true;
                }
                placed.push((pfn, order));
            }
        }
        assert!(placed.len() >= 10, "{placed:?}");
        assert_eq!(place(&mut pool, 10, 10), None, "the region is taken");
        for (pfn, order) in placed {
            let buddy = pfn ^ (1 << order);
            let buddy_free = (buddy..buddy + (1 << order)).all(|page| free[page as usize]);
            assert!(!buddy_free, "the buddy of {pfn} (order {order}) is free");
        }
    }
}
