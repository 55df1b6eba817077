//! pageframe: the Linux physical-memory allocator stack, rebuilt for user space.
//!
//! This crate holds the engine: machine descriptions, the memmap, zones with
//! buddy lists indexed by freetype, per-CPU lists, the bulk API and the
//! kernel-format views. It has no CLI, plotting or terminal dependencies.
//!
//! ```
//! use pageframe::{Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, CpuId};
//!
//! let machine = MachineDesc::uniform(1 << 30, 1, 2).unwrap();
//! let allocator = LocalPageAllocator::boot(&machine).unwrap();
//! let cpu = allocator.cpu(CpuId(0)).unwrap();
//! let page = cpu.alloc_pages(Gfp::KERNEL, Order(2), NodeId(0)).unwrap();
//! cpu.free_pages(page, Order(2)).unwrap();
//! assert!(cpu.free_pages(page, Order(2)).is_err()); // a double free is an error
//! allocator.check_invariants().unwrap();
//! ```
//!
//! Layers, each using only those above it (and those before it on its own
//! line):
//!
//! 1. `types` (Pfn, Order, NodeId, CpuId, ZoneType, Nodemask), `error` (the
//!    shared InvariantError and Errno), `rng`
//! 2. `machine`: descriptions, validation, zone layout, NUMA emulation; its
//!    error is `DescError`
//! 3. `freetype`, then `memmap` and `pageblock` (together `frames`)
//! 4. `gfp` (its error `GfpError`), `sync`
//! 5. `backing`: the only module that touches the OS
//! 6. `zone`, then `pcp`
//! 7. `page_alloc`: the facade, boot, zone resizing, free-list shuffling and
//!    memory hotplug; its errors `BootError`, `AllocError`, `FreeError`,
//!    `AccessError`, `CpuError`, `HotplugError`
//! 8. `proc` (kernel-format views), `policies` (secretmem)
//! 9. `vm` (tasks, address spaces, mempolicy, NUMA balancing)
//! 10. `page_source`, `slab`, `zpool` (zsmalloc, afmalloc), `zram`

#![warn(missing_docs)]

// The public modules: each is a layer a user builds on.
pub mod backing;
pub mod machine;
pub mod page_source;
pub mod policies;
pub mod proc;
pub mod reclaim;
pub mod slab;
pub mod vm;
pub mod zpool;
pub mod zram;

// The engine's internals: their public items are re-exported below.
mod error;
mod frames;
mod freetype;
mod gfp;
mod memmap;
mod page_alloc;
mod pageblock;
mod pcp;
mod rng;
mod sync;
mod types;
mod zone;

pub use error::{Errno, InvariantError};
pub use frames::MetadataCost;
pub use freetype::{FreeType, FreeTypeFlags, MigrateType};
pub use gfp::{Gfp, GfpError};
pub use machine::{DescError, MachineDesc, MachineLayout};
pub use page_alloc::{
    AccessError, AllocError, AllocOptions, ArenaOptions, BootError, CpuError, CpuHandle, FreeError,
    HotplugError, LocalPageAllocator, Page, PageAllocator, PcpSnapshot, SharedPageAllocator,
    ShuffleStats, VmEvent, ZoneSnapshot, PAGETYPEINFO_CAP,
};
pub use rng::MachineRng;
pub use slab::SlabError;
pub use sync::{Local, LockFamily, Shared};
pub use types::{CpuId, NodeId, Nodemask, Order, Pfn, ZoneIdx, ZoneType, MAX_NUMNODES};
pub use zone::watermark::Watermarks;
pub use zpool::ZpoolError;
