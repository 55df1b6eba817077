//! The allocator's policy switches and its fallback events: each claim or
//! steal counted per key exactly as `mm_page_alloc_extfrag` reports it
//! (alloc and fallback order, both migratetypes, change_ownership), on
//! constructed scenarios; the fallback order switch changes which type is
//! taken; pcp sizing reaches every CPU's lists.

use pageframe::{
    AllocOptions, CpuId, ExtfragKey, FallbackOrder, Gfp, LocalPageAllocator, MachineDesc,
    MigrateType, NodeId, Order, PcpSizing,
};

fn boot(options: AllocOptions) -> LocalPageAllocator {
    let desc = MachineDesc::uniform(64 << 20, 1, 1).unwrap();
    LocalPageAllocator::boot_seeded(&desc, options, 7).unwrap()
}

fn key(
    alloc_order: u8,
    fallback_order: u8,
    alloc_migratetype: MigrateType,
    fallback_migratetype: MigrateType,
    change_ownership: bool,
) -> ExtfragKey {
    ExtfragKey {
        alloc_order: Order(alloc_order),
        fallback_order: Order(fallback_order),
        alloc_migratetype,
        fallback_migratetype,
        change_ownership,
    }
}

/// The engine's claim and steal counters summed over zones.
fn claims_and_steals(allocator: &LocalPageAllocator) -> (u64, u64) {
    allocator
        .zone_snapshots()
        .iter()
        .fold((0, 0), |(claims, steals), zone| {
            (
                claims + zone.zone_events.extfrag_claim,
                steals + zone.zone_events.extfrag_steal,
            )
        })
}

/// A reclaimable order-10 block taken and given back (it stays a
/// RECLAIMABLE block on the free lists), then one unmovable page: which
/// fallback type the unmovable request claims depends on the table.
fn reclaimable_block_then_unmovable_page(order: FallbackOrder) -> LocalPageAllocator {
    let allocator = boot(AllocOptions {
        fallback_order: order,
        ..AllocOptions::KERNEL
    });
    assert!(
        allocator.extfrag_events().is_empty(),
        "boot falls back never"
    );
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let block = cpu
        .alloc_pages(Gfp::KERNEL | Gfp::RECLAIMABLE, Order(10), NodeId(0))
        .unwrap();
    assert_eq!(
        allocator.extfrag_events(),
        vec![(
            key(10, 10, MigrateType::Reclaimable, MigrateType::Movable, true),
            1
        )]
    );
    cpu.free_pages(block, Order(10)).unwrap();
    cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    drop(cpu);
    allocator.check_invariants().unwrap();
    allocator
}

#[test]
fn claims_are_counted_per_key_as_the_tracepoint_reports_them() {
    let kernel = reclaimable_block_then_unmovable_page(FallbackOrder::Kernel);
    // The kernel's table sends UNMOVABLE to RECLAIMABLE first: the freed
    // reclaimable block is claimed whole, by the pcp refill (order 0).
    assert_eq!(
        kernel.extfrag_events(),
        vec![
            (
                key(
                    0,
                    10,
                    MigrateType::Unmovable,
                    MigrateType::Reclaimable,
                    true
                ),
                1
            ),
            (
                key(10, 10, MigrateType::Reclaimable, MigrateType::Movable, true),
                1
            ),
        ]
    );
    assert_eq!(claims_and_steals(&kernel), (2, 0));

    let reversed = reclaimable_block_then_unmovable_page(FallbackOrder::Reversed);
    assert_eq!(
        reversed.extfrag_events(),
        vec![
            (
                key(0, 10, MigrateType::Unmovable, MigrateType::Movable, true),
                1
            ),
            (
                key(10, 10, MigrateType::Reclaimable, MigrateType::Movable, true),
                1
            ),
        ]
    );
    assert_eq!(claims_and_steals(&reversed), (2, 0));
}

#[test]
fn steals_are_counted_per_page_taken_without_ownership_change() {
    // All memory claimed for unmovable order-8 blocks (the emergency
    // reserves allowed; order 8 bypasses the per-CPU lists), one of them
    // given back and taken again as order-4 blocks, then one of those
    // given back: too small to claim its pageblock, a movable page can only
    // steal from it.
    let allocator = boot(AllocOptions::KERNEL);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let reserves = Gfp::KERNEL | Gfp::MEMALLOC;
    let mut large = Vec::new();
    while let Ok(page) = cpu.alloc_pages(reserves, Order(8), NodeId(0)) {
        large.push(page);
    }
    let freed = large.pop().expect("order-8 blocks were taken");
    cpu.free_pages(freed, Order(8)).unwrap();
    let mut small = Vec::new();
    while let Ok(page) = cpu.alloc_pages(reserves, Order(4), NodeId(0)) {
        small.push(page);
    }
    assert_eq!(
        small.len(),
        16,
        "the freed order-8 block, in order-4 blocks"
    );
    let last = small.pop().expect("order-4 blocks were taken");
    cpu.free_pages(last, Order(4)).unwrap();
    let before = allocator.extfrag_events();
    let (claims, steals) = claims_and_steals(&allocator);
    assert!(before.iter().all(|(key, _)| key.change_ownership));
    assert_eq!(
        before.iter().map(|(_, count)| count).sum::<u64>(),
        claims + steals
    );
    let movable = Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC;
    cpu.alloc_pages(movable, Order(0), NodeId(0)).unwrap();
    let after = allocator.extfrag_events();
    let stolen: Vec<_> = after
        .iter()
        .filter(|(key, _)| !key.change_ownership)
        .collect();
    let (_, steals_after) = claims_and_steals(&allocator);
    assert!(steals_after > steals, "the movable page was stolen");
    assert_eq!(
        stolen.iter().map(|(_, count)| count).sum::<u64>(),
        steals_after - steals
    );
    // The refill steals the order-4 block first, then (in steal mode) the
    // smallest of the pieces left on the unmovable lists, one event each.
    // The NOFRAGMENT attempt that finds nothing doubles the order-0 refill
    // of the retry (nr_pcp_alloc()'s alloc_factor, 6.12), so the retry takes
    // every piece left: three order-0 pages, the order-1 and order-2 pieces
    // and the order-4 block.
    let steal = |fallback_order| {
        (
            key(
                0,
                fallback_order,
                MigrateType::Movable,
                MigrateType::Unmovable,
                false,
            ),
            1,
        )
    };
    assert_eq!(
        stolen.into_iter().copied().collect::<Vec<_>>(),
        vec![(steal(0).0, 3), steal(1), steal(2), steal(4)]
    );
    drop(cpu);
    allocator.check_invariants().unwrap();
}

#[test]
fn pcp_sizing_reaches_every_cpus_lists() {
    let desc = MachineDesc::uniform(1 << 30, 1, 2).unwrap();
    let kernel = LocalPageAllocator::boot_seeded(&desc, AllocOptions::KERNEL, 7).unwrap();
    let sized = LocalPageAllocator::boot_seeded(
        &desc,
        AllocOptions {
            pcp: PcpSizing::new(8, Some(15)).unwrap(),
            ..AllocOptions::KERNEL
        },
        7,
    )
    .unwrap();
    for (default, switched) in kernel.zone_snapshots().iter().zip(sized.zone_snapshots()) {
        if switched.managed == 0 {
            continue;
        }
        for (default_pcp, pcp) in default.pcp.iter().zip(&switched.pcp) {
            assert_eq!(pcp.batch, 15);
            // managed / 8 split over the zone's 2 CPUs, at least 4 batches;
            // a set vm.percpu_pagelist_high_fraction pins high_max to
            // high_min (zone_set_pageset_high_and_batch(), 6.12).
            let expected = (switched.managed / 8 / 2).max(4 * 15) as u32;
            assert_eq!(pcp.high_min, expected);
            assert_eq!(pcp.high_max, expected);
            assert_ne!(pcp.high_min, default_pcp.high_min);
            assert_eq!(default_pcp.batch, 63);
        }
    }
    sized.check_invariants().unwrap();
}
