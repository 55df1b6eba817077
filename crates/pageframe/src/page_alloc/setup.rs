//! Starting a simulation where a host stood: calls the kernel does not
//! have, which put state a running kernel reaches only through its history
//! (a CPU's adaptive `high`, a pageblock's migratetype) where a recording
//! of a host shows it, such as a trace replay from the host's zoneinfo and
//! pagetypeinfo at the trace's start.
//!
//! None moves a free page: the invariants of `check_invariants()` hold
//! before and after each call, and a refused call changes nothing.

use super::error::SetupError;
use super::PageAllocator;
use crate::freetype::{FreeType, MigrateType};
use crate::memmap::{FrameIdx, PageInfo, PageState};
use crate::sync::LockFamily;
use crate::types::{CpuId, Order, Pfn};

impl<L: LockFamily> PageAllocator<L> {
    /// Sets `cpu`'s adaptive `high` in the zone at `zone` (an index of
    /// [`Self::zone_snapshots`]) to `high`, clamped into `[high_min,
    /// high_max]` as nr_pcp_high() clamps it, and returns what was set;
    /// `None` when there is no such CPU or zone. Pages already listed above
    /// it stay until the next free or decay drains them. The kernel's
    /// `high` moves only with the workload.
    pub fn set_pcp_high(&self, zone: usize, cpu: CpuId, high: u32) -> Option<u32> {
        let slot = self.cpus.get(cpu.index())?.zones.get(zone)?;
        let (mut pcp, _) = L::lock(&slot.pcp);
        Some(pcp.set_high(high))
    }

    /// Gives the pageblock holding `pfn` the migratetype `migratetype`
    /// (Unmovable, Movable or Reclaimable) when none of its pages is free:
    /// no free list changes, only where later frees of its pages go and
    /// what the fallbacks find there. The kernel changes a pageblock's type
    /// only inside the allocator (set_pageblock_migratetype() on a claim,
    /// a highatomic reserve, isolation). Refused, changing nothing: EINVAL
    /// for another type, a PFN in no zone, or a pageblock whose type is
    /// HighAtomic, Isolate or unmapped (those have their own accounting);
    /// EBUSY when a page of the block is free (in the buddy lists or on a
    /// per-CPU list) or being freed.
    pub fn set_pageblock_migratetype(
        &self,
        pfn: Pfn,
        migratetype: MigrateType,
    ) -> Result<(), SetupError> {
        if !matches!(
            migratetype,
            MigrateType::Unmovable | MigrateType::Movable | MigrateType::Reclaimable
        ) {
            return Err(SetupError::Migratetype(migratetype));
        }
        let zone = (pfn < self.layout.end_pfn)
            .then(|| self.frames.blocks.zone(pfn))
            .flatten()
            .ok_or(SetupError::NoZone(pfn))?;
        let block_pages = self.layout.pageblock_order.nr_pages();
        let block = Pfn(pfn.0 - pfn.0 % block_pages);
        let current = self.frames.blocks.freetype(block);
        if current.is_unmapped()
            || !matches!(
                current.migratetype,
                MigrateType::Unmovable | MigrateType::Movable | MigrateType::Reclaimable
            )
        {
            return Err(SetupError::BlockType {
                block,
                current: current.migratetype,
            });
        }
        // The zone lock keeps buddy pages where they are while the block is
        // walked; its pages are free only as heads of free blocks, which
        // start at or before it within its MAX_PAGE_ORDER block.
        let _buddy = self.lock_zone(zone);
        let max_block = self.layout.max_order.nr_pages();
        let end = (block.0 + block_pages).min(self.layout.end_pfn.0);
        let region = Pfn(block.0 - block.0 % max_block);
        // A block being freed (a shared allocator's free in progress) is
        // about to be listed.
        let has_free = self
            .frames
            .memmap
            .heads(region, Pfn(end))
            .any(|(head, info)| {
                matches!(
                    info.state(),
                    PageState::Buddy | PageState::Pcp | PageState::Freeing
                ) && head.pfn().0 + info.order().nr_pages() > block.0
            });
        if has_free {
            return Err(SetupError::Busy(block));
        }
        self.frames
            .blocks
            .set_freetype(block, FreeType::plain(migratetype));
        Ok(())
    }

    /// Joins the `2^order` pages from `pfn`, each an allocated order-0
    /// block the caller holds, into one allocated block of `order`, to be
    /// freed as one (onto a per-CPU list of that order, say). The kernel
    /// has the opposite, split_page(); a set-up that allocated memory page
    /// by page uses this to hold a block of a higher order where a host
    /// held one. Refused, changing nothing, with EINVAL: an order above
    /// MAX_PAGE_ORDER, a PFN not aligned to it, a block past the memmap
    /// or across zones ([`SetupError::Order`], [`SetupError::NoZone`]), or
    /// a page that is not an allocated order-0 block of the direct map
    /// ([`SetupError::NotHeld`]).
    pub fn join_allocated_pages(&self, pfn: Pfn, order: Order) -> Result<(), SetupError> {
        if order > self.layout.max_order || !pfn.is_aligned(order) {
            return Err(SetupError::Order { pfn, order });
        }
        let end = pfn
            .checked_offset(order.nr_pages())
            .filter(|&end| end <= self.layout.end_pfn)
            .ok_or(SetupError::NoZone(pfn))?;
        let block_pages = self.layout.pageblock_order.nr_pages();
        let zone = self
            .frames
            .blocks
            .zone(pfn)
            .ok_or(SetupError::NoZone(pfn))?;
        let mut block = pfn.0 - pfn.0 % block_pages;
        while block < end.0 {
            if self.frames.blocks.zone(Pfn(block)) != Some(zone) {
                return Err(SetupError::NoZone(Pfn(block)));
            }
            block += block_pages;
        }
        let first = self.frames.memmap.info(FrameIdx::covered(pfn));
        let freetype = first.freetype();
        for page in pfn.0..end.0 {
            let info = self.frames.memmap.info(FrameIdx::covered(Pfn(page)));
            if info.state() != PageState::Allocated
                || info.order() != Order(0)
                || info.freetype() != freetype
                || freetype.freetype().is_unmapped()
            {
                return Err(SetupError::NotHeld(Pfn(page)));
            }
        }
        for page in pfn.0 + 1..end.0 {
            self.frames
                .memmap
                .set_info(FrameIdx::covered(Pfn(page)), PageInfo::UNTRACKED);
        }
        self.frames.memmap.set_info(
            FrameIdx::covered(pfn),
            PageInfo::new(PageState::Allocated, order, freetype),
        );
        Ok(())
    }
}
