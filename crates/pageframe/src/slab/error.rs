//! The slab layer's error type: every failure of a kmem cache or kmalloc
//! call. Errors of the page allocator underneath are wrapped at this
//! boundary; nothing changed when one is returned.

use crate::page_alloc::{AccessError, AllocError, FreeError};
use thiserror::Error;

/// Why a slab (kmem cache, kmalloc) operation failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SlabError {
    /// The page allocator could not supply a slab, even at the minimum order.
    #[error("no memory for a slab of {cache}: {source}")]
    NoMemory {
        /// The cache.
        cache: String,
        /// The page allocator's error.
        source: AllocError,
    },
    /// A size, alignment or name the slab allocator does not accept.
    #[error("invalid slab argument: {0}")]
    Invalid(String),
    /// The cache id does not name a cache.
    #[error("no such kmem cache: {0}")]
    NoSuchCache(u32),
    /// The address is not an object of any slab (or not its start).
    #[error("address {0:#x} is not a slab object")]
    NotObject(u64),
    /// The object is free already.
    #[error("object {0:#x} is already free (double free)")]
    DoubleFree(u64),
    /// The object belongs to another cache than the one it is freed to.
    #[error("object {addr:#x} belongs to {actual}, not {given}")]
    WrongCache {
        /// The object.
        addr: u64,
        /// The cache it belongs to.
        actual: String,
        /// The cache it was freed to.
        given: String,
    },
    /// An access beyond the end of an object.
    #[error("access of {len} bytes at {offset} is outside an object of {size} bytes")]
    OutOfBounds {
        /// Offset into the object.
        offset: usize,
        /// Length of the access.
        len: usize,
        /// The object's size.
        size: usize,
    },
    /// Handing a slab back to the page allocator failed (the allocator is broken).
    #[error("freeing a slab's pages failed: {0}")]
    PageFree(FreeError),
    /// Copying an object's bytes to or from its pages failed (the backing
    /// failed, or the pages are not the slab's any more: a broken allocator).
    #[error("object bytes: {0}")]
    Access(#[from] AccessError),
}
