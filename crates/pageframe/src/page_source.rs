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
//!
//! Fast path: an allocator that copies into the same block many times
//! resolves it once with [`PageSource::page_buffers`] and keeps the
//! [`PageBuffers`] (a pointer per page into the backing: the arena's direct
//! map, or the simulation's page buffer) beside the block. The backing stays
//! the only home of the bytes; what is saved per access is the memmap check,
//! the direct-map bit, the store lookup and the trait calls. Invariant: a
//! holder drops a block's buffers before it frees the block, and copies
//! through them only as the block's owner (`&mut` for writes). Unmapped
//! blocks, and a simulation that drops contents, resolve to `None` and keep
//! every access on [`PageSource::write`] / [`PageSource::read`].

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Deref;
use std::ptr::NonNull;

use crate::backing::page_pieces;
use crate::gfp::Gfp;
use crate::page_alloc::{AccessError, AllocError, FreeError};
use crate::page_alloc::{CpuHandle, Page, PageAllocator};
use crate::sync::LockFamily;
use crate::types::{NodeId, Order, Pfn};

/// A supplier of page blocks for an object allocator.
///
/// # Safety
///
/// Object allocators copy through the buffers [`Self::page_buffers`]
/// returns until they free the blocks with [`Self::free_pages`]. An
/// implementor that returns `Some` there (itself, or by forwarding an inner
/// source's answer) promises that the buffers stay valid for the block's
/// bytes and that the blocks are neither freed nor unmapped until its caller
/// frees them through `free_pages`. A source that keeps the default
/// `page_buffers` (always `None`) has nothing more to uphold.
pub unsafe trait PageSource {
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
    /// Resolves blocks allocated with `order` for direct copies, their
    /// pages numbered in the order given (see [`PageBuffers`]); `None`, the
    /// default, keeps their holder on [`Self::write`] and [`Self::read`]. A
    /// source wrapping another may forward this only if it frees a block
    /// only when its caller does.
    fn page_buffers(&self, _blocks: &[Pfn], _order: Order) -> Option<PageBuffers> {
        None
    }
}

/// The pages of allocated blocks resolved for direct copies: a pointer per
/// page to its `page_size` bytes in the backing. Only this crate makes one
/// ([`PageSource::page_buffers`] of a [`CpuPages`]).
///
/// The pointers stay valid while the blocks stay allocated (the allocator
/// unmaps and zeroes only free or newly allocated pages) and the allocator
/// lives (the source that resolved them holds it). Its holder drops it
/// before freeing any of the blocks.
pub struct PageBuffers {
    pages: Box<[NonNull<u8>]>,
    page_size: usize,
}

// SAFETY: the pointers lead into the backing, which is `Send + Sync`; the
// bytes are only copied, never borrowed, and writes need `&mut self`.
unsafe impl Send for PageBuffers {}
// SAFETY: as above; through `&self` the bytes are only read.
unsafe impl Sync for PageBuffers {}

impl PageBuffers {
    /// The first byte of `len` bytes at `offset` of page `page`; panics
    /// when they are not inside that page.
    #[inline(always)]
    fn at(&self, page: usize, offset: usize, len: usize) -> *mut u8 {
        assert!(
            offset <= self.page_size && len <= self.page_size - offset,
            "bytes {offset}+{len} outside a page of {}",
            self.page_size
        );
        self.pages[page].as_ptr().wrapping_add(offset)
    }

    /// Copies `bytes` to `offset` of page `page` (numbered over the blocks).
    ///
    /// # Safety
    /// No block has been freed since they were resolved.
    #[inline(always)]
    pub(crate) unsafe fn write(&mut self, page: usize, offset: usize, bytes: &[u8]) {
        let to = self.at(page, offset, bytes.len());
        // SAFETY: `at` checked that the bytes lie in the page; the page is
        // still allocated to the holder (the caller's promise), so its
        // buffer is live and mapped; `&mut self` makes the holder the only
        // writer; `bytes` is a Rust slice outside the backing.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), to, bytes.len()) }
    }

    /// Copies `bytes` to byte `offset` of the pages taken as one run,
    /// split at page boundaries.
    ///
    /// # Safety
    /// As [`Self::write`].
    #[inline]
    pub(crate) unsafe fn write_run(&mut self, offset: usize, bytes: &[u8]) {
        for (page, in_page, from, len) in page_pieces(self.page_size, offset, bytes.len()) {
            // SAFETY: the caller's promise, passed on.
            unsafe { self.write(page, in_page, &bytes[from..from + len]) }
        }
    }

    /// Copies bytes from byte `offset` of the pages taken as one run into
    /// `out`, as [`Self::write_run`].
    ///
    /// # Safety
    /// As [`Self::write`].
    #[inline]
    pub(crate) unsafe fn read_run(&self, offset: usize, out: &mut [u8]) {
        for (page, in_page, to, len) in page_pieces(self.page_size, offset, out.len()) {
            // SAFETY: the caller's promise, passed on.
            unsafe { self.read(page, in_page, &mut out[to..to + len]) }
        }
    }

    /// Copies bytes from `offset` of page `page` of the block into `out`.
    ///
    /// # Safety
    /// As [`Self::write`].
    #[inline(always)]
    pub(crate) unsafe fn read(&self, page: usize, offset: usize, out: &mut [u8]) {
        let from = self.at(page, offset, out.len());
        // SAFETY: as in `write`, with source and destination swapped;
        // `out` is a Rust slice outside the backing.
        unsafe { std::ptr::copy_nonoverlapping(from, out.as_mut_ptr(), out.len()) }
    }
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

// SAFETY: the buffers come from the allocator's own block_bytes() for blocks
// this source allocated; a block is freed only by free_pages().
unsafe impl<A, L> PageSource for CpuPages<A, L>
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

    fn page_buffers(&self, blocks: &[Pfn], order: Order) -> Option<PageBuffers> {
        let mut pages = Vec::with_capacity(blocks.len() << order.0);
        for pfn in blocks {
            self.handle
                .allocator()
                .block_bytes(*pfn, order, &mut pages)?;
        }
        Some(PageBuffers {
            pages: pages.into_boxed_slice(),
            page_size: self.page_size,
        })
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
