//! Failing vm calls change nothing (unless Linux itself changes state
//! before failing), and caller-controlled addresses and lengths never
//! overflow, allocate in proportion to their size, or abort.
//!
//! Each failing call runs on a task with mapped, read and written pages, a
//! task policy and a VMA policy; the whole task (VMAs, page tables,
//! policies), the vm counters, the mapped-page count and the allocator's
//! free pages are snapshot before and after.

use pageframe::vm::mempolicy::*;
use pageframe::vm::TASK_SIZE;
use pageframe::vm::{NumaBalancingConfig, Pid, Vm};
use pageframe::Errno;
use pageframe::{CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Nodemask, Order};

const PAGE: u64 = 4096;

/// 4 nodes of 64 MiB, CPU n on node n.
fn machine() -> LocalPageAllocator {
    LocalPageAllocator::boot(&MachineDesc::uniform(256 << 20, 4, 4).unwrap()).unwrap()
}

/// The syscall-ABI bitmap (MAX_NUMNODES bits) naming `nodes`.
fn mask(nodes: &[u16]) -> Vec<u64> {
    let mut set = Nodemask::default();
    for node in nodes {
        set.set(NodeId(*node));
    }
    nodemask_words(&set)
}

/// Everything a call could change.
fn snapshot(vm: &Vm, allocator: &LocalPageAllocator, pid: Pid) -> String {
    format!(
        "{:?} {:?} {:?} {} {} {:?}",
        vm.task(pid),
        vm.counters(),
        vm.config(),
        vm.pages_mapped(),
        allocator.nr_free_pages(),
        vm.numa_maps(pid)
    )
}

/// A task on CPU 0 with a 16-page mapping at the returned address: pages
/// 0..4 written (node 0), 4..6 read (zero page), a task INTERLEAVE policy
/// and a BIND policy on pages 8..12.
fn setup(vm: &mut Vm) -> (Pid, u64) {
    let pid = vm.spawn(CpuId(0), &[], 0).unwrap();
    let addr = vm.mmap(pid, 16 * PAGE).unwrap();
    for page in 0..4 {
        vm.access(pid, addr + page * PAGE, true).unwrap();
    }
    for page in 4..6 {
        vm.access(pid, addr + page * PAGE, false).unwrap();
    }
    vm.set_mempolicy(pid, MPOL_INTERLEAVE, Some(&mask(&[0, 1])), 65)
        .unwrap();
    vm.mbind(
        pid,
        addr + 8 * PAGE,
        4 * PAGE,
        MPOL_BIND,
        Some(&mask(&[2])),
        65,
        0,
    )
    .unwrap();
    (pid, addr)
}

type FailingCall = (&'static str, fn(&mut Vm, Pid, u64) -> Errno);

#[test]
fn failing_calls_change_nothing() {
    let cases: Vec<FailingCall> = vec![
        ("set_mempolicy bad mode", |vm, pid, _| {
            vm.set_mempolicy(pid, 9, Some(&mask(&[0])), 65).unwrap_err()
        }),
        ("set_mempolicy maxnode 0 with a mask", |vm, pid, _| {
            vm.set_mempolicy(pid, MPOL_DEFAULT, Some(&mask(&[])), 0)
                .unwrap_err()
        }),
        ("set_mempolicy node without memory", |vm, pid, _| {
            vm.set_mempolicy(pid, MPOL_BIND, Some(&mask(&[300])), 1025)
                .unwrap_err()
        }),
        ("set_mempolicy bit above 1024", |vm, pid, _| {
            let mut words = vec![0u64; 32];
            words[17] = 1;
            vm.set_mempolicy(pid, MPOL_BIND, Some(&words), 2000)
                .unwrap_err()
        }),
        (
            "get_mempolicy nmask with maxnode below nr_node_ids",
            |vm, pid, _| {
                vm.sys_get_mempolicy(pid, None, Some(&mut [0; 16]), 3, 0, 0)
                    .unwrap_err()
            },
        ),
        ("get_mempolicy NODE|ADDR on a hole", |vm, pid, addr| {
            vm.get_mempolicy(pid, addr + (1 << 30), MPOL_F_NODE | MPOL_F_ADDR)
                .unwrap_err()
        }),
        ("get_mempolicy MEMS_ALLOWED|NODE", |vm, pid, _| {
            vm.get_mempolicy(pid, 0, MPOL_F_MEMS_ALLOWED | MPOL_F_NODE)
                .unwrap_err()
        }),
        ("get_mempolicy mask past a page of bits", |vm, pid, _| {
            let mut out = [0u64; 16];
            vm.sys_get_mempolicy(pid, None, Some(&mut out), 40000, 0, 0)
                .unwrap_err()
        }),
        (
            "mbind STRICT without MOVE over misplaced pages",
            |vm, pid, addr| {
                vm.mbind(
                    pid,
                    addr,
                    16 * PAGE,
                    MPOL_BIND,
                    Some(&mask(&[1])),
                    65,
                    MPOL_MF_STRICT,
                )
                .unwrap_err()
            },
        ),
        ("mbind over a hole", |vm, pid, addr| {
            vm.mbind(
                pid,
                addr,
                17 * PAGE,
                MPOL_BIND,
                Some(&mask(&[1])),
                65,
                MPOL_MF_MOVE,
            )
            .unwrap_err()
        }),
        ("mbind end past 2^64", |vm, pid, addr| {
            vm.mbind(
                pid,
                addr,
                u64::MAX - 2 * PAGE,
                MPOL_BIND,
                Some(&mask(&[1])),
                65,
                0,
            )
            .unwrap_err()
        }),
        ("mbind maxnode 0", |vm, pid, addr| {
            vm.mbind(pid, addr, PAGE, MPOL_PREFERRED, Some(&mask(&[1])), 0, 0)
                .unwrap_err()
        }),
        ("migrate_pages to no allowed node", |vm, pid, _| {
            vm.migrate_pages(pid, 0, 65, Some(&mask(&[0])), Some(&mask(&[300])))
                .unwrap_err()
        }),
        (
            "migrate_pages of another task without CAP_SYS_NICE",
            |vm, pid, _| {
                let other = vm.spawn(CpuId(1), &[], 0).unwrap();
                let errno = vm
                    .migrate_pages(pid, other.0, 65, Some(&mask(&[0])), Some(&mask(&[1])))
                    .unwrap_err();
                vm.exit(other).unwrap();
                errno
            },
        ),
        ("move_pages bad node first", |vm, pid, addr| {
            vm.move_pages(pid, 0, &[addr, addr + PAGE], Some(&[9, 1]), &mut [0; 2], 0)
                .unwrap_err()
        }),
        ("move_pages bad flags", |vm, pid, addr| {
            vm.move_pages(pid, 0, &[addr], Some(&[1]), &mut [0], 1)
                .unwrap_err()
        }),
        ("mmap past the overcommit limit", |vm, pid, _| {
            vm.mmap(pid, 1 << 40).unwrap_err()
        }),
        ("mmap past TASK_SIZE", |vm, pid, _| {
            vm.mmap(pid, u64::MAX).unwrap_err()
        }),
        ("munmap past TASK_SIZE", |vm, pid, addr| {
            vm.munmap(pid, addr, u64::MAX - addr).unwrap_err()
        }),
        ("munmap zero length", |vm, pid, addr| {
            vm.munmap(pid, addr, 0).unwrap_err()
        }),
        ("access at the top of the address space", |vm, pid, _| {
            vm.access(pid, u64::MAX, true).unwrap_err()
        }),
        ("kernel.numa_balancing=2", |vm, _, _| {
            vm.set_numa_balancing(2).unwrap_err()
        }),
        ("interleave weight 0", |vm, _, _| {
            vm.set_interleave_weight(NodeId(1), 0).unwrap_err()
        }),
    ];
    for (name, call) in cases {
        let allocator = machine();
        let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
        let (pid, addr) = setup(&mut vm);
        let before = snapshot(&vm, &allocator, pid);
        let errno = call(&mut vm, pid, addr);
        assert_eq!(
            snapshot(&vm, &allocator, pid),
            before,
            "{name} ({errno:?}) changed state"
        );
        vm.check_invariants()
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        allocator.check_invariants().unwrap();
    }
}

/// Linux's exceptions: an mbind with MOVE installs its policy before the
/// migration that fails (EIO), and a move_pages stopped by a bad node has
/// moved the pages before it.
#[test]
fn failures_after_linux_changed_state() {
    let allocator = machine();
    let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
    let (pid, addr) = setup(&mut vm);
    let cpu = allocator.cpu(CpuId(1)).unwrap();
    while cpu
        .alloc_pages_nodemask(
            Gfp::HIGHUSER_MOVABLE,
            Order(0),
            NodeId(1),
            &Nodemask::of(NodeId(1)),
        )
        .is_ok()
    {}
    assert_eq!(
        vm.mbind(
            pid,
            addr,
            4 * PAGE,
            MPOL_BIND,
            Some(&mask(&[1])),
            65,
            MPOL_MF_STRICT | MPOL_MF_MOVE
        ),
        Err(Errno::EIO)
    );
    let (policy, nodes) = vm.get_mempolicy(pid, addr, MPOL_F_ADDR).unwrap();
    assert_eq!((policy, nodes), (MPOL_BIND, Nodemask::of(NodeId(1))));
    let mut status = [i32::MIN; 3];
    assert_eq!(
        vm.move_pages(
            pid,
            0,
            &[addr, addr + PAGE, addr + 2 * PAGE],
            Some(&[2, 2000, 2]),
            &mut status,
            0
        ),
        Err(Errno::ENODEV)
    );
    assert_eq!(status, [2, i32::MIN, i32::MIN]);
    vm.move_pages(pid, 0, &[addr, addr + PAGE], None, &mut status[..2], 0)
        .unwrap();
    assert_eq!(status[..2], [2, 0]);
    vm.check_invariants().unwrap();
}

/// A huge mapping costs nothing until touched; lengths near 2^64 neither
/// overflow nor abort; a length aligning to 0 is an empty mbind (Linux).
#[test]
fn huge_and_wrapping_lengths() {
    let allocator = machine();
    let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
    let pid = vm.spawn(CpuId(0), &[], 0).unwrap();
    // Just under the machine's memory: accepted, page table empty.
    let big = 200 << 20;
    let addr = vm.mmap(pid, big).unwrap();
    assert_eq!(vm.mmap(pid, 1 << 40), Err(Errno::ENOMEM));
    for page in [0, 1000, big / PAGE - 1] {
        vm.access(pid, addr + page * PAGE, true).unwrap();
    }
    let vma_entries: usize = vm
        .task(pid)
        .unwrap()
        .mm
        .vmas
        .values()
        .map(|vma| vma.ptes.len())
        .sum();
    assert_eq!(vma_entries, 3);
    assert!(addr + big <= TASK_SIZE);
    assert_eq!(
        vm.mbind(
            pid,
            addr,
            u64::MAX - 100,
            MPOL_BIND,
            Some(&mask(&[1])),
            65,
            0
        ),
        Ok(())
    );
    assert_eq!(
        vm.get_mempolicy(pid, addr, MPOL_F_ADDR).unwrap().0,
        MPOL_DEFAULT
    );
    assert_eq!(vm.munmap(pid, TASK_SIZE + PAGE, PAGE), Err(Errno::EINVAL));
    let mut status = [0];
    vm.move_pages(pid, 0, &[u64::MAX], None, &mut status, 0)
        .unwrap();
    assert_eq!(status, [-Errno::EFAULT.code()]);
    assert_eq!(
        vm.get_mempolicy(pid, u64::MAX, MPOL_F_ADDR),
        Err(Errno::EFAULT)
    );
    vm.munmap(pid, addr, big).unwrap();
    assert_eq!(vm.pages_mapped(), 0);
    vm.check_invariants().unwrap();
}

#[test]
fn the_node_of_an_unknown_cpu_is_none_not_a_panic() {
    // Regression: Vm::cpu_node(CpuId(999)) indexed past the CPU table.
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 2, 2).unwrap()).unwrap();
    let vm = Vm::new(&allocator, NumaBalancingConfig::default());
    assert_eq!(vm.cpu_node(CpuId(1)), Some(NodeId(1)));
    assert_eq!(vm.cpu_node(CpuId(2)), None);
    assert_eq!(vm.cpu_node(CpuId(u16::MAX)), None);
}
