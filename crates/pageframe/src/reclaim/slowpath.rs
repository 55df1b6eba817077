//! The allocation slow path with reclaim. mirrors __alloc_pages_slowpath(),
//! wake_all_kswapds(), __alloc_pages_direct_reclaim(),
//! should_reclaim_retry() of mm/page_alloc.c and try_to_free_pages() /
//! do_try_to_free_pages() of mm/vmscan.c (6.12), in their order:
//!
//! 1. the fast path at the low watermark: when every eligible zone is
//!    below it, kswapd of each node of the zonelist is woken;
//! 2. the slow path's first attempt, at the min watermark (and with the
//!    reserves `__GFP_MEMALLOC` allows);
//! 3. without `__GFP_DIRECT_RECLAIM`, failure; else, in a loop: kswapd
//!    woken again, an attempt at the min watermark, direct reclaim
//!    (`allocstall` at each of do_try_to_free_pages()'s passes) and, when
//!    it made progress, an attempt, then the HIGHATOMIC blocks unreserved
//!    and every CPU's lists drained and one more attempt; then failure for
//!    `__GFP_NORETRY` and for costly orders without `__GFP_RETRY_MAYFAIL`;
//!    then should_reclaim_retry(), which before giving up unreserves the
//!    HIGHATOMIC blocks by force and retries if it released one;
//! 4. no OOM killer: ENOMEM.
//!
//! An allocation whose fallback boosted its zone's watermarks wakes
//! kswapd (the end of rmqueue()). Compaction is not modelled (the reclaim
//! layer's own pages are order 0).

use super::error::MmError;
use super::kswapd::MAX_RECLAIM_RETRIES;
use super::lru::LruList;
use super::vmscan::{ScanControl, SWAP_CLUSTER_MAX};
use super::{Mm, ReclaimEvent, ZoneInfo};
use crate::gfp::Gfp;
use crate::page_alloc::{AllocError, AllocStage, FreeError, Page};
use crate::pcp::PAGE_ALLOC_COSTLY_ORDER;
use crate::types::{CpuId, NodeId, Order, Pfn, ZoneType};

impl Mm<'_> {
    /// Allocates `1 << order` pages on `cpu`, preferring `node`, through
    /// the slow path with kswapd wakeups and direct reclaim. The pages are
    /// the caller's ("other" pages) until [`Mm::free_pages`].
    pub fn alloc_pages(
        &mut self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        node: NodeId,
    ) -> Result<Page, MmError> {
        let pfn = self.alloc_slowpath(cpu, gfp, order, node)?;
        self.other_pages.insert(pfn, order);
        self.nr_other += 1 << order.0;
        Ok(Page::from_pfn(Pfn(pfn)))
    }

    /// Frees pages from [`Mm::alloc_pages`]. EBUSY for a page of the page
    /// cache or of a process (those leave by truncation, deletion, exit or
    /// reclaim); a page this layer did not hand out, or with another order,
    /// is refused as the allocator refuses it ([`MmError::Free`]: not
    /// allocated, wrong order), so pages allocated around the layer cannot
    /// be freed through it. Nothing changes on error.
    pub fn free_pages(&mut self, cpu: CpuId, page: Page, order: Order) -> Result<(), MmError> {
        let first = page.pfn().0;
        match self.other_pages.get(&first) {
            Some(&allocated) if allocated == order => {}
            Some(&allocated) => {
                return Err(MmError::Free(FreeError::WrongOrder {
                    pfn: page.pfn(),
                    allocated,
                    freed: order,
                }))
            }
            None => {
                let owner = self.owner(first);
                if owner != super::Owner::None {
                    return Err(MmError::PageInUse { pfn: first, owner });
                }
                return Err(MmError::Free(FreeError::NotAllocated(page.pfn())));
            }
        }
        self.allocator
            .cpu(cpu)?
            .free_pages(page, order)
            .map_err(MmError::Free)?;
        self.other_pages.remove(&first);
        self.nr_other -= 1 << order.0;
        Ok(())
    }

    /// One order-0 page for the page cache or a process, charged to the
    /// memory cgroup after it is allocated (filemap_add_folio(),
    /// alloc_anon_folio()); a failed charge frees it again and is
    /// [`MmError::OverLimit`].
    pub(super) fn alloc_lru_page(
        &mut self,
        cpu: CpuId,
        node: NodeId,
        gfp: Gfp,
    ) -> Result<u64, MmError> {
        let pfn = self.alloc_slowpath(cpu, gfp, Order(0), node)?;
        if let Err(err) = self.try_charge(cpu, gfp) {
            self.allocator
                .cpu(cpu)?
                .free_pages(Page::from_pfn(Pfn(pfn)), Order(0))
                .map_err(MmError::Free)?;
            return Err(err);
        }
        Ok(pfn)
    }

    fn alloc_slowpath(
        &mut self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        node: NodeId,
    ) -> Result<u64, MmError> {
        // __alloc_pages(): an order above MAX_PAGE_ORDER fails before any
        // watermark check (they index the free areas by the order).
        let max = self.allocator.layout().max_order;
        if order > max {
            return Err(MmError::Alloc(AllocError::OrderTooLarge { order, max }));
        }
        // Every other argument (the node, the flags) is checked before
        // kswapd is woken: a refused call changes nothing.
        let request = self.allocator.validate_alloc(cpu, gfp, order, node)?;
        let highest_zone = request.highest_zone;
        let nodes = self.zonelist_nodes(node, request.this_node);
        let kswapd_reclaim = gfp.contains(Gfp::KSWAPD_RECLAIM);
        if kswapd_reclaim && !self.fastpath_ok(&nodes, order.0, highest_zone) {
            self.wake_all_kswapds(&nodes, order.0, highest_zone);
        }
        if let Some(pfn) = self.attempt(cpu, gfp, order, node, AllocStage::BeforeReclaim)? {
            return Ok(self.allocated(pfn, kswapd_reclaim));
        }
        if !gfp.contains(Gfp::DIRECT_RECLAIM) {
            return Err(self.failed(cpu, gfp, order, node));
        }
        let costly = order > PAGE_ALLOC_COSTLY_ORDER;
        let mut no_progress_loops = 0u32;
        loop {
            // retry:
            if kswapd_reclaim {
                self.wake_all_kswapds(&nodes, order.0, highest_zone);
            }
            if let Some(pfn) = self.attempt(cpu, gfp, order, node, AllocStage::InSlowpath)? {
                return Ok(self.allocated(pfn, kswapd_reclaim));
            }
            let progress = self.try_to_free_pages(cpu, &nodes, highest_zone)?;
            if progress > 0 {
                if let Some(pfn) = self.after_direct_reclaim(cpu, gfp, order, node)? {
                    return Ok(self.allocated(pfn, kswapd_reclaim));
                }
            }
            // A costly order retries only when compaction could help it
            // (`__GFP_IO`: gfp_compaction_allowed()) and it asked to.
            let can_compact = gfp.contains(Gfp::IO);
            if gfp.contains(Gfp::NORETRY)
                || (costly && (!can_compact || !gfp.contains(Gfp::RETRY_MAYFAIL)))
            {
                return Err(self.failed(cpu, gfp, order, node));
            }
            // Progress of a costly order need not give a block that large.
            if progress > 0 && !costly {
                no_progress_loops = 0;
            } else {
                no_progress_loops += 1;
            }
            if !self.should_reclaim_retry(&nodes, (gfp, order), highest_zone, no_progress_loops)
                && !self.allocator.unreserve_highatomic_for(gfp, node, true)
            {
                return Err(self.failed(cpu, gfp, order, node));
            }
        }
    }

    /// One attempt of the allocator's, up to `stage`; `None` when it found
    /// no memory.
    fn attempt(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        node: NodeId,
        stage: AllocStage,
    ) -> Result<Option<u64>, MmError> {
        match self
            .allocator
            .alloc_pages_staged(cpu, gfp, order, node, None, stage)
        {
            Ok(pfn) => Ok(Some(pfn.pfn().0)),
            Err(AllocError::NoMemory { .. }) => Ok(None),
            Err(err @ AllocError::WouldBlock { .. }) => {
                // The call ends here, failed (a non-blocking unmapped
                // request): counted as the bare allocator counts it.
                self.allocator.count_alloc_failure(cpu, gfp, node);
                Err(err.into())
            }
            Err(err) => Err(err.into()),
        }
    }

    /// The end of __alloc_pages_direct_reclaim() after progress: an
    /// attempt; failing, pages may be pinned on the per-CPU lists or in
    /// the HIGHATOMIC reserve, so those are released and one more attempt
    /// made.
    fn after_direct_reclaim(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        node: NodeId,
    ) -> Result<Option<u64>, MmError> {
        if let Some(pfn) = self.attempt(cpu, gfp, order, node, AllocStage::InSlowpath)? {
            return Ok(Some(pfn));
        }
        self.allocator.unreserve_highatomic_for(gfp, node, false);
        self.allocator.drain_all_pages();
        self.attempt(cpu, gfp, order, node, AllocStage::InSlowpath)
    }

    /// `nopage:` the call fails (pageframe's `pgalloc_fail` counts it).
    fn failed(&self, cpu: CpuId, gfp: Gfp, order: Order, node: NodeId) -> MmError {
        self.allocator.count_alloc_failure(cpu, gfp, node);
        MmError::NoMemory(AllocError::NoMemory { order })
    }

    /// The end of rmqueue(): when a fallback boosted the watermarks of the
    /// page's zone and the allocation may wake kswapd, the zone's node's
    /// kswapd is woken to reclaim the boost. Returns the PFN.
    fn allocated(&mut self, pfn: u64, kswapd_reclaim: bool) -> u64 {
        if kswapd_reclaim {
            let zone = self
                .zones
                .iter()
                .find(|zone| (zone.start_pfn..zone.end_pfn).contains(&pfn))
                .map(|zone| (zone.index, zone.node, zone.zone_type));
            if let Some((index, node, zone_type)) = zone {
                if self.allocator.take_boosted_watermark_wakeup(index) {
                    self.wakeup_kswapd(node.index(), 0, zone_type);
                }
            }
        }
        pfn
    }

    /// The nodes of the zonelist: the preferred node, then (without
    /// `__GFP_THISNODE`) the others by distance.
    pub(super) fn zonelist_nodes(&self, node: NodeId, this_node: bool) -> Vec<usize> {
        if this_node {
            return vec![node.index()];
        }
        let distance = &self.allocator.layout().distance[node.index()];
        let mut nodes: Vec<usize> = (0..self.nr_nodes()).collect();
        nodes.sort_by_key(|&other| (other != node.index(), distance[other], other));
        nodes
    }

    fn eligible_zones<'z>(
        &'z self,
        nodes: &'z [usize],
        highest_zone: ZoneType,
    ) -> impl Iterator<Item = &'z ZoneInfo> + 'z {
        self.zones.iter().filter(move |zone| {
            zone.zone_type <= highest_zone && nodes.contains(&zone.node.index())
        })
    }

    /// Whether get_page_from_freelist() at the low watermark finds a zone.
    fn fastpath_ok(&self, nodes: &[usize], order: u8, highest_zone: ZoneType) -> bool {
        self.eligible_zones(nodes, highest_zone).any(|zone| {
            let (_, watermarks) = self.zone_free(zone);
            self.zone_watermark_ok(zone, order, watermarks.low, highest_zone)
        })
    }

    /// wake_all_kswapds(): each node of the zonelist once.
    fn wake_all_kswapds(&mut self, nodes: &[usize], order: u8, highest_zone: ZoneType) {
        for &node in nodes {
            if self.eligible_zones(&[node], highest_zone).next().is_some() {
                self.wakeup_kswapd(node, order, highest_zone);
            }
        }
    }

    /// try_to_free_pages(): direct reclaim from the zonelist's nodes
    /// (`do_try_to_free_pages`). Returns the pages reclaimed.
    fn try_to_free_pages(
        &mut self,
        cpu: CpuId,
        nodes: &[usize],
        highest_zone: ZoneType,
    ) -> Result<u64, MmError> {
        let sc = ScanControl::new(SWAP_CLUSTER_MAX, false, cpu, highest_zone);
        self.do_try_to_free_pages(nodes, highest_zone, sc)
    }

    /// do_try_to_free_pages(): counts an allocstall (global reclaim only),
    /// shrinks the zonelist's nodes at falling priority until
    /// `sc.nr_to_reclaim` pages are reclaimed, and snapshots each node's
    /// refaults; if nothing was reclaimed, once more walking every memory
    /// cgroup (`memcg_full_walk`: here the same lists again), and then, if
    /// active lists were skipped, once more with deactivation forced.
    /// Returns the pages reclaimed.
    pub(super) fn do_try_to_free_pages(
        &mut self,
        nodes: &[usize],
        highest_zone: ZoneType,
        mut sc: ScanControl,
    ) -> Result<u64, MmError> {
        let initial_priority = sc.priority;
        loop {
            if !sc.cgroup {
                self.counters.add(ReclaimEvent::allocstall(highest_zone), 1);
            }
            loop {
                for &node in nodes {
                    if self.eligible_zones(&[node], highest_zone).next().is_some() {
                        self.shrink_node(node, &mut sc)?;
                    }
                }
                if sc.nr_reclaimed >= sc.nr_to_reclaim || sc.priority == 0 {
                    break;
                }
                sc.priority -= 1;
            }
            for &node in nodes {
                if self.eligible_zones(&[node], highest_zone).next().is_some() {
                    self.snapshot_refaults(node);
                }
            }
            if sc.nr_reclaimed > 0 {
                return Ok(sc.nr_reclaimed);
            }
            sc.priority = initial_priority;
            if !sc.memcg_full_walk {
                sc.memcg_full_walk = true;
            } else if sc.skipped_deactivate {
                sc.force_deactivate = true;
                sc.skipped_deactivate = false;
            } else {
                return Ok(0);
            }
        }
    }

    /// should_reclaim_retry(): give up after MAX_RECLAIM_RETRIES passes
    /// without progress; otherwise retry while some eligible zone's free
    /// pages plus its reclaimable (file LRU) pages would pass its min
    /// watermark at the allocation's order and flags.
    fn should_reclaim_retry(
        &self,
        nodes: &[usize],
        (gfp, order): (Gfp, Order),
        highest_zone: ZoneType,
        no_progress_loops: u32,
    ) -> bool {
        if no_progress_loops > MAX_RECLAIM_RETRIES {
            return false;
        }
        let flags = gfp.slowpath_alloc_flags(order);
        self.eligible_zones(nodes, highest_zone).any(|zone| {
            let node = zone.node.index();
            let reclaimable = self
                .lru
                .count_in_zone(node, LruList::InactiveFile, zone.zone_type)
                + self
                    .lru
                    .count_in_zone(node, LruList::ActiveFile, zone.zone_type);
            let (free, watermarks) = self.zone_free(zone);
            self.allocator.zone_watermark_ok_on(
                zone.index,
                order,
                watermarks.min,
                highest_zone,
                flags,
                free + reclaimable,
            )
        })
    }
}
