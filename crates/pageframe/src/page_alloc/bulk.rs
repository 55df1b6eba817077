//! The bulk API: many order-0 pages under one pcp-lock acquisition.
//! mirrors __alloc_pages_bulk() and free_unref_page_list() (Linux 6.1).

use super::alloc::{AllocContext, PcpList};
use super::events::VmEvent;
use super::free::pcp_list_for_free;
use super::handle::Page;
use super::PageAllocator;
use crate::error::{AllocError, FreeError};
use crate::gfp::{Gfp, GfpRequest};
use crate::memmap::{PageInfo, PageState};
use crate::pcp::PerCpuPages;
use crate::sync::LockFamily;
use crate::types::{CpuId, NodeId, Nodemask, Order, Pfn};

impl<L: LockFamily> PageAllocator<L> {
    /// Fills the empty slots of `pages` with order-0 pages. Returns the number
    /// of slots populated counting from the start (the kernel's return value):
    /// it may be fewer than asked; once one page is allocated the call never
    /// fails as a whole. Arguments that are invalid are errors and change nothing.
    pub(crate) fn alloc_pages_bulk_on(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        pages: &mut [Option<Page>],
    ) -> Result<usize, AllocError> {
        let request = self.validate_alloc(cpu, gfp, Order(0), preferred)?;
        let nr_pages = pages.len();
        let nr_populated = pages.iter().take_while(|slot| slot.is_some()).count();
        if nr_populated == nr_pages {
            return Ok(nr_populated);
        }
        if nr_pages - nr_populated > 1 {
            let ac = self.prepare_alloc(&request, preferred, nodemask);
            if ac.preferred_zone.is_none() {
                return Ok(nr_populated);
            }
            if let Some(populated) =
                self.bulk_from_pcp(cpu, gfp, &request, &ac, pages, nr_populated)
            {
                return Ok(populated);
            }
        }
        Ok(self.bulk_fallback_single(cpu, gfp, preferred, nodemask, pages, nr_populated))
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
        let list = PcpList::of(ac.freetype, 0, self.layout.pageblock_order)?;
        let preferred_node = self.zones[preferred_zone as usize].node;
        let mut chosen = None;
        for zone in ac.eligible(&self.zones) {
            if self.layout.nodes.len() > 1
                && zone != preferred_zone
                && self.zones[zone as usize].node != preferred_node
            {
                break;
            }
            let mark = self.zones[zone as usize]
                .watermarks
                .get(flags.watermark_index())
                + nr_pages as u64;
            if self.zone_watermark_ok(zone, 0, mark, ac.highest_zone, flags) {
                chosen = Some(zone);
                break;
            }
        }
        let zone = chosen?;
        let Some(mut pcp) = L::try_lock(&self.cpus[cpu.index()].pcp[zone as usize]) else {
            self.count_event(cpu, zone as usize, VmEvent::PcpTrylockFail, 1);
            return None;
        };
        let allocated = PageInfo::new(PageState::Allocated, Order(0), list.recorded);
        let mut nr_account = 0u64;
        let mut to_zero = Vec::new();
        while nr_populated < nr_pages {
            if pages[nr_populated].is_some() {
                nr_populated += 1;
                continue;
            }
            let Some(pfn) = self.rmqueue_pcp_list(&mut pcp, zone as usize, list, flags) else {
                if nr_account == 0 {
                    return None;
                }
                break;
            };
            self.frames.memmap.set_info(pfn, allocated);
            pages[nr_populated] = Some(Page::from_pfn(Pfn(pfn as u64)));
            if request.zero {
                to_zero.push(nr_populated);
            }
            nr_account += 1;
            nr_populated += 1;
        }
        drop(pcp);
        self.account_alloc(cpu, preferred_zone, zone, nr_account, nr_account);
        Some(self.zero_bulk(cpu, request, pages, &to_zero, nr_populated))
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
        filled: &[usize],
        nr_populated: usize,
    ) -> usize {
        for (done, &slot) in filled.iter().enumerate() {
            let Some(page) = pages[slot] else { continue };
            if self
                .prep_zeroed(cpu, page.pfn().0 as u32, Order(0), request)
                .is_err()
            {
                pages[slot] = None;
                for &later in &filled[done + 1..] {
                    if let Some(page) = pages[later].take() {
                        self.release_new_block(cpu, page.pfn(), Order(0));
                    }
                }
                return slot;
            }
        }
        nr_populated
    }

    /// The bulk call's `failed:` path: one page through the normal allocator.
    fn bulk_fallback_single(
        &self,
        cpu: CpuId,
        gfp: Gfp,
        preferred: NodeId,
        nodemask: Option<&Nodemask>,
        pages: &mut [Option<Page>],
        nr_populated: usize,
    ) -> usize {
        match self.alloc_pages_on(cpu, gfp, Order(0), preferred, nodemask) {
            Ok(pfn) => {
                pages[nr_populated] = Some(Page::from_pfn(Pfn(pfn as u64)));
                nr_populated + 1
            }
            Err(_) => nr_populated,
        }
    }

    /// Frees order-0 pages, taking each zone's pcp lock once per run of
    /// pages from that zone. Every page is checked first: if any free would
    /// fail, none happens and the error names the first bad page.
    /// mirrors free_unref_page_list() (without its IRQ-latency relock every
    /// SWAP_CLUSTER_MAX pages, which has no meaning in user space).
    pub(crate) fn free_pages_bulk_on<I>(&self, cpu: CpuId, pages: I) -> Result<(), FreeError>
    where
        I: Iterator<Item = Page> + Clone,
    {
        if cpu.index() >= self.cpus.len() {
            return Err(FreeError::NoSuchCpu(cpu));
        }
        // Pass 1: check every page and mark it Freeing, so that nothing is
        // freed unless everything can be; note whether one zone holds them all.
        // Pages of one bulk call mostly share pageblocks: look each block's
        // zone and migratetype up once per run of pages in it.
        let block_shift = self.layout.pageblock_order;
        let mut single_zone = None;
        let (mut cached_block, mut cached_zone) = (u64::MAX, None);
        for (done, page) in pages.clone().enumerate() {
            let pfn = page.pfn();
            if pfn.0 >> block_shift != cached_block {
                cached_block = pfn.0 >> block_shift;
                cached_zone = self.zone_of(pfn);
            }
            let claimed = match cached_zone {
                Some(zone) => self.claim_in_zone(pfn, Order(0), true).map(|()| zone),
                None => Err(FreeError::NotMemory(pfn)),
            };
            match claimed {
                Ok(zone) if done == 0 || single_zone == Some(zone) => single_zone = Some(zone),
                Ok(_) => single_zone = None,
                Err(err) => {
                    for undo in pages.take(done) {
                        self.unclaim(undo.pfn(), Order(0));
                    }
                    return Err(err);
                }
            }
        }
        // Pass 2: the frees, one pcp-lock acquisition per run of pages of a zone.
        let mut locked: Option<(usize, L::Guard<'_, PerCpuPages>)> = None;
        let mut run_pages = 0u64;
        let mut cached_list = None;
        cached_block = u64::MAX;
        for page in pages {
            let pfn = page.pfn();
            let zone = match single_zone {
                Some(zone) => zone,
                None => self.zone_of(pfn).expect("claimed pages are memory"),
            };
            if pfn.0 >> block_shift != cached_block {
                cached_block = pfn.0 >> block_shift;
                cached_list = pcp_list_for_free(self.frames.blocks.freetype(pfn), 0);
            }
            let Some(list) = cached_list else {
                self.count_event(cpu, zone, VmEvent::Pgfree, 1);
                self.free_one_page(zone, pfn.0 as u32, 0);
                continue;
            };
            if locked.as_ref().is_none_or(|(held, _)| *held != zone) {
                if let Some((held, guard)) = locked.take() {
                    // Release the previous zone's pcp lock before taking the next.
                    drop(guard);
                    self.count_event(cpu, held, VmEvent::Pgfree, run_pages);
                    run_pages = 0;
                }
                locked = Some((zone, L::lock(&self.cpus[cpu.index()].pcp[zone]).0));
            }
            let (_, pcp) = locked.as_mut().expect("locked above");
            self.free_unref_page_commit(pcp, zone, pfn.0 as u32, 0, list);
            run_pages += 1;
        }
        if let Some((held, guard)) = locked {
            drop(guard);
            self.count_event(cpu, held, VmEvent::Pgfree, run_pages);
        }
        Ok(())
    }
}
