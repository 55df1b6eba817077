//! Booting a machine: pageblocks' zones and types (memmap_init.rs), zones
//! from the layout, watermarks, lowmem reserves, per-CPU list sizes, then
//! every present page outside the reservations freed into the buddy lists.
//! mirrors free_area_init(), init_per_zone_wmark_min(),
//! zone_set_pageset_high_and_batch(), build_all_zonelists() and
//! memblock_free_all()/__free_pages_memory().

use super::error::BootError;
use super::events::ZoneCounters;
use super::zone_flags::ZoneFlags;
use super::{AllocOptions, CpuSlot, CpuZone, PageAllocator, ZoneSlot};
use crate::alloc_policy::PcpSizing;
use crate::backing::{ArenaBacking, ArenaConfig, Backing, MermapConfig, SimBacking, SimCosts};
use crate::frames::Frames;
use crate::machine::DescError;
use crate::machine::{MachineDesc, MachineLayout};
use crate::memmap::FrameIdx;
use crate::pcp::PerCpuPages;
use crate::sync::{LockFamily, StatCounter};
use crate::types::{Order, Pfn, ZoneIdx, ZoneType};
use crate::zone::watermark::Watermarks;
use crate::zone::Zone;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

/// How to build a real arena for [`PageAllocator::boot_arena`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ArenaOptions {
    /// Fault every page in at creation (`MAP_POPULATE`), so that timing runs
    /// do not measure the host's first-touch faults.
    pub populate: bool,
    /// The mermap windows.
    pub mermap: MermapConfig,
}

impl<L: LockFamily> PageAllocator<L> {
    /// Boots the machine a description describes, with default options.
    pub fn boot(desc: &MachineDesc) -> Result<PageAllocator<L>, DescError> {
        PageAllocator::boot_with(desc, AllocOptions::default())
    }

    /// Boots with explicit options.
    pub fn boot_with(
        desc: &MachineDesc,
        options: AllocOptions,
    ) -> Result<PageAllocator<L>, DescError> {
        let layout = desc.layout()?;
        PageAllocator::boot_layout(layout, options)
    }

    /// Boots with explicit options and the seed of the machine's RNG (every
    /// random choice of the allocator, e.g. shuffling, derives from it).
    pub fn boot_seeded(
        desc: &MachineDesc,
        options: AllocOptions,
        seed: u64,
    ) -> Result<PageAllocator<L>, DescError> {
        let layout = desc.layout()?;
        PageAllocator::boot_layout_seeded(layout, options, seed)
    }

    /// Boots a validated layout with seed 0.
    pub fn boot_layout(
        layout: MachineLayout,
        options: AllocOptions,
    ) -> Result<PageAllocator<L>, DescError> {
        PageAllocator::boot_layout_seeded(layout, options, 0)
    }

    /// Boots a validated layout over a simulated backing (page contents in a
    /// sparse store; direct-map changes, flushes and zeroing counted and
    /// charged).
    pub fn boot_layout_seeded(
        layout: MachineLayout,
        options: AllocOptions,
        seed: u64,
    ) -> Result<PageAllocator<L>, DescError> {
        let backing = SimBacking::new(
            layout.end_pfn.0,
            1usize << layout.page_shift,
            layout.nr_cpus(),
            SimCosts::default(),
            MermapConfig::default(),
        )
        .map_err(|err| DescError::new("backing", err.to_string()))?;
        PageAllocator::boot_layout_on(layout, options, seed, Arc::new(backing))
    }

    /// Boots a machine over a real memory arena: a memfd of the machine's
    /// size is the direct map, each node's memory bound to a host node when
    /// the host has several. Fails cleanly if the arena cannot be made.
    pub fn boot_arena(
        desc: &MachineDesc,
        options: AllocOptions,
        seed: u64,
        arena: ArenaOptions,
    ) -> Result<PageAllocator<L>, BootError> {
        let layout = desc.layout()?;
        let node_ranges = layout
            .zones()
            .flat_map(|zone| {
                let host_node = u32::from(layout.physical_node[zone.node.index()].0);
                zone.present
                    .iter()
                    .map(move |range| (host_node, range.start.0, range.end.0))
            })
            .collect();
        let backing = ArenaBacking::new(ArenaConfig {
            nr_pages: layout.end_pfn.0,
            page_size: 1usize << layout.page_shift,
            nr_cpus: layout.nr_cpus(),
            populate: arena.populate,
            node_ranges,
            mermap: arena.mermap,
        })?;
        Ok(PageAllocator::boot_layout_on(
            layout,
            options,
            seed,
            Arc::new(backing),
        )?)
    }

    /// Boots a validated layout over `backing`: zones, watermarks, per-CPU
    /// lists, every present page freed, then the free lists shuffled if the
    /// layout says so (page_alloc_init_late() -> shuffle_free_memory()). The
    /// backing must cover every PFN with the layout's page size, all mapped.
    pub fn boot_layout_on(
        layout: MachineLayout,
        options: AllocOptions,
        seed: u64,
        backing: Arc<dyn Backing>,
    ) -> Result<PageAllocator<L>, DescError> {
        if backing.page_size() != 1usize << layout.page_shift {
            return Err(DescError::new(
                "page_size",
                format!(
                    "the backing has {}-byte pages, the machine {}",
                    backing.page_size(),
                    1u64 << layout.page_shift
                ),
            ));
        }
        if backing.nr_pages() < layout.end_pfn.0 {
            return Err(DescError::new(
                "mem",
                format!(
                    "the backing holds {} pages, the machine needs {}",
                    backing.nr_pages(),
                    layout.end_pfn.0
                ),
            ));
        }
        // A sizing written as a literal skips PcpSizing::new(): a batch of
        // u32::MAX overflowed the per-CPU bounds.
        options.pcp.check().map_err(|_| {
            DescError::new(
                "pcp",
                format!(
                    "{:?}: the high fraction is 0 or at least {}, the batch from 1 to {}",
                    options.pcp,
                    PcpSizing::MIN_HIGH_FRACTION,
                    PcpSizing::MAX_BATCH
                ),
            )
        })?;
        options.check_sysctl_fields()?;
        let mut rng = crate::rng::MachineRng::new(seed);
        let frames = Frames::new(layout.end_pfn, layout.pageblock_order).ok_or_else(|| {
            DescError::new(
                "mem",
                format!(
                    "cannot allocate a memmap for {} pages ({} bytes)",
                    layout.end_pfn.0,
                    layout.end_pfn.0 * crate::memmap::MemMap::RECORD_BYTES as u64
                ),
            )
        })?;
        super::memmap_init::init_pageblocks(&layout, &frames);
        let mut zones = Vec::new();
        for node in &layout.nodes {
            for zone in &node.zones {
                let index = ZoneIdx(zones.len() as u16);
                let mut buddy =
                    Zone::new(index, zone.span, layout.max_order, layout.pageblock_order);
                buddy.add_managed(zone.managed_pages());
                buddy.set_shuffle(
                    layout.shuffle.then_some(layout.shuffle_order),
                    rng.next_u64(),
                );
                buddy.set_fallback_order(options.fallback_order);
                zones.push(ZoneSlot {
                    node: zone.node,
                    zone_type: zone.zone_type,
                    present_pages: zone.present_pages(),
                    managed_pages: zone.managed_pages(),
                    spanned_pages: zone.spanned_pages(),
                    start_pfn: zone.span.start.0,
                    // Set by recompute_zone_limits() below.
                    watermarks: Watermarks::default(),
                    lowmem_reserve: [0; ZoneType::COUNT],
                    nofragment: false,
                    buddy: L::new(buddy),
                    free_pages: StatCounter::default(),
                    watermark_boost: StatCounter::default(),
                    reserved_highatomic: StatCounter::default(),
                    block_orders: StatCounter::default(),
                    lock_acquired: StatCounter::default(),
                    lock_contended: StatCounter::default(),
                    flags: ZoneFlags::default(),
                });
            }
        }

        let cpus = layout
            .cpu_node
            .iter()
            .map(|&node| CpuSlot {
                node,
                // High and batch are set by recompute_zone_limits() below.
                zones: zones
                    .iter()
                    .map(|_| CpuZone {
                        pcp: L::new(PerCpuPages::new(layout.pageblock_order)),
                        events: ZoneCounters::default(),
                    })
                    .collect(),
                registered: AtomicBool::new(false),
            })
            .collect();

        let mut allocator = PageAllocator {
            layout,
            frames,
            zones: zones.into_boxed_slice(),
            cpus,
            zonelists: Box::default(),
            options,
            min_free_kbytes: 0,
            user_min_free_kbytes: None,
            rng,
            seed,
            backing,
            unmapped_pageblocks: AtomicU64::new(0),
        };
        allocator.recompute_zone_limits();
        allocator.free_boot_memory();
        allocator.shuffle_free_memory();
        Ok(allocator)
    }

    /// Frees every present page outside the reservations into the buddy
    /// lists, in the largest aligned blocks, to the tail. mirrors
    /// memblock_free_all() and __free_pages_memory(); the reserved pages
    /// stay out, as PageReserved pages do.
    fn free_boot_memory(&self) {
        let max_order = self.layout.max_order;
        for (index, zone) in self.zone_ids().zip(self.layout.zones()) {
            let mut buddy = self.lock_zone(index);
            for range in &zone.managed_ranges() {
                let (mut start, end) = (range.start.0, range.end.0);
                while start < end {
                    let mut order = Order(start.trailing_zeros() as u8).min(max_order);
                    while start + order.nr_pages() > end {
                        order = Order(order.0 - 1);
                    }
                    let freetype = self.frames.blocks.freetype(Pfn(start));
                    buddy.free_block(
                        &self.frames,
                        FrameIdx::covered(Pfn(start)),
                        order,
                        freetype,
                        true,
                    );
                    start += order.nr_pages();
                }
            }
            self.publish(index, &buddy);
        }
    }
}

/// mirrors alloc_flags_nofragment(): on x86-64 ZONE_DMA32 always exists,
/// populated or not, so allocations preferring a Normal zone avoid mixing
/// pageblocks (first trying other zones of the node, then other nodes),
/// unless the node has no DMA32 memory and there are other nodes.
pub(crate) fn nofragment(
    layout: &MachineLayout,
    node: crate::types::NodeId,
    zone_type: ZoneType,
) -> bool {
    if zone_type != ZoneType::Normal {
        return false;
    }
    let dma32_populated = layout.nodes[node.index()]
        .zones
        .iter()
        .any(|zone| zone.zone_type == ZoneType::Dma32 && zone.is_populated());
    layout.nodes.len() == 1 || dma32_populated
}
