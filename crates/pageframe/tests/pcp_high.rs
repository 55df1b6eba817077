//! The adaptive per-CPU `high` of Linux 6.12 at work on whole machines:
//! after a phase that held and freed many order-0 pages, order-9 frees no
//! longer drain every time (the drain is sized by the pages freed in a
//! row, which makes room); the vmstat worker's decay brings `high` back to
//! `high_min` and drains what is above it; and `high` never leaves
//! `high_min..=high_max` once used.

mod common;

use common::{assert_conserved, boot, one_node, vmstat_value};
use pageframe::{CpuId, Gfp, LocalPageAllocator, NodeId, Order, PcpSnapshot};

fn pcp_of(allocator: &LocalPageAllocator) -> PcpSnapshot {
    allocator.zone_snapshots()[0].pcp[0]
}

/// Holds `pages` order-0 pages on CPU 0, then frees them one at a time.
fn churn_order0(allocator: &LocalPageAllocator, pages: usize) {
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let held: Vec<_> = (0..pages)
        .map(|_| cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap())
        .collect();
    for page in held {
        cpu.free_pages(page, Order(0)).unwrap();
    }
    allocator.check_invariants().unwrap();
}

/// Drains and refills of `pairs` order-9 alloc+free pairs on CPU 0.
fn order9_pairs(allocator: &LocalPageAllocator, pairs: usize) -> (u64, u64) {
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let (drained, refills) = (
        vmstat_value(allocator, "pcp_drain_pages"),
        vmstat_value(allocator, "pcp_refill"),
    );
    for _ in 0..pairs {
        let page = cpu.alloc_pages(Gfp::KERNEL, Order(9), NodeId(0)).unwrap();
        cpu.free_pages(page, Order(9)).unwrap();
        allocator.check_invariants().unwrap();
    }
    (
        vmstat_value(allocator, "pcp_drain_pages") - drained,
        vmstat_value(allocator, "pcp_refill") - refills,
    )
}

#[test]
fn order9_pairs_after_an_order0_phase_rarely_drain() {
    // 1 GiB, 2 CPUs: high_min 643. A fresh first pair refills two blocks,
    // and its free (1 024 pages listed, high 643 + 63) drains the 512
    // pages freed in a row; the block left serves every later pair.
    let fresh = boot(&one_node(1024, 2));
    assert_eq!(pcp_of(&fresh).high_min, 643);
    assert_eq!(order9_pairs(&fresh, 1), (512, 1), "first pair");
    assert_eq!(
        order9_pairs(&fresh, 200),
        (0, 0),
        "fresh pairs reuse the list"
    );

    // The order-0 phase raises high to high_max and leaves the lists full.
    let aged = boot(&one_node(1024, 2));
    churn_order0(&aged, 1 << 16);
    let full = pcp_of(&aged);
    assert!(
        full.count + 512 >= full.high,
        "the lists are not full: {full:?}"
    );
    // The first pair's free reaches high: one drain, sized by the pages
    // freed in a row (the order-9 block plus order-0 pages), which leaves
    // room for the pairs that follow.
    let (drained, refills) = order9_pairs(&aged, 1);
    assert_eq!(refills, 1);
    assert!(drained >= 1024, "drained {drained}");
    // Later drains come only when a refill of two blocks meets full lists:
    // twice in 200 pairs, where sizing drains by a doubling factor (6.1)
    // drained the freed block on every pair.
    let (drained, refills) = order9_pairs(&aged, 200);
    assert!(
        refills <= 2 && drained <= 2 * 2016,
        "{refills} refills, {drained} drained"
    );
    assert_conserved(&aged, 0);
}

#[test]
fn decay_brings_high_back_to_high_min_and_drains_above_it() {
    let allocator = boot(&one_node(256, 2));
    churn_order0(&allocator, 20_000);
    let before = pcp_of(&allocator);
    assert_eq!(before.high, before.high_max, "the churn did not raise high");
    assert!(before.count > before.high_min);
    let mut steps = 0;
    while allocator.decay_pcp_high(CpuId(0)).unwrap() {
        let pcp = pcp_of(&allocator);
        allocator.check_invariants().unwrap();
        assert!(pcp.high >= pcp.high_min && pcp.count <= pcp.high, "{pcp:?}");
        steps += 1;
        assert!(steps < 100, "decay does not end");
    }
    let after = pcp_of(&allocator);
    assert_eq!(after.high, after.high_min);
    assert!(after.count <= after.high_min);
    // Each step takes an eighth: from 4096 to 320 takes about 20 steps.
    assert!((15..=30).contains(&steps), "{steps} steps");
    // CPU 1 never used its lists: nothing to decay.
    assert_eq!(allocator.decay_pcp_high(CpuId(1)), Ok(false));
    assert!(allocator.decay_pcp_high(CpuId(7)).is_err());
    allocator.drain_all_pages();
    assert_conserved(&allocator, 0);
}
