//! Every bad input returns a typed error and leaves the allocator exactly as
//! it was: /proc/vmstat, buddyinfo, pagetypeinfo and zoneinfo are compared
//! byte for byte before and after each refused call. Covered: double frees
//! (from a per-CPU list, from the buddy lists, after a merge, inside one
//! bulk free, whatever runs of pages it gathered, at every slot of a call
//! of a few), wrong orders, unaligned PFNs, PFNs in a hole or beyond
//! memory, orders above MAX_PAGE_ORDER, unknown nodes and CPUs, GFP
//! combinations the kernel calls bad, and node masks with no usable node.

mod common;

use common::{assert_conserved, assert_unchanged, boot, holey_machine, one_node};
use pageframe::{
    AllocError, AllocOptions, CpuError, CpuId, FreeError, Gfp, LocalPageAllocator, MachineDesc,
    NodeId, Nodemask, Order, Page, Pfn, SharedPageAllocator,
};

/// A 32 MiB machine with pages on both CPUs' lists, so that a stray drain
/// would show in the views.
fn busy_machine() -> LocalPageAllocator {
    let allocator = boot(&one_node(32, 2));
    for cpu in [CpuId(0), CpuId(1)] {
        let handle = allocator.cpu(cpu).unwrap();
        let pages: Vec<Page> = (0..20)
            .map(|_| {
                handle
                    .alloc_pages(Gfp::KERNEL, Order(0), NodeId(0))
                    .unwrap()
            })
            .collect();
        handle.free_pages_bulk(&pages).unwrap();
    }
    allocator.check_invariants().unwrap();
    assert!(allocator.zone_snapshots()[0].pcp_pages() > 0);
    allocator
}

#[test]
fn double_free_from_a_per_cpu_list_is_refused() {
    let allocator = busy_machine();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let page = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    cpu.free_pages(page, Order(0)).unwrap();
    allocator.check_invariants().unwrap();
    let err = assert_unchanged(&allocator, || cpu.free_pages(page, Order(0)));
    assert_eq!(err, Err(FreeError::DoubleFree(page.pfn())));
    // The same through another CPU, and at another order.
    let other = allocator.cpu(CpuId(1)).unwrap();
    let err = assert_unchanged(&allocator, || other.free_pages(page, Order(0)));
    assert_eq!(err, Err(FreeError::DoubleFree(page.pfn())));
    let err = assert_unchanged(&allocator, || other.free_pages(page, Order(2)));
    assert!(err.is_err());
    assert_conserved(&allocator, 0);
}

#[test]
fn double_free_from_the_buddy_lists_and_after_a_merge_is_refused() {
    // Orders above 3 (but not pageblock_order) skip the per-CPU lists.
    //
    //  PFN 0      16        32
    //  | low o4   | high o4 | ...   both freed: one order-5 (and up) block at 0
    let allocator = boot(&one_node(32, 1));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let low = cpu.alloc_pages(Gfp::MOVABLE, Order(4), NodeId(0)).unwrap();
    let high = cpu.alloc_pages(Gfp::MOVABLE, Order(4), NodeId(0)).unwrap();
    assert_eq!((low.pfn(), high.pfn()), (Pfn(0), Pfn(16)));

    cpu.free_pages(high, Order(4)).unwrap();
    allocator.check_invariants().unwrap();
    let err = assert_unchanged(&allocator, || cpu.free_pages(high, Order(4)));
    assert_eq!(err, Err(FreeError::DoubleFree(high.pfn())));

    cpu.free_pages(low, Order(4)).unwrap();
    allocator.check_invariants().unwrap();
    let err = assert_unchanged(&allocator, || cpu.free_pages(low, Order(4)));
    assert_eq!(err, Err(FreeError::DoubleFree(low.pfn())));
    // PFN 16 is now inside the merged block: not the head of anything.
    let err = assert_unchanged(&allocator, || cpu.free_pages(high, Order(4)));
    assert_eq!(err, Err(FreeError::NotAllocated(high.pfn())));
    // A page that was never allocated: the head of a free block, or not.
    let err = assert_unchanged(&allocator, || cpu.free_pages(low, Order(0)));
    assert_eq!(err, Err(FreeError::DoubleFree(low.pfn())));
    let err = assert_unchanged(&allocator, || {
        cpu.free_pages(Page::from_pfn(Pfn(3)), Order(0))
    });
    assert_eq!(err, Err(FreeError::NotAllocated(Pfn(3))));
    assert_conserved(&allocator, 0);
}

#[test]
fn bulk_free_is_all_or_nothing() {
    let allocator = busy_machine();
    let cpu = allocator.cpu(CpuId(1)).unwrap();
    let pages: Vec<Page> = (0..4)
        .map(|_| cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap())
        .collect();
    let pair = cpu.alloc_pages(Gfp::KERNEL, Order(1), NodeId(0)).unwrap();
    assert_conserved(&allocator, 6);

    // A duplicate inside one call: the second occurrence is a double free.
    let duplicated = [pages[0], pages[1], pages[0]];
    let err = assert_unchanged(&allocator, || cpu.free_pages_bulk(&duplicated));
    assert_eq!(err, Err(FreeError::DoubleFree(pages[0].pfn())));
    // A bad page anywhere refuses the whole batch.
    let inside_pair = Page::from_pfn(pair.pfn().offset(1));
    for (bad, expected) in [
        (
            Page::from_pfn(Pfn(1 << 30)),
            FreeError::NotMemory(Pfn(1 << 30)),
        ),
        (inside_pair, FreeError::NotAllocated(inside_pair.pfn())),
    ] {
        let batch = [pages[2], pages[3], bad];
        let err = assert_unchanged(&allocator, || cpu.free_pages_bulk(&batch));
        assert_eq!(err, Err(expected));
    }
    // The bulk free is order 0 only.
    let err = assert_unchanged(&allocator, || cpu.free_pages_bulk(&[pages[1], pair]));
    assert_eq!(
        err,
        Err(FreeError::WrongOrder {
            pfn: pair.pfn(),
            allocated: Order(1),
            freed: Order(0)
        })
    );
    assert_conserved(&allocator, 6);

    // Every page is still allocated and frees normally; then a second bulk
    // free of the same pages is refused whole.
    cpu.free_pages_bulk(&pages).unwrap();
    cpu.free_pages(pair, Order(1)).unwrap();
    assert_conserved(&allocator, 0);
    let err = assert_unchanged(&allocator, || cpu.free_pages_bulk(&pages));
    assert_eq!(err, Err(FreeError::DoubleFree(pages[0].pfn())));
}

/// A 32 MiB one-node machine with one CPU, its free checks on or off.
fn small_machine(free_checks: bool) -> LocalPageAllocator {
    let options = AllocOptions {
        free_checks,
        ..AllocOptions::default()
    };
    LocalPageAllocator::boot_with(&one_node(32, 1), options).unwrap()
}

/// With the free checks off the bulk free trusts its caller, so a page
/// listed twice is claimed twice; when a later page is refused, the undo
/// still gives that page the word it had before the call (regression: the
/// undo restored the saved words first claim first, leaving it listed).
#[test]
fn a_refused_unchecked_bulk_free_restores_a_page_listed_twice() {
    let allocator = small_machine(false);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let pages: Vec<Page> = (0..3)
        .map(|_| cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap())
        .collect();
    let beyond = Page::from_pfn(Pfn(1 << 30));
    for batch in [
        vec![pages[0], pages[0], beyond],
        vec![pages[1], pages[2], pages[1], pages[2], beyond],
        [vec![pages[0]; 70], vec![beyond]].concat(),
    ] {
        let err = assert_unchanged(&allocator, || cpu.free_pages_bulk(&batch));
        assert_eq!(err, Err(FreeError::NotMemory(beyond.pfn())));
        assert_conserved(&allocator, 3);
    }
    for page in pages {
        cpu.free_pages(page, Order(0)).unwrap();
    }
    assert_conserved(&allocator, 0);
}

#[test]
fn a_refused_bulk_free_restores_every_run_it_gathered() {
    // A bulk free gathers the pages from the first on into a run while they
    // go to one list (64 at most), then checks and marks the rest. A bad
    // page first, after a full run, or after a run that pages of another
    // list closed must leave every record as it was, with free checks on
    // and off.
    for free_checks in [true, false] {
        let allocator = small_machine(free_checks);
        let cpu = allocator.cpu(CpuId(0)).unwrap();
        let alloc = |gfp: Gfp, nr: usize| -> Vec<Page> {
            (0..nr)
                .map(|_| cpu.alloc_pages(gfp, Order(0), NodeId(0)).unwrap())
                .collect()
        };
        let movable = alloc(Gfp::MOVABLE, 70);
        let unmovable = alloc(Gfp::KERNEL, 10);
        assert_conserved(&allocator, 80);
        let beyond = Page::from_pfn(Pfn(1 << 30));
        let not_memory = Err(FreeError::NotMemory(beyond.pfn()));
        let mixed = [&movable[..5], &unmovable[..5], &movable[5..10]].concat();
        let mut batches = vec![
            ([&[beyond], &movable[..3]].concat(), not_memory),
            ([&[beyond], &movable[..]].concat(), not_memory),
            ([&movable[..], &[beyond]].concat(), not_memory),
            ([&mixed[..], &[beyond]].concat(), not_memory),
        ];
        if free_checks {
            let twice = |page: Page| Err(FreeError::DoubleFree(page.pfn()));
            batches.extend([
                ([&movable[..], &movable[..1]].concat(), twice(movable[0])),
                ([&mixed[..], &unmovable[..1]].concat(), twice(unmovable[0])),
                (
                    [&movable[..2], &unmovable[..1], &movable[1..2]].concat(),
                    twice(movable[1]),
                ),
            ]);
        }
        for (batch, expected) in batches {
            let err = assert_unchanged(&allocator, || cpu.free_pages_bulk(&batch));
            assert_eq!(
                err,
                expected,
                "free_checks {free_checks}, {} pages",
                batch.len()
            );
        }
        assert_conserved(&allocator, 80);
        cpu.free_pages_bulk(&mixed).unwrap();
        cpu.free_pages_bulk(&movable[10..]).unwrap();
        cpu.free_pages_bulk(&unmovable[5..]).unwrap();
        assert_conserved(&allocator, 0);
    }
}

#[test]
fn a_refused_small_bulk_free_changes_nothing() {
    // A bulk free of 2 to 8 slots whose pages all go to one per-CPU list
    // claims them as it checks them, and hands any other call to the two
    // passes. A bad page at any slot, after pages of the first page's
    // pageblock or after a first page of another freetype, must leave
    // every record, list and slot as it was and be named as the two passes
    // name it, with free checks on and off.
    for free_checks in [true, false] {
        let allocator = small_machine(free_checks);
        let cpu = allocator.cpu(CpuId(0)).unwrap();
        let alloc = |gfp: Gfp, order: u8| cpu.alloc_pages(gfp, Order(order), NodeId(0)).unwrap();
        let movable: Vec<Page> = (0..8).map(|_| alloc(Gfp::MOVABLE, 0)).collect();
        let unmovable = alloc(Gfp::KERNEL, 0);
        let pair = alloc(Gfp::MOVABLE, 1);
        let freed = alloc(Gfp::MOVABLE, 0);
        cpu.free_pages(freed, Order(0)).unwrap();
        assert_conserved(&allocator, 11);
        let beyond = Page::from_pfn(Pfn(1 << 30));
        for len in 2..=8 {
            for at in 0..len {
                for other_first in [false, true] {
                    let mut batch = movable[..len].to_vec();
                    if other_first {
                        if at == 0 {
                            continue;
                        }
                        batch[0] = unmovable;
                    }
                    let mut bad = vec![(beyond, FreeError::NotMemory(beyond.pfn()))];
                    if free_checks {
                        bad.push((freed, FreeError::DoubleFree(freed.pfn())));
                        bad.push((
                            pair,
                            FreeError::WrongOrder {
                                pfn: pair.pfn(),
                                allocated: Order(1),
                                freed: Order(0),
                            },
                        ));
                        if at > 0 {
                            bad.push((batch[0], FreeError::DoubleFree(batch[0].pfn())));
                        }
                    }
                    for (page, expected) in bad {
                        batch[at] = page;
                        let err = assert_unchanged(&allocator, || cpu.free_pages_bulk(&batch));
                        assert_eq!(err, Err(expected), "{len} pages, bad at {at}");
                        // The array form empties slots as it claims their
                        // pages: a refusal refills them.
                        let array: Vec<Option<Page>> = batch.iter().copied().map(Some).collect();
                        let mut slots = array.clone();
                        let err =
                            assert_unchanged(&allocator, || cpu.free_pages_bulk_array(&mut slots));
                        assert_eq!(err, Err(expected), "{len} slots, bad at {at}");
                        assert_eq!(slots, array);
                    }
                }
            }
        }
        assert_conserved(&allocator, 11);
        if free_checks {
            // One slot, and slots with a hole: no slot changes on error,
            // all are empty after.
            let mut one = [Some(freed)];
            let err = assert_unchanged(&allocator, || cpu.free_pages_bulk_array(&mut one));
            assert_eq!(err, Err(FreeError::DoubleFree(freed.pfn())));
            assert_eq!(one, [Some(freed)]);
            let mut slots = vec![Some(movable[0]), None, Some(movable[1]), Some(freed)];
            let before = slots.clone();
            let err = assert_unchanged(&allocator, || cpu.free_pages_bulk_array(&mut slots));
            assert_eq!(err, Err(FreeError::DoubleFree(freed.pfn())));
            assert_eq!(slots, before);
            slots[3] = None;
            assert_eq!(cpu.free_pages_bulk_array(&mut slots), Ok(2));
            assert!(slots.iter().all(Option::is_none));
            cpu.free_pages_bulk(&movable[2..]).unwrap();
        } else {
            cpu.free_pages_bulk(&movable).unwrap();
        }
        cpu.free_pages_bulk(&[unmovable]).unwrap();
        cpu.free_pages(pair, Order(1)).unwrap();
        assert_conserved(&allocator, 0);
    }
}

#[test]
fn wrong_order_and_unaligned_frees_are_refused() {
    let allocator = busy_machine();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let page = cpu.alloc_pages(Gfp::KERNEL, Order(2), NodeId(0)).unwrap();
    for freed in [0u8, 1, 3, 10, 11, 255] {
        let err = assert_unchanged(&allocator, || cpu.free_pages(page, Order(freed)));
        assert_eq!(
            err,
            Err(FreeError::WrongOrder {
                pfn: page.pfn(),
                allocated: Order(2),
                freed: Order(freed)
            }),
            "freed at order {freed}"
        );
    }
    for (offset, order) in [(1, 0u8), (1, 1), (2, 1), (3, 0)] {
        let inner = Page::from_pfn(page.pfn().offset(offset));
        let err = assert_unchanged(&allocator, || cpu.free_pages(inner, Order(order)));
        assert_eq!(
            err,
            Err(FreeError::NotAllocated(inner.pfn())),
            "+{offset} order {order}"
        );
    }
    assert_conserved(&allocator, 4);
    cpu.free_pages(page, Order(2)).unwrap();
    assert_conserved(&allocator, 0);
}

#[test]
fn pfns_in_a_hole_or_beyond_memory_are_not_memory() {
    let allocator = boot(&holey_machine());
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let held = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    for pfn in [4096u64, 6000, 8191, 12288, 1 << 20, 1 << 32, u64::MAX] {
        // A page names PFN u64::MAX as u64::MAX - 1 (see `Page`): neither is memory.
        let page = Page::from_pfn(Pfn(pfn));
        for order in [0u8, 3, 10, 200] {
            let err = assert_unchanged(&allocator, || cpu.free_pages(page, Order(order)));
            assert_eq!(
                err,
                Err(FreeError::NotMemory(page.pfn())),
                "PFN {pfn} order {order}"
            );
        }
        let err = assert_unchanged(&allocator, || cpu.free_pages_bulk(&[held, page]));
        assert_eq!(err, Err(FreeError::NotMemory(page.pfn())));
    }
    // Memory on both sides of the hole is in use and frees normally.
    let zone = &allocator.zone_snapshots()[0];
    assert_eq!((zone.spanned, zone.present), (12288, 8192));
    assert_conserved(&allocator, 1);
    cpu.free_pages(held, Order(0)).unwrap();
    assert_conserved(&allocator, 0);
}

#[test]
fn orders_above_max_unknown_nodes_and_bad_gfp_are_refused() {
    let allocator = busy_machine();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let refused = |gfp: Gfp, order: u8, node: u16| {
        assert_unchanged(&allocator, || {
            cpu.alloc_pages(gfp, Order(order), NodeId(node))
        })
    };
    for order in [11u8, 12, 63, 64, 255] {
        assert_eq!(
            refused(Gfp::KERNEL, order, 0),
            Err(AllocError::OrderTooLarge {
                order: Order(order),
                max: Order(10)
            })
        );
    }
    for node in [1u16, 2, 255, u16::MAX] {
        assert_eq!(
            refused(Gfp::KERNEL, 0, node),
            Err(AllocError::NoSuchNode(NodeId(node)))
        );
    }
    let bad_gfps = [
        Gfp::KERNEL | Gfp::DMA,
        Gfp::KERNEL | Gfp::DMA32 | Gfp::HIGHMEM,
        Gfp::HIGHUSER_MOVABLE | Gfp::DMA32,
        Gfp::MOVABLE | Gfp::RECLAIMABLE,
        Gfp::KERNEL | Gfp::RECLAIMABLE | Gfp::UNMAPPED,
        Gfp::HIGHUSER_MOVABLE | Gfp::UNMAPPED,
    ];
    for gfp in bad_gfps {
        assert!(
            matches!(refused(gfp, 0, 0), Err(AllocError::Unsupported(_))),
            "{gfp:?}"
        );
        assert!(matches!(
            refused(gfp, 3, 0),
            Err(AllocError::Unsupported(_))
        ));
        let mut slots = [None, Some(Page::from_pfn(Pfn(7))), None];
        let result = assert_unchanged(&allocator, || {
            cpu.alloc_pages_bulk(gfp, NodeId(0), None, &mut slots)
        });
        assert!(matches!(result, Err(AllocError::Unsupported(_))));
        assert_eq!(slots, [None, Some(Page::from_pfn(Pfn(7))), None]);
    }
    let mut slots = [None; 4];
    let result = assert_unchanged(&allocator, || {
        cpu.alloc_pages_bulk(Gfp::KERNEL, NodeId(3), None, &mut slots)
    });
    assert_eq!(result, Err(AllocError::NoSuchNode(NodeId(3))));
    let mut list = Vec::new();
    let result = assert_unchanged(&allocator, || {
        cpu.alloc_pages_bulk_vec(Gfp::KERNEL, NodeId(9), 4, &mut list)
    });
    assert_eq!(result, Err(AllocError::NoSuchNode(NodeId(9))));
    assert!(list.is_empty());
    assert_conserved(&allocator, 0);
}

#[test]
fn node_masks_without_a_usable_node_change_nothing() {
    // The kernel's slow path gives up at once when no zone is eligible
    // (`if (!ac->preferred_zoneref->zone) goto nopage;`): no drain, no
    // counters, just a failed allocation.
    let allocator = busy_machine();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut absent = Nodemask::NONE;
    absent.set(NodeId(5));
    for mask in [Nodemask::NONE, absent] {
        for gfp in [Gfp::KERNEL, Gfp::ATOMIC, Gfp::KERNEL | Gfp::MEMALLOC] {
            let result = assert_unchanged(&allocator, || {
                cpu.alloc_pages_nodemask(gfp, Order(0), NodeId(0), &mask)
            });
            assert_eq!(result, Err(AllocError::NoMemory { order: Order(0) }));
        }
        let mut slots = [None; 8];
        let result = assert_unchanged(&allocator, || {
            cpu.alloc_pages_bulk(Gfp::KERNEL, NodeId(0), Some(&mask), &mut slots)
        });
        assert_eq!(result, Ok(0));
    }
    assert_conserved(&allocator, 0);
}

#[test]
fn unknown_cpus_are_refused() {
    let allocator = busy_machine();
    assert!(matches!(
        allocator.cpu(CpuId(2)),
        Err(CpuError::NoSuchCpu(CpuId(2)))
    ));
    assert!(matches!(
        allocator.cpu(CpuId(u16::MAX)),
        Err(CpuError::NoSuchCpu(_))
    ));
    let result = assert_unchanged(&allocator, || allocator.drain_pcp(CpuId(2)));
    assert_eq!(result, Err(CpuError::NoSuchCpu(CpuId(2))));
}

#[test]
fn shared_cpus_register_once_at_a_time() {
    let allocator = SharedPageAllocator::boot(&one_node(32, 2)).unwrap();
    let first = allocator.register_cpu(CpuId(0)).unwrap();
    assert!(matches!(
        allocator.register_cpu(CpuId(0)),
        Err(CpuError::Busy(CpuId(0)))
    ));
    assert!(matches!(
        allocator.register_cpu(CpuId(2)),
        Err(CpuError::NoSuchCpu(CpuId(2)))
    ));
    let second = allocator.register_cpu(CpuId(1)).unwrap();
    let page = first.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
    second.free_pages(page, Order(0)).unwrap();
    assert_eq!(
        second.free_pages(page, Order(0)),
        Err(FreeError::DoubleFree(page.pfn()))
    );
    drop(first);
    let again = allocator.register_cpu(CpuId(0)).unwrap();
    assert_eq!(again.cpu(), CpuId(0));
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.nr_allocated_pages(), 0);
}

#[test]
fn bad_machine_descriptions_are_refused_naming_the_field() {
    let mut desc = one_node(32, 2);
    desc.nodes[0].ranges[0].size = 3 * 1024 * 1024 + 4096;
    let err = LocalPageAllocator::boot(&desc).err().unwrap();
    assert_eq!(err.field, "node[0].mem");
    let mut desc = one_node(32, 2);
    desc.pageblock_order = 11;
    assert_eq!(
        LocalPageAllocator::boot_with(&desc, AllocOptions::default())
            .err()
            .unwrap()
            .field,
        "pageblock_order"
    );
    assert!(MachineDesc::uniform(32 << 20, 0, 1).is_err());
    assert!(MachineDesc::uniform(32 << 20, 1, 0).is_err());
}

#[test]
fn a_pcp_sizing_written_as_a_literal_is_checked_at_boot() {
    // Regression: PcpSizing { batch: Some(u32::MAX), .. } skipped
    // PcpSizing::new() and booted; check_invariants() then overflowed
    // summing the per-CPU bounds (a panic with overflow checks).
    let desc = MachineDesc::uniform(64 << 20, 1, 2).unwrap();
    for pcp in [
        pageframe::PcpSizing {
            high_fraction: 0,
            batch: Some(u32::MAX),
        },
        pageframe::PcpSizing {
            high_fraction: 0,
            batch: Some(0),
        },
        pageframe::PcpSizing {
            high_fraction: 1,
            batch: None,
        },
    ] {
        let options = pageframe::AllocOptions {
            pcp,
            ..pageframe::AllocOptions::KERNEL
        };
        let err = LocalPageAllocator::boot_with(&desc, options).err();
        assert_eq!(err.map(|err| err.field), Some("pcp".to_string()), "{pcp:?}");
    }
}
