//! Secret memory: pages no one reaches through the direct map, written and
//! read only through the mermap. mirrors mm/secretmem.c as the
//! `__GFP_UNMAPPED` series adopts it: pages come from
//! `alloc_pages(GFP_KERNEL | __GFP_UNMAPPED | __GFP_ZERO)` (so a fresh region
//! reads as zeros), and are cleared before they go back to the allocator
//! (secretmem_free_folio()), so the next owner never sees them.
//!
//! Invariant: every page of a live [`SecretRegion`] is an allocated order-0
//! block of an unmapped pageblock.

use std::ops::Deref;

use crate::gfp::Gfp;
use crate::page_alloc::{check_span, page_pieces, CpuHandle, Page, PageAllocator};
use crate::page_alloc::{AccessError, AllocError, FreeError};
use crate::sync::LockFamily;
use crate::types::{NodeId, Order};

/// The GFP mask of secret pages.
pub const SECRETMEM_GFP: Gfp = Gfp::KERNEL.union(Gfp::UNMAPPED).union(Gfp::ZERO);

/// A set of secret pages, as one `memfd_secret()` file would hold.
#[derive(Debug)]
pub struct SecretRegion {
    pages: Vec<Page>,
    page_size: usize,
}

impl SecretRegion {
    /// Allocates `nr_pages` zeroed unmapped pages on `cpu`, preferring
    /// `node`. All or nothing: on failure every page taken is freed again.
    pub fn alloc<A, L>(
        cpu: &CpuHandle<A, L>,
        nr_pages: usize,
        node: NodeId,
    ) -> Result<SecretRegion, AllocError>
    where
        A: Deref<Target = PageAllocator<L>>,
        L: LockFamily,
    {
        let mut pages = Vec::with_capacity(nr_pages);
        for _ in 0..nr_pages {
            match cpu.alloc_pages(SECRETMEM_GFP, Order(0), node) {
                Ok(page) => pages.push(page),
                Err(err) => {
                    for page in pages {
                        // Just allocated by us: the free cannot fail.
                        let _ = cpu.free_pages(page, Order(0));
                    }
                    return Err(err);
                }
            }
        }
        let page_size = 1usize << cpu.allocator().layout().page_shift;
        Ok(SecretRegion { pages, page_size })
    }

    /// Number of pages.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// True when the region has no page.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The pages (for tests that check they are unreachable).
    pub fn pages(&self) -> &[Page] {
        &self.pages
    }

    /// Writes `bytes` at byte `offset` of the region, through `cpu`'s mermap.
    pub fn write<A, L>(
        &self,
        cpu: &CpuHandle<A, L>,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), AccessError>
    where
        A: Deref<Target = PageAllocator<L>>,
        L: LockFamily,
    {
        check_span(offset, bytes.len(), self.pages.len() * self.page_size)?;
        for (index, in_page, from, len) in page_pieces(self.page_size, offset, bytes.len()) {
            cpu.write_unmapped(self.pages[index], in_page, &bytes[from..from + len])?;
        }
        Ok(())
    }

    /// Reads bytes from byte `offset` of the region into `out`, through
    /// `cpu`'s mermap.
    pub fn read<A, L>(
        &self,
        cpu: &CpuHandle<A, L>,
        offset: usize,
        out: &mut [u8],
    ) -> Result<(), AccessError>
    where
        A: Deref<Target = PageAllocator<L>>,
        L: LockFamily,
    {
        check_span(offset, out.len(), self.pages.len() * self.page_size)?;
        for (index, in_page, to, len) in page_pieces(self.page_size, offset, out.len()) {
            cpu.read_unmapped(self.pages[index], in_page, &mut out[to..to + len])?;
        }
        Ok(())
    }

    /// Clears every page and frees it (secretmem_free_folio()).
    pub fn free<A, L>(self, cpu: &CpuHandle<A, L>) -> Result<(), FreeError>
    where
        A: Deref<Target = PageAllocator<L>>,
        L: LockFamily,
    {
        let zeros = vec![0u8; self.page_size];
        for &page in &self.pages {
            // Clearing an allocated page of ours through the mermap can only
            // fail if the backing itself fails; the page is freed regardless.
            let _ = cpu.write_unmapped(page, 0, &zeros);
        }
        self.pages
            .iter()
            .try_for_each(|&page| cpu.free_pages(page, Order(0)))
    }
}
