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

pub mod secretmem;

pub use crate::page_alloc::{HotplugError, ShuffleStats, SHUFFLE_RETRY};
pub use secretmem::SecretRegion;
