//! The allocator's invariants as code: each zone's lists, each CPU's lists,
//! and a walk of the memmap proving that every managed page (present, not
//! reserved) belongs to exactly one block (free, on a per-CPU list, or
//! allocated) and no reserved page does, so that
//! `free + isolated + pcp + allocated == managed == present - reserved` per
//! zone; and what each zone publishes for lockless readers equals what its
//! lists hold.

use super::PageAllocator;
use crate::error::InvariantError;
use crate::memmap::{FrameIdx, PageInfo, PageState};
use crate::sync::LockFamily;
use crate::types::Pfn;

impl<L: LockFamily> PageAllocator<L> {
    /// Checks every invariant; the first broken one is returned. Costs a walk
    /// of every present page: for tests and debugging, not hot paths.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        for (index, zone) in self.zone_ids().zip(self.layout.zones()) {
            let mut pcp_pages = 0u64;
            for cpu in self.cpus.iter() {
                let (pcp, _) = L::lock(&cpu.zones[index.index()].pcp);
                pcp_pages += pcp.check_invariants(&self.frames)?;
            }
            let (buddy, _) = L::lock(&self.zones[index.index()].buddy);
            let listed_free = buddy.check_invariants(&self.frames)?;
            if self.zones[index.index()].free_pages.get() != buddy.nr_free() {
                return Err(InvariantError(format!(
                    "zone {index}: published free pages {} but the zone has {}",
                    self.zones[index.index()].free_pages.get(),
                    buddy.nr_free()
                )));
            }
            let published = self.zones[index.index()].block_orders.get();
            if published != buddy.block_orders().0 {
                return Err(InvariantError(format!(
                    "zone {index}: published block orders {published:#x} but the lists give {:#x}",
                    buddy.block_orders().0
                )));
            }
            let slot = &self.zones[index.index()];
            if buddy.managed() != zone.managed_pages() || slot.managed_pages != zone.managed_pages()
            {
                return Err(InvariantError(format!(
                    "zone {index}: managed {} (slot {}) but the layout has {} present less {} reserved",
                    buddy.managed(),
                    slot.managed_pages,
                    zone.present_pages(),
                    zone.reserved_pages()
                )));
            }
            for range in &zone.reserved {
                if let Some((head, _)) = self.frames.memmap.heads(range.start, range.end).next() {
                    return Err(InvariantError(format!(
                        "zone {index}: reserved PFN {} heads a block",
                        head.pfn()
                    )));
                }
            }
            let mut walked = [0u64; 4];
            for range in &zone.managed_ranges() {
                let mut pfn = range.start.0;
                while pfn < range.end.0 {
                    let info = self.frames.memmap.info(FrameIdx::covered(Pfn(pfn)));
                    let kind = match info.state() {
                        PageState::Buddy => 0,
                        PageState::Pcp => 1,
                        PageState::Allocated | PageState::Freeing => 2,
                        PageState::Untracked => {
                            return Err(InvariantError(format!(
                                "zone {index}: PFN {pfn} is in no block (neither free, pcp nor allocated)"
                            )))
                        }
                    };
                    let pages = info.order().nr_pages();
                    if pfn + pages > range.end.0 {
                        return Err(InvariantError(format!(
                            "zone {index}: order-{} block at PFN {pfn} runs past its memory range",
                            info.order()
                        )));
                    }
                    if let Some(inner) = (pfn + 1..pfn + pages).find(|&p| {
                        self.frames.memmap.info(FrameIdx::covered(Pfn(p))) != PageInfo::UNTRACKED
                    }) {
                        return Err(InvariantError(format!(
                            "zone {index}: PFN {inner} has state inside the order-{} block at {pfn}",
                            info.order()
                        )));
                    }
                    if self.frames.blocks.zone(crate::types::Pfn(pfn)) != Some(index) {
                        return Err(InvariantError(format!(
                            "zone {index}: PFN {pfn} has another zone in its pageblock"
                        )));
                    }
                    walked[kind] += pages;
                    pfn += pages;
                }
            }
            let [buddy_pages, pcp_walked, allocated, _] = walked;
            if buddy_pages != listed_free || pcp_walked != pcp_pages {
                return Err(InvariantError(format!(
                    "zone {index}: memmap has {buddy_pages} buddy / {pcp_walked} pcp pages, lists have {listed_free} / {pcp_pages}"
                )));
            }
            if buddy_pages + pcp_walked + allocated != buddy.managed() {
                return Err(InvariantError(format!(
                    "zone {index}: free {buddy_pages} + pcp {pcp_walked} + allocated {allocated} != managed {}",
                    buddy.managed()
                )));
            }
        }
        self.check_zone_indices()?;
        self.check_direct_map()
    }

    /// Every zone index in a zonelist or a pageblock word names a zone of
    /// the machine, and every CPU has a state for each zone: what
    /// [`PageAllocator::zone_on_cpu`] relies on.
    fn check_zone_indices(&self) -> Result<(), InvariantError> {
        let nr_zones = self.zones.len();
        if let Some(cpu) = self.cpus.iter().position(|cpu| cpu.zones.len() != nr_zones) {
            return Err(InvariantError(format!(
                "CPU {cpu} has state for {} zones, the machine has {nr_zones}",
                self.cpus[cpu].zones.len()
            )));
        }
        if self.zonelists.len() != self.layout.nodes.len() {
            return Err(InvariantError(format!(
                "{} zonelists for {} nodes",
                self.zonelists.len(),
                self.layout.nodes.len()
            )));
        }
        if let Some(zone) = self
            .zonelists
            .iter()
            .flat_map(|lists| lists.indices())
            .find(|zone| zone.index() >= nr_zones)
        {
            return Err(InvariantError(format!(
                "a zonelist names zone {zone}, the machine has {nr_zones}"
            )));
        }
        let block_order = self.layout.pageblock_order.0;
        for block in 0..self.frames.blocks.len() as u64 {
            let pfn = Pfn(block << block_order);
            if let Some(zone) = self.frames.blocks.zone(pfn) {
                if zone.index() >= nr_zones {
                    return Err(InvariantError(format!(
                        "the pageblock at PFN {pfn} names zone {zone}, the machine has {nr_zones}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Every page of an unmapped pageblock is absent from the direct map,
    /// and the count of unmapped pageblocks is right. (Pages of mapped
    /// pageblocks may be unmapped by their owner while allocated, as
    /// secretmem does, so only the unmapped side is an invariant.)
    fn check_direct_map(&self) -> Result<(), InvariantError> {
        let block_pages = self.layout.pageblock_order.nr_pages();
        let mut unmapped_blocks = 0u64;
        let mut last_counted = u64::MAX;
        for range in self.layout.zones().flat_map(|zone| zone.present.iter()) {
            let mut block = range.start.0 & !(block_pages - 1);
            while block < range.end.0 {
                if self.frames.blocks.freetype(Pfn(block)).is_unmapped() {
                    // A pageblock shared by two ranges is counted once.
                    unmapped_blocks += u64::from(block != last_counted);
                    last_counted = block;
                    let pages = block.max(range.start.0)..(block + block_pages).min(range.end.0);
                    if let Some(mapped) = pages
                        .map(Pfn)
                        .find(|&pfn| self.backing.is_direct_mapped(pfn))
                    {
                        return Err(InvariantError(format!(
                            "PFN {mapped} is in the direct map but its pageblock is unmapped"
                        )));
                    }
                }
                block += block_pages;
            }
        }
        if unmapped_blocks != self.nr_unmapped_pageblocks() {
            return Err(InvariantError(format!(
                "{unmapped_blocks} pageblocks are unmapped but the count says {}",
                self.nr_unmapped_pageblocks()
            )));
        }
        Ok(())
    }

    /// Pages allocated (held by callers) over the whole machine, from the memmap.
    pub fn nr_allocated_pages(&self) -> u64 {
        self.layout
            .zones()
            .flat_map(|zone| zone.present.iter())
            .flat_map(|range| self.frames.memmap.heads(range.start, range.end))
            .filter(|(_, info)| matches!(info.state(), PageState::Allocated | PageState::Freeing))
            .map(|(_, info)| info.order().nr_pages())
            .sum()
    }
}
