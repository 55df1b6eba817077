//! kswapd, one per node: woken when an allocation finds the node's zones
//! below their low watermark, it reclaims until a zone is above its high
//! watermark, naps briefly, and sleeps if the node stays balanced. The
//! simulation runs it in steps: the driver calls [`Mm::kswapd_run`].
//!
//! mirrors wakeup_kswapd(), kswapd(), kswapd_try_to_sleep(),
//! prepare_kswapd_sleep(), balance_pgdat(), kswapd_shrink_node() and
//! pgdat_balanced() and pgdat_watermark_boosted() of mm/vmscan.c (6.12),
//! with watermark boosting: a node whose zones' watermarks a fallback
//! boosted is woken even when balanced, reclaims the boost beyond the high
//! watermark, and drops the boosts it saw when done.
//!
//! One step of the thread's loop: a woken kswapd takes the order and
//! highest zone the wakeups recorded (resetting them for the next ones),
//! balances the node, then tries to sleep — at the lower order balancing
//! fell back to, if it did, else at the order wakeups asked for since (0:
//! balancing is one step here): if the node is balanced (or hopeless) at
//! it, it naps, else it counts
//! `kswapd_high_wmark_hit_quickly` and balances again at its next step. A
//! nap that a wakeup cuts short counts `kswapd_low_wmark_hit_quickly`; one
//! that runs out is the next step, which sleeps if the node is still
//! balanced (or hopeless) and otherwise counts a high-watermark hit and
//! balances. Not modelled: balance_pgdat()'s restart without
//! `cache_trim_mode` after a run that reclaimed nothing with it (a second
//! priority loop that may reclaim what the first, trimming the page cache
//! only, passed over; with no swap both scan the file lists alone, so the
//! restart would repeat the first loop's scan: such a run's
//! `pgscan_kswapd` is half the kernel's).

use super::error::MmError;
use super::vmscan::{ScanControl, SWAP_CLUSTER_MAX};
use super::{Mm, ReclaimEvent};
use crate::gfp::AllocFlags;
use crate::types::{NodeId, Order, ZoneType};

/// `MAX_RECLAIM_RETRIES`: balance_pgdat() runs without progress before a
/// node is left to direct reclaim.
pub(super) const MAX_RECLAIM_RETRIES: u32 = 16;

/// Where a node's kswapd is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KswapdState {
    /// Asleep until woken.
    #[default]
    Sleeping,
    /// Woken, to balance the node at its next run.
    Woken,
    /// Balanced the node and took its short nap (HZ/10): the next run
    /// decides whether it sleeps.
    Napping,
}

/// One node's kswapd.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Kswapd {
    pub(super) state: KswapdState,
    /// `pgdat->kswapd_order`: the largest order wakeups asked for since
    /// kswapd last read it.
    order: u8,
    /// `pgdat->kswapd_highest_zoneidx` (`None`: MAX_NR_ZONES, no wakeup
    /// since kswapd last read it).
    highest_zone: Option<ZoneType>,
    /// The highest zone of the last balancing (kswapd()'s local
    /// `highest_zoneidx`, which kswapd_highest_zoneidx() falls back to).
    last_highest_zone: Option<ZoneType>,
    /// The order kswapd tries to sleep at after its last balancing
    /// (`reclaim_order` of kswapd_try_to_sleep()): the lower order it fell
    /// back to, else what wakeups asked for since.
    reclaim_order: u8,
    /// `pgdat->kswapd_failures`.
    pub(super) failures: u32,
}

impl Kswapd {
    /// kswapd_highest_zoneidx(): the zone wakeups recorded, else the last
    /// balancing's (at the first, MAX_NR_ZONES - 1).
    fn highest_zone(&self) -> ZoneType {
        self.highest_zone
            .or(self.last_highest_zone)
            .unwrap_or(ZoneType::Movable)
    }
}

/// How balance_pgdat()'s passes ended.
struct BalanceEnd {
    /// The node was balanced (the kernel's `goto out`).
    balanced: bool,
    /// The order balance was last checked at.
    order: u8,
}

/// What one [`Mm::kswapd_run`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KswapdStep {
    /// Pages scanned.
    pub scanned: u64,
    /// Pages reclaimed.
    pub reclaimed: u64,
    /// The state after the step.
    pub state: KswapdState,
}

impl Mm<'_> {
    /// The state of a node's kswapd.
    pub fn kswapd_state(&self, node: NodeId) -> Option<KswapdState> {
        self.kswapd.get(node.index()).map(|kswapd| kswapd.state)
    }

    /// pgdat_balanced(): some zone of the node up to `highest_zone` is
    /// above its high watermark for `order` (a node without such zones is
    /// balanced).
    pub(super) fn pgdat_balanced(&self, node: usize, order: u8, highest_zone: ZoneType) -> bool {
        let mut eligible = self
            .zones
            .iter()
            .filter(|zone| zone.node.index() == node && zone.zone_type <= highest_zone)
            .peekable();
        if eligible.peek().is_none() {
            return true;
        }
        eligible.any(|zone| {
            let (_, watermarks) = self.zone_free(zone);
            self.zone_watermark_ok(zone, order, watermarks.high, highest_zone)
        })
    }

    /// The boost of each eligible zone of the node (zones up to
    /// `highest_zone`), by allocator zone index.
    fn zone_boosts(&self, node: usize, highest_zone: ZoneType) -> Vec<(usize, u64)> {
        self.zones
            .iter()
            .filter(|zone| zone.node.index() == node && zone.zone_type <= highest_zone)
            .map(|zone| {
                let boost = self.allocator.zone_watermark_boost(zone.index);
                (zone.index, boost.unwrap_or(0))
            })
            .collect()
    }

    /// pgdat_watermark_boosted(): some eligible zone of the node is boosted.
    fn pgdat_watermark_boosted(&self, node: usize, highest_zone: ZoneType) -> bool {
        self.zone_boosts(node, highest_zone)
            .iter()
            .any(|&(_, boost)| boost > 0)
    }

    /// wakeup_kswapd(): records the order and highest zone asked for and
    /// wakes the node's kswapd if it waits (naps or sleeps), unless the
    /// node is hopeless (too many failed runs) or balanced already. A
    /// wakeup during kswapd's nap counts `kswapd_low_wmark_hit_quickly`.
    pub(super) fn wakeup_kswapd(&mut self, node: usize, order: u8, highest_zone: ZoneType) {
        let kswapd = &mut self.kswapd[node];
        kswapd.order = kswapd.order.max(order);
        kswapd.highest_zone = Some(
            kswapd
                .highest_zone
                .map_or(highest_zone, |z| z.max(highest_zone)),
        );
        // Not on its wait queue: running, it reads the request when it
        // next balances.
        if kswapd.state == KswapdState::Woken {
            return;
        }
        if kswapd.failures >= MAX_RECLAIM_RETRIES
            || (self.pgdat_balanced(node, order, highest_zone)
                && !self.pgdat_watermark_boosted(node, highest_zone))
        {
            return;
        }
        if self.kswapd[node].state == KswapdState::Napping {
            // kswapd_try_to_sleep(): the nap was cut short.
            self.counters.add(ReclaimEvent::KswapdLowWmarkHitQuickly, 1);
        }
        self.kswapd[node].state = KswapdState::Woken;
    }

    /// prepare_kswapd_sleep(): a hopeless node is left to direct reclaim;
    /// a balanced one needs no more.
    fn prepare_kswapd_sleep(&self, node: usize, order: u8, highest_zone: ZoneType) -> bool {
        self.kswapd[node].failures >= MAX_RECLAIM_RETRIES
            || self.pgdat_balanced(node, order, highest_zone)
    }

    /// Lets a node's kswapd take one step of its loop. Woken, it balances
    /// the node (balance_pgdat()), then naps if the node is balanced or
    /// hopeless, else counts `kswapd_high_wmark_hit_quickly` and stays
    /// woken; napping, its nap ends: it sleeps if the node is still
    /// balanced (or hopeless), or else counts `kswapd_high_wmark_hit_quickly`
    /// and balances again; asleep, it does nothing. ENODEV for a node that
    /// does not exist.
    pub fn kswapd_run(&mut self, node: NodeId) -> Result<KswapdStep, MmError> {
        let at = node.index();
        let kswapd = *self.kswapd.get(at).ok_or(MmError::NoSuchNode(node))?;
        let mut step = KswapdStep::default();
        let balance = match kswapd.state {
            KswapdState::Sleeping => false,
            KswapdState::Woken => true,
            KswapdState::Napping => {
                // The nap ran out: kswapd_try_to_sleep()'s second check,
                // at the order and zone the last balancing used.
                let highest_zone = kswapd.last_highest_zone.unwrap_or(ZoneType::Movable);
                if self.prepare_kswapd_sleep(at, kswapd.reclaim_order, highest_zone) {
                    self.kswapd[at].state = KswapdState::Sleeping;
                    false
                } else {
                    self.counters
                        .add(ReclaimEvent::KswapdHighWmarkHitQuickly, 1);
                    true
                }
            }
        };
        if balance {
            // kswapd(): what the wakeups asked for, read and reset.
            let order = kswapd.order;
            let highest_zone = kswapd.highest_zone();
            let state = &mut self.kswapd[at];
            state.order = 0;
            state.highest_zone = None;
            state.last_highest_zone = Some(highest_zone);
            let (sc, end_order) = match self.balance_pgdat(at, order, highest_zone) {
                Ok(balanced) => balanced,
                Err(err) => {
                    // The request stays recorded for the next run.
                    self.kswapd[at] = kswapd;
                    return Err(err);
                }
            };
            step.scanned = sc.nr_scanned;
            step.reclaimed = sc.nr_reclaimed;
            // kswapd(): a balancing that fell back to a lower order tries
            // to sleep at it (`goto kswapd_try_sleep`); any other goes
            // round the loop and tries at the order wakeups asked for
            // since (none, as balancing here is one step).
            let sleep_order = if end_order < order {
                end_order
            } else {
                self.kswapd[at].order
            };
            self.kswapd[at].reclaim_order = sleep_order;
            // kswapd_try_to_sleep()'s first check: nap, or balance again.
            if self.prepare_kswapd_sleep(at, sleep_order, highest_zone) {
                self.kswapd[at].state = KswapdState::Napping;
            } else {
                self.counters
                    .add(ReclaimEvent::KswapdHighWmarkHitQuickly, 1);
                self.kswapd[at].state = KswapdState::Woken;
            }
        }
        step.state = self.kswapd[at].state;
        Ok(step)
    }

    /// Runs every node's kswapd once; returns the pages reclaimed.
    pub fn kswapd_run_all(&mut self) -> Result<u64, MmError> {
        let mut reclaimed = 0;
        for node in 0..self.nr_nodes() {
            reclaimed += self.kswapd_run(NodeId(node as u16))?.reclaimed;
        }
        Ok(reclaimed)
    }

    /// balance_pgdat(): from DEF_PRIORITY down, shrinks the node by the
    /// sum of its zones' high watermarks (kswapd_shrink_node()) until it
    /// is balanced; raises the priority when a pass scanned less than it
    /// aimed to reclaim or reclaimed nothing, and checks the balance at
    /// order 0 once twice the order's pages are reclaimed (compact_gap()).
    /// A run that ends unbalanced having reclaimed nothing counts a
    /// failure. Returns the run's totals and the order it ended at.
    fn balance_pgdat(
        &mut self,
        node: usize,
        order: u8,
        highest_zone: ZoneType,
    ) -> Result<(ScanControl, u8), MmError> {
        self.counters.add(ReclaimEvent::Pageoutrun, 1);
        let cpu = self.allocator.layout().nodes[node]
            .cpus
            .first()
            .copied()
            .unwrap_or(crate::CpuId(0));
        let nr_to_reclaim: u64 = self
            .zones
            .iter()
            .filter(|zone| zone.node.index() == node && zone.zone_type <= highest_zone)
            .map(|zone| self.zone_free(zone).1.high.max(SWAP_CLUSTER_MAX))
            .sum();
        let mut sc = ScanControl::new(nr_to_reclaim, true, cpu, highest_zone);
        let mut total = ScanControl::new(nr_to_reclaim, true, cpu, highest_zone);
        // The boosts seen at the start: reclaimed for, then dropped.
        let boosts = self.zone_boosts(node, highest_zone);
        let nr_boost_reclaim: u64 = boosts.iter().map(|&(_, boost)| boost).sum();
        self.allocator
            .set_reclaim_active(NodeId(node as u16), highest_zone, true);
        let end = self.balance_loop(
            node,
            order,
            highest_zone,
            nr_boost_reclaim,
            (&mut sc, &mut total),
        );
        self.allocator
            .set_reclaim_active(NodeId(node as u16), highest_zone, false);
        let end = end?;
        // A balanced node skips the failure count (`goto out`).
        if !end.balanced && total.nr_reclaimed == 0 {
            self.kswapd[node].failures += 1;
        }
        for (index, boost) in boosts {
            if boost > 0 {
                self.allocator.reduce_watermark_boost(index, boost);
            }
        }
        self.snapshot_refaults(node);
        Ok((total, end.order))
    }

    /// The passes of balance_pgdat() until the node is balanced (and the
    /// boost reclaimed) or the priority runs out.
    fn balance_loop(
        &mut self,
        node: usize,
        mut order: u8,
        highest_zone: ZoneType,
        mut nr_boost_reclaim: u64,
        (sc, total): (&mut ScanControl, &mut ScanControl),
    ) -> Result<BalanceEnd, MmError> {
        loop {
            let balanced = self.pgdat_balanced(node, order, highest_zone);
            if !balanced && nr_boost_reclaim > 0 {
                // Imbalanced: plain reclaim first, from the top priority.
                nr_boost_reclaim = 0;
                sc.priority = super::vmscan::DEF_PRIORITY;
                continue;
            }
            if nr_boost_reclaim == 0 && balanced {
                return Ok(BalanceEnd {
                    balanced: true,
                    order,
                });
            }
            sc.nr_scanned = 0;
            sc.nr_reclaimed = 0;
            self.shrink_node(node, sc)?;
            total.nr_scanned += sc.nr_scanned;
            total.nr_reclaimed += sc.nr_reclaimed;
            // kswapd_shrink_node(): high-order balance may be out of reach
            // through fragmentation; once twice the request is reclaimed,
            // balance is checked at order 0.
            if order > 0 && total.nr_reclaimed >= 2u64 << order {
                order = 0;
            }
            let mut raise_priority = sc.nr_scanned < sc.nr_to_reclaim;
            if nr_boost_reclaim > 0 {
                // Boost reclaim stops when it makes no progress, and does
                // not go below DEF_PRIORITY - 2 (to avoid writeback).
                if sc.nr_reclaimed == 0 {
                    break;
                }
                nr_boost_reclaim -= nr_boost_reclaim.min(sc.nr_reclaimed);
                if sc.priority == super::vmscan::DEF_PRIORITY - 2 {
                    raise_priority = false;
                }
            }
            if raise_priority || sc.nr_reclaimed == 0 {
                if sc.priority <= 1 {
                    break;
                }
                sc.priority -= 1;
            }
        }
        Ok(BalanceEnd {
            balanced: false,
            order,
        })
    }

    /// zone_watermark_ok_safe(): __zone_watermark_ok() with no allocation
    /// flags (the HIGHATOMIC reserve is not free to the caller, nor are its
    /// blocks for order > 0) on the zone's free pages now.
    pub(super) fn zone_watermark_ok(
        &self,
        zone: &super::ZoneInfo,
        order: u8,
        mark: u64,
        highest_zone: ZoneType,
    ) -> bool {
        let (free, _) = self.zone_free(zone);
        self.allocator.zone_watermark_ok_on(
            zone.index,
            Order(order),
            mark,
            highest_zone,
            AllocFlags::empty(),
            free,
        )
    }
}
