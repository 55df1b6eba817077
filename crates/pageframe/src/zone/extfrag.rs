//! A zone's fallback events, counted per key as the kernel's
//! `mm_page_alloc_extfrag` tracepoint reports them: one event per claim
//! (`__rmqueue_claim()` succeeded) and per steal (`__rmqueue_steal()`),
//! keyed by the request's order and migratetype, the order and migratetype
//! of the free block used, and whether the pageblock of the page handed out
//! now belongs to the request's migratetype (`change_ownership`, read after
//! the fact as the tracepoint reads it).
//!
//! Invariant: the counts sum to the zone's `extfrag_claim + extfrag_steal`
//! events (each claim and steal is counted in both).

use crate::freetype::{MigrateType, MIGRATE_PCPTYPES};
use crate::types::Order;

/// The fields of one `mm_page_alloc_extfrag` event but the PFN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExtfragKey {
    /// `alloc_order`: the order of the request (of the per-CPU list being
    /// refilled, for a refill).
    pub alloc_order: Order,
    /// `fallback_order`: the order of the free block taken from the other
    /// type's list.
    pub fallback_order: Order,
    /// `alloc_migratetype`: the request's migratetype.
    pub alloc_migratetype: MigrateType,
    /// `fallback_migratetype`: the list the block came from.
    pub fallback_migratetype: MigrateType,
    /// `change_ownership`: the page's pageblock is now of the request's
    /// migratetype (a claim).
    pub change_ownership: bool,
}

/// Event counts of one zone, a dense table over every key.
#[derive(Clone, Debug)]
pub(crate) struct ExtfragCounts {
    /// Orders 0 to MAX_PAGE_ORDER.
    orders: usize,
    counts: Box<[u64]>,
}

impl ExtfragCounts {
    /// No event yet, for a zone whose largest order is `max_order`.
    pub(crate) fn new(max_order: Order) -> ExtfragCounts {
        let orders = max_order.index() + 1;
        ExtfragCounts {
            orders,
            counts: vec![0; orders * orders * MIGRATE_PCPTYPES * MIGRATE_PCPTYPES * 2]
                .into_boxed_slice(),
        }
    }

    fn slot(&self, key: &ExtfragKey) -> Option<usize> {
        let (alloc, fallback) = (key.alloc_order.index(), key.fallback_order.index());
        let (start, taken) = (
            key.alloc_migratetype.index(),
            key.fallback_migratetype.index(),
        );
        if alloc >= self.orders
            || fallback >= self.orders
            || start >= MIGRATE_PCPTYPES
            || taken >= MIGRATE_PCPTYPES
        {
            return None;
        }
        let orders = alloc * self.orders + fallback;
        let types = start * MIGRATE_PCPTYPES + taken;
        Some(
            (orders * MIGRATE_PCPTYPES * MIGRATE_PCPTYPES + types) * 2
                + key.change_ownership as usize,
        )
    }

    /// Counts one event. Only the per-CPU migratetypes fall back, so every
    /// key the zone produces has a slot.
    pub(crate) fn count(&mut self, key: ExtfragKey) {
        if let Some(slot) = self.slot(&key) {
            self.counts[slot] += 1;
        }
    }

    /// Every key counted at least once, in key order, with its count.
    pub(crate) fn nonzero(&self) -> impl Iterator<Item = (ExtfragKey, u64)> + '_ {
        let pcptypes = &MigrateType::ALL[..MIGRATE_PCPTYPES];
        (0..self.orders)
            .flat_map(move |alloc| (0..self.orders).map(move |fallback| (alloc, fallback)))
            .flat_map(move |orders| {
                pcptypes
                    .iter()
                    .flat_map(move |&start| pcptypes.iter().map(move |&taken| (start, taken)))
                    .map(move |types| (orders, types))
            })
            .flat_map(|orders_types| [false, true].map(|owned| (orders_types, owned)))
            .filter_map(|(((alloc, fallback), (start, taken)), owned)| {
                let key = ExtfragKey {
                    alloc_order: Order(alloc as u8),
                    fallback_order: Order(fallback as u8),
                    alloc_migratetype: start,
                    fallback_migratetype: taken,
                    change_ownership: owned,
                };
                let count = self.counts[self.slot(&key)?];
                (count > 0).then_some((key, count))
            })
    }

    /// The sum over every key.
    pub(crate) fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}
