//! Consistent copies of a zone's state for reports (/proc views, tests):
//! taken under the zone lock and each pcp lock in turn.

use super::events::VmEvent;
use super::PageAllocator;
use crate::freetype::{FreeTypeIdx, MIGRATE_TYPES};
use crate::sync::LockFamily;
use crate::types::{NodeId, Order, Pfn, ZoneIdx, ZoneType};
use crate::zone::watermark::Watermarks;
use crate::zone::{ExtfragKey, ZoneEvents};

/// `/proc/pagetypeinfo` caps each list walk at this many entries.
pub const PAGETYPEINFO_CAP: u64 = 100_000;

/// One CPU's lists for one zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcpSnapshot {
    /// Pages listed.
    pub count: u32,
    /// The drain threshold (`high`; 0 until the lists were first used).
    pub high: u32,
    /// The refill/drain batch.
    pub batch: u32,
    /// The least `high` adapts to.
    pub high_min: u32,
    /// The most `high` adapts to.
    pub high_max: u32,
    /// Pages freed in a row, halved by each allocation (sizes drains).
    pub free_count: u32,
    /// Order-0 refills are `batch << alloc_factor` pages.
    pub alloc_factor: u8,
}

/// A zone at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneSnapshot {
    /// Node.
    pub node: NodeId,
    /// Zone type.
    pub zone_type: ZoneType,
    /// First PFN of the span.
    pub start_pfn: u64,
    /// Pages spanned, holes included.
    pub spanned: u64,
    /// Pages present.
    pub present: u64,
    /// Pages managed by the allocator.
    pub managed: u64,
    /// `NR_FREE_PAGES`.
    pub free: u64,
    /// Watermarks, without the boost.
    pub watermarks: Watermarks,
    /// `watermark_boost`: pages added to every watermark while kswapd has
    /// not reclaimed for a fallback's boost.
    pub watermark_boost: u64,
    /// `lowmem_reserve[]` against each zone type.
    pub lowmem_reserve: [u64; ZoneType::COUNT],
    /// `free_area[order].nr_free`.
    pub nr_free_blocks: Vec<u64>,
    /// Blocks per (freetype index, order), capped at [`PAGETYPEINFO_CAP`].
    pub list_blocks: Vec<Vec<u64>>,
    /// Pageblocks of each migratetype.
    pub pageblocks: [u64; MIGRATE_TYPES],
    /// Per CPU, in CPU order.
    pub pcp: Vec<PcpSnapshot>,
    /// Event counters summed over the CPUs.
    pub vm_events: [u64; VmEvent::COUNT],
    /// Zone-lock counters.
    pub zone_events: ZoneEvents,
    /// Zone lock acquisitions.
    pub lock_acquired: u64,
    /// Zone lock acquisitions that had to wait.
    pub lock_contended: u64,
    /// Pages in the HIGHATOMIC reserve.
    pub reserved_highatomic: u64,
}

impl ZoneSnapshot {
    /// The zone's name (`Normal`, `Movable`, `DMA32`).
    pub fn name(&self) -> &'static str {
        self.zone_type.name()
    }

    /// True when the zone has memory.
    pub fn is_populated(&self) -> bool {
        self.present > 0
    }

    /// Pages on the per-CPU lists of every CPU.
    pub fn pcp_pages(&self) -> u64 {
        self.pcp.iter().map(|pcp| pcp.count as u64).sum()
    }

    /// An event counter summed over the CPUs.
    pub fn event(&self, event: VmEvent) -> u64 {
        self.vm_events[event as usize]
    }
}

impl<L: LockFamily> PageAllocator<L> {
    /// A snapshot of zone `index` (zones are numbered node by node, lowest
    /// zone type first); `None` when there is no such zone.
    pub fn zone_snapshot(&self, index: usize) -> Option<ZoneSnapshot> {
        let slot = self.zones.get(index)?;
        let zone = ZoneIdx(u16::try_from(index).ok()?);
        let pcp = self
            .cpus
            .iter()
            .map(|cpu| {
                let (pcp, _) = L::lock(&cpu.zones[index].pcp);
                PcpSnapshot {
                    count: pcp.count(),
                    high: pcp.sizing().high(),
                    batch: pcp.sizing().batch(),
                    high_min: pcp.sizing().high_min(),
                    high_max: pcp.sizing().high_max(),
                    free_count: pcp.sizing().free_count(),
                    alloc_factor: pcp.sizing().alloc_factor(),
                }
            })
            .collect();
        let mut vm_events = [0u64; VmEvent::COUNT];
        for cpu in self.cpus.iter() {
            for event in VmEvent::ALL {
                vm_events[event as usize] += cpu.zones[zone.index()].events.get(event);
            }
        }
        let (buddy, _) = L::lock(&slot.buddy);
        let orders = 0..=self.layout.max_order.0;
        let nr_free_blocks = orders
            .clone()
            .map(|order| buddy.nr_free_blocks(Order(order)))
            .collect();
        let list_blocks = FreeTypeIdx::all()
            .map(|freetype| {
                orders
                    .clone()
                    .map(|order| {
                        buddy.list_len(&self.frames, Order(order), freetype, PAGETYPEINFO_CAP)
                    })
                    .collect()
            })
            .collect();
        let mut pageblocks = [0u64; MIGRATE_TYPES];
        let block_pages = self.layout.pageblock_order.nr_pages();
        let mut block = slot.start_pfn;
        while block < slot.start_pfn + slot.spanned_pages {
            if self.frames.blocks.zone(Pfn(block)) == Some(zone) {
                pageblocks[self.frames.blocks.migratetype(Pfn(block)).index()] += 1;
            }
            block += block_pages;
        }
        Some(ZoneSnapshot {
            node: slot.node,
            zone_type: slot.zone_type,
            start_pfn: slot.start_pfn,
            spanned: slot.spanned_pages,
            present: slot.present_pages,
            managed: buddy.managed(),
            free: buddy.nr_free(),
            watermarks: slot.watermarks,
            watermark_boost: buddy.watermark_boost(),
            lowmem_reserve: slot.lowmem_reserve,
            nr_free_blocks,
            list_blocks,
            pageblocks,
            pcp,
            vm_events,
            zone_events: buddy.events(),
            lock_acquired: slot.lock_acquired.get(),
            lock_contended: slot.lock_contended.get(),
            reserved_highatomic: buddy.nr_reserved_highatomic(),
        })
    }

    /// Snapshots of every zone, in zone order.
    pub fn zone_snapshots(&self) -> Vec<ZoneSnapshot> {
        (0..self.zones.len())
            .filter_map(|index| self.zone_snapshot(index))
            .collect()
    }
}

impl<L: LockFamily> PageAllocator<L> {
    /// Free blocks per order summed over every zone
    /// (`free_area[order].nr_free`, orders 0 to MAX_PAGE_ORDER): the sums of
    /// /proc/buddyinfo's columns, without a full [`ZoneSnapshot`].
    pub fn nr_free_blocks_per_order(&self) -> Vec<u64> {
        let mut totals = vec![0u64; self.layout.max_order.index() + 1];
        for slot in self.zones.iter() {
            let (buddy, _) = L::lock(&slot.buddy);
            for (order, total) in (0..=self.layout.max_order.0).zip(totals.iter_mut()) {
                *total += buddy.nr_free_blocks(Order(order));
            }
        }
        totals
    }

    /// Claims and steals so far, per `mm_page_alloc_extfrag` key, summed
    /// over every zone, in key order: what the kernel's tracepoint would
    /// have reported for the same allocations.
    pub fn extfrag_events(&self) -> Vec<(ExtfragKey, u64)> {
        let mut totals: Vec<(ExtfragKey, u64)> = Vec::new();
        for slot in self.zones.iter() {
            let (buddy, _) = L::lock(&slot.buddy);
            for (key, count) in buddy.extfrag_events() {
                match totals.iter_mut().find(|(seen, _)| *seen == key) {
                    Some((_, total)) => *total += count,
                    None => totals.push((key, count)),
                }
            }
        }
        totals.sort();
        totals
    }

    /// `NR_FREE_PAGES` and the watermarks of zone `index`, read without any
    /// lock (the published counter, as `zone_page_state()` reads it); `None`
    /// when there is no such zone. Cheap enough for per-page decisions such
    /// as NUMA balancing's "is the target node above its high watermark"
    /// (`migrate_balanced_pgdat()`), where a full [`ZoneSnapshot`] is not.
    /// The watermarks are those wmark_pages() reads: boosted by the
    /// zone's watermark boost.
    pub fn zone_free_pages(&self, index: usize) -> Option<(u64, Watermarks)> {
        let slot = self.zones.get(index)?;
        let boost = slot.watermark_boost.get();
        let marks = slot.watermarks;
        Some((
            slot.free_pages.get(),
            Watermarks {
                min: marks.min + boost,
                low: marks.low + boost,
                high: marks.high + boost,
                promo: marks.promo + boost,
            },
        ))
    }

    /// Pages zone `index`'s watermarks are boosted by (`watermark_boost`);
    /// `None` when there is no such zone.
    pub fn zone_watermark_boost(&self, index: usize) -> Option<u64> {
        Some(self.zones.get(index)?.watermark_boost.get())
    }

    /// Tests and clears zone `index`'s ZONE_BOOSTED_WATERMARK: true when a
    /// fallback boosted its watermarks since and the allocation that did
    /// may wake kswapd (rmqueue()'s end does so in the kernel).
    pub fn take_boosted_watermark_wakeup(&self, index: usize) -> bool {
        if index >= self.zones.len() {
            return false;
        }
        let (mut buddy, _) = L::lock(&self.zones[index].buddy);
        buddy.take_boosted_wakeup()
    }

    /// kswapd reclaimed for the boost it saw at its start: the boost of
    /// zone `index` drops by `pages` (not below 0). mirrors the end of
    /// balance_pgdat().
    pub fn reduce_watermark_boost(&self, index: usize, pages: u64) {
        let Some(slot) = self.zones.get(index) else {
            return;
        };
        let (mut buddy, _) = L::lock(&slot.buddy);
        buddy.reduce_watermark_boost(pages);
        self.publish(crate::types::ZoneIdx(index as u16), &buddy);
    }
}
