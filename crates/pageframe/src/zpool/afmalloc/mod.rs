//! afmalloc, the anti-fragmentation allocator of the source document
//! (afmalloc.txt): an object is built from power-of-two chunks taken from
//! the kmalloc caches, and its handle points to metadata listing them.
//!
//! Owns: a private [`SlabAllocator`] (its kmalloc caches hold every chunk
//! and every metadata entry, so the pages it holds are exactly the
//! document's SUnreclaim delta), the set of live handles, and a mapping
//! buffer. Does not own: the pages (the slab allocator's page source).
//!
//! Design, as the RFC describes it:
//! - `calculate_level()`: split a request into `rounddown_pow_of_two` chunks
//!   until the rest rounds up to a power of two wasting at most
//!   `min_chunk` bytes (32) or the chunk count reaches `max_level` (7 on
//!   64-bit: 8 B header + 7 pointers = one kmalloc-64); the last chunk is
//!   `roundup_pow_of_two(rest)`, at least `min_chunk`;
//! - a request that needs one chunk, or whose metadata plus chunks would
//!   cost at least `roundup_pow_of_two(len)`, is one kmalloc object whose
//!   address, tagged with bit 0, is the handle (a "direct entry");
//! - otherwise the handle is the address of a metadata entry
//!   `{level: u32, alloced: u32, chunk addresses: u64 × level}` stored in a
//!   kmalloc object (its bytes really live in the slab's pages);
//! - store/load copy chunk by chunk; `map_handle` copies into a per-CPU
//!   buffer and `unmap_handle` copies back. The RFC maps a direct entry in
//!   place; here page contents live in the backing and are only copied in
//!   and out, so a direct entry goes through the buffer too. One mapping at
//!   a time (the one CPU's buffer, as zs_map_object()'s per-CPU area): a
//!   second map before the unmap is an error, not a silent replacement.
//!
//! Beyond the RFC (documented): a handle is not the entry's address but
//! names a slot of a handle table (`IdSlots`) holding the address, with a
//! 32-bit per-slot generation, so that a freed handle stays an error until
//! its slot has been reused 2^32 times; and the pool keeps each object's
//! length (zram keeps it too) so that reads of any prefix work.
//! Compaction is the one the document sketches: per kmalloc cache, pick the
//! sparsest slabs whose chunks fit in the free slots of the others, copy
//! those chunks out in address order, free them, shrink the cache (the
//! emptied slabs go back to the page allocator), then allocate new chunks
//! (they land in the fuller slabs) and copy the bytes back; every cache is
//! shrunk, so empty slabs kept for `min_partial` go back too. Direct entries
//! and metadata entries never move: their addresses are handles.
//!
//! Invariants (checked by [`AfPool::check_invariants`]): `pool size ==
//! Σ alloced` of live objects; each live metadata entry lists `level`
//! allocated kmalloc objects; the slab allocator's own invariants hold.

use std::collections::HashMap;

use super::{Zpool, ZpoolHandle, ZpoolStats};
use crate::error::InvariantError;
use crate::gfp::Gfp;
use crate::page_source::PageSource;
use crate::slab::id_slots::IdSlots;
use crate::slab::SlabError;
use crate::slab::{CacheId, ObjAddr, SlabAllocator, SlabParams};
use crate::types::Pfn;
use crate::zpool::ZpoolError;

/// `afmalloc_OBJ_MIN_SIZE`: the smallest chunk.
pub const AFMALLOC_OBJ_MIN_SIZE: usize = 32;
/// `AFMALLOC_MIN_LEVEL`.
pub const AFMALLOC_MIN_LEVEL: usize = 1;
/// `AFMALLOC_MAX_LEVEL` on 64-bit: 4 + 4 + 8 × 7 = 64 bytes of metadata.
pub const AFMALLOC_MAX_LEVEL: usize = 7;
/// Bytes of the metadata header (`level`, `alloced`).
const ENTRY_HEADER: usize = 8;

/// Pool options. Defaults are the RFC's (as zram would create the pool).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AfConfig {
    /// Most chunks per object, 1..=7.
    pub max_level: usize,
    /// The smallest chunk; the RFC uses 32. (The document's example
    /// 400 = 256 + 128 + 16 corresponds to 16.)
    pub min_chunk: usize,
    /// Limit on the bytes allocated (`max_size`, zram's disk size).
    pub max_size: u64,
    /// GFP flags of the chunks (zram: `GFP_NOIO`).
    pub gfp: Gfp,
}

impl Default for AfConfig {
    fn default() -> AfConfig {
        AfConfig {
            max_level: AFMALLOC_MAX_LEVEL,
            min_chunk: AFMALLOC_OBJ_MIN_SIZE,
            max_size: u64::MAX,
            gfp: Gfp::KERNEL - Gfp::IO - Gfp::FS,
        }
    }
}

/// What the pool remembers of a live handle.
#[derive(Clone, Copy, Debug)]
struct Live {
    /// The kmalloc object the handle stands for: the chunk of a direct
    /// entry, else the metadata entry.
    addr: ObjAddr,
    /// A direct entry (the RFC's `DIRECT_ENTRY` tag).
    direct: bool,
    len: u32,
    alloced: u32,
}

/// The one live mapping: its handle, length and mode.
#[derive(Clone, Copy, Debug)]
struct Mapping {
    handle: ZpoolHandle,
    len: usize,
    read_only: bool,
}

/// An afmalloc pool.
pub struct AfPool<P: PageSource> {
    slab: SlabAllocator<P>,
    config: AfConfig,
    /// `pool->size`: bytes of kmalloc objects (chunks and metadata) held.
    size: u64,
    stored: u64,
    /// The handle table.
    live: IdSlots<Live>,
    /// The per-CPU mapping buffer (one CPU: the pool's).
    map_buffer: Vec<u8>,
    mapped: Option<Mapping>,
    pages_compacted: u64,
}

/// `rounddown_pow_of_two()`.
fn rounddown_pow2(value: usize) -> usize {
    1 << (usize::BITS - 1 - value.leading_zeros())
}

impl<P: PageSource> AfPool<P> {
    /// A pool over a fresh slab allocator (afmalloc_create_pool()).
    pub fn new(source: P, params: SlabParams, config: AfConfig) -> Result<AfPool<P>, ZpoolError> {
        if !(AFMALLOC_MIN_LEVEL..=AFMALLOC_MAX_LEVEL).contains(&config.max_level) {
            return Err(ZpoolError::Config(format!(
                "max_level {} is outside 1..=7",
                config.max_level
            )));
        }
        if !config.min_chunk.is_power_of_two() || config.min_chunk < 8 {
            return Err(ZpoolError::Config(format!(
                "min_chunk {} is not a power of two of at least 8",
                config.min_chunk
            )));
        }
        if config.gfp.contains(Gfp::HIGHMEM) {
            return Err(ZpoolError::Config("afmalloc cannot use highmem".into()));
        }
        let page_size = source.page_size();
        let slab = SlabAllocator::new(source, params)?;
        Ok(AfPool {
            slab,
            config,
            size: 0,
            stored: 0,
            live: IdSlots::default(),
            map_buffer: vec![0; page_size],
            mapped: None,
            pages_compacted: 0,
        })
    }

    /// The slab allocator underneath (for /proc/slabinfo).
    pub fn slab(&self) -> &SlabAllocator<P> {
        &self.slab
    }

    /// The slab allocator underneath, mutably.
    pub fn slab_mut(&mut self) -> &mut SlabAllocator<P> {
        &mut self.slab
    }

    /// `afmalloc_get_used_pages()`: bytes allocated, in pages (rounded down).
    pub fn get_used_pages(&self) -> u64 {
        self.size / self.slab.page_size() as u64
    }

    /// Chunks needed for `len` bytes (calculate_level()).
    pub fn calculate_level(&self, len: usize) -> usize {
        let min = self.config.min_chunk;
        let mut level = 0;
        let mut len = len;
        if len > min {
            loop {
                let down = rounddown_pow2(len);
                if down >= len {
                    break;
                }
                let up = len.next_power_of_two();
                if up - len <= min {
                    break;
                }
                len -= down;
                level += 1;
            }
        }
        (level + 1).min(self.config.max_level)
    }

    /// Chunk sizes for `len` bytes split into `level` chunks.
    pub fn chunk_sizes(&self, level: usize, len: usize) -> Vec<usize> {
        let mut sizes = Vec::with_capacity(level);
        let mut remain = len;
        for _ in 0..level - 1 {
            let size = rounddown_pow2(remain);
            sizes.push(size);
            remain -= size;
        }
        sizes.push(if remain < self.config.min_chunk {
            self.config.min_chunk
        } else {
            remain.next_power_of_two()
        });
        sizes
    }

    /// Bytes of data chunk `index` holds of an object of `len` bytes split
    /// in `level` chunks: (offset in the object, length).
    fn chunk_span(level: usize, len: usize, index: usize) -> (usize, usize) {
        let mut offset = 0;
        let mut remain = len;
        for _ in 0..index.min(level - 1) {
            let size = rounddown_pow2(remain);
            offset += size;
            remain -= size;
        }
        if index < level - 1 {
            (offset, rounddown_pow2(remain))
        } else {
            (offset, remain)
        }
    }

    /// True when `handle` is a live direct entry (one kmalloc object).
    pub fn is_direct(&self, handle: ZpoolHandle) -> bool {
        self.live(handle).is_ok_and(|live| live.direct)
    }

    fn kmalloc(&mut self, size: usize) -> Result<ObjAddr, ZpoolError> {
        self.slab
            .kmalloc(size, self.config.gfp)
            .map_err(|err| match err {
                SlabError::NoMemory { source, .. } => ZpoolError::NoMemory(source),
                other => ZpoolError::Slab(other),
            })
    }

    /// Reads a metadata entry: (level, alloced, chunk addresses).
    fn read_entry(&self, addr: ObjAddr) -> Result<(usize, u32, Vec<ObjAddr>), ZpoolError> {
        let mut raw = [0u8; ENTRY_HEADER + 8 * AFMALLOC_MAX_LEVEL];
        let room = self.slab.ksize(addr)?.min(raw.len());
        self.slab.read(addr, 0, &mut raw[..room])?;
        let level = u32::from_le_bytes(raw[..4].try_into().expect("4 bytes")) as usize;
        let alloced = u32::from_le_bytes(raw[4..8].try_into().expect("4 bytes"));
        if level == 0 || ENTRY_HEADER + 8 * level > room {
            return Err(ZpoolError::InvalidHandle(addr));
        }
        let chunks = raw[ENTRY_HEADER..ENTRY_HEADER + 8 * level]
            .chunks_exact(8)
            .map(|word| u64::from_le_bytes(word.try_into().expect("8 bytes")))
            .collect();
        Ok((level, alloced, chunks))
    }

    fn write_chunk_addr(
        &mut self,
        entry: ObjAddr,
        index: usize,
        chunk: ObjAddr,
    ) -> Result<(), ZpoolError> {
        self.slab
            .write(entry, ENTRY_HEADER + 8 * index, &chunk.to_le_bytes())
            .map_err(ZpoolError::from)
    }

    /// Allocates an object of `len` bytes (afmalloc_alloc() / alloc_entry()).
    pub fn afmalloc_alloc(&mut self, len: usize) -> Result<ZpoolHandle, ZpoolError> {
        let max = self.slab.page_size();
        if len == 0 || len > max {
            return Err(ZpoolError::InvalidSize { size: len, max });
        }
        let level = self.calculate_level(len);
        let mut direct = level == 1;
        let mut entry_addr = 0;
        let mut alloced = 0usize;
        let mut chunks: Vec<ObjAddr> = Vec::new();
        if !direct {
            let entry_size = ENTRY_HEADER + 8 * level;
            entry_addr = self.kmalloc(entry_size)?;
            let entry_ksize = self.slab.ksize(entry_addr)?;
            let sizes = self.chunk_sizes(level, len);
            // One power-of-two object is cheaper than metadata plus chunks.
            if entry_ksize + sizes.iter().sum::<usize>() >= len.next_power_of_two() {
                self.slab.kfree(entry_addr)?;
                direct = true;
            } else {
                alloced += entry_ksize;
                for size in sizes {
                    match self.kmalloc(size) {
                        Ok(chunk) => {
                            chunks.push(chunk);
                            alloced += size;
                        }
                        Err(err) => {
                            for chunk in chunks {
                                self.slab.kfree(chunk)?;
                            }
                            self.slab.kfree(entry_addr)?;
                            return Err(err);
                        }
                    }
                }
            }
        }
        let addr = if direct {
            let chunk = self.kmalloc(len)?;
            alloced = self.slab.ksize(chunk)?;
            chunk
        } else {
            entry_addr
        };
        if self.size + alloced as u64 > self.config.max_size {
            self.release(&chunks, addr)?;
            return Err(ZpoolError::Limit(self.config.max_size));
        }
        if !direct {
            if let Err(err) = self.write_entry(addr, level, alloced, &chunks) {
                self.release(&chunks, addr)?;
                return Err(err);
            }
        }
        self.size += alloced as u64;
        self.stored += len as u64;
        let id = self.live.insert(Live {
            addr,
            direct,
            len: len as u32,
            alloced: alloced as u32,
        });
        Ok(self.live.handle(id))
    }

    /// Writes a metadata entry: header, then the chunk addresses.
    fn write_entry(
        &mut self,
        addr: ObjAddr,
        level: usize,
        alloced: usize,
        chunks: &[ObjAddr],
    ) -> Result<(), ZpoolError> {
        let mut header = [0u8; ENTRY_HEADER];
        header[..4].copy_from_slice(&(level as u32).to_le_bytes());
        header[4..].copy_from_slice(&(alloced as u32).to_le_bytes());
        self.slab.write(addr, 0, &header)?;
        for (index, chunk) in chunks.iter().enumerate() {
            self.write_chunk_addr(addr, index, *chunk)?;
        }
        Ok(())
    }

    /// Gives back the kmalloc objects of an allocation that failed part-way.
    fn release(&mut self, chunks: &[ObjAddr], addr: ObjAddr) -> Result<(), ZpoolError> {
        for chunk in chunks {
            self.slab.kfree(*chunk)?;
        }
        self.slab.kfree(addr)?;
        Ok(())
    }

    fn live(&self, handle: ZpoolHandle) -> Result<Live, ZpoolError> {
        self.live
            .id_of(handle)
            .and_then(|id| self.live.get(id))
            .copied()
            .ok_or(ZpoolError::InvalidHandle(handle))
    }

    /// Frees an object and its chunks (afmalloc_free() / free_entry()). A
    /// mapping of the handle ends with it (its buffer is not stored back).
    /// The metadata is read before anything is freed, so a failure changes
    /// nothing.
    pub fn afmalloc_free(&mut self, handle: ZpoolHandle) -> Result<(), ZpoolError> {
        let live = self.live(handle)?;
        let chunks = if live.direct {
            Vec::new()
        } else {
            self.read_entry(live.addr)?.2
        };
        if matches!(self.mapped, Some(mapping) if mapping.handle == handle) {
            self.mapped = None;
        }
        for chunk in chunks {
            self.slab.kfree(chunk)?;
        }
        self.slab.kfree(live.addr)?;
        let id = self.live.id_of(handle).expect("checked live");
        self.live.remove(id);
        self.size -= u64::from(live.alloced);
        self.stored -= u64::from(live.len);
        Ok(())
    }

    /// Walks the chunks covering bytes `0..len` of an object: calls `visit`
    /// with (chunk address, offset in the object, bytes in this chunk).
    fn for_each_chunk(
        &self,
        live: Live,
        len: usize,
        mut visit: impl FnMut(ObjAddr, usize, usize) -> Result<(), ZpoolError>,
    ) -> Result<(), ZpoolError> {
        if live.direct {
            return visit(live.addr, 0, len);
        }
        let (level, _, chunks) = self.read_entry(live.addr)?;
        for (index, chunk) in chunks.iter().enumerate() {
            let (offset, span) = Self::chunk_span(level, live.len as usize, index);
            if offset >= len {
                break;
            }
            visit(*chunk, offset, span.min(len - offset))?;
        }
        Ok(())
    }

    /// Copies `data` into the object chunk by chunk (afmalloc_store()).
    pub fn afmalloc_store(
        &mut self,
        handle: ZpoolHandle,
        data: &[u8],
    ) -> Result<usize, ZpoolError> {
        let live = self.live(handle)?;
        if data.len() > live.len as usize {
            return Err(ZpoolError::OutOfBounds {
                len: data.len(),
                capacity: live.len as usize,
            });
        }
        let mut spans = Vec::with_capacity(AFMALLOC_MAX_LEVEL);
        self.for_each_chunk(live, data.len(), |chunk, offset, len| {
            spans.push((chunk, offset, len));
            Ok(())
        })?;
        for (chunk, offset, len) in spans {
            self.slab.write(chunk, 0, &data[offset..offset + len])?;
        }
        Ok(data.len())
    }

    /// Copies the object's first `out.len()` bytes out (afmalloc_load()).
    pub fn afmalloc_load(&self, handle: ZpoolHandle, out: &mut [u8]) -> Result<usize, ZpoolError> {
        let live = self.live(handle)?;
        if out.len() > live.len as usize {
            return Err(ZpoolError::OutOfBounds {
                len: out.len(),
                capacity: live.len as usize,
            });
        }
        let len = out.len();
        self.for_each_chunk(live, len, |chunk, offset, span| {
            self.slab
                .read(chunk, 0, &mut out[offset..offset + span])
                .map_err(ZpoolError::from)
        })?;
        Ok(len)
    }

    /// Maps `len` bytes of an object contiguously (afmalloc_map_handle()):
    /// its bytes copied into the per-CPU buffer. One mapping at a time: a
    /// map while any handle is mapped is `AlreadyMapped` and changes
    /// nothing. End it with [`Self::afmalloc_unmap_handle`].
    pub fn afmalloc_map_handle(
        &mut self,
        handle: ZpoolHandle,
        len: usize,
        read_only: bool,
    ) -> Result<&mut [u8], ZpoolError> {
        let live = self.live(handle)?;
        if let Some(mapping) = self.mapped {
            return Err(ZpoolError::AlreadyMapped(mapping.handle));
        }
        if len > live.len as usize {
            return Err(ZpoolError::OutOfBounds {
                len,
                capacity: live.len as usize,
            });
        }
        let mut buffer = std::mem::take(&mut self.map_buffer);
        let loaded = self.afmalloc_load(handle, &mut buffer[..len]);
        self.map_buffer = buffer;
        loaded?;
        self.mapped = Some(Mapping {
            handle,
            len,
            read_only,
        });
        Ok(&mut self.map_buffer[..len])
    }

    /// Ends the mapping of `handle`, storing the buffer back unless it was
    /// read-only (afmalloc_unmap_handle()). `NotMapped` when `handle` is
    /// not the mapped one; on a failing store the mapping stays.
    pub fn afmalloc_unmap_handle(&mut self, handle: ZpoolHandle) -> Result<(), ZpoolError> {
        self.live(handle)?;
        let mapping = match self.mapped {
            Some(mapping) if mapping.handle == handle => mapping,
            _ => return Err(ZpoolError::NotMapped(handle)),
        };
        if !mapping.read_only {
            let buffer = std::mem::take(&mut self.map_buffer);
            let stored = self.afmalloc_store(handle, &buffer[..mapping.len]);
            self.map_buffer = buffer;
            stored?;
        }
        self.mapped = None;
        Ok(())
    }

    /// The compaction the document sketches (see the module header);
    /// returns the pages given back to the page allocator.
    pub fn afmalloc_compact(&mut self) -> Result<u64, ZpoolError> {
        let before = self.slab.nr_pages();
        // Empty slabs first: the free slots counted below must all survive
        // the shrink, so that the chunks moved always find room again.
        self.slab.shrink_all()?;
        // Every movable chunk: (address, owner entry, index in the entry).
        let mut movable: Vec<(ObjAddr, ObjAddr, usize)> = Vec::new();
        for (_, live) in self.live.iter() {
            let (addr, direct) = (live.addr, live.direct);
            if direct {
                continue;
            }
            let (_, _, chunks) = self.read_entry(addr)?;
            movable.extend(
                chunks
                    .into_iter()
                    .enumerate()
                    .map(|(index, chunk)| (chunk, addr, index)),
            );
        }
        movable.sort_unstable();
        // Per slab: how many of its objects can move.
        let mut per_slab: HashMap<Pfn, (CacheId, u32, u32, u32)> = HashMap::new();
        for (chunk, _, _) in &movable {
            if let Some((cache, pfn, inuse, objects)) = self.slab.slab_occupancy(*chunk) {
                per_slab.entry(pfn).or_insert((cache, inuse, objects, 0)).3 += 1;
            }
        }
        // Per cache: the sparsest fully-movable slabs whose objects fit in
        // the free slots of the cache's other slabs.
        let mut by_cache: HashMap<CacheId, Vec<(u32, u32, Pfn)>> = HashMap::new();
        for (pfn, (cache, inuse, objects, movable_here)) in &per_slab {
            if *movable_here == *inuse && inuse < objects {
                by_cache
                    .entry(*cache)
                    .or_default()
                    .push((*inuse, *objects, *pfn));
            }
        }
        let mut victims: std::collections::HashSet<Pfn> = std::collections::HashSet::new();
        let mut caches: Vec<CacheId> = by_cache.keys().copied().collect();
        caches.sort_unstable();
        for cache in &caches {
            let slabs = by_cache.get_mut(cache).expect("listed");
            slabs.sort_unstable();
            let info = self.slab.cache(*cache)?;
            let mut free_elsewhere = info.total_objects() - info.active_objects();
            let mut moving = 0u64;
            for (inuse, objects, pfn) in slabs.iter() {
                let slab_free = u64::from(objects - inuse);
                if moving + u64::from(*inuse) <= free_elsewhere.saturating_sub(slab_free) {
                    moving += u64::from(*inuse);
                    free_elsewhere -= slab_free;
                    victims.insert(*pfn);
                }
            }
        }
        // Copy out in address order, free, shrink, reallocate, copy back.
        let mut saved: Vec<(ObjAddr, usize, usize, Vec<u8>)> = Vec::new();
        for (chunk, entry, index) in movable {
            let Some((_, pfn, _, _)) = self.slab.slab_occupancy(chunk) else {
                continue;
            };
            if !victims.contains(&pfn) {
                continue;
            }
            let size = self.slab.ksize(chunk)?;
            let mut bytes = vec![0u8; size];
            self.slab.read(chunk, 0, &mut bytes)?;
            self.slab.kfree(chunk)?;
            saved.push((entry, index, size, bytes));
        }
        // Shrinking every cache (not only those with victims) also returns
        // the empty slabs that min_partial kept.
        self.slab.shrink_all()?;
        // The chunks moved fit in free slots of slabs that stay, so these
        // allocations take no new pages and cannot fail for lack of memory.
        for (entry, index, size, bytes) in saved {
            let chunk = self.kmalloc(size)?;
            self.slab.write(chunk, 0, &bytes)?;
            self.write_chunk_addr(entry, index, chunk)?;
        }
        let after = self.slab.nr_pages();
        let freed = before.saturating_sub(after);
        self.pages_compacted += freed;
        Ok(freed)
    }

    /// Checks the invariants in the module header.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        self.slab.check_invariants()?;
        let mut alloced = 0u64;
        let mut stored = 0u64;
        self.live.check().map_err(InvariantError)?;
        if let Some(mapping) = self.mapped {
            if self.live(mapping.handle).is_err() {
                return Err(InvariantError(format!(
                    "mapped handle {:#x} is not live",
                    mapping.handle
                )));
            }
        }
        for (id, live) in self.live.iter() {
            let handle = self.live.handle(id);
            alloced += u64::from(live.alloced);
            stored += u64::from(live.len);
            let (addr, direct) = (live.addr, live.direct);
            let size = self
                .slab
                .ksize(addr)
                .map_err(|err| InvariantError(format!("handle {handle:#x}: {err}")))?;
            if direct {
                if size != live.alloced as usize {
                    return Err(InvariantError(format!(
                        "handle {handle:#x}: alloced {} != ksize {size}",
                        live.alloced
                    )));
                }
                continue;
            }
            let (level, entry_alloced, chunks) = self
                .read_entry(addr)
                .map_err(|err| InvariantError(format!("handle {handle:#x}: {err}")))?;
            if level != self.calculate_level(live.len as usize) || entry_alloced != live.alloced {
                return Err(InvariantError(format!(
                    "handle {handle:#x}: metadata is corrupt"
                )));
            }
            let mut sum = size;
            for chunk in chunks {
                sum += self
                    .slab
                    .ksize(chunk)
                    .map_err(|err| InvariantError(format!("handle {handle:#x} chunk: {err}")))?;
            }
            if sum != live.alloced as usize {
                return Err(InvariantError(format!(
                    "handle {handle:#x}: chunks hold {sum}, alloced {}",
                    live.alloced
                )));
            }
        }
        if alloced != self.size || stored != self.stored {
            return Err(InvariantError(format!(
                "pool size {} / stored {} but live objects hold {alloced} / {stored}",
                self.size, self.stored
            )));
        }
        Ok(())
    }
}

impl<P: PageSource> Zpool for AfPool<P> {
    fn name(&self) -> &'static str {
        "afmalloc"
    }

    fn max_size(&self) -> usize {
        self.slab.page_size()
    }

    /// afmalloc has no huge class; the zram the RFC was measured with (3.17)
    /// stored a page uncompressed when it compressed to more than
    /// `max_zpage_size = PAGE_SIZE / 4 * 3` bytes, so that is its threshold.
    fn huge_class_size(&self) -> usize {
        self.slab.page_size() / 4 * 3 + 1
    }

    fn malloc(&mut self, size: usize) -> Result<ZpoolHandle, ZpoolError> {
        self.afmalloc_alloc(size)
    }

    fn free(&mut self, handle: ZpoolHandle) -> Result<(), ZpoolError> {
        self.afmalloc_free(handle)
    }

    fn write(&mut self, handle: ZpoolHandle, data: &[u8]) -> Result<(), ZpoolError> {
        self.afmalloc_store(handle, data).map(|_| ())
    }

    fn read(&self, handle: ZpoolHandle, out: &mut [u8]) -> Result<(), ZpoolError> {
        self.afmalloc_load(handle, out).map(|_| ())
    }

    fn compact(&mut self) -> Result<u64, ZpoolError> {
        self.afmalloc_compact()
    }

    fn total_pages(&self) -> u64 {
        self.slab.nr_pages()
    }

    fn stats(&self) -> ZpoolStats {
        ZpoolStats {
            objects: self.live.len() as u64,
            stored_bytes: self.stored,
            used_pages: self.slab.nr_pages(),
            real_overhead_bytes: self.size - self.stored,
            pages_compacted: self.pages_compacted,
        }
    }

    fn check_invariants(&self) -> Result<(), InvariantError> {
        AfPool::check_invariants(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::page_source::CpuPages;
    use crate::{CpuId, LocalPageAllocator, MachineDesc};

    type Source<'a> = CpuPages<&'a LocalPageAllocator, crate::sync::Local>;

    fn machine() -> LocalPageAllocator {
        LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 1).unwrap()).unwrap()
    }

    fn pool(machine: &LocalPageAllocator, min_chunk: usize) -> AfPool<Source<'_>> {
        let config = AfConfig {
            min_chunk,
            ..AfConfig::default()
        };
        let source = CpuPages::new(machine.cpu(CpuId(0)).unwrap());
        AfPool::new(source, SlabParams::new(2, 4096), config).unwrap()
    }

    #[test]
    fn the_documents_400_byte_example() {
        let machine = machine();
        let pool16 = pool(&machine, 16);
        let level = pool16.calculate_level(400);
        assert_eq!(pool16.chunk_sizes(level, 400), [256, 128, 16]);
        let pool32 = pool(&machine, 32);
        let level = pool32.calculate_level(400);
        assert_eq!(pool32.chunk_sizes(level, 400), [256, 128, 32]);
        // Powers of two need one chunk.
        assert_eq!(pool32.calculate_level(1024), 1);
    }

    #[test]
    fn power_of_two_and_cheap_roundups_are_direct() {
        let machine = machine();
        let mut pool = pool(&machine, 32);
        let handle = pool.afmalloc_alloc(512).unwrap();
        assert!(pool.is_direct(handle));
        // 90 bytes: metadata (kmalloc-32) + 64 + 32 >= 128, so one kmalloc-96.
        let handle = pool.afmalloc_alloc(90).unwrap();
        assert!(pool.is_direct(handle));
        assert_eq!(pool.stats().real_overhead_bytes, 6);
        let handle = pool.afmalloc_alloc(1300).unwrap();
        assert!(!pool.is_direct(handle));
        let data: Vec<u8> = (0..1300).map(|i| (i * 7) as u8).collect();
        pool.afmalloc_store(handle, &data).unwrap();
        let mut out = vec![0; 1300];
        pool.afmalloc_load(handle, &mut out).unwrap();
        assert_eq!(out, data);
        let mapped = pool.afmalloc_map_handle(handle, 1300, false).unwrap();
        assert_eq!(mapped, &data[..]);
        mapped[0] = 0xAA;
        pool.afmalloc_unmap_handle(handle).unwrap();
        pool.afmalloc_load(handle, &mut out).unwrap();
        assert_eq!(out[0], 0xAA);
        pool.check_invariants().unwrap();
    }
}
