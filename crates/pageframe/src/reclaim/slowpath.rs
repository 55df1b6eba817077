//! The allocation slow path with reclaim. mirrors __alloc_pages_slowpath(),
//! wake_all_kswapds(), __alloc_pages_direct_reclaim(),
//! should_reclaim_retry() of mm/page_alloc.c and try_to_free_pages() /
//! do_try_to_free_pages() of mm/vmscan.c (6.12), in their order:
//!
//! 1. the fast path at the low watermark: when every eligible zone is
//!    below it, kswapd of each node of the zonelist is woken;
//! 2. the allocator's attempt (its fast path, then the min watermark, then
//!    unreserving HIGHATOMIC blocks and draining the per-CPU lists);
//! 3. without `__GFP_DIRECT_RECLAIM`, failure; else direct reclaim
//!    (counting `allocstall`) and a retry, while should_reclaim_retry()
//!    says reclaim can still make the allocation succeed;
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
use crate::page_alloc::AllocError;
use crate::page_alloc::Page;
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
        self.nr_other += 1 << order.0;
        Ok(Page::from_pfn(Pfn(pfn)))
    }

    /// Frees pages from [`Mm::alloc_pages`]. EBUSY for a page of the page
    /// cache or of a process (those leave by truncation, deletion, exit or
    /// reclaim); the allocator's refusals (double free, wrong order) as
    /// [`MmError::Free`]. Nothing changes on error.
    pub fn free_pages(&mut self, cpu: CpuId, page: Page, order: Order) -> Result<(), MmError> {
        let not_ours = MmError::Free(crate::page_alloc::FreeError::NotAllocated(page.pfn()));
        let pages = 1u64.checked_shl(order.0 as u32).ok_or(not_ours.clone())?;
        if pages > self.nr_other {
            return Err(not_ours);
        }
        let first = page.pfn().0;
        for pfn in first..first.saturating_add(pages) {
            let owner = self.owner(pfn);
            if owner != super::Owner::None {
                return Err(MmError::PageInUse { pfn, owner });
            }
        }
        self.allocator
            .cpu(cpu)?
            .free_pages(page, order)
            .map_err(MmError::Free)?;
        self.nr_other -= pages;
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
        let handle = self.allocator.cpu(cpu)?;
        // Every other argument (the node, the flags) is checked before
        // kswapd is woken: a refused call changes nothing.
        let request = self.allocator.validate_alloc(cpu, gfp, order, node)?;
        let highest_zone = request.highest_zone;
        let nodes = self.zonelist_nodes(node, request.this_node);
        let kswapd_reclaim = gfp.contains(Gfp::KSWAPD_RECLAIM);
        if kswapd_reclaim && !self.fastpath_ok(&nodes, order.0, highest_zone) {
            self.wake_all_kswapds(&nodes, order.0, highest_zone);
        }
        match handle.alloc_pages(gfp, order, node) {
            Ok(page) => return Ok(self.allocated(page, kswapd_reclaim)),
            Err(AllocError::NoMemory { .. }) => {}
            Err(err) => return Err(err.into()),
        }
        let failed = MmError::NoMemory(AllocError::NoMemory { order });
        if !gfp.contains(Gfp::DIRECT_RECLAIM) {
            return Err(failed);
        }
        let mut no_progress_loops = 0u32;
        loop {
            if kswapd_reclaim {
                self.wake_all_kswapds(&nodes, order.0, highest_zone);
            }
            let progress = self.try_to_free_pages(cpu, &nodes, highest_zone)?;
            match handle.alloc_pages(gfp, order, node) {
                Ok(page) => return Ok(self.allocated(page, kswapd_reclaim)),
                Err(AllocError::NoMemory { .. }) => {}
                Err(err) => return Err(err.into()),
            }
            if gfp.contains(Gfp::NORETRY) {
                return Err(failed);
            }
            if progress > 0 {
                no_progress_loops = 0;
            } else {
                no_progress_loops += 1;
            }
            if !self.should_reclaim_retry(&nodes, order.0, highest_zone, no_progress_loops) {
                return Err(failed);
            }
        }
    }

    /// The end of rmqueue(): when a fallback boosted the watermarks of the
    /// page's zone and the allocation may wake kswapd, the zone's node's
    /// kswapd is woken to reclaim the boost. Returns the PFN.
    fn allocated(&mut self, page: Page, kswapd_reclaim: bool) -> u64 {
        let pfn = page.pfn().0;
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

    /// try_to_free_pages(): counts an allocstall, then reclaims from the
    /// zonelist's nodes (`do_try_to_free_pages`). Returns the pages
    /// reclaimed.
    fn try_to_free_pages(
        &mut self,
        cpu: CpuId,
        nodes: &[usize],
        highest_zone: ZoneType,
    ) -> Result<u64, MmError> {
        self.counters.add(ReclaimEvent::allocstall(highest_zone), 1);
        let sc = ScanControl::new(SWAP_CLUSTER_MAX, false, cpu);
        self.do_try_to_free_pages(nodes, highest_zone, sc)
    }

    /// do_try_to_free_pages(): shrinks the zonelist's nodes at falling
    /// priority until `sc.nr_to_reclaim` pages are reclaimed, and
    /// snapshots each node's refaults; if nothing was reclaimed and active
    /// lists were skipped, once more with deactivation forced. Returns the
    /// pages reclaimed.
    pub(super) fn do_try_to_free_pages(
        &mut self,
        nodes: &[usize],
        highest_zone: ZoneType,
        mut sc: ScanControl,
    ) -> Result<u64, MmError> {
        loop {
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
            // Any progress ends it; with none, one more round with the
            // active lists deactivated if they were skipped.
            if sc.nr_reclaimed > 0 || !sc.skipped_deactivate || sc.force_deactivate {
                return Ok(sc.nr_reclaimed);
            }
            sc.priority = super::vmscan::DEF_PRIORITY;
            sc.force_deactivate = true;
            sc.skipped_deactivate = false;
        }
    }

    /// should_reclaim_retry(): give up after MAX_RECLAIM_RETRIES passes
    /// without progress; otherwise retry while some node's free pages plus
    /// its reclaimable (file LRU) pages would clear the min watermarks of
    /// its eligible zones. (The kernel asks per zone; the LRU is per node
    /// here.)
    fn should_reclaim_retry(
        &self,
        nodes: &[usize],
        order: u8,
        highest_zone: ZoneType,
        no_progress_loops: u32,
    ) -> bool {
        if no_progress_loops > MAX_RECLAIM_RETRIES {
            return false;
        }
        nodes.iter().any(|&node| {
            let reclaimable = self.lru.count(node, LruList::InactiveFile)
                + self.lru.count(node, LruList::ActiveFile);
            let (free, min) =
                self.eligible_zones(&[node], highest_zone)
                    .fold((0, 0), |(free, min), zone| {
                        let (zone_free, watermarks) = self.zone_free(zone);
                        (free + zone_free, min + watermarks.min)
                    });
            free + reclaimable >= min + (1 << order) && min > 0
        })
    }
}
