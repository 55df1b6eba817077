//! Kernel-format views of an allocator: `/proc/buddyinfo`,
//! `/proc/pagetypeinfo`, `/proc/zoneinfo` and `/proc/vmstat`, laid out
//! character for character as mm/vmstat.c prints them (for the counters
//! pageframe has).

mod buddyinfo;
mod pagetypeinfo;
mod vmstat;
mod zoneinfo;

pub use buddyinfo::buddyinfo;
pub use pagetypeinfo::pagetypeinfo;
pub use vmstat::{vmstat, vmstat_counters};
pub use zoneinfo::zoneinfo;

/// The views by name, as `pageframe proc <view>` accepts them.
pub const VIEWS: [&str; 4] = ["buddyinfo", "pagetypeinfo", "zoneinfo", "vmstat"];

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
        _ => None,
    }
}
