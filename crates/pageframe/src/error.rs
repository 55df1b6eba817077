//! Typed errors of the library. Every error leaves the structure it was
//! returned from exactly as it was before the call.

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
