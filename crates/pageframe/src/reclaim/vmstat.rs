//! The reclaim layer's `/proc/vmstat` counters: the events of
//! mm/vmscan.c and the writeback counters, named as the kernel's
//! `vmstat_text[]` names them, and the node LRU and refault counters.
//!
//! Owns: one u64 per [`ReclaimEvent`]. Counters only grow.

use crate::reclaim::lru::LruList;
use crate::reclaim::{Mm, WorkingsetStats};
use crate::types::ZoneType;

/// A reclaim or writeback event counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReclaimEvent {
    /// KiB read from storage into the page cache.
    Pgpgin,
    /// KiB written back from the page cache.
    Pgpgout,
    /// Pages moved to an active list.
    Pgactivate,
    /// Pages moved from an active to an inactive list.
    Pgdeactivate,
    /// Pages rotated to the inactive tail when their writeback ended.
    Pgrotated,
    /// Pages scanned on active lists (`shrink_active_list()`).
    Pgrefill,
    /// Inactive pages scanned by kswapd.
    PgscanKswapd,
    /// Inactive pages scanned by direct reclaim (global reclaim only: a
    /// memory cgroup's reclaim is not counted here).
    PgscanDirect,
    /// Pages reclaimed by kswapd.
    PgstealKswapd,
    /// Pages reclaimed by direct reclaim (global reclaim only).
    PgstealDirect,
    /// Inactive anon pages scanned.
    PgscanAnon,
    /// Inactive file pages scanned.
    PgscanFile,
    /// Anon pages reclaimed.
    PgstealAnon,
    /// File pages reclaimed.
    PgstealFile,
    /// Direct reclaims for allocations whose highest zone is DMA.
    AllocstallDma,
    /// Direct reclaims for allocations whose highest zone is DMA32.
    AllocstallDma32,
    /// Direct reclaims for allocations whose highest zone is Normal.
    AllocstallNormal,
    /// Direct reclaims for allocations whose highest zone is Movable.
    AllocstallMovable,
    /// LRU pages of DMA that reclaim for lower zones passed over.
    PgskipDma,
    /// LRU pages of DMA32 that reclaim for lower zones passed over.
    PgskipDma32,
    /// LRU pages of Normal that reclaim for lower zones passed over.
    PgskipNormal,
    /// LRU pages of Movable that reclaim for lower zones passed over.
    PgskipMovable,
    /// kswapd was woken again during its short nap (`KSWAPD_LOW_WMARK_HIT_QUICKLY`).
    KswapdLowWmarkHitQuickly,
    /// After its short nap kswapd found the node unbalanced (`KSWAPD_HIGH_WMARK_HIT_QUICKLY`).
    KswapdHighWmarkHitQuickly,
    /// `balance_pgdat()` runs.
    Pageoutrun,
    /// Pages dirtied.
    NrDirtied,
    /// Pages written back.
    NrWritten,
    /// Dirty pages reclaim met and marked for immediate reclaim after writeback.
    NrVmscanImmediateReclaim,
    /// Shadow-only page cache tree nodes the shrinker freed.
    WorkingsetNodereclaim,
    /// Objects the slab shrinkers scanned (the shadow nodes' here).
    SlabsScanned,
}

impl ReclaimEvent {
    /// Number of counters.
    pub const COUNT: usize = 30;

    /// Every counter, in `/proc/vmstat` order.
    pub const ALL: [ReclaimEvent; ReclaimEvent::COUNT] = [
        ReclaimEvent::WorkingsetNodereclaim,
        ReclaimEvent::NrVmscanImmediateReclaim,
        ReclaimEvent::NrDirtied,
        ReclaimEvent::NrWritten,
        ReclaimEvent::Pgpgin,
        ReclaimEvent::Pgpgout,
        ReclaimEvent::AllocstallDma,
        ReclaimEvent::AllocstallDma32,
        ReclaimEvent::AllocstallNormal,
        ReclaimEvent::AllocstallMovable,
        ReclaimEvent::PgskipDma,
        ReclaimEvent::PgskipDma32,
        ReclaimEvent::PgskipNormal,
        ReclaimEvent::PgskipMovable,
        ReclaimEvent::Pgactivate,
        ReclaimEvent::Pgdeactivate,
        ReclaimEvent::Pgrefill,
        ReclaimEvent::PgstealKswapd,
        ReclaimEvent::PgstealDirect,
        ReclaimEvent::PgscanKswapd,
        ReclaimEvent::PgscanDirect,
        ReclaimEvent::PgscanAnon,
        ReclaimEvent::PgscanFile,
        ReclaimEvent::PgstealAnon,
        ReclaimEvent::PgstealFile,
        ReclaimEvent::SlabsScanned,
        ReclaimEvent::KswapdLowWmarkHitQuickly,
        ReclaimEvent::KswapdHighWmarkHitQuickly,
        ReclaimEvent::Pageoutrun,
        ReclaimEvent::Pgrotated,
    ];

    /// The `/proc/vmstat` name.
    pub fn name(self) -> &'static str {
        match self {
            ReclaimEvent::Pgpgin => "pgpgin",
            ReclaimEvent::Pgpgout => "pgpgout",
            ReclaimEvent::Pgactivate => "pgactivate",
            ReclaimEvent::Pgdeactivate => "pgdeactivate",
            ReclaimEvent::Pgrotated => "pgrotated",
            ReclaimEvent::Pgrefill => "pgrefill",
            ReclaimEvent::PgscanKswapd => "pgscan_kswapd",
            ReclaimEvent::PgscanDirect => "pgscan_direct",
            ReclaimEvent::PgstealKswapd => "pgsteal_kswapd",
            ReclaimEvent::PgstealDirect => "pgsteal_direct",
            ReclaimEvent::PgscanAnon => "pgscan_anon",
            ReclaimEvent::PgscanFile => "pgscan_file",
            ReclaimEvent::PgstealAnon => "pgsteal_anon",
            ReclaimEvent::PgstealFile => "pgsteal_file",
            ReclaimEvent::AllocstallDma => "allocstall_dma",
            ReclaimEvent::AllocstallDma32 => "allocstall_dma32",
            ReclaimEvent::AllocstallNormal => "allocstall_normal",
            ReclaimEvent::AllocstallMovable => "allocstall_movable",
            ReclaimEvent::PgskipDma => "pgskip_dma",
            ReclaimEvent::PgskipDma32 => "pgskip_dma32",
            ReclaimEvent::PgskipNormal => "pgskip_normal",
            ReclaimEvent::PgskipMovable => "pgskip_movable",
            ReclaimEvent::KswapdLowWmarkHitQuickly => "kswapd_low_wmark_hit_quickly",
            ReclaimEvent::KswapdHighWmarkHitQuickly => "kswapd_high_wmark_hit_quickly",
            ReclaimEvent::Pageoutrun => "pageoutrun",
            ReclaimEvent::NrDirtied => "nr_dirtied",
            ReclaimEvent::NrWritten => "nr_written",
            ReclaimEvent::NrVmscanImmediateReclaim => "nr_vmscan_immediate_reclaim",
            ReclaimEvent::WorkingsetNodereclaim => "workingset_nodereclaim",
            ReclaimEvent::SlabsScanned => "slabs_scanned",
        }
    }

    /// The allocstall counter of an allocation whose highest zone is `zone`
    /// (`__count_zid_vm_events(ALLOCSTALL, reclaim_idx, 1)`).
    pub fn allocstall(zone: ZoneType) -> ReclaimEvent {
        match zone {
            ZoneType::Dma => ReclaimEvent::AllocstallDma,
            ZoneType::Dma32 => ReclaimEvent::AllocstallDma32,
            ZoneType::Normal => ReclaimEvent::AllocstallNormal,
            ZoneType::Movable => ReclaimEvent::AllocstallMovable,
        }
    }

    /// The counter of pages of `zone` that isolation passed over
    /// (`__count_zid_vm_events(PGSCAN_SKIP, zid, ...)`).
    pub fn pgskip(zone: ZoneType) -> ReclaimEvent {
        match zone {
            ZoneType::Dma => ReclaimEvent::PgskipDma,
            ZoneType::Dma32 => ReclaimEvent::PgskipDma32,
            ZoneType::Normal => ReclaimEvent::PgskipNormal,
            ZoneType::Movable => ReclaimEvent::PgskipMovable,
        }
    }
}

/// The counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReclaimCounters([u64; ReclaimEvent::COUNT]);

impl ReclaimCounters {
    /// A counter's value.
    pub fn get(&self, event: ReclaimEvent) -> u64 {
        self.0[event as usize]
    }

    pub(super) fn add(&mut self, event: ReclaimEvent, count: u64) {
        self.0[event as usize] += count;
    }
}

impl Mm<'_> {
    /// The reclaim layer's lines of `/proc/vmstat`: the node LRU and page
    /// cache counters summed over the nodes, then the events, one
    /// `name value` line each as vmstat_show() prints them.
    pub fn vmstat(&self) -> String {
        let mut out = String::new();
        for list in LruList::ALL {
            let pages: u64 = (0..self.nr_nodes())
                .map(|node| self.lru.count(node, list))
                .sum();
            out.push_str(&format!("{} {pages}\n", list.stat_name()));
        }
        let stats: Vec<_> = (0..self.nr_nodes())
            .map(|node| self.workingset(crate::NodeId(node as u16)))
            .collect();
        let sum = |field: fn(&WorkingsetStats) -> u64| stats.iter().map(field).sum::<u64>();
        out.push_str(&format!("workingset_nodes {}\n", self.shadow_nodes.count()));
        for (name, value) in [
            ("workingset_refault_file", sum(|stats| stats.refault_file)),
            ("workingset_activate_file", sum(|stats| stats.activate_file)),
            ("workingset_restore_file", sum(|stats| stats.restore_file)),
            (
                "workingset_nodereclaim",
                self.counters.get(ReclaimEvent::WorkingsetNodereclaim),
            ),
        ] {
            out.push_str(&format!("{name} {value}\n"));
        }
        out.push_str(&format!("nr_anon_pages {}\n", self.nr_anon_pages()));
        out.push_str(&format!("nr_file_pages {}\n", self.nr_file_pages()));
        out.push_str(&format!("nr_dirty {}\n", self.nr_dirty()));
        out.push_str("nr_writeback 0\n");
        // The events (the node counter went with the workingset lines).
        let events = ReclaimEvent::ALL
            .into_iter()
            .filter(|&event| event != ReclaimEvent::WorkingsetNodereclaim);
        for event in events {
            out.push_str(&format!("{} {}\n", event.name(), self.counters.get(event)));
        }
        out
    }
}
