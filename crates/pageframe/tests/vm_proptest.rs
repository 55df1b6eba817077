//! Random sequences of vm operations (mmap, munmap, touch, policy changes,
//! mbind with MOVE, move_pages, migrate_pages, scans, hinting faults, task
//! exit): after every operation the page tables agree with the memmap and
//! pages are conserved — every page the vm allocated is mapped exactly once
//! or was freed, and the allocator's count of allocated pages is the vm's.

use pageframe::vm::mempolicy::*;
use pageframe::vm::{NumaBalancingConfig, Pid, Vm};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc};
use proptest::prelude::*;

const PAGE: u64 = 4096;

#[derive(Clone, Debug)]
enum Op {
    Spawn(u16),
    Mmap(u8, u64),
    Munmap(u8, u64, u64),
    Touch(u8, u64),
    TouchAll(u8),
    SetPolicy(u8, u8, u8),
    Mbind(u8, u8, u8),
    MovePages(u8, u8),
    MigratePages(u8, u8, u8),
    Tick(u64),
    Exit(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u16..4).prop_map(Op::Spawn),
        (any::<u8>(), 1u64..512).prop_map(|(t, n)| Op::Mmap(t, n)),
        (any::<u8>(), 0u64..512, 1u64..64).prop_map(|(v, o, n)| Op::Munmap(v, o, n)),
        (any::<u8>(), 0u64..512).prop_map(|(v, p)| Op::Touch(v, p)),
        any::<u8>().prop_map(Op::TouchAll),
        any::<u8>().prop_map(Op::TouchAll),
        (1u64..3000).prop_map(Op::Tick),
        (any::<u8>(), 0u8..8, 0u8..16).prop_map(|(t, m, n)| Op::SetPolicy(t, m, n)),
        (any::<u8>(), 0u8..8, 0u8..16).prop_map(|(v, m, n)| Op::Mbind(v, m, n)),
        (any::<u8>(), 0u8..5).prop_map(|(v, n)| Op::MovePages(v, n)),
        (any::<u8>(), 0u8..16, 0u8..16).prop_map(|(t, a, b)| Op::MigratePages(t, a, b)),
        (1u64..3000).prop_map(Op::Tick),
        any::<u8>().prop_map(Op::Exit),
    ]
}

fn mode(choice: u8) -> i32 {
    [
        MPOL_DEFAULT,
        MPOL_PREFERRED,
        MPOL_BIND,
        MPOL_INTERLEAVE,
        MPOL_LOCAL,
        MPOL_PREFERRED_MANY,
        MPOL_WEIGHTED_INTERLEAVE,
        MPOL_BIND | MPOL_F_NUMA_BALANCING,
    ][choice as usize % 8]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn pages_conserved_and_tables_agree(ops in proptest::collection::vec(op(), 1..80)) {
        // 4 nodes of 4 MiB: small enough that nodes fill up and
        // allocations and migrations fail along the way.
        let allocator = LocalPageAllocator::boot(&MachineDesc::uniform(16 << 20, 4, 4).unwrap()).unwrap();
        let mut vm = Vm::new(&allocator, NumaBalancingConfig { scan_size_mb: 1, ..NumaBalancingConfig::default() });
        vm.record_scans(true);
        let mut now = 0;
        let mut maps: Vec<(Pid, u64, u64)> = Vec::new();
        for cpu in [0, 3] {
            let pid = vm.spawn(CpuId(cpu), &[], 0).unwrap();
            maps.push((pid, vm.mmap(pid, 48 * PAGE).unwrap(), 48));
        }
        let task = |vm: &Vm, choice: u8| -> Option<Pid> {
            let pids = vm.pids();
            (!pids.is_empty()).then(|| pids[choice as usize % pids.len()])
        };
        for op in ops {
            let map = |maps: &[(Pid, u64, u64)], choice: u8| -> Option<(Pid, u64, u64)> {
                (!maps.is_empty()).then(|| maps[choice as usize % maps.len()])
            };
            match op {
                Op::Spawn(cpu) => { vm.spawn(CpuId(cpu), &[], now).unwrap(); }
                Op::Mmap(t, pages) => if let Some(pid) = task(&vm, t) {
                    let addr = vm.mmap(pid, pages * PAGE).unwrap();
                    maps.push((pid, addr, pages));
                },
                Op::TouchAll(v) => if let Some((pid, addr, len)) = map(&maps, v) {
                    for page in 0..len {
                        let _ = vm.access(pid, addr + page * PAGE, true);
                    }
                },
                Op::Munmap(v, offset, pages) => if let Some((pid, addr, len)) = map(&maps, v) {
                    let _ = vm.munmap(pid, addr + (offset % len) * PAGE, pages * PAGE);
                },
                Op::Touch(v, page) => if let Some((pid, addr, len)) = map(&maps, v) {
                    let _ = vm.access(pid, addr + (page % len) * PAGE, page % 2 == 0);
                },
                Op::SetPolicy(t, m, nodes) => if let Some(pid) = task(&vm, t) {
                    let _ = vm.set_mempolicy(pid, mode(m), Some(&[nodes as u64]), 65);
                },
                Op::Mbind(v, m, nodes) => if let Some((pid, addr, len)) = map(&maps, v) {
                    let _ = vm.mbind(pid, addr, len * PAGE, mode(m), Some(&[nodes as u64]), 65, MPOL_MF_MOVE | MPOL_MF_STRICT);
                },
                Op::MovePages(v, node) => if let Some((pid, addr, len)) = map(&maps, v) {
                    let pages: Vec<u64> = (0..len).map(|page| addr + page * PAGE).collect();
                    let mut status = vec![0; pages.len()];
                    let _ = vm.move_pages(pid, 0, &pages, Some(&vec![node as i32; pages.len()]), &mut status, 0);
                },
                Op::MigratePages(t, from, to) => if let Some(pid) = task(&vm, t) {
                    let _ = vm.migrate_pages(pid, 0, 65, Some(&[from as u64]), Some(&[to as u64]));
                },
                Op::Tick(ms) => {
                    now += ms;
                    vm.tick(now);
                    for pid in vm.pids() {
                        let mut armed = Vec::new();
                        vm.drain_marked(pid, &mut armed);
                        for vpn in armed.into_iter().step_by(2) {
                            let _ = vm.access(pid, vpn * PAGE, false);
                        }
                    }
                },
                Op::Exit(t) => if let Some(pid) = task(&vm, t) {
                    vm.exit(pid).unwrap();
                    maps.retain(|(owner, _, _)| *owner != pid);
                },
            }
            vm.check_invariants().map_err(|err| TestCaseError::fail(err.to_string()))?;
            allocator.check_invariants().map_err(|err| TestCaseError::fail(err.to_string()))?;
            prop_assert_eq!(allocator.nr_allocated_pages(), vm.pages_mapped());
        }
        if std::env::var_os("VM_PROPTEST_STATS").is_some() {
            eprintln!("{:?} mapped {}", vm.counters(), vm.pages_mapped());
        }
        for pid in vm.pids() {
            vm.exit(pid).unwrap();
        }
        prop_assert_eq!(allocator.nr_allocated_pages(), 0);
        vm.check_invariants().map_err(|err| TestCaseError::fail(err.to_string()))?;
    }
}
