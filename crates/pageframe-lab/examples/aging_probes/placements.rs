//! Hand-made placements of the heap (`aging_probes placements`), no
//! allocator: contiguous (a fresh machine), random page by page (what
//! aging has given in every probe) and random 4 MiB blocks (what shuffle
//! gives), for the hashed object mix and for a grid of generational mixes
//! (hot share of the pages and of the accesses; the warm class as the
//! default mix has it). Shows where random placement lands for the mixes
//! whose contiguous placement is near the document's fresh 8%, and whether
//! block-random placement differs from page-random: at the quick scale's
//! 64 MiB cache (16 blocks) and at the full scale's 1 GiB (256 blocks).

use super::mm_probes::random_placement;
use pageframe::MachineRng;
use pageframe_lab::workloads::heap::{conflict_rate, ClassLayout, HeapMix};

/// 4 MiB in pages: shuffle's order-10 blocks.
const BLOCK_PAGES: u64 = 1024;

/// A cache of `cache_pages`, memory 8x and a heap 3x the cache, measured
/// with `accesses` per placement.
#[derive(Clone, Copy)]
struct Scale {
    cache_pages: u64,
    accesses: u64,
}

impl Scale {
    fn rate(&self, pfns: &[u64], mix: HeapMix) -> f64 {
        let cache = (self.cache_pages << 12, 64);
        conflict_rate(pfns, mix, 12, cache, self.accesses).expect("cache geometry")
    }

    /// The heap on whole 4 MiB blocks of memory in random order.
    fn block_random(&self, seed: u64) -> Vec<u64> {
        let blocks = 8 * self.cache_pages / BLOCK_PAGES;
        random_placement(blocks, blocks, seed)
            .into_iter()
            .flat_map(|block| block * BLOCK_PAGES..(block + 1) * BLOCK_PAGES)
            .take(3 * self.cache_pages as usize)
            .collect()
    }

    /// Prints the conflict rate of each placement of `mix` (random ones:
    /// the mean of `draws` draws).
    fn print(&self, mix: HeapMix, draws: u32, seed: u64) {
        let heap = 3 * self.cache_pages;
        let contiguous: Vec<u64> = (self.cache_pages..self.cache_pages + heap).collect();
        let mut rng = MachineRng::new(seed);
        let (mut random, mut blocks) = (0.0, 0.0);
        for _ in 0..draws {
            let pages = random_placement(heap, 8 * self.cache_pages, rng.next_u64());
            random += self.rate(&pages, mix) / draws as f64;
            blocks += self.rate(&self.block_random(rng.next_u64()), mix) / draws as f64;
        }
        println!(
            "cache {:>4} MiB, {:?} hot {}/{} warm {}/{}: contiguous {:.3}  page-random {random:.3}  4MiB-block-random {blocks:.3}",
            self.cache_pages >> 8,
            mix.layout,
            mix.hot_pages,
            mix.hot_accesses,
            mix.warm_pages,
            mix.warm_accesses,
            self.rate(&contiguous, mix)
        );
    }
}

/// The generational mix with `hot_pages` and `hot_accesses` per mille.
fn generational(hot_pages: u64, hot_accesses: u64) -> HeapMix {
    HeapMix {
        hot_pages,
        hot_accesses,
        warm_accesses: HeapMix::default().warm_accesses.min(1000 - hot_accesses),
        layout: ClassLayout::Generational,
        ..HeapMix::default()
    }
}

/// Prints the grid at the quick scale, then the default mix and the
/// generational mixes nearest fresh 8% at the full scale.
pub fn run(seed: u64) {
    let quick = Scale {
        cache_pages: 16384,
        accesses: 12_000_000,
    };
    quick.print(HeapMix::default(), 3, seed);
    for hot_pages in [25, 50, 75, 100, 150, 200] {
        for hot_accesses in [700, 800, 850, 900, 950] {
            quick.print(generational(hot_pages, hot_accesses), 3, seed);
        }
    }
    let full = Scale {
        cache_pages: 262144,
        accesses: 200_000_000,
    };
    full.print(HeapMix::default(), 1, seed);
    for (hot_pages, hot_accesses) in [(100, 850), (75, 800), (50, 700)] {
        full.print(generational(hot_pages, hot_accesses), 1, seed);
    }
}
