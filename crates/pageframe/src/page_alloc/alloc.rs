//! The allocation paths: fast path at the low watermark, slow path at the min
//! watermark with reserves, per-CPU lists for small orders, the buddy lists
//! for the rest. mirrors __alloc_pages(), get_page_from_freelist(),
//! zone_watermark_fast(), rmqueue(), rmqueue_pcplist(), rmqueue_bulk(),
//! rmqueue_buddy() and __alloc_pages_slowpath().
//!
//! pageframe has no reclaim, compaction or OOM killer: where the kernel would
//! reclaim, the slow path does what the kernel does after reclaim made no
//! progress (unreserve the HIGHATOMIC blocks, drain every CPU's lists, retry)
//! and then fails. `__GFP_NOFAIL` therefore fails too, rather than loop forever.

use super::error::AllocError;
use super::events::{VmEvent, ZoneCounters};
use super::{CpuSlot, PageAllocator, ZoneOnCpu, ZoneSlot};
use crate::freetype::{FreeType, FreeTypeIdx, MigrateType};
use crate::gfp::{AllocFlags, Gfp, GfpRequest};
use crate::memmap::{FrameIdx, PageInfo, PageState};
use crate::pcp::{PcpList, PerCpuPages};
use crate::sync::LockFamily;
use crate::types::{CpuId, NodeId, Nodemask, Order, ZoneIdx, ZoneType};
use crate::zone::watermark::{watermark_free_ok, ZoneFree};
use crate::zone::RmqueueMode;

/// What one allocation call works with (`struct alloc_context`).
pub(crate) struct AllocContext<'a> {
    pub(crate) zonelist: &'a [ZoneIdx],
    pub(crate) nodemask: Option<&'a Nodemask>,
    pub(crate) highest_zone: ZoneType,
    pub(crate) freetype: FreeType,
    pub(crate) preferred_zone: Option<ZoneIdx>,
}

impl AllocContext<'_> {
    /// The zones of the zonelist this allocation may use, in order
    /// (for_each_zone_zonelist_nodemask()).
    #[inline]
    pub(crate) fn eligible<'z, L: LockFamily>(
        &'z self,
        zones: &'z [ZoneSlot<L>],
    ) -> impl Iterator<Item = ZoneIdx> + 'z {
        self.zonelist.iter().copied().filter(move |&zone| {
            let slot = &zones[zone.index()];
            slot.zone_type <= self.highest_zone
                && self.nodemask.is_none_or(|mask| mask.contains(slot.node))
        })
    }
}

impl<L: LockFamily> PageAllocator<L> {
    /// Checks the arguments of an allocation; nothing changes on error.
    pub(crate) fn validate_alloc(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        preferred: NodeId,
    ) -> Result<GfpRequest, AllocError> {
        if order > self.layout.max_order {
            return Err(AllocError::OrderTooLarge {
                order,
                max: self.layout.max_order,
            });
        }
        // One zonelist per node: checking against the lists' length lets the
        // fast path index them without a second check.
        if preferred.index() >= self.zonelists.len() {
            return Err(AllocError::NoSuchNode(preferred));
        }
        if cpu.index() >= self.cpus.len() {
            return Err(AllocError::NoSuchCpu(cpu));
        }
        let request = gfp.request()?;
        if request.freetype.is_unmapped()
            && request.freetype.migratetype == MigrateType::Movable
            && !self.options.unmapped_movable
        {
            return Err(AllocError::Unsupported(
                "__GFP_UNMAPPED with __GFP_MOVABLE (set AllocOptions::unmapped_movable)",
            ));
        }
        Ok(request)
    }

    /// mirrors prepare_alloc_pages(): the zonelist and preferred zone.
    pub(crate) fn prepare_alloc<'a>(
        &'a self,
        request: &GfpRequest,
        preferred: NodeId,
        nodemask: Option<&'a Nodemask>,
    ) -> AllocContext<'a> {
        let lists = &self.zonelists[preferred.index()];
        let mut ac = AllocContext {
            zonelist: if request.this_node {
                &lists.this_node
            } else {
                &lists.fallback
            },
            nodemask,
            highest_zone: request.highest_zone,
            freetype: request.freetype,
            preferred_zone: None,
        };
        let preferred_zone = match nodemask {
            None => lists.first_eligible(request.this_node, request.highest_zone),
            Some(_) => ac.eligible(&self.zones).next(),
        };
        ac.preferred_zone = preferred_zone;
        ac
    }

    /// Allocates a block of `order` on `cpu`. mirrors __alloc_pages().
    /// Order 0 gets its own copy of the path, compiled with the order
    /// known, so that the order arithmetic of the general path (list
    /// index, page counts, the order checks) folds away for the most
    /// common request; both copies decide identically.
    #[inline(always)]
    pub(crate) fn alloc_pages_on(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
    ) -> Result<FrameIdx, AllocError> {
        if order == Order(0) {
            self.alloc_pages_of(cpu, gfp, Order(0), preferred, nodemask)
        } else {
            self.alloc_pages_of(cpu, gfp, order, preferred, nodemask)
        }
    }

    /// The body of [`Self::alloc_pages_on`].
    #[inline(always)]
    fn alloc_pages_of(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
    ) -> Result<FrameIdx, AllocError> {
        let request = self.validate_alloc(cpu, gfp, order, preferred)?;
        let zero = request.zero;
        let pfn = self.alloc_block(cpu, gfp, &request, order, preferred, nodemask)?;
        if zero {
            self.prep_zeroed(cpu, pfn, order, &request)?;
        }
        Ok(pfn)
    }

    /// Finds a block for a validated request: the preferred CPU list, the
    /// fast path, then the slow path. Only the first step is inline, so
    /// that the common case costs no call and no register spills of the
    /// general path.
    #[inline(always)]
    pub(crate) fn alloc_block(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        order: Order,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
    ) -> Result<FrameIdx, AllocError> {
        if nodemask.is_none() {
            if let Some(pfn) = self.alloc_from_preferred_pcp(cpu, gfp, request, order, preferred) {
                return Ok(pfn);
            }
        }
        self.alloc_block_general(cpu, gfp, request, order, preferred, nodemask)
    }

    /// The rest of [`Self::alloc_block`]: get_page_from_freelist() over
    /// the zonelist, then the slow path.
    #[inline(never)]
    fn alloc_block_general(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        order: Order,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
    ) -> Result<FrameIdx, AllocError> {
        let ac = self.prepare_alloc(request, preferred, nodemask);
        if let Some(pfn) = self.get_page_from_freelist(cpu, order, gfp.fastpath_alloc_flags(), &ac)
        {
            return Ok(pfn);
        }
        match self.alloc_slowpath(cpu, gfp, order, &ac) {
            Some(pfn) => Ok(pfn),
            None => {
                let Some(zone) = ac.preferred_zone else {
                    return Err(AllocError::NoMemory { order });
                };
                self.count_event(cpu, zone, VmEvent::AllocFail, 1);
                if request.freetype.is_unmapped() && !gfp.contains(Gfp::DIRECT_RECLAIM) {
                    return Err(AllocError::WouldBlock { order });
                }
                Err(AllocError::NoMemory { order })
            }
        }
    }

    /// Zeroes a new block for `__GFP_ZERO`; if that fails the block is
    /// freed again and the caller gets the error.
    pub(crate) fn prep_zeroed(
        &self,
        cpu: CpuId,
        pfn: FrameIdx,
        order: Order,
        request: &GfpRequest,
    ) -> Result<(), AllocError> {
        let zeroed = self.zero_new_block(cpu, pfn, order, request.freetype.is_unmapped());
        if zeroed.is_err() {
            self.release_new_block(cpu, pfn.pfn(), order);
        }
        zeroed
    }

    /// The first step of get_page_from_freelist() in its most common case,
    /// without the general loop: no nodemask, an order the per-CPU lists
    /// serve, the preferred zone above its low watermark and its list not
    /// empty. Anything else returns `None` having changed nothing, and the
    /// general path takes over (and decides exactly as it would have).
    #[inline(always)]
    fn alloc_from_preferred_pcp(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        order: Order,
        preferred: NodeId,
    ) -> Option<FrameIdx> {
        let list = PcpList::of(request.freetype, order, self.layout.pageblock_order)?;
        let zone = self.zonelists[preferred.index()]
            .first_eligible(request.this_node, request.highest_zone)?;
        let cpu_slot = &self.cpus[cpu.index()];
        // SAFETY: `zone` comes from a zonelist.
        let ZoneOnCpu {
            slot,
            cpu: cpu_zone,
            ..
        } = unsafe { self.zone_on_cpu(cpu_slot, zone) };
        let flags = gfp.fastpath_alloc_flags() | nofragment_flag(slot);
        if !self.zone_watermark_passes(zone, slot, order, request.highest_zone, flags) {
            return None;
        }
        let mut pcp = L::try_lock(&cpu_zone.pcp)?;
        if pcp.list_is_empty(list) {
            return None;
        }
        pcp.note_alloc();
        let pfn = pcp.pop(list)?;
        drop(pcp);
        self.frames.memmap.set_info(
            pfn,
            PageInfo::new(PageState::Allocated, order, list.recorded),
        );
        if self.options.vm_events {
            // The preferred zone itself: a NUMA hit (zone_statistics()).
            count_alloc_events(cpu_slot, &cpu_zone.events, slot.node, order.nr_pages(), 1);
        }
        Some(pfn)
    }

    #[inline]
    pub(crate) fn count_event(&self, cpu: CpuId, zone: ZoneIdx, event: VmEvent, delta: u64) {
        if self.options.vm_events {
            self.cpus[cpu.index()].zones[zone.index()]
                .events
                .add(event, delta);
        }
    }

    /// Counts an allocation of `pages` pages in `calls` calls: `pgalloc` and,
    /// as zone_statistics() does, NUMA hit/miss/foreign and local/other.
    #[inline(always)]
    pub(crate) fn account_alloc(
        &self,
        cpu: CpuId,
        preferred_zone: ZoneIdx,
        zone: ZoneIdx,
        pages: u64,
        calls: u64,
    ) {
        if !self.options.vm_events {
            return;
        }
        let cpu_slot = &self.cpus[cpu.index()];
        let node = self.zones[zone.index()].node;
        if zone == preferred_zone || node == self.zones[preferred_zone.index()].node {
            let counters = &cpu_slot.zones[zone.index()].events;
            count_alloc_events(cpu_slot, counters, node, pages, calls);
        } else {
            self.account_numa_miss(cpu, preferred_zone, zone, pages, calls);
        }
    }

    /// The NUMA miss side of [`Self::account_alloc`]: `pgalloc`, `numa_miss`
    /// and local/other on the zone allocated from, `numa_foreign` on the
    /// preferred one.
    #[cold]
    fn account_numa_miss(
        &self,
        cpu: CpuId,
        preferred_zone: ZoneIdx,
        zone: ZoneIdx,
        pages: u64,
        calls: u64,
    ) {
        let cpu_slot = &self.cpus[cpu.index()];
        let node = self.zones[zone.index()].node;
        let counters = &cpu_slot.zones[zone.index()].events;
        counters.add(VmEvent::Pgalloc, pages);
        counters.add(VmEvent::NumaMiss, calls);
        counters.add(local_or_other(cpu_slot, node), calls);
        cpu_slot.zones[preferred_zone.index()]
            .events
            .add(VmEvent::NumaForeign, calls);
    }

    /// mirrors alloc_flags_nofragment(), decided per zone at boot.
    #[inline]
    fn alloc_flags_nofragment(&self, preferred_zone: ZoneIdx) -> AllocFlags {
        nofragment_flag(&self.zones[preferred_zone.index()])
    }

    /// The watermark step of get_page_from_freelist() for one zone: above
    /// the high watermark (boost included, as high_wmark_pages() reads it)
    /// passes at once; an allocation that finds the zone below it sets
    /// `ZONE_BELOW_HIGH` (which shrinks the per-CPU lists' `high` on later
    /// frees); then the allocation's own watermark decides.
    #[inline(always)]
    fn zone_watermark_passes(
        &self,
        zone: ZoneIdx,
        slot: &ZoneSlot<L>,
        order: Order,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        if !slot.flags.below_high() {
            let high = slot.watermarks.high + slot.watermark_boost.get();
            if self.zone_watermark_ok(zone, slot, order, high, highest_zone, flags) {
                return true;
            }
            slot.flags.set_below_high(true);
        }
        self.zone_watermark_fast(zone, slot, order, 0, highest_zone, flags)
    }

    /// zone_watermark_fast() at the watermark `flags` name as wmark_pages()
    /// reads it (the zone's mark plus its boost) plus `extra` pages; an
    /// order-0 `__GFP_HIGH` request at the min watermark ignores the boost,
    /// so that kswapd is woken only below the low watermark.
    #[inline]
    pub(crate) fn zone_watermark_fast(
        &self,
        zone: ZoneIdx,
        slot: &ZoneSlot<L>,
        order: Order,
        extra: u64,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        let index = flags.watermark_index();
        let mark = slot.watermarks.get(index) + extra;
        let boost = slot.watermark_boost.get();
        if self.zone_watermark_ok(zone, slot, order, mark + boost, highest_zone, flags) {
            return true;
        }
        order == Order(0)
            && boost > 0
            && index == 0
            && flags.contains(AllocFlags::MIN_RESERVE)
            && self.zone_watermark_ok(zone, slot, order, mark, highest_zone, flags)
    }

    /// mirrors zone_watermark_fast() at a given mark: for order 0, free
    /// pages above the mark (HIGHATOMIC reserves excluded unless the caller
    /// may use them) pass at once; everything else takes __zone_watermark_ok().
    #[inline]
    pub(crate) fn zone_watermark_ok(
        &self,
        zone: ZoneIdx,
        slot: &ZoneSlot<L>,
        order: Order,
        mark: u64,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        let free_pages = slot.free_pages.get();
        let reserved_highatomic = slot.reserved_highatomic.get();
        let lowmem_reserve = slot.lowmem_reserve[highest_zone.index()];
        if order == Order(0) {
            let reserved = if flags.intersects(AllocFlags::RESERVES) {
                0
            } else {
                reserved_highatomic
            };
            let usable = free_pages - free_pages.min(reserved);
            if usable > mark + lowmem_reserve {
                return true;
            }
        }
        // Built here, not before the order-0 test, so that the common case
        // keeps the counts in registers.
        let free = ZoneFree {
            free_pages,
            reserved_highatomic,
            lowmem_reserve,
        };
        self.zone_watermark_slow(zone, order, free, mark, flags)
    }

    /// The rest of [`Self::zone_watermark_ok`]: __zone_watermark_ok(), and
    /// for higher orders a free block of at least the order.
    #[inline(never)]
    fn zone_watermark_slow(
        &self,
        zone: ZoneIdx,
        order: Order,
        free: ZoneFree,
        mark: u64,
        flags: AllocFlags,
    ) -> bool {
        if !watermark_free_ok(free, order, mark, flags) {
            return false;
        }
        if order == Order(0) {
            return true;
        }
        let highatomic = flags.intersects(AllocFlags::HIGHATOMIC | AllocFlags::OOM);
        self.lock_zone(zone)
            .has_block_at_or_above(order, highatomic)
    }

    /// Walks the zonelist for a zone above its watermark and takes a block
    /// from it. mirrors get_page_from_freelist().
    pub(crate) fn get_page_from_freelist(
        &self,
        cpu: CpuId,
        order: Order,
        alloc_flags: AllocFlags,
        ac: &AllocContext,
    ) -> Option<FrameIdx> {
        let preferred_zone = ac.preferred_zone?;
        let mut flags = alloc_flags | self.alloc_flags_nofragment(preferred_zone);
        let preferred_node = self.zones[preferred_zone.index()].node;
        'retry: loop {
            let no_fallback = flags.contains(AllocFlags::NOFRAGMENT);
            for zone in ac.eligible(&self.zones) {
                let slot = &self.zones[zone.index()];
                if no_fallback
                    && self.layout.nodes.len() > 1
                    && zone != preferred_zone
                    && slot.node != preferred_node
                {
                    flags.remove(AllocFlags::NOFRAGMENT);
                    continue 'retry;
                }
                if !self.zone_watermark_passes(zone, slot, order, ac.highest_zone, flags)
                    && !flags.contains(AllocFlags::NO_WATERMARKS)
                {
                    continue;
                }
                if let Some(pfn) =
                    self.rmqueue(cpu, preferred_zone, zone, order, flags, ac.freetype)
                {
                    if flags.contains(AllocFlags::HIGHATOMIC) {
                        let mut buddy = self.lock_zone(zone);
                        buddy.reserve_highatomic_pageblock(&self.frames, pfn, order);
                        self.publish(zone, &buddy);
                    }
                    return Some(pfn);
                }
            }
            if no_fallback {
                flags.remove(AllocFlags::NOFRAGMENT);
                continue 'retry;
            }
            return None;
        }
    }

    /// Takes a block from one zone: its per-CPU list for small orders, else
    /// the buddy lists, else a pageblock converted to or from the direct
    /// map. mirrors rmqueue().
    #[inline]
    fn rmqueue(
        &self,
        cpu: CpuId,
        preferred_zone: ZoneIdx,
        zone: ZoneIdx,
        order: Order,
        flags: AllocFlags,
        freetype: FreeType,
    ) -> Option<FrameIdx> {
        let pfn = PcpList::of(freetype, order, self.layout.pageblock_order)
            .and_then(|list| self.rmqueue_pcplist(cpu, zone, list, flags))
            .or_else(|| self.rmqueue_buddy(zone, order, flags, freetype))
            .or_else(|| self.rmqueue_direct_map(zone, order, flags, freetype))?;
        self.frames.memmap.set_info(
            pfn,
            PageInfo::new(
                PageState::Allocated,
                order,
                freetype
                    .index()
                    .unwrap_or(FreeTypeIdx::of(MigrateType::Unmovable)),
            ),
        );
        self.account_alloc(cpu, preferred_zone, zone, order.nr_pages(), 1);
        Some(pfn)
    }

    /// mirrors rmqueue_pcplist(): try-lock this CPU's lists; a contended lock
    /// sends the caller to the buddy lists.
    #[inline]
    fn rmqueue_pcplist(
        &self,
        cpu: CpuId,
        zone: ZoneIdx,
        list: PcpList,
        flags: AllocFlags,
    ) -> Option<FrameIdx> {
        let Some(mut pcp) = L::try_lock(&self.cpus[cpu.index()].zones[zone.index()].pcp) else {
            self.count_event(cpu, zone, VmEvent::PcpTrylockFail, 1);
            return None;
        };
        pcp.note_alloc();
        self.take_from_pcp_list(&mut pcp, zone, list, flags)
    }

    /// Pops a page from a per-CPU list, refilling it first when it is empty.
    /// mirrors __rmqueue_pcplist().
    #[inline]
    pub(crate) fn take_from_pcp_list(
        &self,
        pcp: &mut PerCpuPages,
        zone: ZoneIdx,
        list: PcpList,
        flags: AllocFlags,
    ) -> Option<FrameIdx> {
        if pcp.list_is_empty(list) {
            self.refill_pcp_list(pcp, zone, list, flags);
        }
        pcp.pop(list)
    }

    /// Moves a batch of blocks from the buddy lists to a per-CPU list under
    /// one zone-lock acquisition. mirrors rmqueue_bulk().
    #[inline(never)]
    pub(crate) fn refill_pcp_list(
        &self,
        pcp: &mut PerCpuPages,
        zone: ZoneIdx,
        list: PcpList,
        flags: AllocFlags,
    ) {
        let PcpList {
            order,
            freetype,
            recorded,
            ..
        } = list;
        let below_high = self.zones[zone.index()].flags.below_high();
        let batch = pcp.refill_count(order, below_high);
        let mut buddy = self.lock_zone(zone);
        let mut mode = RmqueueMode::Normal;
        let listed = PageInfo::new(PageState::Pcp, order, recorded);
        let taken = (0..batch).map_while(|_| {
            let pfn = buddy.take_block(&self.frames, order, freetype, flags, &mut mode)?;
            self.frames.memmap.set_info(pfn, listed);
            Some(pfn)
        });
        pcp.fill_empty(list, taken);
        buddy.events_mut().pcp_refill += 1;
        self.publish(zone, &buddy);
    }

    /// mirrors rmqueue_buddy(): the zone lock, the HIGHATOMIC reserve first
    /// for high-order atomic requests, and as a last resort for non-blocking ones.
    fn rmqueue_buddy(
        &self,
        zone: ZoneIdx,
        order: Order,
        flags: AllocFlags,
        freetype: FreeType,
    ) -> Option<FrameIdx> {
        let mut buddy = self.lock_zone(zone);
        let highatomic = FreeTypeIdx::of(MigrateType::HighAtomic);
        let mut pfn = None;
        if order > Order(0) && flags.contains(AllocFlags::HIGHATOMIC) {
            pfn = buddy.rmqueue_smallest(&self.frames, order, highatomic);
        }
        if pfn.is_none() {
            pfn = buddy.take_block(
                &self.frames,
                order,
                freetype,
                flags,
                &mut RmqueueMode::Normal,
            );
            if pfn.is_none() && flags.intersects(AllocFlags::OOM | AllocFlags::NON_BLOCK) {
                pfn = buddy.rmqueue_smallest(&self.frames, order, highatomic);
            }
        }
        self.publish(zone, &buddy);
        pfn
    }

    /// The slow path without reclaim. mirrors the parts of
    /// __alloc_pages_slowpath() that apply: the min watermark and reserves,
    /// `__GFP_MEMALLOC`, then (for callers that may reclaim) unreserving the
    /// HIGHATOMIC blocks and draining every CPU's lists before giving up.
    fn alloc_slowpath(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        ac: &AllocContext,
    ) -> Option<FrameIdx> {
        // No eligible zone (a node mask without a node of this machine):
        // give up before draining or unreserving anything, as the kernel's
        // `if (!ac->preferred_zoneref->zone) goto nopage;` does.
        ac.preferred_zone?;
        let flags = gfp.slowpath_alloc_flags(order);
        if let Some(pfn) = self.get_page_from_freelist(cpu, order, flags, ac) {
            return Some(pfn);
        }
        if gfp.contains(Gfp::MEMALLOC) && !gfp.contains(Gfp::NOMEMALLOC) {
            let reserve = flags | AllocFlags::NO_WATERMARKS;
            if let Some(pfn) = self.get_page_from_freelist(cpu, order, reserve, ac) {
                return Some(pfn);
            }
        }
        if !gfp.contains(Gfp::DIRECT_RECLAIM) {
            return None;
        }
        for force in [false, true] {
            let released = self.unreserve_highatomic(ac, force);
            if !force {
                self.drain_all_pages();
            }
            if !force || released {
                if let Some(pfn) = self.get_page_from_freelist(cpu, order, flags, ac) {
                    return Some(pfn);
                }
            }
        }
        None
    }

    /// mirrors unreserve_highatomic_pageblock() over the allocation's zonelist.
    fn unreserve_highatomic(&self, ac: &AllocContext, force: bool) -> bool {
        for zone in ac.eligible(&self.zones) {
            let mut buddy = self.lock_zone(zone);
            let released =
                buddy.unreserve_highatomic_pageblock(&self.frames, ac.freetype.migratetype, force);
            self.publish(zone, &buddy);
            if released {
                return true;
            }
        }
        false
    }
}

/// `ALLOC_NOFRAGMENT` if allocations preferring this zone avoid fallbacks
/// that fragment (alloc_flags_nofragment(), decided per zone at boot).
#[inline(always)]
fn nofragment_flag<L: LockFamily>(slot: &ZoneSlot<L>) -> AllocFlags {
    if slot.nofragment {
        AllocFlags::NOFRAGMENT
    } else {
        AllocFlags::empty()
    }
}

/// `numa_local` when the zone's node is the CPU's, else `numa_other`.
#[inline(always)]
fn local_or_other<L: LockFamily>(cpu_slot: &CpuSlot<L>, node: NodeId) -> VmEvent {
    if node == cpu_slot.node {
        VmEvent::NumaLocal
    } else {
        VmEvent::NumaOther
    }
}

/// The events of an allocation from a zone of the preferred node (a NUMA
/// hit): `pgalloc`, `numa_hit` and local/other, on `counters`, `cpu_slot`'s
/// counters of a zone whose node is `node`.
#[inline(always)]
pub(super) fn count_alloc_events<L: LockFamily>(
    cpu_slot: &CpuSlot<L>,
    counters: &ZoneCounters,
    node: NodeId,
    pages: u64,
    calls: u64,
) {
    counters.add(VmEvent::Pgalloc, pages);
    counters.add(VmEvent::NumaHit, calls);
    counters.add(local_or_other(cpu_slot, node), calls);
}
