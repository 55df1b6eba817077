//! Aging: a long-running server's history before the measured run. Seeded
//! cycles of allocations of mixed orders, lifetimes and GFP types, freed as
//! their lifetimes end, so that the free lists lose their boot-time order.
//! At the end a residue of long-lived blocks (page cache, slab, other
//! services) stays allocated, the rest is freed.
//!
//! Invariant: the pages held never exceed `hold_limit_percent` of memory;
//! at the end exactly the blocks marked long-lived remain, at most
//! `residue_percent` of memory.

use pageframe::{CpuId, Gfp, LocalPageAllocator, MachineRng, NodeId, Order, Page};

/// How to age a machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgingConfig {
    /// Allocation cycles.
    pub ops: u64,
    /// Most of memory held at once, in percent.
    pub hold_limit_percent: u64,
    /// Memory left allocated by long-lived blocks at the end, in percent.
    pub residue_percent: u64,
}

/// What aging left behind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgingStats {
    /// Blocks allocated.
    pub allocs: u64,
    /// Allocations that failed.
    pub failures: u64,
    /// Pages still allocated at the end (the residue).
    pub residue_pages: u64,
}

const GFP_TYPES: [Gfp; 4] = [
    Gfp::HIGHUSER_MOVABLE,
    Gfp::KERNEL,
    Gfp::KERNEL.union(Gfp::RECLAIMABLE),
    Gfp::MOVABLE,
];

struct Block {
    page: Page,
    order: Order,
    expires: u64,
    long_lived: bool,
}

/// Ages `allocator` with every choice drawn from a generator seeded `seed`.
pub fn age(
    allocator: &LocalPageAllocator,
    config: AgingConfig,
    seed: u64,
) -> Result<AgingStats, String> {
    let mut rng = MachineRng::new(seed);
    let cpus: Vec<_> = (0..allocator.nr_cpus())
        .map(|cpu| allocator.cpu(CpuId(cpu as u16)).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let present = allocator.layout().present_pages();
    let limit = present * config.hold_limit_percent / 100;
    let residue_limit = present * config.residue_percent / 100;
    let max_order = allocator.layout().max_order.0;
    let nr_nodes = allocator.nr_nodes() as u64;
    let mut held: Vec<Block> = Vec::new();
    let (mut held_pages, mut long_pages) = (0u64, 0u64);
    let mut stats = AgingStats::default();
    for now in 0..config.ops {
        // Retire expired blocks: a random sample, as lifetimes end out of order.
        for _ in 0..2 {
            if held.is_empty() {
                break;
            }
            let at = rng.below(held.len() as u64) as usize;
            if held[at].expires <= now && !held[at].long_lived {
                let block = held.swap_remove(at);
                held_pages -= block.order.nr_pages();
                let cpu = &cpus[rng.below(cpus.len() as u64) as usize];
                cpu.free_pages(block.page, block.order)
                    .map_err(|e| e.to_string())?;
            }
        }
        let order = match rng.below(100) {
            0..=74 => 0,
            75..=89 => 1 + rng.below(3) as u8,
            90..=97 => 4 + rng.below(6) as u8,
            _ => max_order,
        }
        .min(max_order);
        let pages = 1u64 << order;
        if held_pages + pages > limit {
            continue;
        }
        let gfp = GFP_TYPES[rng.below(GFP_TYPES.len() as u64) as usize];
        let cpu = &cpus[rng.below(cpus.len() as u64) as usize];
        let node = NodeId(rng.below(nr_nodes) as u16);
        match cpu.alloc_pages(gfp, Order(order), node) {
            Ok(page) => {
                stats.allocs += 1;
                let long_lived = long_pages + pages <= residue_limit && rng.chance(1, 8);
                if long_lived {
                    long_pages += pages;
                }
                // Lifetimes: mostly short, a tail of long ones.
                let lifetime = match rng.below(10) {
                    0..=6 => rng.below(1_000),
                    7..=8 => rng.below(20_000),
                    _ => rng.below(config.ops.max(1)),
                };
                held_pages += pages;
                held.push(Block {
                    page,
                    order: Order(order),
                    expires: now + lifetime,
                    long_lived,
                });
            }
            Err(_) => stats.failures += 1,
        }
    }
    // The history ends: everything but the long-lived residue is freed, in a
    // random order.
    while let Some(at) = (!held.is_empty()).then(|| rng.below(held.len() as u64) as usize) {
        let block = held.swap_remove(at);
        if block.long_lived {
            stats.residue_pages += block.order.nr_pages();
            continue;
        }
        let cpu = &cpus[rng.below(cpus.len() as u64) as usize];
        cpu.free_pages(block.page, block.order)
            .map_err(|e| e.to_string())?;
    }
    Ok(stats)
}
