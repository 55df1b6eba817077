//! Churn: a seeded random mix of allocations and frees that ages a simulated
//! machine — fragments its free lists, mixes its pageblocks, fills its
//! per-CPU lists — while keeping it working.
//!
//! Each operation draws, from one [`MachineRng`], what to do: allocate a
//! block (orders weighted toward 0, some 1–3, a few up to 9 and
//! MAX_PAGE_ORDER; GFP_KERNEL, GFP_HIGHUSER_MOVABLE, movable, reclaimable,
//! GFP_ATOMIC or GFP_NOWAIT), free a random held block, allocate or free a
//! bulk batch of 1–64 order-0 pages, or drain a CPU's lists. The CPU and the
//! preferred node are drawn for each operation.
//!
//! Invariant: the blocks held never exceed [`HELD_LIMIT_PERCENT`] of the
//! machine's present pages; at the limit an allocation turns into a free.
//! Same allocator, same `ops`, same seed: same final state, page for page.
//! The blocks still held at the end stay allocated.
//!
//! A run is at most [`MAX_OPS`] operations (a few minutes); it reports its
//! progress through `observe::progress` every [`PROGRESS_EVERY`] operations.

use crate::observe;
use pageframe::{CpuId, Gfp, LocalPageAllocator, MachineRng, NodeId, Order, Page};

/// The most operations of one churn or object workload (`--churn`): at a
/// few million operations a second, a few minutes.
pub const MAX_OPS: u64 = 1_000_000_000;

/// Operations between two progress reports.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// The most of the machine's memory churn holds at once, in percent.
pub const HELD_LIMIT_PERCENT: u64 = 75;

/// The largest bulk batch.
pub const MAX_BULK_BATCH: u64 = 64;

/// What a churn run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChurnStats {
    /// Blocks allocated (a bulk call counts each page).
    pub allocs: u64,
    /// Blocks freed (a bulk call counts each page).
    pub frees: u64,
    /// Allocation calls that failed, or bulk calls that returned fewer pages
    /// than asked for.
    pub failures: u64,
    /// Frees the allocator refused. Always 0 unless the allocator is broken.
    pub free_errors: u64,
    /// Per-CPU list drains.
    pub drains: u64,
    /// Pages still allocated by churn at the end.
    pub pages_held: u64,
}

/// The GFP types drawn for an allocation, equally likely.
const GFP_TYPES: [Gfp; 6] = [
    Gfp::KERNEL,
    Gfp::HIGHUSER_MOVABLE,
    Gfp::MOVABLE,
    Gfp::KERNEL.union(Gfp::RECLAIMABLE),
    Gfp::ATOMIC,
    Gfp::NOWAIT,
];

/// The blocks churn holds: order-0 pages apart, so that bulk frees find them
/// without a scan.
#[derive(Default)]
struct Held {
    single: Vec<Page>,
    multi: Vec<(Page, Order)>,
    pages: u64,
}

impl Held {
    fn push(&mut self, page: Page, order: Order) {
        self.pages += order.nr_pages();
        if order.0 == 0 {
            self.single.push(page);
        } else {
            self.multi.push((page, order));
        }
    }

    fn len(&self) -> usize {
        self.single.len() + self.multi.len()
    }

    /// Removes the held block numbered `index` (singles first).
    fn take(&mut self, index: usize) -> (Page, Order) {
        let (page, order) = if index < self.single.len() {
            (self.single.swap_remove(index), Order(0))
        } else {
            self.multi.swap_remove(index - self.single.len())
        };
        self.pages -= order.nr_pages();
        (page, order)
    }
}

/// Runs `ops` random operations on `allocator`, every choice drawn from a
/// [`MachineRng`] seeded with `seed`.
pub fn churn(allocator: &LocalPageAllocator, ops: u64, seed: u64) -> ChurnStats {
    let mut rng = MachineRng::new(seed);
    let handles: Vec<_> = (0..allocator.nr_cpus())
        .filter_map(|cpu| allocator.cpu(CpuId(cpu as u16)).ok())
        .collect();
    let mut stats = ChurnStats::default();
    if handles.is_empty() {
        return stats;
    }
    let max_order = allocator.layout().max_order.0;
    let limit = allocator.layout().present_pages() * HELD_LIMIT_PERCENT / 100;
    let nr_nodes = allocator.nr_nodes() as u64;
    let mut held = Held::default();
    for op in 0..ops {
        if op % PROGRESS_EVERY == 0 {
            observe::progress(op, ops);
        }
        let cpu = &handles[rng.below(handles.len() as u64) as usize];
        let node = NodeId(rng.below(nr_nodes) as u16);
        let gfp = GFP_TYPES[rng.below(GFP_TYPES.len() as u64) as usize];
        let action = rng.below(1000);
        match action {
            0..=529 => {
                let order = Order(random_order(&mut rng).min(max_order));
                if held.pages + order.nr_pages() > limit {
                    free_random(cpu, &mut held, &mut rng, &mut stats);
                    continue;
                }
                match cpu.alloc_pages(gfp, order, node) {
                    Ok(page) => {
                        held.push(page, order);
                        stats.allocs += 1;
                    }
                    Err(_) => stats.failures += 1,
                }
            }
            530..=929 => free_random(cpu, &mut held, &mut rng, &mut stats),
            930..=964 => {
                let batch = 1 + rng.below(MAX_BULK_BATCH);
                if held.pages + batch > limit {
                    free_random(cpu, &mut held, &mut rng, &mut stats);
                    continue;
                }
                let mut pages = Vec::with_capacity(batch as usize);
                let populated = cpu
                    .alloc_pages_bulk_vec(gfp, node, batch as usize, &mut pages)
                    .unwrap_or(0);
                if populated < batch as usize {
                    stats.failures += 1;
                }
                stats.allocs += pages.len() as u64;
                for page in pages {
                    held.push(page, Order(0));
                }
            }
            965..=994 => {
                let batch = (1 + rng.below(MAX_BULK_BATCH)).min(held.single.len() as u64);
                let pages: Vec<Page> = (0..batch)
                    .map(|_| held.take(rng.below(held.single.len() as u64) as usize).0)
                    .collect();
                match cpu.free_pages_bulk(&pages) {
                    Ok(()) => stats.frees += pages.len() as u64,
                    Err(_) => stats.free_errors += 1,
                }
            }
            _ => {
                cpu.drain_pcp();
                stats.drains += 1;
            }
        }
    }
    stats.pages_held = held.pages;
    stats
}

/// An order: 0 seven times in ten, 1–3 two in ten, 4–9 in 8 of 100, and
/// MAX_PAGE_ORDER (clamped by the caller) in 2 of 100.
fn random_order(rng: &mut MachineRng) -> u8 {
    match rng.below(100) {
        0..=69 => 0,
        70..=89 => 1 + rng.below(3) as u8,
        90..=97 => 4 + rng.below(6) as u8,
        _ => u8::MAX,
    }
}

/// Frees one held block, drawn at random, on `cpu`.
fn free_random(
    cpu: &pageframe::CpuHandle<&LocalPageAllocator, pageframe::Local>,
    held: &mut Held,
    rng: &mut MachineRng,
    stats: &mut ChurnStats,
) {
    if held.len() == 0 {
        return;
    }
    let (page, order) = held.take(rng.below(held.len() as u64) as usize);
    match cpu.free_pages(page, order) {
        Ok(()) => stats.frees += 1,
        Err(_) => stats.free_errors += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pageframe::{proc, MachineDesc};

    fn churned(seed: u64) -> (LocalPageAllocator, ChurnStats) {
        let machine = MachineDesc::uniform(512 << 20, 2, 4).unwrap();
        let allocator = LocalPageAllocator::boot(&machine).unwrap();
        let stats = churn(&allocator, 30_000, seed);
        (allocator, stats)
    }

    fn state(allocator: &LocalPageAllocator) -> String {
        proc::buddyinfo(allocator) + &proc::vmstat(allocator)
    }

    #[test]
    fn same_seed_same_state_other_seed_other_state() {
        let (first, first_stats) = churned(1);
        let (second, second_stats) = churned(1);
        let (other, _) = churned(2);
        assert_eq!(first_stats, second_stats);
        assert_eq!(state(&first), state(&second));
        assert_ne!(state(&first), state(&other));
    }

    #[test]
    fn churn_keeps_the_allocator_consistent_and_within_the_limit() {
        let (allocator, stats) = churned(7);
        allocator.check_invariants().unwrap();
        assert_eq!(stats.free_errors, 0);
        assert!(stats.allocs > 10_000 && stats.frees > 5_000, "{stats:?}");
        assert_eq!(allocator.nr_allocated_pages(), stats.pages_held);
        let limit = allocator.layout().present_pages() * HELD_LIMIT_PERCENT / 100;
        assert!(stats.pages_held <= limit);
    }

    #[test]
    fn churn_fragments_memory() {
        let machine = MachineDesc::uniform(256 << 20, 1, 2).unwrap();
        let allocator = LocalPageAllocator::boot(&machine).unwrap();
        let fresh = allocator.zone_snapshots()[0].nr_free_blocks.clone();
        churn(&allocator, 20_000, 3);
        let aged = allocator.zone_snapshots()[0].nr_free_blocks.clone();
        assert!(
            aged[0] > fresh[0] && aged[10] < fresh[10],
            "{fresh:?} -> {aged:?}"
        );
    }
}
