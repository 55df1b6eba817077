//! Watermarks, lowmem reserves and per-CPU list sizes: the kernel's formulas,
//! as pure functions of page counts so that they can be tested against
//! numbers worked by hand.
//!
//! mirrors calculate_min_free_kbytes(), __setup_per_zone_wmarks(),
//! setup_per_zone_lowmem_reserve(), zone_batchsize(), zone_highsize() and
//! __zone_watermark_ok() of mm/page_alloc.c (Linux 6.1).

use crate::gfp::AllocFlags;
use crate::types::{Order, ZoneType};

/// `watermark_scale_factor` default: 10 (0.1% of the zone).
pub const WATERMARK_SCALE_FACTOR: u64 = 10;

/// `sysctl_lowmem_reserve_ratio` per zone type.
pub fn lowmem_reserve_ratio(zone_type: ZoneType) -> u64 {
    match zone_type {
        ZoneType::Dma32 => 256,
        ZoneType::Normal => 32,
        ZoneType::Movable => 0,
    }
}

/// The min/low/high watermarks of one zone, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watermarks {
    /// `WMARK_MIN`.
    pub min: u64,
    /// `WMARK_LOW`.
    pub low: u64,
    /// `WMARK_HIGH`.
    pub high: u64,
}

impl Watermarks {
    /// The watermark an allocation checks: 0 min, 1 low, 2 high.
    #[inline]
    pub fn get(&self, index: usize) -> u64 {
        match index {
            0 => self.min,
            1 => self.low,
            _ => self.high,
        }
    }
}

/// `min_free_kbytes = int_sqrt(lowmem_kbytes * 16)`, clamped to [128, 262144].
pub fn min_free_kbytes(lowmem_kbytes: u64) -> u64 {
    (lowmem_kbytes * 16).isqrt().clamp(128, 262_144)
}

/// The watermarks of a zone of `managed` pages, when the zones together have
/// `lowmem_pages` pages and `pages_min` is min_free_kbytes in pages.
pub fn zone_watermarks(
    pages_min: u64,
    managed: u64,
    lowmem_pages: u64,
    scale_factor: u64,
) -> Watermarks {
    let min = if lowmem_pages == 0 {
        0
    } else {
        (pages_min as u128 * managed as u128 / lowmem_pages as u128) as u64
    };
    let step = (min / 4).max(managed * scale_factor / 10_000);
    Watermarks {
        min,
        low: min + step,
        high: min + 2 * step,
    }
}

/// `lowmem_reserve[]` of every zone of one node: `reserves[i][j]` protects
/// zone `i` from allocations whose highest zone is `j`. `managed[i]` is the
/// managed pages of the node's zone of type i (0 when absent).
pub fn lowmem_reserves(
    managed: &[u64; ZoneType::COUNT],
) -> [[u64; ZoneType::COUNT]; ZoneType::COUNT] {
    let mut reserves = [[0; ZoneType::COUNT]; ZoneType::COUNT];
    for (lower, zone_type) in ZoneType::ALL.iter().enumerate().take(ZoneType::COUNT - 1) {
        let ratio = lowmem_reserve_ratio(*zone_type);
        if ratio == 0 || managed[lower] == 0 {
            continue;
        }
        let mut upper_pages = 0;
        for upper in lower + 1..ZoneType::COUNT {
            upper_pages += managed[upper];
            reserves[lower][upper] = upper_pages / ratio;
        }
    }
    reserves
}

/// `zone_batchsize()`: about 0.025% of the zone or 256 KiB, whichever is
/// smaller, then `rounddown_pow_of_two(b + b/2) - 1` (63 on big zones); at
/// least 1, as zone_set_pageset_high_and_batch() applies.
pub fn zone_batchsize(managed: u64, page_bytes: u64) -> u32 {
    let mut batch = (managed >> 10).min((1 << 20) / page_bytes) / 4;
    batch = batch.max(1);
    let rounded = 1u64 << (63 - (batch + batch / 2).leading_zeros());
    ((rounded - 1) as u32).max(1)
}

/// `zone_highsize()`: `total_pages` (the low watermark, or the managed
/// pages / `vm.percpu_pagelist_high_fraction`) split over the CPUs local to
/// the zone's node (all CPUs for a memory-only node), at least `4 * batch`.
pub fn zone_highsize(total_pages: u64, batch: u32, local_cpus: usize, all_cpus: usize) -> u32 {
    let split = if local_cpus > 0 {
        local_cpus
    } else {
        all_cpus.max(1)
    };
    let high = u32::try_from(total_pages / split as u64).unwrap_or(u32::MAX);
    high.max(batch << 2)
}

/// Inputs of a watermark check that come from the zone.
#[derive(Clone, Copy, Debug)]
pub struct ZoneFree {
    /// `NR_FREE_PAGES`.
    pub free_pages: u64,
    /// `nr_reserved_highatomic`.
    pub reserved_highatomic: u64,
    /// `lowmem_reserve[highest_zoneidx]`.
    pub lowmem_reserve: u64,
}

/// The first half of __zone_watermark_ok(): is there enough free memory above
/// `mark` once the unusable pages are taken away? The second half (a block of
/// the order exists) needs the free lists and is `Zone::has_block_at_or_above`.
pub fn watermark_free_ok(zone: ZoneFree, order: Order, mark: u64, alloc_flags: AllocFlags) -> bool {
    let mut unusable = (1i64 << order.0) - 1;
    if !alloc_flags.intersects(AllocFlags::RESERVES) {
        unusable += zone.reserved_highatomic as i64;
    }
    let free = zone.free_pages as i64 - unusable;
    let mut min = mark as i64;
    if alloc_flags.intersects(AllocFlags::RESERVES) {
        if alloc_flags.contains(AllocFlags::MIN_RESERVE) {
            min -= min / 2;
            if alloc_flags.contains(AllocFlags::NON_BLOCK) {
                min -= min / 4;
            }
        }
        if alloc_flags.contains(AllocFlags::OOM) {
            min -= min / 2;
        }
    }
    free > min + zone.lowmem_reserve as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_free_kbytes_follows_sqrt_and_clamps() {
        // 16 GiB of lowmem: sqrt(16 GiB in KiB * 16) = 16384.
        assert_eq!(min_free_kbytes(16 << 20), 16384);
        assert_eq!(min_free_kbytes(1024), 128);
        assert_eq!(min_free_kbytes(1 << 40), 262_144);
    }

    #[test]
    fn watermarks_of_a_4g_zone() {
        let managed = 1u64 << 20; // 4 GiB of 4 KiB pages
        let pages_min = min_free_kbytes(4 << 20) / 4; // 8192 KiB -> 2048 pages
        let marks = zone_watermarks(pages_min, managed, managed, WATERMARK_SCALE_FACTOR);
        assert_eq!(marks.min, 2048);
        // step = max(2048/4, 1048576*10/10000 = 1048) = 1048
        assert_eq!(marks.low, 2048 + 1048);
        assert_eq!(marks.high, 2048 + 2 * 1048);
    }

    #[test]
    fn batch_and_high_as_on_big_zones() {
        assert_eq!(zone_batchsize(1 << 22, 4096), 63);
        assert_eq!(zone_batchsize(1024, 4096), 1);
        assert_eq!(zone_batchsize(1 << 14, 4096), 3);
        assert_eq!(zone_highsize(10_000, 63, 4, 8), 2500);
        assert_eq!(zone_highsize(100, 63, 4, 8), 252);
        assert_eq!(zone_highsize(800, 63, 0, 8), 252);
    }

    #[test]
    fn lowmem_reserve_protects_lower_zones() {
        let reserves = lowmem_reserves(&[1 << 20, 1 << 22, 1 << 21]);
        assert_eq!(reserves[0][1], (1 << 22) / 256);
        assert_eq!(reserves[0][2], ((1 << 22) + (1 << 21)) / 256);
        assert_eq!(reserves[1][2], (1 << 21) / 32);
        assert_eq!(reserves[2], [0, 0, 0]);
    }

    #[test]
    fn reserves_lower_the_bar() {
        let zone = ZoneFree {
            free_pages: 900,
            reserved_highatomic: 0,
            lowmem_reserve: 0,
        };
        assert!(!watermark_free_ok(
            zone,
            Order(0),
            1000,
            AllocFlags::empty()
        ));
        assert!(watermark_free_ok(
            zone,
            Order(0),
            1000,
            AllocFlags::MIN_RESERVE
        ));
        let reserved = ZoneFree {
            reserved_highatomic: 200,
            ..zone
        };
        assert!(!watermark_free_ok(
            reserved,
            Order(0),
            800,
            AllocFlags::empty()
        ));
        assert!(watermark_free_ok(
            reserved,
            Order(0),
            800,
            AllocFlags::NON_BLOCK
        ));
    }
}
