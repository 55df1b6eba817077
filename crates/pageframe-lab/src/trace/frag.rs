//! The kernel's two fragmentation measures per order, from a zone's free
//! block counts per order (`free_area[order].nr_free`), as debugfs
//! `extfrag/unusable_index` and `extfrag/extfrag_index` print them: both
//! in thousandths. The counts may come from a trace's saved host files, so
//! every sum, product and shift saturates (an order past 63 is a block of
//! more pages than a u64 counts).

/// Pages in a block of `order`, saturated.
fn pages_of(order: u32) -> u64 {
    1u64.checked_shl(order).unwrap_or(u64::MAX)
}

/// `struct contig_page_info`: mirrors fill_contig_page_info() (mm/vmstat.c).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContigPageInfo {
    /// Free pages.
    pub free_pages: u64,
    /// Free blocks of any order.
    pub free_blocks_total: u64,
    /// Free blocks that could serve `order`, in units of `order`.
    pub free_blocks_suitable: u64,
}

impl ContigPageInfo {
    /// Sums `nr_free` (blocks per order) for requests of `order`.
    pub fn new(nr_free: &[u64], order: u32) -> ContigPageInfo {
        let mut info = ContigPageInfo::default();
        for (block_order, &blocks) in nr_free.iter().enumerate() {
            let block_order = block_order as u32;
            info.free_blocks_total = info.free_blocks_total.saturating_add(blocks);
            info.free_pages = info
                .free_pages
                .saturating_add(blocks.saturating_mul(pages_of(block_order)));
            if block_order >= order {
                info.free_blocks_suitable = info
                    .free_blocks_suitable
                    .saturating_add(blocks.saturating_mul(pages_of(block_order - order)));
            }
        }
        info
    }
}

/// The unusable free index of `order` in thousandths: the share of free
/// memory in blocks too small for the order (mirrors unusable_free_index()).
pub fn unusable_free_index(nr_free: &[u64], order: u32) -> i64 {
    let info = ContigPageInfo::new(nr_free, order);
    if info.free_pages == 0 {
        return 1000;
    }
    let suitable_pages = info.free_blocks_suitable.saturating_mul(pages_of(order));
    (info.free_pages.saturating_sub(suitable_pages) as u128 * 1000 / info.free_pages as u128) as i64
}

/// The fragmentation index of `order` in thousandths: -1000 when the
/// request would succeed, towards 0 when it would fail for lack of memory,
/// towards 1000 when for fragmentation (mirrors __fragmentation_index()).
pub fn fragmentation_index(nr_free: &[u64], order: u32) -> i64 {
    let info = ContigPageInfo::new(nr_free, order);
    if info.free_blocks_total == 0 {
        return 0;
    }
    if info.free_blocks_suitable > 0 {
        return -1000;
    }
    let requested = 1u128.checked_shl(order).unwrap_or(u128::MAX);
    let scaled = 1000 + info.free_pages as u128 * 1000 / requested;
    1000 - (scaled / info.free_blocks_total as u128) as i64
}

/// Adds the blocks of several zones order by order (a machine-wide view).
pub fn sum_orders<'a>(zones: impl IntoIterator<Item = &'a [u64]>) -> Vec<u64> {
    let mut total: Vec<u64> = Vec::new();
    for zone in zones {
        if total.len() < zone.len() {
            total.resize(zone.len(), 0);
        }
        for (sum, &blocks) in total.iter_mut().zip(zone) {
            *sum = sum.saturating_add(blocks);
        }
    }
    total
}
