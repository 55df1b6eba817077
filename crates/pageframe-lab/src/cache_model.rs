//! A direct-mapped memory-side cache in front of memory, and a bandwidth
//! model that turns its counts into a run time.
//!
//! The cache is what shuffle-free-memory.txt is about: DRAM ("near memory")
//! caching persistent memory ("far memory"), or HBM caching DRAM, indexed by
//! physical address and direct-mapped, so two physical lines whose addresses
//! differ by a multiple of the cache size evict each other.
//!
//! ```text
//!  physical address:  | tag ...          | set index      | line offset |
//!                                         <- log2(sets) -> <- log2(line) ->
//!  tags[set] = tag + 1 of the line held (0: the set is empty), 32 bits
//! ```
//!
//! Counts: every access is a hit or a miss; a miss that evicts a valid line
//! of another address is also a conflict miss (a miss into an empty set is a
//! cold miss). Invariant: `hits + misses == accesses`,
//! `conflict_misses <= misses`.
//!
//! Speed: one shift, one mask, one load and compare per access; the bench
//! `cache_model` shows ≥ 200 million accesses a second on one core.

/// One direct-mapped cache.
#[derive(Clone, Debug)]
pub struct DirectMappedCache {
    tags: Vec<u32>,
    set_mask: u64,
    set_bits: u32,
    line_shift: u32,
    stats: CacheStats,
}

/// What a cache counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Accesses that found their line.
    pub hits: u64,
    /// Accesses that did not.
    pub misses: u64,
    /// Misses that evicted a valid line of another address.
    pub conflict_misses: u64,
}

impl CacheStats {
    /// Every access counted.
    pub fn accesses(&self) -> u64 {
        self.hits + self.misses
    }

    /// Conflict misses per access (the document's "conflict rate").
    pub fn conflict_rate(&self) -> f64 {
        ratio(self.conflict_misses, self.accesses())
    }

    /// Misses per access.
    pub fn miss_rate(&self) -> f64 {
        ratio(self.misses, self.accesses())
    }
}

impl std::ops::AddAssign for CacheStats {
    fn add_assign(&mut self, other: CacheStats) {
        self.hits += other.hits;
        self.misses += other.misses;
        self.conflict_misses += other.conflict_misses;
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

impl DirectMappedCache {
    /// A cache of `size` bytes with lines of `line` bytes; both powers of two
    /// with `line <= size` (the hardware's sets are a power of two).
    pub fn new(size: u64, line: u64) -> Result<DirectMappedCache, String> {
        DirectMappedCache::check_geometry(size, line)?;
        let sets = size / line;
        Ok(DirectMappedCache {
            tags: vec![0; sets as usize],
            set_mask: sets - 1,
            set_bits: sets.trailing_zeros(),
            line_shift: line.trailing_zeros(),
            stats: CacheStats::default(),
        })
    }

    /// Whether a cache of `size` bytes with `line`-byte lines can be built.
    pub fn check_geometry(size: u64, line: u64) -> Result<(), String> {
        if !line.is_power_of_two() || !size.is_power_of_two() || line > size {
            return Err(format!(
                "cache size {size} and line {line} must be powers of two, line <= size"
            ));
        }
        Ok(())
    }

    /// Bytes per line.
    pub fn line_bytes(&self) -> u64 {
        1 << self.line_shift
    }

    /// Capacity in bytes.
    pub fn size_bytes(&self) -> u64 {
        (self.set_mask + 1) << self.line_shift
    }

    /// One access to physical address `addr` (below 2^32 cache sizes); true
    /// on a hit. Branch-free, so that the host overlaps the tag loads of
    /// consecutive accesses.
    #[inline(always)]
    pub fn access(&mut self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        let set = (line & self.set_mask) as usize;
        let tag = ((line >> self.set_bits) as u32).wrapping_add(1);
        // The mask keeps `set` below tags.len(), so the bounds check folds.
        let slot = &mut self.tags[set];
        let old = *slot;
        let hit = (old == tag) as u64;
        self.stats.hits += hit;
        self.stats.misses += 1 - hit;
        self.stats.conflict_misses += (1 - hit) & (old != 0) as u64;
        *slot = tag;
        hit == 1
    }

    /// The counts so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Zeroes the counts, keeping the contents (to measure after a warm-up).
    pub fn reset_stats(&mut self) {
        self.stats = CacheStats::default();
    }

    /// Empties the cache and zeroes the counts.
    pub fn clear(&mut self) {
        self.tags.fill(0);
        self.stats = CacheStats::default();
    }
}

/// Page colours: how many other pages of a set share each page's cache
/// colour (its page-sized slice of a direct-mapped cache of `cache_pages`
/// pages, `pfn % cache_pages`), averaged over the pages:
/// `sum(h * (h - 1)) / sum(h)` over the colours' page counts `h`. Pages that
/// collide in the cache are what conflict misses come from; a set placed
/// contiguously, `k` cache sizes long, has `k - 1` sharers per page.
pub fn colour_sharers(pfns: &[u64], cache_pages: u64) -> f64 {
    if pfns.is_empty() || cache_pages == 0 {
        return 0.0;
    }
    let mut per_colour = vec![0u64; cache_pages as usize];
    for &pfn in pfns {
        per_colour[(pfn % cache_pages) as usize] += 1;
    }
    let pairs: u64 = per_colour.iter().map(|&h| h * h.saturating_sub(1)).sum();
    pairs as f64 / pfns.len() as f64
}

/// Colour-bit bias: over the colour bits of a cache of `cache_pages`
/// pages (a power of two; PFN bits below its log2), the largest distance
/// from 1/2 of the share of `pfns` with that bit set. Random or contiguous
/// placement gives about 0; a set confined to half the colours by one bit
/// (the upper halves of aligned blocks, say) gives 1/2.
pub fn colour_bit_bias(pfns: &[u64], cache_pages: u64) -> f64 {
    if pfns.is_empty() || !cache_pages.is_power_of_two() {
        return 0.0;
    }
    (0..cache_pages.trailing_zeros())
        .map(|bit| {
            let set = pfns.iter().filter(|&&pfn| (pfn >> bit) & 1 == 1).count();
            (set as f64 / pfns.len() as f64 - 0.5).abs()
        })
        .fold(0.0, f64::max)
}

/// The sharers [`colour_sharers`] expects of `pages` pages placed at random
/// among `memory_pages` (a whole number of caches of `cache_pages`): each
/// page's colour has `memory_pages / cache_pages - 1` other frames, each in
/// the set with probability `(pages - 1) / (memory_pages - 1)`.
pub fn random_colour_sharers(pages: u64, memory_pages: u64, cache_pages: u64) -> f64 {
    if memory_pages < 2 || cache_pages == 0 || pages == 0 {
        return 0.0;
    }
    let others = (memory_pages / cache_pages).saturating_sub(1) as f64;
    others * (pages - 1) as f64 / (memory_pages - 1) as f64
}

/// The memory-side cache of a whole machine as its description gives it:
/// one cache indexed by physical address, or one per node indexed by the
/// address within the node (HMAT describes caches per memory target).
#[derive(Clone, Debug)]
pub struct MachineCache {
    caches: Vec<DirectMappedCache>,
    /// (first byte, one past the last byte, cache index) per node, by address.
    nodes: Vec<(u64, u64, usize)>,
}

impl MachineCache {
    /// The caches of `layout` as `desc` describes them.
    pub fn new(
        layout: &pageframe::MachineLayout,
        desc: &pageframe::machine::MemorySideCache,
    ) -> Result<MachineCache, String> {
        let shift = layout.page_shift as u32;
        let mut nodes = Vec::new();
        for (index, node) in layout.nodes.iter().enumerate() {
            let present = node.zones.iter().flat_map(|zone| zone.present.iter());
            let start = present.clone().map(|range| range.start.0).min();
            let end = present.map(|range| range.end.0).max();
            if let (Some(start), Some(end)) = (start, end) {
                let cache = if desc.per_node { index } else { 0 };
                nodes.push((start << shift, end << shift, cache));
            }
        }
        nodes.sort_unstable();
        let count = if desc.per_node { layout.nodes.len() } else { 1 };
        let caches = (0..count)
            .map(|_| DirectMappedCache::new(desc.size, desc.line))
            .collect::<Result<_, _>>()?;
        Ok(MachineCache { caches, nodes })
    }

    /// One access to physical address `addr`; true on a hit.
    pub fn access(&mut self, addr: u64) -> bool {
        if self.caches.len() == 1 {
            return self.caches[0].access(addr);
        }
        let at = self.nodes.partition_point(|&(start, _, _)| start <= addr);
        match at.checked_sub(1).map(|at| self.nodes[at]) {
            Some((start, end, cache)) if addr < end => self.caches[cache].access(addr - start),
            _ => self.caches[0].access(addr),
        }
    }

    /// The counts of every cache, summed.
    pub fn stats(&self) -> CacheStats {
        let mut total = CacheStats::default();
        for cache in &self.caches {
            total += cache.stats();
        }
        total
    }

    /// The caches (one, or one per node).
    pub fn caches(&self) -> &[DirectMappedCache] {
        &self.caches
    }
}

/// Near- and far-memory bandwidths: what a hit and a miss cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandwidthModel {
    /// Bytes per second the near memory (the cache) delivers.
    pub near_bytes_per_s: f64,
    /// Bytes per second the far memory delivers.
    pub far_bytes_per_s: f64,
}

impl Default for BandwidthModel {
    /// DRAM in front of persistent memory, per socket: about 100 GB/s of
    /// DRAM and 10 GB/s of mixed read/write persistent memory.
    fn default() -> BandwidthModel {
        BandwidthModel {
            near_bytes_per_s: 100e9,
            far_bytes_per_s: 10e9,
        }
    }
}

impl BandwidthModel {
    /// Seconds to serve the counted accesses: a hit moves a line from near
    /// memory; a miss moves it from far memory and fills it into near memory
    /// (and a conflict miss writes the victim back to far memory, as the
    /// write-back cache must when the victim is dirty: STREAM's are).
    pub fn time_s(&self, stats: &CacheStats, line: u64) -> f64 {
        let line = line as f64;
        let near = line / self.near_bytes_per_s;
        let far = line / self.far_bytes_per_s;
        stats.hits as f64 * near
            + stats.misses as f64 * (far + near)
            + stats.conflict_misses as f64 * far
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_a_cache_size_apart_conflict() {
        let mut cache = DirectMappedCache::new(1 << 20, 64).unwrap();
        assert!(!cache.access(0));
        assert!(cache.access(63));
        assert!(!cache.access(1 << 20)); // same set, other tag: evicts
        assert!(!cache.access(0));
        let stats = cache.stats();
        assert_eq!(stats.hits, 1);
        assert_eq!(stats.misses, 3);
        assert_eq!(stats.conflict_misses, 2);
        assert_eq!(stats.accesses(), 4);
    }

    #[test]
    fn a_working_set_that_fits_only_misses_cold() {
        let mut cache = DirectMappedCache::new(1 << 16, 64).unwrap();
        for _ in 0..3 {
            for addr in (0..1 << 16).step_by(64) {
                cache.access(addr);
            }
        }
        let stats = cache.stats();
        assert_eq!(stats.conflict_misses, 0);
        assert_eq!(stats.misses, 1024);
        assert!(DirectMappedCache::new(3 << 10, 64).is_err());
    }

    #[test]
    fn per_node_caches_index_by_the_address_in_the_node() {
        let layout = pageframe::MachineDesc::uniform(256 << 20, 2, 2)
            .unwrap()
            .layout()
            .unwrap();
        let per_node = pageframe::machine::MemorySideCache {
            size: 1 << 20,
            line: 64,
            per_node: true,
        };
        let mut caches = MachineCache::new(&layout, &per_node).unwrap();
        assert_eq!(caches.caches().len(), 2);
        // Node 1 starts at 128 MiB: its first line maps to set 0 of cache 1
        // and does not evict node 0's line in cache 0.
        caches.access(0);
        caches.access(128 << 20);
        assert!(caches.access(0));
        assert_eq!(caches.stats().conflict_misses, 0);
        let whole = pageframe::machine::MemorySideCache {
            per_node: false,
            ..per_node
        };
        let mut cache = MachineCache::new(&layout, &whole).unwrap();
        cache.access(0);
        cache.access(128 << 20);
        assert!(!cache.access(0));
        assert_eq!(cache.stats().conflict_misses, 2);
    }

    /// A contiguous set k caches long has k - 1 sharers per page; a set
    /// on half the colours at double density has more than random
    /// placement's.
    #[test]
    fn colour_sharers_count_pages_of_the_same_colour() {
        let contiguous: Vec<u64> = (100..100 + 3 * 64).collect();
        assert_eq!(colour_sharers(&contiguous, 64), 2.0);
        let half: Vec<u64> = (0..6 * 64).filter(|pfn| pfn % 64 < 32).collect();
        assert_eq!(colour_sharers(&half, 64), 5.0);
        assert_eq!(colour_sharers(&[], 64), 0.0);
        let random = random_colour_sharers(3 * 64, 8 * 64, 64);
        assert!((random - 7.0 * 191.0 / 511.0).abs() < 1e-12, "{random}");
        assert!(random > 2.0 && random < 5.0);
    }

    /// Contiguous placement has no colour-bit bias; upper halves of
    /// aligned 8-page blocks have 1/2 (bit 2 always set).
    #[test]
    fn colour_bit_bias_finds_a_set_confined_by_one_bit() {
        let contiguous: Vec<u64> = (0..3 * 64).collect();
        assert_eq!(colour_bit_bias(&contiguous, 64), 0.0);
        let upper_halves: Vec<u64> = (0..6 * 64).filter(|pfn| pfn & 4 != 0).collect();
        assert_eq!(colour_bit_bias(&upper_halves, 64), 0.5);
        assert_eq!(colour_sharers(&upper_halves, 64), 5.0);
        assert_eq!(colour_bit_bias(&[], 64), 0.0);
        assert_eq!(colour_bit_bias(&contiguous, 48), 0.0);
    }

    #[test]
    fn misses_cost_more_than_hits() {
        let model = BandwidthModel::default();
        let hits = CacheStats {
            hits: 100,
            ..CacheStats::default()
        };
        let misses = CacheStats {
            misses: 100,
            conflict_misses: 100,
            ..CacheStats::default()
        };
        assert!(model.time_s(&misses, 64) > 10.0 * model.time_s(&hits, 64));
    }
}
