//! What a machine is: its nodes, memory ranges, CPUs, distances and the
//! allocator's geometry (page size, MAX_PAGE_ORDER, pageblock order).
//!
//! [`MachineDesc`] is what a user writes (TOML, flags, kernel command line);
//! [`MachineDesc::layout`] validates it and computes the [`MachineLayout`] the
//! allocator boots from: every zone's span and present ranges in PFNs.
//! Invariant of a layout: ranges are pageblock-aligned, sorted, disjoint, and
//! each lies in exactly one zone of one node.
//!
//! ```
//! use pageframe::machine::{format_size, parse_size};
//! use pageframe::MachineDesc;
//!
//! let desc = MachineDesc::uniform(parse_size("mem", "256M")?, 2, 4)?;
//! let layout = desc.layout()?;
//! assert_eq!(layout.nodes.len(), 2);
//! assert_eq!(format_size(layout.present_pages() << layout.page_shift), "256M");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cmdline;
mod desc;
mod error;
mod layout;
mod numa_emulation;
mod pfn_range;
mod reserve_mem;
mod size;

pub use cmdline::apply_cmdline;
pub use desc::{
    HotplugStep, MachineDesc, MemRange, MemorySideCache, NodeDesc, NumaFake, ShuffleParam,
    LOCAL_DISTANCE, REMOTE_DISTANCE,
};
pub use error::DescError;
pub use layout::{MachineLayout, NodeLayout, PfnRange, ZoneLayout, MAX_CPU_ZONE_PAIRS};
pub use numa_emulation::{emulate_numa, FAKE_NODE_MIN_SIZE};
pub(crate) use pfn_range::{intersect, merge_sorted};
pub use reserve_mem::{ReserveMem, RESERVE_MEM_MAX_ENTRIES};
pub use size::{format_size, parse_size};
