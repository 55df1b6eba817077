//! Typed errors of the library. Every error leaves the structure it was
//! returned from exactly as it was before the call.

use crate::backing::BackingError;
use crate::types::{CpuId, NodeId, Order, Pfn};
use thiserror::Error;

/// A machine description that cannot be booted. Displays as one line that
/// starts with the offending field: `node[1].cpus: CPU 3 is on two nodes`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field}: {message}")]
pub struct DescError {
    /// The field, as a path into the description (`nodes`, `node[2].mem`, `distance`).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl DescError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> DescError {
        DescError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Why a machine could not be booted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BootError {
    /// The description is invalid.
    #[error(transparent)]
    Desc(#[from] DescError),
    /// The backing (the real arena) could not be made.
    #[error("arena: {0}")]
    Backing(#[from] BackingError),
}

/// Why an allocation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum AllocError {
    /// The order is above the machine's MAX_PAGE_ORDER.
    #[error("order {order} is above MAX_PAGE_ORDER {max}")]
    OrderTooLarge {
        /// The requested order.
        order: Order,
        /// The machine's largest order.
        max: Order,
    },
    /// No zone allowed by the GFP flags and node mask could satisfy the request.
    #[error("out of memory for an order-{order} allocation")]
    NoMemory {
        /// The requested order.
        order: Order,
    },
    /// The preferred node does not exist.
    #[error("node {0} does not exist")]
    NoSuchNode(NodeId),
    /// The CPU does not exist.
    #[error("CPU {0} does not exist")]
    NoSuchCpu(CpuId),
    /// The GFP flags ask for something this build does not provide.
    #[error("unsupported GFP flags: {0}")]
    Unsupported(&'static str),
    /// Only a pageblock conversion (a TLB shootdown) could serve the
    /// request, and the caller cannot block (`ALLOC_NOBLOCK`).
    #[error("an order-{order} __GFP_UNMAPPED allocation would need a pageblock conversion, and the caller cannot block")]
    WouldBlock {
        /// The requested order.
        order: Order,
    },
    /// The backing failed to zero the new pages (the pages were freed again).
    #[error("zeroing the new pages failed: {0}")]
    Backing(BackingError),
}

/// Why reading or writing a page's bytes failed. Nothing was copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum AccessError {
    /// The page is not the head of an allocated block (EFAULT).
    #[error("PFN {0} is not an allocated block")]
    NotAllocated(Pfn),
    /// The bytes do not fit in the block (EINVAL).
    #[error("bytes {offset}..{end} are outside a block of {size} bytes")]
    OutOfBounds {
        /// First byte.
        offset: usize,
        /// One past the last byte.
        end: usize,
        /// Bytes in the block.
        size: usize,
    },
    /// A direct-map access to a block of an unmapped pageblock (EFAULT):
    /// use the mermap accessors.
    #[error("PFN {0} is not in the direct map")]
    NotMapped(Pfn),
    /// The backing has no bytes (a simulation).
    #[error("the backing has no page contents (simulated memory)")]
    NoData,
    /// The backing failed.
    #[error(transparent)]
    Backing(#[from] BackingError),
}

impl AccessError {
    /// The Linux error number the kernel would return.
    pub fn errno(self) -> Errno {
        match self {
            AccessError::OutOfBounds { .. } => Errno::EINVAL,
            AccessError::NoData | AccessError::Backing(_) => Errno::EIO,
            AccessError::NotAllocated(_) | AccessError::NotMapped(_) => Errno::EFAULT,
        }
    }
}

/// Why a free was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum FreeError {
    /// The PFN is in a hole or outside every zone.
    #[error("PFN {0} is not memory of this machine")]
    NotMemory(Pfn),
    /// The page is free already (in the buddy lists or on a per-CPU list).
    #[error("PFN {0} is already free (double free)")]
    DoubleFree(Pfn),
    /// The page is not the first page of an allocated block.
    #[error("PFN {0} is not the head of an allocated block")]
    NotAllocated(Pfn),
    /// The page was allocated with another order.
    #[error("PFN {pfn} was allocated at order {allocated}, freed at order {freed}")]
    WrongOrder {
        /// The page.
        pfn: Pfn,
        /// The order it was allocated with.
        allocated: Order,
        /// The order passed to the free.
        freed: Order,
    },
    /// The CPU does not exist.
    #[error("CPU {0} does not exist")]
    NoSuchCpu(CpuId),
}

/// A broken invariant, found by a `check_invariants()`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invariant broken: {0}")]
pub struct InvariantError(pub String);

/// Why a CPU handle could not be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum CpuError {
    /// The CPU does not exist.
    #[error("CPU {0} does not exist")]
    NoSuchCpu(CpuId),
    /// Another handle holds the CPU (EBUSY).
    #[error("CPU {0} is registered to another handle")]
    Busy(CpuId),
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
