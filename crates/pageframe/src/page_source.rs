//! Where the object allocators (slab, zsmalloc, afmalloc) get their pages,
//! and how they reach those pages' bytes.
//!
//! [`PageSource`] is the narrow slice of the page-allocator API they use:
//! allocate and free a block of `1 << order` pages, and copy bytes in and
//! out of an allocated block. [`CpuPages`] implements it over a
//! [`CpuHandle`] and a home node; tests wrap it to inject failures.
//!
//! Page contents live in the backing only (the arena's memory, or the
//! simulation's sparse store): an object allocator keeps no copy of them,
//! so the same pool runs over either backing with only the backing
//! differing. Contents follow the page lifecycle: a block allocated without
//! `__GFP_ZERO` holds whatever its pages last held.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Deref;

use crate::gfp::Gfp;
use crate::page_alloc::{AccessError, AllocError, FreeError};
use crate::page_alloc::{CpuHandle, Page, PageAllocator};
use crate::sync::LockFamily;
use crate::types::{NodeId, Order, Pfn};

/// A supplier of page blocks for an object allocator.
pub trait PageSource {
    /// Bytes per page.
    fn page_size(&self) -> usize;
    /// Allocates `1 << order` contiguous pages and returns the first PFN.
    fn alloc_pages(&mut self, gfp: Gfp, order: Order) -> Result<Pfn, AllocError>;
    /// Frees a block allocated with `order`.
    fn free_pages(&mut self, pfn: Pfn, order: Order) -> Result<(), FreeError>;
    /// Copies `bytes` to byte `offset` of the allocated block at `pfn` (in
    /// the backing: the direct map, or the mermap for unmapped pages).
    /// Nothing is copied on error.
    fn write(&mut self, pfn: Pfn, offset: usize, bytes: &[u8]) -> Result<(), AccessError>;
    /// Copies bytes from byte `offset` of the allocated block at `pfn` into
    /// `out`. Never-written simulated pages read as zeros.
    fn read(&self, pfn: Pfn, offset: usize, out: &mut [u8]) -> Result<(), AccessError>;
}

/// Pages from one CPU of a page allocator, preferring one node.
pub struct CpuPages<A, L>
where
    A: Deref<Target = PageAllocator<L>>,
    L: LockFamily,
{
    handle: CpuHandle<A, L>,
    node: NodeId,
    page_size: usize,
}

impl<A, L> CpuPages<A, L>
where
    A: Deref<Target = PageAllocator<L>>,
    L: LockFamily,
{
    /// Pages allocated on `handle`'s CPU, preferring that CPU's node.
    pub fn new(handle: CpuHandle<A, L>) -> CpuPages<A, L> {
        let layout = handle.allocator().layout();
        let node = layout
            .cpu_node
            .get(handle.cpu().index())
            .copied()
            .unwrap_or(NodeId(0));
        let page_size = 1usize << layout.page_shift;
        CpuPages {
            handle,
            node,
            page_size,
        }
    }

    /// The CPU handle.
    pub fn handle(&self) -> &CpuHandle<A, L> {
        &self.handle
    }
}

impl<A, L> PageSource for CpuPages<A, L>
where
    A: Deref<Target = PageAllocator<L>>,
    L: LockFamily,
{
    fn page_size(&self) -> usize {
        self.page_size
    }

    #[inline]
    fn alloc_pages(&mut self, gfp: Gfp, order: Order) -> Result<Pfn, AllocError> {
        self.handle
            .alloc_pages(gfp, order, self.node)
            .map(|page| page.pfn())
    }

    #[inline]
    fn free_pages(&mut self, pfn: Pfn, order: Order) -> Result<(), FreeError> {
        self.handle.free_pages(Page::from_pfn(pfn), order)
    }

    #[inline]
    fn write(&mut self, pfn: Pfn, offset: usize, bytes: &[u8]) -> Result<(), AccessError> {
        self.handle
            .allocator()
            .write_block(self.handle.cpu(), pfn, offset, bytes)
    }

    #[inline]
    fn read(&self, pfn: Pfn, offset: usize, out: &mut [u8]) -> Result<(), AccessError> {
        self.handle
            .allocator()
            .read_block(self.handle.cpu(), pfn, offset, out)
    }
}

/// A multiplicative hash for PFN keys: PFNs are dense integers, SipHash
/// would cost more than the copy it guards.
#[derive(Default, Clone, Copy)]
pub(crate) struct PfnHasher(u64);

impl Hasher for PfnHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 =
                (self.0.rotate_left(5) ^ u64::from(*byte)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0 ^ value).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 ^= self.0 >> 29;
    }
}

/// A `HashMap` keyed by PFN with [`PfnHasher`].
pub(crate) type PfnMap<V> = HashMap<Pfn, V, BuildHasherDefault<PfnHasher>>;
