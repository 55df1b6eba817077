//! A `memfd_secret()`-like file over the unmapped pools: created empty, sized
//! once (ftruncate), mapped into its owner only, read and written there,
//! closed. mirrors mm/secretmem.c with the `__GFP_UNMAPPED` series' patch 22:
//! its pages come from `GFP_KERNEL | __GFP_UNMAPPED | __GFP_ZERO` (a
//! [`SecretRegion`]), so they are never in the direct map; the owner's
//! mapping is a [`OwnerView`] of the arena, which no forked process
//! inherits; closing clears the pages and frees them, and they go back to the
//! unmapped free lists (secretmem_free_folio()).
//!
//! Difference from the kernel: the pages are allocated when the size is set,
//! not on first fault, and `map` returns the one view of the file.
//!
//! Invariant: `view` is `Some` only while `region` is; the view maps the
//! region's pages in order.

use std::ops::Deref;

use thiserror::Error;

use super::SecretRegion;
use crate::backing::{BackingError, OwnerView};
use crate::error::Errno;
use crate::page_alloc::{AllocError, CpuHandle, FreeError, PageAllocator};
use crate::sync::LockFamily;
use crate::types::NodeId;

/// Why a secret-memory call failed; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SecretMemError {
    /// The size is zero or was set already (secretmem_setattr()).
    #[error("a secret memory file is sized once, to a non-zero size")]
    BadSize,
    /// The file has no pages to map, or no mapping to access.
    #[error("the secret memory file is not sized or not mapped")]
    NotMapped,
    /// The pages could not be allocated.
    #[error(transparent)]
    Alloc(#[from] AllocError),
    /// The backing failed (a simulated backing has no memory to map).
    #[error(transparent)]
    Backing(#[from] BackingError),
}

impl SecretMemError {
    /// The Linux error number the kernel would return.
    pub fn errno(self) -> Errno {
        match self {
            SecretMemError::BadSize => Errno::EINVAL,
            SecretMemError::NotMapped => Errno::EFAULT,
            SecretMemError::Alloc(_) => Errno::ENOMEM,
            SecretMemError::Backing(_) => Errno::EIO,
        }
    }
}

/// A secret memory file. See the module documentation.
#[derive(Debug, Default)]
pub struct SecretMemFile {
    region: Option<SecretRegion>,
    view: Option<OwnerView>,
    /// Bytes: the region's pages times the page size.
    size: usize,
}

impl SecretMemFile {
    /// An empty file (memfd_secret()).
    pub fn create() -> SecretMemFile {
        SecretMemFile::default()
    }

    /// Bytes in the file (whole pages; 0 until sized).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Sizes the file to `bytes`, rounded up to whole pages, allocated on
    /// `cpu` from `node`'s unmapped pools (ftruncate()).
    pub fn set_size<A, L>(
        &mut self,
        cpu: &CpuHandle<A, L>,
        bytes: usize,
        node: NodeId,
    ) -> Result<(), SecretMemError>
    where
        A: Deref<Target = PageAllocator<L>>,
        L: LockFamily,
    {
        if bytes == 0 || self.region.is_some() {
            return Err(SecretMemError::BadSize);
        }
        let page_size = 1usize << cpu.allocator().layout().page_shift;
        let nr_pages = bytes.div_ceil(page_size);
        self.region = Some(SecretRegion::alloc(cpu, nr_pages, node)?);
        self.size = nr_pages * page_size;
        Ok(())
    }

    /// Maps the file into its owner (mmap()): the pages, in order, in a
    /// range of this process that forked processes do not inherit, while
    /// the direct map keeps them out.
    pub fn map<A, L>(&mut self, cpu: &CpuHandle<A, L>) -> Result<&OwnerView, SecretMemError>
    where
        A: Deref<Target = PageAllocator<L>>,
        L: LockFamily,
    {
        let region = self.region.as_ref().ok_or(SecretMemError::NotMapped)?;
        if self.view.is_none() {
            let pfns: Vec<_> = region.pages().iter().map(|page| page.pfn()).collect();
            self.view = Some(cpu.allocator().backing().owner_view(&pfns)?);
        }
        self.view.as_ref().ok_or(SecretMemError::NotMapped)
    }

    /// Writes `bytes` at `offset` through the owner's mapping.
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<(), SecretMemError> {
        let view = self.view.as_ref().ok_or(SecretMemError::NotMapped)?;
        Ok(view.write(offset, bytes)?)
    }

    /// Reads bytes from `offset` into `out` through the owner's mapping.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), SecretMemError> {
        let view = self.view.as_ref().ok_or(SecretMemError::NotMapped)?;
        Ok(view.read(offset, out)?)
    }

    /// The file's pages (for tests that check they are unreachable).
    pub fn region(&self) -> Option<&SecretRegion> {
        self.region.as_ref()
    }

    /// Unmaps and closes the file: its pages are cleared and freed back to
    /// the unmapped free lists.
    pub fn close<A, L>(mut self, cpu: &CpuHandle<A, L>) -> Result<(), FreeError>
    where
        A: Deref<Target = PageAllocator<L>>,
        L: LockFamily,
    {
        self.view = None;
        match self.region.take() {
            Some(region) => region.free(cpu),
            None => Ok(()),
        }
    }
}
