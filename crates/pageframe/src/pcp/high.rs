//! The adaptive `high` of one CPU's lists for one zone, as Linux has it
//! since 6.7 (followed here as in 6.12): `high` moves between `high_min`
//! (the low watermark split over the zone's CPUs) and `high_max` (an eighth
//! of the zone split likewise). Refills raise it by a batch while the zone
//! is above its high watermark; frees lower it while the zone is below;
//! [`PcpHigh::decay`] (the vmstat worker's decay_pcp_high()) brings it back
//! toward `high_min`. Refill and drain sizes scale with how many pages were
//! allocated or freed in a row (`alloc_factor`, `free_count`), and a run of
//! frees of orders 1..=3 without allocations drains everything
//! (`free_high`) once the free count reaches a threshold: a batch in 6.12,
//! or a batch and half of `high_min` in newer kernels
//! ([`FreeHighThreshold`], chosen per allocator).
//!
//! This is the arithmetic only, on the counts the caller passes; the lists
//! and the zone lock are the caller's. mirrors nr_pcp_high(), nr_pcp_free(),
//! nr_pcp_alloc(), the counting half of free_unref_page_commit() and the
//! sizing half of decay_pcp_high() of mm/page_alloc.c (Linux 6.12).
//!
//! `high_min` may exceed `high_max`: the low watermark a large
//! `vm.min_free_kbytes` gives can pass an eighth of the zone, and the
//! kernel stores both as computed; its clamp() then gives `high_max` to a
//! `high` at or above it and `high_min` to any other ([`kernel_clamp`]).
//!
//! Invariants: `alloc_factor <= PCP_BATCH_SCALE_MAX`;
//! `free_count < (batch << PCP_BATCH_SCALE_MAX) + 2^order` of the largest
//! order freed; `high` is between the lower and the higher of `high_min`
//! and `high_max` once it has been used (before that it is 0, as a fresh
//! kernel pageset shows it), or at most the pages listed after a decay;
//! `free_high_at` is the threshold rule's value for the current `batch` and
//! `high_min`.

use crate::alloc_policy::FreeHighThreshold;
use crate::types::Order;

/// `CONFIG_PCP_BATCH_SCALE_MAX` (default 5): refills and drains grow to at
/// most `batch << 5` pages.
pub const PCP_BATCH_SCALE_MAX: u32 = 5;

/// The kernel's clamp(): `hi` for a value at or above it, else `lo` for a
/// value at or below that, else the value. Unlike Rust's `clamp` it takes
/// `lo > hi` (then every value below `hi` gives `lo`). mirrors __clamp() of
/// include/linux/minmax.h.
#[inline(always)]
pub fn kernel_clamp(value: u32, lo: u32, hi: u32) -> u32 {
    // Below `hi`, "at or below `lo` gives `lo`, else the value" is a max:
    // one compare and select on this per-free path.
    let raised = value.max(lo);
    if value >= hi {
        hi
    } else {
        raised
    }
}

/// The zone flags the sizing reads: `ZONE_BELOW_HIGH` (an allocation saw
/// the zone below its high watermark; cleared by a drain that finds it
/// above again) and `ZONE_RECLAIM_ACTIVE` (kswapd is reclaiming it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZonePressure {
    /// `ZONE_BELOW_HIGH`.
    pub below_high: bool,
    /// `ZONE_RECLAIM_ACTIVE`.
    pub reclaim_active: bool,
}

/// The sizing state of one `struct per_cpu_pages`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PcpHigh {
    high: u32,
    high_min: u32,
    high_max: u32,
    batch: u32,
    /// Pages freed in a row, halved by each allocation (`free_count`).
    free_count: u32,
    /// Refills double while allocations come without frees (`alloc_factor`).
    alloc_factor: u8,
    /// The last free was of an order in 1..=PAGE_ALLOC_COSTLY_ORDER
    /// (`PCPF_PREV_FREE_HIGH_ORDER`).
    prev_free_high_order: bool,
    /// The CPU's share of the last-level cache holds more than three
    /// batches, so a batch may stay on the lists during high-order free
    /// runs (`PCPF_FREE_HIGH_BATCH`).
    free_high_batch: bool,
    /// The rule for the free count a high-order run needs to drain.
    free_high_threshold: FreeHighThreshold,
    /// That free count for the current `batch` and `high_min`, kept here so
    /// that a free reads it rather than computes it.
    free_high_at: u32,
}

impl PcpHigh {
    /// A boot pageset: `high` 0 and `batch` 1, so that nothing stays on the
    /// lists until the zone's real sizes are set (per_cpu_pages_init()).
    /// `free_high_batch` is the cache-size flag setup_pcp_cacheinfo() sets.
    pub fn boot(free_high_batch: bool) -> PcpHigh {
        PcpHigh {
            high: 0,
            high_min: 0,
            high_max: 0,
            batch: 1,
            free_count: 0,
            alloc_factor: 0,
            prev_free_high_order: false,
            free_high_batch,
            free_high_threshold: FreeHighThreshold::Batch,
            free_high_at: 1,
        }
    }

    /// Sets the limits (pageset_update()). The kernel moves `high` into
    /// them the next time it is used; pageframe clamps a used `high` at
    /// once, which only /proc/zoneinfo read in between could tell apart.
    pub fn update(&mut self, high_min: u32, high_max: u32, batch: u32) {
        self.high_min = high_min;
        self.high_max = high_max;
        self.batch = batch.max(1);
        self.free_high_at = self.free_high_threshold.at(self.batch, self.high_min);
        if self.high != 0 {
            self.clamped_high();
        }
    }

    /// Sets when a high-order free run drains.
    pub fn set_free_high_threshold(&mut self, threshold: FreeHighThreshold) {
        self.free_high_threshold = threshold;
        self.free_high_at = threshold.at(self.batch, self.high_min);
    }

    /// `pcp->high` as /proc/zoneinfo shows it.
    pub fn high(&self) -> u32 {
        self.high
    }

    /// `pcp->high_min`.
    pub fn high_min(&self) -> u32 {
        self.high_min
    }

    /// `pcp->high_max`.
    pub fn high_max(&self) -> u32 {
        self.high_max
    }

    /// `pcp->batch`.
    pub fn batch(&self) -> u32 {
        self.batch
    }

    /// `pcp->free_count`.
    pub fn free_count(&self) -> u32 {
        self.free_count
    }

    /// `pcp->alloc_factor`.
    pub fn alloc_factor(&self) -> u8 {
        self.alloc_factor
    }

    /// The most pages one refill of `order` can bring, in blocks.
    pub fn max_refill_blocks(&self, order: Order) -> u32 {
        let batch = if order.0 == 0 {
            self.batch << PCP_BATCH_SCALE_MAX
        } else {
            self.batch
        };
        if batch > 1 {
            (batch >> order.0).max(2)
        } else {
            batch
        }
    }

    /// `high` clamped into its limits, written back (the first lines of
    /// nr_pcp_high() and nr_pcp_alloc()).
    #[inline(always)]
    pub(crate) fn clamped_high(&mut self) -> u32 {
        self.high = kernel_clamp(self.high, self.high_min, self.high_max);
        self.high
    }

    /// Sets `high`, clamped into its limits; returns it.
    pub(crate) fn set_high(&mut self, high: u32) -> u32 {
        self.high = high;
        self.clamped_high()
    }

    /// An allocation from the lists: halve the free run (rmqueue_pcplist()).
    #[inline]
    pub fn note_alloc(&mut self) {
        self.free_count >>= 1;
    }

    /// A block of `order` was put on the lists, which now hold `count`
    /// pages: halve the refill scaling, note the order, count the free.
    /// Returns `free_high`: a run of orders 1..=3 frees without allocations
    /// that should drain everything. mirrors free_unref_page_commit().
    #[inline(always)]
    pub fn note_free(&mut self, order: Order, count: u32, costly_order: Order) -> bool {
        self.alloc_factor >>= 1;
        let batch = self.batch;
        let mut free_high = false;
        if order.0 > 0 && order <= costly_order {
            free_high = self.free_count >= self.free_high_at
                && self.prev_free_high_order
                && (!self.free_high_batch || count >= batch);
            self.prev_free_high_order = true;
        } else {
            self.prev_free_high_order = false;
        }
        if self.free_count < batch << PCP_BATCH_SCALE_MAX {
            self.free_count += 1 << order.0;
        }
        free_high
    }

    /// How many order-0 frees in a row, starting with `count` pages listed,
    /// leave `count` below the `high` in force without changing anything but
    /// the counters [`Self::note_order0_frees`] updates: none while the zone
    /// is under pressure (every free there moves `high`).
    #[inline]
    pub fn order0_room(&mut self, count: u32, zone: ZonePressure) -> u32 {
        if zone.below_high || zone.reclaim_active {
            return 0;
        }
        self.clamped_high().saturating_sub(count + 1)
    }

    /// [`Self::note_free`] for `frees` order-0 frees at once, when
    /// [`Self::order0_room`] allowed them.
    #[inline]
    pub fn note_order0_frees(&mut self, frees: u32) {
        if frees == 0 {
            return;
        }
        self.alloc_factor = self.alloc_factor.checked_shr(frees).unwrap_or(0);
        self.prev_free_high_order = false;
        let cap = self.batch << PCP_BATCH_SCALE_MAX;
        if self.free_count < cap {
            self.free_count = (self.free_count + frees).min(cap);
        }
    }

    /// The `high` a free compares `count` against, adapting `high` on the
    /// way. mirrors nr_pcp_high().
    #[inline]
    pub fn nr_pcp_high(&mut self, count: u32, zone: ZonePressure, free_high: bool) -> u32 {
        let batch = self.batch;
        let high = self.clamped_high();
        if high == 0 {
            return 0;
        }
        if free_high {
            self.high = high
                .saturating_sub(batch << PCP_BATCH_SCALE_MAX)
                .max(self.high_min);
            return 0;
        }
        if zone.reclaim_active {
            let free_count = self.free_count.max(batch);
            self.high = high.saturating_sub(free_count).max(self.high_min);
            return (batch << 2).min(self.high);
        }
        if self.high_min == self.high_max {
            return high;
        }
        if zone.below_high {
            let free_count = self.free_count.max(batch);
            self.high = high.saturating_sub(free_count).max(self.high_min);
            return count.max(self.high_min);
        }
        if count >= high {
            let need_high = self.free_count + batch;
            if self.high < need_high {
                self.high = kernel_clamp(need_high, self.high_min, self.high_max);
            }
        }
        high
    }

    /// How many pages to drain once `count` reached `high`: everything (up
    /// to `batch << 5`) on a high-order free run, else the pages freed in a
    /// row, at least a batch and leaving at least a batch. mirrors
    /// nr_pcp_free().
    #[inline]
    pub fn nr_pcp_free(&self, count: u32, high: u32, free_high: bool) -> u32 {
        let batch = self.batch;
        if free_high {
            return count.min(batch << PCP_BATCH_SCALE_MAX);
        }
        if high < batch {
            return 1;
        }
        let (min_nr_free, max_nr_free) = (batch, high - batch);
        self.free_count
            .max(min_nr_free)
            .min(max_nr_free.max(min_nr_free))
    }

    /// Blocks of `order` to take from the buddy lists into an empty list,
    /// with `count` pages on the lists; raises `high` by the refill while
    /// the zone is above its high watermark and doubles the next order-0
    /// refill while there is room. mirrors nr_pcp_alloc().
    #[inline]
    pub fn nr_pcp_alloc(&mut self, count: u32, order: Order, below_high: bool) -> u32 {
        let base_batch = self.batch;
        let mut high = self.clamped_high();
        if high < base_batch {
            return 1;
        }
        let mut batch = if order.0 == 0 {
            base_batch << self.alloc_factor
        } else {
            base_batch
        };
        if self.high_min != self.high_max && !below_high {
            high = (high + batch).min(self.high_max);
            self.high = high;
        }
        if order.0 == 0 {
            let room = high as i64 - count as i64 - base_batch as i64;
            let max_nr_alloc = room.max(base_batch as i64) as u32;
            if batch <= max_nr_alloc && (self.alloc_factor as u32) < PCP_BATCH_SCALE_MAX {
                self.alloc_factor += 1;
            }
            batch = batch.min(max_nr_alloc);
        }
        if batch > 1 {
            batch = (batch >> order.0).max(2);
        }
        batch
    }

    /// The periodic decay with `count` pages listed: lower `high` by an
    /// eighth (not below `high_min`, nor below what one drain of
    /// `batch << 5` can reach). Returns whether more decay remains; the
    /// caller then drains `count - high` pages a batch at a time. mirrors
    /// decay_pcp_high().
    pub fn decay(&mut self, count: u32) -> bool {
        if self.high <= self.high_min {
            return false;
        }
        let floor = count.saturating_sub(self.batch << PCP_BATCH_SCALE_MAX);
        self.high = floor.max(self.high - (self.high >> 3)).max(self.high_min);
        self.high > self.high_min
    }

    /// Checks the invariants in the module header, with `count` pages
    /// listed (a decay keeps `high` within one big drain of the count, which
    /// refills of high orders can take past `high_max`).
    pub fn check(&self, count: u32) -> Result<(), String> {
        if self.alloc_factor as u32 > PCP_BATCH_SCALE_MAX {
            return Err(format!("pcp alloc_factor {}", self.alloc_factor));
        }
        if self.free_high_at != self.free_high_threshold.at(self.batch, self.high_min) {
            return Err(format!(
                "pcp free_high threshold {} is not {:?}'s for batch {} and high_min {}",
                self.free_high_at, self.free_high_threshold, self.batch, self.high_min
            ));
        }
        let (lower, higher) = (
            self.high_min.min(self.high_max),
            self.high_min.max(self.high_max),
        );
        if self.high != 0 && (self.high < lower || self.high > higher.max(count)) {
            return Err(format!(
                "pcp high {} outside {}..={}",
                self.high, self.high_min, self.high_max
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COSTLY: Order = Order(3);

    fn sized(high_min: u32, high_max: u32, batch: u32) -> PcpHigh {
        let mut pcp = PcpHigh::boot(true);
        pcp.update(high_min, high_max, batch);
        pcp
    }

    /// Two order-2 frees in a row drain everything under 6.12's rule once
    /// the free count reaches a batch; the newer rule wants half of
    /// `high_min` more, which a free count capped at `batch << 5` never
    /// reaches when `high_min` is large.
    #[test]
    fn a_high_order_free_run_drains_at_the_rules_threshold() {
        let run = |threshold: FreeHighThreshold, high_min: u32| {
            let mut pcp = sized(high_min, high_min * 8, 63);
            pcp.set_free_high_threshold(threshold);
            (0..2000).any(|_| pcp.note_free(Order(2), 1000, Order(3)))
        };
        assert!(run(FreeHighThreshold::Batch, 8433));
        assert!(!run(FreeHighThreshold::BatchAndHalfHighMin, 8433));
        assert!(run(FreeHighThreshold::BatchAndHalfHighMin, 2000));
    }

    #[test]
    fn high_reads_zero_until_first_used_then_clamps() {
        let mut pcp = sized(1548, 65536, 63);
        assert_eq!(pcp.high(), 0);
        assert_eq!(pcp.nr_pcp_high(0, ZonePressure::default(), false), 1548);
        assert_eq!(pcp.high(), 1548);
        pcp.check(0).unwrap();
    }

    #[test]
    fn refills_raise_high_by_the_refill_and_double_order0_batches() {
        let mut pcp = sized(1548, 65536, 63);
        // First refill: batch 63 << 0, high 1548 + 63, room enough: factor 1.
        assert_eq!(pcp.nr_pcp_alloc(0, Order(0), false), 63);
        assert_eq!((pcp.high(), pcp.alloc_factor()), (1611, 1));
        assert_eq!(pcp.nr_pcp_alloc(0, Order(0), false), 126);
        assert_eq!((pcp.high(), pcp.alloc_factor()), (1737, 2));
        // Below the high watermark `high` stays; the batch is capped by room.
        assert_eq!(pcp.nr_pcp_alloc(1700, Order(0), true), 63);
        assert_eq!(pcp.high(), 1737);
        // A free halves the factor.
        pcp.note_free(Order(0), 1, COSTLY);
        assert_eq!(pcp.alloc_factor(), 1);
        // Higher orders take batch >> order blocks, at least 2.
        assert_eq!(pcp.nr_pcp_alloc(0, Order(9), false), 2);
        assert_eq!(pcp.nr_pcp_alloc(0, Order(3), false), 7);
        // Equal limits (a tuned high fraction) never move high.
        let mut fixed = sized(500, 500, 63);
        fixed.nr_pcp_alloc(0, Order(0), false);
        assert_eq!(fixed.high(), 500);
        pcp.check(0).unwrap();
    }

    #[test]
    fn free_count_scales_the_drain_and_allocations_halve_it() {
        let mut pcp = sized(1548, 65536, 63);
        for count in 1..=3000 {
            pcp.note_free(Order(0), count, COSTLY);
        }
        // Saturates at the first value at or past batch << 5 = 2016.
        assert_eq!(pcp.free_count(), 2016);
        assert_eq!(pcp.nr_pcp_free(3000, 3000, false), 2016);
        // Never more than leaves a batch, never less than a batch.
        assert_eq!(pcp.nr_pcp_free(1000, 1000, false), 937);
        pcp.note_alloc();
        assert_eq!(pcp.free_count(), 1008);
        for _ in 0..10 {
            pcp.note_alloc();
        }
        assert_eq!(pcp.nr_pcp_free(1548, 1548, false), 63);
        // high below batch (boot pagesets): one page.
        assert_eq!(pcp.nr_pcp_free(10, 10, false), 1);
    }

    #[test]
    fn a_full_list_raises_high_to_hold_the_freed_run() {
        let mut pcp = sized(100, 65536, 63);
        for count in 1..=500 {
            pcp.note_free(Order(0), count, COSTLY);
        }
        // count reached high: high grows to free_count + batch.
        assert_eq!(pcp.nr_pcp_high(100, ZonePressure::default(), false), 100);
        assert_eq!(pcp.high(), 500 + 63);
    }

    #[test]
    fn below_the_high_watermark_frees_lower_high_and_drain() {
        let mut pcp = sized(100, 65536, 63);
        pcp.nr_pcp_alloc(0, Order(0), false);
        pcp.update(100, 65536, 63);
        let below = ZonePressure {
            below_high: true,
            reclaim_active: false,
        };
        pcp.note_free(Order(0), 150, COSTLY);
        // high 163 - max(free_count 1, batch 63) = 100; the limit returned is
        // the count itself, so this free drains.
        assert_eq!(pcp.nr_pcp_high(150, below, false), 150);
        assert_eq!(pcp.high(), 100);
        let reclaiming = ZonePressure {
            below_high: false,
            reclaim_active: true,
        };
        assert_eq!(pcp.nr_pcp_high(150, reclaiming, false), 100);
    }

    #[test]
    fn only_a_run_of_orders_1_to_3_without_allocations_is_free_high() {
        let mut pcp = sized(1548, 65536, 63);
        // free_count must reach a batch first, and the previous free must
        // have been of a high order too.
        let mut count = 0;
        let mut seen = Vec::new();
        for _ in 0..10 {
            count += 8;
            seen.push(pcp.note_free(Order(3), count, COSTLY));
        }
        assert_eq!(seen[..8], [false; 8]);
        assert!(seen[8] && seen[9]);
        // free_high drains everything up to batch << 5 and returns high 0.
        assert_eq!(pcp.nr_pcp_high(count, ZonePressure::default(), true), 0);
        assert_eq!(pcp.nr_pcp_free(count, 0, true), count);
        // An order-0 or THP free in between breaks the run.
        assert!(!pcp.note_free(Order(0), count, COSTLY));
        assert!(!pcp.note_free(Order(3), count, COSTLY));
        assert!(!pcp.note_free(Order(9), count, COSTLY));
        // With the cache flag a list shorter than a batch keeps its pages;
        // without it, the run drains whatever the list holds.
        for (flag, expected) in [(true, false), (false, true)] {
            let mut pcp = PcpHigh::boot(flag);
            pcp.update(1548, 65536, 63);
            let mut last = false;
            for _ in 0..10 {
                last = pcp.note_free(Order(3), 8, COSTLY);
            }
            assert_eq!(last, expected, "free_high_batch {flag}");
        }
    }

    #[test]
    fn a_run_of_order0_frees_at_once_equals_one_at_a_time() {
        for (count, zone) in [
            (0, ZonePressure::default()),
            (1500, ZonePressure::default()),
            (1547, ZonePressure::default()),
            (
                10,
                ZonePressure {
                    below_high: true,
                    reclaim_active: false,
                },
            ),
        ] {
            let mut one_by_one = sized(1548, 65536, 63);
            one_by_one.nr_pcp_alloc(0, Order(0), false);
            one_by_one.nr_pcp_alloc(0, Order(0), false);
            let mut at_once = one_by_one.clone();
            let room = at_once.order0_room(count, zone);
            let expected = if zone.below_high {
                0
            } else {
                one_by_one.high() - count - 1
            };
            assert_eq!(room, expected);
            at_once.note_order0_frees(room);
            for listed in count + 1..=count + room {
                assert!(!one_by_one.note_free(Order(0), listed, COSTLY));
                assert!(one_by_one.nr_pcp_high(listed, zone, false) > listed);
            }
            assert_eq!(at_once, one_by_one);
        }
    }

    /// The kernel's clamp is Rust's while the limits are in order, and
    /// takes limits out of order without a panic.
    #[test]
    fn kernel_clamp_is_the_kernels() {
        for value in [0, 5, 10, 15, 20, 25] {
            assert_eq!(kernel_clamp(value, 10, 20), value.clamp(10, 20));
        }
        // lo 20 above hi 10: at or above hi gives hi, anything else lo.
        assert_eq!(kernel_clamp(25, 20, 10), 10);
        assert_eq!(kernel_clamp(10, 20, 10), 10);
        assert_eq!(kernel_clamp(9, 20, 10), 20);
        assert_eq!(kernel_clamp(0, 20, 10), 20);
    }

    #[test]
    fn decay_steps_an_eighth_toward_high_min() {
        let mut pcp = sized(1000, 65536, 63);
        pcp.nr_pcp_alloc(0, Order(0), false);
        pcp.update(1000, 65536, 63);
        // Raise high by refills far above high_min.
        for _ in 0..40 {
            pcp.nr_pcp_alloc(0, Order(0), false);
        }
        let start = pcp.high();
        assert!(start > 8000, "{start}");
        assert!(pcp.decay(0));
        assert_eq!(pcp.high(), start - start / 8);
        // A full list keeps high within one big drain of its count.
        let high = pcp.high();
        pcp.decay(high + 5000);
        assert_eq!(pcp.high(), high + 5000 - 2016);
        for _ in 0..100 {
            pcp.decay(0);
        }
        assert_eq!(pcp.high(), 1000);
        assert!(!pcp.decay(0));
        pcp.check(0).unwrap();
    }
}
