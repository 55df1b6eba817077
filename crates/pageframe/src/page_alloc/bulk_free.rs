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
//!
//! What a call costs besides its pages is kept small, for the small
//! batches of a page pool. A call of a few slots, none empty, whose pages
//! all lie in pageblocks with the first page's word, bound for a per-CPU
//! list (a pool's batch of one zone), is both passes in one: a single loop
//! checks and claims each page into a run of a few on the stack, emptying
//! a page array's slot as it goes (so that a freed array needs no second
//! walk), and the run goes onto its list under one lock with a copy of a
//! known size. Any other call of a few slots (an empty slot, a page of
//! another word, a bad page) has those claims undone and its slots
//! refilled, and takes the two passes from the start, which decide it and
//! name its first bad page as they always do. In the two passes the
//! first page's pageblock word sets the run's list once, pages of blocks
//! with the same word join it on one compare, and a call whose pages all
//! joined the run commits it inline under one lock.

use std::cell::Cell;

use super::error::FreeError;
use super::events::VmEvent;
use super::handle::Page;
use super::PageAllocator;
use crate::memmap::{FrameIdx, MemMap, PageInfo, PageState};
use crate::pageblock::{BlockInfo, PageblockTable};
use crate::pcp::{PcpList, PerCpuPages, ZonePressure};
use crate::sync::LockFamily;
use crate::types::{CpuId, Order, Pfn, ZoneIdx};

/// Pages gathered into a run before it goes onto its list.
const RUN_CAPACITY: usize = 64;
/// The run capacity of a call of at most this many slots: a small call
/// sets up a small run on the stack, not a full one it cannot fill.
const SMALL_RUN_CAPACITY: usize = 8;

impl<L: LockFamily> PageAllocator<L> {
    /// Frees the order-0 pages of `pages`. Every page is checked first: if
    /// any free would fail, none happens and the error names the first bad
    /// page. Returns the number of pages freed. One page takes the single
    /// free's path in the caller's frame: a batch of one costs a single
    /// free. A few pages try [`Self::free_pages_bulk_small`] first.
    #[inline(always)]
    pub(crate) fn free_pages_bulk_on(
        &self,
        cpu: CpuId,
        pages: &[Page],
    ) -> Result<usize, FreeError> {
        if cpu.index() >= self.cpus.len() {
            return Err(FreeError::NoSuchCpu(cpu));
        }
        if let [page] = pages {
            return self.free_pages_on(cpu, page.pfn(), Order(0)).map(|()| 1);
        }
        if pages.len() <= SMALL_RUN_CAPACITY {
            match self.free_pages_bulk_small(cpu, pages) {
                Some(freed) => Ok(freed),
                None => self.free_pages_bulk_few(cpu, pages),
            }
        } else {
            self.free_pages_bulk_slots::<Page, RUN_CAPACITY>(cpu, pages)
        }
    }

    /// [`Self::free_pages_bulk_on`] for a page array, whose empty slots are
    /// skipped and whose slots are all empty once it succeeds (none changes
    /// on error). A few slots try [`Self::free_pages_bulk_small`] first,
    /// which empties each slot as it claims its page; anything else takes
    /// one call out of line. The caller sends an array of one slot to the
    /// single free (as `CpuHandle::free_pages_bulk_array` does), whose
    /// contended pcp lock falls back to the zone; here the lock is waited
    /// for, as the two passes wait for it.
    #[inline(always)]
    pub(crate) fn free_pages_bulk_array_on(
        &self,
        cpu: CpuId,
        slots: &mut [Option<Page>],
    ) -> Result<usize, FreeError> {
        if cpu.index() >= self.cpus.len() {
            return Err(FreeError::NoSuchCpu(cpu));
        }
        if slots.len() <= SMALL_RUN_CAPACITY {
            let cells = Cell::from_mut(&mut *slots).as_slice_of_cells();
            match self.free_pages_bulk_small(cpu, cells) {
                Some(freed) => Ok(freed),
                None => self.free_pages_bulk_array_few(cpu, slots),
            }
        } else {
            let freed = self.free_pages_bulk_slots::<Option<Page>, RUN_CAPACITY>(cpu, slots)?;
            slots.fill(None);
            Ok(freed)
        }
    }

    /// [`Self::free_pages_bulk_array_on`] for a few slots that are not the
    /// common call: [`Self::free_pages_bulk_few`], then the slots emptied.
    #[cold]
    #[inline(never)]
    fn free_pages_bulk_array_few(
        &self,
        cpu: CpuId,
        slots: &mut [Option<Page>],
    ) -> Result<usize, FreeError> {
        let freed = self.free_pages_bulk_few(cpu, slots)?;
        slots.fill(None);
        Ok(freed)
    }

    /// [`Self::free_pages_bulk_on`] for a few slots that are not the
    /// common call: the two passes (out of line and cold, so that the
    /// caller's frame is laid out for the common call).
    #[cold]
    #[inline(never)]
    fn free_pages_bulk_few<S: PageSlot>(
        &self,
        cpu: CpuId,
        slots: &[S],
    ) -> Result<usize, FreeError> {
        self.free_pages_bulk_slots::<S, SMALL_RUN_CAPACITY>(cpu, slots)
    }

    /// [`Self::free_pages_bulk_on`] for a few slots (a page pool's small
    /// batch), the CPU checked, when it is the common call: no slot is
    /// empty, every page lies in a pageblock with the first page's word,
    /// bound for a per-CPU list, and passes the free checks. Its pages are
    /// claimed in one loop (as the first pass claims the pages of its run),
    /// each slot emptied as its page is, and put on the list under one
    /// lock; returns the pages freed. Any other call is `None`, with the
    /// claims made so far undone and the slots refilled: nothing has
    /// changed, and the two passes decide it (and name its first bad page)
    /// from the start.
    #[inline(never)]
    fn free_pages_bulk_small<S: FreedSlot>(&self, cpu: CpuId, slots: &[S]) -> Option<usize> {
        if slots.len() > SMALL_RUN_CAPACITY {
            return None;
        }
        let first = slots.first()?.page()?.pfn();
        let word = self.block_word(first)?;
        let (key, list) = small_run_list(word)?;
        let block_pages = self.layout.pageblock_order.nr_pages();
        let records = self.frames.memmap.records();
        let listed = PageInfo::new(PageState::Pcp, Order(0), list.recorded);
        let checks = self.options.free_checks;
        let mut run = [FrameIdx::NIL; SMALL_RUN_CAPACITY];
        let mut saved = [PageInfo::UNTRACKED; SMALL_RUN_CAPACITY];
        for (at, slot) in slots.iter().enumerate() {
            let claimed = 'claim: {
                let Some(page) = slot.page() else {
                    break 'claim None;
                };
                let pfn = page.pfn();
                // Same pageblock as the first page: `pfn` and `first`
                // differ only in the bits below the pageblock order.
                if (pfn.0 ^ first.0) >= block_pages && self.block_word(pfn) != Some(word) {
                    break 'claim None;
                }
                let Some(record) = usize::try_from(pfn.0).ok().and_then(|at| records.get(at))
                else {
                    break 'claim None;
                };
                let info = if checks {
                    match self.check_and_claim(record, pfn, Order(0), true, |_| listed) {
                        Ok(info) => info,
                        Err(_) => break 'claim None,
                    }
                } else {
                    let info = record.info();
                    record.set_info(listed);
                    info
                };
                Some((FrameIdx::covered(pfn), info))
            };
            let Some((pfn, info)) = claimed else {
                self.undo_small(&slots[..at], &run[..at], &saved[..at]);
                return None;
            };
            slot.empty();
            run[at] = pfn;
            saved[at] = info;
        }
        let len = slots.len();
        // SAFETY: the run's zone comes from a pageblock word.
        let zone = unsafe { self.zone_on_cpu(&self.cpus[cpu.index()], key.zone) };
        let (mut pcp, _) = L::lock(&zone.cpu.pcp);
        let pressure = zone.slot.flags.pressure();
        let pushed = pcp.push_order0_array(list, &run, len, pressure);
        if pushed < len {
            self.push_listed_slowly(&mut pcp, zone.index, list, &run[pushed..len]);
        }
        drop(pcp);
        if self.options.vm_events {
            zone.cpu.events.add(VmEvent::Pgfree, len as u64);
        }
        Some(len)
    }

    /// [`Self::free_pages_bulk_on`] for any number of slots, the CPU
    /// checked: the two passes, with a run of `N` pages at most.
    #[inline(never)]
    fn free_pages_bulk_slots<S: PageSlot, const N: usize>(
        &self,
        cpu: CpuId,
        slots: &[S],
    ) -> Result<usize, FreeError> {
        let mut run = PreparedRun {
            key: RunKey::NONE,
            pfns: [FrameIdx::NIL; N],
            saved: [PageInfo::UNTRACKED; N],
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
    fn prepare_bulk<S: PageSlot, const N: usize>(
        &self,
        slots: &[S],
        run: &mut PreparedRun<N>,
    ) -> Result<usize, FreeError> {
        if self.options.free_checks {
            self.prepare_bulk_pages::<S, N, true>(slots, run)
        } else {
            self.prepare_bulk_pages::<S, N, false>(slots, run)
        }
    }

    /// [`Self::prepare_bulk`] with `free_checks` read once: `CHECKS`. The
    /// pages that go into the run are checked in one loop and given their
    /// listed state at once (their old words kept for an undo), so that the
    /// commit does not write their records again; the rest (if any) are
    /// checked and marked Freeing in a second. A page of another pageblock
    /// than the last looks its block up; only a block other than the run's
    /// (the first page's) needs its list worked out.
    #[inline(always)]
    fn prepare_bulk_pages<S: PageSlot, const N: usize, const CHECKS: bool>(
        &self,
        slots: &[S],
        run: &mut PreparedRun<N>,
    ) -> Result<usize, FreeError> {
        let block_shift = self.layout.pageblock_order.0;
        let records = self.frames.memmap.records();
        let mut cached_block = u64::MAX;
        // The pageblock word of the run's first page (a u32; none while
        // there is no run): pages of blocks with that word need no look at
        // their list. The first page sets the run's list, outside the loop.
        let mut run_word = u64::MAX;
        let mut listed = PageInfo::UNTRACKED;
        let first = slots.iter().position(|slot| slot.page().is_some());
        if let Some(page) = first.and_then(|at| slots[at].page()) {
            let word = self.block_word_of(page.pfn());
            let Some(key) = RunKey::of_word(word) else {
                let err = FreeError::NotMemory(page.pfn());
                return Err(self.undo_prepared(slots, run.gathered(0), run.rest, 0, err));
            };
            if let Some(list) = key.list {
                run.key = key;
                run_word = word;
                listed = PageInfo::new(PageState::Pcp, Order(0), list.recorded);
                cached_block = page.pfn().0 >> block_shift;
            }
        }
        let mut len = 0;
        let mut at = first.unwrap_or(slots.len());
        while at < slots.len() {
            let Some(page) = slots[at].page() else {
                at += 1;
                continue;
            };
            let pfn = page.pfn();
            if pfn.0 >> block_shift != cached_block {
                let word = self.block_word_of(pfn);
                if word != run_word {
                    match run.key.joined_by(word) {
                        Some(true) => {}
                        Some(false) => break,
                        None => {
                            let err = FreeError::NotMemory(pfn);
                            return Err(self.undo_prepared(
                                slots,
                                run.gathered(len),
                                run.rest,
                                at,
                                err,
                            ));
                        }
                    }
                }
                cached_block = pfn.0 >> block_shift;
            }
            if len == N {
                break;
            }
            // Order 0 is always a valid, aligned order: only the record is
            // left to check.
            let Some(record) = usize::try_from(pfn.0).ok().and_then(|at| records.get(at)) else {
                let err = FreeError::NotMemory(pfn);
                return Err(self.undo_prepared(slots, run.gathered(len), run.rest, at, err));
            };
            run.saved[len] = if CHECKS {
                match self.check_and_claim(record, pfn, Order(0), true, |_| listed) {
                    Ok(info) => info,
                    Err(err) => {
                        return Err(self.undo_prepared(slots, run.gathered(len), run.rest, at, err))
                    }
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
                    return Err(self.undo_prepared(slots, run.gathered(len), run.rest, at, err));
                }
                cached_block = pfn.0 >> block_shift;
            }
            let Some(record) = usize::try_from(pfn.0).ok().and_then(|at| records.get(at)) else {
                let err = FreeError::NotMemory(pfn);
                return Err(self.undo_prepared(slots, run.gathered(len), run.rest, at, err));
            };
            if CHECKS {
                if let Err(err) = self.check_and_mark(record, pfn, Order(0), true) {
                    return Err(self.undo_prepared(slots, run.gathered(len), run.rest, at, err));
                }
            }
            claimed += 1;
        }
        Ok(claimed)
    }

    /// Undoes pass 1 up to slot `at`: the pages of `gathered` (the run's
    /// PFNs and the words they had) get their old words back, the pages of
    /// the slots from `rest` (when the run was closed before `at`) lose
    /// their Freeing marks. Returns `err`.
    #[cold]
    #[inline(never)]
    fn undo_prepared<S: PageSlot>(
        &self,
        slots: &[S],
        (pfns, saved): (&[FrameIdx], &[PageInfo]),
        rest: usize,
        at: usize,
        err: FreeError,
    ) -> FreeError {
        self.restore_words(pfns, saved);
        if rest < at {
            for undo in slots[rest..at].iter().filter_map(|slot| slot.page()) {
                self.unclaim(undo.pfn(), Order(0));
            }
        }
        err
    }

    /// Undoes [`Self::free_pages_bulk_small`] up to a slot: the pages of
    /// `pfns` (those of `slots`) go back into their slots, and their records
    /// get back the words `saved`.
    #[cold]
    fn undo_small<S: FreedSlot>(&self, slots: &[S], pfns: &[FrameIdx], saved: &[PageInfo]) {
        for (slot, pfn) in slots.iter().zip(pfns) {
            slot.put_back(Page::from_pfn(pfn.pfn()));
        }
        self.restore_words(pfns, saved);
    }

    /// Gives the records of `pfns` back the words `saved` (the words they
    /// had before a bulk free claimed them), last claim first: with the
    /// free checks off a page listed twice was claimed twice, and its
    /// first saved word is the one it had before the call.
    fn restore_words(&self, pfns: &[FrameIdx], saved: &[PageInfo]) {
        let records = self.frames.memmap.records();
        for (&pfn, &info) in pfns.iter().zip(saved).rev() {
            MemMap::record_of(records, pfn).set_info(info);
        }
    }

    /// The pageblock word of `pfn` as pass 1 compares it: a PFN past the
    /// table has a word no block has either.
    #[inline(always)]
    fn block_word_of(&self, pfn: Pfn) -> u64 {
        self.block_word(pfn).map_or(u64::MAX - 1, u64::from)
    }

    /// Where the free of an order-0 page of the pageblock holding `pfn`
    /// goes; `None` when the block is not memory of a zone.
    #[inline]
    fn run_key(&self, pfn: Pfn) -> Option<RunKey> {
        self.block_of(pfn).map(RunKey::of)
    }

    /// Pass 2 (free_unref_folios()'s second loop): the claimed pages onto
    /// this CPU's lists: the prepared run, then the pages of the slots from
    /// `run.rest`, gathered into runs bound for one (zone, list) the same
    /// way. Pages of a pageblock whose freetype has no per-CPU list go to
    /// the buddy lists. A call whose pages all went into the run (a page
    /// pool's batch of one zone) takes one lock and puts the run on its
    /// list inline.
    #[inline(always)]
    fn commit_bulk<S: PageSlot, const N: usize>(
        &self,
        cpu: CpuId,
        slots: &[S],
        run: &PreparedRun<N>,
    ) {
        let pfns = &run.pfns[..run.len];
        if let (true, Some(list)) = (run.rest == slots.len(), run.key.list) {
            // SAFETY: the run's zone comes from a pageblock word.
            let zone = unsafe { self.zone_on_cpu(&self.cpus[cpu.index()], run.key.zone) };
            let (mut pcp, _) = L::lock(&zone.cpu.pcp);
            self.push_listed_run(&mut pcp, zone.index, zone.slot.flags.pressure(), list, pfns);
            drop(pcp);
            if self.options.vm_events {
                zone.cpu.events.add(VmEvent::Pgfree, pfns.len() as u64);
            }
            return;
        }
        self.commit_runs(cpu, slots, run.key, pfns, run.rest);
    }

    /// [`Self::commit_bulk`] with pages after the prepared run (`pfns`,
    /// bound for `key`): those of the slots from `rest`.
    #[inline(never)]
    fn commit_runs<S: PageSlot>(
        &self,
        cpu: CpuId,
        slots: &[S],
        key: RunKey,
        pfns: &[FrameIdx],
        rest: usize,
    ) {
        let mut locked = LockedPcp::<L> {
            held: None,
            pages: 0,
        };
        self.commit_run(cpu, &mut locked, key, pfns, true);
        if rest < slots.len() {
            self.commit_rest(cpu, &mut locked, &slots[rest..]);
        }
        locked.release(self, cpu);
    }

    /// The pages of `slots`, claimed, gathered into runs bound for one
    /// (zone, list) (looked up once per pageblock) and committed run by
    /// run.
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
    /// (pass 1 gave it).
    fn commit_run<'a>(
        &'a self,
        cpu: CpuId,
        locked: &mut LockedPcp<'a, L>,
        key: RunKey,
        pfns: &[FrameIdx],
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
        let pressure = self.zones[key.zone.index()].flags.pressure();
        self.push_listed_run(pcp, key.zone, pressure, list, pfns);
    }

    /// Puts listed pages of `zone` on `list`, under its pcp lock, in steps
    /// that stop exactly where adding them one at a time would have made
    /// the count reach `high`, and drains there (free_unref_page_commit()
    /// for each page, a step at a time). `pressure` is the zone's flags as
    /// the first free reads them; a drain that changes them ends the step.
    #[inline(always)]
    fn push_listed_run(
        &self,
        pcp: &mut PerCpuPages,
        zone: ZoneIdx,
        pressure: ZonePressure,
        list: PcpList,
        mut pfns: &[FrameIdx],
    ) {
        pfns = pcp.push_order0_run(list, pfns, pressure);
        if !pfns.is_empty() {
            self.push_listed_slowly(pcp, zone, list, pfns);
        }
    }

    /// The rest of [`Self::push_listed_run`] once a page reaches `high`:
    /// that page alone with the drain it makes, then steps again.
    #[inline(never)]
    fn push_listed_slowly(
        &self,
        pcp: &mut PerCpuPages,
        zone: ZoneIdx,
        list: PcpList,
        mut pfns: &[FrameIdx],
    ) {
        let flags = &self.zones[zone.index()].flags;
        while let Some((&pfn, rest)) = pfns.split_first() {
            pcp.push(list, pfn);
            if let Some(nr) = pcp.after_free(Order(0), flags.pressure()) {
                self.drain_after_free(pcp, zone, nr, list.pindex);
            }
            pfns = rest;
            if !pfns.is_empty() {
                pfns = pcp.push_order0_run(list, pfns, flags.pressure());
            }
        }
    }
}

/// What pass 1 gathered: the first pages of the call (`N` at most), all
/// bound for `key`, and the slot of the first page after them (the slice's
/// length when there is none).
struct PreparedRun<const N: usize> {
    key: RunKey,
    pfns: [FrameIdx; N],
    /// The words the run's records had before pass 1 listed them.
    saved: [PageInfo; N],
    len: usize,
    rest: usize,
}

impl<const N: usize> PreparedRun<N> {
    /// The PFNs of the first `len` pages gathered and their old words,
    /// which an undo needs (and only those: the rest of the run may stay
    /// in registers).
    #[inline(always)]
    fn gathered(&self, len: usize) -> (&[FrameIdx], &[PageInfo]) {
        (&self.pfns[..len], &self.saved[..len])
    }
}

/// The run key and per-CPU list of a small bulk free whose pages lie in
/// pageblocks of word `word`; `None` when the word is no zone's or its
/// pages go to the buddy lists.
#[inline(always)]
fn small_run_list(word: u32) -> Option<(RunKey, PcpList)> {
    let key = RunKey::of(PageblockTable::decode(word)?);
    Some((key, key.list?))
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
    /// Where the free of an order-0 page of pageblock `block` goes.
    #[inline]
    fn of(block: BlockInfo) -> RunKey {
        RunKey {
            zone: block.zone,
            list: PcpList::for_free(block.freetype, Order(0)),
        }
    }

    /// [`Self::of`] the pageblock whose word is `word`; `None` when that is
    /// no block's word or the block is in no zone.
    #[inline]
    fn of_word(word: u64) -> Option<RunKey> {
        let block = PageblockTable::decode(u32::try_from(word).ok()?)?;
        Some(RunKey::of(block))
    }

    /// Whether pages of the pageblock whose word is `word` join a run bound
    /// for `self` (the pages of a block bound for the buddy lists or
    /// another list close it); `None` when the block is not memory. Out of
    /// line: pass 1 calls it only at a block whose word is not the run's.
    #[inline(never)]
    fn joined_by(&self, word: u64) -> Option<bool> {
        let key = RunKey::of_word(word)?;
        Some(key.list.is_some() && key == *self)
    }

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

/// An element of a small bulk free's input (see
/// [`PageAllocator::free_pages_bulk_small`]): a page of a list, or a page
/// array slot, which the small path empties as it claims the slot's page
/// and refills if it undoes the claim.
pub(crate) trait FreedSlot {
    /// The page in the slot, if any.
    fn page(&self) -> Option<Page>;
    /// Empties the slot (a page of a list stays).
    fn empty(&self);
    /// Puts `page`, which [`Self::empty`] took out, back into the slot.
    fn put_back(&self, page: Page);
}

impl FreedSlot for Page {
    #[inline]
    fn page(&self) -> Option<Page> {
        Some(*self)
    }

    #[inline]
    fn empty(&self) {}

    #[inline]
    fn put_back(&self, _page: Page) {}
}

impl FreedSlot for Cell<Option<Page>> {
    #[inline]
    fn page(&self) -> Option<Page> {
        self.get()
    }

    #[inline]
    fn empty(&self) {
        self.set(None);
    }

    #[inline]
    fn put_back(&self, page: Page) {
        self.set(Some(page));
    }
}
