//! The memmap: one 12-byte [`PageRecord`] per PFN, like `struct page` cut to
//! what the page allocator needs.
//!
//! The table is allocated zeroed and never initialised page by page: an
//! all-zero record means "not tracked" (a hole, a page inside a larger free or
//! allocated block, or a page not yet handed to the allocator). Only the first
//! page of a block carries state, so booting touches one record per
//! MAX_PAGE_ORDER block and a simulated TiB costs virtual memory, not time.
//!
//! Fields are atomics accessed with `Relaxed` ordering: a record belongs to one
//! owner at a time (the zone lock for buddy pages, a per-CPU lock for pcp
//! pages, the caller for allocated pages), and those locks order the accesses.
//! The atomics only make concurrent access defined; they add no fences.
//!
//! Invariants (checked by the allocator's `check_invariants()`):
//! - state Buddy: the record is the head of a free block of `order` on the
//!   free list of freetype index `freetype`, linked by `next`/`prev`.
//! - state Pcp: the head of a block of `order` on some CPU's per-CPU list.
//! - state Allocated: the head of a block of `order` owned by a caller;
//!   `freetype` is the migratetype it was allocated as.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use crate::freetype::FreeTypeIdx;
use crate::types::{Order, Pfn};

/// A PFN as the memmap indexes it: the crate-internal form of [`Pfn`] that
/// records, free lists and per-CPU lists hold (4 bytes, where a list entry
/// in the kernel is a `struct page` pointer). A memmap has at most
/// `u32::MAX` records (machine validation and hotplug keep the end PFN
/// below that), so every PFN it covers has an index and `u32::MAX` is free
/// to mean [`FrameIdx::NIL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct FrameIdx(u32);

impl FrameIdx {
    /// End of a free list (`next`/`prev` of the last/first entry).
    pub(crate) const NIL: FrameIdx = FrameIdx(u32::MAX);

    /// The index of `pfn`; `None` when no memmap can cover it.
    #[inline(always)]
    pub(crate) fn new(pfn: Pfn) -> Option<FrameIdx> {
        match u32::try_from(pfn.0) {
            Ok(index) if index != u32::MAX => Some(FrameIdx(index)),
            _ => None,
        }
    }

    /// The index of a PFN a memmap covers (checked with
    /// [`MemMap::covers`], or found in a zone span or a claimed block).
    /// Such a PFN is below `u32::MAX` (see [`MemMap::new`]), so the
    /// narrowing is exact; builds with debug assertions check it. Hot paths
    /// use this where [`Self::new`] would test again what the caller
    /// already knows.
    #[inline(always)]
    pub(crate) fn covered(pfn: Pfn) -> FrameIdx {
        debug_assert!(
            FrameIdx::new(pfn).is_some(),
            "PFN {pfn} is beyond every memmap"
        );
        FrameIdx(pfn.0 as u32)
    }

    /// The PFN.
    #[inline(always)]
    pub(crate) fn pfn(self) -> Pfn {
        Pfn(u64::from(self.0))
    }

    /// The position in the memmap's table.
    #[inline(always)]
    fn index(self) -> usize {
        self.0 as usize
    }

    /// The index `pages` pages on (inside the same memmap).
    #[inline(always)]
    pub(crate) fn offset(self, pages: u32) -> FrameIdx {
        FrameIdx(self.0 + pages)
    }

    /// The buddy of the order-`order` block headed here (`__find_buddy_pfn()`).
    #[inline(always)]
    pub(crate) fn buddy(self, order: Order) -> FrameIdx {
        FrameIdx(self.0 ^ (1 << order.0))
    }

    /// The head of the order-`order` block holding this page.
    #[inline(always)]
    pub(crate) fn align_down(self, order: Order) -> FrameIdx {
        FrameIdx(self.0 & !((1u32 << order.0) - 1))
    }

    /// True when this can head a block of `order`.
    #[inline(always)]
    pub(crate) fn is_aligned(self, order: Order) -> bool {
        self.0 & ((1u32 << order.0) - 1) == 0
    }
}

impl std::fmt::Display for FrameIdx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.pfn().fmt(f)
    }
}

/// What the allocator knows about a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PageState {
    /// Not the head of any block the allocator tracks.
    Untracked = 0,
    /// Head of a free block in the buddy lists (`PageBuddy`).
    Buddy = 1,
    /// Head of a free block on a per-CPU list.
    Pcp = 2,
    /// Head of an allocated block.
    Allocated = 3,
    /// Head of an allocated block whose free is in progress (shared allocator).
    Freeing = 4,
}

/// The packed `state | order << 8 | freetype << 16` word of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageInfo(u32);

impl PageInfo {
    /// The untracked (all-zero) word.
    pub const UNTRACKED: PageInfo = PageInfo(0);

    /// Packs a state, order and freetype index.
    #[inline(always)]
    pub fn new(state: PageState, order: Order, freetype: FreeTypeIdx) -> PageInfo {
        PageInfo(state as u32 | (order.0 as u32) << 8 | (freetype.index() as u32) << 16)
    }

    /// The state.
    #[inline]
    pub fn state(self) -> PageState {
        match self.0 & 0xff {
            1 => PageState::Buddy,
            2 => PageState::Pcp,
            3 => PageState::Allocated,
            4 => PageState::Freeing,
            _ => PageState::Untracked,
        }
    }

    /// The block order.
    #[inline]
    pub fn order(self) -> Order {
        Order((self.0 >> 8) as u8)
    }

    /// The freetype index (list of a buddy page, migratetype of an allocation).
    #[inline]
    pub fn freetype(self) -> FreeTypeIdx {
        // Only `new` packs this byte, from a valid index (the untracked
        // word holds 0, also valid).
        FreeTypeIdx::from_packed((self.0 >> 16) as u8)
    }
}

/// One page's record. All-zero bytes are a valid, untracked record.
#[repr(C)]
pub struct PageRecord {
    next: AtomicU32,
    prev: AtomicU32,
    info: AtomicU32,
}

impl PageRecord {
    /// The state word.
    #[inline]
    pub(crate) fn info(&self) -> PageInfo {
        PageInfo(self.info.load(Relaxed))
    }

    /// Sets the state word.
    #[inline]
    pub(crate) fn set_info(&self, info: PageInfo) {
        self.info.store(info.0, Relaxed)
    }

    /// Replaces the state word if it is still `current`; false if another
    /// thread changed it first.
    #[inline]
    pub(crate) fn exchange_info(&self, current: PageInfo, new: PageInfo) -> bool {
        self.info
            .compare_exchange(current.0, new.0, Relaxed, Relaxed)
            .is_ok()
    }
}

/// The per-PFN table for PFNs `0..len`.
pub struct MemMap {
    records: NonNull<PageRecord>,
    len: usize,
}

// SAFETY: the records are atomics, so shared access from several threads is
// data-race free; the table owns its allocation.
unsafe impl Send for MemMap {}
// SAFETY: as above: every access goes through an atomic.
unsafe impl Sync for MemMap {}

impl MemMap {
    /// A zeroed table for PFNs `0..len`; `None` if the memory cannot be had
    /// or `len` is beyond what a [`FrameIdx`] indexes.
    pub fn new(len: usize) -> Option<MemMap> {
        if len > u32::MAX as usize {
            return None;
        }
        let layout = Layout::array::<PageRecord>(len.max(1)).ok()?;
        // SAFETY: the layout has a non-zero size (at least one record).
        let raw = unsafe { alloc_zeroed(layout) } as *mut PageRecord;
        NonNull::new(raw).map(|records| MemMap { records, len })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes of metadata per page.
    pub const RECORD_BYTES: usize = std::mem::size_of::<PageRecord>();

    #[inline]
    fn record(&self, pfn: FrameIdx) -> &PageRecord {
        assert!(pfn.index() < self.len, "PFN {pfn} outside the memmap");
        // SAFETY: the index is in bounds (checked above); the allocation holds
        // `len` records initialised to zero, a valid bit pattern for atomics,
        // and lives as long as `self`.
        unsafe { &*self.records.as_ptr().add(pfn.index()) }
    }

    /// All records, indexed by [`FrameIdx`] (see [`Self::record_of`]). Loops over many pages index this slice
    /// rather than call [`Self::info`] each time: the slice's base and length
    /// stay in registers, where the table's fields would be reloaded after
    /// every atomic store.
    #[inline]
    pub(crate) fn records(&self) -> &[PageRecord] {
        // SAFETY: the allocation holds `len` records initialised to zero, a
        // valid bit pattern for atomics, and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.records.as_ptr(), self.len) }
    }

    /// The heads of the tracked blocks (any state but Untracked) of the
    /// PFNs `start..end`, in order, each with its state word: a walk that
    /// steps over each block's pages and over untracked records one at a
    /// time. The step after a head comes from the word yielded, so the
    /// caller may change that head's record (take the block off a list).
    /// `start..end` must lie within the memmap.
    pub(crate) fn heads(
        &self,
        start: Pfn,
        end: Pfn,
    ) -> impl Iterator<Item = (FrameIdx, PageInfo)> + '_ {
        let mut at = start.0;
        std::iter::from_fn(move || {
            while at < end.0 {
                let head = FrameIdx::covered(Pfn(at));
                let info = self.info(head);
                if info.state() == PageState::Untracked {
                    at += 1;
                    continue;
                }
                at += info.order().nr_pages();
                return Some((head, info));
            }
            None
        })
    }

    /// The record's state word.
    #[inline]
    pub fn info(&self, pfn: FrameIdx) -> PageInfo {
        self.record(pfn).info()
    }

    /// Sets the record's state word.
    #[inline]
    pub fn set_info(&self, pfn: FrameIdx, info: PageInfo) {
        self.record(pfn).set_info(info)
    }

    /// The next entry on the record's free list.
    #[inline]
    pub fn next(&self, pfn: FrameIdx) -> FrameIdx {
        FrameIdx(self.record(pfn).next.load(Relaxed))
    }

    /// The previous entry on the record's free list.
    #[inline]
    pub fn prev(&self, pfn: FrameIdx) -> FrameIdx {
        FrameIdx(self.record(pfn).prev.load(Relaxed))
    }

    /// Sets the next link.
    #[inline]
    pub fn set_next(&self, pfn: FrameIdx, next: FrameIdx) {
        self.record(pfn).next.store(next.0, Relaxed)
    }

    /// Sets the previous link.
    #[inline]
    pub fn set_prev(&self, pfn: FrameIdx, prev: FrameIdx) {
        self.record(pfn).prev.store(prev.0, Relaxed)
    }

    /// A copy of the table grown to `len` records (memory hotplug of PFNs
    /// beyond the boot memmap); new records are untracked. `None` if the
    /// memory cannot be had or `len` is smaller than the table.
    pub fn grown(&self, len: usize) -> Option<MemMap> {
        if len < self.len {
            return None;
        }
        let grown = MemMap::new(len)?;
        for (record, copy) in self.records().iter().zip(grown.records()) {
            copy.next.store(record.next.load(Relaxed), Relaxed);
            copy.prev.store(record.prev.load(Relaxed), Relaxed);
            copy.info.store(record.info.load(Relaxed), Relaxed);
        }
        Some(grown)
    }

    /// The record of `pfn` in a table from [`Self::records`].
    #[inline(always)]
    pub(crate) fn record_of(records: &[PageRecord], pfn: FrameIdx) -> &PageRecord {
        &records[pfn.index()]
    }

    /// True when the PFN has a record.
    #[inline]
    pub fn covers(&self, pfn: Pfn) -> bool {
        pfn.0 < self.len as u64
    }
}

impl Drop for MemMap {
    fn drop(&mut self) {
        let layout =
            Layout::array::<PageRecord>(self.len.max(1)).expect("layout was valid at allocation");
        // SAFETY: allocated in `new` with this same layout, and not freed since.
        unsafe { dealloc(self.records.as_ptr() as *mut u8, layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_at_most_16_bytes() {
        assert!(std::mem::size_of::<PageRecord>() <= 16);
        assert_eq!(MemMap::RECORD_BYTES, 12);
    }

    #[test]
    fn records_start_untracked_and_pack_their_fields() {
        let memmap = MemMap::new(1024).unwrap();
        let frame = |pfn: u64| FrameIdx::new(Pfn(pfn)).unwrap();
        assert_eq!(memmap.info(frame(1023)), PageInfo::UNTRACKED);
        let info = PageInfo::new(PageState::Buddy, Order(9), FreeTypeIdx::new(5).unwrap());
        memmap.set_info(frame(7), info);
        assert_eq!(memmap.info(frame(7)).state(), PageState::Buddy);
        assert_eq!(memmap.info(frame(7)).order(), Order(9));
        assert_eq!(memmap.info(frame(7)).freetype().index(), 5);
        assert!(memmap
            .record(frame(7))
            .exchange_info(info, PageInfo::UNTRACKED));
        assert!(!memmap
            .record(frame(7))
            .exchange_info(info, PageInfo::UNTRACKED));
    }
}
