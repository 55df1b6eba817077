//! Page reclaim over one node's LRU lists. mirrors, of mm/vmscan.c (6.12):
//! shrink_node(), prepare_scan_control()'s deactivation decision,
//! get_scan_count() with no swap (SCAN_FILE), shrink_lruvec(),
//! shrink_list(), shrink_active_list(), shrink_inactive_list(),
//! shrink_folio_list(), folio_check_references(), move_folios_to_lru(),
//! __remove_mapping() and inactive_is_low(); and of mm/swap.c and
//! mm/filemap.c the end of writeback, folio_end_writeback() with
//! folio_rotate_reclaimable().
//!
//! The same passes serve kswapd, direct reclaim and a memory cgroup's
//! reclaim (`ScanControl::cgroup`, `memcg`).
//!
//! Simplifications: the flusher woken by reclaim writes every dirty page
//! back at once, and writeback completes at once, so kswapd never writes
//! pages itself (PGDAT_DIRTY) and no page is met under writeback.

use super::error::MmError;
use super::lru::{LruList, Owner, DIRTY, LOCKED, RECLAIM, REFERENCED, WORKINGSET, YOUNG};
use super::{Mm, NodeId, ReclaimEvent};
use crate::types::{CpuId, ZoneType};

/// `SWAP_CLUSTER_MAX`: pages isolated per batch.
pub(super) const SWAP_CLUSTER_MAX: u64 = 32;
/// `DEF_PRIORITY`: the first pass scans `size >> 12` of each list.
pub(super) const DEF_PRIORITY: u32 = 12;

/// One reclaim pass's parameters and results (`struct scan_control`).
#[derive(Clone, Debug)]
pub(super) struct ScanControl {
    pub(super) nr_to_reclaim: u64,
    pub(super) priority: u32,
    pub(super) nr_scanned: u64,
    pub(super) nr_reclaimed: u64,
    /// Reclaim by kswapd (else direct reclaim).
    pub(super) kswapd: bool,
    /// Reclaim for a memory cgroup over its limit (`cgroup_reclaim()`):
    /// not counted in the global `pgscan_*`/`pgsteal_*` of its reclaimer.
    pub(super) cgroup: bool,
    /// The CPU the reclaimer runs on (where freed pages go).
    pub(super) cpu: CpuId,
    /// The highest zone whose pages this reclaim may free (`reclaim_idx`:
    /// the allocation's highest zone, kswapd's wakeup's, every zone for
    /// a memory cgroup).
    pub(super) reclaim_idx: ZoneType,
    pub(super) may_deactivate_file: bool,
    pub(super) force_deactivate: bool,
    pub(super) skipped_deactivate: bool,
    /// do_try_to_free_pages()'s retry walking every memory cgroup.
    pub(super) memcg_full_walk: bool,
}

impl ScanControl {
    pub(super) fn new(
        nr_to_reclaim: u64,
        kswapd: bool,
        cpu: CpuId,
        reclaim_idx: ZoneType,
    ) -> ScanControl {
        ScanControl {
            nr_to_reclaim,
            priority: DEF_PRIORITY,
            nr_scanned: 0,
            nr_reclaimed: 0,
            kswapd,
            cgroup: false,
            cpu,
            reclaim_idx,
            may_deactivate_file: false,
            force_deactivate: false,
            skipped_deactivate: false,
            memcg_full_walk: false,
        }
    }
}

/// folio_check_references()'s verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum References {
    Activate,
    Keep,
    ReclaimClean,
    Reclaim,
}

impl Mm<'_> {
    /// inactive_is_low(): the inactive list is too small when
    /// `inactive * int_sqrt(10 * gb) < active`, with `gb` the size of both
    /// lists in GiB (a ratio of 1 below 1 GiB); in a memory cgroup the
    /// lists' sizes as last flushed (`memcg`).
    pub fn inactive_is_low(&self, node: NodeId, inactive: LruList) -> bool {
        if node.index() >= self.nr_nodes() || inactive.is_active() {
            return false;
        }
        let (active, inactive) = self.stat_lists(node.index(), inactive.is_file());
        let gb = (inactive + active) >> (30 - self.allocator.layout().page_shift as u32);
        let ratio = if gb > 0 { (10 * gb).isqrt() } else { 1 };
        inactive * ratio < active
    }

    /// shrink_node() of one node: decides whether the active file list may
    /// be deactivated (forced, or refaults activated pages since the last
    /// reclaim run, or the inactive list is low: prepare_scan_control()),
    /// then shrinks the lists.
    pub(super) fn shrink_node(&mut self, node: usize, sc: &mut ScanControl) -> Result<(), MmError> {
        sc.may_deactivate_file = sc.force_deactivate
            || self.refaults_since_snapshot(node)
            || self.inactive_is_low(NodeId(node as u16), LruList::InactiveFile);
        let reclaimed = sc.nr_reclaimed;
        self.shrink_lruvec(node, sc)?;
        // shrink_node_memcgs(): the slab shrinkers after the lists; the
        // page cache's shadow nodes are the one slab modelled.
        self.shrink_shadow_nodes(node, sc.priority);
        if sc.nr_reclaimed > reclaimed {
            // Reclaim made progress: the node is not hopeless.
            self.kswapd[node].failures = 0;
        }
        Ok(())
    }

    /// shrink_lruvec(): scans `size >> priority` of each file list (its
    /// pages in the zones up to `reclaim_idx`; no swap: get_scan_count()
    /// leaves the anon lists alone) in batches of
    /// SWAP_CLUSTER_MAX, until the targets are met or enough was reclaimed
    /// — except global direct reclaim at DEF_PRIORITY, which finishes its
    /// targets (`proportional_reclaim`: a direct reclaimer means kswapd is
    /// behind, so it does a batch of work at once). With the anon lists
    /// unscanned, the kernel's proportional adjustment after enough was
    /// reclaimed is a stop.
    fn shrink_lruvec(&mut self, node: usize, sc: &mut ScanControl) -> Result<(), MmError> {
        let mut targets = [0u64; 4];
        for list in [LruList::InactiveFile, LruList::ActiveFile] {
            // get_scan_count(): the lists' pages in the eligible zones.
            targets[list as usize] =
                self.lru.count_up_to(node, list, sc.reclaim_idx) >> sc.priority;
        }
        let proportional = !sc.cgroup && !sc.kswapd && sc.priority == DEF_PRIORITY;
        let start = sc.nr_reclaimed;
        while targets.iter().any(|&target| target > 0) {
            for list in LruList::ALL {
                let batch = targets[list as usize].min(SWAP_CLUSTER_MAX);
                if batch > 0 {
                    targets[list as usize] -= batch;
                    self.shrink_list(node, list, batch, sc)?;
                }
            }
            if sc.nr_reclaimed - start >= sc.nr_to_reclaim && !proportional {
                break;
            }
        }
        Ok(())
    }

    /// shrink_list(): active lists are only aged when deactivation is allowed.
    fn shrink_list(
        &mut self,
        node: usize,
        list: LruList,
        nr_to_scan: u64,
        sc: &mut ScanControl,
    ) -> Result<(), MmError> {
        if list.is_active() {
            if list.is_file() && sc.may_deactivate_file {
                self.shrink_active_list(node, list, nr_to_scan, sc);
            } else {
                sc.skipped_deactivate = true;
            }
            Ok(())
        } else {
            self.shrink_inactive_list(node, list, nr_to_scan, sc)
        }
    }

    /// isolate_lru_folios(): takes up to `nr` pages of zones up to
    /// `reclaim_idx` from the tail of a list; pages of higher zones met on
    /// the way do not count towards `nr`, go back to the list's head in
    /// the order met (`pgskip_*`), and are counted as scanned. Returns the
    /// pages taken and the pages scanned.
    fn isolate(
        &mut self,
        node: usize,
        list: LruList,
        nr: u64,
        reclaim_idx: ZoneType,
    ) -> (Vec<u64>, u64) {
        let (mut taken, mut skipped) = (Vec::new(), Vec::new());
        let mut at = self.lru.tail(node, list);
        while let Some(pfn) = at {
            if taken.len() as u64 == nr {
                break;
            }
            if self.lru.meta(pfn).zone > reclaim_idx {
                skipped.push(pfn);
            } else {
                taken.push(pfn);
            }
            at = self.lru.prev(pfn);
        }
        for &pfn in &skipped {
            let zone = self.lru.meta(pfn).zone;
            self.counters.add(ReclaimEvent::pgskip(zone), 1);
            self.lru.move_to(pfn, list, false);
        }
        let scanned = (taken.len() + skipped.len()) as u64;
        (taken, scanned)
    }

    /// shrink_active_list(): pages from the active tail go to the inactive
    /// head as working set (`PG_workingset`), their PTE young bits cleared
    /// on the way (only executable file pages, which this model has none
    /// of, stay active when referenced). `pgrefill` counts global reclaim
    /// only (a memory cgroup's reclaim counts it in the cgroup).
    fn shrink_active_list(
        &mut self,
        node: usize,
        list: LruList,
        nr_to_scan: u64,
        sc: &ScanControl,
    ) {
        let (taken, scanned) = self.isolate(node, list, nr_to_scan, sc.reclaim_idx);
        if !sc.cgroup {
            self.counters.add(ReclaimEvent::Pgrefill, scanned);
        }
        let inactive = LruList::of(list.is_file(), false);
        for &pfn in &taken {
            let meta = self.lru.meta_mut(pfn);
            meta.flags = (meta.flags & !YOUNG) | WORKINGSET;
            self.lru.move_to(pfn, inactive, false);
        }
        self.counters
            .add(ReclaimEvent::Pgdeactivate, taken.len() as u64);
    }

    /// folio_check_references(): a mapped page referenced through its PTE
    /// gets PG_referenced and another trip around the inactive list, and is
    /// activated if it was referenced before; an unmapped page cache page
    /// that is only PG_referenced is reclaimed if clean.
    fn check_references(&mut self, pfn: u64) -> References {
        let meta = self.lru.meta_mut(pfn);
        let referenced_ptes = meta.test(YOUNG);
        let referenced_folio = meta.test(REFERENCED);
        meta.flags &= !(YOUNG | REFERENCED);
        let file = matches!(meta.owner, Owner::File { .. });
        if referenced_ptes {
            meta.flags |= REFERENCED;
            if referenced_folio {
                return References::Activate;
            }
            return References::Keep;
        }
        if referenced_folio && file {
            return References::ReclaimClean;
        }
        References::Reclaim
    }

    /// shrink_inactive_list() with shrink_folio_list(): scans pages from
    /// the inactive tail; referenced ones are kept or activated, dirty file
    /// pages are marked PG_reclaim and activated (NR_VMSCAN_IMMEDIATE:
    /// reclaimed once written), clean unreferenced ones are freed. A batch
    /// whose every page is dirty and not yet queued for writeback wakes
    /// the flusher. A locked page (folio_trylock() fails) is put back
    /// unexamined: counted in `pgscan_*` but not in the pass's scanned
    /// pages.
    fn shrink_inactive_list(
        &mut self,
        node: usize,
        list: LruList,
        nr_to_scan: u64,
        sc: &mut ScanControl,
    ) -> Result<(), MmError> {
        let (taken, scanned) = self.isolate(node, list, nr_to_scan, sc.reclaim_idx);
        let nr_taken = taken.len() as u64;
        let (scan, steal) = if sc.kswapd {
            (ReclaimEvent::PgscanKswapd, ReclaimEvent::PgstealKswapd)
        } else {
            (ReclaimEvent::PgscanDirect, ReclaimEvent::PgstealDirect)
        };
        let (scan_kind, steal_kind) = if list.is_file() {
            (ReclaimEvent::PgscanFile, ReclaimEvent::PgstealFile)
        } else {
            (ReclaimEvent::PgscanAnon, ReclaimEvent::PgstealAnon)
        };
        if !sc.cgroup {
            self.counters.add(scan, scanned);
        }
        self.counters.add(scan_kind, scanned);
        if nr_taken == 0 {
            return Ok(());
        }
        let active = LruList::of(list.is_file(), true);
        let (mut reclaimed, mut unqueued_dirty) = (0u64, 0u64);
        let (mut kept, mut activated) = (Vec::new(), 0u64);
        for pfn in taken {
            if self.lru.meta(pfn).test(LOCKED) {
                // folio_trylock() fails: kept, its flags untouched.
                kept.push(pfn);
                continue;
            }
            sc.nr_scanned += 1;
            // folio_check_dirty_writeback(): writeback completes at once
            // here, so a dirty page is never queued; anon pages count as
            // clean.
            let dirty = list.is_file() && self.lru.meta(pfn).test(DIRTY);
            unqueued_dirty += dirty as u64;
            match self.check_references(pfn) {
                References::Activate => {
                    self.activate(pfn, active);
                    activated += 1;
                }
                References::Keep => kept.push(pfn),
                References::ReclaimClean | References::Reclaim if dirty => {
                    // Only kswapd writes pages itself, and only ones it met
                    // before (PG_reclaim) on a node whose tail is all dirty
                    // (PGDAT_DIRTY); with writeback completing at once no
                    // page comes back dirty, so every dirty page is left
                    // to the flusher and reclaimed once written.
                    self.lru.meta_mut(pfn).flags |= RECLAIM;
                    self.counters.add(ReclaimEvent::NrVmscanImmediateReclaim, 1);
                    self.activate(pfn, active);
                    activated += 1;
                }
                References::ReclaimClean | References::Reclaim => {
                    if !list.is_file() {
                        // No swap: an anon page cannot be paged out.
                        self.activate(pfn, active);
                        activated += 1;
                        continue;
                    }
                    self.evict_file_page(sc.cpu, pfn)?;
                    reclaimed += 1;
                }
            }
        }
        // move_folios_to_lru(): kept pages go back to the inactive head;
        // the activated ones age the node's non-resident pages, after
        // this batch's evictions.
        for pfn in kept {
            self.lru.move_to(pfn, list, false);
        }
        self.age_nonresident(node as u16, activated);
        if !sc.cgroup {
            self.counters.add(steal, reclaimed);
        }
        self.counters.add(steal_kind, reclaimed);
        sc.nr_reclaimed += reclaimed;
        if unqueued_dirty == nr_taken {
            // wakeup_flusher_threads(WB_REASON_VMSCAN).
            self.writeback_all();
        }
        Ok(())
    }

    /// A page reclaim activates goes to the active head (`pgactivate`).
    fn activate(&mut self, pfn: u64, active: LruList) {
        self.lru.move_to(pfn, active, false);
        self.counters.add(ReclaimEvent::Pgactivate, 1);
    }

    /// __remove_mapping() of a clean page cache page reclaim frees: its
    /// shadow takes its place in the file (workingset_eviction()).
    fn evict_file_page(&mut self, cpu: CpuId, pfn: u64) -> Result<(), MmError> {
        let Owner::File { file, index } = self.lru.meta(pfn).owner else {
            return self.free_owned(cpu, pfn);
        };
        let shadow = self.workingset_eviction(pfn);
        // The shadow goes in first, so that the page's removal updates
        // its tree node once, with the shadow there.
        self.files[file.0 as usize].shadows.insert(index, shadow);
        self.free_owned(cpu, pfn)
    }

    /// Writeback of one page completes: it is clean, its block allocated
    /// on the file system, and if reclaim asked
    /// for it (PG_reclaim) it is deactivated to the inactive tail for
    /// prompt reclaim. Returns whether the page was dirty.
    pub(super) fn end_writeback(&mut self, pfn: u64) -> bool {
        let meta = *self.lru.meta(pfn);
        if !meta.test(DIRTY) {
            return false;
        }
        self.lru.meta_mut(pfn).flags &= !DIRTY;
        if let Owner::File { file, index } = meta.owner {
            let slot = &mut self.files[file.0 as usize];
            slot.dirty -= 1;
            // Delayed allocation: the block is allocated at writeback.
            slot.allocated.insert(index, index + 1);
        }
        self.nr_dirty -= 1;
        self.counters.add(ReclaimEvent::NrWritten, 1);
        let kib = 1 << (self.allocator.layout().page_shift - 10);
        self.counters.add(ReclaimEvent::Pgpgout, kib);
        if meta.test(RECLAIM) {
            self.lru.meta_mut(pfn).flags &= !RECLAIM;
            if let Some(list) = meta.lru {
                self.lru
                    .move_to(pfn, LruList::of(list.is_file(), false), true);
                self.counters.add(ReclaimEvent::Pgrotated, 1);
            }
        }
        true
    }
}
