//! The zpool layer's error type, shared by zsmalloc and afmalloc: every
//! failure of a compressed-object pool. Errors of the layers underneath (page
//! allocator, slab) are wrapped at this boundary; nothing changed when one
//! is returned.

use crate::page_alloc::{AccessError, AllocError, FreeError};
use crate::slab::SlabError;
use thiserror::Error;

/// Why a compressed-object pool (zpool: zsmalloc, afmalloc) operation failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ZpoolError {
    /// A size of 0 or above what the pool stores (zs_malloc's EINVAL/ENOSPC).
    #[error("size {size} is not storable (1..={max})")]
    InvalidSize {
        /// The requested size.
        size: usize,
        /// The largest size the pool stores.
        max: usize,
    },
    /// The handle does not name a live object (never allocated, or freed).
    #[error("handle {0:#x} does not name a live object")]
    InvalidHandle(u64),
    /// A read or write beyond the object's capacity.
    #[error("access of {len} bytes beyond an object of {capacity} bytes")]
    OutOfBounds {
        /// Bytes asked for.
        len: usize,
        /// Bytes the object holds.
        capacity: usize,
    },
    /// The page allocator could not supply pages.
    #[error("no memory: {0}")]
    NoMemory(AllocError),
    /// The pool reached its configured size limit.
    #[error("pool limit of {0} bytes reached")]
    Limit(u64),
    /// An error of the slab allocator underneath.
    #[error(transparent)]
    Slab(#[from] SlabError),
    /// Handing pages back to the page allocator failed (the allocator is broken).
    #[error("freeing pages failed: {0}")]
    PageFree(FreeError),
    /// A configuration the pool does not accept.
    #[error("invalid pool configuration: {0}")]
    Config(String),
    /// Copying an object's bytes to or from the pool's pages failed (the
    /// backing failed, or a broken allocator took the pages back).
    #[error("object bytes: {0}")]
    Access(#[from] AccessError),
    /// The handle is mapped already: one mapping per handle at a time
    /// (zs_map_object()'s per-CPU area is taken until zs_unmap_object()).
    #[error("handle {0:#x} is mapped already")]
    AlreadyMapped(u64),
    /// The handle is not mapped (an unmap without a map).
    #[error("handle {0:#x} is not mapped")]
    NotMapped(u64),
}
