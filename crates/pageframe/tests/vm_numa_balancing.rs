//! Placement and NUMA balancing in the vm layer: first touch through each
//! policy, the scanner and hinting faults, mpol_misplaced() with and without
//! MPOL_F_NUMA_BALANCING, the high-watermark refusal, balancing off.

use pageframe::vm::mempolicy::*;
use pageframe::vm::FaultKind;
use pageframe::vm::{NumaBalancingConfig, Pid, Vm};
use pageframe::{CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Nodemask, Order};

const PAGE: u64 = 4096;

/// 4 nodes of 64 MiB, one CPU each: CPU n is on node n.
fn machine() -> LocalPageAllocator {
    LocalPageAllocator::boot(&MachineDesc::uniform(256 << 20, 4, 4).unwrap()).unwrap()
}

fn mask(nodes: &[u16]) -> Vec<u64> {
    let mut words = vec![0u64; 4];
    for node in nodes {
        words[*node as usize / 64] |= 1 << (node % 64);
    }
    words
}

fn nodes(list: &[u16]) -> Nodemask {
    let mut mask = Nodemask::NONE;
    for node in list {
        mask.set(NodeId(*node));
    }
    mask
}

#[test]
fn first_touch_follows_the_policy() {
    let allocator = machine();
    let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
    let pid = vm.spawn(CpuId(2), &[], 0).unwrap();
    // Default: the local node (a first write allocates; a first read
    // maps the shared zero page, which lives on node 0 and is no page of
    // the task).
    let addr = vm.mmap(pid, 64 * PAGE).unwrap();
    let read = vm.access(pid, addr + 63 * PAGE, false).unwrap();
    assert_eq!(
        (read.node, read.pfn, read.fault),
        (NodeId(0), None, FaultKind::ZeroPage)
    );
    assert_eq!(vm.access(pid, addr, true).unwrap().node, NodeId(2));
    // Interleave by offset in the VMA: 0,1,2,3,0,...
    vm.mbind(
        pid,
        addr + 8 * PAGE,
        8 * PAGE,
        MPOL_INTERLEAVE,
        Some(&mask(&[0, 1, 2, 3])),
        65,
        0,
    )
    .unwrap();
    let placed: Vec<u16> = (8..16)
        .map(|page| vm.access(pid, addr + page * PAGE, true).unwrap().node.0)
        .collect();
    assert_eq!(placed, [0, 1, 2, 3, 0, 1, 2, 3]);
    // Weighted interleave 3:1 over nodes 0 and 1.
    vm.set_interleave_weight(NodeId(0), 3).unwrap();
    vm.mbind(
        pid,
        addr + 16 * PAGE,
        8 * PAGE,
        MPOL_WEIGHTED_INTERLEAVE,
        Some(&mask(&[0, 1])),
        65,
        0,
    )
    .unwrap();
    let placed: Vec<u16> = (16..24)
        .map(|page| vm.access(pid, addr + page * PAGE, true).unwrap().node.0)
        .collect();
    assert_eq!(placed, [0, 0, 0, 1, 0, 0, 0, 1]);
    // Preferred: node 3 first.
    vm.mbind(
        pid,
        addr + 24 * PAGE,
        PAGE,
        MPOL_PREFERRED,
        Some(&mask(&[3])),
        65,
        0,
    )
    .unwrap();
    assert_eq!(
        vm.access(pid, addr + 24 * PAGE, true).unwrap().node,
        NodeId(3)
    );
    // Bind to nodes without the local one: the nearest in the mask.
    vm.set_mempolicy(pid, MPOL_BIND, Some(&mask(&[1])), 65)
        .unwrap();
    assert_eq!(
        vm.access(pid, addr + 30 * PAGE, true).unwrap().node,
        NodeId(1)
    );
    // get_mempolicy: the VMA's policy, and the page's node.
    let (policy, mask_got) = vm.get_mempolicy(pid, addr + 9 * PAGE, MPOL_F_ADDR).unwrap();
    assert_eq!((policy, mask_got), (MPOL_INTERLEAVE, nodes(&[0, 1, 2, 3])));
    assert_eq!(
        vm.get_mempolicy(pid, addr + 9 * PAGE, MPOL_F_ADDR | MPOL_F_NODE)
            .unwrap()
            .0,
        1
    );
    // A task interleave policy answers MPOL_F_NODE with the next node.
    vm.set_mempolicy(pid, MPOL_INTERLEAVE, Some(&mask(&[1, 2])), 65)
        .unwrap();
    assert_eq!(vm.get_mempolicy(pid, 0, MPOL_F_NODE).unwrap().0, 1);
    let maps = vm.numa_maps(pid).unwrap();
    assert!(
        maps.contains("interleave:0-3 anon=8 dirty=8 N0=2 N1=2 N2=2 N3=2"),
        "{maps}"
    );
    vm.check_invariants().unwrap();
    vm.exit(pid).unwrap();
    assert_eq!(allocator.nr_allocated_pages(), 0);
    assert_eq!(vm.pages_mapped(), 0);
}

/// A task on node `run_node` with `pages` pages placed on `page_node`,
/// then one scan and one access of each page.
fn hint_fault_run(
    policy: Option<(i32, &[u16])>,
    run_node: u16,
    page_node: u16,
    sysctl: u8,
) -> (Vm<'static>, Pid, u64) {
    let allocator: &'static LocalPageAllocator = Box::leak(Box::new(machine()));
    let mut vm = Vm::new(allocator, NumaBalancingConfig::default());
    vm.set_numa_balancing(sysctl).unwrap();
    let pid = vm.spawn(CpuId(run_node), &[], 0).unwrap();
    if let Some((mode, list)) = policy {
        vm.set_mempolicy(pid, mode, Some(&mask(list)), 65).unwrap();
    }
    let addr = vm.mmap(pid, 8 * PAGE).unwrap();
    let pages: Vec<u64> = (0..8).map(|page| addr + page * PAGE).collect();
    for page in &pages {
        vm.access(pid, *page, true).unwrap();
    }
    let mut status = [0; 8];
    vm.move_pages(pid, 0, &pages, Some(&[page_node as i32; 8]), &mut status, 0)
        .unwrap();
    assert_eq!(status, [page_node as i32; 8]);
    // Runtime passes the scan delay; the tick scans.
    vm.tick(1500);
    vm.tick(3000);
    for page in &pages {
        vm.access(pid, *page, false).unwrap();
    }
    vm.check_invariants().unwrap();
    (vm, pid, addr)
}

#[test]
fn numa_balancing_moves_default_policy_pages_home() {
    let (vm, pid, addr) = hint_fault_run(None, 0, 1, 1);
    let counters = vm.counters();
    assert_eq!(counters.numa_pte_updates, 8);
    assert_eq!(counters.numa_hint_faults, 8);
    assert_eq!(counters.numa_hint_faults_local, 0);
    assert_eq!(counters.numa_pages_migrated, 8);
    assert_eq!(
        vm.task(pid)
            .unwrap()
            .mm
            .pte(addr >> 12)
            .map(|pte| pte.is_protnone()),
        Some(false)
    );
    let vmstat = vm.vmstat();
    for line in [
        "numa_pte_updates 8",
        "numa_hint_faults 8",
        "numa_hint_faults_local 0",
        "numa_pages_migrated 8",
        "pgmigrate_success 16",
        "pgmigrate_fail 0",
    ] {
        assert!(vmstat.contains(&format!("{line}\n")), "{line} in\n{vmstat}");
    }
}

#[test]
fn explicit_bind_is_not_balanced_without_the_flag() {
    let (vm, _, _) = hint_fault_run(Some((MPOL_BIND, &[1, 3])), 3, 1, 1);
    assert_eq!(vm.counters().numa_pte_updates, 0);
    assert_eq!(vm.counters().numa_pages_migrated, 0);
}

#[test]
fn bind_with_the_flag_moves_to_the_faulting_node_in_the_mask() {
    let (vm, _, _) = hint_fault_run(Some((MPOL_BIND | MPOL_F_NUMA_BALANCING, &[1, 3])), 3, 1, 1);
    assert_eq!(vm.counters().numa_hint_faults, 8);
    assert_eq!(vm.counters().numa_pages_migrated, 8);
    // The faulting node outside the mask: faults, but nothing moves.
    let (vm, _, _) = hint_fault_run(Some((MPOL_BIND | MPOL_F_NUMA_BALANCING, &[1, 2])), 3, 1, 1);
    assert_eq!(vm.counters().numa_hint_faults, 8);
    assert_eq!(vm.counters().numa_pages_migrated, 0);
}

#[test]
fn balancing_off_changes_nothing() {
    let (vm, _, _) = hint_fault_run(Some((MPOL_BIND | MPOL_F_NUMA_BALANCING, &[1, 3])), 3, 1, 0);
    assert_eq!(vm.counters().numa_pte_updates, 0);
    assert_eq!(vm.counters().numa_hint_faults, 0);
    assert_eq!(vm.counters().numa_pages_migrated, 0);
}

#[test]
fn no_migration_onto_a_node_below_its_high_watermark() {
    let allocator = machine();
    let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
    let pid = vm.spawn(CpuId(3), &[], 0).unwrap();
    vm.set_mempolicy(
        pid,
        MPOL_BIND | MPOL_F_NUMA_BALANCING,
        Some(&mask(&[1, 3])),
        65,
    )
    .unwrap();
    // Fill node 3 with someone else's pages, down to its reserves.
    let other = allocator.cpu(CpuId(3)).unwrap();
    let mut eaten = Vec::new();
    while let Ok(page) = other.alloc_pages_nodemask(
        Gfp::HIGHUSER_MOVABLE,
        Order(0),
        NodeId(3),
        &Nodemask::of(NodeId(3)),
    ) {
        eaten.push(page);
    }
    let addr = vm.mmap(pid, 4 * PAGE).unwrap();
    for page in 0..4 {
        assert_eq!(
            vm.access(pid, addr + page * PAGE, true).unwrap().node,
            NodeId(1)
        );
    }
    vm.tick(1500);
    vm.tick(3000);
    for page in 0..4 {
        let access = vm.access(pid, addr + page * PAGE, false).unwrap();
        assert_eq!(
            access.fault,
            FaultKind::Hint {
                migrated_from: None
            }
        );
    }
    assert_eq!(vm.counters().numa_pages_migrated, 0);
    // Room again: the next pass moves them.
    for page in eaten {
        other.free_pages(page, Order(0)).unwrap();
    }
    vm.numa_scan_now(pid, 4000).unwrap();
    for page in 0..4 {
        assert_eq!(
            vm.access(pid, addr + page * PAGE, false).unwrap().node,
            NodeId(3)
        );
    }
    assert_eq!(vm.counters().numa_pages_migrated, 4);
    vm.check_invariants().unwrap();
}

#[test]
fn knobs_past_unsigned_int_and_time_near_u64_max_saturate() {
    // Regression: a scan delay or period of u64::MAX, or a task spawned or
    // ticked near u64::MAX ms, overflowed the next-scan time (a panic with
    // overflow checks; in release the time wrapped and the scanner ran on
    // every tick).
    let allocator = machine();
    let huge = NumaBalancingConfig {
        scan_delay_ms: u64::MAX,
        scan_period_min_ms: u64::MAX,
        scan_period_max_ms: u64::MAX,
        scan_size_mb: u64::MAX,
        ..NumaBalancingConfig::default()
    };
    let mut vm = Vm::new(&allocator, huge);
    assert_eq!(vm.config().scan_delay_ms, u64::from(u32::MAX));
    assert_eq!(vm.config().scan_size_mb, u64::from(u32::MAX));
    let late = vm.spawn(CpuId(0), &[], u64::MAX - 10).unwrap();
    let early = vm.spawn(CpuId(1), &[], 0).unwrap();
    for pid in [late, early] {
        let addr = vm.mmap(pid, 64 * PAGE).unwrap();
        for page in 0..64 {
            vm.access(pid, addr + page * PAGE, true).unwrap();
        }
    }
    for now in [u64::MAX / 2, u64::MAX - 1, u64::MAX] {
        vm.tick(now);
        vm.numa_scan_now(early, now).unwrap();
        vm.check_invariants().unwrap();
    }
    let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
    let pid = vm.spawn(CpuId(0), &[], u64::MAX - 500).unwrap();
    let addr = vm.mmap(pid, 64 * PAGE).unwrap();
    vm.access(pid, addr, true).unwrap();
    vm.tick(u64::MAX);
    vm.check_invariants().unwrap();
}
