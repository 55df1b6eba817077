//! The page allocator's errors: booting ([`BootError`]), allocating
//! ([`AllocError`]), freeing ([`FreeError`]), reaching a page's bytes
//! ([`AccessError`]), registering a CPU ([`CpuError`]) and setting up a
//! simulation's start ([`SetupError`]). Lower layers'
//! errors convert into these at the boundary (`DescError` and
//! `BackingError` into `BootError`, `GfpError` into `AllocError`). Every
//! error leaves the allocator exactly as it was before the call.

use crate::backing::BackingError;
use crate::error::Errno;
use crate::freetype::MigrateType;
use crate::gfp::GfpError;
use crate::machine::DescError;
use crate::types::{CpuId, NodeId, Order, Pfn};
use thiserror::Error;

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
    /// The backing failed.
    #[error(transparent)]
    Backing(#[from] BackingError),
}

impl AccessError {
    /// The Linux error number the kernel would return.
    pub fn errno(self) -> Errno {
        match self {
            AccessError::OutOfBounds { .. } => Errno::EINVAL,
            AccessError::Backing(_) => Errno::EIO,
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

impl From<GfpError> for AllocError {
    fn from(err: GfpError) -> AllocError {
        AllocError::Unsupported(err.0)
    }
}

/// Why a set-up call ([`super::PageAllocator::set_pageblock_migratetype`])
/// was refused; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SetupError {
    /// Only Unmovable, Movable and Reclaimable can be set (EINVAL).
    #[error("EINVAL: a pageblock can be set Unmovable, Movable or Reclaimable, not {name}", name = .0.name())]
    Migratetype(MigrateType),
    /// The PFN is in no zone (EINVAL).
    #[error("EINVAL: PFN {0} is in no zone")]
    NoZone(Pfn),
    /// The pageblock's own type has its own accounting (EINVAL).
    #[error("EINVAL: the pageblock at PFN {block} is {} or unmapped", .current.name())]
    BlockType {
        /// The pageblock's first PFN.
        block: Pfn,
        /// Its type.
        current: MigrateType,
    },
    /// A page of the pageblock is free or being freed (EBUSY).
    #[error("EBUSY: the pageblock at PFN {0} has free pages")]
    Busy(Pfn),
    /// An order above MAX_PAGE_ORDER, or a PFN not aligned to it (EINVAL).
    #[error("EINVAL: no block of order {order} starts at PFN {pfn}")]
    Order {
        /// The PFN given.
        pfn: Pfn,
        /// The order given.
        order: Order,
    },
    /// A page that is not an allocated order-0 block of the direct map
    /// with the first page's migratetype (EINVAL).
    #[error("EINVAL: PFN {0} is not an allocated order-0 page like the block's first")]
    NotHeld(Pfn),
}

impl SetupError {
    /// The errno of the refusal.
    pub fn errno(&self) -> Errno {
        match self {
            SetupError::Busy(_) => Errno::EBUSY,
            _ => Errno::EINVAL,
        }
    }
}
