//! Policies over the page allocator's mechanism: free-list shuffling and
//! memory hotplug. Each has the kernel's behaviour as its default and an off
//! that costs nothing on the allocation and free paths.
//! (NUMA emulation is a transformation of the machine description and lives
//! in `machine::numa_emulation`.)

pub mod hotplug;
pub mod shuffle;

pub use hotplug::HotplugError;
pub use shuffle::{ShuffleStats, SHUFFLE_RETRY};
