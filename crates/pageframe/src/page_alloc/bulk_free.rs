//! The bulk free: many order-0 pages under one pcp-lock acquisition per
//! zone, all or nothing. mirrors free_unref_page_list() (Linux 6.1), without
//! its IRQ-latency relock every SWAP_CLUSTER_MAX pages, which has no
//! meaning in user space.
//!
//! Two passes. The first checks every page and marks it Freeing, so that
//! nothing is freed unless everything can be. The second gathers the pages
//! into runs bound for one per-CPU list and adds each run to its list in
//! steps that stop exactly where a page at a time would have reached `high`
//! and drained: the same drains and the same sizing (Linux 6.12's adaptive
//! `high`) as the kernel's loop, without updating the list, its count and
//! its counters once per page.

use super::error::FreeError;
use super::events::VmEvent;
use super::handle::Page;
use super::PageAllocator;
use crate::memmap::{FrameIdx, PageInfo, PageState};
use crate::pcp::{PcpList, PerCpuPages};
use crate::sync::LockFamily;
use crate::types::{CpuId, Order, ZoneIdx};

/// Pages gathered into a run before it goes onto its list.
const RUN_CAPACITY: usize = 64;

impl<L: LockFamily> PageAllocator<L> {
    /// Frees the order-0 pages in `slots` (empty slots are skipped). Every
    /// page is checked first: if any free would fail, none happens and the
    /// error names the first bad page. Returns the number of pages freed.
    /// One slot takes the single free's path in the caller's frame, so that
    /// a batch of one costs what a single free does.
    #[inline(always)]
    pub(crate) fn free_pages_bulk_on<S: PageSlot>(
        &self,
        cpu: CpuId,
        slots: &[S],
    ) -> Result<usize, FreeError> {
        if cpu.index() >= self.cpus.len() {
            return Err(FreeError::NoSuchCpu(cpu));
        }
        if let [slot] = slots {
            return match slot.page() {
                Some(page) => self.free_pages_on(cpu, page.pfn(), Order(0)).map(|()| 1),
                None => Ok(0),
            };
        }
        self.free_pages_bulk_slots(cpu, slots)
    }

    /// [`Self::free_pages_bulk_on`] for any number of slots, the CPU
    /// checked.
    #[inline(never)]
    fn free_pages_bulk_slots<S: PageSlot>(
        &self,
        cpu: CpuId,
        slots: &[S],
    ) -> Result<usize, FreeError> {
        let claimed = self.claim_bulk(slots)?;
        match claimed {
            0 => {}
            // One page: the single free's path makes the same decisions
            // without gathering a run.
            1 => {
                let pfn = slots
                    .iter()
                    .find_map(|slot| slot.page())
                    .expect("claimed")
                    .pfn();
                let block = self.block_of(pfn).expect("claimed pages are memory");
                self.free_claimed(cpu, pfn, Order(0), block);
            }
            _ => self.commit_bulk(cpu, slots),
        }
        Ok(claimed)
    }

    /// Pass 1: checks every page and marks it Freeing (a page listed twice
    /// fails at its second slot); undoes the marks on error. Pages of one
    /// bulk call mostly share pageblocks: each block's zone is looked up
    /// once per run of pages in it. Returns the pages claimed.
    #[inline]
    fn claim_bulk<S: PageSlot>(&self, slots: &[S]) -> Result<usize, FreeError> {
        let block_shift = self.layout.pageblock_order.0;
        let records = self.frames.memmap.records();
        let (mut cached_block, mut in_zone) = (u64::MAX, false);
        let mut claimed = 0;
        for (at, slot) in slots.iter().enumerate() {
            let Some(page) = slot.page() else { continue };
            let pfn = page.pfn();
            if pfn.0 >> block_shift != cached_block {
                cached_block = pfn.0 >> block_shift;
                in_zone = self.frames.blocks.zone(pfn).is_some();
            }
            // Order 0 is always a valid, aligned order: only the record's
            // state is left to check.
            let result = match usize::try_from(pfn.0).ok().and_then(|at| records.get(at)) {
                Some(record) if in_zone => self.claim_record(record, pfn, Order(0), true),
                _ => Err(FreeError::NotMemory(pfn)),
            };
            if let Err(err) = result {
                for undo in slots[..at].iter().filter_map(|slot| slot.page()) {
                    self.unclaim(undo.pfn(), Order(0));
                }
                return Err(err);
            }
            claimed += 1;
        }
        Ok(claimed)
    }

    /// Pass 2: the claimed pages onto this CPU's lists. Pages are gathered
    /// into runs bound for one (zone, list), looked up once per pageblock,
    /// and marked as listed on the way; each run goes onto its list at once.
    /// One pcp-lock acquisition per run of pages of a zone. Pages of a
    /// pageblock whose freetype has no per-CPU list go to the buddy lists.
    #[inline]
    fn commit_bulk<S: PageSlot>(&self, cpu: CpuId, slots: &[S]) {
        let block_shift = self.layout.pageblock_order.0;
        let records = self.frames.memmap.records();
        let mut locked = LockedPcp::<L> {
            held: None,
            pages: 0,
        };
        let mut key = RunKey {
            zone: ZoneIdx(crate::pageblock::NO_ZONE),
            list: None,
        };
        let mut listed = None;
        let mut run = [FrameIdx::NIL; RUN_CAPACITY];
        let mut len = 0;
        let mut cached_block = u64::MAX;
        for page in slots.iter().filter_map(|slot| slot.page()) {
            let pfn = page.pfn();
            if pfn.0 >> block_shift != cached_block {
                cached_block = pfn.0 >> block_shift;
                let block = self.block_of(pfn).expect("claimed pages are memory");
                let block_key = RunKey {
                    zone: block.zone,
                    list: PcpList::for_free(block.freetype, Order(0)),
                };
                if block_key != key {
                    if len > 0 {
                        self.commit_run(cpu, &mut locked, key, &run[..len]);
                        len = 0;
                    }
                    key = block_key;
                    listed = key
                        .list
                        .map(|list| PageInfo::new(PageState::Pcp, Order(0), list.recorded));
                }
            }
            if len == RUN_CAPACITY {
                self.commit_run(cpu, &mut locked, key, &run);
                len = 0;
            }
            if let Some(listed) = listed {
                records[pfn.0 as usize].set_info(listed);
            }
            run[len] = FrameIdx::covered(pfn);
            len += 1;
        }
        if len > 0 {
            self.commit_run(cpu, &mut locked, key, &run[..len]);
        }
        locked.release(self, cpu);
    }

    /// Adds a run of pages to its per-CPU list (taking that zone's pcp lock
    /// if it is not the one held), or frees them to the buddy lists. Pages
    /// go on the list in steps that stop exactly where adding them one at a
    /// time would have made the count reach `high`, and drain there
    /// (free_unref_page_commit() for each page, a step at a time).
    fn commit_run<'a>(
        &'a self,
        cpu: CpuId,
        locked: &mut LockedPcp<'a, L>,
        key: RunKey,
        mut pfns: &[FrameIdx],
    ) {
        let Some(list) = key.list else {
            self.count_event(cpu, key.zone, VmEvent::Pgfree, pfns.len() as u64);
            for &pfn in pfns {
                self.free_one_page(key.zone, pfn, Order(0));
            }
            return;
        };
        if locked
            .held
            .as_ref()
            .is_none_or(|(held, _)| *held != key.zone)
        {
            locked.release(self, cpu);
            locked.held = Some((
                key.zone,
                L::lock(&self.cpus[cpu.index()].pcp[key.zone.index()]).0,
            ));
        }
        let (_, pcp) = locked.held.as_mut().expect("locked above");
        locked.pages += pfns.len() as u64;
        let slot = &self.zones[key.zone.index()];
        while !pfns.is_empty() {
            pfns = pcp.push_order0_run(list, pfns, slot.pressure());
            if let Some((&pfn, rest)) = pfns.split_first() {
                pcp.push(list, pfn);
                if let Some(nr) = pcp.after_free(Order(0), slot.pressure()) {
                    self.drain_after_free(pcp, key.zone, nr, list.pindex);
                }
                pfns = rest;
            }
        }
    }
}

/// The pcp lock a bulk free holds, and the pages freed under it.
struct LockedPcp<'a, L: LockFamily> {
    held: Option<(ZoneIdx, L::Guard<'a, PerCpuPages>)>,
    pages: u64,
}

impl<'a, L: LockFamily> LockedPcp<'a, L> {
    /// Drops the lock held, if any, and counts its pages freed.
    fn release(&mut self, allocator: &PageAllocator<L>, cpu: CpuId) {
        if let Some((zone, guard)) = self.held.take() {
            drop(guard);
            allocator.count_event(cpu, zone, VmEvent::Pgfree, self.pages);
        }
        self.pages = 0;
    }
}

/// Where a run of a bulk free's pages goes: a zone's per-CPU list `list`
/// (index, recorded freetype), or its buddy lists when `list` is None.
#[derive(Clone, Copy, PartialEq, Eq)]
struct RunKey {
    zone: ZoneIdx,
    list: Option<PcpList>,
}

/// An element of a bulk free's input: a page, or a page array slot that may
/// be empty.
pub(crate) trait PageSlot: Copy {
    /// The page in the slot, if any.
    fn page(self) -> Option<Page>;
}

impl PageSlot for Page {
    #[inline]
    fn page(self) -> Option<Page> {
        Some(self)
    }
}

impl PageSlot for Option<Page> {
    #[inline]
    fn page(self) -> Option<Page> {
        self
    }
}
