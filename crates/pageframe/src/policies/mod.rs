//! Policies over the page allocator's mechanism: free-list shuffling,
//! memory hotplug, and secret memory over the unmapped pools. Each has the kernel's behaviour as its default and an off
//! that costs nothing on the allocation and free paths.
//! (NUMA emulation is a transformation of the machine description and lives
//! in `machine::numa_emulation`.)

pub mod hotplug;
pub mod secretmem;
pub mod shuffle;

pub use hotplug::HotplugError;
pub use secretmem::SecretRegion;
pub use shuffle::{ShuffleStats, SHUFFLE_RETRY};
