//! `set_mempolicy_home_node`: its errno values in Linux's order (the same
//! as a live 6.18 kernel gives), the VMAs it changes, and where pages of a
//! BIND or PREFERRED_MANY range land once it has a home node.

use pageframe::vm::mempolicy::{MPOL_BIND, MPOL_INTERLEAVE, MPOL_PREFERRED_MANY};
use pageframe::vm::{NumaBalancingConfig, Vm};
use pageframe::Errno;
use pageframe::{CpuId, LocalPageAllocator, MachineDesc, NodeId};

const PAGE: u64 = 4096;

/// 4 nodes of 64 MiB, one CPU each: CPU n is on node n.
fn machine() -> LocalPageAllocator {
    LocalPageAllocator::boot(&MachineDesc::uniform(256 << 20, 4, 4).unwrap()).unwrap()
}

fn mask(nodes: &[u64]) -> Vec<u64> {
    vec![nodes.iter().fold(0, |word, node| word | 1 << node); 1]
}

#[test]
fn errors_in_linux_order() {
    let allocator = machine();
    let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
    let pid = vm.spawn(CpuId(0), &[], 0).unwrap();
    let addr = vm.mmap(pid, 4 * PAGE).unwrap();
    let home = |vm: &mut Vm, start, len, node, flags| {
        vm.set_mempolicy_home_node(pid, start, len, node, flags)
    };
    // Unaligned start before flags before the node.
    assert_eq!(home(&mut vm, addr + 1, PAGE, 9, 1), Err(Errno::EINVAL));
    assert_eq!(home(&mut vm, addr, PAGE, 9, 1), Err(Errno::EINVAL));
    assert_eq!(home(&mut vm, addr, PAGE, 4, 0), Err(Errno::EINVAL));
    assert_eq!(home(&mut vm, addr, PAGE, 1 << 40, 0), Err(Errno::EINVAL));
    // The node before the length; a wrapping end, an empty range.
    assert_eq!(home(&mut vm, addr, 0, 4, 0), Err(Errno::EINVAL));
    assert_eq!(
        home(&mut vm, addr, 0u64.wrapping_sub(PAGE), 0, 0),
        Err(Errno::EINVAL)
    );
    assert_eq!(home(&mut vm, addr, 0, 0, 0), Ok(()));
    assert_eq!(home(&mut vm, addr, u64::MAX - 100, 0, 0), Ok(()));
    // No VMA with a policy: ENOENT, holes included.
    assert_eq!(home(&mut vm, addr, 4 * PAGE, 1, 0), Err(Errno::ENOENT));
    assert_eq!(home(&mut vm, 0x1000, PAGE, 1, 0), Err(Errno::ENOENT));
    vm.mbind(
        pid,
        addr + PAGE,
        PAGE,
        MPOL_BIND,
        Some(&mask(&[0, 1])),
        65,
        0,
    )
    .unwrap();
    assert_eq!(home(&mut vm, addr, 4 * PAGE, 1, 0), Ok(()));
    vm.mbind(
        pid,
        addr + 3 * PAGE,
        PAGE,
        MPOL_INTERLEAVE,
        Some(&mask(&[0, 1])),
        65,
        0,
    )
    .unwrap();
    assert_eq!(home(&mut vm, addr, 4 * PAGE, 1, 0), Err(Errno::EOPNOTSUPP));
    assert_eq!(home(&mut vm, addr, 3 * PAGE, 1, 0), Ok(()));
    assert_eq!(
        home(&mut vm, addr + 2 * PAGE, PAGE, 1, 0),
        Err(Errno::ENOENT)
    );
    vm.check_invariants().unwrap();
}

/// A task on node 0 with a BIND {0,1} (or PREFERRED_MANY) range whose home
/// node is 1: first touch allocates on node 1, not the local node 0.
#[test]
fn home_node_is_where_pages_go_first() {
    for mode in [MPOL_BIND, MPOL_PREFERRED_MANY] {
        let allocator = machine();
        let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
        let pid = vm.spawn(CpuId(0), &[], 0).unwrap();
        let addr = vm.mmap(pid, 2 * PAGE).unwrap();
        vm.mbind(pid, addr, 2 * PAGE, mode, Some(&mask(&[0, 1])), 65, 0)
            .unwrap();
        assert_eq!(vm.access(pid, addr, true).unwrap().node, NodeId(0));
        vm.set_mempolicy_home_node(pid, addr + PAGE, PAGE, 1, 0)
            .unwrap();
        assert_eq!(vm.access(pid, addr + PAGE, true).unwrap().node, NodeId(1));
        // The policy get_mempolicy reports is unchanged.
        let (word, _) = vm.get_mempolicy(pid, addr + PAGE, 2).unwrap();
        assert_eq!(word, mode);
        vm.check_invariants().unwrap();
    }
}
