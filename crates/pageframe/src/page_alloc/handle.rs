//! Pages and CPU handles: the public face of the allocator.
//!
//! Every allocation and free runs on a CPU. A [`CpuHandle`] names one: on a
//! single-threaded allocator any number may exist ([`PageAllocator::cpu`]); on
//! a shared one a CPU has at most one registered handle at a time
//! ([`PageAllocator::register_cpu`]), which is what makes its per-CPU counters
//! single-writer. A handle can move to another thread but not be shared.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroU64;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::error::{AccessError, AllocError, CpuError, FreeError};
use super::PageAllocator;
use crate::gfp::Gfp;
use crate::sync::{Local, LockFamily, Shared};
use crate::types::{CpuId, NodeId, Nodemask, Order, Pfn};

/// Pages [`CpuHandle::alloc_pages_bulk_list`] takes per call of the array
/// form: a page pool's refill, on the stack.
pub const BULK_LIST_RUN: usize = 64;

/// A block of pages, named by its first PFN. Copyable like `struct page *`:
/// freeing a copy twice is a double free, reported as an error.
///
/// Stored as PFN + 1 in a `NonZeroU64`, so that `Option<Page>` (a slot of
/// the page arrays `alloc_pages_bulk` fills) is one word. The one PFN that
/// does not fit, `u64::MAX`, names no page of any machine; `from_pfn` maps
/// it to `u64::MAX - 1`, which names none either.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Page(NonZeroU64);

impl Page {
    /// The page with this PFN.
    #[inline]
    pub fn from_pfn(pfn: Pfn) -> Page {
        Page(NonZeroU64::new(pfn.0.wrapping_add(1)).unwrap_or(NonZeroU64::MAX))
    }

    /// Its page frame number.
    #[inline]
    pub fn pfn(self) -> Pfn {
        Pfn(self.0.get() - 1)
    }
}

impl fmt::Debug for Page {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Page").field(&self.pfn()).finish()
    }
}

/// Allocation and free on one CPU of an allocator held through `A`
/// (`&PageAllocator` or `Arc<PageAllocator>`).
pub struct CpuHandle<A, L>
where
    A: Deref<Target = PageAllocator<L>>,
    L: LockFamily,
{
    allocator: A,
    cpu: CpuId,
    not_sync: PhantomData<Cell<()>>,
}

impl PageAllocator<Local> {
    /// A handle for `cpu` of this single-threaded allocator.
    pub fn cpu(&self, cpu: CpuId) -> Result<CpuHandle<&PageAllocator<Local>, Local>, CpuError> {
        if cpu.index() >= self.cpus.len() {
            return Err(CpuError::NoSuchCpu(cpu));
        }
        Ok(CpuHandle {
            allocator: self,
            cpu,
            not_sync: PhantomData,
        })
    }
}

impl PageAllocator<Shared> {
    /// Registers the calling thread as `cpu`; EBUSY while another handle
    /// holds it. The registration ends when the handle is dropped.
    pub fn register_cpu(
        &self,
        cpu: CpuId,
    ) -> Result<CpuHandle<&PageAllocator<Shared>, Shared>, CpuError> {
        self.claim_cpu(cpu)?;
        Ok(CpuHandle {
            allocator: self,
            cpu,
            not_sync: PhantomData,
        })
    }

    /// [`Self::register_cpu`] for an allocator in an `Arc`: the handle keeps
    /// the allocator alive and can be moved into a spawned thread.
    pub fn register_cpu_arc(
        self: &Arc<Self>,
        cpu: CpuId,
    ) -> Result<CpuHandle<Arc<PageAllocator<Shared>>, Shared>, CpuError> {
        self.claim_cpu(cpu)?;
        Ok(CpuHandle {
            allocator: Arc::clone(self),
            cpu,
            not_sync: PhantomData,
        })
    }

    fn claim_cpu(&self, cpu: CpuId) -> Result<(), CpuError> {
        let slot = self.cpus.get(cpu.index()).ok_or(CpuError::NoSuchCpu(cpu))?;
        slot.registered
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .map(|_| ())
            .map_err(|_| CpuError::Busy(cpu))
    }
}

impl<L: LockFamily> PageAllocator<L> {
    /// Empties `cpu`'s per-CPU lists into the buddy lists (`drain_local_pages()`
    /// run for that CPU); may be called for any CPU, as the kernel's drain
    /// workers do.
    pub fn drain_pcp(&self, cpu: CpuId) -> Result<(), CpuError> {
        if cpu.index() >= self.cpus.len() {
            return Err(CpuError::NoSuchCpu(cpu));
        }
        self.drain_cpu(cpu.index());
        Ok(())
    }

    /// One pass of the kernel's once-a-second vmstat worker over `cpu`'s
    /// lists: in every zone, `high` decays by an eighth toward `high_min`
    /// and the pages above it go back to the buddy lists, a batch at a
    /// time. Returns whether some zone has further to decay. pageframe has
    /// no clock of its own: a simulation calls this as its time passes.
    /// mirrors decay_pcp_high() from refresh_cpu_vm_stats() (Linux 6.12).
    pub fn decay_pcp_high(&self, cpu: CpuId) -> Result<bool, CpuError> {
        if cpu.index() >= self.cpus.len() {
            return Err(CpuError::NoSuchCpu(cpu));
        }
        Ok(self.decay_cpu_pcp_high(cpu.index()))
    }
}

impl<A, L> CpuHandle<A, L>
where
    A: Deref<Target = PageAllocator<L>>,
    L: LockFamily,
{
    /// The CPU this handle runs on.
    pub fn cpu(&self) -> CpuId {
        self.cpu
    }

    /// The allocator.
    pub fn allocator(&self) -> &PageAllocator<L> {
        &self.allocator
    }

    /// Allocates `1 << order` contiguous pages (`alloc_pages_node()`).
    #[inline(always)]
    pub fn alloc_pages(
        &self,
        gfp: Gfp,
        order: Order,
        preferred_node: NodeId,
    ) -> Result<Page, AllocError> {
        self.allocator
            .alloc_pages_on(self.cpu, gfp, order, preferred_node, None)
            .map(|pfn| Page::from_pfn(pfn.pfn()))
    }

    /// Allocates from the nodes of `nodemask` only (`__alloc_pages()` with a nodemask).
    pub fn alloc_pages_nodemask(
        &self,
        gfp: Gfp,
        order: Order,
        preferred_node: NodeId,
        nodemask: &Nodemask,
    ) -> Result<Page, AllocError> {
        self.allocator
            .alloc_pages_on(self.cpu, gfp, order, preferred_node, Some(nodemask))
            .map(|pfn| Page::from_pfn(pfn.pfn()))
    }

    /// Frees a block allocated with `order` (`__free_pages()`).
    #[inline(always)]
    pub fn free_pages(&self, page: Page, order: Order) -> Result<(), FreeError> {
        self.allocator.free_pages_on(self.cpu, page.pfn(), order)
    }

    /// Fills the empty slots of `pages` with order-0 pages and returns how
    /// many slots, from the start, are populated (`alloc_pages_bulk_array()`).
    #[inline(always)]
    pub fn alloc_pages_bulk(
        &self,
        gfp: Gfp,
        preferred_node: NodeId,
        nodemask: Option<&Nodemask>,
        pages: &mut [Option<Page>],
    ) -> Result<usize, AllocError> {
        self.allocator
            .alloc_pages_bulk_on(self.cpu, gfp, preferred_node, nodemask, pages)
    }

    /// Appends up to `nr_pages` order-0 pages to `out` (the kernel's list
    /// variant); returns how many were added.
    pub fn alloc_pages_bulk_vec(
        &self,
        gfp: Gfp,
        preferred_node: NodeId,
        nr_pages: usize,
        out: &mut Vec<Page>,
    ) -> Result<usize, AllocError> {
        self.alloc_pages_bulk_list(gfp, preferred_node, None, nr_pages, out)
    }

    /// The list form of the bulk API with a node mask
    /// (`__alloc_pages_bulk()` with a page list, the series'
    /// `__alloc_pages_bulk_nodemask`): appends up to `nr_pages` order-0
    /// pages from the nodes of `nodemask` (every node when `None`),
    /// preferring `preferred_node`, to `list`; returns how many were added,
    /// which may be fewer than asked. The pages come in runs of at most
    /// [`BULK_LIST_RUN`] under one per-CPU lock each; the call stops at the
    /// first run that comes back short. Invalid arguments are errors and
    /// leave `list` unchanged.
    pub fn alloc_pages_bulk_list(
        &self,
        gfp: Gfp,
        preferred_node: NodeId,
        nodemask: Option<&Nodemask>,
        nr_pages: usize,
        list: &mut Vec<Page>,
    ) -> Result<usize, AllocError> {
        let mut slots = [None; BULK_LIST_RUN];
        let mut added = 0;
        while added < nr_pages {
            let run = &mut slots[..(nr_pages - added).min(BULK_LIST_RUN)];
            let got = self.alloc_pages_bulk(gfp, preferred_node, nodemask, run)?;
            list.extend(run[..got].iter_mut().filter_map(Option::take));
            added += got;
            if got < run.len() {
                break;
            }
        }
        Ok(added)
    }

    /// Frees order-0 pages; all or nothing.
    #[inline]
    pub fn free_pages_bulk(&self, pages: &[Page]) -> Result<(), FreeError> {
        self.allocator
            .free_pages_bulk_on(self.cpu, pages)
            .map(|_| ())
    }

    /// Frees the order-0 pages of a page array, as filled by
    /// [`Self::alloc_pages_bulk`], and empties its slots; returns how many
    /// pages were freed. All or nothing: on error no page is freed and no
    /// slot changes. The array form of release_pages().
    #[inline(always)]
    pub fn free_pages_bulk_array(&self, pages: &mut [Option<Page>]) -> Result<usize, FreeError> {
        // One slot: exactly the single free, without emptying a slice of
        // unknown length. The slot is emptied first and refilled if the
        // free fails, so that the free need not keep it at hand.
        if let [slot] = pages {
            let Some(page) = slot.take() else {
                return Ok(0);
            };
            return match self.free_pages(page, Order(0)) {
                Ok(()) => Ok(1),
                Err(err) => {
                    *slot = Some(page);
                    Err(err)
                }
            };
        }
        self.allocator.free_pages_bulk_array_on(self.cpu, pages)
    }

    /// Empties this CPU's per-CPU lists.
    pub fn drain_pcp(&self) {
        self.allocator.drain_cpu(self.cpu.index());
    }

    /// The direct-map address of the block's first byte (`page_address()`);
    /// `None` on a backing without a direct map in the address space (the
    /// simulation keeps contents in its store). Accessing it while the page
    /// is unmapped faults; prefer the copying accessors below.
    pub fn page_ptr(&self, page: Page) -> Option<NonNull<u8>> {
        self.allocator.backing.direct_map_ptr(page.pfn())
    }

    /// Copies `bytes` into the allocated block `page` at `offset`, through
    /// the direct map. A block of an unmapped pageblock is an error
    /// (EFAULT): use [`Self::write_unmapped`].
    pub fn write_page(&self, page: Page, offset: usize, bytes: &[u8]) -> Result<(), AccessError> {
        self.allocator.write_mapped(page.pfn(), offset, bytes)
    }

    /// Copies bytes of the allocated block `page` from `offset` into `out`,
    /// through the direct map.
    pub fn read_page(&self, page: Page, offset: usize, out: &mut [u8]) -> Result<(), AccessError> {
        self.allocator.read_mapped(page.pfn(), offset, out)
    }

    /// Copies `bytes` into the allocated block `page` at `offset` through
    /// this CPU's mermap window, whether or not the block is in the direct
    /// map (guest_memfd's write() path in the `__GFP_UNMAPPED` series).
    pub fn write_unmapped(
        &self,
        page: Page,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), AccessError> {
        self.allocator
            .write_unmapped(self.cpu, page.pfn(), offset, bytes)
    }

    /// Copies bytes of the allocated block `page` from `offset` into `out`
    /// through this CPU's mermap window.
    pub fn read_unmapped(
        &self,
        page: Page,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), AccessError> {
        self.allocator
            .read_unmapped(self.cpu, page.pfn(), offset, out)
    }
}

impl<A, L> Drop for CpuHandle<A, L>
where
    A: Deref<Target = PageAllocator<L>>,
    L: LockFamily,
{
    fn drop(&mut self) {
        if L::CONCURRENT {
            self.allocator.cpus[self.cpu.index()]
                .registered
                .store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_array_slot_is_one_word() {
        assert_eq!(std::mem::size_of::<Option<Page>>(), 8);
    }

    #[test]
    fn pages_round_trip_their_pfn() {
        for pfn in [0, 1, 511, 1 << 40, u64::MAX - 1] {
            assert_eq!(Page::from_pfn(Pfn(pfn)).pfn(), Pfn(pfn));
        }
        assert_eq!(Page::from_pfn(Pfn(u64::MAX)).pfn(), Pfn(u64::MAX - 1));
        assert!(Page::from_pfn(Pfn(3)) < Page::from_pfn(Pfn(4)));
        assert_eq!(format!("{:?}", Page::from_pfn(Pfn(7))), "Page(Pfn(7))");
    }
}
