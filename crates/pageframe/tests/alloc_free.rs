//! Allocation and free through the public API: buddy split and merge (upper
//! halves to the list head, everything merging back to the boot state),
//! every order from 0 to MAX_PAGE_ORDER, exhaustion to `NoMemory` and back
//! (including pages parked on another CPU's per-CPU list, which the slow path
//! drains), and the watermarks each GFP class stops at.

mod common;

use common::{
    allocate_until_oom, assert_block_in_memory, assert_conserved, boot, one_node, pages_held,
    vmstat_value,
};
use pageframe::{
    proc, AllocError, AllocOptions, CpuId, Gfp, LocalPageAllocator, NodeId, Order, Page, Pfn,
};
use std::collections::BTreeMap;

/// Asserts that no two blocks overlap.
fn assert_disjoint(blocks: &[(Page, Order)]) {
    let mut sorted = blocks.to_vec();
    sorted.sort_unstable();
    for pair in sorted.windows(2) {
        let ((first, order), (second, _)) = (pair[0], pair[1]);
        assert!(
            first.pfn().0 + order.nr_pages() <= second.pfn().0,
            "blocks at {} and {} overlap",
            first.pfn(),
            second.pfn()
        );
    }
}

/// Frees every block on `cpu`, drains all per-CPU lists and checks the
/// buddy lists are back to `expected_buddyinfo`.
fn free_all_and_expect(
    allocator: &LocalPageAllocator,
    cpu: CpuId,
    pages: &[(Page, Order)],
    expected_buddyinfo: &str,
) {
    let handle = allocator.cpu(cpu).unwrap();
    let mut left = pages_held(pages);
    for &(page, order) in pages {
        handle.free_pages(page, order).unwrap();
        left -= order.nr_pages();
        assert_conserved(allocator, left);
    }
    allocator.drain_all_pages();
    assert_conserved(allocator, 0);
    assert_eq!(proc::buddyinfo(allocator), expected_buddyinfo);
}

#[test]
fn split_puts_upper_halves_at_the_list_head_and_free_merges_them_back() {
    // 64 MiB: sixteen order-10 blocks, freed at boot to the tail in PFN order.
    //
    //  order-4 request at PFN 0 splits the first order-10 block:
    //  |0 ret|16 o4|32 o5|64 o6|128 o7|256 o8|512 o9          |
    //  each upper half goes to the head of its order's list.
    let allocator = boot(&one_node(64, 2));
    let boot_buddyinfo = proc::buddyinfo(&allocator);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let first = cpu.alloc_pages(Gfp::MOVABLE, Order(4), NodeId(0)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(first.pfn(), Pfn(0));
    let split: Vec<u64> = vec![0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 15];
    assert_eq!(allocator.zone_snapshots()[0].nr_free_blocks, split);

    let mut held = vec![(first, Order(4))];
    for order in 4..=8u8 {
        let page = cpu
            .alloc_pages(Gfp::MOVABLE, Order(order), NodeId(0))
            .unwrap();
        allocator.check_invariants().unwrap();
        assert_eq!(
            page.pfn(),
            Pfn(1 << order),
            "order {order} did not come from the head"
        );
        held.push((page, Order(order)));
    }
    let remaining: Vec<u64> = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 15];
    assert_eq!(allocator.zone_snapshots()[0].nr_free_blocks, remaining);
    assert_conserved(&allocator, 512);

    // Orders 4..8 bypass the per-CPU lists: each free merges at once.
    for (freed, &(page, order)) in held.iter().enumerate() {
        cpu.free_pages(page, order).unwrap();
        allocator.check_invariants().unwrap();
        let still_held = pages_held(&held[freed + 1..]);
        assert_conserved(&allocator, still_held);
    }
    assert_eq!(proc::buddyinfo(&allocator), boot_buddyinfo);
}

#[test]
fn every_order_up_to_max_allocates_an_aligned_block_that_merges_back() {
    let allocator = boot(&one_node(64, 2));
    let boot_buddyinfo = proc::buddyinfo(&allocator);
    let max_order = allocator.layout().max_order;
    assert_eq!(max_order, Order(10));
    for gfp in [Gfp::KERNEL, Gfp::MOVABLE, Gfp::KERNEL | Gfp::RECLAIMABLE] {
        let cpu = allocator.cpu(CpuId(1)).unwrap();
        let mut held = Vec::new();
        for order in (0..=max_order.0).map(Order) {
            let page = cpu.alloc_pages(gfp, order, NodeId(0)).unwrap();
            assert_block_in_memory(&allocator, page, order);
            held.push((page, order));
            assert_conserved(&allocator, pages_held(&held));
        }
        assert_disjoint(&held);
        free_all_and_expect(&allocator, CpuId(1), &held, &boot_buddyinfo);
    }
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    assert_eq!(
        cpu.alloc_pages(Gfp::KERNEL, Order(11), NodeId(0)),
        Err(AllocError::OrderTooLarge {
            order: Order(11),
            max: Order(10)
        })
    );
}

#[test]
fn trusted_frees_without_checks_still_split_and_merge() {
    let options = AllocOptions {
        vm_events: true,
        free_checks: false,
        ..AllocOptions::KERNEL
    };
    let allocator = LocalPageAllocator::boot_with(&one_node(16, 2), options).unwrap();
    let boot_buddyinfo = proc::buddyinfo(&allocator);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut held = Vec::new();
    for order in (0..=10).map(Order) {
        let page = cpu.alloc_pages(Gfp::MOVABLE, order, NodeId(0)).unwrap();
        assert_block_in_memory(&allocator, page, order);
        held.push((page, order));
        assert_conserved(&allocator, pages_held(&held));
    }
    assert_disjoint(&held);
    free_all_and_expect(&allocator, CpuId(1), &held, &boot_buddyinfo);
}

#[test]
fn exhausting_each_order_ends_in_no_memory_and_everything_comes_back() {
    // 16 MiB (4096 pages) keeps the invariant walk after every call cheap.
    let allocator = boot(&one_node(16, 2));
    let boot_buddyinfo = proc::buddyinfo(&allocator);
    let min = allocator.zone_snapshots()[0].watermarks.min;
    for order in (0..=10).map(Order) {
        let pages = allocate_until_oom(&allocator, CpuId(0), Gfp::KERNEL, order, NodeId(0));
        assert!(!pages.is_empty(), "no order-{order} block at all");
        let held: Vec<(Page, Order)> = pages.iter().map(|&page| (page, order)).collect();
        assert_disjoint(&held);
        assert_conserved(&allocator, pages_held(&held));
        // GFP_KERNEL stops at the min watermark: whatever is left, less the
        // pages an order-n block cannot use, is at or below it.
        let zone = &allocator.zone_snapshots()[0];
        assert!(
            zone.free < min + order.nr_pages(),
            "order {order}: {} pages free above min {min}",
            zone.free
        );
        free_all_and_expect(&allocator, CpuId(0), &held, &boot_buddyinfo);
    }
    assert_eq!(vmstat_value(&allocator, "pgalloc_fail"), 11);
}

#[test]
fn order_ten_exhaustion_counts_blocks_exactly() {
    // Four order-10 blocks, min watermark 128: an order-10 request needs
    // free - 1023 > 128, so only while two blocks are free: three succeed.
    let allocator = boot(&one_node(16, 1));
    assert_eq!(allocator.zone_snapshots()[0].watermarks.min, 128);
    let pages = allocate_until_oom(&allocator, CpuId(0), Gfp::KERNEL, Order(10), NodeId(0));
    assert_eq!(pages.len(), 3);
    assert_eq!(allocator.zone_snapshots()[0].free, 1024);
}

#[test]
fn slow_path_drains_pages_parked_on_another_cpu_and_memory_comes_back() {
    let allocator = boot(&one_node(16, 2));
    let boot_buddyinfo = proc::buddyinfo(&allocator);
    let zone = &allocator.zone_snapshots()[0];
    let (min, managed, batch) = (zone.watermarks.min, zone.managed, zone.pcp[1].batch as u64);
    let high_cpu1 = zone.pcp[1].high_min;

    // CPU 1 allocates and frees pages: they stay on its per-CPU list.
    let parked_count = high_cpu1 - 10;
    let cpu1 = allocator.cpu(CpuId(1)).unwrap();
    let parked: Vec<Page> = (0..parked_count)
        .map(|_| cpu1.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap())
        .collect();
    for &page in &parked {
        cpu1.free_pages(page, Order(0)).unwrap();
        allocator.check_invariants().unwrap();
    }
    let on_cpu1 = allocator.zone_snapshots()[0].pcp[1].count;
    assert!(
        on_cpu1 >= parked_count,
        "only {on_cpu1} pages parked on CPU 1"
    );

    // CPU 0 exhausts memory; before failing, the slow path drains CPU 1.
    let drained_before = vmstat_value(&allocator, "pcp_drain_pages");
    let mut first_run = 0;
    for round in 0..2 {
        let pages = allocate_until_oom(&allocator, CpuId(0), Gfp::KERNEL, Order(0), NodeId(0));
        let zone = &allocator.zone_snapshots()[0];
        assert_eq!(zone.pcp_pages(), 0, "a per-CPU list kept pages at OOM");
        assert!(
            zone.free <= min && zone.free + batch > min,
            "free {}",
            zone.free
        );
        assert_eq!(pages.len() as u64, managed - zone.free);
        if round == 0 {
            assert!(vmstat_value(&allocator, "pcp_drain_pages") >= drained_before + on_cpu1 as u64);
            first_run = pages.len();
        } else {
            assert_eq!(pages.len(), first_run, "memory not fully usable again");
        }
        let held: Vec<(Page, Order)> = pages.iter().map(|&page| (page, Order(0))).collect();
        free_all_and_expect(&allocator, CpuId(0), &held, &boot_buddyinfo);
    }
}

/// The zone's free pages after allocating order-0 pages with `gfp` until
/// it fails; `NoMemory` is the only acceptable error.
fn free_after_exhausting(allocator: &LocalPageAllocator, gfp: Gfp, held: &mut Vec<Page>) -> u64 {
    held.extend(allocate_until_oom(
        allocator,
        CpuId(0),
        gfp,
        Order(0),
        NodeId(0),
    ));
    assert_conserved(allocator, held.len() as u64);
    allocator.zone_snapshots()[0].free
}

#[test]
fn each_gfp_class_stops_at_its_own_watermark() {
    let allocator = boot(&one_node(64, 2));
    let zone = &allocator.zone_snapshots()[0];
    let (min, low, batch) = (
        zone.watermarks.min,
        zone.watermarks.low,
        zone.pcp[0].batch as u64,
    );
    assert_eq!((min, low), (256, 320));
    let mut held = Vec::new();
    // Linux 6.12 doubles order-0 refills while allocations come without
    // frees (alloc_factor), up to batch << CONFIG_PCP_BATCH_SCALE_MAX: the
    // refill that passed the watermark last can take that many pages.
    let refill = batch << 5;
    assert_eq!(allocator.zone_snapshots()[0].pcp[0].alloc_factor, 0);
    let floor_ok = |free: u64, floor: u64| free <= floor && free + refill > floor;

    // GFP_NOWAIT may not reclaim and has no reserve: it stops at min.
    let free = free_after_exhausting(&allocator, Gfp::NOWAIT, &mut held);
    assert!(floor_ok(free, min), "NOWAIT left {free}, min {min}");
    assert_eq!(allocator.zone_snapshots()[0].pcp[0].alloc_factor, 5);

    // GFP_KERNEL drains the per-CPU lists, then stops at min too.
    let free = free_after_exhausting(&allocator, Gfp::KERNEL, &mut held);
    assert!(floor_ok(free, min), "KERNEL left {free}, min {min}");
    assert_eq!(allocator.zone_snapshots()[0].pcp_pages(), 0);

    // __GFP_HIGH may use half of the min reserve.
    let high_floor = min - min / 2;
    let free = free_after_exhausting(&allocator, Gfp::KERNEL | Gfp::HIGH, &mut held);
    assert!(free < min - batch, "__GFP_HIGH got nothing below min");
    assert!(
        floor_ok(free, high_floor),
        "HIGH left {free}, floor {high_floor}"
    );

    // GFP_ATOMIC (high priority and non-blocking) another quarter of that.
    let atomic_floor = high_floor - high_floor / 4;
    let free = free_after_exhausting(&allocator, Gfp::ATOMIC, &mut held);
    assert!(
        free <= atomic_floor && free + 2 * refill > atomic_floor,
        "ATOMIC left {free}, floor {atomic_floor}"
    );

    // Below the reserves an ordinary allocation fails outright.
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    assert_eq!(
        cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)),
        Err(AllocError::NoMemory { order: Order(0) })
    );
    allocator.check_invariants().unwrap();

    // __GFP_MEMALLOC ignores the watermarks and takes the last page.
    held.extend(allocate_until_oom(
        &allocator,
        CpuId(0),
        Gfp::KERNEL | Gfp::MEMALLOC,
        Order(0),
        NodeId(0),
    ));
    let zone = &allocator.zone_snapshots()[0];
    assert_eq!((zone.free, zone.pcp_pages()), (0, 0));
    assert_conserved(&allocator, zone.managed);

    let by_pfn: BTreeMap<Pfn, Page> = held.iter().map(|&page| (page.pfn(), page)).collect();
    assert_eq!(
        by_pfn.len() as u64,
        zone.managed,
        "a page was handed out twice"
    );
    let pages: Vec<Page> = by_pfn.into_values().collect();
    cpu.free_pages_bulk(&pages).unwrap();
    allocator.drain_all_pages();
    assert_conserved(&allocator, 0);
}
