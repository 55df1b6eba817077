//! The page allocator facade: `alloc_pages`, `free_pages`, `alloc_pages_bulk`,
//! `free_pages_bulk` (a slice, or the page array `alloc_pages_bulk` fills),
//! `drain_pcp`, over every zone of every node.
//!
//! [`PageAllocator`] owns the frames (memmap, pageblock flags), one
//! [`Zone`] per (node, zone type) behind a zone lock, and per CPU one
//! [`PerCpuPages`] per zone behind a pcp lock. With [`Local`] locks it is a
//! single-threaded simulator; with [`Shared`] locks ([`SharedPageAllocator`])
//! real threads use it through [`CpuHandle`]s, one per CPU id.
//!
//! Lock order: pcp lock, then zone lock. Per-CPU event counters are written
//! only by the owner of the CPU (the one handle registered for it).
//!
//! Invariant (per zone, checked by [`PageAllocator::check_invariants`]):
//! `free + isolated + pcp + allocated == managed`.

mod alloc;
mod boot;
mod bulk;
mod bulk_free;
mod contents;
mod direct_map;
mod error;
mod events;
mod free;
mod handle;
mod hotplug;
mod invariants;
mod resize;
mod shuffle;
mod snapshot;
mod zonelist;

pub(crate) use boot::nofragment;
pub use boot::ArenaOptions;
pub(crate) use contents::{check_span, page_pieces};
pub use error::{AccessError, AllocError, BootError, CpuError, FreeError};
pub use events::VmEvent;
pub use handle::{CpuHandle, Page, BULK_LIST_RUN};
pub use hotplug::HotplugError;
pub use shuffle::{ShuffleStats, SHUFFLE_RETRY};
pub use snapshot::{PcpSnapshot, ZoneSnapshot, PAGETYPEINFO_CAP};

use crate::alloc_policy::{FallbackOrder, PcpSizing};
use crate::backing::Backing;
use crate::frames::{Frames, MetadataCost};
use crate::freetype::MigrateType;
use crate::machine::MachineLayout;
use crate::pcp::{PerCpuPages, ZonePressure};
use crate::sync::{Local, LockFamily, Shared, StatCounter};
use crate::types::{NodeId, Pfn, ZoneIdx, ZoneType};
use crate::zone::watermark::Watermarks;
use crate::zone::Zone;
use events::CpuEvents;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use zonelist::Zonelists;

/// A single-threaded page allocator (a simulated machine).
pub type LocalPageAllocator = PageAllocator<Local>;
/// A page allocator shared by threads: `Send + Sync`.
pub type SharedPageAllocator = PageAllocator<Shared>;

/// Run-time options of the allocator. Defaults are the kernel's behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocOptions {
    /// Count vm events (pgalloc, pgfree, numa_*) on every allocation and free.
    /// bulk-page-allocator.txt discusses skipping them on the bulk path.
    pub vm_events: bool,
    /// Check each free for double frees and wrong orders. Off trusts the
    /// caller completely (as a kernel without CONFIG_DEBUG_VM trusts its
    /// callers): a bad free then corrupts the allocator.
    pub free_checks: bool,
    /// Accept `__GFP_UNMAPPED | __GFP_MOVABLE`, served from (MOVABLE,
    /// UNMAPPED) pageblocks without per-CPU lists. The series reserves that
    /// freetype for later ("eventually allowing reclaim and compaction for
    /// the unmapped pages"); off, such requests are EINVAL-like errors.
    pub unmapped_movable: bool,
    /// `vm.watermark_boost_factor`: a fallback into a pageblock of another
    /// type boosts the zone's watermarks by a pageblock, up to this many
    /// ten-thousandths of the high watermark, until kswapd reclaims the
    /// boost back (`zone::boost`). 0 turns boosting off.
    pub watermark_boost_factor: u64,
    /// The fallback table of the migratetypes (the kernel's `fallbacks[]`
    /// by default).
    pub fallback_order: FallbackOrder,
    /// Per-CPU list sizing (`vm.percpu_pagelist_high_fraction`, batch).
    pub pcp: PcpSizing,
}

impl AllocOptions {
    /// The kernel's behaviour: every default.
    pub const KERNEL: AllocOptions = AllocOptions {
        vm_events: true,
        free_checks: true,
        unmapped_movable: false,
        watermark_boost_factor: crate::zone::boost::WATERMARK_BOOST_FACTOR,
        fallback_order: FallbackOrder::Kernel,
        pcp: PcpSizing::KERNEL,
    };
}

impl Default for AllocOptions {
    fn default() -> AllocOptions {
        AllocOptions::KERNEL
    }
}

/// Static facts of a zone and what it publishes for lockless readers.
pub(crate) struct ZoneSlot<L: LockFamily> {
    pub(crate) node: NodeId,
    pub(crate) zone_type: ZoneType,
    pub(crate) present_pages: u64,
    pub(crate) spanned_pages: u64,
    pub(crate) start_pfn: u64,
    pub(crate) watermarks: Watermarks,
    pub(crate) lowmem_reserve: [u64; ZoneType::COUNT],
    /// Allocations preferring this zone start with ALLOC_NOFRAGMENT.
    pub(crate) nofragment: bool,
    pub(crate) buddy: L::Lock<Zone>,
    /// `NR_FREE_PAGES`, published after each zone-locked operation.
    pub(crate) free_pages: StatCounter,
    /// `watermark_boost`, published likewise: added to every watermark.
    pub(crate) watermark_boost: StatCounter,
    /// `nr_reserved_highatomic`, published likewise.
    pub(crate) reserved_highatomic: StatCounter,
    /// Zone lock acquisitions and how many had to wait, written under the lock.
    pub(crate) lock_acquired: StatCounter,
    pub(crate) lock_contended: StatCounter,
    /// `ZONE_BELOW_HIGH`: an allocation found the zone below its high
    /// watermark; per-CPU frees then shrink `high`. Cleared by a pcp drain
    /// that finds the zone above it again.
    pub(crate) below_high: AtomicBool,
    /// `ZONE_RECLAIM_ACTIVE`: kswapd is balancing the zone's node.
    pub(crate) reclaim_active: AtomicBool,
}

impl<L: LockFamily> ZoneSlot<L> {
    /// The zone flags the per-CPU sizing reads.
    #[inline]
    pub(crate) fn pressure(&self) -> ZonePressure {
        ZonePressure {
            below_high: self.below_high.load(Ordering::Relaxed),
            reclaim_active: self.reclaim_active.load(Ordering::Relaxed),
        }
    }
}

/// One CPU: its node, its per-CPU lists (one per zone) and its counters.
pub(crate) struct CpuSlot<L: LockFamily> {
    pub(crate) node: NodeId,
    pub(crate) pcp: Box<[L::Lock<PerCpuPages>]>,
    pub(crate) events: CpuEvents,
    pub(crate) registered: AtomicBool,
}

/// The page allocator of one machine.
pub struct PageAllocator<L: LockFamily = Local> {
    pub(crate) layout: MachineLayout,
    pub(crate) frames: Frames,
    pub(crate) zones: Box<[ZoneSlot<L>]>,
    pub(crate) cpus: Box<[CpuSlot<L>]>,
    pub(crate) zonelists: Box<[Zonelists]>,
    pub(crate) options: AllocOptions,
    pub(crate) min_free_kbytes: u64,
    /// The machine's one seeded RNG (shuffle passes; the per-zone pick-tail
    /// bits are seeded from it). Used only with `&mut self`.
    pub(crate) rng: crate::rng::MachineRng,
    /// The seed the machine booted with.
    pub(crate) seed: u64,
    /// What stands behind the frames: the direct map, its protection
    /// changes and TLB flushes, the mermap.
    pub(crate) backing: Arc<dyn Backing>,
    /// Pageblocks currently unmapped, over all zones: lets mapped requests
    /// skip the reverse conversion without a lock when there are none.
    pub(crate) unmapped_pageblocks: AtomicU64,
}

/// Builds every node's zonelists (boot and memory hotplug).
pub(crate) fn build_zonelists<L: LockFamily>(
    layout: &MachineLayout,
    zones: &[ZoneSlot<L>],
) -> Box<[Zonelists]> {
    Zonelists::build_all(layout, zones)
}

impl<L: LockFamily> PageAllocator<L> {
    /// The machine's layout.
    pub fn layout(&self) -> &MachineLayout {
        &self.layout
    }

    /// The run-time options.
    pub fn options(&self) -> AllocOptions {
        self.options
    }

    /// The seed of the machine's RNG.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// `min_free_kbytes` as computed at boot.
    pub fn min_free_kbytes(&self) -> u64 {
        self.min_free_kbytes
    }

    /// Number of zones (over all nodes, populated or not).
    pub fn nr_zones(&self) -> usize {
        self.zones.len()
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Number of nodes.
    pub fn nr_nodes(&self) -> usize {
        self.layout.nodes.len()
    }

    /// The backing: the direct map, its protection changes, the mermap and
    /// their counters.
    pub fn backing(&self) -> &dyn Backing {
        &*self.backing
    }

    /// Pageblocks currently removed from the direct map.
    pub fn nr_unmapped_pageblocks(&self) -> u64 {
        self.unmapped_pageblocks
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The migratetype of the pageblock holding `pfn`
    /// (`get_pfnblock_migratetype()`); `None` past the machine's end.
    pub fn pageblock_migratetype(&self, pfn: Pfn) -> Option<MigrateType> {
        (pfn < self.layout.end_pfn).then(|| self.frames.blocks.migratetype(pfn))
    }

    /// What the per-page metadata (memmap and pageblock flags) costs.
    pub fn metadata_cost(&self) -> MetadataCost {
        self.frames.metadata_cost()
    }

    /// Free pages of the whole machine, pcp lists excluded.
    pub fn nr_free_pages(&self) -> u64 {
        self.zones.iter().map(|zone| zone.free_pages.get()).sum()
    }

    /// Every zone's index, in table order.
    pub(crate) fn zone_ids(&self) -> impl Iterator<Item = ZoneIdx> {
        // At most MAX_NUMNODES x ZoneType::COUNT zones: the index fits.
        (0..self.zones.len() as u16).map(ZoneIdx)
    }

    /// Marks the populated zones of `node` up to `highest_zone` as being
    /// reclaimed by kswapd (`ZONE_RECLAIM_ACTIVE`), or no longer: while set,
    /// per-CPU frees keep the lists short. mirrors set_reclaim_active() and
    /// clear_reclaim_active().
    pub(crate) fn set_reclaim_active(&self, node: NodeId, highest_zone: ZoneType, active: bool) {
        for slot in self.zones.iter().filter(|slot| {
            slot.node == node && slot.zone_type <= highest_zone && slot.present_pages > 0
        }) {
            slot.reclaim_active.store(active, Ordering::Relaxed);
        }
    }

    /// Locks a zone, counting the acquisition and any contention.
    #[inline]
    pub(crate) fn lock_zone(&self, zone: ZoneIdx) -> L::Guard<'_, Zone> {
        let slot = &self.zones[zone.index()];
        let (guard, contended) = L::lock(&slot.buddy);
        slot.lock_acquired.add(1);
        if contended {
            slot.lock_contended.add(1);
        }
        guard
    }

    /// Publishes a zone's lockless-readable state; call with the lock held.
    #[inline]
    pub(crate) fn publish(&self, zone: ZoneIdx, buddy: &Zone) {
        let slot = &self.zones[zone.index()];
        slot.free_pages.set(buddy.nr_free());
        slot.reserved_highatomic.set(buddy.nr_reserved_highatomic());
        slot.watermark_boost.set(buddy.watermark_boost());
    }
}
