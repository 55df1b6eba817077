//! Compressed-object allocators: one trait, [`Zpool`], over zsmalloc and
//! afmalloc, so that a store (zram) and the benchmarks can use either, and a
//! new allocator (zbud, zblock) plugs in by implementing it in one file. The
//! conformance suite in `tests/zpool_conformance.rs` runs against every
//! implementation.
//!
//! Owns: nothing but the trait, the shared statistics type and the layer's
//! error type ([`ZpoolError`]). Each implementation owns its pages (from a
//! [`crate::page_source::PageSource`]); their bytes live in the backing.

pub mod afmalloc;
mod error;
mod sizes;
pub mod zsmalloc;

pub use error::ZpoolError;
pub use sizes::CompressedSizes;

use crate::error::InvariantError;

/// An opaque handle to a stored object. 0 is never a valid handle.
pub type ZpoolHandle = u64;

/// Memory accounting of a pool, as the afmalloc source document measures it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZpoolStats {
    /// Live objects.
    pub objects: u64,
    /// Bytes asked for by the live objects (zram's `compr_data_size`).
    pub stored_bytes: u64,
    /// Pages the pool holds from the page allocator (`mem_used_total`; for
    /// afmalloc the pages of the slabs its chunks and metadata live in, the
    /// document's SUnreclaim delta).
    pub used_pages: u64,
    /// Bytes nobody else can use that the pool spends beyond `stored_bytes`:
    /// for afmalloc metadata plus internal fragmentation of the chunks (the
    /// document's `real_overhead`); for zsmalloc `used - stored`, since the
    /// free space of a zspage is unusable to anyone else.
    pub real_overhead_bytes: u64,
    /// Pages freed by compaction so far (`pages_compacted`).
    pub pages_compacted: u64,
}

impl ZpoolStats {
    /// `used - stored`, in bytes: the document's `overhead` column.
    pub fn overhead_bytes(&self, page_size: usize) -> i64 {
        (self.used_pages * page_size as u64) as i64 - self.stored_bytes as i64
    }
}

/// A zpool-like interface over compressed-object allocators.
///
/// Contract (checked by the conformance suite): `malloc(size)` for
/// `1..=max_size()` returns a handle whose object holds at least `size`
/// bytes; `write` then `read` of up to that many bytes round-trips exactly,
/// also after `compact`; `free` of a handle that is not live is
/// [`ZpoolError::InvalidHandle`] and changes nothing; a page-allocator
/// failure is [`ZpoolError::NoMemory`] and leaves the pool consistent.
pub trait Zpool {
    /// The allocator's name (`zsmalloc`, `afmalloc`).
    fn name(&self) -> &'static str;
    /// The largest object size.
    fn max_size(&self) -> usize;
    /// The smallest object size that is not worth compressing for: a store
    /// (zram) keeps a page whose compressed size reaches it uncompressed, as
    /// a "huge page" (zram compares against zs_huge_class_size()). The
    /// default, `max_size()`, makes only incompressible pages huge.
    fn huge_class_size(&self) -> usize {
        self.max_size()
    }
    /// Allocates an object of `size` bytes.
    fn malloc(&mut self, size: usize) -> Result<ZpoolHandle, ZpoolError>;
    /// Frees an object.
    fn free(&mut self, handle: ZpoolHandle) -> Result<(), ZpoolError>;
    /// Copies `data` to the start of the object.
    fn write(&mut self, handle: ZpoolHandle, data: &[u8]) -> Result<(), ZpoolError>;
    /// Copies the first `out.len()` bytes of the object into `out`.
    fn read(&self, handle: ZpoolHandle, out: &mut [u8]) -> Result<(), ZpoolError>;
    /// Compacts the pool; returns the pages given back to the page allocator.
    fn compact(&mut self) -> Result<u64, ZpoolError>;
    /// Pages held from the page allocator.
    fn total_pages(&self) -> u64;
    /// Accounting.
    fn stats(&self) -> ZpoolStats;
    /// Checks the pool's invariants.
    fn check_invariants(&self) -> Result<(), InvariantError>;
}
