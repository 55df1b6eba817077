//! `/proc/pagetypeinfo`: free blocks per free list and order, and
//! pageblocks per migratetype. mirrors pagetypeinfo_show(),
//! pagetypeinfo_showfree_print() and pagetypeinfo_showblockcount_print(),
//! with the `__GFP_UNMAPPED` series' walk over every free list
//! (for_each_free_list()): after the migratetypes' rows come the unmapped
//! lists' (`Unmovable-Unmapped`, `Movable-Unmapped`).

use crate::freetype::{FreeTypeIdx, MigrateType};
use crate::page_alloc::ZoneSnapshot;
use crate::sync::LockFamily;
use crate::PageAllocator;
use std::fmt::Write;

/// Renders `/proc/pagetypeinfo`.
pub fn pagetypeinfo<L: LockFamily>(allocator: &PageAllocator<L>) -> String {
    let layout = allocator.layout();
    let snapshots = allocator.zone_snapshots();
    let mut out = String::new();
    for node in &layout.nodes {
        let zones: Vec<&ZoneSnapshot> = snapshots
            .iter()
            .filter(|zone| zone.node == node.id && zone.is_populated())
            .collect();
        if zones.is_empty() {
            continue;
        }
        let _ = writeln!(out, "Page block order: {}", layout.pageblock_order);
        let _ = writeln!(
            out,
            "Pages per block:  {}",
            layout.pageblock_order.nr_pages()
        );
        out.push('\n');
        let _ = write!(out, "{:<43} ", "Free pages count per migrate type at order");
        for order in 0..=layout.max_order.0 {
            let _ = write!(out, "{order:>6} ");
        }
        out.push('\n');
        for zone in &zones {
            for list in FreeTypeIdx::all() {
                let _ = write!(
                    out,
                    "Node {:>4}, zone {:>8}, type {:>12} ",
                    zone.node,
                    zone.name(),
                    list.freetype().to_string()
                );
                for &count in &zone.list_blocks[list.index()] {
                    let overflow = if count >= crate::page_alloc::PAGETYPEINFO_CAP {
                        ">"
                    } else {
                        ""
                    };
                    let _ = write!(out, "{overflow}{count:>6} ");
                }
                out.push('\n');
            }
        }
        let _ = write!(out, "\n{:<23}", "Number of blocks type ");
        for migratetype in MigrateType::ALL {
            let _ = write!(out, "{:>12} ", migratetype.name());
        }
        out.push('\n');
        for zone in &zones {
            let _ = write!(out, "Node {}, zone {:>8} ", zone.node, zone.name());
            for count in zone.pageblocks {
                let _ = write!(out, "{count:>12} ");
            }
            out.push('\n');
        }
    }
    out
}
