//! Memory hotplug: bringing a PFN range online into a zone, and taking one
//! offline again. mirrors online_pages(), offline_pages(),
//! move_pfn_range_to_zone(), start_isolate_page_range(),
//! test_pages_isolated() and undo_isolate_page_range() of
//! mm/memory_hotplug.c and mm/page_isolation.c.
//!
//! ```text
//!  boot: node 0 has [0, 8G); online [8G, 16G) on node 0 as ZONE_MOVABLE
//!  |<---- Normal (boot) ---->|<---- Movable (hotplugged) ---->|
//!  0                        8G                               16G
//!  online:  pageblocks ISOLATE -> pages freed (to the tail) -> types MOVABLE
//!           -> shuffle_zone -> watermarks, lowmem reserves, pcp high/batch
//!  offline: drain pcp -> pageblocks ISOLATE (free pages moved to the
//!           ISOLATE lists) -> every page free? remove them : restore types
//! ```
//!
//! Both take `&mut self`: no CPU handle may be alive, as the kernel holds the
//! hotplug lock and disables the zone's per-CPU lists around both.
//!
//! Invariants after either call, success or failure: those of
//! `check_invariants()`, with the zone's present ranges in the layout, its
//! span, `present_pages`, `managed`, watermarks and pcp sizes in agreement.
//! A failed call leaves every free list, pageblock type and counter as it
//! was (the per-CPU lists of the zone are drained, as the kernel drains
//! them before isolating).
//!
//! Deviations: ranges must be aligned to a MAX_PAGE_ORDER block (the
//! kernel's unit is a memory block of 128 MiB or more, so it never splits a
//! buddy); there is no page migration, so offline succeeds only when every
//! page of the range is free; isolation saves each pageblock's exact
//! freetype and restores it, where the kernel restores MOVABLE (a block it
//! could isolate had only movable or free pages). A range holding reserved
//! pages fails before the per-CPU lists are drained.

use super::shuffle::ShuffleStats;
use super::PageAllocator;
use crate::error::Errno;
use crate::freetype::{FreeType, FreeTypeIdx, MigrateType};
use crate::machine::{intersect, HotplugStep, PfnRange};
use crate::memmap::{FrameIdx, PageState};
use crate::sync::LockFamily;
use crate::types::{NodeId, Pfn, ZoneType};
use thiserror::Error;

/// Why a hotplug call failed. Nothing changed (but drained per-CPU lists).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HotplugError {
    /// A bad range, node or zone (EINVAL).
    #[error("EINVAL: {0}")]
    Invalid(String),
    /// Pages of the range are in use (EBUSY).
    #[error("EBUSY: {in_use} pages in use in {start:#x}..{end:#x}, first at PFN {first}")]
    Busy {
        /// Pages allocated (or on their way to being freed) in the range.
        in_use: u64,
        /// The first of them.
        first: Pfn,
        /// The range's first PFN.
        start: u64,
        /// One past its last PFN.
        end: u64,
    },
    /// Pages of the range were reserved at boot (EBUSY): never free, so
    /// never offline.
    #[error(
        "EBUSY: {reserved} pages reserved at boot in {start:#x}..{end:#x}, first at PFN {first}"
    )]
    Reserved {
        /// Reserved pages in the range.
        reserved: u64,
        /// The first of them.
        first: Pfn,
        /// The range's first PFN.
        start: u64,
        /// One past its last PFN.
        end: u64,
    },
    /// The memmap could not be grown to cover the range (ENOMEM).
    #[error("ENOMEM: cannot grow the memmap to PFN {0}")]
    NoMemory(u64),
}

impl HotplugError {
    /// The errno the kernel returns for this failure.
    pub fn errno(&self) -> Errno {
        match self {
            HotplugError::Invalid(_) => Errno::EINVAL,
            HotplugError::Busy { .. } | HotplugError::Reserved { .. } => Errno::EBUSY,
            HotplugError::NoMemory(_) => Errno::ENOMEM,
        }
    }
}

fn invalid(message: impl Into<String>) -> HotplugError {
    HotplugError::Invalid(message.into())
}

impl<L: LockFamily> PageAllocator<L> {
    /// Applies hotplug steps in order (a machine file's `[[hotplug]]`); the
    /// first failure is returned with the step's index, and the steps before
    /// it stay applied.
    ///
    /// An online step that grows the memmap grows it to the furthest end of
    /// the well-formed online steps from it on, so the memmap is copied
    /// once, not at every step (1600 steps of 128M took six minutes). A
    /// failure after such a step leaves the memmap that large, which no
    /// view shows: the machine (`layout().end_pfn`, the views, the PFNs a
    /// call may name) ends where the steps applied left it.
    pub fn apply_hotplug(&mut self, steps: &[HotplugStep]) -> Result<(), (usize, HotplugError)> {
        // furthest[i]: the furthest end of a well-formed online step at or after i.
        let mut furthest = vec![Pfn(0); steps.len()];
        let mut end = Pfn(0);
        for (index, step) in steps.iter().enumerate().rev() {
            if let Ok(range) = self.step_range(index, step) {
                if step.online && self.check_hotplug_range(range).is_ok() {
                    end = end.max(range.end);
                }
            }
            furthest[index] = end;
        }
        for (index, step) in steps.iter().enumerate() {
            let result = match self.step_range(index, step) {
                Err(err) => Err(err),
                Ok(range) if step.online => {
                    let node = u16::try_from(step.node).map(NodeId).map_err(|_| {
                        invalid(format!(
                            "hotplug[{index}].node: {} is not a node id (0 to 65535)",
                            step.node
                        ))
                    });
                    node.and_then(|node| {
                        self.online_pages_growing_to(range, node, step.zone, furthest[index])
                            .map(|_| ())
                    })
                }
                Ok(range) => self.offline_pages(range).map(|_| ()),
            };
            result.map_err(|err| (index, err))?;
        }
        Ok(())
    }

    /// The PFN range of a step's bytes; an end past 2^64 bytes is an error
    /// naming the step's fields.
    fn step_range(&self, index: usize, step: &HotplugStep) -> Result<PfnRange, HotplugError> {
        let shift = u32::from(self.layout.page_shift);
        let end = step.start.checked_add(step.size).ok_or_else(|| {
            invalid(format!(
                "hotplug[{index}].size: {:#x} + {:#x} ends past 2^64 bytes",
                step.start, step.size
            ))
        })?;
        Ok(PfnRange {
            start: Pfn(step.start >> shift),
            end: Pfn(end >> shift),
        })
    }

    fn check_hotplug_range(&self, range: PfnRange) -> Result<(), HotplugError> {
        let block = self.layout.max_order.nr_pages();
        if range.is_empty() || range.start.0 % block != 0 || range.end.0 % block != 0 {
            return Err(invalid(format!(
                "PFN range {:#x}..{:#x} is empty or not aligned to {block} pages",
                range.start.0, range.end.0
            )));
        }
        if FrameIdx::new(range.end).is_none() {
            return Err(invalid(format!(
                "PFN {:#x} is beyond 2^32 pages",
                range.end.0
            )));
        }
        Ok(())
    }

    /// Brings `range` online in `zone_type` of `node`: the pages join the
    /// zone (its span grows to cover them), are freed into the buddy lists
    /// and the zone is shuffled; watermarks, lowmem reserves, per-CPU sizes
    /// and zonelists are recomputed. mirrors online_pages().
    pub fn online_pages(
        &mut self,
        range: PfnRange,
        node: NodeId,
        zone_type: ZoneType,
    ) -> Result<ShuffleStats, HotplugError> {
        self.online_pages_growing_to(range, node, zone_type, range.end)
    }

    /// [`Self::online_pages`], growing a memmap that must grow to
    /// `memmap_end` when it can (the furthest end of the steps to come; see
    /// `grow_frames`). Nothing fails after the machine grows.
    fn online_pages_growing_to(
        &mut self,
        range: PfnRange,
        node: NodeId,
        zone_type: ZoneType,
        memmap_end: Pfn,
    ) -> Result<ShuffleStats, HotplugError> {
        self.check_hotplug_range(range)?;
        if node.index() >= self.layout.nodes.len() {
            return Err(invalid(format!("node {node} does not exist")));
        }
        if zone_type < ZoneType::Normal {
            return Err(invalid(format!(
                "memory is onlined to Normal or Movable, not {}",
                zone_type.name()
            )));
        }
        let zone = self
            .zone_of(node, zone_type)
            .ok_or_else(|| invalid(format!("node {node} has no {zone_type:?} zone")))?;
        for other in self.layout.zones() {
            for present in &other.present {
                if present.start < range.end && range.start < present.end {
                    return Err(invalid(format!(
                        "PFN range {:#x}..{:#x} overlaps online memory of node {}",
                        range.start.0, range.end.0, other.node
                    )));
                }
            }
        }
        self.grow_frames(range.end, memmap_end)
            .map_err(|end| HotplugError::NoMemory(end.0))?;
        self.drain_zone_pcp(zone);
        let pageblock = self.layout.pageblock_order.nr_pages();
        let isolate = FreeType::plain(MigrateType::Isolate);
        // move_pfn_range_to_zone(..., MIGRATE_ISOLATE)
        let mut block = range.start.0;
        while block < range.end.0 {
            self.frames.blocks.set_zone(Pfn(block), zone);
            self.frames.blocks.set_freetype(Pfn(block), isolate);
            block += pageblock;
        }
        self.add_zone_memory(zone, range);
        {
            // online_pages_range(): every page freed, to the tail, in
            // MAX_PAGE_ORDER blocks (__free_pages_core() with FPI_TO_TAIL).
            let mut buddy = self.lock_zone(zone);
            let max_block = self.layout.max_order.nr_pages();
            let mut pfn = range.start.0;
            while pfn < range.end.0 {
                buddy.free_block(
                    &self.frames,
                    FrameIdx::covered(Pfn(pfn)),
                    self.layout.max_order,
                    isolate,
                    true,
                );
                pfn += max_block;
            }
            // undo_isolate_page_range(..., MIGRATE_MOVABLE)
            self.unisolate(&mut buddy, range, |_| FreeType::plain(MigrateType::Movable));
            self.publish(zone, &buddy);
        }
        let stats = self.shuffle_zone(zone);
        self.recompute_zone_limits();
        Ok(stats)
    }

    /// Takes `range` offline: isolates its pageblocks, and if every page is
    /// free removes them from the zone; otherwise restores the pageblocks
    /// and fails with EBUSY naming the pages in use. Returns the pages
    /// removed. mirrors offline_pages().
    pub fn offline_pages(&mut self, range: PfnRange) -> Result<u64, HotplugError> {
        self.check_hotplug_range(range)?;
        let zone = self
            .frames
            .blocks
            .zone(range.start)
            .filter(|_| self.frames.memmap.covers(Pfn(range.end.0 - 1)))
            .ok_or_else(|| invalid(format!("PFN {:#x} is not online", range.start.0)))?;
        // test_pages_in_a_zone(): the whole range present, in one zone.
        let covered: u64 = self
            .zone_layout(zone)
            .present
            .iter()
            .map(|present| {
                present
                    .end
                    .min(range.end)
                    .0
                    .saturating_sub(present.start.max(range.start).0)
            })
            .sum();
        if covered != range.len() {
            return Err(invalid(format!(
                "PFN range {:#x}..{:#x} is not all online memory of one zone",
                range.start.0, range.end.0
            )));
        }
        // has_unmovable_pages(): a reserved page can neither be migrated
        // nor freed, so isolating its pageblock fails.
        let reserved = intersect(&self.zone_layout(zone).reserved, &[range]);
        let pages = reserved.iter().map(PfnRange::len).sum();
        let first = reserved.first().map(|part| part.start);
        if let Some(first) = first {
            return Err(HotplugError::Reserved {
                reserved: pages,
                first,
                start: range.start.0,
                end: range.end.0,
            });
        }
        // zone_pcp_disable(): the zone's per-CPU pages go back first.
        self.drain_zone_pcp(zone);
        let pageblock = self.layout.pageblock_order.nr_pages();
        let mut buddy = self.lock_zone(zone);
        // start_isolate_page_range(): remember each block's type, isolate it
        // and move its free pages to the ISOLATE lists.
        let saved: Vec<FreeType> = (range.start.0..range.end.0)
            .step_by(pageblock as usize)
            .map(|block| self.frames.blocks.freetype(Pfn(block)))
            .collect();
        let isolate = FreeType::plain(MigrateType::Isolate);
        for block in (range.start.0..range.end.0).step_by(pageblock as usize) {
            self.frames.blocks.set_freetype(Pfn(block), isolate);
        }
        for block in (range.start.0..range.end.0).step_by(pageblock as usize) {
            buddy.move_freepages_block(
                &self.frames,
                FrameIdx::covered(Pfn(block)),
                FreeTypeIdx::of(MigrateType::Isolate),
            );
        }
        // test_pages_isolated(): every page must be in a free block.
        let (mut in_use, mut first) = (0u64, None);
        for (head, info) in self.frames.memmap.heads(range.start, range.end) {
            if info.state() != PageState::Buddy {
                first.get_or_insert(head.pfn());
                in_use += info.order().nr_pages();
            }
        }
        if let Some(first) = first {
            // undo_isolate_page_range(): the saved types come back.
            let start = range.start.0;
            self.unisolate(&mut buddy, range, |block| {
                saved[((block - start) / pageblock) as usize]
            });
            self.publish(zone, &buddy);
            return Err(HotplugError::Busy {
                in_use,
                first,
                start: range.start.0,
                end: range.end.0,
            });
        }
        // Every page is free: take the blocks off the ISOLATE lists.
        for (head, info) in self.frames.memmap.heads(range.start, range.end) {
            if info.state() == PageState::Buddy {
                buddy.del_from_free_list(&self.frames, head, info.order(), info.freetype());
            }
        }
        let highatomic_pages = saved
            .iter()
            .filter(|freetype| freetype.migratetype == MigrateType::HighAtomic)
            .count() as u64
            * pageblock;
        buddy.sub_reserved_highatomic(highatomic_pages);
        for block in (range.start.0..range.end.0).step_by(pageblock as usize) {
            self.frames
                .blocks
                .set_freetype(Pfn(block), FreeType::plain(MigrateType::Movable));
            self.frames.blocks.clear_zone(Pfn(block));
        }
        drop(buddy);
        self.remap_offlined(range, &saved);
        self.remove_zone_memory(zone, range);
        self.recompute_zone_limits();
        Ok(range.len())
    }

    /// Puts the offlined pageblocks that were unmapped back into the direct
    /// map (the memory left the allocator; a later online starts it mapped,
    /// as hot-added memory is) and takes them off the unmapped count.
    fn remap_offlined(&self, range: PfnRange, saved: &[FreeType]) {
        let pageblock = self.layout.pageblock_order.nr_pages();
        for (block, freetype) in (range.start.0..range.end.0)
            .step_by(pageblock as usize)
            .zip(saved)
        {
            if freetype.is_unmapped() {
                // A failed remap leaves offline memory protected, which no
                // one reaches: nothing to undo.
                let _ = self.backing.remap_direct(Pfn(block), pageblock);
                self.unmapped_pageblocks
                    .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Gives every pageblock of `range` its type back and moves its free
    /// pages to that type's lists. mirrors undo_isolate_page_range().
    fn unisolate(
        &self,
        buddy: &mut crate::zone::Zone,
        range: PfnRange,
        restore: impl Fn(u64) -> FreeType,
    ) {
        let pageblock = self.layout.pageblock_order.nr_pages();
        for block in (range.start.0..range.end.0).step_by(pageblock as usize) {
            self.frames.blocks.set_freetype(Pfn(block), restore(block));
        }
        for block in (range.start.0..range.end.0).step_by(pageblock as usize) {
            let freetype = restore(block).index().expect("a saved type is valid");
            buddy.move_freepages_block(&self.frames, FrameIdx::covered(Pfn(block)), freetype);
        }
    }
}
