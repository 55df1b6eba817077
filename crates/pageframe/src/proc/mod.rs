//! Kernel-format views of an allocator: `/proc/buddyinfo`,
//! `/proc/pagetypeinfo`, `/proc/zoneinfo` and `/proc/vmstat`, laid out
//! character for character as mm/vmstat.c prints them (for the counters
//! pageframe has).
//!
//! ```
//! use pageframe::{LocalPageAllocator, MachineDesc};
//!
//! let allocator = LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 1)?)?;
//! let buddyinfo = pageframe::proc::buddyinfo(&allocator);
//! assert!(buddyinfo.starts_with("Node 0, zone "));
//! for view in pageframe::proc::VIEWS {
//!     assert!(pageframe::proc::render(&allocator, view).is_some());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod buddyinfo;
mod pagetypeinfo;
mod vmstat;
mod zoneinfo;

pub use buddyinfo::buddyinfo;
pub use pagetypeinfo::pagetypeinfo;
pub use vmstat::{vmstat, vmstat_counters};
pub use zoneinfo::zoneinfo;

/// The views by name, as `pageframe proc <view>` accepts them. `shuffle` is
/// /sys/module/page_alloc/parameters/shuffle: `Y` or `N`.
pub const VIEWS: [&str; 5] = ["buddyinfo", "pagetypeinfo", "zoneinfo", "vmstat", "shuffle"];

/// /sys/module/page_alloc/parameters/shuffle. mirrors shuffle_show().
pub fn shuffle<L: crate::sync::LockFamily>(allocator: &crate::PageAllocator<L>) -> String {
    if allocator.shuffle_enabled() {
        "Y\n".into()
    } else {
        "N\n".into()
    }
}

/// Renders a view by name; `None` for an unknown name.
pub fn render<L: crate::sync::LockFamily>(
    allocator: &crate::PageAllocator<L>,
    view: &str,
) -> Option<String> {
    match view {
        "buddyinfo" => Some(buddyinfo(allocator)),
        "pagetypeinfo" => Some(pagetypeinfo(allocator)),
        "zoneinfo" => Some(zoneinfo(allocator)),
        "vmstat" => Some(vmstat(allocator)),
        "shuffle" => Some(shuffle(allocator)),
        _ => None,
    }
}
