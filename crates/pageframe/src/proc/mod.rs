//! Kernel-format views of an allocator: `/proc/buddyinfo`,
//! `/proc/pagetypeinfo`, `/proc/zoneinfo` and `/proc/vmstat`, laid out
//! character for character as mm/vmstat.c prints them (for the counters
//! pageframe has), and the page allocator's sysctls as `sysctl` prints
//! them.
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
/// /sys/module/page_alloc/parameters/shuffle: `Y` or `N`; `sysctl` is
/// `sysctl` of the page allocator's vm sysctls.
pub const VIEWS: [&str; 6] = [
    "buddyinfo",
    "pagetypeinfo",
    "zoneinfo",
    "vmstat",
    "shuffle",
    "sysctl",
];

/// The page allocator's sysctls as `sysctl vm.NAME ...` prints them: a
/// line `vm.NAME = <value>` each, in the kernel's table order, a vector's
/// values separated by tabs.
pub fn sysctl<L: crate::sync::LockFamily>(allocator: &crate::PageAllocator<L>) -> String {
    crate::VmSysctl::ALL
        .iter()
        .map(|sysctl| format!("vm.{} = {}", sysctl.name(), allocator.read_sysctl(*sysctl)))
        .collect()
}

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
        "sysctl" => Some(sysctl(allocator)),
        _ => None,
    }
}
