//! The bytes of allocated pages: `__GFP_ZERO` at allocation (prep_new_page()),
//! copies through the direct map for mapped pages, and through the mermap
//! for pages absent from it (guest_memfd's write() path in the series).
//!
//! The checks (an allocated block, bytes inside it, mapped for the
//! direct-map accessors) fail before anything is copied; a backing failure
//! part-way through a multi-page mermap copy leaves the earlier pages written.
//!
//! Page contents are shared memory the allocator hands out, not Rust
//! objects: like guest memory in rust-vmm's vm-memory they are only ever
//! copied in and out, never borrowed, so two owners of copies of one
//! [`super::Page`] cannot create aliasing references.

use super::error::{AccessError, AllocError};
use super::PageAllocator;
use crate::memmap::PageState;
use crate::sync::LockFamily;
use crate::types::{CpuId, Order, Pfn};

impl<L: LockFamily> PageAllocator<L> {
    /// Zeroes a new block: through the mermap when it is unmapped, the
    /// direct map otherwise. mirrors the `__GFP_ZERO` step of prep_new_page().
    pub(crate) fn zero_new_block(
        &self,
        cpu: CpuId,
        pfn: u32,
        order: u8,
        unmapped: bool,
    ) -> Result<(), AllocError> {
        let start = Pfn(pfn as u64);
        let nr_pages = 1u64 << order;
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
        let info = self.frames.memmap.info(pfn.0 as u32);
        if info.state() != PageState::Allocated {
            return Err(AccessError::NotAllocated(pfn));
        }
        let size = (info.order().nr_pages() as usize) << self.layout.page_shift;
        check_span(offset, len, size)?;
        Ok(info.order())
    }

    /// The direct-map address of byte `offset` of the allocated block at `pfn`.
    pub(crate) fn direct_map_bytes(
        &self,
        pfn: Pfn,
        offset: usize,
        len: usize,
    ) -> Result<*mut u8, AccessError> {
        let order = self.allocated_block(pfn, offset, len)?;
        if (0..order.nr_pages()).any(|page| !self.backing.is_direct_mapped(Pfn(pfn.0 + page))) {
            return Err(AccessError::NotMapped(pfn));
        }
        let base = self
            .backing
            .direct_map_ptr(pfn)
            .ok_or(AccessError::NoData)?;
        // SAFETY: `allocated_block` checked offset + len against the block's
        // size, and the direct map covers the whole block contiguously.
        Ok(unsafe { base.as_ptr().add(offset) })
    }

    /// Copies `bytes` into the allocated block at `pfn` through the direct map.
    pub(crate) fn write_mapped(
        &self,
        pfn: Pfn,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), AccessError> {
        let dst = self.direct_map_bytes(pfn, offset, bytes.len())?;
        // SAFETY: `dst..dst + len` lies in one allocated, mapped block of the
        // backing (checked above), which stays mapped for the backing's
        // lifetime; the source is a distinct Rust slice, so they cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
        Ok(())
    }

    /// Copies bytes of the allocated block at `pfn` into `out` through the
    /// direct map.
    pub(crate) fn read_mapped(
        &self,
        pfn: Pfn,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), AccessError> {
        let src = self.direct_map_bytes(pfn, offset, out.len())?;
        // SAFETY: as in `write_mapped`, with the roles of the buffers swapped.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        Ok(())
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

/// Splits bytes `offset..offset + len` of a run of pages of `page_size`
/// bytes into per-page pieces: (page index in the run, offset in that page,
/// offset in the caller's buffer, length).
pub(crate) fn page_pieces(
    page_size: usize,
    offset: usize,
    len: usize,
) -> impl Iterator<Item = (usize, usize, usize, usize)> {
    let mut done = 0;
    std::iter::from_fn(move || {
        if done == len {
            return None;
        }
        let at = offset + done;
        let in_page = at % page_size;
        let piece = (page_size - in_page).min(len - done);
        let item = (at / page_size, in_page, done, piece);
        done += piece;
        Some(item)
    })
}

/// An error unless bytes `offset..offset + len` lie in `size` bytes.
pub(crate) fn check_span(offset: usize, len: usize, size: usize) -> Result<(), AccessError> {
    let end = offset.saturating_add(len);
    if end > size {
        return Err(AccessError::OutOfBounds { offset, end, size });
    }
    Ok(())
}
