//! The allocation fast path decides as the general walk does. Twin
//! allocators run the same random sequence: one allocates through
//! `alloc_pages` (which tries the inline per-CPU walk first), the other
//! through `alloc_pages_nodemask` with every node in the mask (which skips
//! it and walks the zonelist as get_page_from_freelist() does). After every
//! step both gave the same answer, hold the same blocks, print the same
//! four /proc views, and pass their invariants.
//!
//! The machines put the walk's branches in reach: a zone below its
//! watermark with the next zone of the node above (ZONE_MOVABLE before
//! ZONE_NORMAL), and a node whose Normal zone starts with
//! `ALLOC_NOFRAGMENT` (it has DMA32 memory) next to another node, where the
//! kernel's walk restarts without the flag.

mod common;

use common::{ProcViews, MIB};
use pageframe::machine::{apply_cmdline, MemRange};
use pageframe::{
    AllocError, CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Nodemask, Order, Page,
};
use proptest::prelude::*;

const NR_CPUS: usize = 2;
const GIB: u64 = 1 << 30;

/// Two nodes of 16 MiB, each with 4 MiB of ZONE_MOVABLE.
fn movable_machine() -> MachineDesc {
    let mut desc = MachineDesc::uniform(32 * MIB, 2, NR_CPUS).unwrap();
    apply_cmdline(&mut desc, "movablecore=8M").unwrap();
    desc
}

/// Node 0 straddles 4 GiB (16 MiB of DMA32, 16 MiB of Normal), node 1 is
/// 16 MiB of Normal above it: node 0's Normal zone starts its allocations
/// with `ALLOC_NOFRAGMENT`, node 1's does not.
fn nofragment_machine() -> MachineDesc {
    let mut desc = MachineDesc::uniform(48 * MIB, 2, NR_CPUS).unwrap();
    desc.dma32 = true;
    desc.nodes[0].ranges = vec![MemRange {
        start: 4 * GIB - 16 * MIB,
        size: 32 * MIB,
    }];
    desc.nodes[1].ranges = vec![MemRange {
        start: 4 * GIB + 16 * MIB,
        size: 16 * MIB,
    }];
    desc
}

/// The requests the sequences make.
const GFPS: [Gfp; 6] = [
    Gfp::KERNEL,
    Gfp::KERNEL.union(Gfp::DMA32),
    Gfp::HIGHUSER_MOVABLE,
    Gfp::ATOMIC,
    Gfp::NOWAIT,
    Gfp::KERNEL.union(Gfp::THISNODE),
];

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        cpu: usize,
        gfp: usize,
        order: u8,
        node: u16,
    },
    /// Frees the held block at this index (modulo the count).
    Free {
        index: usize,
        cpu: usize,
    },
    Drain,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..NR_CPUS, 0..GFPS.len(), prop_oneof![3 => Just(0u8), 1 => 1u8..=3, 1 => Just(9u8)], 0u16..2)
            .prop_map(|(cpu, gfp, order, node)| Op::Alloc { cpu, gfp, order, node }),
        3 => (any::<usize>(), 0..NR_CPUS).prop_map(|(index, cpu)| Op::Free { index, cpu }),
        1 => Just(Op::Drain),
    ]
}

/// Runs `ops` on twins booted from `desc` and compares them step by step;
/// returns the fast path's twin.
fn run_twins(desc: &MachineDesc, ops: &[Op]) -> LocalPageAllocator {
    let fast = LocalPageAllocator::boot(desc).unwrap();
    let general = LocalPageAllocator::boot(desc).unwrap();
    let mut every_node = Nodemask::NONE;
    for node in 0..desc.nodes.len() {
        every_node.set(NodeId(node as u16));
    }
    let mut held: Vec<(Page, Order)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Alloc {
                cpu,
                gfp,
                order,
                node,
            } => {
                let (gfp, order, node) = (GFPS[gfp], Order(order), NodeId(node));
                let cpu = CpuId(cpu as u16);
                let got = fast.cpu(cpu).unwrap().alloc_pages(gfp, order, node);
                let want =
                    general
                        .cpu(cpu)
                        .unwrap()
                        .alloc_pages_nodemask(gfp, order, node, &every_node);
                assert_eq!(got, want, "step {step}: {op:?}");
                if let Ok(page) = got {
                    held.push((page, order));
                }
            }
            Op::Free { index, cpu } if !held.is_empty() => {
                let (page, order) = held.swap_remove(index % held.len());
                let cpu = CpuId(cpu as u16);
                fast.cpu(cpu).unwrap().free_pages(page, order).unwrap();
                general.cpu(cpu).unwrap().free_pages(page, order).unwrap();
            }
            Op::Free { .. } => {}
            Op::Drain => {
                fast.drain_all_pages();
                general.drain_all_pages();
            }
        }
        fast.check_invariants().unwrap();
        general.check_invariants().unwrap();
        assert_eq!(
            ProcViews::capture(&fast),
            ProcViews::capture(&general),
            "step {step}: {op:?}"
        );
    }
    fast
}

/// Holds `blocks` order-9 blocks of node 0, so that the random steps
/// soon take its zones below their watermarks.
fn fill_node0(blocks: usize) -> Vec<Op> {
    vec![
        Op::Alloc {
            cpu: 0,
            gfp: 0,
            order: 9,
            node: 0,
        };
        blocks
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn fast_path_decides_as_the_general_walk_movable(ops in prop::collection::vec(op(), 1..400)) {
        run_twins(&movable_machine(), &[fill_node0(5), ops].concat());
    }

    #[test]
    fn fast_path_decides_as_the_general_walk_nofragment(ops in prop::collection::vec(op(), 1..400)) {
        run_twins(&nofragment_machine(), &[fill_node0(14), ops].concat());
    }
}

/// The fast path serves another node's per-CPU list, and counts the NUMA
/// miss and foreign as zone_statistics() does: CPU 0 holds a page of node
/// 1 on its list, then allocates preferring node 0 until node 0 is below
/// its watermark (no `ALLOC_NOFRAGMENT` on two nodes without DMA32, so the
/// walk goes on to node 1 at once).
#[test]
fn the_fast_path_serves_and_counts_another_nodes_list() {
    let alloc = |node: u16| Op::Alloc {
        cpu: 0,
        gfp: 0,
        order: 0,
        node,
    };
    let mut ops = vec![alloc(1), Op::Free { index: 0, cpu: 0 }];
    ops.extend(fill_node0(5));
    ops.extend(std::iter::repeat_n(alloc(0), 1200));
    let fast = run_twins(&movable_machine(), &ops);
    for counter in ["numa_miss", "numa_foreign"] {
        assert!(common::vmstat_value(&fast, counter) > 0, "no {counter}");
    }
}

/// The NOFRAGMENT machine is what the second property needs: node 0 has a
/// DMA32 and a Normal zone, node 1 a Normal zone, and once node 0 is full
/// an order-0 GFP_KERNEL allocation preferring it comes from node 1.
#[test]
fn the_nofragment_machine_falls_back_across_nodes() {
    let allocator = LocalPageAllocator::boot(&nofragment_machine()).unwrap();
    let zones: Vec<_> = allocator
        .zone_snapshots()
        .iter()
        .filter(|zone| zone.present > 0)
        .map(|zone| (zone.node, zone.zone_type))
        .collect();
    assert_eq!(zones.len(), 3, "{zones:?}");
    let cpu = allocator.cpu(CpuId(0)).unwrap();
    let node1_start = (4 * GIB + 16 * MIB) >> 12;
    let mut held = Vec::new();
    let fell_back = loop {
        match cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)) {
            Ok(page) if page.pfn().0 >= node1_start => break true,
            Ok(page) => held.push(page),
            Err(AllocError::NoMemory { .. }) => break false,
            Err(err) => panic!("{err}"),
        }
    };
    assert!(fell_back, "node 0 never fell back to node 1");
    allocator.check_invariants().unwrap();
}
