//! `/proc/slabinfo` (version 2.1) as mm/slab_common.c prints it for SLUB:
//! tunables and shared figures are 0, every slab counts as active, and free
//! objects are those of the partial slabs (get_slabinfo()).

use super::SlabAllocator;
use crate::page_source::PageSource;
use std::fmt::Write;

/// One line of `/proc/slabinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlabInfo {
    /// Cache name.
    pub name: String,
    /// Objects in use (`num_objs` minus the free objects of partial slabs).
    pub active_objs: u64,
    /// Objects in all slabs.
    pub num_objs: u64,
    /// Object slot size.
    pub objsize: u32,
    /// Objects per slab of the preferred order.
    pub objperslab: u32,
    /// Pages per slab of the preferred order.
    pub pagesperslab: u64,
    /// Slabs (SLUB: all active).
    pub active_slabs: u64,
    /// Slabs.
    pub num_slabs: u64,
}

impl<P: PageSource> SlabAllocator<P> {
    /// One [`SlabInfo`] per cache, in /proc/slabinfo order (newest first:
    /// caches are added to the head of `slab_caches`).
    pub fn slabinfo_rows(&self) -> Vec<SlabInfo> {
        let mut rows: Vec<SlabInfo> = self
            .caches()
            .map(|(_, cache)| SlabInfo {
                name: cache.name().to_string(),
                active_objs: cache.active_objects(),
                num_objs: cache.total_objects(),
                objsize: cache.size(),
                objperslab: cache.objects_per_slab(),
                pagesperslab: cache.order().nr_pages(),
                active_slabs: cache.nr_slabs(),
                num_slabs: cache.nr_slabs(),
            })
            .collect();
        rows.reverse();
        rows
    }
}

/// Renders `/proc/slabinfo` (cache_show() and print_slabinfo_header()).
pub fn slabinfo<P: PageSource>(slab: &SlabAllocator<P>) -> String {
    let mut out = String::new();
    out.push_str("slabinfo - version: 2.1\n");
    out.push_str(
        "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab>",
    );
    out.push_str(" : tunables <limit> <batchcount> <sharedfactor>");
    out.push_str(" : slabdata <active_slabs> <num_slabs> <sharedavail>\n");
    for row in slab.slabinfo_rows() {
        let _ = write!(
            out,
            "{:<17} {:>6} {:>6} {:>6} {:>4} {:>4}",
            row.name, row.active_objs, row.num_objs, row.objsize, row.objperslab, row.pagesperslab
        );
        let _ = write!(out, " : tunables {:>4} {:>4} {:>4}", 0, 0, 0);
        let _ = writeln!(
            out,
            " : slabdata {:>6} {:>6} {:>6}",
            row.active_slabs, row.num_slabs, 0
        );
    }
    out
}
