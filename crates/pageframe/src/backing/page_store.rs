//! The simulated backing's page contents: a sparse store of page buffers,
//! the only home of a simulated page's bytes.
//!
//! Owns: one buffer of `page_size` bytes per page that was ever written and
//! not zeroed since, found through a two-level table (a directory of chunks
//! of [`CHUNK_PAGES`] slots), both levels allocated on first write. A page
//! without a buffer reads as zeros, so a TiB machine costs a directory of
//! `nr_pages / 512` pointers until pages are written.
//!
//! Lifecycle, as real memory has it: zeroing a page (`__GFP_ZERO`,
//! clear_page()) drops its buffer; a freed page keeps its bytes until it is
//! zeroed or written again, as the arena's pages do. A cost-model run of
//! more memory than the host has may turn keeping off: writes are then
//! counted and charged by the backing but their bytes dropped.
//!
//! Concurrency: the table is lock-free (a slot is installed by
//! compare-and-swap, a lost race frees its own buffer). A page's bytes are
//! only ever copied in and out through raw pointers, never borrowed: the
//! page belongs to whoever the allocator gave it to, and that owner
//! serialises accesses to it (including the zeroing that drops its buffer).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::{null_mut, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use super::BackingError;
use crate::types::Pfn;

/// Pages per chunk of the table.
const CHUNK_PAGES: usize = 512;

/// One chunk of the table: a buffer pointer per page.
struct Chunk {
    pages: [AtomicPtr<u8>; CHUNK_PAGES],
}

/// A sparse store of page contents (see the module documentation).
pub(crate) struct PageStore {
    page_size: usize,
    nr_pages: u64,
    chunks: Box<[AtomicPtr<Chunk>]>,
    /// False when writes are discarded (see [`PageStore::set_kept`]).
    kept: AtomicBool,
}

impl std::fmt::Debug for PageStore {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(out, "PageStore({} pages written)", self.nr_written())
    }
}

impl PageStore {
    /// An empty store for `nr_pages` pages of `page_size` bytes; fails when
    /// the directory cannot be allocated.
    pub(crate) fn new(nr_pages: u64, page_size: usize) -> Result<PageStore, BackingError> {
        let nr_chunks = usize::try_from(nr_pages.div_ceil(CHUNK_PAGES as u64))
            .map_err(|_| BackingError::Unsupported("the backing is too large"))?;
        let mut chunks = Vec::new();
        chunks
            .try_reserve_exact(nr_chunks)
            .map_err(|_| BackingError::Unsupported("no memory for the page store"))?;
        chunks.resize_with(nr_chunks, || AtomicPtr::new(null_mut()));
        Ok(PageStore {
            page_size,
            nr_pages,
            chunks: chunks.into_boxed_slice(),
            kept: AtomicBool::new(true),
        })
    }

    fn page_layout(&self) -> Layout {
        // A power of two up to the address space: always a valid layout.
        Layout::from_size_align(self.page_size, 1).expect("page layout")
    }

    /// The slot of `pfn`, creating its chunk when `create`; `None` when the
    /// chunk does not exist (and is not to be created). `pfn` is in range.
    fn slot(&self, pfn: u64, create: bool) -> Option<&AtomicPtr<u8>> {
        let chunk_index = (pfn / CHUNK_PAGES as u64) as usize;
        let in_chunk = (pfn % CHUNK_PAGES as u64) as usize;
        let entry = &self.chunks[chunk_index];
        let mut chunk = entry.load(Ordering::Acquire);
        if chunk.is_null() {
            if !create {
                return None;
            }
            let fresh = Box::into_raw(Box::new(Chunk {
                pages: std::array::from_fn(|_| AtomicPtr::new(null_mut())),
            }));
            chunk = match entry.compare_exchange(
                null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => fresh,
                Err(winner) => {
                    // SAFETY: `fresh` came from Box::into_raw above and was
                    // never published.
                    drop(unsafe { Box::from_raw(fresh) });
                    winner
                }
            };
        }
        // SAFETY: a published chunk lives until the store is dropped.
        Some(unsafe { &(*chunk).pages[in_chunk] })
    }

    /// The buffer of `pfn`, created zeroed when missing and `create`.
    fn buffer(&self, pfn: u64, create: bool) -> Result<Option<*mut u8>, BackingError> {
        let Some(slot) = self.slot(pfn, create) else {
            return Ok(None);
        };
        let buffer = slot.load(Ordering::Acquire);
        if !buffer.is_null() || !create {
            return Ok((!buffer.is_null()).then_some(buffer));
        }
        // SAFETY: the layout has a non-zero size (a page).
        let fresh = unsafe { alloc_zeroed(self.page_layout()) };
        if fresh.is_null() {
            return Err(BackingError::Unsupported("no memory for a page's contents"));
        }
        match slot.compare_exchange(null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => Ok(Some(fresh)),
            Err(winner) => {
                // SAFETY: `fresh` was allocated above with this layout and
                // never published.
                unsafe { dealloc(fresh, self.page_layout()) };
                Ok(Some(winner))
            }
        }
    }

    /// The buffer of page `pfn` (in range), made zeroed if missing, for an
    /// owner that copies through it directly (see `Backing::page_bytes`);
    /// `None` while writes are dropped or when no memory is left for it.
    /// It lives until the page is zeroed or the store dropped.
    pub(crate) fn page_bytes(&self, pfn: Pfn) -> Option<NonNull<u8>> {
        debug_assert!(pfn.0 < self.nr_pages);
        if !self.kept.load(Ordering::Relaxed) {
            return None;
        }
        self.buffer(pfn.0, true)
            .ok()
            .flatten()
            .and_then(NonNull::new)
    }

    /// Copies `bytes` to `offset` of page `pfn`; the caller checked that the
    /// page is in the store and the bytes fit in it.
    pub(crate) fn write(&self, pfn: Pfn, offset: usize, bytes: &[u8]) -> Result<(), BackingError> {
        debug_assert!(pfn.0 < self.nr_pages && offset + bytes.len() <= self.page_size);
        if bytes.is_empty() || !self.kept.load(Ordering::Relaxed) {
            return Ok(());
        }
        let buffer = self.buffer(pfn.0, true)?.expect("created");
        // SAFETY: the buffer is `page_size` bytes and `offset + len` fits in
        // it (checked by the caller); the page's owner serialises accesses;
        // `bytes` is a Rust slice, not inside the store.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.add(offset), bytes.len()) };
        Ok(())
    }

    /// Copies bytes of page `pfn` from `offset` into `out`; a page never
    /// written reads as zeros. The caller checked the bounds.
    pub(crate) fn read(&self, pfn: Pfn, offset: usize, out: &mut [u8]) {
        debug_assert!(pfn.0 < self.nr_pages && offset + out.len() <= self.page_size);
        match self.buffer(pfn.0, false) {
            // SAFETY: as in `write`, with the roles of the buffers swapped.
            Ok(Some(buffer)) => unsafe {
                std::ptr::copy_nonoverlapping(buffer.add(offset), out.as_mut_ptr(), out.len())
            },
            _ => out.fill(0),
        }
    }

    /// Zeroes pages `start..start + nr_pages` (in range, checked by the
    /// caller): their buffers are dropped.
    pub(crate) fn zero(&self, start: Pfn, nr_pages: u64) {
        let end = start.0 + nr_pages;
        let mut pfn = start.0;
        while pfn < end {
            let chunk_end = (pfn / CHUNK_PAGES as u64 + 1) * CHUNK_PAGES as u64;
            match self.slot(pfn, false) {
                None => pfn = chunk_end,
                Some(_) => {
                    for page in pfn..chunk_end.min(end) {
                        let slot = self.slot(page, false).expect("chunk exists");
                        let buffer = slot.swap(null_mut(), Ordering::AcqRel);
                        if !buffer.is_null() {
                            // SAFETY: the buffer was allocated with this
                            // layout and is no longer reachable.
                            unsafe { dealloc(buffer, self.page_layout()) };
                        }
                    }
                    pfn = chunk_end;
                }
            }
        }
    }

    /// Keeps (the default) or discards what later writes copy in. Discarding
    /// is for cost-model runs of more memory than the host has: bytes already
    /// stored stay, new writes are dropped, unwritten pages read as zeros.
    pub(crate) fn set_kept(&self, kept: bool) {
        self.kept.store(kept, Ordering::Relaxed);
    }

    /// Pages holding a buffer (for tests and `describe`).
    pub(crate) fn nr_written(&self) -> u64 {
        self.chunks
            .iter()
            .map(|entry| entry.load(Ordering::Acquire))
            .filter(|chunk| !chunk.is_null())
            .map(|chunk| {
                // SAFETY: a published chunk lives until the store is dropped.
                let chunk = unsafe { &*chunk };
                chunk
                    .pages
                    .iter()
                    .filter(|page| !page.load(Ordering::Relaxed).is_null())
                    .count() as u64
            })
            .sum()
    }
}

impl Drop for PageStore {
    fn drop(&mut self) {
        let layout = self.page_layout();
        for entry in self.chunks.iter() {
            let chunk = entry.swap(null_mut(), Ordering::AcqRel);
            if chunk.is_null() {
                continue;
            }
            // SAFETY: published chunks come from Box::into_raw and are
            // unreachable once swapped out; `&mut self` excludes users.
            let chunk = unsafe { Box::from_raw(chunk) };
            for page in chunk.pages.iter() {
                let buffer = page.load(Ordering::Relaxed);
                if !buffer.is_null() {
                    // SAFETY: allocated with `layout`, unreachable now.
                    unsafe { dealloc(buffer, layout) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritten_pages_read_zero_and_zeroing_drops_buffers() {
        let store = PageStore::new(2000, 4096).unwrap();
        let mut out = [0xffu8; 8];
        store.read(Pfn(1999), 100, &mut out);
        assert_eq!(out, [0; 8]);
        store.write(Pfn(1999), 100, b"abcdefgh").unwrap();
        store.write(Pfn(3), 0, b"x").unwrap();
        store.read(Pfn(1999), 100, &mut out);
        assert_eq!(&out, b"abcdefgh");
        assert_eq!(store.nr_written(), 2);
        store.zero(Pfn(0), 1999);
        assert_eq!(store.nr_written(), 1);
        store.zero(Pfn(1999), 1);
        store.read(Pfn(1999), 100, &mut out);
        assert_eq!(out, [0; 8]);
        assert_eq!(store.nr_written(), 0);
        store.set_kept(false);
        store.write(Pfn(5), 0, b"dropped").unwrap();
        store.read(Pfn(5), 0, &mut out);
        assert_eq!(out, [0; 8]);
        assert_eq!(store.nr_written(), 0);
    }
}
