//! The replay's map from the host's blocks to ours: host PFN → (our PFN,
//! order), for every block the replay allocated and the trace has not yet
//! freed.
//!
//! Host PFNs are dense within a host's memory, which the trace bounds (its
//! highest PFN), but may be anywhere in the 64-bit space (a foreign host).
//! So the table is flat over the host's PFNs below `span` (one entry each,
//! one access per lookup), and a hash map above it. The flat part is at
//! least 32 MiB: the system allocator (glibc's malloc) serves zeroed
//! allocations that large straight from fresh anonymous memory, which the
//! kernel zeroes page by page as it is touched, so PFN ranges the host
//! never allocated from cost nothing, and nothing is zeroed twice (a
//! smaller table may come from reused heap memory and be cleared whole).
//! It is advised to the kernel as huge-page memory: the host's allocations
//! touch most of its range, and a fault per 2 MiB costs far less than one
//! per 4 KiB (the advice is only a hint; without transparent huge pages it
//! changes nothing).
//! A hash table of all blocks costs two or more cache misses per operation
//! at these sizes; zeroing chunks as they are first touched cost a sixth
//! of a replay of the shipped trace.
//!
//! Invariant: `len` equals the number of entries with `LIVE` set.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Host PFNs the flat table covers at most (2^25 PFNs: 128 GiB of 4 KiB
/// pages, a 256 MiB table that is only mapped where touched).
pub const MAX_FLAT_SPAN: u64 = 1 << 25;
/// Entries of the smallest flat part: 32 MiB and one page, above glibc's
/// largest mmap threshold.
const MIN_FLAT_ENTRIES: u64 = (32 << 20) / 8 + 512;
/// Marks an occupied entry: `LIVE | our_pfn << 8 | order`.
const LIVE: u64 = 1 << 63;

/// A multiplicative hash for host PFNs above the flat table (keys come
/// from a file the user chose and the map is private to one replay: no
/// flooding concern).
#[derive(Default)]
struct PfnHasher(u64);

impl Hasher for PfnHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ byte as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// Advises the 2 MiB-aligned part of `table` as huge-page memory
/// (`MADV_HUGEPAGE`); the outcome is ignored, being only advice.
fn advise_huge_pages(table: &mut [u64]) {
    const HUGE_PAGE: usize = 2 << 20;
    let start = table.as_mut_ptr() as usize;
    let end = start + std::mem::size_of_val(table);
    let (huge_start, huge_end) = (
        start.next_multiple_of(HUGE_PAGE),
        end / HUGE_PAGE * HUGE_PAGE,
    );
    if huge_end > huge_start {
        // SAFETY: the range lies inside `table`, memory this process owns
        // and keeps mapped while the slice is borrowed; MADV_HUGEPAGE only
        // changes how the kernel backs those pages, never their contents
        // or validity, and no pointer into the range is kept.
        unsafe {
            libc::madvise(
                huge_start as *mut libc::c_void,
                huge_end - huge_start,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}

/// Host PFN → (our PFN, order).
#[derive(Default)]
pub struct LiveBlocks {
    /// Entries of host PFNs below its length.
    flat: Vec<u64>,
    /// Entries of the other host PFNs.
    far: HashMap<u64, u64, BuildHasherDefault<PfnHasher>>,
    len: usize,
}

impl LiveBlocks {
    /// An empty table, every PFN in the hash map.
    pub fn new() -> LiveBlocks {
        LiveBlocks::default()
    }

    /// An empty table whose flat part covers host PFNs below `span`
    /// (capped at [`MAX_FLAT_SPAN`]; none when `span` is 0).
    pub fn with_span(span: u64) -> LiveBlocks {
        let entries = match span.min(MAX_FLAT_SPAN) {
            0 => 0,
            span => span.max(MIN_FLAT_ENTRIES),
        };
        let mut flat = vec![0; entries as usize];
        advise_huge_pages(&mut flat);
        LiveBlocks {
            flat,
            ..LiveBlocks::default()
        }
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no block is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn entry(&mut self, host_pfn: u64) -> &mut u64 {
        match usize::try_from(host_pfn)
            .ok()
            .filter(|&index| index < self.flat.len())
        {
            Some(index) => &mut self.flat[index],
            None => self.far.entry(host_pfn).or_insert(0),
        }
    }

    /// Records our block for `host_pfn`; returns the block it replaces.
    /// Our PFN must be below 2^55.
    #[inline]
    pub fn insert(&mut self, host_pfn: u64, our_pfn: u64, order: u8) -> Option<(u64, u8)> {
        let entry = self.entry(host_pfn);
        let old = std::mem::replace(entry, LIVE | our_pfn << 8 | order as u64);
        if old & LIVE == 0 {
            self.len += 1;
            None
        } else {
            Some(((old & !LIVE) >> 8, old as u8))
        }
    }

    /// Whether the replay holds a block for `host_pfn`.
    #[inline]
    pub fn contains(&self, host_pfn: u64) -> bool {
        let entry = match usize::try_from(host_pfn)
            .ok()
            .filter(|&index| index < self.flat.len())
        {
            Some(index) => self.flat[index],
            None => self.far.get(&host_pfn).copied().unwrap_or(0),
        };
        entry & LIVE != 0
    }

    /// Takes our block for `host_pfn` out, if any.
    #[inline]
    pub fn remove(&mut self, host_pfn: u64) -> Option<(u64, u8)> {
        let old = match usize::try_from(host_pfn)
            .ok()
            .filter(|&index| index < self.flat.len())
        {
            Some(index) => std::mem::take(&mut self.flat[index]),
            None => self.far.remove(&host_pfn)?,
        };
        if old & LIVE == 0 {
            return None;
        }
        self.len -= 1;
        Some(((old & !LIVE) >> 8, old as u8))
    }

    /// Counts the live entries (for tests: must equal `len()`).
    pub fn count_live(&self) -> usize {
        self.flat
            .iter()
            .chain(self.far.values())
            .filter(|entry| **entry & LIVE != 0)
            .count()
    }
}
