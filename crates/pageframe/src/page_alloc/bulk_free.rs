//! The bulk free: many order-0 pages under one pcp-lock acquisition per
//! zone, all or nothing. mirrors free_unref_folios() (Linux 6.12), without
//! its IRQ-latency relock every SWAP_CLUSTER_MAX pages, which has no
//! meaning in user space.
//!
//! Two passes, as the kernel's. The first prepares every page (the kernel's
//! free_pages_prepare() loop): it checks each page and claims its record,
//! so that nothing is freed unless everything can be (a page listed twice
//! fails at its second slot). While the pages go to one per-CPU list (a
//! page pool's batch of one zone does), they are gathered into a run on
//! the stack and their records take their listed state at once, the old
//! words kept so that an error undoes them; a page bound elsewhere closes
//! the run, and the pages from it on are only checked and marked Freeing.
//! The second commits: the run goes onto its list in steps that stop
//! exactly where a page at a time would have reached `high` and drained
//! (free_unref_page_commit() for each page, a step at a time: one `high`
//! check per step, not per page), and any pages after it are gathered into
//! runs the same way from the slots. One pcp-lock acquisition per run of
//! pages of a zone, as the kernel's `locked_zone`.

use super::error::FreeError;
use super::events::VmEvent;
use super::handle::Page;
use super::PageAllocator;
use crate::memmap::{FrameIdx, MemMap, PageInfo, PageState};
use crate::pcp::{PcpList, PerCpuPages};
use crate::sync::LockFamily;
use crate::types::{CpuId, Order, Pfn, ZoneIdx};

/// Pages gathered into a run before it goes onto its list.
const RUN_CAPACITY: usize = 64;

impl<L: LockFamily> PageAllocator<L> {
    /// Frees the order-0 pages in `slots` (empty slots are skipped). Every
    /// page is checked first: if any free would fail, none happens and the
    /// error names the first bad page. Returns the number of pages freed.
    /// One slot takes the single free's path in the caller's frame: a batch
    /// of one costs a single free plus the slot's handling.
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
    /// checked: the two passes.
    #[inline(never)]
    fn free_pages_bulk_slots<S: PageSlot>(
        &self,
        cpu: CpuId,
        slots: &[S],
    ) -> Result<usize, FreeError> {
        let mut run = PreparedRun {
            key: RunKey::NONE,
            pfns: [FrameIdx::NIL; RUN_CAPACITY],
            saved: [PageInfo::UNTRACKED; RUN_CAPACITY],
            len: 0,
            rest: slots.len(),
        };
        let claimed = self.prepare_bulk(slots, &mut run)?;
        if claimed > 0 {
            self.commit_bulk(cpu, slots, &run);
        }
        Ok(claimed)
    }

    /// Pass 1: checks every page and marks it Freeing; undoes the marks on
    /// error. The pages from the first on go into `run` while they share
    /// its list and fit; `run.rest` is the slot of the first page that did
    /// not. Pages of one bulk call mostly share pageblocks: each block's
    /// zone and list are looked up once per run of pages in it. Returns the
    /// pages claimed.
    #[inline(always)]
    fn prepare_bulk<S: PageSlot>(
        &self,
        slots: &[S],
        run: &mut PreparedRun,
    ) -> Result<usize, FreeError> {
        if self.options.free_checks {
            self.prepare_bulk_pages::<S, true>(slots, run)
        } else {
            self.prepare_bulk_pages::<S, false>(slots, run)
        }
    }

    /// [`Self::prepare_bulk`] with `free_checks` read once: `CHECKS`. The
    /// pages that go into the run are checked in one loop and given their
    /// listed state at once (their old words kept for an undo), so that the
    /// commit does not write their records again; the rest (if any) are
    /// checked and marked Freeing in a second.
    #[inline(always)]
    fn prepare_bulk_pages<S: PageSlot, const CHECKS: bool>(
        &self,
        slots: &[S],
        run: &mut PreparedRun,
    ) -> Result<usize, FreeError> {
        let block_shift = self.layout.pageblock_order.0;
        let records = self.frames.memmap.records();
        let mut cached_block = u64::MAX;
        let mut listed = PageInfo::UNTRACKED;
        let mut len = 0;
        let mut at = 0;
        while at < slots.len() {
            let Some(page) = slots[at].page() else {
                at += 1;
                continue;
            };
            let pfn = page.pfn();
            if pfn.0 >> block_shift != cached_block {
                match self.enter_block(pfn, len, &mut run.key) {
                    BlockStep::Gather(info) => {
                        cached_block = pfn.0 >> block_shift;
                        listed = info;
                    }
                    BlockStep::Close => break,
                    BlockStep::NotMemory => {
                        let err = FreeError::NotMemory(pfn);
                        return Err(self.undo_prepared(slots, run, len, at, err));
                    }
                }
            }
            if len == RUN_CAPACITY {
                break;
            }
            // Order 0 is always a valid, aligned order: only the record is
            // left to check.
            let Some(record) = usize::try_from(pfn.0).ok().and_then(|at| records.get(at)) else {
                let err = FreeError::NotMemory(pfn);
                return Err(self.undo_prepared(slots, run, len, at, err));
            };
            run.saved[len] = if CHECKS {
                match self.check_and_claim(record, pfn, Order(0), true, |_| listed) {
                    Ok(info) => info,
                    Err(err) => return Err(self.undo_prepared(slots, run, len, at, err)),
                }
            } else {
                let info = record.info();
                record.set_info(listed);
                info
            };
            run.pfns[len] = FrameIdx::covered(pfn);
            len += 1;
            at += 1;
        }
        run.len = len;
        run.rest = at;
        let mut claimed = len;
        for at in at..slots.len() {
            let Some(page) = slots[at].page() else {
                continue;
            };
            let pfn = page.pfn();
            if pfn.0 >> block_shift != cached_block {
                if self.block_of(pfn).is_none() {
                    let err = FreeError::NotMemory(pfn);
                    return Err(self.undo_prepared(slots, run, len, at, err));
                }
                cached_block = pfn.0 >> block_shift;
            }
            let Some(record) = usize::try_from(pfn.0).ok().and_then(|at| records.get(at)) else {
                let err = FreeError::NotMemory(pfn);
                return Err(self.undo_prepared(slots, run, len, at, err));
            };
            if CHECKS {
                if let Err(err) = self.check_and_mark(record, pfn, Order(0), true) {
                    return Err(self.undo_prepared(slots, run, len, at, err));
                }
            }
            claimed += 1;
        }
        Ok(claimed)
    }

    /// Undoes pass 1 up to slot `at`: the first `gathered` pages of `run`
    /// get their old words back, the pages of the slots from `run.rest`
    /// (when the run was closed before `at`) lose their Freeing marks.
    /// Returns `err`.
    #[cold]
    #[inline(never)]
    fn undo_prepared<S: PageSlot>(
        &self,
        slots: &[S],
        run: &PreparedRun,
        gathered: usize,
        at: usize,
        err: FreeError,
    ) -> FreeError {
        let records = self.frames.memmap.records();
        for (&pfn, &info) in run.pfns[..gathered].iter().zip(&run.saved) {
            MemMap::record_of(records, pfn).set_info(info);
        }
        if run.rest < at {
            for undo in slots[run.rest..at].iter().filter_map(|slot| slot.page()) {
                self.unclaim(undo.pfn(), Order(0));
            }
        }
        err
    }

    /// The gathering loop of pass 1 reaches a page of another pageblock
    /// than the last, having gathered `gathered` pages for `key`: the run
    /// goes on, with the listed state of its pages, if the block's pages go
    /// to the list the run's do (the first page sets which that is). Pages
    /// bound for the buddy lists are left to the second loop. Out of line,
    /// so that the loop keeps no key in registers.
    #[inline(never)]
    fn enter_block(&self, pfn: Pfn, gathered: usize, key: &mut RunKey) -> BlockStep {
        let Some(block_key) = self.run_key(pfn) else {
            return BlockStep::NotMemory;
        };
        let Some(list) = block_key.list else {
            return BlockStep::Close;
        };
        if gathered == 0 {
            *key = block_key;
        } else if block_key != *key {
            return BlockStep::Close;
        }
        BlockStep::Gather(PageInfo::new(PageState::Pcp, Order(0), list.recorded))
    }

    /// Where the free of an order-0 page of the pageblock holding `pfn`
    /// goes; `None` when the block is not memory of a zone.
    #[inline]
    fn run_key(&self, pfn: Pfn) -> Option<RunKey> {
        let block = self.block_of(pfn)?;
        Some(RunKey {
            zone: block.zone,
            list: PcpList::for_free(block.freetype, Order(0)),
        })
    }

    /// Pass 2: the claimed pages onto this CPU's lists: the prepared run,
    /// then the pages of the slots from `run.rest`, gathered into runs
    /// bound for one (zone, list) the same way. Pages of a pageblock whose
    /// freetype has no per-CPU list go to the buddy lists.
    #[inline]
    fn commit_bulk<S: PageSlot>(&self, cpu: CpuId, slots: &[S], run: &PreparedRun) {
        let mut locked = LockedPcp::<L> {
            held: None,
            pages: 0,
        };
        self.commit_run(cpu, &mut locked, run.key, &run.pfns[..run.len], true);
        if run.rest < slots.len() {
            self.commit_rest(cpu, &mut locked, &slots[run.rest..]);
        }
        locked.release(self, cpu);
    }

    /// The pages of `slots`, claimed, gathered into runs bound for one
    /// (zone, list) (looked up once per pageblock) and committed run by
    /// run.
    #[inline(never)]
    fn commit_rest<'a, S: PageSlot>(
        &'a self,
        cpu: CpuId,
        locked: &mut LockedPcp<'a, L>,
        slots: &[S],
    ) {
        let block_shift = self.layout.pageblock_order.0;
        let mut key = RunKey::NONE;
        let mut run = [FrameIdx::NIL; RUN_CAPACITY];
        let mut len = 0;
        let mut cached_block = u64::MAX;
        for page in slots.iter().filter_map(|slot| slot.page()) {
            let pfn = page.pfn();
            if pfn.0 >> block_shift != cached_block {
                cached_block = pfn.0 >> block_shift;
                let block_key = self.run_key(pfn).expect("claimed pages are memory");
                if block_key != key {
                    self.commit_run(cpu, locked, key, &run[..len], false);
                    len = 0;
                    key = block_key;
                }
            }
            if len == RUN_CAPACITY {
                self.commit_run(cpu, locked, key, &run, false);
                len = 0;
            }
            run[len] = FrameIdx::covered(pfn);
            len += 1;
        }
        self.commit_run(cpu, locked, key, &run[..len], false);
    }

    /// Adds a run of claimed pages to its per-CPU list (taking that zone's
    /// pcp lock if it is not the one held), or frees them to the buddy
    /// lists. Their records take the listed state unless `already_listed`
    /// (pass 1 gave it). Pages go on the list in steps that stop exactly
    /// where adding them one at a time would have made the count reach
    /// `high`, and drain there (free_unref_page_commit() for each page, a
    /// step at a time).
    fn commit_run<'a>(
        &'a self,
        cpu: CpuId,
        locked: &mut LockedPcp<'a, L>,
        key: RunKey,
        mut pfns: &[FrameIdx],
        already_listed: bool,
    ) {
        if pfns.is_empty() {
            return;
        }
        let Some(list) = key.list else {
            self.count_event(cpu, key.zone, VmEvent::Pgfree, pfns.len() as u64);
            for &pfn in pfns {
                self.free_one_page(key.zone, pfn, Order(0));
            }
            return;
        };
        if !already_listed {
            let records = self.frames.memmap.records();
            let listed = PageInfo::new(PageState::Pcp, Order(0), list.recorded);
            for &pfn in pfns {
                MemMap::record_of(records, pfn).set_info(listed);
            }
        }
        if locked
            .held
            .as_ref()
            .is_none_or(|(held, _)| *held != key.zone)
        {
            locked.release(self, cpu);
            locked.held = Some((
                key.zone,
                L::lock(&self.cpus[cpu.index()].zones[key.zone.index()].pcp).0,
            ));
        }
        let (_, pcp) = locked.held.as_mut().expect("locked above");
        locked.pages += pfns.len() as u64;
        let slot = &self.zones[key.zone.index()];
        while !pfns.is_empty() {
            pfns = pcp.push_order0_run(list, pfns, slot.flags.pressure());
            if let Some((&pfn, rest)) = pfns.split_first() {
                pcp.push(list, pfn);
                if let Some(nr) = pcp.after_free(Order(0), slot.flags.pressure()) {
                    self.drain_after_free(pcp, key.zone, nr, list.pindex);
                }
                pfns = rest;
            }
        }
    }
}

/// What pass 1 gathered: the first pages of the call, all bound for `key`,
/// and the slot of the first page after them (the slice's length when
/// there is none).
struct PreparedRun {
    key: RunKey,
    pfns: [FrameIdx; RUN_CAPACITY],
    /// The words the run's records had before pass 1 listed them.
    saved: [PageInfo; RUN_CAPACITY],
    len: usize,
    rest: usize,
}

/// What pass 1's gathering loop does at a page of a new pageblock.
enum BlockStep {
    /// Check the page and add it to the run, whose pages' records take
    /// this listed state.
    Gather(PageInfo),
    /// The run ends before the page (it goes elsewhere).
    Close,
    /// The page is not memory of a zone.
    NotMemory,
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

impl RunKey {
    /// The key of no run yet (no zone).
    const NONE: RunKey = RunKey {
        zone: ZoneIdx(crate::pageblock::NO_ZONE),
        list: None,
    };
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
