//! Free-list shuffling, memory hotplug and NUMA emulation, with the
//! allocator's invariants checked after every step.

mod common;

use common::{boot, ProcViews, MIB};
use pageframe::machine::{apply_cmdline, PfnRange};
use pageframe::{
    AllocOptions, CpuId, Errno, Gfp, HotplugError, LocalPageAllocator, MachineDesc, NodeId, Order,
    Pfn, ZoneType,
};

/// The proc views without the zone-lock counters (a failed call takes the
/// lock, and counts it, even though it changes nothing else).
fn views(allocator: &LocalPageAllocator) -> ProcViews {
    let mut views = ProcViews::capture(allocator);
    views.vmstat = views
        .vmstat
        .lines()
        .filter(|line| !line.starts_with("zone_lock_"))
        .map(|line| format!("{line}\n"))
        .collect();
    views
}

fn range(start: u64, end: u64) -> PfnRange {
    PfnRange {
        start: Pfn(start),
        end: Pfn(end),
    }
}

/// The order-10 blocks of one list, head first.
fn first_blocks(allocator: &LocalPageAllocator, count: usize) -> Vec<u64> {
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let pages: Vec<_> = (0..count)
        .map(|_| {
            cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(10), NodeId(0))
                .unwrap()
        })
        .collect();
    let pfns = pages.iter().map(|page| page.pfn().0).collect();
    for page in pages {
        cpu.free_pages(page, Order(10)).unwrap();
    }
    pfns
}

/// ```text
///  64 MiB, one node: 16 order-10 blocks, PFN 0, 1024, ... 15360
///  unshuffled: handed out in address order   [0][1024][2048]...
///  shuffled:   handed out in a seeded order  [7168][0][12288]...
/// ```
#[test]
fn shuffle_permutes_the_boot_free_list_and_is_seeded() {
    let plain = MachineDesc::uniform(64 * MIB, 1, 1).unwrap();
    let unshuffled = boot(&plain);
    assert!(!unshuffled.shuffle_enabled());
    let order: Vec<u64> = first_blocks(&unshuffled, 8);
    assert_eq!(order, (0..8).map(|block| block * 1024).collect::<Vec<_>>());
    unshuffled.check_invariants().unwrap();

    let mut desc = plain.clone();
    apply_cmdline(&mut desc, "page_alloc.shuffle=1").unwrap();
    let boot_seeded = |seed| {
        let allocator =
            LocalPageAllocator::boot_seeded(&desc, AllocOptions::default(), seed).unwrap();
        allocator.check_invariants().unwrap();
        allocator
    };
    let a = boot_seeded(1);
    assert!(a.shuffle_enabled());
    let shuffled = first_blocks(&a, 8);
    a.check_invariants().unwrap();
    assert_ne!(shuffled, order, "the shuffle moved blocks");
    assert_eq!(shuffled, first_blocks(&boot_seeded(1), 8), "same seed");
    assert_ne!(shuffled, first_blocks(&boot_seeded(2), 8), "other seed");
    // Nothing lost: the buddy view is the same as the unshuffled machine's.
    assert_eq!(
        pageframe::proc::buddyinfo(&a),
        pageframe::proc::buddyinfo(&unshuffled)
    );
}

/// A second pass over an already shuffled zone keeps every invariant and
/// swaps only free blocks of the shuffle order with the same type.
///
/// ```text
///  PFN 0     1024    2048 ...
///  |alloc  | free  | free |...   the allocated block is never a partner
/// ```
#[test]
fn shuffle_skips_allocated_blocks() {
    let mut desc = MachineDesc::uniform(64 * MIB, 1, 1).unwrap();
    apply_cmdline(&mut desc, "page_alloc.shuffle=1").unwrap();
    let mut allocator = LocalPageAllocator::boot_seeded(&desc, AllocOptions::default(), 5).unwrap();
    let held = {
        let cpu = allocator.cpu(CpuId(0)).unwrap();
        cpu.alloc_pages(Gfp::KERNEL, Order(10), NodeId(0)).unwrap()
    };
    allocator.check_invariants().unwrap();
    let stats = allocator.shuffle_free_memory();
    allocator.check_invariants().unwrap();
    assert_eq!(stats.blocks, 15, "16 blocks, one allocated");
    assert!(stats.swapped > 0);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    cpu.free_pages(held, Order(10)).unwrap();
    allocator.check_invariants().unwrap();
}

/// Shuffle off: a freed order-10 block goes to the head (the merge
/// heuristic never picks the tail at MAX_PAGE_ORDER), so it comes back first.
/// Shuffle on: head or tail by a random bit, so over many frees both happen.
#[test]
fn pick_tail_randomizes_the_end_of_max_order_frees() {
    let plain = MachineDesc::uniform(64 * MIB, 1, 1).unwrap();
    let allocator = boot(&plain);
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    for _ in 0..32 {
        let page = cpu
            .alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(10), NodeId(0))
            .unwrap();
        cpu.free_pages(page, Order(10)).unwrap();
        let again = cpu
            .alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(10), NodeId(0))
            .unwrap();
        assert_eq!(again, page);
        cpu.free_pages(again, Order(10)).unwrap();
    }
    let mut desc = plain.clone();
    apply_cmdline(&mut desc, "page_alloc.shuffle=1").unwrap();
    let allocator = LocalPageAllocator::boot_seeded(&desc, AllocOptions::default(), 9).unwrap();
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let mut same = 0;
    for _ in 0..64 {
        let page = cpu
            .alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(10), NodeId(0))
            .unwrap();
        cpu.free_pages(page, Order(10)).unwrap();
        let again = cpu
            .alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(10), NodeId(0))
            .unwrap();
        same += (again == page) as u32;
        cpu.free_pages(again, Order(10)).unwrap();
        allocator.check_invariants().unwrap();
    }
    assert!((10..54).contains(&same), "head about half the time: {same}");
}

/// ```text
///  boot: [0, 64M) node 0 Normal          hot-add: [64M, 128M) Movable
///  |<------ Normal ------>|<----- Movable (online) ----->|
///  PFN 0              16384                          32768
/// ```
#[test]
fn online_then_offline_a_range() {
    let mut allocator = boot(&MachineDesc::uniform(64 * MIB, 1, 2).unwrap());
    let before_free = allocator.nr_free_pages();
    allocator
        .online_pages(range(16384, 32768), NodeId(0), ZoneType::Movable)
        .unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.nr_free_pages(), before_free + 16384);
    let movable = allocator
        .zone_snapshots()
        .into_iter()
        .find(|zone| zone.zone_type == ZoneType::Movable)
        .unwrap();
    assert_eq!((movable.start_pfn, movable.present), (16384, 16384));
    assert!(movable.watermarks.min > 0);
    // The pagesets got the new zone's limits (high itself follows them on
    // first use, as in the kernel).
    assert!(movable.pcp[0].high_min > 0);
    assert!(movable.pcp[0].high_max >= movable.pcp[0].high_min);

    // Movable allocations now use the new zone first.
    let page = allocator
        .cpu(CpuId(0))
        .unwrap()
        .alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NodeId(0))
        .unwrap();
    assert!(page.pfn().0 >= 16384);
    allocator.check_invariants().unwrap();

    // Offline with a page in use: EBUSY, naming it; nothing changed.
    allocator.drain_all_pages();
    let before = views(&allocator);
    let err = allocator.offline_pages(range(16384, 32768)).unwrap_err();
    assert_eq!(err.errno(), Errno::EBUSY);
    match &err {
        HotplugError::Busy { in_use, first, .. } => {
            assert_eq!((*in_use, *first), (1, page.pfn()));
        }
        other => panic!("{other}"),
    }
    allocator.check_invariants().unwrap();
    assert_eq!(views(&allocator), before);

    // Free it and the offline succeeds; the zone is empty again.
    allocator
        .cpu(CpuId(0))
        .unwrap()
        .free_pages(page, Order(0))
        .unwrap();
    assert_eq!(allocator.offline_pages(range(16384, 32768)).unwrap(), 16384);
    allocator.check_invariants().unwrap();
    assert_eq!(allocator.nr_free_pages(), before_free);
    let movable = allocator
        .zone_snapshots()
        .into_iter()
        .find(|zone| zone.zone_type == ZoneType::Movable)
        .unwrap();
    assert_eq!(movable.present, 0);
    // The hole is a hole again: frees there are refused.
    assert!(allocator
        .cpu(CpuId(0))
        .unwrap()
        .free_pages(pageframe::Page::from_pfn(Pfn(20000)), Order(0))
        .is_err());
}

/// ```text
///  |<-- Normal [0, 32M) -->|<-- offline [32M, 36M) -->|<-- Normal ... 64M -->|
///  an UNMOVABLE block inside keeps its type when the offline fails
/// ```
#[test]
fn failed_offline_restores_pageblock_types() {
    let mut allocator = boot(&MachineDesc::uniform(64 * MIB, 1, 1).unwrap());
    // Take memory until an unmovable page lands in [8192, 9216).
    let mut held = Vec::new();
    {
        let cpu = allocator.cpu(CpuId(0)).unwrap();
        loop {
            let page = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
            held.push(page);
            if (8192..9216).contains(&page.pfn().0) {
                break;
            }
        }
    }
    allocator.drain_all_pages();
    allocator.check_invariants().unwrap();
    let before = views(&allocator);
    let err = allocator.offline_pages(range(8192, 9216)).unwrap_err();
    assert!(matches!(err, HotplugError::Busy { .. }), "{err}");
    allocator.check_invariants().unwrap();
    assert_eq!(views(&allocator), before);
    assert!(allocator
        .offline_pages(range(8192, 9000))
        .is_err_and(|err| err.errno() == Errno::EINVAL));
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    for page in held {
        cpu.free_pages(page, Order(0)).unwrap();
    }
    allocator.check_invariants().unwrap();
}

#[test]
fn bad_online_calls_change_nothing() {
    let mut allocator = boot(&MachineDesc::uniform(64 * MIB, 1, 1).unwrap());
    let before = views(&allocator);
    for (bad, node, zone) in [
        (range(0, 1024), 0, ZoneType::Normal),      // already online
        (range(16384, 16900), 0, ZoneType::Normal), // not aligned
        (range(16384, 17408), 3, ZoneType::Normal), // no such node
        (range(16384, 17408), 0, ZoneType::Dma32),  // not a hotplug zone
    ] {
        let err = allocator.online_pages(bad, NodeId(node), zone).unwrap_err();
        assert_eq!(err.errno(), Errno::EINVAL, "{err}");
        allocator.check_invariants().unwrap();
    }
    assert_eq!(views(&allocator), before);
}

/// Online with shuffle on: the new blocks are shuffled into the zone.
#[test]
fn online_shuffles_the_zone() {
    let mut desc = MachineDesc::uniform(64 * MIB, 1, 1).unwrap();
    apply_cmdline(&mut desc, "page_alloc.shuffle=1").unwrap();
    let mut allocator = LocalPageAllocator::boot_seeded(&desc, AllocOptions::default(), 3).unwrap();
    let stats = allocator
        .online_pages(range(16384, 32768), NodeId(0), ZoneType::Normal)
        .unwrap();
    allocator.check_invariants().unwrap();
    assert_eq!(stats.blocks, 32);
    assert!(stats.swapped > 0);
}

/// ```text
///  numa=fake=2U on one 256 MiB node with 2 CPUs:
///  |<-- emu node 0 (CPU 0) -->|<-- emu node 1 (CPU 1) -->|
///  PFN 0                  32768                      65536
/// ```
#[test]
fn numa_emulation_splits_a_node() {
    let mut desc = MachineDesc::uniform(256 * MIB, 1, 2).unwrap();
    apply_cmdline(&mut desc, "numa=fake=2U").unwrap();
    let allocator = boot(&desc);
    assert_eq!(allocator.nr_nodes(), 2);
    assert_eq!(allocator.layout().distance[0][1], 10);
    let cpu = allocator.cpu(CpuId(1)).unwrap();
    let page = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(1)).unwrap();
    assert!(page.pfn().0 >= 32768);
    allocator.check_invariants().unwrap();
}

/// Seeded random sequences of allocations, frees, onlines and offlines
/// (with shuffle on), checking every invariant after every step.
///
/// ```text
///  boot [0, 32M) Normal; hotplug slots of 4 MiB in [32M, 64M), node 0 or 1
///  |<-- boot -->|s0|s1|s2|s3|s4|s5|s6|s7|
/// ```
#[test]
fn random_hotplug_sequences_keep_invariants() {
    let (mut onlined, mut offlined, mut busy) = (0, 0, 0);
    for seed in 0..6u64 {
        let mut desc = MachineDesc::uniform(64 * MIB, 2, 2).unwrap();
        desc.nodes[0].ranges[0].size = 32 * MIB;
        desc.nodes[1].ranges[0].start = 96 * MIB;
        apply_cmdline(&mut desc, "page_alloc.shuffle=1").unwrap();
        let mut allocator =
            LocalPageAllocator::boot_seeded(&desc, AllocOptions::default(), seed).unwrap();
        let mut rng = pageframe::MachineRng::new(seed);
        let mut online = [false; 8];
        let mut held: Vec<(pageframe::Page, Order)> = Vec::new();
        for _ in 0..300 {
            match rng.below(4) {
                0 => {
                    let slot = rng.below(8) as usize;
                    let start = 8192 + slot as u64 * 1024;
                    let result = if online[slot] {
                        allocator
                            .offline_pages(range(start, start + 1024))
                            .map(|_| ())
                    } else {
                        let zone = if rng.chance(1, 2) {
                            ZoneType::Normal
                        } else {
                            ZoneType::Movable
                        };
                        allocator
                            .online_pages(
                                range(start, start + 1024),
                                NodeId(rng.below(2) as u16),
                                zone,
                            )
                            .map(|_| ())
                    };
                    match result {
                        Ok(()) => {
                            if online[slot] {
                                offlined += 1;
                            } else {
                                onlined += 1;
                            }
                            online[slot] = !online[slot];
                        }
                        Err(err) => {
                            assert_eq!(err.errno(), Errno::EBUSY, "{err}");
                            busy += 1;
                        }
                    }
                }
                1 | 2 => {
                    let order = Order(rng.below(4) as u8);
                    let gfp = if rng.chance(1, 2) {
                        Gfp::KERNEL
                    } else {
                        Gfp::HIGHUSER_MOVABLE
                    };
                    let cpu = allocator.cpu(CpuId(rng.below(2) as u16)).unwrap();
                    if let Ok(page) = cpu.alloc_pages(gfp, order, NodeId(rng.below(2) as u16)) {
                        held.push((page, order));
                    }
                }
                _ => {
                    if !held.is_empty() {
                        let (page, order) = held.swap_remove(rng.below(held.len() as u64) as usize);
                        let cpu = allocator.cpu(CpuId(rng.below(2) as u16)).unwrap();
                        cpu.free_pages(page, order).unwrap();
                    }
                }
            }
            allocator.check_invariants().unwrap();
        }
        let cpu = allocator.cpu(CpuId(0)).unwrap();
        for (page, order) in held {
            cpu.free_pages(page, order).unwrap();
        }
        allocator.check_invariants().unwrap();
    }
    assert!(
        onlined > 0 && offlined > 0 && busy > 0,
        "{onlined} {offlined} {busy}"
    );
}
