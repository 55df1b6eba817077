//! Memory policies and node strings of the vm layer: the kernel's
//! validation cases with their errno values (one table), the document's
//! fallback snippet, the node-string grammar, relative and static nodes.

use pageframe::vm::mempolicy::*;
use pageframe::vm::{format_nodestring, parse_nodestring, NumaBalancingConfig, Pid, Vm};
use pageframe::Errno;
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

type Case = (
    &'static str,
    fn(&mut Vm, Pid, u64) -> Result<(), Errno>,
    Result<(), Errno>,
);

/// Every validation case with the errno Linux returns for it. Each runs on
/// a fresh machine with task `pid` on CPU 0 and a 16-page mapping at `addr`
/// (pages 0..4 touched, on node 0).
#[test]
fn errno_table() {
    let cases: Vec<Case> = vec![
        (
            "set_mempolicy BIND|NUMA_BALANCING",
            |vm, pid, _| {
                vm.set_mempolicy(
                    pid,
                    MPOL_BIND | MPOL_F_NUMA_BALANCING,
                    Some(&mask(&[1, 3])),
                    65,
                )
            },
            Ok(()),
        ),
        (
            "set_mempolicy PREFERRED_MANY|NUMA_BALANCING",
            |vm, pid, _| {
                vm.set_mempolicy(
                    pid,
                    MPOL_PREFERRED_MANY | MPOL_F_NUMA_BALANCING,
                    Some(&mask(&[1, 3])),
                    65,
                )
            },
            Ok(()),
        ),
        (
            "set_mempolicy PREFERRED|NUMA_BALANCING",
            |vm, pid, _| {
                vm.set_mempolicy(
                    pid,
                    MPOL_PREFERRED | MPOL_F_NUMA_BALANCING,
                    Some(&mask(&[1])),
                    65,
                )
            },
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy INTERLEAVE|NUMA_BALANCING",
            |vm, pid, _| {
                vm.set_mempolicy(
                    pid,
                    MPOL_INTERLEAVE | MPOL_F_NUMA_BALANCING,
                    Some(&mask(&[1, 3])),
                    65,
                )
            },
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy LOCAL|NUMA_BALANCING",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_LOCAL | MPOL_F_NUMA_BALANCING, None, 0),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy DEFAULT|NUMA_BALANCING",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_DEFAULT | MPOL_F_NUMA_BALANCING, None, 0),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy STATIC|RELATIVE",
            |vm, pid, _| {
                vm.set_mempolicy(
                    pid,
                    MPOL_BIND | MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES,
                    Some(&mask(&[1])),
                    65,
                )
            },
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy mode MPOL_MAX",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_MAX, None, 0),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy BIND empty",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_BIND, Some(&mask(&[])), 65),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy BIND no mask",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_BIND, None, 0),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy INTERLEAVE empty",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_INTERLEAVE, Some(&mask(&[])), 65),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy WEIGHTED_INTERLEAVE empty",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_WEIGHTED_INTERLEAVE, Some(&mask(&[])), 65),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy PREFERRED_MANY empty",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_PREFERRED_MANY, Some(&mask(&[])), 65),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy PREFERRED empty becomes LOCAL",
            |vm, pid, _| {
                vm.set_mempolicy(pid, MPOL_PREFERRED, Some(&mask(&[])), 65)?;
                assert_eq!(vm.get_mempolicy(pid, 0, 0)?.0, MPOL_LOCAL);
                Ok(())
            },
            Ok(()),
        ),
        (
            "set_mempolicy PREFERRED empty STATIC",
            |vm, pid, _| {
                vm.set_mempolicy(
                    pid,
                    MPOL_PREFERRED | MPOL_F_STATIC_NODES,
                    Some(&mask(&[])),
                    65,
                )
            },
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy DEFAULT with nodes",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_DEFAULT, Some(&mask(&[1])), 65),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy DEFAULT empty",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_DEFAULT, None, 0),
            Ok(()),
        ),
        (
            "set_mempolicy LOCAL with nodes",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_LOCAL, Some(&mask(&[1])), 65),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy BIND node without memory",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_BIND, Some(&mask(&[9])), 65),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy maxnode above a page of bits",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_BIND, Some(&vec![0; 600]), 4096 * 8 + 2),
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy node 320 (read by get_nodes, no memory there)",
            |vm, pid, _| {
                let mut words = vec![0u64; 8];
                words[5] = 1;
                vm.set_mempolicy(pid, MPOL_BIND, Some(&words), 513)
            },
            Err(Errno::EINVAL),
        ),
        (
            "set_mempolicy mask shorter than maxnode",
            |vm, pid, _| vm.set_mempolicy(pid, MPOL_BIND, Some(&[2]), 129),
            Err(Errno::EFAULT),
        ),
        (
            "set_mempolicy no such task",
            |vm, _, _| vm.set_mempolicy(Pid(999), MPOL_BIND, Some(&mask(&[1])), 65),
            Err(Errno::ESRCH),
        ),
        (
            "mbind BIND",
            |vm, pid, addr| vm.mbind(pid, addr, 16 * PAGE, MPOL_BIND, Some(&mask(&[2])), 65, 0),
            Ok(()),
        ),
        (
            "mbind unaligned start",
            |vm, pid, addr| vm.mbind(pid, addr + 1, PAGE, MPOL_BIND, Some(&mask(&[1])), 65, 0),
            Err(Errno::EINVAL),
        ),
        (
            "mbind hole",
            |vm, pid, addr| {
                vm.mbind(
                    pid,
                    addr + (1 << 30),
                    PAGE,
                    MPOL_BIND,
                    Some(&mask(&[1])),
                    65,
                    0,
                )
            },
            Err(Errno::EFAULT),
        ),
        (
            "mbind range running into a hole",
            |vm, pid, addr| vm.mbind(pid, addr, 17 * PAGE, MPOL_BIND, Some(&mask(&[1])), 65, 0),
            Err(Errno::EFAULT),
        ),
        (
            "mbind DEFAULT over a hole",
            |vm, pid, addr| vm.mbind(pid, addr, 17 * PAGE, MPOL_DEFAULT, None, 0, 0),
            Ok(()),
        ),
        (
            "mbind zero length",
            |vm, pid, addr| vm.mbind(pid, addr, 0, MPOL_BIND, Some(&mask(&[1])), 65, 0),
            Ok(()),
        ),
        (
            "mbind invalid flags (MPOL_MF_LAZY)",
            |vm, pid, addr| vm.mbind(pid, addr, PAGE, MPOL_BIND, Some(&mask(&[1])), 65, 1 << 3),
            Err(Errno::EINVAL),
        ),
        (
            "mbind MOVE_ALL without CAP_SYS_NICE",
            |vm, pid, addr| {
                vm.mbind(
                    pid,
                    addr,
                    PAGE,
                    MPOL_BIND,
                    Some(&mask(&[1])),
                    65,
                    MPOL_MF_MOVE_ALL,
                )
            },
            Err(Errno::EPERM),
        ),
        (
            "mbind STRICT with misplaced pages",
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
            },
            Err(Errno::EIO),
        ),
        (
            "mbind STRICT|MOVE moves them",
            |vm, pid, addr| {
                vm.mbind(
                    pid,
                    addr,
                    16 * PAGE,
                    MPOL_BIND,
                    Some(&mask(&[1])),
                    65,
                    MPOL_MF_STRICT | MPOL_MF_MOVE,
                )
            },
            Ok(()),
        ),
        (
            "mbind STRICT|MOVE onto a full node",
            |vm, pid, addr| {
                let cpu = vm.allocator().cpu(CpuId(1)).unwrap();
                while cpu
                    .alloc_pages_nodemask(
                        Gfp::HIGHUSER_MOVABLE,
                        Order(0),
                        NodeId(1),
                        &Nodemask::of(NodeId(1)),
                    )
                    .is_ok()
                {}
                vm.mbind(
                    pid,
                    addr,
                    16 * PAGE,
                    MPOL_BIND,
                    Some(&mask(&[1])),
                    65,
                    MPOL_MF_STRICT | MPOL_MF_MOVE,
                )
            },
            Err(Errno::EIO),
        ),
        (
            "mbind NUMA_BALANCING with INTERLEAVE",
            |vm, pid, addr| {
                vm.mbind(
                    pid,
                    addr,
                    PAGE,
                    MPOL_INTERLEAVE | MPOL_F_NUMA_BALANCING,
                    Some(&mask(&[1])),
                    65,
                    0,
                )
            },
            Err(Errno::EINVAL),
        ),
        (
            "get_mempolicy unknown flag",
            |vm, pid, _| vm.get_mempolicy(pid, 0, 1 << 3).map(drop),
            Err(Errno::EINVAL),
        ),
        (
            "get_mempolicy MEMS_ALLOWED|NODE",
            |vm, pid, _| {
                vm.get_mempolicy(pid, 0, MPOL_F_MEMS_ALLOWED | MPOL_F_NODE)
                    .map(drop)
            },
            Err(Errno::EINVAL),
        ),
        (
            "get_mempolicy address without MPOL_F_ADDR",
            |vm, pid, addr| vm.get_mempolicy(pid, addr, 0).map(drop),
            Err(Errno::EINVAL),
        ),
        (
            "get_mempolicy MPOL_F_ADDR on a hole",
            |vm, pid, addr| {
                vm.get_mempolicy(pid, addr + (1 << 30), MPOL_F_ADDR)
                    .map(drop)
            },
            Err(Errno::EFAULT),
        ),
        (
            "get_mempolicy MPOL_F_NODE without interleave",
            |vm, pid, _| vm.get_mempolicy(pid, 0, MPOL_F_NODE).map(drop),
            Err(Errno::EINVAL),
        ),
        (
            "migrate_pages no such pid",
            |vm, pid, _| {
                vm.migrate_pages(pid, 999, 65, Some(&mask(&[0])), Some(&mask(&[1])))
                    .map(drop)
            },
            Err(Errno::ESRCH),
        ),
        (
            "migrate_pages another task without CAP_SYS_NICE",
            |vm, pid, _| {
                let other = vm.spawn(CpuId(1), &[], 0)?;
                vm.migrate_pages(pid, other.0, 65, Some(&mask(&[0])), Some(&mask(&[1])))
                    .map(drop)
            },
            Err(Errno::EPERM),
        ),
        (
            "migrate_pages to nodes outside the cpuset",
            |vm, pid, _| {
                vm.set_mems_allowed(pid, nodes(&[0, 1]))?;
                vm.migrate_pages(pid, 0, 65, Some(&mask(&[0])), Some(&mask(&[2])))
                    .map(drop)
            },
            Err(Errno::EPERM),
        ),
        (
            "migrate_pages to no node",
            |vm, pid, _| {
                vm.migrate_pages(pid, 0, 65, Some(&mask(&[0])), Some(&mask(&[])))
                    .map(drop)
            },
            Err(Errno::EINVAL),
        ),
        (
            "migrate_pages moves every page",
            |vm, pid, _| {
                assert_eq!(
                    vm.migrate_pages(pid, 0, 65, Some(&mask(&[0])), Some(&mask(&[2])))?,
                    0
                );
                Ok(())
            },
            Ok(()),
        ),
        (
            "move_pages invalid flags",
            |vm, pid, addr| {
                vm.move_pages(pid, 0, &[addr], Some(&[1]), &mut [0], 1)
                    .map(drop)
            },
            Err(Errno::EINVAL),
        ),
        (
            "move_pages MOVE_ALL without CAP_SYS_NICE",
            |vm, pid, addr| {
                vm.move_pages(pid, 0, &[addr], Some(&[1]), &mut [0], MPOL_MF_MOVE_ALL)
                    .map(drop)
            },
            Err(Errno::EPERM),
        ),
        (
            "move_pages no such pid",
            |vm, pid, addr| {
                vm.move_pages(pid, 999, &[addr], Some(&[1]), &mut [0], 0)
                    .map(drop)
            },
            Err(Errno::ESRCH),
        ),
        (
            "move_pages to a node that does not exist",
            |vm, pid, addr| {
                vm.move_pages(pid, 0, &[addr], Some(&[7]), &mut [0], 0)
                    .map(drop)
            },
            Err(Errno::ENODEV),
        ),
        (
            "move_pages to a negative node",
            |vm, pid, addr| {
                vm.move_pages(pid, 0, &[addr], Some(&[-1]), &mut [0], 0)
                    .map(drop)
            },
            Err(Errno::ENODEV),
        ),
        (
            "move_pages to a node outside the cpuset",
            |vm, pid, addr| {
                vm.set_mems_allowed(pid, nodes(&[0, 1]))?;
                vm.move_pages(pid, 0, &[addr], Some(&[3]), &mut [0], 0)
                    .map(drop)
            },
            Err(Errno::EACCES),
        ),
        (
            "move_pages per-page status",
            |vm, pid, addr| {
                let mut status = [0; 3];
                let pages = [addr, addr + 10 * PAGE, addr + (1 << 30)];
                assert_eq!(
                    vm.move_pages(pid, 0, &pages, Some(&[2, 2, 2]), &mut status, 0)?,
                    0
                );
                assert_eq!(
                    status,
                    [2, -(Errno::ENOENT as i32), -(Errno::EFAULT as i32)]
                );
                vm.move_pages(pid, 0, &pages, None, &mut status, 0)?;
                assert_eq!(status, [2, -2, -14]);
                Ok(())
            },
            Ok(()),
        ),
        (
            "weighted interleave weight 0",
            |vm, _, _| vm.set_interleave_weight(NodeId(0), 0),
            Err(Errno::EINVAL),
        ),
        (
            "weighted interleave weight 256",
            |vm, _, _| vm.set_interleave_weight(NodeId(0), 256),
            Err(Errno::EINVAL),
        ),
        (
            "weighted interleave weight 255",
            |vm, _, _| vm.set_interleave_weight(NodeId(0), 255),
            Ok(()),
        ),
        (
            "kernel.numa_balancing=2 (tiering, not modelled)",
            |vm, _, _| vm.set_numa_balancing(2),
            Err(Errno::EINVAL),
        ),
        (
            "munmap unaligned",
            |vm, pid, addr| vm.munmap(pid, addr + 1, PAGE),
            Err(Errno::EINVAL),
        ),
        (
            "mmap of more than 1 TiB",
            |vm, pid, _| vm.mmap(pid, 1 << 41).map(drop),
            Err(Errno::ENOMEM),
        ),
        (
            "mmap of zero bytes",
            |vm, pid, _| vm.mmap(pid, 0).map(drop),
            Err(Errno::EINVAL),
        ),
        (
            "access outside every VMA",
            |vm, pid, addr| vm.access(pid, addr + (1 << 30), false).map(drop),
            Err(Errno::EFAULT),
        ),
    ];
    for (name, case, expected) in cases {
        let allocator = machine();
        let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
        let pid = vm.spawn(CpuId(0), &[], 0).unwrap();
        let addr = vm.mmap(pid, 16 * PAGE).unwrap();
        for page in 0..4 {
            vm.access(pid, addr + page * PAGE, true).unwrap();
        }
        let result = case(&mut vm, pid, addr);
        assert_eq!(result, expected, "{name}");
        if let Err(errno) = expected {
            assert_eq!(errno.code(), errno as i32, "{name}");
        }
        vm.check_invariants()
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        allocator.check_invariants().unwrap();
    }
    assert_eq!(
        (
            Errno::EINVAL.code(),
            Errno::EFAULT.code(),
            Errno::EIO.code()
        ),
        (22, 14, 5)
    );
    assert_eq!(
        (
            Errno::ENODEV.code(),
            Errno::EACCES.code(),
            Errno::ENOENT.code()
        ),
        (19, 13, 2)
    );
    assert_eq!(
        (
            Errno::EPERM.code(),
            Errno::ESRCH.code(),
            Errno::EBUSY.code()
        ),
        (1, 3, 16)
    );
}

/// The source document's snippet: try BIND|NUMA_BALANCING, fall back to
/// BIND on EINVAL. Against a mode the flag does not support, the fallback
/// is what runs.
#[test]
fn document_fallback_snippet() {
    let allocator = machine();
    let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
    let pid = vm.spawn(CpuId(3), &[], 0).unwrap();
    let bmp = parse_nodestring("1,3", &vm.mem_nodes()).unwrap();
    let words = nodemask_words(&bmp);
    for mode in [MPOL_BIND, MPOL_INTERLEAVE] {
        let mut ret = vm.set_mempolicy(pid, mode | MPOL_F_NUMA_BALANCING, Some(&words), 257);
        if ret == Err(Errno::EINVAL) {
            ret = vm.set_mempolicy(pid, mode, Some(&words), 257);
        }
        ret.unwrap();
        let (policy, mask) = vm.get_mempolicy(pid, 0, 0).unwrap();
        assert_eq!(policy & !MPOL_MODE_FLAGS, mode);
        assert_eq!(policy & MPOL_F_NUMA_BALANCING != 0, mode == MPOL_BIND);
        assert_eq!(mask, bmp);
    }
}

#[test]
fn nodestrings() {
    let allowed = Nodemask::first(4);
    let parse = |text: &str| parse_nodestring(text, &allowed);
    assert_eq!(parse("1,3").unwrap(), nodes(&[1, 3]));
    assert_eq!(parse("0-3").unwrap(), nodes(&[0, 1, 2, 3]));
    assert_eq!(parse("all").unwrap(), allowed);
    assert_eq!(parse("!1").unwrap(), nodes(&[0, 2, 3]));
    assert_eq!(parse("+0,1").unwrap(), nodes(&[0, 1]));
    assert_eq!(parse("1-2,0").unwrap(), nodes(&[0, 1, 2]));
    let sparse = nodes(&[2, 5, 7]);
    assert_eq!(parse_nodestring("+0,2", &sparse).unwrap(), nodes(&[2, 7]));
    assert_eq!(parse_nodestring("+0-1", &sparse).unwrap(), nodes(&[2, 5]));
    assert_eq!(parse_nodestring("!+1", &sparse).unwrap(), nodes(&[2, 7]));
    let malformed = [
        ("", ""),
        ("1,,3", "1,,3"),
        ("x", "x"),
        ("1-x", "1-x"),
        ("3-1", "3-1"),
        ("7", "7"),
        ("+4", "+4"),
        ("!", "!"),
        ("!0-3", "!0-3"),
        ("99999", "99999"),
        ("1;3", "1;3"),
    ];
    for (text, part) in malformed {
        let err = parse(text).unwrap_err();
        assert!(
            err.to_string().contains(&format!("'{part}'")),
            "{text}: {err}"
        );
    }
    assert!(parse("1,x")
        .unwrap_err()
        .to_string()
        .contains("'x' is not a node number"));
    assert!(parse("0,5").unwrap_err().to_string().contains("'5'"));
    assert_eq!(
        format_nodestring(&nodes(&[0, 1, 2, 3, 5, 7, 8])),
        "0-3,5,7-8"
    );
    for text in ["1,3", "0-3", "0,2-3"] {
        assert_eq!(format_nodestring(&parse(text).unwrap()), text);
    }
}

#[test]
fn relative_and_static_nodes() {
    let allocator = machine();
    let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
    let pid = vm.spawn(CpuId(0), &[], 0).unwrap();
    vm.set_mems_allowed(pid, nodes(&[1, 2])).unwrap();
    // Relative node 0 is the first allowed node; 3 folds onto 3 % 2 = 1.
    vm.set_mempolicy(
        pid,
        MPOL_BIND | MPOL_F_RELATIVE_NODES,
        Some(&mask(&[0])),
        65,
    )
    .unwrap();
    let addr = vm.mmap(pid, PAGE).unwrap();
    assert_eq!(vm.access(pid, addr, true).unwrap().node, NodeId(1));
    vm.set_mempolicy(
        pid,
        MPOL_BIND | MPOL_F_RELATIVE_NODES,
        Some(&mask(&[3])),
        65,
    )
    .unwrap();
    let addr = vm.mmap(pid, PAGE).unwrap();
    assert_eq!(vm.access(pid, addr, true).unwrap().node, NodeId(2));
    // A static mask outside the cpuset is EINVAL: nothing left.
    assert_eq!(
        vm.set_mempolicy(pid, MPOL_BIND | MPOL_F_STATIC_NODES, Some(&mask(&[3])), 65),
        Err(Errno::EINVAL)
    );
    let (policy, _) = vm.get_mempolicy(pid, 0, MPOL_F_MEMS_ALLOWED).unwrap();
    assert_eq!(policy, 0);
}
