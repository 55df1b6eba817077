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

use super::error::MmError;
use super::vmscan::{ScanControl, SWAP_CLUSTER_MAX};
use super::{Mm, ReclaimEvent};
use crate::types::{NodeId, ZoneType};

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
    /// `pgdat->kswapd_order`.
    order: u8,
    /// `pgdat->kswapd_highest_zoneidx`.
    highest_zone: Option<ZoneType>,
    /// `pgdat->kswapd_failures`.
    pub(super) failures: u32,
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
    /// wakes the node's kswapd, unless the node is hopeless (too many
    /// failed runs) or balanced already. A wakeup during kswapd's nap
    /// counts `kswapd_low_wmark_hit_quickly`.
    pub(super) fn wakeup_kswapd(&mut self, node: usize, order: u8, highest_zone: ZoneType) {
        let kswapd = &mut self.kswapd[node];
        kswapd.order = kswapd.order.max(order);
        kswapd.highest_zone = Some(
            kswapd
                .highest_zone
                .map_or(highest_zone, |z| z.max(highest_zone)),
        );
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
            self.counters.add(ReclaimEvent::KswapdLowWmarkHitQuickly, 1);
        }
        self.kswapd[node].state = KswapdState::Woken;
    }

    /// Lets a node's kswapd run once. Woken, it balances the node
    /// (balance_pgdat()) and naps; napping, it sleeps if the node is still
    /// balanced, or else counts `kswapd_high_wmark_hit_quickly` and
    /// balances again; asleep, it does nothing. ENODEV for a node that
    /// does not exist.
    pub fn kswapd_run(&mut self, node: NodeId) -> Result<KswapdStep, MmError> {
        let at = node.index();
        let kswapd = *self.kswapd.get(at).ok_or(MmError::NoSuchNode(node))?;
        let highest_zone = kswapd.highest_zone.unwrap_or(ZoneType::Movable);
        let mut step = KswapdStep::default();
        let balance = match kswapd.state {
            KswapdState::Sleeping => false,
            KswapdState::Woken => true,
            KswapdState::Napping => {
                if self.pgdat_balanced(at, kswapd.order, highest_zone) {
                    self.kswapd[at] = Kswapd {
                        failures: kswapd.failures,
                        ..Kswapd::default()
                    };
                    false
                } else {
                    self.counters
                        .add(ReclaimEvent::KswapdHighWmarkHitQuickly, 1);
                    true
                }
            }
        };
        if balance {
            let sc = self.balance_pgdat(at, kswapd.order, highest_zone)?;
            step.scanned = sc.nr_scanned;
            step.reclaimed = sc.nr_reclaimed;
            self.kswapd[at].state = KswapdState::Napping;
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
    /// aimed to reclaim or reclaimed nothing. A run that reclaims nothing
    /// counts a failure.
    fn balance_pgdat(
        &mut self,
        node: usize,
        order: u8,
        highest_zone: ZoneType,
    ) -> Result<ScanControl, MmError> {
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
        let mut sc = ScanControl::new(nr_to_reclaim, true, cpu);
        let mut total = ScanControl::new(nr_to_reclaim, true, cpu);
        // The boosts seen at the start: reclaimed for, then dropped.
        let boosts = self.zone_boosts(node, highest_zone);
        let nr_boost_reclaim: u64 = boosts.iter().map(|&(_, boost)| boost).sum();
        self.allocator
            .set_reclaim_active(NodeId(node as u16), highest_zone, true);
        let balanced = self.balance_loop(
            node,
            order,
            highest_zone,
            nr_boost_reclaim,
            (&mut sc, &mut total),
        );
        self.allocator
            .set_reclaim_active(NodeId(node as u16), highest_zone, false);
        balanced?;
        if total.nr_reclaimed == 0 {
            self.kswapd[node].failures += 1;
        }
        for (index, boost) in boosts {
            if boost > 0 {
                self.allocator.reduce_watermark_boost(index, boost);
            }
        }
        self.kswapd[node].order = 0;
        self.kswapd[node].highest_zone = None;
        self.snapshot_refaults(node);
        Ok(total)
    }

    /// The passes of balance_pgdat() until the node is balanced (and the
    /// boost reclaimed) or the priority runs out.
    fn balance_loop(
        &mut self,
        node: usize,
        order: u8,
        highest_zone: ZoneType,
        mut nr_boost_reclaim: u64,
        (sc, total): (&mut ScanControl, &mut ScanControl),
    ) -> Result<(), MmError> {
        loop {
            let balanced = self.pgdat_balanced(node, order, highest_zone);
            if !balanced && nr_boost_reclaim > 0 {
                // Imbalanced: plain reclaim first, from the top priority.
                nr_boost_reclaim = 0;
                sc.priority = super::vmscan::DEF_PRIORITY;
                continue;
            }
            if nr_boost_reclaim == 0 && balanced {
                break;
            }
            sc.nr_scanned = 0;
            sc.nr_reclaimed = 0;
            self.shrink_node(node, sc)?;
            total.nr_scanned += sc.nr_scanned;
            total.nr_reclaimed += sc.nr_reclaimed;
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
        Ok(())
    }

    /// zone_watermark_ok_safe(): free pages above `mark` plus the reserve
    /// against `highest_zone`, and for order > 0 a free block that large.
    pub(super) fn zone_watermark_ok(
        &self,
        zone: &super::ZoneInfo,
        order: u8,
        mark: u64,
        highest_zone: ZoneType,
    ) -> bool {
        let (free, _) = self.zone_free(zone);
        let reserve = zone.lowmem_reserve[highest_zone as usize];
        let need = (1u64 << order) - 1;
        if free.saturating_sub(need) <= mark + reserve {
            return false;
        }
        if order == 0 {
            return true;
        }
        self.allocator
            .zone_snapshot(zone.index)
            .is_some_and(|snapshot| {
                snapshot.nr_free_blocks[order as usize..]
                    .iter()
                    .any(|&blocks| blocks > 0)
            })
    }
}
