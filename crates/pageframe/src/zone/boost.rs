//! Watermark boosting: a fallback that steals pages from a pageblock of
//! another type raises the zone's watermarks by a pageblock (up to
//! `watermark_boost_factor` / 10000 of the high watermark), so that kswapd
//! reclaims a little beyond the high watermark and future fallbacks become
//! less likely. mirrors boost_watermark() and the ZONE_BOOSTED_WATERMARK
//! flag of mm/page_alloc.c (6.12); kswapd (the reclaim layer) pays the boost
//! back and clears it.
//!
//! Owns: the zone's `watermark_boost` (pages added to every watermark), its
//! limit and the "wake kswapd" flag. Invariant: `watermark_boost <=
//! boost_ceiling`, where the ceiling is the limit, or the boost a write to
//! `vm.watermark_boost_factor` left above a lowered limit (the kernel keeps
//! it until the next boost or kswapd); the limit is 0 when boosting is off
//! or the zone is small.

use super::Zone;

/// `watermark_boost_factor`'s default (`/proc/sys/vm/watermark_boost_factor`).
pub const WATERMARK_BOOST_FACTOR: u64 = 15_000;

/// The largest boost of a zone: `factor / 10000` of its high watermark, at
/// least a pageblock; 0 when boosting is off (`factor == 0`), when the zone
/// has fewer than four pageblocks ("unlikely to produce results", and on
/// small machines a boost can cause an immediate OOM) or its high
/// watermark is 0. mirrors boost_watermark()'s limits.
pub fn max_watermark_boost(high: u64, managed: u64, pageblock_pages: u64, factor: u64) -> u64 {
    if factor == 0 || pageblock_pages.saturating_mul(4) > managed {
        return 0;
    }
    let max_boost = (high as u128 * factor as u128 / 10_000) as u64;
    if max_boost == 0 {
        return 0;
    }
    max_boost.max(pageblock_pages)
}

impl Zone {
    /// Sets the boost limit. Without `keep_boost` any boost is dropped, as
    /// __setup_per_zone_wmarks() drops it when the watermarks are
    /// (re)computed; with it the boost stays, as after a write to
    /// `vm.watermark_boost_factor`, which the kernel only reads at the next
    /// boost (boost_watermark() then holds the boost to the new limit).
    pub(crate) fn set_boost_limit(&mut self, limit: u64, keep_boost: bool) {
        self.boost_limit = limit;
        if !keep_boost {
            self.watermark_boost = 0;
        }
        self.boost_ceiling = limit.max(self.watermark_boost);
    }

    /// Raises the boost by a pageblock, up to the limit; false when
    /// boosting is off for this zone. mirrors boost_watermark().
    pub(crate) fn boost_watermark(&mut self) -> bool {
        if self.boost_limit == 0 {
            return false;
        }
        let pageblock = 1u64 << self.pageblock_order.0;
        self.watermark_boost = (self.watermark_boost + pageblock).min(self.boost_limit);
        self.boost_ceiling = self.boost_limit;
        true
    }

    /// Pages the watermarks are boosted by (`zone->watermark_boost`).
    pub(crate) fn watermark_boost(&self) -> u64 {
        self.watermark_boost
    }

    /// Sets ZONE_BOOSTED_WATERMARK: the allocation that boosted wakes kswapd.
    pub(crate) fn mark_boosted(&mut self) {
        self.boosted_wakeup = true;
    }

    /// Tests and clears ZONE_BOOSTED_WATERMARK.
    pub(crate) fn take_boosted_wakeup(&mut self) -> bool {
        std::mem::take(&mut self.boosted_wakeup)
    }

    /// kswapd paid back `pages` of the boost.
    pub(crate) fn reduce_watermark_boost(&mut self, pages: u64) {
        self.watermark_boost -= self.watermark_boost.min(pages);
        self.boost_ceiling = self.boost_limit.max(self.watermark_boost);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1.5 times the high watermark, at least a pageblock; nothing when off
    /// or on a zone under four pageblocks.
    #[test]
    fn the_boost_limit_follows_the_kernel() {
        assert_eq!(max_watermark_boost(10_000, 1 << 20, 512, 15_000), 15_000);
        assert_eq!(max_watermark_boost(100, 1 << 20, 512, 15_000), 512);
        assert_eq!(max_watermark_boost(10_000, 1 << 20, 512, 0), 0);
        assert_eq!(max_watermark_boost(10_000, 2047, 512, 15_000), 0);
        assert_eq!(max_watermark_boost(0, 1 << 20, 512, 15_000), 0);
    }
}
