//! The free paths: checks that make a bad free an error rather than
//! corruption, then the per-CPU lists for small orders and the buddy lists
//! for the rest. mirrors free_pages(), __free_pages_ok(), free_unref_page(),
//! free_unref_page_commit(), free_pcppages_bulk(), decay_pcp_high() and
//! drain_pages_zone() (Linux 6.12).

use super::error::FreeError;
use super::events::VmEvent;
use super::{PageAllocator, ZoneOnCpu};
use crate::freetype::FreeType;
use crate::gfp::AllocFlags;
use crate::memmap::{FrameIdx, PageInfo, PageRecord, PageState};
use crate::pageblock::{BlockInfo, PageblockTable};
use crate::pcp::{PcpIndex, PcpList, PerCpuPages};
use crate::sync::LockFamily;
use crate::types::{CpuId, Order, Pfn, ZoneIdx, ZoneType};

impl<L: LockFamily> PageAllocator<L> {
    /// Frees a block of `order` on `cpu` (`__free_pages()`): the checks, then
    /// the per-CPU lists or the buddy lists. Nothing changes on error. Order
    /// 0 gets its own copy of the path, as in [`Self::alloc_pages_on`].
    #[inline(always)]
    pub(crate) fn free_pages_on(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        order: Order,
    ) -> Result<(), FreeError> {
        if order == Order(0) {
            self.free_pages_of(cpu, pfn, Order(0))
        } else {
            self.free_pages_of(cpu, pfn, order)
        }
    }

    /// The body of [`Self::free_pages_on`].
    #[inline(always)]
    fn free_pages_of(&self, cpu: CpuId, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        let (block, record) = self.claim_for_free(pfn, order, false)?;
        self.free_claimed(cpu, pfn, order, block, record);
        Ok(())
    }

    /// Validates a free and, when `mark` is set or other threads may free
    /// the same block, marks it Freeing so that a second free of it (later
    /// in the same batch, or from another thread) fails. Nothing changes on
    /// error. Returns the block's zone and pageblock freetype, and its
    /// head's record.
    #[inline(always)]
    pub(crate) fn claim_for_free(
        &self,
        pfn: Pfn,
        order: Order,
        mark: bool,
    ) -> Result<(BlockInfo, &PageRecord), FreeError> {
        let records = self.frames.memmap.records();
        let (Some(record), Some(block)) = (
            usize::try_from(pfn.0).ok().and_then(|at| records.get(at)),
            self.frames.blocks.lookup(pfn),
        ) else {
            return Err(FreeError::NotMemory(pfn));
        };
        if order > self.layout.max_order || !pfn.is_aligned(order) {
            return Err(self.describe_bad_free(pfn, order));
        }
        self.claim_record(record, pfn, order, mark)?;
        Ok((block, record))
    }

    /// The state checks and marking of [`Self::claim_for_free`] on the
    /// record of `pfn`, an aligned block of a valid `order`.
    #[inline(always)]
    pub(crate) fn claim_record(
        &self,
        record: &PageRecord,
        pfn: Pfn,
        order: Order,
        mark: bool,
    ) -> Result<(), FreeError> {
        if !self.options.free_checks {
            return Ok(());
        }
        self.check_and_mark(record, pfn, order, mark)
    }

    /// The state checks and marking of [`Self::claim_record`], for a
    /// caller that has read `free_checks` itself.
    #[inline(always)]
    pub(crate) fn check_and_mark(
        &self,
        record: &PageRecord,
        pfn: Pfn,
        order: Order,
        mark: bool,
    ) -> Result<(), FreeError> {
        self.check_and_claim(record, pfn, order, mark, |info| {
            PageInfo::new(PageState::Freeing, order, info.freetype())
        })
        .map(|_| ())
    }

    /// The state checks of a free on the record of `pfn`: it must head an
    /// allocated block of `order`. When `set` is (or other threads may free
    /// the same block), the record then takes the word `claimed` makes of
    /// its own, so that a second free of the block fails. Nothing changes
    /// on error. Returns the word the record had.
    #[inline(always)]
    pub(crate) fn check_and_claim(
        &self,
        record: &PageRecord,
        pfn: Pfn,
        order: Order,
        set: bool,
        claimed: impl FnOnce(PageInfo) -> PageInfo,
    ) -> Result<PageInfo, FreeError> {
        let info = record.info();
        if info.state() != PageState::Allocated || info.order() != order {
            return Err(self.describe_bad_free(pfn, order));
        }
        if L::CONCURRENT {
            if !record.exchange_info(info, claimed(info)) {
                return Err(FreeError::DoubleFree(pfn));
            }
        } else if set {
            record.set_info(claimed(info));
        }
        Ok(info)
    }

    /// Frees a block just handed out that the allocation must take back
    /// (its zeroing failed); it is allocated, so the checks cannot fail.
    pub(crate) fn release_new_block(&self, cpu: CpuId, pfn: Pfn, order: Order) {
        if let Ok((block, record)) = self.claim_for_free(pfn, order, false) {
            self.free_claimed(cpu, pfn, order, block, record);
        }
    }

    /// Undoes [`Self::claim_for_free`] (a batch that failed part-way).
    pub(crate) fn unclaim(&self, pfn: Pfn, order: Order) {
        if !self.options.free_checks {
            return;
        }
        let index = FrameIdx::covered(pfn);
        let info = self.frames.memmap.info(index);
        self.frames.memmap.set_info(
            index,
            PageInfo::new(PageState::Allocated, order, info.freetype()),
        );
    }

    #[cold]
    fn describe_bad_free(&self, pfn: Pfn, order: Order) -> FreeError {
        let info = self.frames.memmap.info(FrameIdx::covered(pfn));
        match info.state() {
            PageState::Buddy | PageState::Pcp | PageState::Freeing => FreeError::DoubleFree(pfn),
            PageState::Allocated => FreeError::WrongOrder {
                pfn,
                allocated: info.order(),
                freed: order,
            },
            // A hole in a memory section has a pageblock of a zone (see
            // memmap_init.rs) but is no memory.
            PageState::Untracked if !self.is_present(pfn) => FreeError::NotMemory(pfn),
            PageState::Untracked => FreeError::NotAllocated(pfn),
        }
    }

    /// True when `pfn` is present memory (managed or reserved).
    fn is_present(&self, pfn: Pfn) -> bool {
        self.layout
            .zones()
            .flat_map(|zone| zone.present.iter())
            .any(|range| range.contains(pfn))
    }

    /// Zone and pageblock freetype of a PFN, if it is memory of this machine.
    #[inline]
    pub(crate) fn block_of(&self, pfn: Pfn) -> Option<BlockInfo> {
        self.block_word(pfn).and_then(PageblockTable::decode)
    }

    /// The pageblock word of a PFN (see [`PageblockTable::word`]); `None`
    /// when the memmap does not cover it. A PFN in a hole has a word of no
    /// zone.
    #[inline]
    pub(crate) fn block_word(&self, pfn: Pfn) -> Option<u32> {
        if !self.frames.memmap.covers(pfn) {
            return None;
        }
        self.frames.blocks.word(pfn)
    }

    /// Frees a claimed block of pageblock `block` on `cpu`; `record` is
    /// its head's.
    #[inline(always)]
    fn free_claimed(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        order: Order,
        block: BlockInfo,
        record: &PageRecord,
    ) {
        // SAFETY: `block.zone` comes from a pageblock word.
        let zone = unsafe { self.zone_on_cpu(&self.cpus[cpu.index()], block.zone) };
        if self.options.vm_events {
            zone.cpu.events.add(VmEvent::Pgfree, order.nr_pages());
        }
        if PerCpuPages::allowed_order(order, self.layout.pageblock_order) {
            let pfn = FrameIdx::covered(pfn);
            self.free_unref_page(cpu, zone, block.freetype, pfn, record, order);
        } else {
            self.free_one_page(block.zone, FrameIdx::covered(pfn), order);
        }
    }

    /// Returns a block straight to the buddy lists under the zone lock.
    /// mirrors free_one_page(). Out of line: the free fast path only calls it
    /// when the per-CPU lists cannot take the block.
    #[inline(never)]
    pub(crate) fn free_one_page(&self, zone: ZoneIdx, pfn: FrameIdx, order: Order) {
        let mut buddy = self.lock_zone(zone);
        let freetype = self.frames.blocks.freetype(pfn.pfn());
        buddy.free_block(&self.frames, pfn, order, freetype, false);
        self.publish(zone, &buddy);
    }

    /// mirrors free_unref_page(): a contended pcp lock, or a pageblock
    /// whose freetype (`block_freetype`) has no per-CPU list, sends the page
    /// to the buddy lists.
    #[inline(always)]
    fn free_unref_page(
        &self,
        cpu: CpuId,
        zone: ZoneOnCpu<'_, L>,
        block_freetype: FreeType,
        pfn: FrameIdx,
        record: &PageRecord,
        order: Order,
    ) {
        let Some(list) = PcpList::for_free(block_freetype, order) else {
            self.free_one_page(zone.index, pfn, order);
            return;
        };
        let Some(mut pcp) = L::try_lock(&zone.cpu.pcp) else {
            self.count_event(cpu, zone.index, VmEvent::PcpTrylockFail, 1);
            self.free_one_page(zone.index, pfn, order);
            return;
        };
        self.free_unref_page_commit(&mut pcp, zone, pfn, record, order, list);
    }

    /// Puts a page on the per-CPU list `list`, adapts the lists' sizing and
    /// drains when the count reaches the `high` in force. mirrors
    /// free_unref_page_commit(). The drain stays out of line so that this
    /// stays small enough to inline into the free fast path.
    #[inline(always)]
    fn free_unref_page_commit(
        &self,
        pcp: &mut PerCpuPages,
        zone: ZoneOnCpu<'_, L>,
        pfn: FrameIdx,
        record: &PageRecord,
        order: Order,
        list: PcpList,
    ) {
        record.set_info(PageInfo::new(PageState::Pcp, order, list.recorded));
        pcp.push(list, pfn);
        if let Some(nr) = pcp.after_free(order, zone.slot.flags.pressure()) {
            self.drain_after_free(pcp, zone.index, nr, list.pindex);
        }
    }

    /// The drain of a free that reached `high`: `nr` pages, the freed
    /// block's list first; then, if the zone was below its high watermark
    /// and no longer is, clears `ZONE_BELOW_HIGH`.
    #[inline(never)]
    pub(crate) fn drain_after_free(
        &self,
        pcp: &mut PerCpuPages,
        zone: ZoneIdx,
        nr: u32,
        pindex: PcpIndex,
    ) {
        self.free_pcppages_bulk(pcp, zone, nr, pindex);
        let slot = &self.zones[zone.index()];
        if slot.flags.below_high()
            && self.zone_watermark_ok(
                slot,
                Order(0),
                slot.watermarks.high,
                ZoneType::Movable,
                AllocFlags::empty(),
            )
        {
            slot.flags.set_below_high(false);
        }
    }

    /// The vmstat worker's pass over `cpu`'s lists (the pcp part of
    /// refresh_cpu_vm_stats()): in every zone, `high` decays by an eighth
    /// toward `high_min` and pages above it are drained a batch at a time.
    /// Returns whether some zone has further to decay (the kernel keeps its
    /// worker running while so). mirrors decay_pcp_high().
    pub(crate) fn decay_cpu_pcp_high(&self, cpu: usize) -> bool {
        let mut more = false;
        for zone in self.zone_ids() {
            let (mut pcp, _) = L::lock(&self.cpus[cpu].zones[zone.index()].pcp);
            let (mut to_drain, decaying) = pcp.decay_high();
            more |= decaying || to_drain > 0;
            let batch = pcp.sizing().batch();
            while to_drain > 0 {
                let step = to_drain.min(batch);
                self.free_pcppages_bulk(&mut pcp, zone, step, PcpIndex::FIRST);
                to_drain -= step;
            }
        }
        more
    }

    /// Returns `count` pages from the per-CPU lists to the buddy lists under
    /// one zone-lock acquisition. mirrors free_pcppages_bulk().
    pub(crate) fn free_pcppages_bulk(
        &self,
        pcp: &mut PerCpuPages,
        zone: ZoneIdx,
        count: u32,
        pindex: PcpIndex,
    ) {
        let mut buddy = self.lock_zone(zone);
        let mut drained = 0u64;
        pcp.drain(count, pindex, |pfn, order| {
            let freetype = self.frames.blocks.freetype(pfn.pfn());
            buddy.free_block(&self.frames, pfn, order, freetype, false);
            drained += order.nr_pages();
        });
        buddy.events_mut().pcp_drain_pages += drained;
        self.publish(zone, &buddy);
    }

    /// Empties one CPU's lists of every zone. mirrors drain_local_pages().
    pub(crate) fn drain_cpu(&self, cpu: usize) {
        for zone in self.zone_ids() {
            let (mut pcp, _) = L::lock(&self.cpus[cpu].zones[zone.index()].pcp);
            if pcp.count() > 0 {
                let count = pcp.count();
                self.free_pcppages_bulk(&mut pcp, zone, count, PcpIndex::FIRST);
            }
        }
    }

    /// Empties every CPU's lists. mirrors drain_all_pages(NULL).
    pub fn drain_all_pages(&self) {
        for cpu in 0..self.cpus.len() {
            self.drain_cpu(cpu);
        }
    }
}
