//! The aging workload: the first benchmark run on a fresh machine places
//! its heap exactly as the bare allocator does; later runs build their
//! heap from memory that reclaim and exits gave back, no longer in
//! address order; runs are deterministic per seed and conserve pages.

mod common;

use common::{assert_conserved, boot, one_node};
use pageframe::reclaim::ReclaimEvent;
use pageframe::reclaim::{AgingConfig, AgingWorkload};
use pageframe::{CpuId, Gfp, NodeId, Order};

const MEMORY_MIB: u64 = 64;
const PAGES: u64 = (MEMORY_MIB << 20) >> 12;

fn config() -> AgingConfig {
    AgingConfig::for_machine(3 * PAGES / 8, PAGES, CpuId(0))
}

/// Fraction of consecutive heap pages that are physically adjacent.
fn adjacency(pfns: &[u64]) -> f64 {
    let adjacent = pfns.windows(2).filter(|w| w[1] == w[0] + 1).count();
    adjacent as f64 / (pfns.len() - 1) as f64
}

fn heaps(seed: u64, runs: usize) -> Vec<Vec<u64>> {
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let mut workload = AgingWorkload::new(&allocator, config(), seed).unwrap();
    let heaps = (0..runs)
        .map(|_| workload.benchmark_run(|pfns| pfns.to_vec()).unwrap())
        .collect();
    let mm = workload.mm();
    mm.check_invariants().unwrap();
    assert_conserved(&allocator, mm.nr_file_pages() + mm.nr_anon_pages());
    assert_eq!(workload.runs(), runs as u64);
    heaps
}

#[test]
fn config_derives_from_the_machine() {
    let config = config();
    assert_eq!(config.heap_pages, 6144);
    assert_eq!(config.dataset_files, 16);
    assert_eq!(config.dataset_file_pages, 2 * PAGES / 16);
    assert_eq!(config.read_pages_per_run, PAGES);
    assert_eq!(config.chunk_pages, 2 * PAGES / 16 / 64);
}

#[test]
fn the_first_run_is_placed_as_on_a_fresh_machine() {
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let fresh: Vec<u64> = (0..config().heap_pages)
        .map(|_| {
            cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NodeId(0))
                .unwrap()
                .pfn()
                .0
        })
        .collect();
    let heaps = heaps(7, 1);
    assert_eq!(heaps[0], fresh);
    assert!(adjacency(&heaps[0]) > 0.99);
}

#[test]
fn aging_scatters_the_heap_and_is_deterministic() {
    let runs = 8;
    let first = heaps(7, runs);
    assert_eq!(heaps(7, runs), first);
    assert_ne!(heaps(8, runs)[runs - 1], first[runs - 1]);
    let fresh = adjacency(&first[0]);
    let aged = adjacency(&first[runs - 1]);
    assert!(
        aged < fresh * 0.9,
        "adjacency fresh {fresh:.3}, aged {aged:.3}"
    );
}

#[test]
fn aging_reclaims_through_kswapd_and_directly() {
    let allocator = boot(&one_node(MEMORY_MIB, 2));
    let mut workload = AgingWorkload::new(&allocator, config(), 3).unwrap();
    for _ in 0..3 {
        workload.benchmark_run(|_| ()).unwrap();
        workload.mm().check_invariants().unwrap();
    }
    let counters = workload.mm().counters();
    assert!(counters.get(ReclaimEvent::PgstealKswapd) > 0);
    assert!(counters.get(ReclaimEvent::Pageoutrun) > 0);
    assert!(counters.get(ReclaimEvent::NrWritten) > 0);
    let info = workload.mm().meminfo();
    assert!(info.cached > info.total / 2, "{info:?}");
    assert_eq!(info.anon_pages, 0);
}
