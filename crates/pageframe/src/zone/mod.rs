//! A zone's buddy allocator: `free_area[order].free_list[freetype]`, split and
//! merge, fallback claim and steal, the high-order atomic reserve.
//!
//! A [`Zone`] is the state the kernel guards with `zone->lock`; every method
//! takes `&mut self` and the [`Frames`] (memmap and pageblock flags). Locking
//! is the caller's business (see `sync`). What is read without the lock
//! (free page count, watermarks) is published by the caller after each call.
//!
//! Invariants (checked by [`Zone::check_invariants`]):
//! - `free_area[o].nr_free` equals the total length of the order-`o` lists;
//! - every listed block is aligned to its order, lies in the zone's span, has
//!   a Buddy record of that order and freetype, and sits on the list of its
//!   pageblock's freetype;
//! - no two free buddies of the same order below the pageblock order are
//!   unmerged (at the pageblock order and above a pageblock re-typed while
//!   it holds a free block may leave it unmerged beside its buddy, as in
//!   the kernel);
//! - `nr_free` equals the pages on all lists but ISOLATE's;
//! - bit `o` of `listed_orders[t]` is set exactly when the order-`o` list
//!   of freetype `t` is not empty.

pub mod boost;
mod buddy;
mod extfrag;
mod fallback;
mod free_list;
mod highatomic;
mod invariants;
mod pick_tail;
pub mod watermark;

pub use extfrag::ExtfragKey;
pub use fallback::RmqueueMode;
pub use pick_tail::PickTail;

use crate::alloc_policy::FallbackOrder;
use crate::frames::Frames;
use crate::freetype::{FreeTypeIdx, MigrateType, NR_FREETYPES};
use crate::machine::PfnRange;
use crate::memmap::FrameIdx;
use crate::types::{Order, ZoneIdx};

/// One free list, linked through the memmap records.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FreeList {
    head: FrameIdx,
    tail: FrameIdx,
}

impl FreeList {
    const EMPTY: FreeList = FreeList {
        head: FrameIdx::NIL,
        tail: FrameIdx::NIL,
    };

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == FrameIdx::NIL
    }
}

/// The free lists of one order (`struct free_area`).
#[derive(Clone, Debug)]
pub(crate) struct FreeArea {
    lists: [FreeList; NR_FREETYPES],
    nr_free: u64,
}

/// Counters of zone-lock-protected events, shown in /proc/vmstat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneEvents {
    /// Fallback allocations that claimed a whole pageblock for the requested type.
    pub extfrag_claim: u64,
    /// Fallback allocations that took pages without converting the block.
    pub extfrag_steal: u64,
    /// Pageblocks moved to the HIGHATOMIC reserve.
    pub highatomic_reserved: u64,
    /// Pageblocks released from the HIGHATOMIC reserve.
    pub highatomic_unreserved: u64,
    /// Per-CPU list refills (`rmqueue_bulk()` calls).
    pub pcp_refill: u64,
    /// Pages those refills moved (the kernel's `mm_page_alloc_zone_locked`
    /// events with `percpu_refill=1`).
    pub pcp_refill_pages: u64,
    /// Pages returned from per-CPU lists to the buddy lists.
    pub pcp_drain_pages: u64,
    /// Pageblocks removed from the direct map for `__GFP_UNMAPPED`.
    pub direct_map_unmapped_blocks: u64,
    /// Unmapped pageblocks zeroed and put back into the direct map.
    pub direct_map_remapped_blocks: u64,
}

/// The buddy state of one zone.
pub struct Zone {
    index: ZoneIdx,
    span: PfnRange,
    max_order: Order,
    pageblock_order: Order,
    free_area: Box<[FreeArea]>,
    nr_free: u64,
    nr_isolated_free: u64,
    nr_reserved_highatomic: u64,
    /// Per freetype, a bit per order whose list is not empty: what
    /// [`Zone::block_orders`] summarises for lockless watermark checks.
    listed_orders: [u32; NR_FREETYPES],
    managed: u64,
    events: ZoneEvents,
    /// Blocks of this order or above are freed to a random end of their
    /// list; `Order(u8::MAX)` when the free lists are not shuffled.
    shuffle_order: Order,
    pick_tail: PickTail,
    /// `watermark_boost`, its limit and the ceiling the invariant holds it
    /// to (`boost`).
    watermark_boost: u64,
    boost_limit: u64,
    boost_ceiling: u64,
    /// ZONE_BOOSTED_WATERMARK.
    boosted_wakeup: bool,
    /// The table a request walks when its own lists are empty.
    fallback_order: FallbackOrder,
    /// Claims and steals per `mm_page_alloc_extfrag` key.
    extfrag: extfrag::ExtfragCounts,
}

impl Zone {
    /// An empty zone with index `index` over `span`.
    pub(crate) fn new(
        index: ZoneIdx,
        span: PfnRange,
        max_order: Order,
        pageblock_order: Order,
    ) -> Zone {
        let area = FreeArea {
            lists: [FreeList::EMPTY; NR_FREETYPES],
            nr_free: 0,
        };
        Zone {
            index,
            span,
            max_order,
            pageblock_order,
            free_area: vec![area; max_order.index() + 1].into_boxed_slice(),
            nr_free: 0,
            nr_isolated_free: 0,
            nr_reserved_highatomic: 0,
            listed_orders: [0; NR_FREETYPES],
            managed: 0,
            events: ZoneEvents::default(),
            shuffle_order: Order(u8::MAX),
            pick_tail: PickTail::new(0),
            watermark_boost: 0,
            boost_limit: 0,
            boost_ceiling: 0,
            boosted_wakeup: false,
            fallback_order: FallbackOrder::Kernel,
            extfrag: extfrag::ExtfragCounts::new(max_order),
        }
    }

    /// Turns random head/tail placement on for blocks of `order` and above
    /// (`Some`), or off (`None`), with the seed of this zone's bits.
    pub(crate) fn set_shuffle(&mut self, order: Option<Order>, seed: u64) {
        self.shuffle_order = order.unwrap_or(Order(u8::MAX));
        self.pick_tail = PickTail::new(seed);
    }

    /// Makes requests fall back in `order` (boot).
    pub(crate) fn set_fallback_order(&mut self, order: FallbackOrder) {
        self.fallback_order = order;
    }

    /// Claims and steals so far, per `mm_page_alloc_extfrag` key, in key
    /// order (keys never seen left out).
    pub fn extfrag_events(&self) -> impl Iterator<Item = (ExtfragKey, u64)> + '_ {
        self.extfrag.nonzero()
    }

    /// Changes the zone's span (memory hotplug).
    pub(crate) fn set_span(&mut self, span: PfnRange) {
        self.span = span;
    }

    /// Removes pages from the managed count (memory offline).
    pub(crate) fn sub_managed(&mut self, pages: u64) {
        self.managed -= pages;
    }

    /// Lowers the HIGHATOMIC reserve by `pages` that left the zone.
    pub(crate) fn sub_reserved_highatomic(&mut self, pages: u64) {
        self.nr_reserved_highatomic -= pages.min(self.nr_reserved_highatomic);
    }

    /// Free pages on all lists but ISOLATE's (`NR_FREE_PAGES`).
    #[inline]
    pub fn nr_free(&self) -> u64 {
        self.nr_free
    }

    /// Pages in HIGHATOMIC pageblocks (`nr_reserved_highatomic`).
    #[inline]
    pub fn nr_reserved_highatomic(&self) -> u64 {
        self.nr_reserved_highatomic
    }

    /// Pages the allocator manages in this zone.
    pub fn managed(&self) -> u64 {
        self.managed
    }

    /// Adds pages to the managed count (boot, hotplug).
    pub(crate) fn add_managed(&mut self, pages: u64) {
        self.managed += pages;
    }

    /// Number of free blocks of an order (`free_area[order].nr_free`).
    pub fn nr_free_blocks(&self, order: Order) -> u64 {
        self.free_area
            .get(order.index())
            .map_or(0, |area| area.nr_free)
    }

    /// True when the list of `freetype` at `order` is empty (`free_area_empty()`).
    #[inline]
    pub(crate) fn list_is_empty(&self, order: Order, freetype: FreeTypeIdx) -> bool {
        self.free_area[order.index()].lists[freetype.index()].is_empty()
    }

    /// Number of blocks on one list, walking it (for /proc/pagetypeinfo).
    pub fn list_len(&self, frames: &Frames, order: Order, freetype: FreeTypeIdx, cap: u64) -> u64 {
        let mut count = 0;
        let mut pfn = self.free_area[order.index()].lists[freetype.index()].head;
        while pfn != FrameIdx::NIL && count < cap {
            count += 1;
            pfn = frames.memmap.next(pfn);
        }
        count
    }

    /// The counters of this zone.
    pub fn events(&self) -> ZoneEvents {
        self.events
    }

    pub(crate) fn events_mut(&mut self) -> &mut ZoneEvents {
        &mut self.events
    }

    /// Pages per pageblock.
    #[inline]
    pub(crate) fn pageblock_nr_pages(&self) -> u64 {
        self.pageblock_order.nr_pages()
    }

    /// The orders at which blocks are listed, for the second half of
    /// __zone_watermark_ok() without the lock ([`BlockOrders`]).
    pub(crate) fn block_orders(&self) -> BlockOrders {
        let mut pcptypes = 0u32;
        for index in FreeTypeIdx::all() {
            if index.freetype().migratetype.is_pcptype() {
                pcptypes |= self.listed_orders[index.index()];
            }
        }
        let highatomic = self.listed_orders[FreeTypeIdx::of(MigrateType::HighAtomic).index()];
        BlockOrders(u64::from(highatomic) << 32 | u64::from(pcptypes))
    }
}

/// Which orders have a free block, in one word that the zone lock's holder
/// publishes after each change (`ZoneSlot::block_orders`) and watermark
/// checks read without the lock: bit `o` of the low half is set when a list
/// of a pcp migratetype (mapped or unmapped) holds an order-`o` block, bit
/// `o` of the high half when the HIGHATOMIC list does (MAX_PAGE_ORDER is at
/// most 20, so each half has room). The kernel's __zone_watermark_ok() reads
/// `free_area[o].nr_free` and the list heads racily in the same way; a stale
/// word only sends an allocation to a zone whose lists turn out empty under
/// the lock, or past one that has just gained a block, as a stale read does
/// there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockOrders(pub(crate) u64);

impl BlockOrders {
    /// True when a block of `order` or above is listed on a pcp
    /// migratetype's list, or on HIGHATOMIC's if `highatomic_allowed`: the
    /// second half of __zone_watermark_ok() over every freetype.
    #[inline]
    pub(crate) fn has_block_at_or_above(self, order: Order, highatomic_allowed: bool) -> bool {
        let pcptypes = self.0 as u32;
        let highatomic = if highatomic_allowed {
            (self.0 >> 32) as u32
        } else {
            0
        };
        (pcptypes | highatomic) >> order.0 != 0
    }
}
