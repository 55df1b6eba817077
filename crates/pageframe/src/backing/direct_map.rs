//! The direct map's bookkeeping, shared by both backings: the backing's
//! geometry (pages, bytes per page), the bounds checks every operation starts
//! with, and the mapped state of every page.
//!
//! The state is one bit per page, 1 = unmapped, in `AtomicU64` words
//! allocated zeroed: a fresh backing has every page mapped and costs only
//! untouched zero pages, so a simulated TiB (2^28 pages) asks for a 32 MiB
//! bitmap the OS hands out lazily.
//!
//! Invariant: bit `p` is set iff page `p` was last passed to an unmap and not
//! remapped since. Bits past `nr_pages` in the last word stay 0. What the bit
//! means for the hardware (or the OS mapping) is the backing's business:
//! [`DirectMap::set_valid`] changes the bit only after the backing's
//! protection change succeeded, so a failed change leaves the state as it was.

use std::alloc::{alloc_zeroed, Layout};
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::counters::EventCounters;
use super::BackingError;
use crate::types::Pfn;

const BITS_PER_WORD: u64 = u64::BITS as u64;

/// Geometry, bounds checks and the mapped-state bitmap of a backing.
#[derive(Debug)]
pub(crate) struct DirectMap {
    nr_pages: u64,
    page_size: usize,
    unmapped: Box<[AtomicU64]>,
}

impl DirectMap {
    /// `nr_pages` pages of `page_size` bytes (a power of two), all mapped.
    pub(crate) fn new(nr_pages: u64, page_size: usize) -> Result<DirectMap, BackingError> {
        DirectMap::check_geometry(nr_pages, page_size)?;
        Ok(DirectMap {
            nr_pages,
            page_size,
            unmapped: zeroed_words(nr_pages.div_ceil(BITS_PER_WORD))?,
        })
    }

    /// Checks what [`DirectMap::new`] needs, before anything is built.
    pub(crate) fn check_geometry(nr_pages: u64, page_size: usize) -> Result<(), BackingError> {
        if nr_pages == 0 {
            return Err(BackingError::Unsupported(
                "a backing needs at least one page",
            ));
        }
        if !page_size.is_power_of_two() {
            return Err(BackingError::Unsupported(
                "the page size must be a power of two",
            ));
        }
        Ok(())
    }

    /// Pages in the backing.
    pub(crate) fn nr_pages(&self) -> u64 {
        self.nr_pages
    }

    /// Bytes per page.
    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    /// `start..start + nr_pages` as PFN numbers, or `OutOfRange`.
    pub(crate) fn check_range(
        &self,
        start: Pfn,
        nr_pages: u64,
    ) -> Result<Range<u64>, BackingError> {
        match start.0.checked_add(nr_pages) {
            Some(end) if end <= self.nr_pages => Ok(start.0..end),
            _ => Err(BackingError::OutOfRange { start, nr_pages }),
        }
    }

    /// Checks that bytes `offset..offset + len` lie inside one page.
    pub(crate) fn check_bytes(&self, offset: usize, len: usize) -> Result<(), BackingError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.page_size => Ok(()),
            end => Err(BackingError::BadOffset {
                offset,
                end: end.unwrap_or(usize::MAX),
                page_size: self.page_size,
            }),
        }
    }

    /// Checks that bytes `offset..offset + len` from the start of page
    /// `pfn` (a run of pages: `offset` may pass the first page) lie inside
    /// the backing and in mapped pages; returns the first byte's offset in
    /// the backing. Overflow-proof: every sum is checked.
    pub(crate) fn check_mapped_bytes(
        &self,
        pfn: Pfn,
        offset: usize,
        len: usize,
    ) -> Result<u64, BackingError> {
        let page_size = self.page_size as u64;
        let out_of_range = BackingError::OutOfRange {
            start: pfn,
            nr_pages: 1,
        };
        let start = u64::try_from(offset)
            .ok()
            .and_then(|offset| pfn.0.checked_mul(page_size)?.checked_add(offset))
            .ok_or(out_of_range)?;
        let end = u64::try_from(len)
            .ok()
            .and_then(|len| start.checked_add(len))
            .ok_or(out_of_range)?;
        if len == 0 {
            return Ok(start);
        }
        let first = start / page_size;
        let last = (end - 1) / page_size;
        self.check_mapped(Pfn(first), last - first + 1)?;
        Ok(start)
    }

    /// True while `pfn` is inside the backing and mapped.
    pub(crate) fn is_mapped(&self, pfn: Pfn) -> bool {
        pfn.0 < self.nr_pages && !self.is_unmapped_bit(pfn.0)
    }

    /// Checks that `nr_pages` pages from `start` are inside and all mapped
    /// (`NotMapped` names the first that is not); returns them.
    pub(crate) fn check_mapped(
        &self,
        start: Pfn,
        nr_pages: u64,
    ) -> Result<Range<u64>, BackingError> {
        let pages = self.check_range(start, nr_pages)?;
        match pages.clone().map(Pfn).find(|pfn| !self.is_mapped(*pfn)) {
            Some(pfn) => Err(BackingError::NotMapped(pfn)),
            None => Ok(pages),
        }
    }

    /// Removes (`valid` false) or restores `nr_pages` pages from `start`:
    /// `protect` makes the change (a simulation has none to make), then the
    /// state bits and the counters record it. An empty range is a no-op.
    /// mirrors set_direct_map_valid_noflush(), followed by
    /// flush_tlb_kernel_range() when removing.
    pub(crate) fn set_valid(
        &self,
        counters: &EventCounters,
        start: Pfn,
        nr_pages: u64,
        valid: bool,
        protect: impl FnOnce(Range<u64>) -> Result<(), BackingError>,
    ) -> Result<(), BackingError> {
        let pages = self.check_range(start, nr_pages)?;
        if pages.is_empty() {
            return Ok(());
        }
        protect(pages.clone())?;
        self.set_unmapped(pages, !valid);
        if valid {
            counters.direct_map_remap(nr_pages);
        } else {
            counters.direct_map_unmap(nr_pages);
        }
        Ok(())
    }

    fn set_unmapped(&self, pages: Range<u64>, unmapped: bool) {
        let mut pfn = pages.start;
        while pfn < pages.end {
            let word = pfn / BITS_PER_WORD;
            let first_bit = pfn % BITS_PER_WORD;
            let bits = (BITS_PER_WORD - first_bit).min(pages.end - pfn);
            let mask = (u64::MAX >> (BITS_PER_WORD - bits)) << first_bit;
            let cell = &self.unmapped[word as usize];
            if unmapped {
                cell.fetch_or(mask, Ordering::Relaxed);
            } else {
                cell.fetch_and(!mask, Ordering::Relaxed);
            }
            pfn += bits;
        }
    }

    fn is_unmapped_bit(&self, pfn: u64) -> bool {
        let word = self.unmapped[(pfn / BITS_PER_WORD) as usize].load(Ordering::Relaxed);
        word & (1 << (pfn % BITS_PER_WORD)) != 0
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

/// `nr_words` zero words from the allocator's zeroed path (calloc: fresh
/// pages from the OS are not touched), or an error when memory is short.
fn zeroed_words(nr_words: u64) -> Result<Box<[AtomicU64]>, BackingError> {
    const TOO_BIG: BackingError =
        BackingError::Unsupported("no memory for the direct map's state bitmap");
    let nr_words = usize::try_from(nr_words).map_err(|_| TOO_BIG)?;
    let layout = Layout::array::<AtomicU64>(nr_words).map_err(|_| TOO_BIG)?;
    // SAFETY: `layout` has a non-zero size (`nr_words >= 1` because the
    // backing has at least one page), as `alloc_zeroed` requires.
    let words = NonNull::new(unsafe { alloc_zeroed(layout) }).ok_or(TOO_BIG)?;
    let slice = std::ptr::slice_from_raw_parts_mut(words.as_ptr().cast::<AtomicU64>(), nr_words);
    // SAFETY: the block was allocated by the global allocator with the layout
    // of `[AtomicU64; nr_words]`, which is what `Box<[AtomicU64]>` frees it
    // with; it is zeroed, and all-zero bytes are a valid `AtomicU64` (it has
    // the size and bit validity of `u64`); nothing else owns the block.
    Ok(unsafe { Box::from_raw(slice) })
}
