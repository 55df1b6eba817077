//! Readahead: the state of a file's one descriptor (`struct
//! file_ra_state`) and the on-demand window that reads allocate the page
//! cache through. mirrors mm/readahead.c of 6.12 for a mapping without
//! large folios (an order-0 page cache): page_cache_sync_ra(),
//! page_cache_async_ra(), force_page_cache_ra(), get_init_ra_size(),
//! get_next_ra_size(), do_page_cache_ra() and page_cache_ra_unbounded(),
//! with page_cache_prev_miss() and page_cache_next_miss() over the file's
//! pages. Readahead pages are allocated with the mapping's GFP plus
//! `__GFP_NORETRY | __GFP_NOWARN` (readahead_gfp_mask()): a window stops
//! at the first page memory cannot give.
//!
//! Invariant (checked in `invariants`): only a page cache page carries
//! the readahead mark (`PG_readahead`).

use super::lru::{DIRTY, LOCKED, READAHEAD};
use super::{FileId, Mm, MmError, ReclaimEvent, MAPPING_GFP};
use crate::gfp::Gfp;
use crate::types::{CpuId, NodeId};

/// `struct file_ra_state` of a file's descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RaState {
    /// The first page of the last window.
    pub(super) start: u64,
    /// Pages in the last window.
    pub(super) size: u64,
    /// How many of its last pages start the next window when reached.
    pub(super) async_size: u64,
    /// The byte after the last read (`prev_pos`); -1 before the first
    /// (file_ra_state_init()).
    pub(super) prev_pos: i64,
}

impl Default for RaState {
    fn default() -> RaState {
        RaState {
            start: 0,
            size: 0,
            async_size: 0,
            prev_pos: -1,
        }
    }
}

/// force_page_cache_ra() reads in chunks of 2 MiB.
const FORCED_CHUNK_BYTES: u64 = 2 << 20;

/// get_init_ra_size(): the first window for a read of `size` pages: the
/// size rounded up to a power of two, times 4 when small, times 2 when
/// medium, else the maximum.
pub(super) fn init_window(size: u64, max: u64) -> u64 {
    let rounded = size.max(1).checked_next_power_of_two().unwrap_or(max);
    if rounded <= max / 32 {
        rounded * 4
    } else if rounded <= max / 4 {
        rounded * 2
    } else {
        max
    }
}

/// get_next_ra_size(): the window after one of `cur` pages.
pub(super) fn next_window(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl Mm<'_> {
    /// The device's readahead window in pages (`bdi->ra_pages`, from
    /// `read_ahead_kb`).
    pub(super) fn ra_pages(&self) -> u64 {
        kib_to_pages(self.config.read_ahead_kb, self.page_shift())
    }

    /// The device's largest I/O in pages (`bdi->io_pages`, from
    /// `max_sectors_kb`).
    fn io_pages(&self) -> u64 {
        kib_to_pages(self.config.max_sectors_kb, self.page_shift())
    }

    /// ractl_max_pages(): a request beyond the window may read up to the
    /// device's largest I/O.
    fn ra_max_pages(&self, req_count: u64) -> u64 {
        let (ra_pages, io_pages) = (self.ra_pages(), self.io_pages());
        if req_count > ra_pages && io_pages > ra_pages {
            req_count.min(io_pages)
        } else {
            ra_pages
        }
    }

    /// page_cache_sync_ra(): a read of `req_count` pages at `index` found
    /// no page there. Readahead off reads just the one page.
    pub(super) fn sync_readahead(
        &mut self,
        cpu: CpuId,
        node: NodeId,
        file: FileId,
        index: u64,
        req_count: u64,
    ) {
        if self.ra_pages() == 0 {
            self.force_readahead(cpu, node, file, index, 1);
            return;
        }
        let max_pages = self.ra_max_pages(req_count);
        let ra = self.files[file.0 as usize].ra;
        // `(unsigned long long)ra->prev_pos >> PAGE_SHIFT`: -1 is all ones.
        let prev_index = (ra.prev_pos as u64) >> self.page_shift();
        let window = if index == 0 || req_count > max_pages || index.wrapping_sub(prev_index) <= 1 {
            // A start of file, an oversized read, or a sequential miss.
            let size = init_window(req_count, max_pages);
            let async_size = if size > req_count {
                size - req_count
            } else {
                size >> 1
            };
            (size, async_size)
        } else {
            // The traces a sequential stream leaves in the cache.
            let miss = self.prev_miss(file, index - 1, max_pages);
            let mut contig = index.wrapping_sub(miss).wrapping_sub(1);
            if contig <= req_count {
                // A standalone small random read: as is, no state kept.
                self.ra_chunk(cpu, node, file, index, req_count, 0);
                return;
            }
            if miss == u64::MAX {
                // Cached from the start of the file: a long stream.
                contig = contig.saturating_mul(2);
            }
            (contig.saturating_add(req_count).min(max_pages), 1)
        };
        let slot = &mut self.files[file.0 as usize].ra;
        slot.start = index;
        (slot.size, slot.async_size) = window;
        self.ra_chunk(cpu, node, file, index, window.0, window.1);
    }

    /// page_cache_async_ra(): a read reached the marked page `index`
    /// (PFN `pfn`) with `req_count` pages of the request left from it.
    pub(super) fn async_readahead(
        &mut self,
        cpu: CpuId,
        node: NodeId,
        file: FileId,
        (index, pfn): (u64, u64),
        req_count: u64,
    ) {
        if self.ra_pages() == 0 {
            return;
        }
        self.lru.meta_mut(pfn).flags &= !READAHEAD;
        let max_pages = self.ra_max_pages(req_count);
        let ra = self.files[file.0 as usize].ra;
        let expected = ra.start.wrapping_add(ra.size).wrapping_sub(ra.async_size);
        let (start, size) = if index == expected {
            // The expected hit: push the window forward, ramped up.
            let size = ra.size.max(next_window(ra.size, max_pages));
            (ra.start.wrapping_add(ra.size), size)
        } else {
            // A marked page without valid state (interleaved reads): the
            // cached run after it stands for the old window.
            let start = self.next_miss(file, index.saturating_add(1), max_pages);
            if start == 0 || start - index > max_pages {
                return;
            }
            let old = (start - index).saturating_add(req_count);
            (start, next_window(old, max_pages))
        };
        let slot = &mut self.files[file.0 as usize].ra;
        (slot.start, slot.size, slot.async_size) = (start, size, size);
        self.ra_chunk(cpu, node, file, start, size, size);
    }

    /// force_page_cache_ra(): `nr` pages from `index` (at most the larger
    /// of the window and the device's largest I/O), in 2 MiB chunks,
    /// without a mark.
    fn force_readahead(&mut self, cpu: CpuId, node: NodeId, file: FileId, index: u64, nr: u64) {
        let mut nr = nr.min(self.ra_pages().max(self.io_pages()));
        let chunk = (FORCED_CHUNK_BYTES >> self.page_shift()).max(1);
        let mut index = index;
        while nr > 0 {
            let this = chunk.min(nr);
            self.ra_chunk(cpu, node, file, index, this, 0);
            index = index.saturating_add(this);
            nr -= this;
        }
    }

    /// do_page_cache_ra() and page_cache_ra_unbounded(): allocates the
    /// missing pages of `nr` from `index`, up to the page holding the
    /// file's last byte, in offset order onto the inactive file list; the
    /// page `lookahead` from the end gets the readahead mark when it is
    /// one allocated here. Stops at the first page memory (or the memory
    /// cgroup) cannot give.
    /// The pages stay locked until the chunk is allocated (its read is
    /// submitted, and completes, at the end): reclaim run by the chunk's
    /// own allocations cannot take them, so a window larger than memory
    /// ends where memory does instead of evicting its own start.
    fn ra_chunk(
        &mut self,
        cpu: CpuId,
        node: NodeId,
        file: FileId,
        index: u64,
        nr: u64,
        lookahead: u64,
    ) {
        let size = self.files[file.0 as usize].size;
        if size == 0 {
            return;
        }
        let end_index = (size - 1) >> self.page_shift();
        if index > end_index {
            return;
        }
        let nr = nr.min(end_index - index + 1);
        // `nr_to_read - lookahead_size` as an unsigned long: no page is
        // marked when the lookahead exceeds the chunk.
        let mark = nr.wrapping_sub(lookahead);
        let gfp = MAPPING_GFP | Gfp::NORETRY | Gfp::NOWARN;
        let mut locked = Vec::new();
        for at in 0..nr {
            let page = index + at;
            if self.files[file.0 as usize].pages.contains_key(&page) {
                continue;
            }
            // A page memory cannot give, or the memory cgroup cannot take
            // (filemap_add_folio()'s -ENOMEM), ends the window.
            let Ok(pfn) = self.alloc_lru_page(cpu, node, gfp) else {
                break;
            };
            let flags = if at == mark { READAHEAD } else { 0 };
            self.insert_read_page(file, page, pfn, flags | LOCKED);
            locked.push(pfn);
        }
        // read_pages(): the read is submitted and, here, done.
        for pfn in locked {
            self.lru.meta_mut(pfn).flags &= !LOCKED;
        }
    }

    /// A page read from the device into the cache (`pgpgin` in KiB).
    pub(super) fn insert_read_page(&mut self, file: FileId, index: u64, pfn: u64, flags: u8) {
        debug_assert_eq!(flags & DIRTY, 0);
        self.insert_file_page(file, index, pfn, flags, false);
        self.counters
            .add(ReclaimEvent::Pgpgin, 1 << (self.page_shift() - 10));
    }

    /// page_cache_prev_miss(): the first page at or below `index`, looking
    /// at most `max_scan` pages down, that is not cached; `u64::MAX` when
    /// every page down to 0 is; `index - max_scan` when none of those
    /// looked at is missing.
    fn prev_miss(&self, file: FileId, index: u64, max_scan: u64) -> u64 {
        let pages = &self.files[file.0 as usize].pages;
        let mut expected = index;
        let mut scanned = 0;
        for (&cached, _) in pages.range(..=index).rev() {
            if cached != expected || scanned == max_scan {
                break;
            }
            scanned += 1;
            if expected == 0 {
                return u64::MAX;
            }
            expected -= 1;
        }
        if scanned == max_scan {
            index.wrapping_sub(max_scan)
        } else {
            expected
        }
    }

    /// page_cache_next_miss(): the first page at or above `index`, looking
    /// at most `max_scan` pages up, that is not cached; 0 when the search
    /// wraps; `index + max_scan` when none of those looked at is missing.
    fn next_miss(&self, file: FileId, index: u64, max_scan: u64) -> u64 {
        let pages = &self.files[file.0 as usize].pages;
        let mut expected = index;
        let mut scanned = 0;
        for (&cached, _) in pages.range(index..) {
            if cached != expected || scanned == max_scan {
                break;
            }
            scanned += 1;
            if expected == u64::MAX {
                return 0;
            }
            expected += 1;
        }
        if scanned == max_scan {
            index.wrapping_add(max_scan)
        } else {
            expected
        }
    }

    /// The page cache page `index` of `file`, allocated alone when
    /// readahead gave nothing (filemap_create_folio(): the mapping's GFP,
    /// with reclaim and retries).
    pub(super) fn create_read_page(
        &mut self,
        cpu: CpuId,
        node: NodeId,
        file: FileId,
        index: u64,
    ) -> Result<u64, MmError> {
        let pfn = self.alloc_lru_page(cpu, node, MAPPING_GFP)?;
        self.insert_read_page(file, index, pfn, 0);
        Ok(pfn)
    }
}

/// A size in KiB as pages (`kb >> (PAGE_SHIFT - 10)`).
fn kib_to_pages(kib: u32, page_shift: u32) -> u64 {
    u64::from(kib) >> page_shift.saturating_sub(10)
}
