//! Watermarks, lowmem reserves and per-CPU list sizes: the kernel's formulas,
//! as pure functions of page counts so that they can be tested against
//! numbers worked by hand.
//!
//! mirrors calculate_min_free_kbytes(), __setup_per_zone_wmarks(),
//! setup_per_zone_lowmem_reserve(), zone_batchsize(), zone_highsize() and
//! __zone_watermark_ok() of mm/page_alloc.c, and
//! set_recommended_min_free_kbytes() of mm/khugepaged.c (Linux 6.12: the
//! promo watermark, the small fixed min of ZONE_MOVABLE, THP's minimum).

use crate::gfp::AllocFlags;
use crate::types::{Order, ZoneType};

/// `vm.watermark_scale_factor`'s default: 10 (0.1% of the zone).
pub const WATERMARK_SCALE_FACTOR: u32 = 10;

/// `vm.lowmem_reserve_ratio`'s default, per zone type in [`ZoneType::ALL`]
/// order (DMA, DMA32, NORMAL, MOVABLE): `sysctl_lowmem_reserve_ratio[]`.
pub const LOWMEM_RESERVE_RATIO: [u32; ZoneType::COUNT] = [256, 256, 32, 0];

/// `SWAP_CLUSTER_MAX`: the smallest min watermark of ZONE_MOVABLE.
const SWAP_CLUSTER_MAX: u64 = 32;

/// The largest min watermark of ZONE_MOVABLE.
const MOVABLE_MIN_CAP: u64 = 128;

/// `MIGRATE_PCPTYPES`: the migratetypes of the per-CPU lists.
const MIGRATE_PCPTYPES: u64 = 3;

/// The min/low/high/promo watermarks of one zone, in pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watermarks {
    /// `WMARK_MIN`.
    pub min: u64,
    /// `WMARK_LOW`.
    pub low: u64,
    /// `WMARK_HIGH`.
    pub high: u64,
    /// `WMARK_PROMO`: the high watermark plus one more step, where memory
    /// tiering stops promoting (printed in /proc/zoneinfo; kswapd's
    /// promotion target, which pageframe does not model).
    pub promo: u64,
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
    (lowmem_kbytes.saturating_mul(16))
        .isqrt()
        .clamp(128, 262_144)
}

/// min_free_kbytes after memory was added or removed, when it was
/// `current`: the formula's value for `lowmem_kbytes`, unless a value
/// written to `vm.min_free_kbytes` (`user`) is at least the unclamped
/// formula, which is then kept ("user defined value is preferred").
/// mirrors calculate_min_free_kbytes() (6.12).
pub fn calculate_min_free_kbytes(lowmem_kbytes: u64, current: u64, user: Option<u64>) -> u64 {
    let new = lowmem_kbytes.saturating_mul(16).isqrt();
    match user {
        Some(user) if new <= user => current,
        _ => min_free_kbytes(lowmem_kbytes),
    }
}

/// The watermarks of a zone of `managed` pages, when the zones other than
/// ZONE_MOVABLE together manage `lowmem_pages` pages and `pages_min` is
/// min_free_kbytes in pages. ZONE_MOVABLE (`movable`) gets a small fixed min
/// (its managed pages / 1024 within [32, 128]) but the same steps; mirrors
/// __setup_per_zone_wmarks() (6.12).
pub fn zone_watermarks(
    pages_min: u64,
    managed: u64,
    lowmem_pages: u64,
    scale_factor: u32,
    movable: bool,
) -> Watermarks {
    let share = if lowmem_pages == 0 {
        0
    } else {
        (pages_min as u128 * managed as u128 / lowmem_pages as u128) as u64
    };
    let min = if movable {
        (managed / 1024).clamp(SWAP_CLUSTER_MAX, MOVABLE_MIN_CAP)
    } else {
        share
    };
    let step = (share / 4).max((managed as u128 * u128::from(scale_factor) / 10_000) as u64);
    Watermarks {
        min,
        low: min + step,
        high: min + 2 * step,
        promo: min + 3 * step,
    }
}

/// min_free_kbytes as khugepaged raises it when PMD-size THP is enabled:
/// two pageblocks per zone up to ZONE_NORMAL that has memory, plus
/// `MIGRATE_PCPTYPES^2` more, at most 5% of `lowmem_free_pages`
/// (nr_free_buffer_pages()), and never below `min_free_kbytes`. mirrors
/// set_recommended_min_free_kbytes() (6.12).
pub fn thp_min_free_kbytes(
    min_free_kbytes: u64,
    pageblock_pages: u64,
    nr_zones: u64,
    lowmem_free_pages: u64,
    page_kb: u64,
) -> u64 {
    let recommended = pageblock_pages * nr_zones * (2 + MIGRATE_PCPTYPES * MIGRATE_PCPTYPES);
    let recommended = recommended.min(lowmem_free_pages / 20) * page_kb;
    recommended.max(min_free_kbytes)
}

/// `lowmem_reserve[]` of every zone of one node: `reserves[i][j]` protects
/// zone `i` from allocations whose highest zone is `j`. `managed[i]` is the
/// managed pages of the node's zone of type i (0 when absent), `ratios[i]`
/// its `vm.lowmem_reserve_ratio` (0: no reserve). mirrors
/// setup_per_zone_lowmem_reserve().
pub fn lowmem_reserves(
    managed: &[u64; ZoneType::COUNT],
    ratios: &[u32; ZoneType::COUNT],
) -> [[u64; ZoneType::COUNT]; ZoneType::COUNT] {
    let mut reserves = [[0; ZoneType::COUNT]; ZoneType::COUNT];
    for lower in 0..ZoneType::COUNT - 1 {
        let ratio = u64::from(ratios[lower]);
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
/// the order exists) reads the zone's published `BlockOrders` word, without
/// the zone lock (`BlockOrders::has_block_at_or_above`).
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
        assert_eq!(min_free_kbytes(u64::MAX), 262_144);
    }

    /// A written value is kept while the formula does not exceed it, and
    /// the formula (clamped) wins once it does.
    #[test]
    fn a_written_min_free_kbytes_is_kept_until_the_formula_exceeds_it() {
        // 16 GiB: the formula gives 16384.
        assert_eq!(calculate_min_free_kbytes(16 << 20, 1000, None), 16384);
        assert_eq!(calculate_min_free_kbytes(16 << 20, 1000, Some(16384)), 1000);
        assert_eq!(
            calculate_min_free_kbytes(16 << 20, 1000, Some(16383)),
            16384
        );
        // The comparison is before the clamp: 64 KiB gives sqrt(64 * 16) =
        // 32, not above a written 100 (kept), but above a written 31 (the
        // clamped formula, 128, replaces it).
        assert_eq!(calculate_min_free_kbytes(64, 100, Some(100)), 100);
        assert_eq!(calculate_min_free_kbytes(64, 100, Some(31)), 128);
    }

    #[test]
    fn watermarks_of_a_4g_zone() {
        let managed = 1u64 << 20; // 4 GiB of 4 KiB pages
        let pages_min = min_free_kbytes(4 << 20) / 4; // 8192 KiB -> 2048 pages
        let marks = zone_watermarks(pages_min, managed, managed, WATERMARK_SCALE_FACTOR, false);
        assert_eq!(marks.min, 2048);
        // step = max(2048/4, 1048576*10/10000 = 1048) = 1048
        assert_eq!(marks.low, 2048 + 1048);
        assert_eq!(marks.high, 2048 + 2 * 1048);
        assert_eq!(marks.promo, 2048 + 3 * 1048);
    }

    /// The numbers of a 24 GiB x86-64 host running 6.18 with THP on
    /// madvise (DMA 3840, DMA32 772917, Normal 5394266 managed pages).
    #[test]
    fn a_host_with_thp_and_an_empty_movable_zone() {
        let managed = [3840u64, 772_917, 5_394_266];
        let lowmem: u64 = managed.iter().sum();
        assert_eq!(min_free_kbytes(lowmem * 4), 19_873);
        assert_eq!(thp_min_free_kbytes(19_873, 512, 3, lowmem, 4), 67_584);
        let pages_min = 67_584 / 4;
        let dma = zone_watermarks(pages_min, managed[0], lowmem, WATERMARK_SCALE_FACTOR, false);
        assert_eq!((dma.min, dma.low, dma.high, dma.promo), (10, 13, 16, 19));
        let normal = zone_watermarks(pages_min, managed[2], lowmem, WATERMARK_SCALE_FACTOR, false);
        assert_eq!(
            (normal.min, normal.low, normal.high, normal.promo),
            (14_769, 20_163, 25_557, 30_951)
        );
        let movable = zone_watermarks(pages_min, 0, lowmem, WATERMARK_SCALE_FACTOR, true);
        assert_eq!((movable.min, movable.low, movable.high), (32, 32, 32));
        // 5% of lowmem caps the THP minimum on a small machine.
        assert_eq!(thp_min_free_kbytes(128, 512, 2, 20_000, 4), 4_000);
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
        // No DMA zone: its row stays 0.
        let reserves = lowmem_reserves(&[0, 1 << 20, 1 << 22, 1 << 21], &LOWMEM_RESERVE_RATIO);
        assert_eq!(reserves[0], [0, 0, 0, 0]);
        assert_eq!(reserves[1][2], (1 << 22) / 256);
        assert_eq!(reserves[1][3], ((1 << 22) + (1 << 21)) / 256);
        assert_eq!(reserves[2][3], (1 << 21) / 32);
        assert_eq!(reserves[3], [0, 0, 0, 0]);
        // The host above: DMA protection (0, 3019, 24090, 24090).
        let host = lowmem_reserves(&[3840, 772_917, 5_394_266, 0], &LOWMEM_RESERVE_RATIO);
        assert_eq!(host[0], [0, 3019, 24_090, 24_090]);
        assert_eq!(host[1], [0, 0, 21_071, 21_071]);
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
