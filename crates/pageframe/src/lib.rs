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
//! # Public surface
//!
//! | Path | What it offers |
//! |------|----------------|
//! | crate root | the machine description ([`MachineDesc`], [`MachineLayout`], [`DescError`]); the two allocator faces, [`LocalPageAllocator`] (one thread, no locks) and [`SharedPageAllocator`] (threads, each registering its own CPU), with [`CpuHandle`], [`Page`], [`AllocOptions`] (with the policy switches [`FallbackOrder`] and [`PcpSizing`]), [`ArenaOptions`], snapshots ([`ZoneSnapshot`] with its [`ZoneEvents`], [`PcpSnapshot`], [`Watermarks`], [`MetadataCost`], fallback events by [`ExtfragKey`]) and typed errors with their errno ([`AllocError`], [`FreeError`], [`AccessError`], [`BootError`], [`CpuError`], [`HotplugError`], [`SetupError`], [`Errno`], [`InvariantError`]); [`Gfp`]; freetypes ([`MigrateType`], [`FreeType`]); the value types ([`Pfn`], [`Order`], [`NodeId`], [`CpuId`], [`ZoneType`], [`Nodemask`]); [`MachineRng`]; the lock families ([`Local`], [`Shared`] with its [`SpinLock`] and [`SpinGuard`], [`LockFamily`]) |
//! | [`machine`] | descriptions in detail: nodes, ranges, kernel command line, NUMA emulation, sizes |
//! | [`backing`] | where page contents live: the simulated store, the memfd arena, the mermap |
//! | [`policies`] | secret memory ([`policies::SecretRegion`]) |
//! | [`proc`] | `/proc/buddyinfo`, `pagetypeinfo`, `zoneinfo`, `vmstat` as the kernel prints them |
//! | [`vm`] | tasks and address spaces: faults, memory policies, NUMA balancing |
//! | [`reclaim`] | LRU lists, the page cache, kswapd and direct reclaim |
//! | [`page_source`] | the page-allocator API the layers below take their pages through |
//! | [`slab`] | SLUB-like kmem caches and kmalloc |
//! | [`zpool`] | compressed-object pools: zsmalloc and afmalloc |
//! | [`zram`] | a compressed page store over a zpool |
//!
//! The engine (memmap, pageblock flags, zones and buddy lists, per-CPU
//! lists, freetypes, GFP decoding, locks, the RNG) is private: its public
//! types are re-exported at the root, and its state is reached only
//! through the allocator's methods, snapshots and `check_invariants`.
//!
//! Layers, each using only those above it (and those before it on its own
//! line):
//!
//! 1. `types`, `error` (the shared InvariantError and Errno), `rng`, `sync`
//!    (locks and the atomics facade that loom swaps; it uses nothing else)
//! 2. `machine`: descriptions, validation, zone layout, NUMA emulation; its
//!    error is `DescError`
//! 3. `freetype`, then `alloc_policy` (fallback order, pcp sizing), then
//!    `memmap` and `pageblock` (together `frames`)
//! 4. `gfp` (its error `GfpError`)
//! 5. `backing`: the only module that touches the OS
//! 6. `zone`, then `pcp`
//! 7. `page_alloc`: the facade, boot, zone resizing, free-list shuffling and
//!    memory hotplug
//! 8. `proc` (kernel-format views), `policies` (secretmem)
//! 9. `vm` (tasks, address spaces, mempolicy, NUMA balancing), `reclaim`
//! 10. `page_source`, `slab`, `zpool` (zsmalloc, afmalloc), `zram`
//!
//! Examples to copy: `examples/guest_memory_pool.rs` (an arena shared by
//! vCPU threads), `examples/secret_pool.rs`, `examples/zram_arena.rs`.

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
mod alloc_policy;
mod error;
mod frames;
mod freetype;
mod gfp;
mod memmap;
mod page_alloc;
// The loom models (tests/loom_sync.rs, built with `--cfg loom`) drive the real
// pageblock word and locks, so those two modules are public in that build only.
#[cfg(not(loom))]
mod pageblock;
#[cfg(loom)]
#[allow(missing_docs)]
pub mod pageblock;
mod pcp;
mod rng;
#[cfg(not(loom))]
mod sync;
#[cfg(loom)]
#[allow(missing_docs)]
pub mod sync;
mod types;
mod zone;

pub use alloc_policy::{FallbackOrder, FreeHighThreshold, PcpSizing};
pub use error::{Errno, InvariantError};
pub use frames::MetadataCost;
pub use freetype::{FreeType, FreeTypeFlags, MigrateType};
pub use gfp::{Gfp, GfpError};
pub use machine::{DescError, MachineDesc, MachineLayout};
pub use page_alloc::{
    AccessError, AllocError, AllocOptions, ArenaOptions, BootError, CpuError, CpuHandle, FreeError,
    HotplugError, LocalPageAllocator, Page, PageAllocator, PcpSnapshot, SetupError,
    SharedPageAllocator, ShuffleStats, VmEvent, VmSysctl, ZoneSnapshot, BULK_LIST_RUN,
    PAGETYPEINFO_CAP,
};
pub use rng::MachineRng;
pub use slab::SlabError;
pub use sync::{Local, LockFamily, Shared, SpinGuard, SpinLock};
pub use types::{CpuId, NodeId, Nodemask, Order, Pfn, ZoneIdx, ZoneType, MAX_NUMNODES};
pub use zone::watermark::{Watermarks, LOWMEM_RESERVE_RATIO, WATERMARK_SCALE_FACTOR};
pub use zone::{ExtfragKey, ZoneEvents};
pub use zpool::ZpoolError;
