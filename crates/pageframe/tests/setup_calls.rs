//! The set-up calls that start a simulation where a host stood:
//! `set_pageblock_migratetype` on held and free pageblocks,
//! `join_allocated_pages` on held pages, and their refusals, with the
//! invariants checked after each call.

use pageframe::{
    CpuId, Errno, Gfp, LocalPageAllocator, MachineDesc, MigrateType, NodeId, Order, Page, Pfn,
    SetupError,
};

fn hold_everything(allocator: &LocalPageAllocator) -> Vec<Page> {
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut held = Vec::new();
    while let Ok(page) = cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC, Order(0), NodeId(0))
    {
        held.push(page);
    }
    held
}

#[test]
fn a_held_pageblock_takes_a_type_and_its_frees_follow_it() {
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 2).unwrap()).unwrap();
    let mut held = hold_everything(&allocator);
    held.sort_by_key(|page| page.pfn());
    let block = Pfn(held[held.len() / 2].pfn().0 & !511);
    allocator
        .set_pageblock_migratetype(block, MigrateType::Unmovable)
        .unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(
        allocator.pageblock_migratetype(Pfn(block.0 + 7)),
        Some(MigrateType::Unmovable)
    );
    // A page of it freed and drained goes to the Unmovable lists.
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    cpu.free_pages(Page::from_pfn(Pfn(block.0 + 3)), Order(0))
        .unwrap();
    // Listed on a per-CPU list: busy.
    assert_eq!(
        allocator.set_pageblock_migratetype(block, MigrateType::Movable),
        Err(SetupError::Busy(block))
    );
    allocator.drain_all_pages();
    let refused = allocator
        .set_pageblock_migratetype(Pfn(block.0 + 100), MigrateType::Movable)
        .unwrap_err();
    assert_eq!(refused, SetupError::Busy(block));
    assert_eq!(refused.errno(), Errno::EBUSY);
    assert_eq!(
        allocator.pageblock_migratetype(block),
        Some(MigrateType::Unmovable),
        "a refused call changes nothing"
    );
    let zone = allocator
        .zone_snapshots()
        .into_iter()
        .find(|zone| zone.managed > 0)
        .unwrap();
    assert_eq!(zone.pageblocks[MigrateType::Unmovable.index()], 1);
    allocator.check_invariants().unwrap();
}

#[test]
fn other_types_and_pfns_are_refused() {
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 2).unwrap()).unwrap();
    let held = hold_everything(&allocator);
    let pfn = held[0].pfn();
    for migratetype in [MigrateType::HighAtomic, MigrateType::Isolate] {
        let refused = allocator
            .set_pageblock_migratetype(pfn, migratetype)
            .unwrap_err();
        assert_eq!(refused, SetupError::Migratetype(migratetype));
        assert_eq!(refused.errno(), Errno::EINVAL);
    }
    for far in [Pfn(1 << 40), Pfn(u64::MAX)] {
        assert_eq!(
            allocator.set_pageblock_migratetype(far, MigrateType::Movable),
            Err(SetupError::NoZone(far))
        );
    }
    allocator.check_invariants().unwrap();
}

/// Held order-0 pages joined into an order-2 block free as one onto the
/// order-2 per-CPU list; each refusal changes nothing.
#[test]
fn held_pages_join_into_a_block_that_frees_as_one() {
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 1, 2).unwrap()).unwrap();
    let mut held = hold_everything(&allocator);
    held.sort_by_key(|page| page.pfn());
    let base = Pfn((held[held.len() / 2].pfn().0 + 8) & !7);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let refusals = [
        (
            Pfn(base.0 + 1),
            Order(2),
            SetupError::Order {
                pfn: Pfn(base.0 + 1),
                order: Order(2),
            },
        ),
        (
            base,
            Order(11),
            SetupError::Order {
                pfn: base,
                order: Order(11),
            },
        ),
        (
            Pfn(u64::MAX - 3),
            Order(2),
            SetupError::NoZone(Pfn(u64::MAX - 3)),
        ),
    ];
    for (pfn, order, refusal) in refusals {
        let err = allocator.join_allocated_pages(pfn, order).unwrap_err();
        assert_eq!(err, refusal);
        assert_eq!(err.errno(), Errno::EINVAL);
    }
    // One page of the block free: refused, the others stay order-0 blocks.
    cpu.free_pages(Page::from_pfn(Pfn(base.0 + 2)), Order(0))
        .unwrap();
    assert_eq!(
        allocator.join_allocated_pages(base, Order(2)),
        Err(SetupError::NotHeld(Pfn(base.0 + 2)))
    );
    allocator.check_invariants().unwrap();
    let again = cpu
        .alloc_pages(Gfp::HIGHUSER_MOVABLE | Gfp::MEMALLOC, Order(0), NodeId(0))
        .unwrap();
    assert_eq!(
        again.pfn(),
        Pfn(base.0 + 2),
        "the page just freed comes back first"
    );
    allocator.join_allocated_pages(base, Order(2)).unwrap();
    allocator.check_invariants().unwrap();
    // Freed as order 2: it lands on the CPU's order-2 list, one block.
    let listed = |allocator: &LocalPageAllocator| {
        allocator
            .zone_snapshots()
            .iter()
            .map(|zone| zone.pcp[0].count)
            .sum::<u32>()
    };
    let before = listed(&allocator);
    cpu.free_pages(Page::from_pfn(base), Order(2)).unwrap();
    assert_eq!(listed(&allocator), before + 4);
    allocator.check_invariants().unwrap();
    // Its pages are no longer allocated one by one.
    assert!(cpu
        .free_pages(Page::from_pfn(Pfn(base.0 + 1)), Order(0))
        .is_err());
    allocator.check_invariants().unwrap();
}
