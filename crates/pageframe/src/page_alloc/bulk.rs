//! The bulk API: many order-0 pages under one pcp-lock acquisition.
//! mirrors __alloc_pages_bulk() (Linux 6.12): the array form here, the
//! list form with a node mask (`CpuHandle::alloc_pages_bulk_list`) over it;
//! the bulk free is in bulk_free.rs. The common call (no nodemask, no
//! `__GFP_ZERO`, the preferred zone above its watermark) runs in the
//! caller's frame, as a single allocation's fast path does; everything
//! else takes the general path out of line, which decides the same.
//!
//! bulk-page-allocator.txt's refcount knob (let callers free pages with
//! the reference already dropped, or still elevated, to skip the atomic
//! put_page_testzero() per page) has nothing to act on here: pageframe's
//! pages carry no reference count. A `Page` is a copyable name whose
//! owner is the caller; what the kernel's last-reference check protects
//! against (freeing a page someone still uses) is the free checks' job, a
//! per-page Allocated-to-Freeing state change (atomic only in the shared
//! allocator). The knob's saving is therefore the `free_checks` option's,
//! which `run bulk` measures as its `no-checks` variant.

use std::ops::Range;

use super::alloc::AllocStage;
use super::error::AllocError;
use super::events::VmEvent;
use super::handle::Page;
use super::numa_events::count_alloc_events;
use super::PageAllocator;
use crate::gfp::{AllocFlags, Gfp, GfpRequest};
use crate::memmap::{FrameIdx, MemMap, PageInfo, PageState};
use crate::pcp::{PcpList, PerCpuPages};
use crate::sync::LockFamily;
use crate::types::{CpuId, NodeId, Nodemask, Order, ZoneIdx};

impl<L: LockFamily> PageAllocator<L> {
    /// Fills the empty slots of `pages` with order-0 pages. Returns the number
    /// of slots populated counting from the start (the kernel's return value):
    /// it may be fewer than asked; once one page is allocated the call never
    /// fails as a whole. Arguments that are invalid are errors and change nothing.
    /// An array of one slot takes the single allocation's path in the
    /// caller's frame (as __alloc_pages_bulk() sends one page to the
    /// single-page allocator): a batch of one costs a single page plus the
    /// slot's handling. So does the common call for more pages (no
    /// nodemask, no `__GFP_ZERO`, the preferred zone above its watermark
    /// plus the request): [`Self::bulk_from_preferred_pcp`]; anything else
    /// takes the general path out of line, which decides the same.
    #[inline(always)]
    pub(crate) fn alloc_pages_bulk_on(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        pages: &mut [Option<Page>],
    ) -> Result<usize, AllocError> {
        let request = self.validate_alloc(cpu, gfp, Order(0), preferred)?;
        if let [slot] = pages {
            if slot.is_none() {
                *slot = self.bulk_fallback_single(cpu, gfp, &request, preferred, nodemask);
            }
            return Ok(usize::from(slot.is_some()));
        }
        if nodemask.is_none() && !request.zero {
            let populated = self.bulk_from_preferred_pcp(cpu, gfp, &request, preferred, pages);
            if let Some(populated) = populated {
                return Ok(populated);
            }
        }
        Ok(self.alloc_pages_bulk_slots(cpu, gfp, &request, preferred, nodemask, pages))
    }

    /// The common bulk call, inline: more than one slot to fill and the
    /// preferred zone above its watermark plus the request, so that its
    /// per-CPU list serves the call (or the single-page fallback does, as
    /// in the general path): __alloc_pages_bulk()'s first zone of the
    /// zonelist walk, taken first. `None` when the call is not that one;
    /// nothing has changed then, and the general path decides.
    #[inline(always)]
    fn bulk_from_preferred_pcp(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        preferred: NodeId,
        pages: &mut [Option<Page>],
    ) -> Option<usize> {
        let nr_pages = pages.len();
        let nr_populated = pages.iter().take_while(|slot| slot.is_some()).count();
        if nr_pages - nr_populated <= 1 {
            return None;
        }
        let flags = gfp.fastpath_alloc_flags();
        let zone = self.zonelists[preferred.index()]
            .first_eligible(request.this_node, request.highest_zone)?;
        if !self.bulk_zone_ok(zone, request, nr_pages as u64, flags) {
            return None;
        }
        let zones = (zone, zone);
        Some(
            match self.bulk_from_pcp::<false>(cpu, flags, request, zones, pages, nr_populated) {
                Some(populated) => populated,
                None => self.bulk_fallback_slot(cpu, gfp, request, preferred, None, pages),
            },
        )
    }

    /// [`Self::alloc_pages_bulk_on`] for arrays of any length, the request
    /// validated: the general path.
    #[inline(never)]
    fn alloc_pages_bulk_slots(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        pages: &mut [Option<Page>],
    ) -> usize {
        let nr_pages = pages.len();
        let nr_populated = pages.iter().take_while(|slot| slot.is_some()).count();
        if nr_populated == nr_pages {
            return nr_populated;
        }
        if nr_pages - nr_populated > 1 {
            let flags = gfp.fastpath_alloc_flags();
            match self.bulk_zone(request, preferred, nodemask, nr_pages as u64, flags) {
                BulkZone::NoPreferredZone => return nr_populated,
                BulkZone::BelowWatermark => {}
                BulkZone::Chosen {
                    preferred_zone,
                    zone,
                } => {
                    let zones = (preferred_zone, zone);
                    let populated = if request.zero {
                        self.bulk_from_pcp::<true>(cpu, flags, request, zones, pages, nr_populated)
                    } else {
                        self.bulk_from_pcp::<false>(cpu, flags, request, zones, pages, nr_populated)
                    };
                    if let Some(populated) = populated {
                        return populated;
                    }
                }
            }
        }
        self.bulk_fallback_slot(cpu, gfp, request, preferred, nodemask, pages)
    }

    /// The bulk call's `failed:` path for an array: one page through the
    /// single allocator into the first empty slot (the one after the
    /// populated ones). Returns the slots populated.
    #[inline(never)]
    fn bulk_fallback_slot(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        pages: &mut [Option<Page>],
    ) -> usize {
        let nr_populated = pages.iter().take_while(|slot| slot.is_some()).count();
        let Some(page) = self.bulk_fallback_single(cpu, gfp, request, preferred, nodemask) else {
            return nr_populated;
        };
        pages[nr_populated] = Some(page);
        nr_populated + 1
    }

    /// The zone a bulk allocation of `nr_pages` takes its pages from: the
    /// first zone of the preferred node above its watermark plus the
    /// request. Without a nodemask the preferred zone is looked at first,
    /// inline; the zonelist walk decides the rest (and would decide the
    /// same for the preferred zone).
    #[inline(always)]
    fn bulk_zone(
        &self,
        request: &GfpRequest,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        nr_pages: u64,
        flags: AllocFlags,
    ) -> BulkZone {
        if nodemask.is_none() {
            let Some(zone) = self.zonelists[preferred.index()]
                .first_eligible(request.this_node, request.highest_zone)
            else {
                return BulkZone::NoPreferredZone;
            };
            if self.bulk_zone_ok(zone, request, nr_pages, flags) {
                return BulkZone::Chosen {
                    preferred_zone: zone,
                    zone,
                };
            }
        }
        self.bulk_zone_walk(request, preferred, nodemask, nr_pages, flags)
    }

    /// Whether `zone` is above its watermark plus `nr_pages`, the test
    /// __alloc_pages_bulk() makes of each zone (zone_watermark_fast()).
    #[inline(always)]
    fn bulk_zone_ok(
        &self,
        zone: ZoneIdx,
        request: &GfpRequest,
        nr_pages: u64,
        flags: AllocFlags,
    ) -> bool {
        let slot = &self.zones[zone.index()];
        self.zone_watermark_fast(slot, Order(0), nr_pages, request.highest_zone, flags)
    }

    /// The zonelist walk of [`Self::bulk_zone`]: prepare_alloc_pages(),
    /// then the zones from the preferred one, stopping at the first zone of
    /// another node on a NUMA machine.
    #[inline(never)]
    fn bulk_zone_walk(
        &self,
        request: &GfpRequest,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        nr_pages: u64,
        flags: AllocFlags,
    ) -> BulkZone {
        let ac = self.prepare_alloc(request, preferred, nodemask);
        let Some(preferred_zone) = ac.preferred_zone else {
            return BulkZone::NoPreferredZone;
        };
        let preferred_node = self.zones[preferred_zone.index()].node;
        for zone in ac.eligible(&self.zones) {
            let slot = &self.zones[zone.index()];
            if self.layout.nodes.len() > 1 && zone != preferred_zone && slot.node != preferred_node
            {
                break;
            }
            if self.zone_watermark_fast(slot, Order(0), nr_pages, ac.highest_zone, flags) {
                return BulkZone::Chosen {
                    preferred_zone,
                    zone,
                };
            }
        }
        BulkZone::BelowWatermark
    }

    /// The bulk fast path: the per-CPU list of `zone` (the second of
    /// `zones`, the first being the preferred zone) under one lock. `None`
    /// sends the caller to the single-page fallback (a contended pcp lock,
    /// no per-CPU list for the freetype, or not even one page allocated).
    /// `ZERO` is the request's `__GFP_ZERO`, so that the common call keeps
    /// no record of the slots it filled. The common call finds enough pages
    /// on the list for every slot from the first empty one on and fills
    /// them in one step; refills and populated slots further on take
    /// [`Self::bulk_fill_rest`].
    #[inline(always)]
    fn bulk_from_pcp<const ZERO: bool>(
        &self,
        cpu: CpuId,
        flags: AllocFlags,
        request: &GfpRequest,
        (preferred_zone, zone): (ZoneIdx, ZoneIdx),
        pages: &mut [Option<Page>],
        nr_populated: usize,
    ) -> Option<usize> {
        let list = PcpList::of(request.freetype, Order(0), self.layout.pageblock_order)?;
        let cpu_slot = &self.cpus[cpu.index()];
        // SAFETY: `zone` comes from a zonelist.
        let on_cpu = unsafe { self.zone_on_cpu(cpu_slot, zone) };
        let Some(mut pcp) = L::try_lock(&on_cpu.cpu.pcp) else {
            self.count_event(cpu, zone, VmEvent::PcpTrylockFail, 1);
            return None;
        };
        let records = self.frames.memmap.records();
        let allocated = PageInfo::new(PageState::Allocated, Order(0), list.recorded);
        let taken = pcp.take_hottest_into(
            list,
            &mut pages[nr_populated..],
            Option::is_none,
            move |slot, pfn| {
                MemMap::record_of(records, pfn).set_info(allocated);
                *slot = Some(Page::from_pfn(pfn.pfn()));
            },
        );
        let mut filled = Vec::new();
        if ZERO {
            filled.push(nr_populated..nr_populated + taken);
        }
        let (mut nr_account, mut nr_populated) = (taken, nr_populated + taken);
        if nr_populated < pages.len() {
            let fill = (&mut *pcp, zone, list, flags);
            let more = self.bulk_fill_rest::<ZERO>(fill, pages, nr_populated, &mut filled);
            (nr_account, nr_populated) = (nr_account + more.0, more.1);
        }
        drop(pcp);
        if nr_account == 0 {
            return None;
        }
        if zone == preferred_zone && self.options.vm_events {
            // The preferred zone itself: a NUMA hit (zone_statistics()).
            let node = on_cpu.slot.node;
            let pages = nr_account as u64;
            count_alloc_events(cpu_slot, &on_cpu.cpu.events, node, pages, pages);
        } else {
            let pages = nr_account as u64;
            // SAFETY: the preferred zone comes from a zonelist.
            let preferred = unsafe { self.zone_on_cpu(cpu_slot, preferred_zone) };
            self.account_alloc(cpu_slot, preferred, on_cpu, pages, pages);
        }
        if ZERO {
            return Some(self.zero_bulk(cpu, request, pages, &filled, nr_populated));
        }
        Some(nr_populated)
    }

    /// The rest of [`Self::bulk_from_pcp`]'s filling, from slot
    /// `nr_populated` on, under the pcp lock of `zone`: populated slots
    /// are skipped (the kernel's page_array check), the empty ones up to
    /// the next populated slot are filled in one go, and an empty list is
    /// refilled first, until a refill brings nothing. Returns the pages
    /// allocated and the slots populated; with `ZERO`, adds the ranges it
    /// filled to `filled`.
    #[inline(never)]
    fn bulk_fill_rest<const ZERO: bool>(
        &self,
        (pcp, zone, list, flags): (&mut PerCpuPages, ZoneIdx, PcpList, AllocFlags),
        pages: &mut [Option<Page>],
        mut nr_populated: usize,
        filled: &mut Vec<Range<usize>>,
    ) -> (usize, usize) {
        let allocated = PageInfo::new(PageState::Allocated, Order(0), list.recorded);
        let records = self.frames.memmap.records();
        let mut nr_account = 0;
        while nr_populated < pages.len() {
            if pages[nr_populated].is_some() {
                nr_populated += 1;
                continue;
            }
            if pcp.list_is_empty(list) {
                self.refill_pcp_list(pcp, zone, list, flags);
                if pcp.list_is_empty(list) {
                    break;
                }
            }
            let taken = pcp.take_hottest_into(
                list,
                &mut pages[nr_populated..],
                Option::is_none,
                move |slot, pfn| {
                    MemMap::record_of(records, pfn).set_info(allocated);
                    *slot = Some(Page::from_pfn(pfn.pfn()));
                },
            );
            if ZERO {
                filled.push(nr_populated..nr_populated + taken);
            }
            nr_account += taken;
            nr_populated += taken;
        }
        (nr_account, nr_populated)
    }

    /// Zeroes the slots this call filled (`__GFP_ZERO`, outside the pcp
    /// lock). If zeroing fails at a slot, the pages of that slot and of every
    /// later filled slot are freed and emptied, and the populated count
    /// ends before it.
    fn zero_bulk(
        &self,
        cpu: CpuId,
        request: &GfpRequest,
        pages: &mut [Option<Page>],
        filled: &[Range<usize>],
        nr_populated: usize,
    ) -> usize {
        let mut slots = filled.iter().flat_map(|run| run.clone());
        while let Some(slot) = slots.next() {
            let Some(page) = pages[slot] else { continue };
            if self
                .prep_zeroed(cpu, FrameIdx::covered(page.pfn()), Order(0), request)
                .is_err()
            {
                pages[slot] = None;
                for later in slots {
                    if let Some(page) = pages[later].take() {
                        self.release_new_block(cpu, page.pfn(), Order(0));
                    }
                }
                return slot;
            }
        }
        nr_populated
    }

    /// The bulk call's `failed:` path: one page through the normal
    /// allocator, with the request already validated (not validated
    /// twice); `None` if there is none.
    #[inline(always)]
    fn bulk_fallback_single(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
    ) -> Option<Page> {
        let zero = request.zero;
        let pfn = self
            .alloc_block(
                cpu,
                gfp,
                request,
                Order(0),
                preferred,
                nodemask,
                AllocStage::Standalone,
            )
            .ok()?;
        if zero {
            self.prep_zeroed(cpu, pfn, Order(0), request).ok()?;
        }
        Some(Page::from_pfn(pfn.pfn()))
    }
}

/// Where a bulk allocation's pages come from.
enum BulkZone {
    /// The request's zonelist has no zone it may use: nothing is allocated.
    NoPreferredZone,
    /// No zone of the preferred node is above its watermark plus the
    /// request: one page through the single allocator.
    BelowWatermark,
    /// The per-CPU list of `zone`; `preferred_zone` is the one the NUMA
    /// counters compare it with.
    Chosen {
        preferred_zone: ZoneIdx,
        zone: ZoneIdx,
    },
}
