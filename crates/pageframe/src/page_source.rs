//! Where the object allocators (slab, zsmalloc, afmalloc) get their pages,
//! and what those pages contain.
//!
//! [`PageSource`] is the narrow slice of the page-allocator API they use:
//! allocate and free a block of `1 << order` pages. [`CpuPages`] implements it
//! over a [`CpuHandle`] and a home node; tests wrap it to inject failures.
//!
//! [`PageData`] is the simulated contents of those pages. The simulated page
//! allocator has no bytes behind its PFNs, yet zsmalloc and afmalloc must
//! give back exactly the bytes they were given, and an object that spans two
//! pages must really be split over two pages' bytes. So each pool keeps, per
//! block it holds (keyed by the block's head PFN), a buffer of the block's
//! size. All byte access of the object allocators goes through this one type,
//! so that it can later be moved behind the backing trait (an Arena maps the
//! PFN to real memory instead).
//!
//! Invariant: a block has a buffer only while its owner holds the block
//! (`detach` is called before the pages go back to the page allocator).
//! Buffers are created lazily on first write; an unwritten block reads as
//! zeros.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Deref;

use crate::gfp::Gfp;
use crate::page_alloc::{AllocError, FreeError};
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
}

/// A multiplicative hash for PFN keys: PFNs are dense integers, SipHash
/// would cost more than the copy it guards.
#[derive(Default, Clone, Copy)]
pub struct PfnHasher(u64);

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
pub type PfnMap<V> = HashMap<Pfn, V, BuildHasherDefault<PfnHasher>>;

/// Names one block's buffer in a [`PageData`]: an index, so that hot paths
/// reach the bytes without hashing the PFN (as the kernel keeps a
/// `struct page *` rather than looking the PFN up again).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockId(u32);

/// Simulated contents of the page blocks one pool holds (see the module
/// header). Keyed by the head PFN of each block; [`PageData::attach`] also
/// returns a [`BlockId`] for direct access.
#[derive(Default)]
pub struct PageData {
    by_pfn: PfnMap<u32>,
    buffers: Vec<Option<Box<[u8]>>>,
    free_ids: Vec<u32>,
    /// Buffers of freed order-0 blocks, reused so that churn does not churn
    /// the host allocator. Their old bytes stay (pages are not zeroed).
    spare: Vec<Box<[u8]>>,
    page_size: usize,
}

/// How many spare order-0 buffers a pool keeps at most.
const SPARE_LIMIT: usize = 256;

impl PageData {
    /// An empty store for pages of `page_size` bytes.
    pub fn new(page_size: usize) -> PageData {
        PageData {
            page_size,
            ..PageData::default()
        }
    }

    /// Blocks that have a buffer.
    pub fn nr_blocks(&self) -> usize {
        self.by_pfn.len()
    }

    /// True when the block at `pfn` has a buffer.
    pub fn has_block(&self, pfn: Pfn) -> bool {
        self.by_pfn.contains_key(&pfn)
    }

    /// Gives the block at `pfn` a buffer (if it has none) and returns its id.
    pub fn attach(&mut self, pfn: Pfn, order: Order) -> BlockId {
        if let Some(id) = self.by_pfn.get(&pfn) {
            return BlockId(*id);
        }
        let len = self.page_size << order.0;
        let buffer = match self.spare.pop() {
            Some(buffer) if buffer.len() == len => buffer,
            _ => vec![0u8; len].into_boxed_slice(),
        };
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.buffers[id as usize] = Some(buffer);
                id
            }
            None => {
                self.buffers.push(Some(buffer));
                (self.buffers.len() - 1) as u32
            }
        };
        self.by_pfn.insert(pfn, id);
        BlockId(id)
    }

    /// The bytes of an attached block.
    #[inline]
    pub fn bytes(&self, id: BlockId) -> &[u8] {
        self.buffers[id.0 as usize]
            .as_deref()
            .expect("attached block")
    }

    /// The bytes of an attached block, writable.
    #[inline]
    pub fn bytes_mut(&mut self, id: BlockId) -> &mut [u8] {
        self.buffers[id.0 as usize]
            .as_deref_mut()
            .expect("attached block")
    }

    /// The block's bytes for reading; `None` when never written.
    #[inline]
    pub fn block(&self, pfn: Pfn) -> Option<&[u8]> {
        self.by_pfn.get(&pfn).map(|id| self.bytes(BlockId(*id)))
    }

    /// The block's bytes for writing, created (zeroed) on first use.
    #[inline]
    pub fn block_mut(&mut self, pfn: Pfn, order: Order) -> &mut [u8] {
        let id = self.attach(pfn, order);
        self.bytes_mut(id)
    }

    /// Copies `out.len()` bytes from `offset` of the block into `out`.
    #[inline]
    pub fn read(&self, pfn: Pfn, offset: usize, out: &mut [u8]) {
        match self.block(pfn) {
            Some(bytes) => out.copy_from_slice(&bytes[offset..offset + out.len()]),
            None => out.fill(0),
        }
    }

    /// Copies `data` to `offset` of the block.
    #[inline]
    pub fn write(&mut self, pfn: Pfn, order: Order, offset: usize, data: &[u8]) {
        self.block_mut(pfn, order)[offset..offset + data.len()].copy_from_slice(data);
    }

    /// The block leaves its owner: its bytes are dropped.
    pub fn detach(&mut self, pfn: Pfn) {
        if let Some(id) = self.by_pfn.remove(&pfn) {
            let buffer = self.buffers[id as usize].take().expect("attached block");
            self.free_ids.push(id);
            if buffer.len() == self.page_size && self.spare.len() < SPARE_LIMIT {
                self.spare.push(buffer);
            }
        }
    }
}
