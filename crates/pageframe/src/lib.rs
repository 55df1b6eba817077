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

pub mod backing;
pub mod error;
pub mod frames;
pub mod freetype;
pub mod gfp;
pub mod machine;
pub mod memmap;
pub mod page_alloc;
pub mod page_source;
pub mod pageblock;
pub mod pcp;
pub mod policies;
pub mod proc;
pub mod reclaim;
pub mod rng;
pub mod slab;
pub mod sync;
pub mod types;
pub mod vm;
pub mod zone;
pub mod zpool;
pub mod zram;

pub use error::{Errno, InvariantError};
pub use freetype::{FreeType, FreeTypeFlags, FreeTypeIdx, MigrateType};
pub use gfp::Gfp;
pub use machine::{DescError, MachineDesc, MachineLayout};
pub use page_alloc::{
    AccessError, AllocError, AllocOptions, ArenaOptions, BootError, CpuError, CpuHandle, FreeError,
    HotplugError, LocalPageAllocator, Page, PageAllocator, SharedPageAllocator, ShuffleStats,
    VmEvent, ZoneSnapshot,
};
pub use rng::MachineRng;
pub use slab::SlabError;
pub use types::{CpuId, NodeId, Nodemask, Order, Pfn, ZoneIdx, ZoneType};
pub use zpool::ZpoolError;
