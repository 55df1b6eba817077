//! The allocation paths: fast path at the low watermark, slow path at the min
//! watermark with reserves, per-CPU lists for small orders, the buddy lists
//! for the rest. mirrors __alloc_pages(), get_page_from_freelist(),
//! rmqueue(), rmqueue_pcplist(), rmqueue_bulk(), rmqueue_buddy() and
//! __alloc_pages_slowpath(); the watermark checks are in `watermark`.
//!
//! The fast path walks the zonelist in the caller's frame to the first zone
//! that passes its watermark and takes a block from that zone's per-CPU
//! list, with the same eligibility and watermark rules as
//! get_page_from_freelist(); the walk stops where the kernel's would restart
//! without `ALLOC_NOFRAGMENT` (another node). Anything else falls to the
//! general walk, which decides as the kernel's single walk would
//! (`tests/fast_path.rs` runs both on twin allocators and compares).
//!
//! The bare allocator has no reclaim, compaction or OOM killer: where the
//! kernel would reclaim, its slow path does what the kernel does after
//! reclaim made no progress (unreserve the HIGHATOMIC blocks, drain every
//! CPU's lists, retry) and then fails; `__GFP_NOFAIL` therefore fails too,
//! rather than loop forever. The reclaim layer runs the stages of the slow
//! path itself, with its reclaims between them ([`AllocStage`]).
//! The NUMA events of an allocation are counted in `numa_events`.

use super::error::AllocError;
use super::events::VmEvent;
use super::numa_events::{account_numa_miss, count_alloc_events};
use super::{CpuSlot, CpuZone, PageAllocator, ZoneOnCpu, ZoneSlot};
use crate::freetype::{FreeType, FreeTypeIdx, MigrateType};
use crate::gfp::{AllocFlags, Gfp, GfpRequest};
use crate::memmap::{FrameIdx, PageInfo, PageState};
use crate::pcp::{PcpList, PerCpuPages};
use crate::sync::LockFamily;
use crate::types::{CpuId, NodeId, Nodemask, Order, ZoneIdx, ZoneType};
use crate::zone::RmqueueMode;
use std::ops::ControlFlow;

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
        self.zonelist
            .iter()
            .copied()
            .filter(move |&zone| self.allows(&zones[zone.index()]))
    }

    /// True when this allocation may use the zone of `slot`.
    #[inline(always)]
    pub(crate) fn allows<L: LockFamily>(&self, slot: &ZoneSlot<L>) -> bool {
        slot.zone_type <= self.highest_zone
            && self.nodemask.is_none_or(|mask| mask.contains(slot.node))
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
            zonelist: lists.for_request(request.this_node),
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
        let stage = AllocStage::Standalone;
        if order == Order(0) {
            self.alloc_pages_staged(cpu, gfp, Order(0), preferred, nodemask, stage)
        } else {
            self.alloc_pages_staged(cpu, gfp, order, preferred, nodemask, stage)
        }
    }

    /// The body of [`Self::alloc_pages_on`], as far as `stage` goes (the
    /// reclaim layer runs the slow path's reclaim between its stages):
    /// validated, found, and zeroed for `__GFP_ZERO`.
    #[inline(always)]
    pub(crate) fn alloc_pages_staged(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        stage: AllocStage,
    ) -> Result<FrameIdx, AllocError> {
        let request = self.validate_alloc(cpu, gfp, order, preferred)?;
        let zero = request.zero;
        let pfn = self.alloc_block(cpu, gfp, &request, order, preferred, nodemask, stage)?;
        if zero {
            self.prep_zeroed(cpu, pfn, order, &request)?;
        }
        Ok(pfn)
    }

    /// Finds a block for a validated request, as far as `stage` goes: the
    /// preferred CPU list, the fast path, then the slow path. Only the
    /// first step is inline, so that the common case costs no call and no
    /// register spills of the general path.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alloc_block(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        order: Order,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        stage: AllocStage,
    ) -> Result<FrameIdx, AllocError> {
        let fast = match (stage, nodemask) {
            // The slow path's own attempts: no walk at the low watermark.
            (AllocStage::InSlowpath, _) => FastWalk::NoZonePassed,
            (_, None) => match self.alloc_from_pcp_lists(cpu, gfp, request, order, preferred) {
                Ok(pfn) => return Ok(pfn),
                Err(fast) => fast,
            },
            (_, Some(_)) => FastWalk::Untried,
        };
        self.alloc_block_general(cpu, gfp, request, order, preferred, nodemask, fast, stage)
    }

    /// The rest of [`Self::alloc_block`]: get_page_from_freelist() over
    /// the zonelist, then the slow path. `fast` is what the fast path
    /// found: the first walk skips a preferred zone already found below its
    /// watermark, and when no zone passed at all the walk is not made again
    /// (6.12 makes one fast walk before its slow path).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn alloc_block_general(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        order: Order,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        fast: FastWalk,
        stage: AllocStage,
    ) -> Result<FrameIdx, AllocError> {
        let ac = self.prepare_alloc(request, preferred, nodemask);
        if fast != FastWalk::NoZonePassed {
            let flags = gfp.fastpath_alloc_flags();
            let preferred_checked = fast == FastWalk::PreferredBelowWatermark;
            if let Some(pfn) =
                self.get_page_from_freelist(cpu, order, flags, &ac, preferred_checked)
            {
                return Ok(pfn);
            }
        }
        match self.alloc_slowpath(cpu, gfp, order, &ac, stage) {
            Some(pfn) => Ok(pfn),
            None => {
                let Some(zone) = ac.preferred_zone else {
                    return Err(AllocError::NoMemory { order });
                };
                // A staged attempt is not the call's end: the reclaim
                // layer counts the failure of the whole call.
                if stage == AllocStage::Standalone {
                    self.count_event(cpu, zone, VmEvent::AllocFail, 1);
                }
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

    /// get_page_from_freelist() in its most common case, without the
    /// general loop: no nodemask, an order the per-CPU lists serve, and the
    /// first zone of the walk that passes its watermark (the preferred zone,
    /// or one [`Self::fast_fallback_zone`] finds) has a block on its list.
    /// Anything else changes nothing but the zones' `ZONE_BELOW_HIGH` (as
    /// the walk would set them) and says what the fast path found, and the
    /// general path decides exactly as it would have.
    #[inline(always)]
    fn alloc_from_pcp_lists(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        order: Order,
        preferred: NodeId,
    ) -> Result<FrameIdx, FastWalk> {
        let Some(list) = PcpList::of(request.freetype, order, self.layout.pageblock_order) else {
            return Err(FastWalk::Untried);
        };
        let lists = &self.zonelists[preferred.index()];
        let Some(first) = lists.first_eligible(request.this_node, request.highest_zone) else {
            return Err(FastWalk::Untried);
        };
        let cpu_slot = &self.cpus[cpu.index()];
        // SAFETY: `first` comes from a zonelist.
        let preferred_zone = unsafe { self.zone_on_cpu(cpu_slot, first) };
        let flags = gfp.fastpath_alloc_flags() | nofragment_flag(preferred_zone.slot);
        if self.zone_watermark_passes(preferred_zone.slot, order, request.highest_zone, flags) {
            let pfn = self
                .pop_pcp_list(preferred_zone.cpu, list, order)
                .ok_or(FastWalk::Untried)?;
            if self.options.vm_events {
                // The preferred zone itself: a NUMA hit (zone_statistics()).
                let (counters, node) = (&preferred_zone.cpu.events, preferred_zone.slot.node);
                count_alloc_events(cpu_slot, counters, node, order.nr_pages(), 1);
            }
            return Ok(pfn);
        }
        let walk = (
            cpu_slot,
            preferred_zone,
            lists.for_request(request.this_node),
        );
        let zone = self.fast_fallback_zone(walk, order, request.highest_zone, flags)?;
        let pfn = self
            .pop_pcp_list(zone.cpu, list, order)
            .ok_or(FastWalk::PreferredBelowWatermark)?;
        self.account_alloc(cpu_slot, preferred_zone, zone, order.nr_pages(), 1);
        Ok(pfn)
    }

    /// The fast path's walk on from a preferred zone below its watermark:
    /// the next zone of `zonelist` the allocation may use that passes its
    /// own, as get_page_from_freelist() goes on. `walk` is the allocating
    /// CPU, its state for the preferred zone and the zonelist. The walk ends
    /// where the kernel's would restart without `ALLOC_NOFRAGMENT` (a zone
    /// of another node, with more than one node): the general walk, which
    /// restarts, decides (`PreferredBelowWatermark`). `NoZonePassed` when
    /// no zone passes: the kernel's restart at the end of the list checks
    /// the same watermarks again, and `ALLOC_NOFRAGMENT` does not change a
    /// watermark check. Inline, so that the order-0 copy of the path
    /// checks with the order known: out of line, an order-0 zone-fallback
    /// pair cost about 60 instructions more (callgrind).
    #[inline(always)]
    fn fast_fallback_zone<'a>(
        &'a self,
        walk: (&'a CpuSlot<L>, ZoneOnCpu<'a, L>, &[ZoneIdx]),
        order: Order,
        highest_zone: ZoneType,
        flags: AllocFlags,
    ) -> Result<ZoneOnCpu<'a, L>, FastWalk> {
        let (cpu_slot, preferred, zonelist) = walk;
        let stop_at_other_nodes =
            flags.contains(AllocFlags::NOFRAGMENT) && self.layout.nodes.len() > 1;
        for &zone in zonelist {
            // SAFETY: `zone` comes from a zonelist.
            let on_cpu = unsafe { self.zone_on_cpu(cpu_slot, zone) };
            let slot = on_cpu.slot;
            if zone == preferred.index || slot.zone_type > highest_zone {
                continue;
            }
            if stop_at_other_nodes && slot.node != preferred.slot.node {
                return Err(FastWalk::PreferredBelowWatermark);
            }
            if self.zone_watermark_passes(slot, order, highest_zone, flags) {
                return Ok(on_cpu);
            }
        }
        Err(FastWalk::NoZonePassed)
    }

    /// Pops a block from a per-CPU list that has one, without refilling
    /// it: `None`, having changed nothing, when the lock is contended or the
    /// list is empty. The common case of rmqueue_pcplist().
    #[inline(always)]
    fn pop_pcp_list(&self, cpu_zone: &CpuZone<L>, list: PcpList, order: Order) -> Option<FrameIdx> {
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
        Some(pfn)
    }

    #[inline]
    pub(crate) fn count_event(&self, cpu: CpuId, zone: ZoneIdx, event: VmEvent, delta: u64) {
        self.count_cpu_zone_event(&self.cpus[cpu.index()].zones[zone.index()], event, delta);
    }

    /// [`Self::count_event`] on a CPU's state for a zone already at hand.
    #[inline]
    fn count_cpu_zone_event(&self, cpu_zone: &CpuZone<L>, event: VmEvent, delta: u64) {
        if self.options.vm_events {
            cpu_zone.events.add(event, delta);
        }
    }

    /// Counts an allocation of `pages` pages in `calls` calls: `pgalloc` and,
    /// as zone_statistics() does, NUMA hit/miss/foreign and local/other.
    /// `cpu_slot` is the allocating CPU, `preferred` and `zone` its state
    /// for the preferred zone and for the zone allocated from.
    #[inline(always)]
    pub(crate) fn account_alloc(
        &self,
        cpu_slot: &CpuSlot<L>,
        preferred: ZoneOnCpu<'_, L>,
        zone: ZoneOnCpu<'_, L>,
        pages: u64,
        calls: u64,
    ) {
        if !self.options.vm_events {
            return;
        }
        let node = zone.slot.node;
        if zone.index == preferred.index || node == preferred.slot.node {
            count_alloc_events(cpu_slot, &zone.cpu.events, node, pages, calls);
        } else {
            account_numa_miss(cpu_slot, preferred, zone, pages, calls);
        }
    }

    /// Walks the zonelist for a zone above its watermark and takes a block
    /// from it. `preferred_checked`: the fast path has just found the
    /// preferred zone (the walk's first) below its watermark with these
    /// flags, so the first walk starts after it (the kernel checks each
    /// zone once per walk). mirrors get_page_from_freelist().
    pub(crate) fn get_page_from_freelist(
        &self,
        cpu: CpuId,
        order: Order,
        alloc_flags: AllocFlags,
        ac: &AllocContext,
        preferred_checked: bool,
    ) -> Option<FrameIdx> {
        let cpu_slot = &self.cpus[cpu.index()];
        // SAFETY: the preferred zone comes from a zonelist.
        let preferred = unsafe { self.zone_on_cpu(cpu_slot, ac.preferred_zone?) };
        let start = (cpu_slot, preferred, preferred_checked);
        self.walk_zonelist(start, order, alloc_flags, ac, |zone, flags| {
            let from = (cpu_slot, preferred, zone);
            let Some(pfn) = self.rmqueue(from, order, flags, ac.freetype) else {
                return ControlFlow::Continue(());
            };
            if flags.contains(AllocFlags::HIGHATOMIC) {
                let mut buddy = self.lock_zone(zone.index);
                buddy.reserve_highatomic_pageblock(&self.frames, pfn, order);
                self.publish(zone.index, &buddy);
            }
            ControlFlow::Break(Some(pfn))
        })
    }

    /// The zonelist walk of get_page_from_freelist(): each eligible zone
    /// in turn, the retry without `ALLOC_NOFRAGMENT` when the walk reaches
    /// another node or its end, and the watermark check; `take` gets each
    /// zone that passes (or any zone, with `ALLOC_NO_WATERMARKS`) and the
    /// walk's flags, and either moves on or ends the walk with its answer.
    /// `start` is the allocating CPU, its state for the preferred zone, and
    /// whether the fast path has just found that zone below its watermark:
    /// the first walk then skips it.
    #[inline(always)]
    fn walk_zonelist(
        &self,
        start: (&CpuSlot<L>, ZoneOnCpu<'_, L>, bool),
        order: Order,
        alloc_flags: AllocFlags,
        ac: &AllocContext,
        mut take: impl FnMut(ZoneOnCpu<'_, L>, AllocFlags) -> ControlFlow<Option<FrameIdx>>,
    ) -> Option<FrameIdx> {
        let (cpu_slot, preferred, preferred_checked) = start;
        debug_assert!(
            !preferred_checked || ac.eligible(&self.zones).next() == Some(preferred.index)
        );
        let mut flags = alloc_flags | nofragment_flag(preferred.slot);
        let mut skip = preferred_checked.then_some(preferred.index);
        'retry: loop {
            let no_fallback = flags.contains(AllocFlags::NOFRAGMENT);
            for &zone in ac.zonelist {
                // SAFETY: `zone` comes from a zonelist.
                let on_cpu = unsafe { self.zone_on_cpu(cpu_slot, zone) };
                let slot = on_cpu.slot;
                if !ac.allows(slot) || skip == Some(zone) {
                    continue;
                }
                if no_fallback
                    && self.layout.nodes.len() > 1
                    && zone != preferred.index
                    && slot.node != preferred.slot.node
                {
                    flags.remove(AllocFlags::NOFRAGMENT);
                    skip = None;
                    continue 'retry;
                }
                if !self.zone_watermark_passes(slot, order, ac.highest_zone, flags)
                    && !flags.contains(AllocFlags::NO_WATERMARKS)
                {
                    continue;
                }
                if let ControlFlow::Break(pfn) = take(on_cpu, flags) {
                    return pfn;
                }
            }
            if no_fallback {
                flags.remove(AllocFlags::NOFRAGMENT);
                skip = None;
                continue 'retry;
            }
            return None;
        }
    }

    /// Takes a block from one zone: its per-CPU list for small orders, else
    /// the buddy lists, else a pageblock converted to or from the direct
    /// map. `from` is the allocating CPU, its state for the preferred zone
    /// and for this one. mirrors rmqueue().
    #[inline(always)]
    fn rmqueue(
        &self,
        from: (&CpuSlot<L>, ZoneOnCpu<'_, L>, ZoneOnCpu<'_, L>),
        order: Order,
        flags: AllocFlags,
        freetype: FreeType,
    ) -> Option<FrameIdx> {
        let (cpu_slot, preferred, zone) = from;
        let from_pcp = PcpList::of(freetype, order, self.layout.pageblock_order)
            .and_then(|list| self.rmqueue_pcplist(zone, list, flags));
        let pfn = match from_pcp {
            Some(pfn) => pfn,
            None => self.rmqueue_zone(zone.index, order, flags, freetype)?,
        };
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
        self.account_alloc(cpu_slot, preferred, zone, order.nr_pages(), 1);
        Some(pfn)
    }

    /// mirrors rmqueue_pcplist(): try-lock this CPU's lists; a contended lock
    /// sends the caller to the buddy lists.
    #[inline(always)]
    fn rmqueue_pcplist(
        &self,
        zone: ZoneOnCpu<'_, L>,
        list: PcpList,
        flags: AllocFlags,
    ) -> Option<FrameIdx> {
        let Some(mut pcp) = L::try_lock(&zone.cpu.pcp) else {
            self.count_cpu_zone_event(zone.cpu, VmEvent::PcpTrylockFail, 1);
            return None;
        };
        pcp.note_alloc();
        self.take_from_pcp_list(&mut pcp, zone.index, list, flags)
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
        let blocks = pcp.fill_empty(list, taken);
        let events = buddy.events_mut();
        events.pcp_refill += 1;
        events.pcp_refill_pages += u64::from(blocks) << order.0;
        self.publish(zone, &buddy);
    }

    /// The zone-locked part of [`Self::rmqueue`]: the buddy lists, else a
    /// pageblock converted to or from the direct map. Out of line, so that
    /// a walk served by a per-CPU list carries none of it.
    #[inline(never)]
    fn rmqueue_zone(
        &self,
        zone: ZoneIdx,
        order: Order,
        flags: AllocFlags,
        freetype: FreeType,
    ) -> Option<FrameIdx> {
        self.rmqueue_buddy(zone, order, flags, freetype)
            .or_else(|| self.rmqueue_direct_map(zone, order, flags, freetype))
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
    /// `__GFP_MEMALLOC`, then, standalone, for callers that may reclaim,
    /// unreserving the HIGHATOMIC blocks and draining every CPU's lists
    /// before giving up (what the kernel does after reclaim; under the
    /// reclaim layer that layer does it, after reclaiming).
    fn alloc_slowpath(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        order: Order,
        ac: &AllocContext,
        stage: AllocStage,
    ) -> Option<FrameIdx> {
        // No eligible zone (a node mask without a node of this machine):
        // give up before draining or unreserving anything, as the kernel's
        // `if (!ac->preferred_zoneref->zone) goto nopage;` does.
        ac.preferred_zone?;
        let flags = gfp.slowpath_alloc_flags(order);
        if let Some(pfn) = self.get_page_from_freelist(cpu, order, flags, ac, false) {
            return Some(pfn);
        }
        if gfp.contains(Gfp::MEMALLOC) && !gfp.contains(Gfp::NOMEMALLOC) {
            let reserve = flags | AllocFlags::NO_WATERMARKS;
            if let Some(pfn) = self.get_page_from_freelist(cpu, order, reserve, ac, false) {
                return Some(pfn);
            }
        }
        if !gfp.contains(Gfp::DIRECT_RECLAIM) || stage != AllocStage::Standalone {
            return None;
        }
        for force in [false, true] {
            let released = self.unreserve_highatomic(ac, force);
            if !force {
                self.drain_all_pages();
            }
            if !force || released {
                if let Some(pfn) = self.get_page_from_freelist(cpu, order, flags, ac, false) {
                    return Some(pfn);
                }
            }
        }
        None
    }

    /// unreserve_highatomic_pageblock() over the zonelist of an allocation
    /// of `gfp` preferring `preferred` (the reclaim layer's slow path:
    /// after reclaim, and forced before it gives up); whether a block was
    /// released. A request the allocator would refuse releases nothing.
    pub(crate) fn unreserve_highatomic_for(
        &self,
        gfp: Gfp,
        preferred: NodeId,
        force: bool,
    ) -> bool {
        self.with_context(gfp, preferred, |ac| self.unreserve_highatomic(ac, force))
            .unwrap_or(false)
    }

    /// Counts pageframe's `pgalloc_fail` on the preferred zone of a failed
    /// allocation the reclaim layer made in stages.
    pub(crate) fn count_alloc_failure(&self, cpu: CpuId, gfp: Gfp, preferred: NodeId) {
        if cpu.index() >= self.cpus.len() {
            return;
        }
        self.with_context(gfp, preferred, |ac| {
            if let Some(zone) = ac.preferred_zone {
                self.count_event(cpu, zone, VmEvent::AllocFail, 1);
            }
        });
    }

    /// Runs `body` with the allocation context of `gfp` preferring
    /// `preferred` (no nodemask); `None` for flags or a node the allocator
    /// would refuse.
    fn with_context<T>(
        &self,
        gfp: Gfp,
        preferred: NodeId,
        body: impl FnOnce(&AllocContext) -> T,
    ) -> Option<T> {
        let request = gfp.request().ok()?;
        if preferred.index() >= self.zonelists.len() {
            return None;
        }
        Some(body(&self.prepare_alloc(&request, preferred, None)))
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

/// How far an allocation goes: the bare allocator's whole path, or one of
/// the stages the reclaim layer's slow path runs between its reclaims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AllocStage {
    /// Everything, with the bare allocator's stand-in for reclaim.
    Standalone,
    /// __alloc_pages() up to the slow path's first attempts at the min
    /// watermark and with the reserves; no unreserving, no draining.
    BeforeReclaim,
    /// get_page_from_freelist() at the slow path's flags only (its loop's
    /// attempts and those after reclaim).
    InSlowpath,
}

/// What the fast path tells the general path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FastWalk {
    /// The fast path decided nothing (a nodemask, no per-CPU list, an
    /// empty or locked list at the preferred zone).
    Untried,
    /// The preferred zone failed its watermark; a zone after it passed
    /// with its list empty or locked, or the walk reached another node
    /// with `ALLOC_NOFRAGMENT`.
    PreferredBelowWatermark,
    /// No zone passed its watermark at the fast path's flags.
    NoZonePassed,
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
