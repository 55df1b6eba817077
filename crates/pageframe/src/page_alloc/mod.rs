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
mod memmap_init;
mod numa_events;
mod resize;
mod setup;
mod shuffle;
mod snapshot;
mod sysctl;
mod sysctl_text;
mod watermark;
mod zone_flags;
mod zonelist;

pub(crate) use alloc::AllocStage;
pub(crate) use boot::nofragment;
pub use boot::ArenaOptions;
pub(crate) use contents::{check_span, page_pieces};
pub use error::{AccessError, AllocError, BootError, CpuError, FreeError, SetupError};
pub use events::VmEvent;
pub use handle::{CpuHandle, Page, BULK_LIST_RUN};
pub use hotplug::HotplugError;
pub use shuffle::{ShuffleStats, SHUFFLE_RETRY};
pub use snapshot::{PcpSnapshot, ZoneSnapshot, PAGETYPEINFO_CAP};
pub use sysctl::VmSysctl;

use crate::alloc_policy::{FallbackOrder, FreeHighThreshold, PcpSizing};
use crate::backing::Backing;
use crate::frames::{Frames, MetadataCost};
use crate::freetype::MigrateType;
use crate::machine::MachineLayout;
use crate::pcp::PerCpuPages;
use crate::sync::{Local, LockFamily, Shared, StatCounter};
use crate::types::{NodeId, Pfn, ZoneIdx, ZoneType};
use crate::zone::watermark::Watermarks;
use crate::zone::Zone;
use events::ZoneCounters;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use zone_flags::ZoneFlags;
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
    /// `vm.watermark_scale_factor`: the gap between a zone's watermarks, in
    /// ten-thousandths of its managed pages (at least a quarter of its min
    /// watermark); from 1 to 3000.
    pub watermark_scale_factor: u32,
    /// `vm.lowmem_reserve_ratio`, per zone type (DMA, DMA32, NORMAL,
    /// MOVABLE): a zone keeps 1/ratio of the managed pages of the zones
    /// above it in its node from their allocations; 0 keeps none.
    pub lowmem_reserve_ratio: [u32; ZoneType::COUNT],
    /// The fallback table of the migratetypes (the kernel's `fallbacks[]`
    /// by default).
    pub fallback_order: FallbackOrder,
    /// Per-CPU list sizing (`vm.percpu_pagelist_high_fraction`, batch).
    pub pcp: PcpSizing,
    /// When a run of high-order frees drains the per-CPU lists (Linux
    /// 6.12's rule by default).
    pub free_high: FreeHighThreshold,
}

impl AllocOptions {
    /// The kernel's behaviour: every default.
    pub const KERNEL: AllocOptions = AllocOptions {
        vm_events: true,
        free_checks: true,
        unmapped_movable: false,
        watermark_boost_factor: crate::zone::boost::WATERMARK_BOOST_FACTOR,
        watermark_scale_factor: crate::zone::watermark::WATERMARK_SCALE_FACTOR,
        lowmem_reserve_ratio: crate::zone::watermark::LOWMEM_RESERVE_RATIO,
        fallback_order: FallbackOrder::Kernel,
        pcp: PcpSizing::KERNEL,
        free_high: FreeHighThreshold::Batch,
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
    /// The layout's present pages less its reserved ones
    /// (`zone_managed_pages()`): what the zone's sizes are computed from.
    pub(crate) managed_pages: u64,
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
    /// The orders with a listed block ([`crate::zone::BlockOrders`]),
    /// published likewise: the high-order half of the watermark check.
    pub(crate) block_orders: StatCounter,
    /// Zone lock acquisitions and how many had to wait, written under the lock.
    pub(crate) lock_acquired: StatCounter,
    pub(crate) lock_contended: StatCounter,
    /// `ZONE_BELOW_HIGH` and `ZONE_RECLAIM_ACTIVE`.
    pub(crate) flags: ZoneFlags,
}

/// One CPU: its node and its state for each zone.
pub(crate) struct CpuSlot<L: LockFamily> {
    pub(crate) node: NodeId,
    /// By zone index.
    pub(crate) zones: Box<[CpuZone<L>]>,
    pub(crate) registered: AtomicBool,
}

/// A zone as a fast path on one CPU uses it: its index, its slot and the
/// CPU's state for it ([`PageAllocator::zone_on_cpu`]).
pub(crate) struct ZoneOnCpu<'a, L: LockFamily> {
    pub(crate) index: ZoneIdx,
    pub(crate) slot: &'a ZoneSlot<L>,
    pub(crate) cpu: &'a CpuZone<L>,
}

// Not derived: a derive would ask `L: Copy`, and only references are copied.
impl<L: LockFamily> Clone for ZoneOnCpu<'_, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L: LockFamily> Copy for ZoneOnCpu<'_, L> {}

/// One CPU's state for one zone: its per-CPU lists and its event counters
/// (the kernel's `zone->per_cpu_pageset` and `per_cpu_zonestats` plus the
/// CPU's vm events of the zone), side by side so that an allocation or a
/// free finds both with one index.
pub(crate) struct CpuZone<L: LockFamily> {
    pub(crate) pcp: L::Lock<PerCpuPages>,
    pub(crate) events: ZoneCounters,
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
    /// The value last written to `vm.min_free_kbytes` (the kernel's
    /// `user_min_free_kbytes`, -1 there until a write): a resize keeps
    /// min_free_kbytes while the formula does not exceed it.
    pub(crate) user_min_free_kbytes: Option<u64>,
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

    /// `min_free_kbytes`: as computed at boot or after a resize, or as
    /// written to `vm.min_free_kbytes`.
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

    /// Managed pages of the whole machine (`totalram_pages()`).
    pub fn managed_pages(&self) -> u64 {
        self.zones.iter().map(|zone| zone.managed_pages).sum()
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
            slot.node == node && slot.zone_type <= highest_zone && slot.managed_pages > 0
        }) {
            slot.flags.set_reclaim_active(active);
        }
    }

    /// A zone's slot and `cpu_slot`'s state for it, without bounds checks:
    /// the fast paths' per-zone lookups, which in the kernel are pointers
    /// (page_zone(), this_cpu_ptr(zone->per_cpu_pageset)). Checked
    /// indexing there cost about 17 instructions per order-0 pair.
    ///
    /// # Safety
    ///
    /// `zone` must have been read from one of this allocator's zonelists or
    /// pageblock words. Those hold only indices of the machine's zones:
    /// boot and hotplug store no other (hotplug adds memory to existing
    /// zones), the zone table never changes length after boot, and each
    /// CPU's table is built with the same length. `check_invariants`
    /// verifies all three.
    #[inline(always)]
    pub(crate) unsafe fn zone_on_cpu<'a>(
        &'a self,
        cpu_slot: &'a CpuSlot<L>,
        zone: ZoneIdx,
    ) -> ZoneOnCpu<'a, L> {
        let at = zone.index();
        debug_assert!(at < self.zones.len() && at < cpu_slot.zones.len());
        // SAFETY: by the caller's contract `at` names one of the machine's
        // zones, so it is below the length of the zone table and of every
        // CPU's table.
        let (slot, cpu) = unsafe {
            (
                self.zones.get_unchecked(at),
                cpu_slot.zones.get_unchecked(at),
            )
        };
        ZoneOnCpu {
            index: zone,
            slot,
            cpu,
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
        slot.block_orders.set(buddy.block_orders().0);
    }
}
