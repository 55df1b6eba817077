//! `/proc/buddyinfo`: free blocks per order of every populated zone.
//! mirrors frag_show_print().

use crate::sync::LockFamily;
use crate::PageAllocator;
use std::fmt::Write;

/// Renders `/proc/buddyinfo`.
pub fn buddyinfo<L: LockFamily>(allocator: &PageAllocator<L>) -> String {
    let mut out = String::new();
    for zone in allocator
        .zone_snapshots()
        .iter()
        .filter(|zone| zone.is_populated())
    {
        let _ = write!(out, "Node {}, zone {:>8} ", zone.node, zone.name());
        for blocks in &zone.nr_free_blocks {
            let _ = write!(out, "{blocks:>6} ");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::{LocalPageAllocator, MachineDesc};

    #[test]
    fn layout_matches_the_kernel() {
        let allocator =
            LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 1).unwrap()).unwrap();
        let text = super::buddyinfo(&allocator);
        assert_eq!(
            text,
            "Node 0, zone   Normal      0      0      0      0      0      0      0      0      0      0     16 \n"
        );
    }
}
