//! The bytes of allocated pages: `__GFP_ZERO` at allocation (prep_new_page()),
//! copies through the direct map for mapped pages, and through the mermap
//! for pages absent from it (guest_memfd's write() path in the series).
//! The backing is the only home of page contents (the arena's memory, the
//! simulation's sparse store); the object allocators reach them through
//! [`PageAllocator::write_block`] / [`PageAllocator::read_block`], which pick
//! the direct map or the mermap per access, or resolve a block's pages once
//! with [`PageAllocator::block_bytes`] and copy through them directly.
//!
//! The checks (an allocated block, bytes inside it, mapped for the
//! direct-map accessors) fail before anything is copied; a backing failure
//! part-way through a multi-page mermap copy leaves the earlier pages written.
//!
//! Page contents are shared memory the allocator hands out, not Rust
//! objects: like guest memory in rust-vmm's vm-memory they are only ever
//! copied in and out, never borrowed, so two owners of copies of one
//! [`super::Page`] cannot create aliasing references.

use std::ptr::NonNull;

use super::error::{AccessError, AllocError};
use super::PageAllocator;
use crate::backing::BackingError;
use crate::memmap::{FrameIdx, PageState};
use crate::sync::LockFamily;
use crate::types::{CpuId, Order, Pfn};

pub(crate) use crate::backing::page_pieces;

impl<L: LockFamily> PageAllocator<L> {
    /// Zeroes a new block: through the mermap when it is unmapped, the
    /// direct map otherwise. mirrors the `__GFP_ZERO` step of prep_new_page().
    pub(crate) fn zero_new_block(
        &self,
        cpu: CpuId,
        pfn: FrameIdx,
        order: Order,
        unmapped: bool,
    ) -> Result<(), AllocError> {
        let start = pfn.pfn();
        let nr_pages = order.nr_pages();
        let zeroed = if unmapped {
            self.backing.zero_unmapped(cpu, start, nr_pages)
        } else {
            self.backing.zero_mapped(start, nr_pages)
        };
        zeroed.map_err(AllocError::Backing)
    }

    /// The order of the allocated block headed by `pfn`, and checks that
    /// `offset..offset + len` lies in it.
    fn allocated_block(&self, pfn: Pfn, offset: usize, len: usize) -> Result<Order, AccessError> {
        if !self.frames.memmap.covers(pfn) {
            return Err(AccessError::NotAllocated(pfn));
        }
        let info = self.frames.memmap.info(FrameIdx::covered(pfn));
        if info.state() != PageState::Allocated {
            return Err(AccessError::NotAllocated(pfn));
        }
        let size = (info.order().nr_pages() as usize) << self.layout.page_shift;
        check_span(offset, len, size)?;
        Ok(info.order())
    }

    /// Copies `bytes` into the allocated block at `pfn` through the direct map.
    pub(crate) fn write_mapped(
        &self,
        pfn: Pfn,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), AccessError> {
        self.allocated_block(pfn, offset, bytes.len())?;
        self.backing
            .write_mapped(pfn, offset, bytes)
            .map_err(mapped_error)
    }

    /// Copies bytes of the allocated block at `pfn` into `out` through the
    /// direct map.
    pub(crate) fn read_mapped(
        &self,
        pfn: Pfn,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), AccessError> {
        self.allocated_block(pfn, offset, out.len())?;
        self.backing
            .read_mapped(pfn, offset, out)
            .map_err(mapped_error)
    }

    /// Copies `bytes` into the allocated block at `pfn` wherever its pages
    /// are: through the direct map when every page touched is mapped, else
    /// through `cpu`'s mermap. The accessor of the object allocators.
    pub(crate) fn write_block(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), AccessError> {
        self.allocated_block(pfn, offset, bytes.len())?;
        match self.backing.write_mapped(pfn, offset, bytes) {
            Err(BackingError::NotMapped(_)) => self.write_unmapped(cpu, pfn, offset, bytes),
            done => done.map_err(AccessError::Backing),
        }
    }

    /// Copies bytes of the allocated block at `pfn` into `out` wherever its
    /// pages are, as [`Self::write_block`].
    pub(crate) fn read_block(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), AccessError> {
        self.allocated_block(pfn, offset, out.len())?;
        match self.backing.read_mapped(pfn, offset, out) {
            Err(BackingError::NotMapped(_)) => self.read_unmapped(cpu, pfn, offset, out),
            done => done.map_err(AccessError::Backing),
        }
    }

    /// Appends to `pages` where each page of the allocated block at `pfn`
    /// (of `order`) can be copied in and out directly
    /// ([`crate::backing::Backing::page_bytes`]): one pointer per page,
    /// valid until the block is freed. `None` when the block is not
    /// allocated at `order`, or a page has no such place (unmapped pages:
    /// the caller copies through [`Self::write_block`]).
    pub(crate) fn block_bytes(
        &self,
        pfn: Pfn,
        order: Order,
        pages: &mut Vec<NonNull<u8>>,
    ) -> Option<()> {
        if self.allocated_block(pfn, 0, 0).ok()? != order {
            return None;
        }
        for page in 0..order.nr_pages() {
            pages.push(self.backing.page_bytes(Pfn(pfn.0 + page))?);
        }
        Some(())
    }

    /// Copies `bytes` into the allocated block at `pfn` through `cpu`'s mermap.
    pub(crate) fn write_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), AccessError> {
        self.allocated_block(pfn, offset, bytes.len())?;
        let page_size = 1usize << self.layout.page_shift;
        for (page, in_page, from, len) in page_pieces(page_size, offset, bytes.len()) {
            let page = Pfn(pfn.0 + page as u64);
            self.backing
                .write_unmapped(cpu, page, in_page, &bytes[from..from + len])?;
        }
        Ok(())
    }

    /// Copies bytes of the allocated block at `pfn` into `out` through `cpu`'s mermap.
    pub(crate) fn read_unmapped(
        &self,
        cpu: CpuId,
        pfn: Pfn,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), AccessError> {
        self.allocated_block(pfn, offset, out.len())?;
        let page_size = 1usize << self.layout.page_shift;
        for (page, in_page, to, len) in page_pieces(page_size, offset, out.len()) {
            let page = Pfn(pfn.0 + page as u64);
            self.backing
                .read_unmapped(cpu, page, in_page, &mut out[to..to + len])?;
        }
        Ok(())
    }
}

/// A direct-map access to an unmapped page is the caller's error (EFAULT,
/// use the mermap); any other backing failure is the backing's.
fn mapped_error(err: BackingError) -> AccessError {
    match err {
        BackingError::NotMapped(pfn) => AccessError::NotMapped(pfn),
        other => AccessError::Backing(other),
    }
}

/// An error unless bytes `offset..offset + len` lie in `size` bytes.
/// Overflow-proof: an end past `usize::MAX` is out of bounds, reported as
/// `usize::MAX`.
pub(crate) fn check_span(offset: usize, len: usize, size: usize) -> Result<(), AccessError> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        end => Err(AccessError::OutOfBounds {
            offset,
            end: end.unwrap_or(usize::MAX),
            size,
        }),
    }
}
