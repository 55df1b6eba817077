//! One memory cgroup with a hard limit, holding every page cache and anon
//! page of the reclaim layer (a workload run in its own cgroup, as `conform
//! pagecache` runs its cases on the host). mirrors, of mm/memcontrol.c and
//! mm/memcontrol-v1.c (6.18): try_charge_memcg() for one page with
//! `memory.max` only, mem_cgroup_resize_max() (a write of cgroup v1's
//! `memory.limit_in_bytes`), and of mm/vmscan.c
//! try_to_free_mem_cgroup_pages().
//!
//! A page is charged after it is allocated and before it enters the page
//! cache or a process (filemap_add_folio(), alloc_anon_folio()); over the
//! limit the allocating task reclaims the cgroup's LRU lists itself, at
//! falling priority from the CPU's node, until `SWAP_CLUSTER_MAX` pages
//! are freed. Reclaim for a cgroup counts no `allocstall` and no
//! `pgscan_direct`/`pgsteal_direct` (the kernel counts those for global
//! reclaim only); `pgscan_file`, `pgsteal_file` and the rest as usual.
//!
//! Inside a cgroup, every reclaim's deactivation decision
//! (prepare_scan_control(), inactive_is_low(), snapshot_refaults()) and
//! refault detection (workingset_test_recent()) read the cgroup's
//! statistics as they were last flushed, not as they are: the kernel
//! aggregates them (rstat, the root cgroup's too) only when a reader such
//! as `memory.stat` flushes them, or every 2 s. [`Mm::memcg_flush_stats`]
//! is that flush, and the caller makes it: the periodic one is not
//! modelled (there is no clock), so a workload in a cgroup should flush as
//! often as its readers and the 2 s flusher would. The first
//! [`Mm::set_memcg_limit`] puts the workload in the cgroup (with or
//! without a limit) and flushes; until then the statistics read are the
//! lists' exact counts.
//!
//! Simplifications: no per-CPU charge stock (`MEMCG_CHARGE_BATCH`): with
//! one task on one CPU the stock is used up before the counter is charged
//! again, so a charge meets the limit exactly when the charged pages do (a
//! stock left on another CPU would lower the limit by up to 63 pages);
//! kernel memory the cgroup would also be charged for (page tables, the
//! page cache's xarray nodes) is not counted; no `memory.high`, no OOM
//! killer: a charge reclaim cannot make room for fails with ENOMEM (the
//! layer's charges never carry `__GFP_NOFAIL` or `__GFP_HIGH`, which the
//! kernel lets past the limit).
//!
//! Invariant: the charged pages (page cache plus anon) never exceed the
//! limit.

use super::error::MmError;
use super::kswapd::MAX_RECLAIM_RETRIES;
use super::lru::LruList;
use super::vmscan::{ScanControl, SWAP_CLUSTER_MAX};
use super::Mm;
use crate::gfp::Gfp;
use crate::types::{CpuId, ZoneType};

/// `PAGE_COUNTER_MAX`-like: no limit.
pub(super) const UNLIMITED: u64 = u64::MAX;

/// One node's cgroup statistics as last flushed (the memcg's
/// `lruvec_stats`): the LRU lists' sizes in pages, indexed by
/// [`LruList`], and the refault activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FlushedStats {
    lists: [u64; 4],
    activate_file: u64,
}

impl Mm<'_> {
    /// Pages charged to the cgroup: page cache plus anon
    /// (`memory.usage_in_bytes` in pages, without kernel memory).
    pub fn memcg_usage(&self) -> u64 {
        self.nr_file + self.nr_anon
    }

    /// The cgroup's limit in pages; `None` when unlimited.
    pub fn memcg_limit(&self) -> Option<u64> {
        (self.memcg_max != UNLIMITED).then_some(self.memcg_max)
    }

    /// Flushes the cgroup's statistics (mem_cgroup_flush_stats(), as a
    /// read of `memory.stat` does): reclaim and refault detection see the
    /// lists as they are now until the next flush. Nothing to do outside
    /// a cgroup.
    pub fn memcg_flush_stats(&mut self) {
        if !self.memcg_flushed.is_empty() {
            self.memcg_flushed = self.current_stats();
        }
    }

    /// Every node's statistics as they are.
    fn current_stats(&self) -> Vec<FlushedStats> {
        (0..self.nr_nodes())
            .map(|node| FlushedStats {
                lists: LruList::ALL.map(|list| self.lru.count(node, list)),
                activate_file: self.workingset[node].activate_file,
            })
            .collect()
    }

    /// `node`'s active and inactive pages of the file (or anon) lists as
    /// reclaim reads them (lruvec_page_state()): as last flushed in a
    /// cgroup, else exact.
    pub(super) fn stat_lists(&self, node: usize, file: bool) -> (u64, u64) {
        let (active, inactive) = (LruList::of(file, true), LruList::of(file, false));
        match self.memcg_flushed.get(node) {
            Some(stats) => (stats.lists[active as usize], stats.lists[inactive as usize]),
            None => (self.lru.count(node, active), self.lru.count(node, inactive)),
        }
    }

    /// `node`'s `workingset_activate_file` as reclaim reads it: as last
    /// flushed in a cgroup, else exact.
    pub(super) fn stat_activate_file(&self, node: usize) -> u64 {
        match self.memcg_flushed.get(node) {
            Some(stats) => stats.activate_file,
            None => self.workingset[node].activate_file,
        }
    }

    /// Sets the cgroup's limit to `pages` (`None`, or `PAGE_COUNTER_MAX`
    /// pages (`i64::MAX` bytes) or more: unlimited), as a write of
    /// `memory.limit_in_bytes` does: while the
    /// usage is above the new limit, reclaims on `cpu` (SWAP_CLUSTER_MAX
    /// pages a pass), and gives up with EBUSY, the old limit kept, when a
    /// pass frees nothing (the pages reclaimed until then stay reclaimed).
    /// The first call puts the workload in the cgroup (see the module
    /// docs: the caller flushes its statistics from then on). mirrors
    /// mem_cgroup_resize_max().
    pub fn set_memcg_limit(&mut self, cpu: CpuId, pages: Option<u64>) -> Result<(), MmError> {
        // page_counter_memparse(): a limit of `PAGE_COUNTER_MAX` pages
        // (LONG_MAX bytes) or more is no limit.
        let page_counter_max = i64::MAX as u64 >> self.allocator.layout().page_shift;
        let max = pages
            .filter(|&pages| pages < page_counter_max)
            .unwrap_or(UNLIMITED);
        self.cpu_node(cpu)?;
        if self.memcg_flushed.is_empty() {
            // The workload is in the cgroup from now on.
            self.memcg_flushed = self.current_stats();
        }
        // The first pass over the limit drains the charge stocks, which
        // hold nothing here.
        let mut drained = false;
        loop {
            if self.memcg_usage() <= max {
                self.memcg_max = max;
                return Ok(());
            }
            if !drained {
                drained = true;
                continue;
            }
            if self.try_to_free_mem_cgroup_pages(cpu)? == 0 {
                return Err(MmError::LimitBusy {
                    usage: self.memcg_usage(),
                    limit: max,
                });
            }
        }
    }

    /// try_charge_memcg() of one page allocated with `gfp` on `cpu`: room
    /// under the limit, else reclaim and retry — once more after draining
    /// the (empty) stocks, then not at all with `__GFP_NORETRY`, again
    /// while reclaim frees something, else up to MAX_RECLAIM_RETRIES
    /// times. Without `__GFP_DIRECT_RECLAIM`, or when that runs out,
    /// ENOMEM ([`MmError::OverLimit`]).
    pub(super) fn try_charge(&mut self, cpu: CpuId, gfp: Gfp) -> Result<(), MmError> {
        let over = MmError::OverLimit {
            limit: self.memcg_max,
        };
        let mut retries = MAX_RECLAIM_RETRIES;
        let mut drained = false;
        loop {
            if self.memcg_usage() < self.memcg_max {
                return Ok(());
            }
            if !gfp.contains(Gfp::DIRECT_RECLAIM) {
                return Err(over);
            }
            let reclaimed = self.try_to_free_mem_cgroup_pages(cpu)?;
            if self.memcg_usage() < self.memcg_max {
                continue;
            }
            if !drained {
                drained = true;
                continue;
            }
            if gfp.contains(Gfp::NORETRY) {
                return Err(over);
            }
            if reclaimed > 0 {
                continue;
            }
            if retries == 0 {
                return Err(over);
            }
            retries -= 1;
        }
    }

    /// try_to_free_mem_cgroup_pages() for one page: SWAP_CLUSTER_MAX pages
    /// from every node, nearest to `cpu`'s first, all zones eligible.
    /// Returns the pages reclaimed.
    fn try_to_free_mem_cgroup_pages(&mut self, cpu: CpuId) -> Result<u64, MmError> {
        let node = self.cpu_node(cpu)?;
        let nodes = self.zonelist_nodes(node, false);
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, false, cpu, ZoneType::Movable);
        sc.cgroup = true;
        self.do_try_to_free_pages(&nodes, ZoneType::Movable, sc)
    }
}
