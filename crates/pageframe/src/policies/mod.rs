//! Policies over the page allocator's mechanism: secret memory over the
//! unmapped pools, with the kernel's behaviour as its default and an off
//! that costs nothing on the allocation and free paths.
//!
//! Free-list shuffling and memory hotplug run inside the page allocator
//! (`page_alloc::shuffle`, `page_alloc::hotplug`): boot shuffles, and an
//! online resizes zones and shuffles them, so both are page-allocator
//! operations; their types are re-exported here under their old paths.
//! (NUMA emulation is a transformation of the machine description and lives
//! in `machine::numa_emulation`.)
//!
//! ```
//! use pageframe::policies::SecretRegion;
//! use pageframe::{AccessError, CpuId, LocalPageAllocator, MachineDesc, NodeId};
//!
//! let allocator = LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 1)?)?;
//! let cpu = allocator.cpu(CpuId(0))?;
//! let region = SecretRegion::alloc(&cpu, 2, NodeId(0))?;
//! region.write(&cpu, 0, b"secret")?;
//! let mut out = [0u8; 6];
//! region.read(&cpu, 0, &mut out)?;
//! assert_eq!(&out, b"secret");
//! // Not in the direct map: the copying accessors refuse.
//! let page = region.pages()[0];
//! assert_eq!(cpu.read_page(page, 0, &mut out), Err(AccessError::NotMapped(page.pfn())));
//! region.free(&cpu)?; // clears, then frees
//! allocator.check_invariants()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod secretmem;
pub mod secretmem_file;

pub use crate::page_alloc::{HotplugError, ShuffleStats, SHUFFLE_RETRY};
pub use secretmem::SecretRegion;
pub use secretmem_file::{SecretMemError, SecretMemFile};
