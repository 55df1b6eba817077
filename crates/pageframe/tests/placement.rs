//! Where pages come from: migratetype fallback (an unmovable request claims a
//! movable pageblock, or steals from it when less than half of it is free),
//! the HIGHATOMIC reserve (created by high-order atomic allocations under
//! pressure, used by the next one, released when ordinary allocations fail),
//! zonelist fallback across nodes in distance order, `__GFP_THISNODE` and
//! node masks, ZONE_MOVABLE (only for `GFP_HIGHUSER_MOVABLE`) and ZONE_DMA32.

mod common;

use common::{
    allocate_until_oom, assert_conserved, boot, one_node, pages_held, placement_of, vmstat_value,
    zone_of_type, MIB,
};
use pageframe::machine::{apply_cmdline, MemRange};
use pageframe::{
    proc, AllocError, CpuId, Gfp, LocalPageAllocator, MachineDesc, MigrateType, NodeId, Nodemask,
    Order, Page, ZoneType,
};

/// Order-0 allocations until `NoMemory`, invariants checked after each.
fn exhaust(allocator: &LocalPageAllocator, cpu: CpuId, gfp: Gfp, node: NodeId) -> Vec<Page> {
    allocate_until_oom(allocator, cpu, gfp, Order(0), node)
}

fn pageblocks(allocator: &LocalPageAllocator) -> [u64; 5] {
    allocator.zone_snapshots()[0].pageblocks
}

fn block_type(allocator: &LocalPageAllocator, page: Page) -> MigrateType {
    allocator.pageblock_migratetype(page.pfn()).unwrap()
}

#[test]
fn unmovable_and_reclaimable_requests_claim_whole_movable_blocks() {
    let allocator = boot(&one_node(64, 2));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    // memmap_init() leaves every pageblock MOVABLE.
    assert_eq!(pageblocks(&allocator), [0, 32, 0, 0, 0]);

    // With ALLOC_NOFRAGMENT an unmovable request claims a free block of at
    // least pageblock order: the first order-10 block, two pageblocks.
    let unmovable = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(pageblocks(&allocator), [2, 30, 0, 0, 0]);
    assert_eq!(block_type(&allocator, unmovable), MigrateType::Unmovable);
    assert_eq!(vmstat_value(&allocator, "extfrag_claim"), 1);
    assert!(proc::pagetypeinfo(&allocator).contains(&format!(
        "Node 0, zone   Normal {:>12} {:>12} {:>12} {:>12} {:>12} \n",
        2, 30, 0, 0, 0
    )));

    // Movable requests find their own blocks: nothing changes.
    let movable = cpu.alloc_pages(Gfp::MOVABLE, Order(3), NodeId(0)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(pageblocks(&allocator), [2, 30, 0, 0, 0]);
    assert_eq!(block_type(&allocator, movable), MigrateType::Movable);

    let reclaimable = cpu
        .alloc_pages(Gfp::KERNEL | Gfp::RECLAIMABLE, Order(1), NodeId(0))
        .unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(pageblocks(&allocator), [2, 28, 2, 0, 0]);
    assert_eq!(
        block_type(&allocator, reclaimable),
        MigrateType::Reclaimable
    );
    assert_eq!(vmstat_value(&allocator, "extfrag_claim"), 2);

    // A second unmovable page comes from the claimed block's lists.
    let second = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    assert_eq!(pageblocks(&allocator), [2, 28, 2, 0, 0]);
    assert_eq!(block_type(&allocator, second), MigrateType::Unmovable);
    for (page, order) in [
        (unmovable, Order(0)),
        (movable, Order(3)),
        (reclaimable, Order(1)),
        (second, Order(0)),
    ] {
        cpu.free_pages(page, order).unwrap();
        allocator.check_invariants().unwrap();
    }
    allocator.drain_all_pages();
    assert_conserved(&allocator, 0);
}

#[test]
fn fallback_steals_from_a_sparse_block_and_claims_a_half_free_one() {
    // Fill all 4096 pages with movable pages (__GFP_MEMALLOC ignores the
    // watermarks), then free every fourth page: each pageblock is a quarter
    // free, in order-0 holes that cannot merge.
    let allocator = boot(&one_node(16, 1));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let all = exhaust(
        &allocator,
        CpuId(0),
        Gfp::MOVABLE | Gfp::MEMALLOC,
        NodeId(0),
    );
    let managed = allocator.zone_snapshots()[0].managed;
    assert_eq!(all.len() as u64, managed);
    let quarter: Vec<Page> = all
        .iter()
        .copied()
        .filter(|page| page.pfn().0 % 4 == 0)
        .collect();
    cpu.free_pages_bulk(&quarter).unwrap();
    allocator.drain_all_pages();
    assert_conserved(&allocator, managed - quarter.len() as u64);
    assert_eq!(pageblocks(&allocator), [0, 8, 0, 0, 0]);

    // Free + alike pages are under half a block: steal, do not convert.
    let stolen = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(stolen.pfn().0 % 4, 0, "not one of the freed pages");
    // Two steals: the first pass (ALLOC_NOFRAGMENT) refilled nothing but, as
    // nr_pcp_alloc() does (Linux 6.12), doubled the next refill to two pages.
    assert_eq!(allocator.zone_snapshots()[0].pcp[0].count, 1);
    assert_eq!(vmstat_value(&allocator, "extfrag_steal"), 2);
    assert_eq!(vmstat_value(&allocator, "extfrag_claim"), 0);
    assert_eq!(pageblocks(&allocator), [0, 8, 0, 0, 0]);

    // Free another quarter: now half of each block is free and the next
    // unmovable request converts one block, moving its free pages along.
    let second_quarter: Vec<Page> = all
        .iter()
        .copied()
        .filter(|page| page.pfn().0 % 4 == 2)
        .collect();
    cpu.free_pages_bulk(&second_quarter).unwrap();
    allocator.drain_all_pages();
    allocator.check_invariants().unwrap();
    let claimed = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(vmstat_value(&allocator, "extfrag_claim"), 1);
    assert_eq!(pageblocks(&allocator), [1, 7, 0, 0, 0]);
    assert_eq!(block_type(&allocator, claimed), MigrateType::Unmovable);
    let unmovable_order0 =
        allocator.zone_snapshots()[0].list_blocks[MigrateType::Unmovable.index()][0];
    // Less the two pages of the refill (the empty ALLOC_NOFRAGMENT pass
    // doubled it, as above), and the stolen page if it was in this block.
    assert_eq!(allocator.zone_snapshots()[0].pcp[0].count, 1);
    assert!(
        (253..=254).contains(&unmovable_order0),
        "{unmovable_order0} free pages moved with the block"
    );
}

#[test]
fn highatomic_reserve_is_made_under_pressure_used_then_released() {
    let allocator = boot(&one_node(32, 1));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut held = exhaust(&allocator, CpuId(0), Gfp::KERNEL, NodeId(0));
    let zone = &allocator.zone_snapshots()[0];
    assert!(zone.free <= zone.watermarks.min, "not exhausted");
    assert_eq!((zone.reserved_highatomic, zone.pageblocks[3]), (0, 0));

    // An order-4 atomic request fails the fast path; the slow path succeeds
    // and sets the page's pageblock aside as HIGHATOMIC.
    let first = cpu.alloc_pages(Gfp::ATOMIC, Order(4), NodeId(0)).unwrap();
    allocator.check_invariants().unwrap();
    let zone = &allocator.zone_snapshots()[0];
    assert_eq!(zone.reserved_highatomic, 512);
    assert_eq!(zone.pageblocks[MigrateType::HighAtomic.index()], 1);
    assert_eq!(block_type(&allocator, first), MigrateType::HighAtomic);
    assert_eq!(vmstat_value(&allocator, "highatomic_reserved"), 1);
    let reserve_lists = &zone.list_blocks[MigrateType::HighAtomic.index()];
    assert!(
        reserve_lists[4..].iter().sum::<u64>() > 0,
        "the reserved block has no free order-4 block: {reserve_lists:?}"
    );

    // The next high-order atomic request is served from the reserve; it
    // does not reserve a second block.
    let second = cpu.alloc_pages(Gfp::ATOMIC, Order(4), NodeId(0)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(block_type(&allocator, second), MigrateType::HighAtomic);
    assert_eq!(vmstat_value(&allocator, "highatomic_reserved"), 1);
    assert_eq!(allocator.zone_snapshots()[0].reserved_highatomic, 512);

    // Give the reserve some free pages again, then let an ordinary request
    // that cannot reclaim fail: it does not touch the reserve.
    cpu.free_pages(second, Order(4)).unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(
        cpu.alloc_pages(Gfp::NOWAIT, Order(0), NodeId(0)),
        Err(AllocError::NoMemory { order: Order(0) })
    );
    assert_eq!(allocator.zone_snapshots()[0].reserved_highatomic, 512);

    // A GFP_KERNEL request under pressure releases the last reserved block.
    if let Ok(page) = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)) {
        held.push(page);
    }
    allocator.check_invariants().unwrap();
    let zone = &allocator.zone_snapshots()[0];
    assert_eq!(zone.reserved_highatomic, 0);
    assert_eq!(zone.pageblocks[MigrateType::HighAtomic.index()], 0);
    assert_eq!(vmstat_value(&allocator, "highatomic_unreserved"), 1);
    assert_eq!(block_type(&allocator, first), MigrateType::Unmovable);

    cpu.free_pages(first, Order(4)).unwrap();
    cpu.free_pages_bulk(&held).unwrap();
    allocator.drain_all_pages();
    assert_conserved(&allocator, 0);
}

/// An unreserved HIGHATOMIC pageblock keeps its free order-9 block as it
/// was, beside a free buddy pageblock: the kernel's
/// unreserve_highatomic_pageblock() moves the block to the list of its new
/// type (move_to_free_list()) without merging it, and so does pageframe,
/// whose invariants let free buddies of a pageblock or more stay unmerged
/// (a fast-path proptest once reached this state and failed them).
#[test]
fn an_unreserved_highatomic_block_stays_unmerged_beside_its_buddy() {
    let allocator = boot(&one_node(2048, 1));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut held = Vec::new();
    while let Ok(page) = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)) {
        held.push(page);
    }
    let first = cpu.alloc_pages(Gfp::ATOMIC, Order(4), NodeId(0)).unwrap();
    assert_eq!(block_type(&allocator, first), MigrateType::HighAtomic);
    // Everything but the reserve held too, past the watermarks, without a
    // failing request (one would release the reserve).
    let reserve_free = |allocator: &LocalPageAllocator| -> u64 {
        let zone = &allocator.zone_snapshots()[0];
        let lists = &zone.list_blocks[MigrateType::HighAtomic.index()];
        lists
            .iter()
            .enumerate()
            .map(|(order, blocks)| blocks << order)
            .sum()
    };
    allocator.drain_all_pages();
    let left = allocator.zone_snapshots()[0].free - reserve_free(&allocator);
    for _ in 0..left {
        let gfp = Gfp::KERNEL | Gfp::MEMALLOC;
        held.push(cpu.alloc_pages(gfp, Order(0), NodeId(0)).unwrap());
    }
    let reserve = first.pfn().0 & !511;
    let buddy = reserve ^ 512;
    let in_pair = |page: &Page| [reserve, buddy].contains(&(page.pfn().0 & !511));
    let (pair, mut held): (Vec<Page>, Vec<Page>) = held.into_iter().partition(in_pair);
    cpu.free_pages(first, Order(4)).unwrap();
    for page in pair {
        cpu.free_pages(page, Order(0)).unwrap();
    }
    allocator.drain_all_pages();
    allocator.check_invariants().unwrap();
    // Blocks per order over every list, and the reserve's order-9 blocks.
    let free_blocks = |allocator: &LocalPageAllocator, order: usize| -> (u64, u64) {
        let lists = allocator.zone_snapshots()[0].list_blocks.clone();
        let all = lists.iter().map(|orders| orders[order]).sum();
        (all, lists[MigrateType::HighAtomic.index()][order])
    };
    let (order9, reserved9) = free_blocks(&allocator, 9);
    let (order10, _) = free_blocks(&allocator, 10);
    assert_eq!(reserved9, 1, "the reserve's pageblock is one free block");
    // An ordinary request under pressure releases the reserve; its block
    // moves to the request's list and merges with nothing.
    if let Ok(page) = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)) {
        held.push(page);
    }
    assert_eq!(vmstat_value(&allocator, "highatomic_unreserved"), 1);
    let now = allocator.pageblock_migratetype(pageframe::Pfn(reserve));
    assert_eq!(now, allocator.pageblock_migratetype(pageframe::Pfn(buddy)));
    allocator.check_invariants().unwrap();
    assert_eq!(free_blocks(&allocator, 9), (order9, 0));
    assert_eq!(free_blocks(&allocator, 10).0, order10);
    cpu.free_pages_bulk(&held).unwrap();
    allocator.drain_all_pages();
    assert_conserved(&allocator, 0);
}

/// Three nodes of 16 MiB, one CPU each; node 0 is nearer to node 2 than to 1.
fn three_nodes() -> LocalPageAllocator {
    let mut desc = MachineDesc::uniform(48 * MIB, 3, 3).unwrap();
    desc.distances = Some(vec![vec![10, 30, 20], vec![30, 10, 20], vec![20, 20, 10]]);
    boot(&desc)
}

#[test]
fn zonelist_falls_back_across_nodes_in_distance_order() {
    let allocator = three_nodes();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let marks: Vec<_> = (0..3)
        .map(|node| zone_of_type(&allocator, NodeId(node), ZoneType::Normal).watermarks)
        .collect();
    let mut visit_order = Vec::new();
    let mut nodes_of_pages = Vec::new();
    loop {
        let page = match cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)) {
            Ok(page) => page,
            Err(err) => {
                assert_eq!(err, AllocError::NoMemory { order: Order(0) });
                break;
            }
        };
        allocator.check_invariants().unwrap();
        let (node, zone_type) = placement_of(&allocator, page.pfn());
        assert_eq!(zone_type, ZoneType::Normal);
        if !visit_order.contains(&node) {
            // A node is used only once every nearer one is at its low mark.
            for &nearer in &visit_order {
                let free = zone_of_type(&allocator, nearer, ZoneType::Normal).free;
                assert!(
                    free <= marks[nearer.index()].low,
                    "node {nearer} has {free} free"
                );
            }
            visit_order.push(node);
        }
        nodes_of_pages.push(node);
    }
    assert_eq!(visit_order, vec![NodeId(0), NodeId(2), NodeId(1)]);
    for node in 0..3 {
        let zone = zone_of_type(&allocator, NodeId(node), ZoneType::Normal);
        assert!(
            zone.free <= marks[node as usize].min,
            "node {node} not exhausted"
        );
    }
    let local = nodes_of_pages
        .iter()
        .filter(|&&node| node == NodeId(0))
        .count() as u64;
    let remote = nodes_of_pages.len() as u64 - local;
    assert_eq!(vmstat_value(&allocator, "numa_hit"), local);
    assert_eq!(vmstat_value(&allocator, "numa_miss"), remote);
    assert_eq!(vmstat_value(&allocator, "numa_foreign"), remote);
    assert_eq!(vmstat_value(&allocator, "numa_local"), local);
    assert_eq!(vmstat_value(&allocator, "numa_other"), remote);
    assert_conserved(&allocator, nodes_of_pages.len() as u64);
}

#[test]
fn thisnode_stays_local_and_nodemask_restricts_the_nodes() {
    let allocator = three_nodes();
    let boot_lines: Vec<String> = proc::buddyinfo(&allocator)
        .lines()
        .map(String::from)
        .collect();
    let pages = exhaust(&allocator, CpuId(1), Gfp::KERNEL | Gfp::THISNODE, NodeId(1));
    assert!(!pages.is_empty());
    for page in &pages {
        assert_eq!(placement_of(&allocator, page.pfn()).0, NodeId(1));
    }
    let lines: Vec<String> = proc::buddyinfo(&allocator)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines[0], boot_lines[0], "node 0 was touched");
    assert_ne!(lines[1], boot_lines[1]);
    assert_eq!(lines[2], boot_lines[2], "node 2 was touched");
    assert_eq!(vmstat_value(&allocator, "numa_miss"), 0);

    // Without THISNODE the same CPU goes on to the nearest other node.
    let cpu = allocator.cpu(CpuId(1)).unwrap();
    let elsewhere = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(1)).unwrap();
    assert_eq!(placement_of(&allocator, elsewhere.pfn()).0, NodeId(2));

    // A node mask overrides the preferred node's own zones.
    let only_node0 = Nodemask::of(NodeId(0));
    let masked = cpu
        .alloc_pages_nodemask(Gfp::KERNEL, Order(2), NodeId(2), &only_node0)
        .unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(placement_of(&allocator, masked.pfn()).0, NodeId(0));
    let mut slots = vec![None; 40];
    let filled = cpu
        .alloc_pages_bulk(Gfp::KERNEL, NodeId(2), Some(&only_node0), &mut slots)
        .unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(filled, 40);
    for page in slots.iter().flatten() {
        assert_eq!(placement_of(&allocator, page.pfn()).0, NodeId(0));
    }
    let held = pages.len() as u64 + 1 + 4 + 40;
    assert_conserved(&allocator, held);
}

#[test]
fn zone_movable_serves_only_highuser_movable() {
    let mut desc = one_node(64, 2);
    apply_cmdline(&mut desc, "movablecore=16M").unwrap();
    let allocator = boot(&desc);
    let movable_zone = zone_of_type(&allocator, NodeId(0), ZoneType::Movable);
    assert_eq!(movable_zone.managed, (16 * MIB) >> 12);
    let cpu = allocator.cpu(CpuId(0)).unwrap();

    // GFP_HIGHUSER_MOVABLE starts at the highest zone of the zonelist.
    let user = cpu
        .alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NodeId(0))
        .unwrap();
    assert_eq!(placement_of(&allocator, user.pfn()).1, ZoneType::Movable);
    cpu.free_pages(user, Order(0)).unwrap();
    cpu.drain_pcp();
    allocator.check_invariants().unwrap();

    // Everything else stays out of ZONE_MOVABLE even when Normal runs out.
    let mut held: Vec<(Page, Order)> = Vec::new();
    for gfp in [Gfp::KERNEL, Gfp::USER, Gfp::MOVABLE, Gfp::HIGHUSER] {
        let pages = exhaust(&allocator, CpuId(0), gfp, NodeId(0));
        for page in &pages {
            assert_eq!(
                placement_of(&allocator, page.pfn()).1,
                ZoneType::Normal,
                "{gfp:?}"
            );
        }
        held.extend(pages.into_iter().map(|page| (page, Order(0))));
    }
    let movable_zone = zone_of_type(&allocator, NodeId(0), ZoneType::Movable);
    assert_eq!(
        movable_zone.free + movable_zone.pcp_pages(),
        movable_zone.managed
    );

    // ...while GFP_HIGHUSER_MOVABLE still finds memory, all in ZONE_MOVABLE.
    let user = exhaust(&allocator, CpuId(0), Gfp::HIGHUSER_MOVABLE, NodeId(0));
    assert!(user.len() as u64 > movable_zone.managed / 2);
    for page in &user {
        assert_eq!(placement_of(&allocator, page.pfn()).1, ZoneType::Movable);
    }
    held.extend(user.into_iter().map(|page| (page, Order(0))));
    assert_conserved(&allocator, pages_held(&held));
    assert!(vmstat_value(&allocator, "pgalloc_movable") >= movable_zone.managed / 2);
}

/// One node of 32 MiB straddling 4 GiB: 16 MiB of DMA32 below, 16 MiB of
/// Normal above.
fn straddling_4g() -> LocalPageAllocator {
    let mut desc = one_node(32, 1);
    desc.dma32 = true;
    desc.nodes[0].ranges = vec![MemRange {
        start: (4 << 30) - 16 * MIB,
        size: 32 * MIB,
    }];
    boot(&desc)
}

#[test]
fn dma32_requests_stay_below_4g_and_kernel_requests_fall_back_to_dma32() {
    let allocator = straddling_4g();
    let below_4g = |page: &Page| page.pfn().0 < (1 << 20);
    let dma32 = zone_of_type(&allocator, NodeId(0), ZoneType::Dma32);
    let normal = zone_of_type(&allocator, NodeId(0), ZoneType::Normal);
    assert_eq!((dma32.managed, normal.managed), (4096, 4096));
    // DMA32 is protected from Normal-capable requests by lowmem_reserve.
    assert_eq!(dma32.lowmem_reserve, [0, 0, 4096 / 256, 4096 / 256]);

    let dma_pages = exhaust(&allocator, CpuId(0), Gfp::KERNEL | Gfp::DMA32, NodeId(0));
    assert!(dma_pages.iter().all(below_4g));
    let normal_now = zone_of_type(&allocator, NodeId(0), ZoneType::Normal);
    assert_eq!(normal_now.free + normal_now.pcp_pages(), normal.managed);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    cpu.free_pages_bulk(&dma_pages).unwrap();
    allocator.drain_all_pages();
    assert_conserved(&allocator, 0);

    // GFP_KERNEL prefers Normal and reaches DMA32 only once Normal is low.
    let kernel_pages = exhaust(&allocator, CpuId(0), Gfp::KERNEL, NodeId(0));
    let first_dma32 = kernel_pages
        .iter()
        .position(below_4g)
        .expect("no DMA32 page");
    assert!(first_dma32 > 0 && !below_4g(&kernel_pages[0]));
    let dma32_now = zone_of_type(&allocator, NodeId(0), ZoneType::Dma32);
    assert!(
        dma32_now.free <= dma32.watermarks.min + dma32.lowmem_reserve[ZoneType::Normal.index()]
    );
    assert_conserved(&allocator, kernel_pages.len() as u64);

    assert_eq!(
        cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE | Gfp::DMA32, Order(0), NodeId(0)),
        Err(AllocError::Unsupported(
            "__GFP_DMA32 with __GFP_HIGHMEM (GFP_ZONE_BAD)"
        ))
    );
}

/// 8 GiB with ZONE_DMA and ZONE_DMA32 as x86-64: min_free_kbytes is
/// sqrt(8 GiB in KiB x 16) = 11585, or with THP khugepaged's 512 x 3 zones x
/// 11 pageblock pages = 67584 KiB (Linux 6.12); the watermarks follow it and
/// DMA is protected from DMA32 and Normal requests.
#[test]
fn dma_zone_and_thp_raise_min_free_kbytes_as_the_kernel() {
    let mut desc = one_node(8 * 1024, 2);
    desc.dma = true;
    desc.dma32 = true;
    let plain = boot(&desc);
    plain.check_invariants().unwrap();
    assert_eq!(plain.min_free_kbytes(), 11_585);
    let dma = zone_of_type(&plain, NodeId(0), ZoneType::Dma);
    assert_eq!(dma.managed, 4096);
    assert_eq!(dma.lowmem_reserve[ZoneType::Dma32.index()], 1_044_480 / 256);
    assert_eq!(
        dma.lowmem_reserve[ZoneType::Normal.index()],
        (1_044_480 + 1_048_576) / 256
    );
    desc.transparent_hugepage = true;
    let thp = boot(&desc);
    thp.check_invariants().unwrap();
    assert_eq!(thp.min_free_kbytes(), 67_584);
    // DMA's share of 16896 pages: 16896 x 4096 / 2097152 = 33.
    assert_eq!(
        zone_of_type(&thp, NodeId(0), ZoneType::Dma).watermarks.min,
        33
    );
    let movable = thp
        .zone_snapshots()
        .into_iter()
        .find(|zone| zone.zone_type == ZoneType::Movable)
        .expect("an empty ZONE_MOVABLE");
    assert_eq!(
        movable.watermarks.min, 32,
        "an empty ZONE_MOVABLE keeps SWAP_CLUSTER_MAX"
    );
}

/// Once Normal is below its low watermark, GFP_KERNEL pairs of every order
/// the per-CPU lists serve come from DMA32 (its per-CPU lists after the
/// first refill), each counted once as a NUMA hit, and Normal keeps its
/// pages: the walk past a preferred zone below its watermark decides as
/// get_page_from_freelist() does.
#[test]
fn pairs_below_the_preferred_zones_low_watermark_fall_back_to_dma32() {
    let allocator = straddling_4g();
    let below_4g = |page: &Page| page.pfn().0 < (1 << 20);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut held = Vec::new();
    loop {
        let page = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
        if below_4g(&page) {
            cpu.free_pages(page, Order(0)).unwrap();
            break;
        }
        held.push((page, Order(0)));
    }
    let normal = zone_of_type(&allocator, NodeId(0), ZoneType::Normal);
    assert!(normal.free <= normal.watermarks.low);
    for order in [Order(0), Order(3), Order(9)] {
        for _ in 0..4 {
            let hits = vmstat_value(&allocator, "numa_hit");
            let page = cpu.alloc_pages(Gfp::KERNEL, order, NodeId(0)).unwrap();
            assert!(below_4g(&page), "order {order} came from Normal");
            assert_eq!(vmstat_value(&allocator, "numa_hit"), hits + 1);
            assert_conserved(&allocator, pages_held(&held) + order.nr_pages());
            cpu.free_pages(page, order).unwrap();
        }
    }
    let normal_after = zone_of_type(&allocator, NodeId(0), ZoneType::Normal);
    assert_eq!(normal_after.free, normal.free);
}
