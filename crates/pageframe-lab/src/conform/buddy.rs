//! The `buddy` conformance suite: the order and migratetype layout of a
//! fresh pageframe machine shaped like the host beside the host's
//! `/proc/pagetypeinfo`, both texts read by one parser.
//!
//! Comparable on a running host: the pageblock order and size, the orders
//! the free lists have, the migratetypes counted, the zones that have
//! pageblocks, and each zone's number of pageblocks (fixed by the memory
//! map: every block of an online memory section in the zone). Not
//! comparable (see the README): how the blocks split between Unmovable,
//! Movable, Reclaimable and HighAtomic (every block is Movable at boot; the
//! host's split is the history of its allocations and fallbacks) and the
//! free pages per order and migratetype (the host's workload holds most of
//! its memory).
//!
//! A host booted with `deferred_init=lazy` (a vendor option, not in
//! mainline: struct pages past the first ones are initialised on demand by
//! deferred_grow_zone(), for the life of the machine) counts only the
//! pageblocks initialised so far (pagetypeinfo_showblockcount_print()
//! skips a block whose first page is not yet of the zone). pageframe has
//! no uninitialised memory, so on such a host a zone with fewer blocks in
//! the kernel's count than in pageframe's is a listed DIFF; more blocks in
//! the kernel's count stays an unlisted one.

use super::host::{cmdline_param, is_root, read};
use super::host_machine::HostMachine;
use super::{ConformError, ConformRow, SuiteOutcome, SuiteResult};
use crate::trace::host::{parse_pagetypeinfo, Pagetypeinfo};
use pageframe::{AllocOptions, LocalPageAllocator};

/// The suite's name.
const SUITE: &str = "buddy";

/// Why a zone's pageblock count may be lower on the host.
const LAZY_INIT: &str = "the host initialises struct pages on demand (deferred_init=lazy, not in \
     mainline), and /proc/pagetypeinfo counts only the pageblocks initialised so far";

/// Runs the suite; skipped without root (`/proc/pagetypeinfo` and the
/// addresses of `/proc/iomem` are root's).
pub fn run() -> Result<SuiteResult, ConformError> {
    if !is_root() {
        return Ok(SuiteResult::skipped(
            SUITE,
            "not root (/proc/pagetypeinfo is readable by root only)",
        ));
    }
    let kernel = parse_pagetypeinfo(&read("/proc/pagetypeinfo")?);
    let host = HostMachine::read()?;
    let allocator = LocalPageAllocator::boot_layout(host.layout()?, AllocOptions::default())
        .map_err(|err| ConformError::Boot(err.to_string()))?;
    let ours = parse_pagetypeinfo(&pageframe::proc::pagetypeinfo(&allocator));
    let mut rows = vec![
        ConformRow::compare(
            "page block order".into(),
            kernel.pageblock_order.clone(),
            ours.pageblock_order.clone(),
        ),
        ConformRow::compare(
            "pages per block".into(),
            kernel.pages_per_block.clone(),
            ours.pages_per_block.clone(),
        ),
        ConformRow::compare(
            "free-list orders".into(),
            kernel.orders.join(" "),
            ours.orders.join(" "),
        ),
        ConformRow::compare(
            "migratetypes counted".into(),
            kernel.block_types.join(" "),
            ours.block_types.join(" "),
        ),
    ];
    let (kernel_blocks, our_blocks) = (zone_blocks(&kernel), zone_blocks(&ours));
    let zones = |blocks: &[(String, u64)]| -> String {
        let names: Vec<&str> = blocks.iter().map(|(zone, _)| zone.as_str()).collect();
        names.join(", ")
    };
    rows.push(ConformRow::compare(
        "zones with pageblocks".into(),
        zones(&kernel_blocks),
        zones(&our_blocks),
    ));
    let lazy_init = cmdline_param("deferred_init")?.as_deref() == Some("lazy");
    for (zone, theirs) in &kernel_blocks {
        let theirs = *theirs;
        let mine = our_blocks
            .iter()
            .find(|(name, _)| name == zone)
            .map(|(_, count)| *count);
        rows.push(
            ConformRow::compare(
                format!("{zone} pageblocks"),
                theirs.to_string(),
                mine.map_or("no such zone".to_string(), |mine| mine.to_string()),
            )
            .listed_if(
                lazy_init && mine.is_some_and(|mine| theirs < mine),
                LAZY_INIT,
            ),
        );
    }
    Ok(SuiteResult {
        suite: SUITE,
        outcome: SuiteOutcome::Ran(rows),
    })
}

/// Per zone (`node N NAME`), its pageblocks of every type.
fn zone_blocks(parsed: &Pagetypeinfo) -> Vec<(String, u64)> {
    parsed
        .blocks
        .iter()
        .map(|line| {
            let total = line
                .counts
                .iter()
                .fold(0u64, |total, (_, count)| total.saturating_add(*count));
            (format!("node {} {}", line.node, line.zone), total)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_counts_parse() {
        let text = "Page block order: 9\nPages per block:  512\n\nFree pages count per migrate type at order       0      1 \nNode    0, zone      DMA, type    Unmovable      0      0 \n\nNumber of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate \nNode 0, zone      DMA            1            7            0            0            0 \nNode 0, zone    DMA32            7         1481           40            0            0 \n";
        let layout = parse_pagetypeinfo(text);
        assert_eq!(layout.pageblock_order, "9");
        assert_eq!(layout.pages_per_block, "512");
        assert_eq!(layout.orders, ["0", "1"]);
        assert_eq!(layout.block_types.len(), 5);
        let blocks = zone_blocks(&layout);
        assert_eq!(blocks[1].0, "node 0 DMA32");
        assert_eq!(blocks[1].1, 1528);
    }
}
