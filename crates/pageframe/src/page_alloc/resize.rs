//! Resizing zones: the one place where a zone's present memory, span and
//! managed pages change after boot (memory hotplug), and where the limits
//! that follow from every zone's size are computed, at boot and after each
//! resize: min_free_kbytes, watermarks, lowmem reserves, ALLOC_NOFRAGMENT,
//! per-CPU high and batch, zonelists.
//!
//! The narrow API the rest of the allocator (hotplug) uses:
//! [`PageAllocator::zone_of`], [`PageAllocator::grow_frames`],
//! [`PageAllocator::add_zone_memory`], [`PageAllocator::remove_zone_memory`],
//! [`PageAllocator::drain_zone_pcp`] and
//! [`PageAllocator::recompute_zone_limits`]; the sysctl writes
//! (`sysctl.rs`) recompute parts of the limits through
//! [`PageAllocator::setup_per_zone_wmarks`],
//! [`PageAllocator::setup_lowmem_reserve`],
//! [`PageAllocator::set_pageset_high_and_batch`] and
//! [`PageAllocator::set_boost_limits`].
//!
//! Invariant kept by every call: a zone's present ranges in the layout are
//! sorted, disjoint and coalesced; its span covers them; its slot's
//! `start_pfn`, `spanned_pages`, `present_pages` and `managed_pages` and its buddy span
//! agree with the layout; `managed` changes by exactly the pages added or
//! removed. All take `&mut self` (no CPU handle alive) but the drain.

use super::{build_zonelists, nofragment, PageAllocator};
use crate::alloc_policy::PcpSizing;
use crate::machine::{merge_sorted, PfnRange, ZoneLayout};
use crate::pcp::PcpIndex;
use crate::sync::LockFamily;
use crate::types::{NodeId, Pfn, ZoneIdx, ZoneType};
use crate::zone::boost::max_watermark_boost;
use crate::zone::watermark::{
    calculate_min_free_kbytes, lowmem_reserves, thp_min_free_kbytes, zone_batchsize, zone_highsize,
    zone_watermarks,
};

impl<L: LockFamily> PageAllocator<L> {
    /// The zone index of (node, zone type).
    pub(super) fn zone_of(&self, node: NodeId, zone_type: ZoneType) -> Option<ZoneIdx> {
        self.zone_ids().find(|zone| {
            let slot = &self.zones[zone.index()];
            slot.node == node && slot.zone_type == zone_type
        })
    }

    /// Grows the machine to PFNs below `end`: the layout ends there, and
    /// the memmap and pageblock table cover it. A memmap that must grow
    /// grows to `ahead` when that is further (the end of hotplug steps
    /// still to come, so that it is copied once, not at every step) and it
    /// can be had, else to `end`; the layout ends at `end` either way.
    /// `Err(end)` when the memmap cannot be allocated (nothing changed).
    pub(super) fn grow_frames(&mut self, end: Pfn, ahead: Pfn) -> Result<(), Pfn> {
        if end.0 > self.frames.memmap.len() as u64 {
            let grown = [ahead.max(end), end]
                .into_iter()
                .find_map(|to| Some((to, self.frames.memmap.grown(to.index())?)));
            let (to, memmap) = grown.ok_or(end)?;
            self.frames.blocks = self.frames.blocks.grown(to);
            self.frames.memmap = memmap;
        }
        self.layout.end_pfn = self.layout.end_pfn.max(end);
        Ok(())
    }

    /// Adds `range` to the zone's present memory: the span grows to cover
    /// it and `managed` grows by its pages, which the caller then frees
    /// into the buddy lists. mirrors move_pfn_range_to_zone() and
    /// adjust_managed_page_count().
    pub(super) fn add_zone_memory(&mut self, zone: ZoneIdx, range: PfnRange) {
        let layout = self.layout_zone_mut(zone);
        layout.present.push(range);
        merge_sorted(&mut layout.present);
        self.sync_zone_size(zone);
        self.lock_zone(zone).add_managed(range.len());
    }

    /// Removes `range`, whose pages the caller took off the buddy lists,
    /// from the zone's present memory: `managed` drops by its pages and the
    /// span shrinks to what remains. mirrors shrink_zone_span() and
    /// adjust_managed_page_count().
    pub(super) fn remove_zone_memory(&mut self, zone: ZoneIdx, range: PfnRange) {
        let layout = self.layout_zone_mut(zone);
        let mut kept = Vec::with_capacity(layout.present.len() + 1);
        for present in layout.present.drain(..) {
            let before = PfnRange {
                start: present.start,
                end: present.end.min(range.start),
            };
            let after = PfnRange {
                start: present.start.max(range.end),
                end: present.end,
            };
            kept.extend([before, after].into_iter().filter(|part| !part.is_empty()));
        }
        layout.present = kept;
        self.sync_zone_size(zone);
        let mut buddy = self.lock_zone(zone);
        buddy.sub_managed(range.len());
        self.publish(zone, &buddy);
    }

    /// Returns every CPU's per-CPU pages of `zone` to the buddy lists.
    pub(super) fn drain_zone_pcp(&self, zone: ZoneIdx) {
        for cpu in self.cpus.iter() {
            let (mut pcp, _) = L::lock(&cpu.zones[zone.index()].pcp);
            if pcp.count() > 0 {
                let count = pcp.count();
                self.free_pcppages_bulk(&mut pcp, zone, count, PcpIndex::FIRST);
            }
        }
    }

    /// nr_free_buffer_pages(): the managed pages above the high watermark
    /// of every zone up to ZONE_NORMAL (the zones GFP_USER may use).
    fn free_buffer_pages(&self) -> u64 {
        self.zones
            .iter()
            .filter(|slot| slot.zone_type <= ZoneType::Normal)
            .map(|slot| slot.managed_pages.saturating_sub(slot.watermarks.high))
            .sum()
    }

    /// Every zone's watermarks from min_free_kbytes and
    /// `vm.watermark_scale_factor`, any boost dropped. mirrors
    /// __setup_per_zone_wmarks() (6.12): ZONE_MOVABLE's pages do not count
    /// in the lowmem total.
    fn setup_zone_watermarks(&mut self) {
        let page_kb = ((1u64 << self.layout.page_shift) >> 10).max(1);
        let pages_min = self.min_free_kbytes / page_kb;
        let lowmem_pages: u64 = self
            .zones
            .iter()
            .filter(|slot| slot.zone_type != ZoneType::Movable)
            .map(|slot| slot.managed_pages)
            .sum();
        for slot in self.zones.iter_mut() {
            slot.watermarks = zone_watermarks(
                pages_min,
                slot.managed_pages,
                lowmem_pages,
                self.options.watermark_scale_factor,
                slot.zone_type == ZoneType::Movable,
            );
        }
        self.set_boost_limits(false);
    }

    /// Every zone's largest watermark boost from its high watermark and
    /// `vm.watermark_boost_factor`; `keep_boost` keeps the boosts in force
    /// (see [`crate::zone::Zone`]'s `set_boost_limit`).
    pub(super) fn set_boost_limits(&self, keep_boost: bool) {
        let pageblock_pages = self.layout.pageblock_order.nr_pages();
        for index in 0..self.zones.len() {
            let slot = &self.zones[index];
            let limit = max_watermark_boost(
                slot.watermarks.high,
                slot.managed_pages,
                pageblock_pages,
                self.options.watermark_boost_factor,
            );
            // Not lock_zone(): recomputing limits is no allocator traffic.
            let (mut buddy, _) = L::lock(&slot.buddy);
            buddy.set_boost_limit(limit, keep_boost);
            self.publish(ZoneIdx(index as u16), &buddy);
        }
    }

    /// The watermarks of every zone, then each zone's per-CPU high and
    /// batch, which follow the low watermark. mirrors
    /// setup_per_zone_wmarks().
    pub(super) fn setup_per_zone_wmarks(&mut self) {
        self.setup_zone_watermarks();
        self.set_pageset_high_and_batch();
    }

    /// Every zone's `lowmem_reserve[]` from the managed pages of the zones
    /// above it in its node and `vm.lowmem_reserve_ratio`. mirrors
    /// setup_per_zone_lowmem_reserve().
    pub(super) fn setup_lowmem_reserve(&mut self) {
        for node in 0..self.layout.nodes.len() {
            let mut managed = [0u64; ZoneType::COUNT];
            for slot in self.zones.iter().filter(|slot| slot.node.index() == node) {
                managed[slot.zone_type.index()] = slot.managed_pages;
            }
            let reserves = lowmem_reserves(&managed, &self.options.lowmem_reserve_ratio);
            for slot in self
                .zones
                .iter_mut()
                .filter(|slot| slot.node.index() == node)
            {
                slot.lowmem_reserve = reserves[slot.zone_type.index()];
            }
        }
    }

    /// What boot computes and every resize recomputes from the zones'
    /// present pages: min_free_kbytes (raised for THP when the machine
    /// enables it) and the watermarks of every zone, lowmem reserves,
    /// ALLOC_NOFRAGMENT, per-CPU high and batch (the per-CPU lists drained
    /// to them) and the zonelists. mirrors init_per_zone_wmark_min() with
    /// khugepaged_min_free_kbytes_update() (6.12), zone_pcp_update() with
    /// the drain of zone_pcp_disable(), and build_all_zonelists().
    pub(super) fn recompute_zone_limits(&mut self) {
        let page_kb = (1u64 << self.layout.page_shift) >> 10;
        // From the watermarks in force (none at boot); a value written to
        // vm.min_free_kbytes may be kept.
        self.min_free_kbytes = calculate_min_free_kbytes(
            self.free_buffer_pages() * page_kb,
            self.min_free_kbytes,
            self.user_min_free_kbytes,
        );
        self.setup_zone_watermarks();
        if self.layout.transparent_hugepage {
            let nr_zones = self
                .zones
                .iter()
                .filter(|slot| slot.zone_type <= ZoneType::Normal && slot.present_pages > 0)
                .count() as u64;
            self.min_free_kbytes = thp_min_free_kbytes(
                self.min_free_kbytes,
                self.layout.pageblock_order.nr_pages(),
                nr_zones,
                self.free_buffer_pages(),
                page_kb,
            );
            self.setup_zone_watermarks();
        }
        self.setup_lowmem_reserve();
        for index in 0..self.zones.len() {
            let (node, zone_type) = (self.zones[index].node, self.zones[index].zone_type);
            self.zones[index].nofragment = nofragment(&self.layout, node, zone_type);
        }
        self.set_pageset_high_and_batch();
        for zone in self.zone_ids() {
            self.drain_zone_pcp(zone);
        }
        self.zonelists = build_zonelists(&self.layout, &self.zones);
    }

    /// Every zone's per-CPU `high_min`, `high_max` and `batch` from its
    /// managed pages, low watermark and `vm.percpu_pagelist_high_fraction`;
    /// what the lists hold is left to the next free or decay. mirrors
    /// zone_set_pageset_high_and_batch() for every zone (Linux 6.12).
    pub(super) fn set_pageset_high_and_batch(&self) {
        let page_bytes = 1u64 << self.layout.page_shift;
        let nr_cpus = self.cpus.len();
        for zone in self.zone_ids() {
            let slot = &self.zones[zone.index()];
            // high_min and high_max split over the node's CPUs; the batch
            // override is a replay policy beyond the kernel (`PcpSizing`).
            let (high_min, high_max, batch) = if slot.managed_pages == 0 {
                (0, 0, 1)
            } else {
                let sizing = self.options.pcp;
                let batch = sizing
                    .batch
                    .unwrap_or_else(|| zone_batchsize(slot.managed_pages, page_bytes));
                let local_cpus = self.layout.nodes[slot.node.index()].cpus.len();
                // mirrors zone_highsize(): high_min from the low watermark,
                // or the managed pages / vm.percpu_pagelist_high_fraction
                // when it is set, which also pins high_max to it; else
                // high_max from an eighth of the zone.
                let high_min_pages = match sizing.high_fraction {
                    0 => slot.watermarks.low,
                    fraction => slot.managed_pages / u64::from(fraction),
                };
                let high_min = zone_highsize(high_min_pages, batch, local_cpus, nr_cpus);
                let high_max = if sizing.high_fraction == 0 {
                    let eighth = slot.managed_pages / u64::from(PcpSizing::MIN_HIGH_FRACTION);
                    zone_highsize(eighth, batch, local_cpus, nr_cpus)
                } else {
                    high_min
                };
                (high_min, high_max, batch)
            };
            for cpu in self.cpus.iter() {
                let (mut pcp, _) = L::lock(&cpu.zones[zone.index()].pcp);
                pcp.set_high_and_batch(high_min, high_max, batch);
                pcp.set_free_high_threshold(self.options.free_high);
            }
        }
    }

    /// The zone's layout entry (present ranges and span).
    pub(super) fn zone_layout(&self, zone: ZoneIdx) -> &ZoneLayout {
        self.layout
            .zones()
            .nth(zone.index())
            .expect("zone index from the table")
    }

    fn layout_zone_mut(&mut self, zone: ZoneIdx) -> &mut ZoneLayout {
        self.layout
            .nodes
            .iter_mut()
            .flat_map(|node| node.zones.iter_mut())
            .nth(zone.index())
            .expect("zone index from the table")
    }

    /// Makes the span, the slot's sizes and the buddy span follow the
    /// zone's present ranges.
    fn sync_zone_size(&mut self, zone: ZoneIdx) {
        let layout = self.layout_zone_mut(zone);
        layout.span = PfnRange::covering(&layout.present);
        let (span, present, managed) =
            (layout.span, layout.present_pages(), layout.managed_pages());
        let slot = &mut self.zones[zone.index()];
        slot.start_pfn = span.start.0;
        slot.spanned_pages = span.len();
        slot.present_pages = present;
        slot.managed_pages = managed;
        self.lock_zone(zone).set_span(span);
    }
}
