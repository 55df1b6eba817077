//! Probes of the allocation orders (`aging_probes orders`).
//!
//! Each probe repeats the shuffle-cache heap benchmark on one 512 MiB
//! machine (8x a 64 MiB cache, heap 3x the cache) and varies the orders of
//! what it allocates, as current Linux can:
//!
//! - the heap's folios: order 0, or order 9 (THP) falling back to order 0
//!   when no order-9 block is free (do_huge_pmd_anonymous_page(); no
//!   compaction is modelled, so fewer THPs succeed than on a real machine);
//! - the page cache's folios: order 0 (ext4 in 6.12 sets no large folios),
//!   or readahead's ramp: each window's folios two orders above the last,
//!   capped at log2 of the window (page_cache_ra_order(); 5 for the default
//!   128 KiB window, 9 = MAX_PAGECACHE_ORDER for a 2 MiB one), smaller where
//!   the file index is not aligned, order 0 when the folio cannot be had
//!   (readahead's `__GFP_NORETRY` and its order-0 fallback);
//! - the helper processes stay at order 0: a helper of a quarter read is
//!   256 KiB here, too small for a PMD-mapped THP.
//!
//! Reclaim here frees the read-once folios oldest first whenever free
//! memory falls below the zones' low watermarks, up to their high ones (a
//! streaming read's pages leave the inactive file list in insertion
//! order), and a failed order-0 allocation reclaims a batch of 32 pages
//! first (`SWAP_CLUSTER_MAX`). The reclaim layer (`pageframe::reclaim`)
//! does this faithfully for order-0 pages; this probe needs folios of any
//! order, which its page cache does not hold.
//!
//! Printed per probe: the mean over runs 9–16 of the conflict rate, colour
//! sharers (random placement: 2.62) and the THP count, and the largest
//! colour-bit bias seen (`cache_model::colour_bit_bias`; 0.5 would put the
//! heap on half the colours, which is what 16% needs).

use pageframe::machine::{apply_cmdline, MemorySideCache};
use pageframe::{AllocOptions, CpuId, Gfp, LocalPageAllocator, MachineDesc, MachineRng};
use pageframe::{NodeId, Order, Page, Pfn};
use pageframe_lab::cache_model::{colour_bit_bias, colour_sharers};
use pageframe_lab::workloads::heap::{conflict_rate, HeapMix};
use std::collections::VecDeque;

const CACHE: u64 = 64 << 20;
const LINE: u64 = 64;
const ACCESSES: u64 = 12_000_000;
const RUNS: u64 = 16;
/// Order of a PMD-mapped THP and of the largest page-cache folio.
const PMD_ORDER: u8 = 9;
/// `SWAP_CLUSTER_MAX`: pages direct reclaim frees per attempt.
const SWAP_CLUSTER_MAX: u64 = 32;

/// What a probe allocates.
#[derive(Clone, Copy, Debug)]
struct Probe {
    heap_order: u8,
    /// The cap of readahead's folio order (0: order-0 page cache).
    readahead_max_order: u8,
    shuffle: bool,
}

/// The machine's allocator, the read-once folios oldest first, and the
/// zones' summed low and high watermarks.
struct Machine<'a> {
    allocator: &'a LocalPageAllocator,
    page_cache: VecDeque<(u64, u8)>,
    low: u64,
    high: u64,
}

impl Machine<'_> {
    fn free(&self, pfn: u64, order: u8) {
        let cpu = self.allocator.cpu(CpuId(0)).expect("cpu 0");
        cpu.free_pages(Page::from_pfn(Pfn(pfn)), Order(order))
            .expect("a block this probe allocated");
    }

    /// Frees the oldest folios until `target` pages are free; false when
    /// the page cache is empty.
    fn reclaim_to(&mut self, target: u64) -> bool {
        while self.allocator.nr_free_pages() < target {
            let Some((pfn, order)) = self.page_cache.pop_front() else {
                return false;
            };
            self.free(pfn, order);
        }
        true
    }

    /// A block of `order`: kswapd's reclaim below the low watermark first;
    /// an order-0 failure reclaims a batch and retries, a higher order
    /// gives up (the caller falls back to order 0).
    fn alloc(&mut self, order: u8, gfp: Gfp) -> Option<u64> {
        if self.allocator.nr_free_pages() < self.low {
            self.reclaim_to(self.high);
        }
        let cpu = self.allocator.cpu(CpuId(0)).expect("cpu 0");
        loop {
            match cpu.alloc_pages(gfp, Order(order), NodeId(0)) {
                Ok(page) => return Some(page.pfn().0),
                Err(_) if order > 0 => return None,
                Err(_) => {
                    let target = self.allocator.nr_free_pages() + SWAP_CLUSTER_MAX;
                    assert!(self.reclaim_to(target), "out of memory");
                }
            }
        }
    }

    /// `pages` pages in folios of `order` where one is free, order 0
    /// elsewhere; the blocks in virtual order.
    fn alloc_anon(&mut self, pages: u64, order: u8) -> Vec<(u64, u8)> {
        let thp = Gfp::HIGHUSER_MOVABLE
            .union(Gfp::COMP)
            .union(Gfp::NOWARN)
            .difference(Gfp::DIRECT_RECLAIM);
        let mut blocks = Vec::new();
        let mut got = 0;
        while got < pages {
            if order > 0 && pages - got >= 1 << order {
                if let Some(pfn) = self.alloc(order, thp) {
                    blocks.push((pfn, order));
                    got += 1 << order;
                    continue;
                }
            }
            let fallback = if order > 0 { 1 << order } else { 1 };
            for _ in 0..fallback.min(pages - got) {
                let pfn = self.alloc(0, Gfp::HIGHUSER_MOVABLE).expect("order 0");
                blocks.push((pfn, 0));
                got += 1;
            }
        }
        blocks
    }

    /// One sequential read of `pages` pages from file index `index`, in
    /// readahead windows whose folio order ramps up to `max_order`.
    fn read(&mut self, mut index: u64, pages: u64, max_order: u8) {
        let readahead = Gfp::HIGHUSER_MOVABLE
            .union(Gfp::COMP)
            .union(Gfp::NORETRY)
            .union(Gfp::NOWARN);
        let (mut got, mut ramp) = (0, 0u8);
        while got < pages {
            let aligned = if index == 0 {
                PMD_ORDER
            } else {
                index.trailing_zeros() as u8
            };
            let order = ramp.min(aligned);
            ramp = (ramp + 2).min(max_order);
            let folio = match order {
                0 => None,
                _ => self.alloc(order, readahead).map(|pfn| (pfn, order)),
            };
            let folio = folio
                .unwrap_or_else(|| (self.alloc(0, Gfp::HIGHUSER_MOVABLE).expect("order 0"), 0));
            self.page_cache.push_back(folio);
            got += 1 << folio.1;
            index += 1 << folio.1;
        }
    }
}

/// Runs one probe; prints its per-run samples and summary.
fn probe(probe: Probe, seed: u64) {
    let memory = 8 * CACHE;
    let mut desc = MachineDesc::uniform(memory, 1, 2).expect("machine");
    desc.memory_side_cache = Some(MemorySideCache {
        size: CACHE,
        line: LINE,
        per_node: false,
    });
    apply_cmdline(
        &mut desc,
        &format!("page_alloc.shuffle={}", probe.shuffle as u8),
    )
    .expect("cmdline");
    let allocator =
        LocalPageAllocator::boot_seeded(&desc, AllocOptions::default(), seed).expect("boot");
    let shift = allocator.layout().page_shift as u32;
    let (cache_pages, memory_pages) = (CACHE >> shift, memory >> shift);
    let heap_pages = 3 * cache_pages;
    // As the reclaim layer's aging workload: reads of 1/512 of the memory,
    // as much as the memory per run, a helper of a quarter read per read.
    let chunk = memory_pages / 512;
    let marks = (0..)
        .map_while(|zone| allocator.zone_free_pages(zone))
        .fold((0, 0), |(low, high), (_, marks)| {
            (low + marks.low, high + marks.high)
        });
    let mut machine = Machine {
        allocator: &allocator,
        page_cache: VecDeque::new(),
        low: marks.0,
        high: marks.1,
    };
    let mut rng = MachineRng::new(seed ^ 0xa9e);
    let (mut sum_rate, mut sum_sharers, mut sum_thp, mut max_bias, mut aged) =
        (0.0, 0.0, 0.0, 0.0f64, 0.0);
    let mut samples = Vec::new();
    for run in 0..RUNS {
        let heap = machine.alloc_anon(heap_pages, probe.heap_order);
        let pfns: Vec<u64> = heap
            .iter()
            .flat_map(|&(pfn, order)| pfn..pfn + (1 << order))
            .collect();
        let rate = conflict_rate(&pfns, HeapMix::default(), shift, (CACHE, LINE), ACCESSES)
            .expect("cache geometry");
        let sharers = colour_sharers(&pfns, cache_pages);
        let bias = colour_bit_bias(&pfns, cache_pages);
        let thps = heap.iter().filter(|&&(_, order)| order > 0).count();
        samples.push(format!("{rate:.3}/{sharers:.2}"));
        if run >= RUNS / 2 {
            (sum_rate, sum_sharers, sum_thp) = (
                sum_rate + rate,
                sum_sharers + sharers,
                sum_thp + thps as f64,
            );
            max_bias = max_bias.max(bias);
            aged += 1.0;
        }
        // Exit: the heap freed in virtual order (zap_pte_range()).
        for (pfn, order) in heap {
            machine.free(pfn, order);
        }
        let mut read = 0;
        while read < memory_pages {
            machine.read(rng.below(1 << 20), chunk, probe.readahead_max_order);
            read += chunk;
            for (pfn, order) in machine.alloc_anon(chunk / 4, 0) {
                machine.free(pfn, order);
            }
        }
    }
    println!(
        "{probe:?} seed {seed}: aged conflict {:.3}, sharers {:.2}, THPs {:.0}, max colour-bit bias {max_bias:.3}\n  runs (conflict/sharers): {}",
        sum_rate / aged,
        sum_sharers / aged,
        sum_thp / aged,
        samples.join(" ")
    );
}

/// Runs every order probe on `seed`, without and with shuffle.
pub fn run(seed: u64) {
    for shuffle in [false, true] {
        for (heap_order, readahead_max_order) in [
            (0, 0),
            (0, 5),
            (0, PMD_ORDER),
            (PMD_ORDER, 0),
            (PMD_ORDER, 5),
            (PMD_ORDER, PMD_ORDER),
        ] {
            let config = Probe {
                heap_order,
                readahead_max_order,
                shuffle,
            };
            probe(config, seed);
        }
    }
}
