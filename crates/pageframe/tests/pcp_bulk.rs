//! Per-CPU lists and the bulk API. Per-CPU lists (Linux 6.12 sizing): a
//! refill takes one batch scaled by order and raises `high` by it, order-0
//! refills double while allocations come without frees, the count stays
//! below the `high` in force after every free and a drain leaves at least
//! a batch, a second free of orders 1..=3 in a row flushes the lists, and
//! `drain_pcp` empties exactly one CPU. Bulk API: only empty
//! slots are filled, the return value counts the populated prefix, every
//! batch size from 1 to 256 works, fewer pages come back under pressure,
//! node preference and masks are honoured, and a bulk free is one call.

mod common;

use common::{assert_conserved, assert_unchanged, boot, one_node, placement_of, vmstat_value, MIB};
use pageframe::PcpSnapshot;
use pageframe::{proc, CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Nodemask, Order, Page};
use std::collections::BTreeSet;

fn pcp_of(allocator: &LocalPageAllocator, cpu: usize) -> PcpSnapshot {
    allocator.zone_snapshots()[0].pcp[cpu]
}

#[test]
fn refill_takes_a_batch_scaled_by_order() {
    // 256 MiB: batch 15 (zone_batchsize), high_min = low watermark / 2
    // CPUs, high_max = an eighth of the zone / 2 CPUs, high 0 until used.
    let allocator = boot(&one_node(256, 2));
    let zone = &allocator.zone_snapshots()[0];
    let PcpSnapshot {
        batch,
        high,
        high_min,
        high_max,
        ..
    } = zone.pcp[0];
    assert_eq!(batch, 15);
    assert_eq!(high, 0);
    assert_eq!(high_min as u64, zone.watermarks.low / 2);
    assert_eq!(high_max as u64, zone.managed / 8 / 2);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut held = Vec::new();
    let mut expected_count = 0;
    // (order, blocks per refill): max(batch >> order, 2), and the THP order.
    for (order, refill_blocks) in [(0u8, 15u32), (1, 7), (3, 2), (9, 2)] {
        let refills = vmstat_value(&allocator, "pcp_refill");
        let page = cpu
            .alloc_pages(Gfp::KERNEL, Order(order), NodeId(0))
            .unwrap();
        allocator.check_invariants().unwrap();
        held.push((page, Order(order)));
        expected_count += (refill_blocks - 1) << order;
        assert_eq!(pcp_of(&allocator, 0).count, expected_count, "order {order}");
        assert_eq!(vmstat_value(&allocator, "pcp_refill"), refills + 1);
    }
    // Each refill raised high by a batch (the zone is above its high
    // watermark); the THP refill overshoots it, as in the kernel.
    let high = pcp_of(&allocator, 0).high;
    assert_eq!(high, high_min + 4 * batch);
    assert!(expected_count > high);
    for (page, order) in held {
        cpu.free_pages(page, order).unwrap();
        allocator.check_invariants().unwrap();
    }
    cpu.drain_pcp();
    assert_eq!(pcp_of(&allocator, 0).count, 0);
    assert_conserved(&allocator, 0);
}

#[test]
fn count_stays_below_high_drains_keep_a_batch_and_drain_pcp_is_per_cpu() {
    let allocator = boot(&one_node(256, 2));
    let boot_buddyinfo = proc::buddyinfo(&allocator);
    let PcpSnapshot {
        batch,
        high_min,
        high_max,
        ..
    } = pcp_of(&allocator, 0);
    let cpu0 = allocator.cpu(CpuId(0)).unwrap();
    let cpu1 = allocator.cpu(CpuId(1)).unwrap();

    // CPU 1 parks a few pages on its lists.
    let parked: Vec<Page> = (0..5)
        .map(|_| cpu1.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap())
        .collect();
    cpu1.free_pages_bulk(&parked).unwrap();
    let parked_count = pcp_of(&allocator, 1).count;
    assert_eq!(parked_count, batch);

    // Allocating only ever refills an empty list: the count stays under one
    // refill, which doubles with each refill up to batch << 5.
    let order1 = cpu0.alloc_pages(Gfp::KERNEL, Order(1), NodeId(0)).unwrap();
    let order2 = cpu0.alloc_pages(Gfp::KERNEL, Order(2), NodeId(0)).unwrap();
    cpu0.drain_pcp();
    let mut pages = Vec::new();
    let mut factors = Vec::new();
    // Past high_max, so that high stops growing and frees must drain.
    for at in 0..high_max + 4 * high_min {
        pages.push(cpu0.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap());
        if at % 64 == 0 {
            allocator.check_invariants().unwrap();
        }
        let pcp = pcp_of(&allocator, 0);
        assert!(pcp.count < batch << pcp.alloc_factor);
        if factors.last() != Some(&pcp.alloc_factor) {
            factors.push(pcp.alloc_factor);
        }
    }
    assert_eq!(factors, [1, 2, 3, 4, 5]);

    // Freeing: +1 per page until the count reaches the high in force, then
    // a drain of the pages freed in a row, at least a batch, that leaves at
    // least a batch behind (nr_pcp_free()).
    let drained_before = vmstat_value(&allocator, "pcp_drain_pages");
    let mut drains = 0;
    for (at, page) in pages.into_iter().enumerate() {
        let before = pcp_of(&allocator, 0);
        cpu0.free_pages(page, Order(0)).unwrap();
        if at % 64 == 0 {
            allocator.check_invariants().unwrap();
        }
        let after = pcp_of(&allocator, 0).count;
        assert!(after < before.high, "count {after} at high {}", before.high);
        if before.count + 1 < before.high {
            assert_eq!(after, before.count + 1);
        } else {
            let freed_in_a_row = (before.free_count + 1).min(batch << 5);
            let nr = freed_in_a_row.clamp(batch, before.high - batch);
            assert_eq!(after, before.count + 1 - nr, "drained {nr}");
            assert!(after >= batch && after <= before.high - batch);
            drains += 1;
        }
    }
    assert!(drains >= 2);
    assert!(vmstat_value(&allocator, "pcp_drain_pages") > drained_before);
    assert_eq!(
        pcp_of(&allocator, 1).count,
        parked_count,
        "CPU 1 was drained"
    );

    // drain_pcp empties one CPU only.
    allocator.drain_pcp(CpuId(1)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(pcp_of(&allocator, 1).count, 0);
    assert!(pcp_of(&allocator, 0).count >= batch);

    // One free of order 1 after order-0 frees keeps the lists; a second
    // free of orders 1..=3 in a row flushes them, up to batch << 5 pages
    // (free_high in free_unref_page_commit()).
    let before = pcp_of(&allocator, 0).count;
    cpu0.free_pages(order1, Order(1)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(pcp_of(&allocator, 0).count, before + 2);
    cpu0.free_pages(order2, Order(2)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(
        pcp_of(&allocator, 0).count,
        (before + 2 + 4).saturating_sub(batch << 5)
    );
    cpu0.drain_pcp();
    assert_conserved(&allocator, 0);
    assert_eq!(proc::buddyinfo(&allocator), boot_buddyinfo);
}

/// Asserts the slots hold distinct allocated order-0 pages.
fn assert_distinct(slots: &[Option<Page>]) -> Vec<Page> {
    let pages: Vec<Page> = slots.iter().flatten().copied().collect();
    let unique: BTreeSet<Page> = pages.iter().copied().collect();
    assert_eq!(unique.len(), pages.len(), "a page was handed out twice");
    pages
}

#[test]
fn bulk_fills_every_batch_size_from_1_to_256() {
    let allocator = boot(&one_node(64, 2));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    for size in 1..=256usize {
        let allocated_before = vmstat_value(&allocator, "pgalloc_normal");
        let mut slots = vec![None; size];
        let filled = cpu
            .alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut slots)
            .unwrap();
        assert_eq!(filled, size);
        let pages = assert_distinct(&slots);
        assert_eq!(pages.len(), size);
        assert_conserved(&allocator, size as u64);
        assert_eq!(
            vmstat_value(&allocator, "pgalloc_normal"),
            allocated_before + size as u64
        );
        cpu.free_pages_bulk(&pages).unwrap();
        assert_conserved(&allocator, 0);
    }
}

#[test]
fn bulk_fills_only_empty_slots_and_counts_the_populated_prefix() {
    let allocator = boot(&one_node(64, 2));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mine: Vec<Page> = (0..3)
        .map(|_| cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap())
        .collect();

    // Holes between pre-populated slots are filled; the others are kept.
    let mut slots = vec![
        Some(mine[0]),
        None,
        Some(mine[1]),
        None,
        None,
        Some(mine[2]),
        None,
    ];
    let filled = cpu
        .alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut slots)
        .unwrap();
    assert_eq!(filled, 7);
    assert_eq!(
        (slots[0], slots[2], slots[5]),
        (Some(mine[0]), Some(mine[1]), Some(mine[2]))
    );
    let pages = assert_distinct(&slots);
    assert_conserved(&allocator, 7);

    // A full array allocates nothing and changes nothing.
    let mut full = slots.clone();
    let filled = assert_unchanged(&allocator, || {
        cpu.alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut full)
    });
    assert_eq!((filled, &full), (Ok(7), &slots));

    // One empty slot after a populated prefix: a single allocation.
    let mut one_left = vec![Some(mine[0]), Some(mine[1]), None];
    let filled = cpu
        .alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut one_left)
        .unwrap();
    assert_eq!(filled, 3);
    let extra = one_left[2].unwrap();
    assert!(!pages.contains(&extra));
    assert_conserved(&allocator, 8);

    // The list variant appends to what the vector holds.
    let mut list = vec![extra];
    assert_eq!(
        cpu.alloc_pages_bulk_vec(Gfp::KERNEL, NodeId(0), 10, &mut list),
        Ok(10)
    );
    assert_eq!(list.len(), 11);
    assert_eq!(list[0], extra);
    assert_conserved(&allocator, 18);

    let mut all: BTreeSet<Page> = pages.into_iter().collect();
    all.extend(list);
    assert_eq!(all.len(), 18);
    cpu.free_pages_bulk(&all.into_iter().collect::<Vec<_>>())
        .unwrap();
    assert_conserved(&allocator, 0);
}

#[test]
fn bulk_returns_fewer_pages_under_pressure_and_none_when_memory_is_gone() {
    // 16 MiB: low watermark 160. A bulk call needs low + nr_pages free in
    // the zone; otherwise it falls back to one ordinary allocation.
    let allocator = boot(&one_node(16, 1));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut held = Vec::new();
    while let Ok(page) = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)) {
        allocator.check_invariants().unwrap();
        held.push(page);
    }
    let returned: Vec<Page> = held.drain(..40).collect();
    cpu.free_pages_bulk(&returned).unwrap();
    allocator.drain_all_pages();
    let zone = &allocator.zone_snapshots()[0];
    assert!(zone.free > zone.watermarks.low && zone.free <= zone.watermarks.low + 64);
    assert_conserved(&allocator, held.len() as u64);

    let mut slots = vec![None; 64];
    let filled = cpu
        .alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut slots)
        .unwrap();
    assert_eq!(filled, 1);
    assert!(slots[0].is_some() && slots[1..].iter().all(Option::is_none));
    held.push(slots[0].unwrap());

    // The count is of the populated prefix: a page in a later slot does
    // not count when the slot before it stays empty.
    let mut gapped = vec![None; 64];
    gapped[5] = Some(held[0]);
    let filled = cpu
        .alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut gapped)
        .unwrap();
    assert_eq!(filled, 1);
    assert!(gapped[0].is_some() && gapped[1..5].iter().all(Option::is_none));
    assert_eq!(gapped[5], Some(held[0]));
    held.push(gapped[0].unwrap());
    assert_conserved(&allocator, held.len() as u64);

    // With every page gone the call succeeds and populates nothing.
    while let Ok(page) = cpu.alloc_pages(Gfp::KERNEL | Gfp::MEMALLOC, Order(0), NodeId(0)) {
        allocator.check_invariants().unwrap();
        held.push(page);
    }
    let mut empty = vec![None; 8];
    assert_eq!(
        cpu.alloc_pages_bulk(Gfp::ATOMIC, NodeId(0), None, &mut empty),
        Ok(0)
    );
    assert!(empty.iter().all(Option::is_none));
    assert_conserved(&allocator, held.len() as u64);
    cpu.free_pages_bulk(&held).unwrap();
    assert_conserved(&allocator, 0);
}

#[test]
fn bulk_follows_the_preferred_node_and_the_nodemask() {
    let allocator = boot(&MachineDesc::uniform(64 * MIB, 2, 2).unwrap());
    let cpu0 = allocator.cpu(CpuId(0)).unwrap();
    let mut held = Vec::new();
    for (preferred, mask, expected) in [
        (NodeId(0), None, NodeId(0)),
        (NodeId(1), None, NodeId(1)),
        (NodeId(0), Some(Nodemask::of(NodeId(1))), NodeId(1)),
        (NodeId(1), Some(Nodemask::of(NodeId(0))), NodeId(0)),
    ] {
        let mut slots = vec![None; 100];
        let filled = cpu0
            .alloc_pages_bulk(Gfp::KERNEL, preferred, mask.as_ref(), &mut slots)
            .unwrap();
        allocator.check_invariants().unwrap();
        assert_eq!(filled, 100);
        for page in assert_distinct(&slots) {
            assert_eq!(placement_of(&allocator, page.pfn()).0, expected);
            held.push(page);
        }
    }
    assert_eq!(vmstat_value(&allocator, "numa_hit"), 400);
    assert_eq!(vmstat_value(&allocator, "numa_local"), 200);

    // One bulk free of pages from both nodes' zones, on another CPU.
    let cpu1 = allocator.cpu(CpuId(1)).unwrap();
    cpu1.free_pages_bulk(&held).unwrap();
    assert_conserved(&allocator, 0);
    assert_eq!(vmstat_value(&allocator, "pgfree"), 400);
    let pcp_pages: u64 = allocator
        .zone_snapshots()
        .iter()
        .map(|zone| zone.pcp[1].count as u64)
        .sum();
    assert!(pcp_pages > 0, "the bulk free bypassed CPU 1's lists");
}

#[test]
fn a_page_array_is_freed_whole_and_emptied_or_not_at_all() {
    let allocator = boot(&one_node(64, 2));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut slots: Vec<Option<Page>> = vec![None; 40];
    assert_eq!(
        cpu.alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, &mut slots),
        Ok(40)
    );
    slots[7] = None;
    let held = slots[3].unwrap();
    assert_conserved(&allocator, 40);

    // A page freed already makes the whole array refuse, and no slot changes.
    cpu.free_pages(held, Order(0)).unwrap();
    let before = slots.clone();
    let refused = assert_unchanged(&allocator, || cpu.free_pages_bulk_array(&mut slots));
    assert!(refused.is_err());
    assert_eq!(slots, before);

    slots[3] = None;
    assert_eq!(cpu.free_pages_bulk_array(&mut slots), Ok(38));
    assert!(slots.iter().all(Option::is_none));
    assert_conserved(&allocator, 1);
    assert_eq!(cpu.free_pages_bulk_array(&mut slots), Ok(0));
}

#[test]
fn a_bulk_free_drains_where_frees_one_at_a_time_drain() {
    // Past high_max, so that high stops growing and frees drain.
    let high_max = pcp_of(&boot(&one_node(256, 2)), 0).high_max as usize;
    let desc = one_node(256, 2);
    let pcp = bulk_and_single_frees_agree(
        &desc,
        &[Gfp::KERNEL],
        4 * high_max + 7,
        usize::MAX,
        2 * high_max,
    );
    assert_eq!(pcp.high as usize, high_max);
}

#[test]
fn small_bulk_frees_drain_and_list_as_frees_one_at_a_time() {
    // Calls of 2 to 8 pages take their own path when every page goes to
    // one per-CPU list; pages of two freetypes (alternating, or in runs of
    // three) make some calls take the two passes. Either way the lists,
    // the sizing, the drains and the views are those of single frees.
    let desc = one_node(256, 2);
    let high_max = pcp_of(&boot(&desc), 0).high_max as usize;
    let alternating = [Gfp::KERNEL, Gfp::MOVABLE];
    let in_threes = [Gfp::MOVABLE, Gfp::MOVABLE, Gfp::MOVABLE, Gfp::KERNEL];
    for chunk in 2..=8 {
        for gfps in [&[Gfp::KERNEL][..], &alternating, &in_threes] {
            let pcp = bulk_and_single_frees_agree(&desc, gfps, 4 * high_max + 7, chunk, high_max);
            assert_eq!(pcp.high as usize, high_max, "chunks of {chunk}");
        }
    }
}

#[test]
fn a_bulk_free_below_the_high_watermark_sizes_high_as_single_frees_do() {
    // 16 MiB, 3 900 of 4 096 pages held: the zone is below its high
    // watermark (ZONE_BELOW_HIGH), where every free lowers high.
    for chunk in [usize::MAX, 2, 5] {
        let pcp = bulk_and_single_frees_agree(&one_node(16, 2), &[Gfp::KERNEL], 3940, chunk, 64);
        assert_eq!(pcp.high, pcp.high_min);
    }
}

/// Allocates `held` pages on two identical machines (page `i` with
/// `gfps[i % gfps.len()]`), frees them one at a time on one and in bulk
/// calls of `chunk` pages on the other, and checks that every view, the
/// per-CPU sizing included, and the next `next` allocations agree. Returns
/// CPU 0's lists after the frees.
fn bulk_and_single_frees_agree(
    desc: &MachineDesc,
    gfps: &[Gfp],
    held: usize,
    chunk: usize,
    next: usize,
) -> PcpSnapshot {
    let one_by_one = boot(desc);
    let in_bulk = boot(desc);
    let mut pages = Vec::new();
    for allocator in [&one_by_one, &in_bulk] {
        let cpu = allocator.cpu(CpuId(0)).unwrap();
        let allocated: Vec<Page> = (0..held)
            .map(|i| {
                cpu.alloc_pages(gfps[i % gfps.len()], Order(0), NodeId(0))
                    .unwrap()
            })
            .collect();
        pages.push(allocated);
    }
    assert_eq!(pages[0], pages[1], "the same boot gives the same pages");
    let cpu = one_by_one.cpu(CpuId(0)).unwrap();
    for &page in &pages[0] {
        cpu.free_pages(page, Order(0)).unwrap();
    }
    let cpu = in_bulk.cpu(CpuId(0)).unwrap();
    for batch in pages[1].chunks(chunk) {
        assert_eq!(cpu.free_pages_bulk(batch), Ok(()));
    }
    in_bulk.check_invariants().unwrap();
    assert!(vmstat_value(&in_bulk, "pcp_drain_pages") > 0, "no drain");
    assert_eq!(one_by_one.zone_snapshots(), in_bulk.zone_snapshots());
    assert_eq!(proc::buddyinfo(&one_by_one), proc::buddyinfo(&in_bulk));
    assert_eq!(proc::vmstat(&one_by_one), proc::vmstat(&in_bulk));
    let pcp = pcp_of(&in_bulk, 0);
    // The lists hold the same pages in the same order: the next
    // allocations come out alike.
    let after = |allocator: &LocalPageAllocator| -> Vec<Page> {
        let cpu = allocator.cpu(CpuId(0)).unwrap();
        (0..next)
            .map(|_| cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap())
            .collect()
    };
    assert_eq!(after(&one_by_one), after(&in_bulk));
    pcp
}

#[test]
fn the_list_form_honours_the_nodemask_and_appends() {
    let allocator = boot(&MachineDesc::uniform(64 * MIB, 2, 2).unwrap());
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut list = vec![cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap()];
    let only_node1 = Nodemask::of(NodeId(1));
    // More than one run of the array form: 150 = 64 + 64 + 22.
    let added = cpu
        .alloc_pages_bulk_list(Gfp::KERNEL, NodeId(0), Some(&only_node1), 150, &mut list)
        .unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!((added, list.len()), (150, 151));
    assert_eq!(placement_of(&allocator, list[0].pfn()).0, NodeId(0));
    let slots: Vec<Option<Page>> = list.iter().copied().map(Some).collect();
    assert_distinct(&slots);
    for page in &list[1..] {
        assert_eq!(placement_of(&allocator, page.pfn()).0, NodeId(1));
    }
    // Bad arguments are errors and leave the list alone.
    assert!(cpu
        .alloc_pages_bulk_list(Gfp::KERNEL, NodeId(9), None, 5, &mut list)
        .is_err());
    assert_eq!(list.len(), 151);
    // A mask of no node of the machine gives nothing.
    let nowhere = Nodemask::of(NodeId(5));
    assert_eq!(
        cpu.alloc_pages_bulk_list(Gfp::KERNEL, NodeId(0), Some(&nowhere), 5, &mut list),
        Ok(0)
    );
    cpu.free_pages_bulk(&list).unwrap();
    assert_conserved(&allocator, 0);
}
