//! The error vocabulary every layer shares: [`InvariantError`] (what a
//! `check_invariants()` reports) and [`Errno`] (Linux error numbers). It
//! uses no other module, so any layer may use it.
//!
//! Each layer's own error type lives in that layer and is converted at the
//! boundary: `DescError` in `machine`, `GfpError` in `gfp`, `BootError`,
//! `AllocError`, `FreeError`, `AccessError` and `CpuError` in `page_alloc`,
//! `HotplugError` in `page_alloc::hotplug`. The crate root re-exports them.
//! Every error leaves the structure it was returned from exactly as it was
//! before the call.

use crate::page_alloc::{AllocError, FreeError};
use thiserror::Error;

/// A broken invariant, found by a `check_invariants()`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invariant broken: {0}")]
pub struct InvariantError(pub String);

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
}

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
}

/// A Linux error number, as the memory-policy calls return it (`-errno` in
/// the kernel). The numeric values are Linux's (include/uapi/asm-generic/errno-base.h),
/// so results compare one to one with a kernel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Error)]
#[repr(i32)]
pub enum Errno {
    /// Operation not permitted.
    #[error("EPERM: operation not permitted")]
    EPERM = 1,
    /// No such file or directory (a page not present, for move_pages).
    #[error("ENOENT: no such page")]
    ENOENT = 2,
    /// No such process.
    #[error("ESRCH: no such process")]
    ESRCH = 3,
    /// I/O error (a strict mbind found pages it could not move).
    #[error("EIO: misplaced pages could not be moved")]
    EIO = 5,
    /// Out of memory.
    #[error("ENOMEM: out of memory")]
    ENOMEM = 12,
    /// Permission denied.
    #[error("EACCES: permission denied")]
    EACCES = 13,
    /// Bad address.
    #[error("EFAULT: bad address")]
    EFAULT = 14,
    /// Device or resource busy.
    #[error("EBUSY: busy")]
    EBUSY = 16,
    /// No such device (a node that does not exist or has no memory).
    #[error("ENODEV: no such node")]
    ENODEV = 19,
    /// Invalid argument.
    #[error("EINVAL: invalid argument")]
    EINVAL = 22,
}

impl Errno {
    /// The positive Linux error number.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The symbolic name (`EINVAL`).
    pub fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::ESRCH => "ESRCH",
            Errno::EIO => "EIO",
            Errno::ENOMEM => "ENOMEM",
            Errno::EACCES => "EACCES",
            Errno::EFAULT => "EFAULT",
            Errno::EBUSY => "EBUSY",
            Errno::ENODEV => "ENODEV",
            Errno::EINVAL => "EINVAL",
        }
    }
}
