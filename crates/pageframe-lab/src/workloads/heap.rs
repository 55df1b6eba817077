//! A managed-runtime heap several times the cache size, with a hot/warm/cold
//! object mix: each access picks a class by its share of the accesses, then
//! a uniformly random line of that class. Classes are assigned to virtual
//! pages by the mix's [`ClassLayout`]: by default page by page by a fixed
//! hash of the virtual page, so hot objects are spread through the heap as
//! a runtime's allocation leaves them; or in contiguous virtual ranges, as
//! a generational heap keeps its young generation. The heap is given as the
//! PFNs of its pages in virtual order, however they were placed.

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

    /// Runs `accesses` random accesses on `cache`.
    pub fn run(&self, cache: &mut DirectMappedCache, rng: &mut MachineRng, accesses: u64) {
        let lines_per_page = 1u64 << (self.page_shift - self.line_shift);
        for _ in 0..accesses {
            let draw = rng.next_u64();
            let pick = ((draw & 0x3ff) * 1000) >> 10;
            let class = if pick < self.mix.hot_accesses {
                0
            } else if pick < self.mix.hot_accesses + self.mix.warm_accesses {
                1
            } else {
                2
            };
            let pages = &self.classes[class];
            if pages.is_empty() {
                continue;
            }
            let pfn = pages[((((draw >> 10) & 0xffff_ffff) * pages.len() as u64) >> 32) as usize];
            let line = (draw >> 42) & (lines_per_page - 1);
            cache.access((pfn << self.page_shift) | (line << self.line_shift));
        }
    }
}

/// The conflict rate of `mix` over a heap whose virtual page `v` is PFN
/// `pfns[v]`, in a direct-mapped cache of `cache` bytes with `line`-byte
/// lines: a warm-up of a quarter of `accesses`, then `accesses` counted,
/// the stream drawn from `stream_seed` (the same seed gives the same
/// stream, so two placements differ only in where the pages are).
pub fn conflict_rate(
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
        let rate = |pfns: &[u64]| conflict_rate(pfns, mix, 12, geometry, 200_000, 5).unwrap();
        let (fresh, aliased) = (rate(&contiguous), rate(&aliased));
        assert!(
            aliased > 10.0 * fresh,
            "contiguous {fresh}, aliased {aliased}"
        );
    }
}
