//! Hostile input (issue 16): machine descriptions, command lines and hotplug
//! steps built to divide by zero, wrap around, narrow, exhaust memory or
//! trip a false invariant alarm. Each must be refused with a typed error
//! naming the field (state unchanged), or boot cleanly and pass
//! `check_invariants()`. The test profile keeps overflow checks on, so a
//! wrap-around the code does not check would panic here; the explicit
//! error assertions are what fails in release mode, where it would wrap.

mod common;

use common::{assert_unchanged_mut, boot, ProcViews, MIB};
use pageframe::machine::{apply_cmdline, HotplugStep, MemRange, MAX_CPU_ZONE_PAIRS};
use pageframe::reclaim::{Mm, MmConfig, MmError};
use pageframe::{
    AllocError, CpuId, Gfp, HotplugError, LocalPageAllocator, MachineDesc, NodeId, Order, Pfn,
    ZoneType,
};

/// Two nodes: node 0 `[0, 256M)` with CPUs 0-1, node 1 `[256M, 512M)` with
/// CPUs 2-3.
fn two_nodes() -> MachineDesc {
    MachineDesc::uniform(512 * MIB, 2, 4).unwrap()
}

#[test]
fn numa_fake_with_mem_leaving_a_node_empty_does_not_divide_by_zero() {
    for fake in ["numa=fake=2", "numa=fake=4", "numa=fake=2U"] {
        let mut desc = two_nodes();
        apply_cmdline(&mut desc, &format!("mem=256M {fake}")).unwrap();
        let allocator = boot(&desc);
        // Node 1's CPUs have no emulated child: they go to node 0.
        let layout = allocator.layout();
        assert_eq!(layout.nr_cpus(), 4, "{fake}");
        assert_eq!(layout.cpu_node[2], NodeId(0), "{fake}");
        assert_eq!(layout.cpu_node[3], NodeId(0), "{fake}");
        assert!(layout.physical_node.iter().all(|&node| node == NodeId(0)));
        let cpu = allocator.cpu(CpuId(3)).unwrap();
        let page = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).unwrap();
        cpu.free_pages(page, Order(0)).unwrap();
        allocator.check_invariants().unwrap();
    }
}

#[test]
fn mem_limit_of_zero_with_numa_fake_is_an_error_not_a_panic() {
    let mut desc = two_nodes();
    apply_cmdline(&mut desc, "mem=0 numa=fake=2U").unwrap();
    let err = desc.layout().unwrap_err();
    assert_eq!(err.field, "cmdline mem");
}

#[test]
fn range_sizes_summing_past_u64_max_are_refused_naming_the_node() {
    let mut desc = two_nodes();
    let block = desc.pageblock_bytes();
    let huge = u64::MAX / block * block;
    desc.nodes[1].ranges = vec![
        MemRange {
            start: 1 << 40,
            size: huge,
        },
        MemRange {
            start: 0,
            size: huge,
        },
    ];
    let err = desc.layout().unwrap_err();
    assert_eq!(err.field, "node[1].mem");
    assert!(err.message.contains("2^64"), "{err}");
}

#[test]
fn hotplug_node_65536_is_refused_not_wrapped_to_node_0() {
    let mut allocator = boot(&MachineDesc::uniform(64 * MIB, 1, 2).unwrap());
    let step = HotplugStep {
        online: true,
        start: 64 * MIB,
        size: 64 * MIB,
        node: 65536,
        zone: ZoneType::Movable,
    };
    let (index, err) = assert_unchanged_mut(&mut allocator, |allocator| {
        allocator.apply_hotplug(&[step]).unwrap_err()
    });
    assert_eq!(index, 0);
    assert!(matches!(&err, HotplugError::Invalid(message) if message.contains("hotplug[0].node")));
    assert_eq!(allocator.layout().present_pages(), 64 * MIB / 4096);
}

#[test]
fn hotplug_step_ending_past_u64_max_is_refused_naming_the_size() {
    let mut allocator = boot(&MachineDesc::uniform(64 * MIB, 1, 2).unwrap());
    let step = HotplugStep {
        online: true,
        start: u64::MAX - (4 * MIB - 1),
        size: 8 * MIB,
        node: 0,
        zone: ZoneType::Movable,
    };
    let (_, err) = assert_unchanged_mut(&mut allocator, |allocator| {
        allocator.apply_hotplug(&[step]).unwrap_err()
    });
    assert!(matches!(&err, HotplugError::Invalid(message) if message.contains("hotplug[0].size")));
}

#[test]
fn per_cpu_state_blow_up_is_refused_at_validation() {
    // 65535 CPUs x 256 nodes x 2 zones would be 33 million per-CPU list sets.
    let desc = MachineDesc::uniform(256 << 30, 256, 65535).unwrap();
    let err = desc.layout().unwrap_err();
    assert_eq!(err.field, "cpus");
    assert!(
        err.message.contains(&MAX_CPU_ZONE_PAIRS.to_string()),
        "{err}"
    );
    // At the limit it is fine: 65535 CPUs over 2 nodes of 2 zones.
    let desc = MachineDesc::uniform(64 * MIB, 2, 65535).unwrap();
    assert!(desc.layout().is_ok());
}

#[test]
fn touching_ranges_of_one_node_coalesce_so_a_seam_block_passes_invariants() {
    let mut desc = MachineDesc::uniform(64 * MIB, 1, 2).unwrap();
    // [0, 30M) and [30M, 64M): a max-order (4 MiB) block spans the seam.
    desc.nodes[0].ranges = vec![
        MemRange {
            start: 30 * MIB,
            size: 34 * MIB,
        },
        MemRange {
            start: 0,
            size: 30 * MIB,
        },
    ];
    let allocator = LocalPageAllocator::boot(&desc).unwrap();
    allocator.check_invariants().unwrap();
    let zone = allocator
        .layout()
        .zones()
        .find(|zone| zone.is_populated())
        .unwrap();
    assert_eq!(zone.present.len(), 1);
    assert_eq!(zone.present_pages(), 64 * MIB / 4096);
}

#[test]
fn numa_fake_over_a_node_starting_at_398m_passes_invariants() {
    let mut desc = MachineDesc::uniform(1024 * MIB, 1, 2).unwrap();
    desc.nodes[0].ranges = vec![
        MemRange {
            start: 398 * MIB,
            size: 300 * MIB,
        },
        MemRange {
            start: 698 * MIB,
            size: 326 * MIB,
        },
    ];
    for fake in ["numa=fake=2", "numa=fake=2U", "numa=fake=3"] {
        let mut desc = desc.clone();
        apply_cmdline(&mut desc, fake).unwrap();
        let allocator = LocalPageAllocator::boot(&desc).unwrap();
        allocator.check_invariants().unwrap();
        for zone in allocator.layout().zones() {
            assert!(zone.present.len() <= 1, "{fake}: {:?}", zone.present);
        }
    }
}

#[test]
fn remote_cpu_refilling_every_list_of_a_memory_only_node_passes_invariants() {
    // 16 CPUs on node 0, node 1 memory-only: node 1's per-CPU high is its
    // low watermark split over all 16 CPUs (60 pages), while one refill of
    // each of the twelve low-order lists holds 198 pages.
    let mut desc = MachineDesc::uniform(512 * MIB, 2, 16).unwrap();
    desc.max_order = 3;
    desc.pageblock_order = 0;
    desc.nodes[0].cpus = (0..16).map(CpuId).collect();
    desc.nodes[1].cpus = Vec::new();
    let allocator = boot(&desc);
    let cpu = allocator.cpu(CpuId(1)).unwrap();
    let (mut held, mut highest) = (Vec::new(), 0);
    for round in 0..4 {
        for gfp in [
            Gfp::KERNEL,
            Gfp::HIGHUSER_MOVABLE,
            Gfp::KERNEL | Gfp::RECLAIMABLE,
        ] {
            for order in 0..=3u8 {
                let gfp = gfp | Gfp::THISNODE;
                let page = cpu.alloc_pages(gfp, Order(order), NodeId(1)).unwrap();
                held.push((page, Order(order)));
                allocator.check_invariants().unwrap();
                let pcp = &allocator.zone_snapshot(2).unwrap().pcp[1];
                highest = highest.max(pcp.count);
            }
        }
        if round % 2 == 1 {
            for (page, order) in held.drain(..) {
                cpu.free_pages(page, order).unwrap();
                allocator.check_invariants().unwrap();
            }
        }
    }
    let pcp = &allocator.zone_snapshot(2).unwrap().pcp[1];
    assert!(
        highest > pcp.high + 16,
        "the scenario must take count past high plus one refill: {highest}, {pcp:?}"
    );
}

#[test]
fn a_page_shift_past_63_is_refused_naming_the_page_size_not_shifted() {
    // The refusal's own message computed 1 << page_shift: a panic in a
    // debug build, "4K is not a page size" (shift 76 wrapped) in release.
    for (shift, shown) in [(64u8, "2^64"), (76, "2^76"), (255, "2^255"), (17, "128K")] {
        let mut desc = two_nodes();
        desc.page_shift = shift;
        let err = desc.layout().unwrap_err();
        assert_eq!(err.field, "page_size");
        assert!(
            err.message
                .starts_with(&format!("{shown} is not a page size")),
            "{err}"
        );
        assert_eq!(desc.page_bytes() == u64::MAX, shift >= 64);
    }
    let mut desc = two_nodes();
    desc.pageblock_order = 255;
    assert_eq!(desc.pageblock_bytes(), u64::MAX);
    assert_eq!(desc.layout().unwrap_err().field, "pageblock_order");
}

#[test]
fn many_online_steps_grow_the_memmap_once_and_a_refused_step_changes_nothing() {
    // Grown to each step's end in turn, the memmap was copied whole at
    // every step: 1600 steps of 128M took six minutes.
    let mut allocator = boot(&MachineDesc::uniform(64 * MIB, 1, 2).unwrap());
    let step = |index: u64| HotplugStep {
        online: true,
        start: (16 + index) * 4 * MIB,
        size: 4 * MIB,
        node: 0,
        zone: ZoneType::Movable,
    };
    let steps: Vec<HotplugStep> = (0..512).map(step).collect();
    allocator.apply_hotplug(&steps).unwrap();
    let end_pfn = (64 + 512 * 4) * MIB / 4096;
    assert_eq!(allocator.layout().present_pages(), end_pfn);
    assert_eq!(allocator.metadata_cost().memmap_records, end_pfn);
    allocator.check_invariants().unwrap();
    // The first step grows the memmap as far as the last online step, at
    // once; when that step is refused, the memmap stays grown, and nothing
    // else shows it: the machine is what the first step made it.
    let far = HotplugStep {
        node: 1,
        ..step(100)
    };
    let mut ahead = boot(&MachineDesc::uniform(64 * MIB, 1, 2).unwrap());
    let (index, _) = ahead.apply_hotplug(&[step(0), far]).unwrap_err();
    assert_eq!(index, 1);
    assert_eq!(
        ahead.metadata_cost().memmap_records,
        (far.start + far.size) / 4096
    );
    let mut first_only = boot(&MachineDesc::uniform(64 * MIB, 1, 2).unwrap());
    first_only.apply_hotplug(&steps[..1]).unwrap();
    assert_eq!(ahead.layout().end_pfn, first_only.layout().end_pfn);
    assert_eq!(ProcViews::capture(&ahead), ProcViews::capture(&first_only));
    let past_the_machine = Pfn((far.start >> 12) + 1);
    assert_eq!(ahead.pageblock_migratetype(past_the_machine), None);
    ahead.check_invariants().unwrap();
    // A refused step changes nothing.
    let mut allocator = boot(&MachineDesc::uniform(64 * MIB, 1, 2).unwrap());
    allocator.apply_hotplug(&steps[..1]).unwrap();
    let refused = HotplugStep { node: 1, ..step(1) };
    let (index, err) = assert_unchanged_mut(&mut allocator, |allocator| {
        allocator.apply_hotplug(&[refused, step(2)]).unwrap_err()
    });
    assert_eq!(index, 0);
    assert!(matches!(&err, HotplugError::Invalid(message) if message.contains("node 1")));
    allocator.check_invariants().unwrap();
}

#[test]
fn a_reclaim_allocation_above_max_order_is_refused_before_the_watermark_checks() {
    // The slow path's watermark check shifted by the order and sliced the
    // free areas from it: order 12 and up panicked in any build.
    let allocator = boot(&MachineDesc::uniform(64 * MIB, 1, 2).unwrap());
    let mut mm = Mm::new(&allocator, MmConfig::default());
    let free = allocator.nr_free_pages();
    for order in [11u8, 12, 64, 255] {
        let err = mm
            .alloc_pages(CpuId(0), Gfp::KERNEL, Order(order), NodeId(0))
            .unwrap_err();
        assert_eq!(
            err,
            MmError::Alloc(AllocError::OrderTooLarge {
                order: Order(order),
                max: Order(10)
            })
        );
    }
    assert_eq!(allocator.nr_free_pages(), free);
    mm.check_invariants().unwrap();
    allocator.check_invariants().unwrap();
}
