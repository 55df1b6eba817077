//! The zsmalloc `classes` debug view (debugfs `zsmalloc/<pool>/classes`),
//! laid out as zs_stats_size_show() prints it in current Linux: one row per
//! unmerged class with the zspages of each fullness group from 10 % to
//! 100 %, then a Total row.

use super::{ZsPool, NR_FULLNESS_GROUPS, ZS_INUSE_RATIO_10};
use crate::page_source::PageSource;
use std::fmt::Write;

/// One row of the view.
pub(crate) struct ClassRow {
    pub(crate) index: usize,
    pub(crate) size: usize,
    pub(crate) groups: [u64; NR_FULLNESS_GROUPS],
    pub(crate) obj_allocated: u64,
    pub(crate) obj_used: u64,
    pub(crate) pages_used: u64,
    pub(crate) pages_per_zspage: usize,
    pub(crate) freeable: u64,
}

/// Renders the `classes` view of a pool.
pub fn zs_classes<P: PageSource>(pool: &ZsPool<P>) -> String {
    let mut out = String::new();
    let _ = write!(out, " {:>5} {:>5} ", "class", "size");
    for name in [
        "10%", "20%", "30%", "40%", "50%", "60%", "70%", "80%", "90%", "99%", "100%",
    ] {
        let _ = write!(out, "{name:>9} ");
    }
    let _ = writeln!(
        out,
        "{:>13} {:>10} {:>10} {:>16} {:>8}",
        "obj_allocated", "obj_used", "pages_used", "pages_per_zspage", "freeable"
    );
    let mut totals = [0u64; NR_FULLNESS_GROUPS];
    let (mut objs, mut used, mut pages, mut freeable) = (0, 0, 0, 0);
    for row in pool.class_rows() {
        let _ = write!(out, " {:>5} {:>5} ", row.index, row.size);
        for (total, count) in totals.iter_mut().zip(row.groups).skip(ZS_INUSE_RATIO_10) {
            *total += count;
            let _ = write!(out, "{count:>9} ");
        }
        let _ = writeln!(
            out,
            "{:>13} {:>10} {:>10} {:>16} {:>8}",
            row.obj_allocated, row.obj_used, row.pages_used, row.pages_per_zspage, row.freeable
        );
        objs += row.obj_allocated;
        used += row.obj_used;
        pages += row.pages_used;
        freeable += row.freeable;
    }
    out.push('\n');
    let _ = write!(out, " {:>5} {:>5} ", "Total", "");
    for total in &totals[ZS_INUSE_RATIO_10..] {
        let _ = write!(out, "{total:>9} ");
    }
    let _ = writeln!(
        out,
        "{:>13} {:>10} {:>10} {:>16} {:>8}",
        objs, used, pages, "", freeable
    );
    out
}
