//! The replay's map from the host's blocks to ours: host PFN → (our PFN,
//! order), for every block the replay allocated and the trace has not yet
//! freed.
//!
//! Host PFNs are dense within a host's memory but may be anywhere in the
//! 64-bit space (a foreign host), so the table is two-level: chunks of
//! 2^12 entries (32 KiB), allocated when first touched. A chunk number below
//! 2^20 (host PFNs below 2^32, 16 TiB of 4 KiB pages) finds its chunk
//! through a direct index grown on demand; a higher one through a small
//! hash map. Each lookup costs one access into a chunk (a hash table of
//! blocks costs two or more cache misses per operation at these sizes), and
//! small chunks keep the memory touched (and zeroed) near what the host's
//! allocations actually cover.
//!
//! Invariant: `len` equals the number of entries with `LIVE` set.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const CHUNK_SHIFT: u32 = 12;
const CHUNK_MASK: u64 = (1 << CHUNK_SHIFT) - 1;
/// Chunk numbers below this are found through the direct index.
const DIRECT_CHUNKS: u64 = 1 << 20;
/// A direct-index entry with no chunk yet.
const NO_CHUNK: u32 = u32::MAX;
/// Marks an occupied entry: `LIVE | our_pfn << 8 | order`.
const LIVE: u64 = 1 << 63;

/// A multiplicative hash for chunk numbers (keys come from a file the user
/// chose and the map is private to one replay: no flooding concern).
#[derive(Default)]
struct ChunkHasher(u64);

impl Hasher for ChunkHasher {
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

/// Host PFN → (our PFN, order).
#[derive(Default)]
pub struct LiveBlocks {
    /// Chunk number → index into `chunks` (`NO_CHUNK`: none), for chunk
    /// numbers below `DIRECT_CHUNKS`.
    direct: Vec<u32>,
    /// The same for higher chunk numbers.
    far: HashMap<u64, u32, BuildHasherDefault<ChunkHasher>>,
    chunks: Vec<Box<[u64]>>,
    len: usize,
}

impl LiveBlocks {
    /// An empty table.
    pub fn new() -> LiveBlocks {
        LiveBlocks::default()
    }

    /// Blocks held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no block is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot of `chunk` in `chunks`, if it has one.
    #[inline]
    fn slot(&self, chunk: u64) -> Option<u32> {
        if chunk < DIRECT_CHUNKS {
            let slot = *self.direct.get(chunk as usize)?;
            (slot != NO_CHUNK).then_some(slot)
        } else {
            self.far.get(&chunk).copied()
        }
    }

    #[inline]
    fn entry(&mut self, host_pfn: u64) -> &mut u64 {
        let chunk = host_pfn >> CHUNK_SHIFT;
        let slot = match self.slot(chunk) {
            Some(slot) => slot,
            None => self.new_chunk(chunk),
        };
        &mut self.chunks[slot as usize][(host_pfn & CHUNK_MASK) as usize]
    }

    #[cold]
    fn new_chunk(&mut self, chunk: u64) -> u32 {
        let slot = self.chunks.len() as u32;
        self.chunks
            .push(vec![0u64; 1 << CHUNK_SHIFT].into_boxed_slice());
        if chunk < DIRECT_CHUNKS {
            let index = chunk as usize;
            if index >= self.direct.len() {
                self.direct.resize(index + 1, NO_CHUNK);
            }
            self.direct[index] = slot;
        } else {
            self.far.insert(chunk, slot);
        }
        slot
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

    /// Takes our block for `host_pfn` out, if any.
    #[inline]
    pub fn remove(&mut self, host_pfn: u64) -> Option<(u64, u8)> {
        let slot = self.slot(host_pfn >> CHUNK_SHIFT)?;
        let entry = &mut self.chunks[slot as usize][(host_pfn & CHUNK_MASK) as usize];
        let old = std::mem::take(entry);
        if old & LIVE == 0 {
            return None;
        }
        self.len -= 1;
        Some(((old & !LIVE) >> 8, old as u8))
    }

    /// Counts the live entries (for tests: must equal `len()`).
    pub fn count_live(&self) -> usize {
        self.chunks
            .iter()
            .flat_map(|chunk| chunk.iter())
            .filter(|entry| **entry & LIVE != 0)
            .count()
    }
}
