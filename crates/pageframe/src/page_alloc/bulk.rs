//! The bulk API: many order-0 pages under one pcp-lock acquisition.
//! mirrors __alloc_pages_bulk() (Linux 6.12): the array form here, the
//! list form with a node mask (`CpuHandle::alloc_pages_bulk_list`) over it;
//! the bulk free is in bulk_free.rs.
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

use super::alloc::AllocContext;
use super::error::AllocError;
use super::events::VmEvent;
use super::handle::Page;
use super::PageAllocator;
use crate::gfp::{Gfp, GfpRequest};
use crate::memmap::{FrameIdx, MemMap, PageInfo, PageState};
use crate::pcp::PcpList;
use crate::sync::LockFamily;
use crate::types::{CpuId, NodeId, Nodemask, Order};

impl<L: LockFamily> PageAllocator<L> {
    /// Fills the empty slots of `pages` with order-0 pages. Returns the number
    /// of slots populated counting from the start (the kernel's return value):
    /// it may be fewer than asked; once one page is allocated the call never
    /// fails as a whole. Arguments that are invalid are errors and change nothing.
    /// An array of one slot takes the single allocation's path in the
    /// caller's frame, so that a batch of one costs what a single page does.
    #[inline(always)]
    pub(crate) fn alloc_pages_bulk_on(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        pages: &mut [Option<Page>],
    ) -> Result<usize, AllocError> {
        if let [slot] = pages {
            let request = self.validate_alloc(cpu, gfp, Order(0), preferred)?;
            if slot.is_none() {
                *slot = self.bulk_fallback_single(cpu, gfp, &request, preferred, nodemask);
            }
            return Ok(usize::from(slot.is_some()));
        }
        let request = self.validate_alloc(cpu, gfp, Order(0), preferred)?;
        Ok(self.alloc_pages_bulk_slots(cpu, gfp, &request, preferred, nodemask, pages))
    }

    /// [`Self::alloc_pages_bulk_on`] for arrays of any length, the request
    /// validated.
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
            let ac = self.prepare_alloc(request, preferred, nodemask);
            if ac.preferred_zone.is_none() {
                return nr_populated;
            }
            if let Some(populated) = self.bulk_from_pcp(cpu, gfp, request, &ac, pages, nr_populated)
            {
                return populated;
            }
        }
        let Some(page) = self.bulk_fallback_single(cpu, gfp, request, preferred, nodemask) else {
            return nr_populated;
        };
        pages[nr_populated] = Some(page);
        nr_populated + 1
    }

    /// The bulk fast path: the first zone of the preferred node above its
    /// watermark plus the request, its per-CPU list under one lock. `None`
    /// sends the caller to the single-page fallback (no such zone, a
    /// contended pcp lock, no per-CPU list for the freetype, or not even
    /// one page allocated).
    #[inline]
    fn bulk_from_pcp(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        request: &GfpRequest,
        ac: &AllocContext,
        pages: &mut [Option<Page>],
        mut nr_populated: usize,
    ) -> Option<usize> {
        let nr_pages = pages.len();
        let flags = gfp.fastpath_alloc_flags();
        let preferred_zone = ac.preferred_zone?;
        let list = PcpList::of(ac.freetype, Order(0), self.layout.pageblock_order)?;
        let preferred_node = self.zones[preferred_zone.index()].node;
        let mut chosen = None;
        for zone in ac.eligible(&self.zones) {
            let slot = &self.zones[zone.index()];
            if self.layout.nodes.len() > 1 && zone != preferred_zone && slot.node != preferred_node
            {
                break;
            }
            let extra = nr_pages as u64;
            if self.zone_watermark_fast(zone, slot, Order(0), extra, ac.highest_zone, flags) {
                chosen = Some(zone);
                break;
            }
        }
        let zone = chosen?;
        let Some(mut pcp) = L::try_lock(&self.cpus[cpu.index()].zones[zone.index()].pcp) else {
            self.count_event(cpu, zone, VmEvent::PcpTrylockFail, 1);
            return None;
        };
        let allocated = PageInfo::new(PageState::Allocated, Order(0), list.recorded);
        let records = self.frames.memmap.records();
        let mut nr_account = 0;
        let mut filled = Vec::new();
        while nr_populated < nr_pages {
            // Populated slots are skipped (the kernel's page_array check);
            // the empty ones up to the next populated slot are filled in one go.
            if pages[nr_populated].is_some() {
                nr_populated += 1;
                continue;
            }
            if pcp.list_is_empty(list) {
                self.refill_pcp_list(&mut pcp, zone, list, flags);
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
            if request.zero {
                filled.push(nr_populated..nr_populated + taken);
            }
            nr_account += taken;
            nr_populated += taken;
        }
        drop(pcp);
        if nr_account == 0 {
            return None;
        }
        self.account_alloc(
            cpu,
            preferred_zone,
            zone,
            nr_account as u64,
            nr_account as u64,
        );
        if request.zero {
            return Some(self.zero_bulk(cpu, request, pages, &filled, nr_populated));
        }
        Some(nr_populated)
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
    /// allocator, with the request already validated (so that a batch of
    /// one costs no more than a single allocation); `None` if there is
    /// none.
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
            .alloc_block(cpu, gfp, request, Order(0), preferred, nodemask)
            .ok()?;
        if zero {
            self.prep_zeroed(cpu, pfn, Order(0), request).ok()?;
        }
        Some(Page::from_pfn(pfn.pfn()))
    }
}
