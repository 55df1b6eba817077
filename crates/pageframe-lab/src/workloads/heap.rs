//! A managed-runtime heap several times the cache size, with a hot/warm/cold
//! object mix: each access picks a class by its share of the accesses, then
//! a uniformly random line of that class. Classes are assigned to virtual
//! pages by the mix's [`ClassLayout`]: by default page by page by a fixed
//! hash of the virtual page, so hot objects are spread through the heap as
//! a runtime's allocation leaves them; or in contiguous virtual ranges, as
//! a generational heap keeps its young generation. The heap is given as the
//! PFNs of its pages in virtual order, however they were placed.
//!
//! Two ways to get the conflict rate of a placement, from the same access
//! model: [`sampled_conflict_rate`] draws the accesses and runs them through
//! a [`DirectMappedCache`]; [`conflict_rate`] computes the exact expectation
//! of that estimate. Every access is drawn independently, so a set of the
//! cache holds the line of its last access: an access to line `x` (drawn
//! with probability `p` per access) whose set's lines are drawn with
//! probability `P` in all is a conflict miss when the set was touched before
//! and not last by `x`: probability `p (1 - (1-P)^t) (1 - p/P)` at draw `t`.
//! Summed over the measured draws this is a closed form per colour, so the
//! expectation costs a sort of the heap's pages, not millions of cache
//! accesses (a test holds the two within sampling noise of each other).

use crate::cache_model::DirectMappedCache;
use pageframe::MachineRng;

/// Shares of the heap's pages and of the accesses per class.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeapMix {
    /// Hot pages, in per mille of the heap.
    pub hot_pages: u64,
    /// Warm pages, per mille (the rest is cold).
    pub warm_pages: u64,
    /// Accesses to hot pages, per mille.
    pub hot_accesses: u64,
    /// Accesses to warm pages, per mille (the rest go to cold pages).
    pub warm_accesses: u64,
    /// Where each class's pages lie in the heap's virtual range.
    pub layout: ClassLayout,
}

/// Where the classes' pages lie in the heap's virtual range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassLayout {
    /// Page by page by a fixed hash of the virtual page.
    Hashed,
    /// In contiguous virtual ranges: hot first, then warm, then cold (a
    /// generational heap: the young generation, where objects are
    /// allocated and die, then the survivors, then the old generation).
    Generational,
}

impl Default for HeapMix {
    /// 2.5% of the pages take 85% of the accesses, 27.5% take 12%, 70% take 3%:
    /// calibrated once so that a heap 3x the cache on a fresh machine has
    /// the document's 8% conflict rate.
    fn default() -> HeapMix {
        HeapMix {
            hot_pages: 25,
            warm_pages: 275,
            hot_accesses: 850,
            warm_accesses: 120,
            layout: ClassLayout::Hashed,
        }
    }
}

/// The heap's pages sorted into classes, as PFNs.
pub struct Heap {
    classes: [Vec<u64>; 3],
    mix: HeapMix,
    page_shift: u32,
    line_shift: u32,
}

impl Heap {
    /// Sorts the heap's pages, `pfns` in virtual order, into classes.
    pub fn new(pfns: &[u64], mix: HeapMix, page_shift: u32, line: u64) -> Heap {
        let mut classes: [Vec<u64>; 3] = Default::default();
        let pages = pfns.len() as u64;
        for (page, &pfn) in pfns.iter().enumerate() {
            let page = page as u64;
            let per_mille = match mix.layout {
                // A fixed, well-mixed hash (splitmix64's finalizer): the
                // class layout is the same for every case, so only physical
                // placement differs between them, and pages a cache size
                // apart get independent classes (a plain multiplicative
                // hash correlates them, which skews the conflict rate by
                // cache size).
                ClassLayout::Hashed => splitmix64(page) % 1000,
                ClassLayout::Generational => page * 1000 / pages,
            };
            let class = if per_mille < mix.hot_pages {
                0
            } else if per_mille < mix.hot_pages + mix.warm_pages {
                1
            } else {
                2
            };
            classes[class].push(pfn);
        }
        Heap {
            classes,
            mix,
            page_shift,
            line_shift: line.trailing_zeros(),
        }
    }

    /// Runs `accesses` random accesses on `cache`. An access draws 64 bits:
    /// the low `CLASS_DRAW_BITS` (10) pick the class (`HeapMix::class_of`),
    /// the next 32 the page within the class (`page_of`), the bits from 42
    /// up the line within the page.
    pub fn run(&self, cache: &mut DirectMappedCache, rng: &mut MachineRng, accesses: u64) {
        let lines_per_page = 1u64 << (self.page_shift - self.line_shift);
        for _ in 0..accesses {
            let draw = rng.next_u64();
            let pages = &self.classes[self.mix.class_of(draw & CLASS_DRAWS_MASK)];
            if pages.is_empty() {
                continue;
            }
            let pfn = pages[page_of(draw >> CLASS_DRAW_BITS, pages.len())];
            let line = (draw >> 42) & (lines_per_page - 1);
            cache.access((pfn << self.page_shift) | (line << self.line_shift));
        }
    }

    /// Each distinct page's probability per draw of [`Heap::run`], as
    /// `(colour, pfn, probability)` sorted by colour and PFN, where a page's
    /// colour is its PFN modulo the pages of a `cache`-byte cache.
    fn page_probabilities(&self, cache: u64) -> Vec<(u64, u64, f64)> {
        let cache_pages = cache >> self.page_shift;
        let mut class_draws = [0u64; 3];
        for draw in 0..=CLASS_DRAWS_MASK {
            class_draws[self.mix.class_of(draw)] += 1;
        }
        let mut pages = Vec::with_capacity(self.classes.iter().map(Vec::len).sum());
        for (class, pfns) in self.classes.iter().enumerate() {
            let class_share = class_draws[class] as f64 / (CLASS_DRAWS_MASK + 1) as f64;
            for (index, &pfn) in pfns.iter().enumerate() {
                let page_share = page_draws(index, pfns.len()) as f64 / PAGE_DRAWS as f64;
                pages.push((pfn % cache_pages, pfn, class_share * page_share));
            }
        }
        pages.sort_unstable_by_key(|&(colour, pfn, _)| (colour, pfn));
        pages.dedup_by(|later, kept| {
            let same = later.1 == kept.1;
            if same {
                kept.2 += later.2;
            }
            same
        });
        pages
    }
}

/// Low bits of an access's draw that pick its class.
const CLASS_DRAW_BITS: u32 = 10;
/// Their mask.
const CLASS_DRAWS_MASK: u64 = (1 << CLASS_DRAW_BITS) - 1;
/// The values of the 32 bits that pick the page within a class.
const PAGE_DRAWS: u64 = 1 << 32;

impl HeapMix {
    /// The class (0 hot, 1 warm, 2 cold) of an access whose class bits are
    /// `draw` (below 2^[`CLASS_DRAW_BITS`]): `draw` scaled to per mille.
    fn class_of(&self, draw: u64) -> usize {
        let pick = (draw * 1000) >> CLASS_DRAW_BITS;
        if pick < self.hot_accesses {
            0
        } else if pick < self.hot_accesses + self.warm_accesses {
            1
        } else {
            2
        }
    }
}

/// The page, of `pages`, that the low 32 bits of `draw` pick
/// (multiply-shift: each page gets `PAGE_DRAWS / pages` draws, rounded).
fn page_of(draw: u64, pages: usize) -> usize {
    (((draw & (PAGE_DRAWS - 1)) * pages as u64) >> 32) as usize
}

/// How many of the [`PAGE_DRAWS`] values [`page_of`] maps to page `index`
/// of `pages`: those `u` with `index * 2^32 <= u * pages < (index + 1) * 2^32`.
fn page_draws(index: usize, pages: usize) -> u64 {
    let first_draw = |index: usize| (index as u128 * PAGE_DRAWS as u128).div_ceil(pages as u128);
    (first_draw(index + 1) - first_draw(index)) as u64
}

/// The conflict rate of `mix` over a heap whose virtual page `v` is PFN
/// `pfns[v]`, in a direct-mapped cache of `cache` bytes with `line`-byte
/// lines, sampled: a warm-up of a quarter of `accesses`, then `accesses`
/// counted, the stream drawn from `stream_seed` (the same seed gives the
/// same stream, so two placements differ only in where the pages are).
pub fn sampled_conflict_rate(
    pfns: &[u64],
    mix: HeapMix,
    page_shift: u32,
    (cache, line): (u64, u64),
    accesses: u64,
    stream_seed: u64,
) -> Result<f64, String> {
    let heap = Heap::new(pfns, mix, page_shift, line);
    let mut cache = DirectMappedCache::new(cache, line)?;
    let mut rng = MachineRng::new(stream_seed);
    heap.run(&mut cache, &mut rng, accesses / 4);
    cache.reset_stats();
    heap.run(&mut cache, &mut rng, accesses);
    Ok(cache.stats().conflict_rate())
}

/// The expectation of [`sampled_conflict_rate`] over its stream, exactly
/// (see the module header), for a cache of at least a page: for each
/// colour, pages drawn with probabilities `p_i` (summing to `S`) give each
/// of the colour's sets the probability `P = S / lines_per_page` per draw,
/// and expected conflicts `sum_i p_i (1 - p_i / S) G(P)` over the measured
/// draws `W .. W + N`, where `G(P) = N - (1-P)^W (1 - (1-P)^N) / P` (the
/// draws that find the set touched before). Divided by the expected
/// accesses counted (draws of an empty class touch nothing).
pub fn conflict_rate(
    pfns: &[u64],
    mix: HeapMix,
    page_shift: u32,
    (cache, line): (u64, u64),
    accesses: u64,
) -> Result<f64, String> {
    DirectMappedCache::check_geometry(cache, line)?;
    let page = 1u64 << page_shift;
    if cache < page || line > page {
        return Err(format!(
            "cache size {cache} and line {line}: the cache must hold a page of {page} bytes, a line at most a page"
        ));
    }
    let heap = Heap::new(pfns, mix, page_shift, line);
    let lines_per_page = page / line;
    let (warm_up, measured) = ((accesses / 4) as f64, accesses as f64);
    let pages = heap.page_probabilities(cache);
    let (mut conflicts, mut touching) = (0.0, 0.0);
    for colour in pages.chunk_by(|a, b| a.0 == b.0) {
        let sum: f64 = colour.iter().map(|&(_, _, p)| p).sum();
        let set = sum / lines_per_page as f64;
        if set == 0.0 {
            continue;
        }
        // (1-P)^k and 1 - (1-P)^k, exact at k = 0 also when P = 1.
        let log_miss = (-set).ln_1p();
        let untouched = |draws: f64| {
            if draws == 0.0 {
                1.0
            } else {
                (draws * log_miss).exp()
            }
        };
        let touched = |draws: f64| {
            if draws == 0.0 {
                0.0
            } else {
                -(draws * log_miss).exp_m1()
            }
        };
        let touched_draws = measured - untouched(warm_up) * touched(measured) / set;
        let unlike_last: f64 = colour.iter().map(|&(_, _, p)| p * (1.0 - p / sum)).sum();
        conflicts += unlike_last * touched_draws;
        touching += sum;
    }
    let counted = touching * measured;
    Ok(if counted == 0.0 {
        0.0
    } else {
        conflicts / counted
    })
}

/// splitmix64's output function: a bijection of u64 with good avalanche.
fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generational layout puts the classes in virtual order, hot
    /// first; the hashed one spreads every class through the heap.
    #[test]
    fn generational_classes_are_contiguous_virtual_ranges() {
        let pfns: Vec<u64> = (1000..2000).collect();
        let generational = HeapMix {
            layout: ClassLayout::Generational,
            ..HeapMix::default()
        };
        let heap = Heap::new(&pfns, generational, 12, 64);
        assert_eq!(heap.classes[0], (1000..1025).collect::<Vec<u64>>());
        assert_eq!(heap.classes[1], (1025..1300).collect::<Vec<u64>>());
        assert_eq!(heap.classes[2], (1300..2000).collect::<Vec<u64>>());
        let hashed = Heap::new(&pfns, HeapMix::default(), 12, 64);
        assert_eq!(hashed.classes.iter().map(Vec::len).sum::<usize>(), 1000);
        assert!(hashed.classes[0].iter().any(|&pfn| pfn >= 1300));
    }

    /// A generational heap placed contiguously keeps its hot range on
    /// distinct colours; on the same frames with its hot pages three to a
    /// colour they evict each other, and the conflict rate rises.
    #[test]
    fn a_contiguous_hot_range_conflicts_less_than_an_aliased_one() {
        let cache_pages = 1024u64;
        let mix = HeapMix {
            layout: ClassLayout::Generational,
            ..HeapMix::default()
        };
        let contiguous: Vec<u64> = (0..3 * cache_pages).collect();
        // Hot page i (the first 77: 2.5% of 3072) on colour i / 3, tag
        // i % 3; every other page on the frames left, in order.
        let hot: Vec<u64> = (0..77)
            .map(|page| (page % 3) * cache_pages + page / 3)
            .collect();
        let aliased: Vec<u64> = hot
            .iter()
            .copied()
            .chain(contiguous.iter().copied().filter(|pfn| !hot.contains(pfn)))
            .collect();
        assert_eq!(aliased.len(), contiguous.len());
        let geometry = (cache_pages << 12, 64);
        let rate = |pfns: &[u64]| conflict_rate(pfns, mix, 12, geometry, 200_000).unwrap();
        let (fresh, aliased) = (rate(&contiguous), rate(&aliased));
        assert!(
            aliased > 10.0 * fresh,
            "contiguous {fresh}, aliased {aliased}"
        );
    }

    /// `n` distinct PFNs below `memory` pages in random order.
    fn random_placement(n: usize, memory: u64, seed: u64) -> Vec<u64> {
        let mut rng = MachineRng::new(seed);
        let mut frames: Vec<u64> = (0..memory).collect();
        for at in (1..frames.len()).rev() {
            frames.swap(at, rng.below(at as u64 + 1) as usize);
        }
        frames.truncate(n);
        frames
    }

    /// The expectation and the sampled estimate agree within sampling
    /// noise, for placements from no conflict to heavy aliasing, both
    /// layouts, short and long warm-ups, a heap with a duplicated page and
    /// one with an empty class. The estimate's standard error is about
    /// `sqrt(r (1 - r) / accesses)`, under 0.0004 here.
    #[test]
    fn the_expectation_matches_sampling() {
        let cache_pages = 256u64;
        let heap_pages = 3 * cache_pages as usize;
        let geometry = (cache_pages << 12, 64);
        let generational = HeapMix {
            layout: ClassLayout::Generational,
            ..HeapMix::default()
        };
        let no_warm = HeapMix {
            warm_pages: 0,
            ..HeapMix::default()
        };
        let contiguous: Vec<u64> = (0..heap_pages as u64).collect();
        let aliased: Vec<u64> = (0..heap_pages as u64)
            .map(|page| (page % 4) * 8 * cache_pages + page / 4)
            .collect();
        let mut duplicated = random_placement(heap_pages, 8 * cache_pages, 3);
        duplicated[1] = duplicated[0];
        let cases = [
            ("contiguous", contiguous, HeapMix::default()),
            (
                "random",
                random_placement(heap_pages, 8 * cache_pages, 1),
                HeapMix::default(),
            ),
            (
                "random generational",
                random_placement(heap_pages, 8 * cache_pages, 2),
                generational,
            ),
            ("aliased", aliased, HeapMix::default()),
            ("duplicated", duplicated, HeapMix::default()),
            (
                "no warm class",
                random_placement(heap_pages, 8 * cache_pages, 4),
                no_warm,
            ),
        ];
        for (name, pfns, mix) in cases {
            for accesses in [40_000, 2_000_000] {
                let expected = conflict_rate(&pfns, mix, 12, geometry, accesses).unwrap();
                let sampled = sampled_conflict_rate(&pfns, mix, 12, geometry, accesses, 9).unwrap();
                let tolerance = 5.0 * (expected * (1.0 - expected) / accesses as f64).sqrt();
                assert!(
                    (expected - sampled).abs() <= tolerance.max(1e-3),
                    "{name}, {accesses} accesses: expected {expected}, sampled {sampled}"
                );
            }
        }
    }

    /// A cache that cannot hold a page, or lines larger than a page, are
    /// refused; so is a geometry the cache itself refuses.
    #[test]
    fn the_expectation_refuses_geometries_it_cannot_colour() {
        let pfns = [0, 1, 2];
        let mix = HeapMix::default();
        assert!(conflict_rate(&pfns, mix, 12, (2048, 64), 100).is_err());
        assert!(conflict_rate(&pfns, mix, 12, (1 << 20, 8192), 100).is_err());
        assert!(conflict_rate(&pfns, mix, 12, (3 << 20, 64), 100).is_err());
        assert_eq!(conflict_rate(&[], mix, 12, (1 << 20, 64), 100), Ok(0.0));
    }

    /// Degenerate streams and heaps give finite rates equal to sampling's:
    /// no access, fewer than four (no warm-up), one page of one line (every
    /// access to one set: never a conflict).
    #[test]
    fn the_expectation_is_exact_at_the_edges() {
        let mix = HeapMix::default();
        let geometry = (1 << 20, 64);
        let pfns: Vec<u64> = (0..600).collect();
        for accesses in [0, 1, 3] {
            let expected = conflict_rate(&pfns, mix, 12, geometry, accesses).unwrap();
            assert!(expected.is_finite(), "{accesses}: {expected}");
        }
        assert_eq!(conflict_rate(&pfns, mix, 12, geometry, 0), Ok(0.0));
        let all_hot = HeapMix {
            hot_pages: 1000,
            warm_pages: 0,
            hot_accesses: 1000,
            warm_accesses: 0,
            layout: ClassLayout::Hashed,
        };
        for mix in [mix, all_hot] {
            for accesses in [0, 1, 2, 1000] {
                let one_line = conflict_rate(&[5], mix, 12, (1 << 20, 4096), accesses).unwrap();
                let sampled =
                    sampled_conflict_rate(&[5], mix, 12, (1 << 20, 4096), accesses, 1).unwrap();
                assert_eq!((one_line, sampled), (0.0, 0.0), "{accesses}");
            }
        }
    }
}
