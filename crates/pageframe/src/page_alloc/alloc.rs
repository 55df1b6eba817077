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

use super::events::VmEvent;
use super::{PageAllocator, ZoneSlot};
use crate::error::AllocError;
use crate::freetype::MigrateType;
use crate::gfp::{AllocFlags, Gfp, GfpRequest};
use crate::memmap::{PageInfo, PageState};
use crate::pcp::PerCpuPages;
use crate::sync::LockFamily;
use crate::types::{CpuId, NodeId, Nodemask, Order, ZoneType};
use crate::zone::watermark::{watermark_free_ok, ZoneFree};
use crate::zone::RmqueueMode;

/// What one allocation call works with (`struct alloc_context`).
pub(crate) struct AllocContext<'a> {
    pub(crate) zonelist: &'a [u16],
    pub(crate) nodemask: Option<&'a Nodemask>,
    pub(crate) highest_zone: ZoneType,
    pub(crate) migratetype: MigrateType,
    pub(crate) preferred_zone: Option<u16>,
}

impl AllocContext<'_> {
    /// The zones of the zonelist this allocation may use, in order
    /// (for_each_zone_zonelist_nodemask()).
    #[inline]
    pub(crate) fn eligible<'z, L: LockFamily>(
        &'z self,
        zones: &'z [ZoneSlot<L>],
    ) -> impl Iterator<Item = u16> + 'z {
        self.zonelist.iter().copied().filter(move |&zone| {
            let slot = &zones[zone as usize];
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
        if order.0 > self.layout.max_order {
            return Err(AllocError::OrderTooLarge {
                order,
                max: Order(self.layout.max_order),
            });
        }
        if preferred.index() >= self.layout.nodes.len() {
            return Err(AllocError::NoSuchNode(preferred));
        }
        if cpu.index() >= self.cpus.len() {
            return Err(AllocError::NoSuchCpu(cpu));
        }
        gfp.request()
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
            migratetype: request.freetype.migratetype,
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
    pub(crate) fn alloc_pages_on(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
    ) -> Result<u32, AllocError> {
        let request = self.validate_alloc(cpu, gfp, order, preferred)?;
        if nodemask.is_none() {
            if let Some(pfn) = self.alloc_from_preferred_pcp(cpu, gfp, &request, order.0, preferred)
            {
                return Ok(pfn);
            }
        }
        let ac = self.prepare_alloc(&request, preferred, nodemask);
        if let Some(pfn) =
            self.get_page_from_freelist(cpu, order.0, gfp.fastpath_alloc_flags(), &ac)
        {
            return Ok(pfn);
        }
        match self.alloc_slowpath(cpu, gfp, order.0, &ac) {
            Some(pfn) => Ok(pfn),
            None => {
                if let Some(zone) = ac.preferred_zone {
                    self.count_event(cpu, zone as usize, VmEvent::AllocFail, 1);
                }
                Err(AllocError::NoMemory { order })
            }
        }
    }

    /// The first step of get_page_from_freelist() in its most common case,
    /// without the general loop: no nodemask, an order the per-CPU lists
    /// serve, the preferred zone above its low watermark and its list not
    /// empty. Anything else returns `None` having changed nothing, and the
    /// general path takes over (and decides exactly as it would have).
    #[inline]
    fn alloc_from_preferred_pcp(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        order: u8,
        preferred: NodeId,
    ) -> Option<u32> {
        if !PerCpuPages::allowed_order(order, self.layout.pageblock_order) {
            return None;
        }
        let zone = self.zonelists[preferred.index()]
            .first_eligible(request.this_node, request.highest_zone)?;
        let flags = gfp.fastpath_alloc_flags() | self.alloc_flags_nofragment(zone);
        let mark = self.zones[zone as usize]
            .watermarks
            .get(flags.watermark_index());
        if !self.zone_watermark_ok(zone, order, mark, request.highest_zone, flags) {
            return None;
        }
        let migratetype = request.freetype.migratetype;
        let pindex = PerCpuPages::pindex(migratetype.index(), order);
        let mut pcp = L::try_lock(&self.cpus[cpu.index()].pcp[zone as usize])?;
        if pcp.list_is_empty(pindex) {
            return None;
        }
        pcp.note_alloc();
        let pfn = pcp.pop(pindex, order)?;
        drop(pcp);
        self.frames.memmap.set_info(
            pfn,
            PageInfo::new(PageState::Allocated, Order(order), migratetype.index()),
        );
        self.account_alloc(cpu, zone, zone, 1 << order, 1);
        Some(pfn)
    }

    #[inline]
    pub(crate) fn count_event(&self, cpu: CpuId, zone: usize, event: VmEvent, delta: u64) {
        if self.options.vm_events {
            self.cpus[cpu.index()].events.add(zone, event, delta);
        }
    }

    /// Counts an allocation of `pages` pages in `calls` calls: `pgalloc` and,
    /// as zone_statistics() does, NUMA hit/miss/foreign and local/other.
    #[inline]
    pub(crate) fn account_alloc(
        &self,
        cpu: CpuId,
        preferred_zone: u16,
        zone: u16,
        pages: u64,
        calls: u64,
    ) {
        if !self.options.vm_events {
            return;
        }
        let cpu_slot = &self.cpus[cpu.index()];
        let counters = cpu_slot.events.zone(zone as usize);
        let node = self.zones[zone as usize].node;
        counters.add(VmEvent::Pgalloc, pages);
        if node == self.zones[preferred_zone as usize].node {
            counters.add(VmEvent::NumaHit, calls);
        } else {
            counters.add(VmEvent::NumaMiss, calls);
            cpu_slot
                .events
                .add(preferred_zone as usize, VmEvent::NumaForeign, calls);
        }
        let local = if node == cpu_slot.node {
            VmEvent::NumaLocal
        } else {
            VmEvent::NumaOther
        };
        counters.add(local, calls);
    }

    /// mirrors alloc_flags_nofragment(), decided per zone at boot.
    #[inline]
    fn alloc_flags_nofragment(&self, preferred_zone: u16) -> AllocFlags {
        if self.zones[preferred_zone as usize].nofragment {
            AllocFlags::NOFRAGMENT
        } else {
            AllocFlags::empty()
        }
    }

    /// mirrors zone_watermark_fast() and __zone_watermark_ok().
    pub(crate) fn zone_watermark_ok(
        &self,
        zone: u16,
        order: u8,
        mark: u64,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> bool {
        let slot = &self.zones[zone as usize];
        let free = ZoneFree {
            free_pages: slot.free_pages.get(),
            reserved_highatomic: slot.reserved_highatomic.get(),
            lowmem_reserve: slot.lowmem_reserve[highest_zone.index()],
        };
        if order == 0 {
            let reserved = if flags.intersects(AllocFlags::RESERVES) {
                0
            } else {
                free.reserved_highatomic
            };
            let usable = free.free_pages - free.free_pages.min(reserved);
            if usable > mark + free.lowmem_reserve {
                return true;
            }
        }
        if !watermark_free_ok(free, order, mark, flags) {
            return false;
        }
        if order == 0 {
            return true;
        }
        let highatomic = flags.intersects(AllocFlags::HIGHATOMIC | AllocFlags::OOM);
        self.lock_zone(zone as usize)
            .has_block_at_or_above(order as usize, highatomic)
    }

    /// Walks the zonelist for a zone above its watermark and takes a block
    /// from it. mirrors get_page_from_freelist().
    pub(crate) fn get_page_from_freelist(
        &self,
        cpu: CpuId,
        order: u8,
        alloc_flags: AllocFlags,
        ac: &AllocContext,
    ) -> Option<u32> {
        let preferred_zone = ac.preferred_zone?;
        let mut flags = alloc_flags | self.alloc_flags_nofragment(preferred_zone);
        let preferred_node = self.zones[preferred_zone as usize].node;
        'retry: loop {
            let no_fallback = flags.contains(AllocFlags::NOFRAGMENT);
            for zone in ac.eligible(&self.zones) {
                let slot = &self.zones[zone as usize];
                if no_fallback
                    && self.layout.nodes.len() > 1
                    && zone != preferred_zone
                    && slot.node != preferred_node
                {
                    flags.remove(AllocFlags::NOFRAGMENT);
                    continue 'retry;
                }
                let mark = slot.watermarks.get(flags.watermark_index());
                if !flags.contains(AllocFlags::NO_WATERMARKS)
                    && !self.zone_watermark_ok(zone, order, mark, ac.highest_zone, flags)
                {
                    continue;
                }
                if let Some(pfn) =
                    self.rmqueue(cpu, preferred_zone, zone, order, flags, ac.migratetype)
                {
                    if flags.contains(AllocFlags::HIGHATOMIC) {
                        let mut buddy = self.lock_zone(zone as usize);
                        buddy.reserve_highatomic_pageblock(&self.frames, pfn, order);
                        self.publish(zone as usize, &buddy);
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
    /// the buddy lists. mirrors rmqueue().
    #[inline]
    fn rmqueue(
        &self,
        cpu: CpuId,
        preferred_zone: u16,
        zone: u16,
        order: u8,
        flags: AllocFlags,
        migratetype: MigrateType,
    ) -> Option<u32> {
        let pfn = if PerCpuPages::allowed_order(order, self.layout.pageblock_order) {
            match self.rmqueue_pcplist(cpu, zone as usize, order, migratetype, flags) {
                Some(pfn) => Some(pfn),
                None => self.rmqueue_buddy(zone as usize, order, flags, migratetype),
            }
        } else {
            self.rmqueue_buddy(zone as usize, order, flags, migratetype)
        }?;
        self.frames.memmap.set_info(
            pfn,
            PageInfo::new(PageState::Allocated, Order(order), migratetype.index()),
        );
        self.account_alloc(cpu, preferred_zone, zone, 1 << order, 1);
        Some(pfn)
    }

    /// mirrors rmqueue_pcplist(): try-lock this CPU's lists; a contended lock
    /// sends the caller to the buddy lists.
    #[inline]
    fn rmqueue_pcplist(
        &self,
        cpu: CpuId,
        zone: usize,
        order: u8,
        migratetype: MigrateType,
        flags: AllocFlags,
    ) -> Option<u32> {
        let Some(mut pcp) = L::try_lock(&self.cpus[cpu.index()].pcp[zone]) else {
            self.count_event(cpu, zone, VmEvent::PcpTrylockFail, 1);
            return None;
        };
        pcp.note_alloc();
        let pindex = PerCpuPages::pindex(migratetype.index(), order);
        self.rmqueue_pcp_list(&mut pcp, zone, pindex, order, migratetype, flags)
    }

    /// Pops a page from a per-CPU list, refilling it first when it is empty.
    /// mirrors __rmqueue_pcplist().
    #[inline]
    pub(crate) fn rmqueue_pcp_list(
        &self,
        pcp: &mut PerCpuPages,
        zone: usize,
        pindex: usize,
        order: u8,
        migratetype: MigrateType,
        flags: AllocFlags,
    ) -> Option<u32> {
        if pcp.list_is_empty(pindex) {
            self.refill_pcp_list(pcp, zone, pindex, order, migratetype, flags);
        }
        pcp.pop(pindex, order)
    }

    /// Moves a batch of blocks from the buddy lists to a per-CPU list under
    /// one zone-lock acquisition. mirrors rmqueue_bulk().
    #[inline(never)]
    pub(crate) fn refill_pcp_list(
        &self,
        pcp: &mut PerCpuPages,
        zone: usize,
        pindex: usize,
        order: u8,
        migratetype: MigrateType,
        flags: AllocFlags,
    ) {
        let batch = pcp.refill_count(order);
        let mut buddy = self.lock_zone(zone);
        let mut mode = RmqueueMode::Normal;
        let listed = PageInfo::new(PageState::Pcp, Order(order), migratetype.index());
        let taken = (0..batch).map_while(|_| {
            let pfn = buddy.rmqueue(&self.frames, order, migratetype, flags, &mut mode)?;
            self.frames.memmap.set_info(pfn, listed);
            Some(pfn)
        });
        pcp.fill_empty(pindex, order, taken);
        buddy.events_mut().pcp_refill += 1;
        self.publish(zone, &buddy);
    }

    /// mirrors rmqueue_buddy(): the zone lock, the HIGHATOMIC reserve first
    /// for high-order atomic requests, and as a last resort for non-blocking ones.
    fn rmqueue_buddy(
        &self,
        zone: usize,
        order: u8,
        flags: AllocFlags,
        migratetype: MigrateType,
    ) -> Option<u32> {
        let mut buddy = self.lock_zone(zone);
        let highatomic = MigrateType::HighAtomic.index();
        let mut pfn = None;
        if order > 0 && flags.contains(AllocFlags::HIGHATOMIC) {
            pfn = buddy.rmqueue_smallest(&self.frames, order, highatomic);
        }
        if pfn.is_none() {
            pfn = buddy.rmqueue(
                &self.frames,
                order,
                migratetype,
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
    fn alloc_slowpath(&self, cpu: CpuId, gfp: Gfp, order: u8, ac: &AllocContext) -> Option<u32> {
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
            let mut buddy = self.lock_zone(zone as usize);
            let released =
                buddy.unreserve_highatomic_pageblock(&self.frames, ac.migratetype, force);
            self.publish(zone as usize, &buddy);
            if released {
                return true;
            }
        }
        false
    }
}
