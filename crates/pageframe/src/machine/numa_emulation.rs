//! NUMA emulation (`numa=fake=`): a transformation of a machine description
//! into one with more, smaller nodes, applied before the zones are laid out.
//! mirrors numa_emulation(), split_nodes_interleave() and
//! split_nodes_size_interleave_uniform() of arch/x86/mm/numa_emulation.c.
//!
//! ```text
//!  one physical node of 1 GiB, numa=fake=2U (uniform):
//!  |<------- phys node 0 -------->|
//!  |  emu node 0  |  emu node 1   |      512 MiB each, CPUs dealt round-robin
//!
//!  two physical nodes, numa=fake=4 (interleaved):
//!  |<-- phys 0 -->|<-- phys 1 -->|
//!  | emu0 | emu2  | emu1 | emu3  |       node ids alternate between parents
//! ```
//!
//! Invariants of the result: every emulated node lies inside one physical
//! node (its parent), has at least [`FAKE_NODE_MIN_SIZE`] of memory unless
//! the parent itself is smaller, and the emulated nodes together hold exactly
//! the parent memory. Distances follow the parents: two children of one
//! parent are at LOCAL_DISTANCE, as the kernel sets them.
//!
//! Deviations: the kernel's emulated nodes span holes so that each holds the
//! same present memory; here each gets the same present bytes by carving the
//! parent's ranges, which is the same thing for our hole model, with a cut
//! inside a range moved up to the next pageblock (see
//! [`super::NodeDesc::ranges`]). Memory left over after the last emulated
//! node of a parent goes to that node.

use super::desc::{MachineDesc, MemRange, NodeDesc, NumaFake};
use super::error::DescError;
use super::size::format_size;
use crate::types::MAX_NUMNODES;

/// Smallest emulated node: 32 MiB (`FAKE_NODE_MIN_SIZE`).
pub const FAKE_NODE_MIN_SIZE: u64 = 32 << 20;

/// Returns the description with `numa=fake=` applied (and `mem=` applied
/// first, as the kernel trims memblock before emulating); a description
/// without `numa_fake` comes back unchanged. The parent of each emulated
/// node is returned beside it.
pub fn emulate_numa(desc: &MachineDesc) -> Result<(MachineDesc, Vec<usize>), DescError> {
    let Some(fake) = desc.numa_fake else {
        return Ok((desc.clone(), (0..desc.nodes.len()).collect()));
    };
    let phys = desc.nodes_within_mem_limit();
    let block = desc.pageblock_bytes();
    let (children, parents) = match fake {
        NumaFake::Uniform(per_node) => split_uniform(&phys, per_node as u64, block)?,
        NumaFake::Interleave(nr_nodes) => split_interleave(&phys, nr_nodes as u64, block)?,
    };
    if children.is_empty() {
        return Err(DescError::new(
            "cmdline mem",
            "the limit leaves no memory to emulate nodes on",
        ));
    }
    if children.len() > MAX_NUMNODES {
        return Err(DescError::new(
            "cmdline numa",
            format!(
                "{} emulated nodes, at most {MAX_NUMNODES} are supported",
                children.len()
            ),
        ));
    }
    let mut nodes: Vec<NodeDesc> = children
        .into_iter()
        .map(|ranges| NodeDesc {
            ranges,
            cpus: Vec::new(),
        })
        .collect();
    // Each parent's CPUs are dealt round-robin over its children; the CPUs
    // of a parent left without memory (by `mem=`) have no child and go to
    // emulated node 0, as numa_emu_update_cpu_to_node() falls back to 0.
    for (parent, node) in phys.iter().enumerate() {
        let kids: Vec<usize> = (0..parents.len())
            .filter(|&child| parents[child] == parent)
            .collect();
        for (at, cpu) in node.cpus.iter().enumerate() {
            let child = match kids.len() {
                0 => 0,
                nr_kids => kids[at % nr_kids],
            };
            nodes[child].cpus.push(*cpu);
        }
    }
    let distances = (0..nodes.len())
        .map(|from| {
            (0..nodes.len())
                .map(|to| desc.distance(parents[from], parents[to]))
                .collect()
        })
        .collect();
    let emulated = MachineDesc {
        nodes,
        distances: Some(distances),
        mem_limit: None,
        numa_fake: None,
        ..desc.clone()
    };
    Ok((emulated, parents))
}

/// Takes `bytes` of memory from the front of `ranges`, then the memory
/// left below the next multiple of `block` after what it took, so that no
/// pageblock is left shared by two emulated nodes (a cut inside a range,
/// or at a range's end with the next range starting in the same pageblock).
fn carve(ranges: &mut Vec<MemRange>, bytes: u64, block: u64) -> Vec<MemRange> {
    let mut taken = Vec::new();
    let mut left = bytes;
    while left > 0 && !ranges.is_empty() {
        let size = ranges[0].size.min(left);
        taken.push(take_front(ranges, size));
        left -= size;
    }
    if let Some(boundary) = taken
        .last()
        .map(|last: &MemRange| last.end().div_ceil(block).saturating_mul(block))
    {
        while let Some(first) = ranges.first().filter(|first| first.start < boundary) {
            let size = boundary.min(first.end()) - first.start;
            taken.push(take_front(ranges, size));
        }
    }
    taken
}

/// The first `size` bytes of the first range, taken off it.
fn take_front(ranges: &mut Vec<MemRange>, size: u64) -> MemRange {
    let first = &mut ranges[0];
    let taken = MemRange {
        start: first.start,
        size,
    };
    first.start += size;
    first.size -= size;
    if first.size == 0 {
        ranges.remove(0);
    }
    taken
}

fn node_bytes(ranges: &[MemRange]) -> u64 {
    ranges.iter().map(|range| range.size).sum()
}

/// Emulated nodes' ranges and each one's parent.
type Split = (Vec<Vec<MemRange>>, Vec<usize>);

/// `numa=fake=NU`: each physical node into `per_node` equal nodes, sized in
/// multiples of FAKE_NODE_MIN_SIZE, the last taking the remainder.
/// mirrors split_nodes_size_interleave_uniform().
fn split_uniform(phys: &[NodeDesc], per_node: u64, block: u64) -> Result<Split, DescError> {
    if per_node == 0 {
        return Err(DescError::new(
            "cmdline numa",
            "numa=fake=0U: at least one node per physical node",
        ));
    }
    let (mut children, mut parents) = (Vec::new(), Vec::new());
    for (parent, node) in phys.iter().enumerate() {
        let total = node_bytes(&node.ranges);
        if total == 0 {
            // `mem=` left this node without memory: it has no children.
            continue;
        }
        let size = total / per_node / FAKE_NODE_MIN_SIZE * FAKE_NODE_MIN_SIZE;
        if size == 0 {
            return Err(DescError::new(
                "cmdline numa",
                format!(
                    "node {parent} has {}: too little for {per_node} nodes of at least {}",
                    format_size(total),
                    format_size(FAKE_NODE_MIN_SIZE)
                ),
            ));
        }
        let mut left = node.ranges.clone();
        for child in 0..per_node {
            let bytes = if child + 1 == per_node {
                u64::MAX
            } else {
                size
            };
            children.push(carve(&mut left, bytes, block));
            parents.push(parent);
        }
    }
    Ok((children, parents))
}

/// `numa=fake=N`: N equal nodes dealt round-robin over the physical nodes.
/// mirrors split_nodes_interleave(): the size is the memory over N rounded
/// down to FAKE_NODE_MIN_SIZE, with the rounding remainder spread as one
/// extra FAKE_NODE_MIN_SIZE over the first nodes.
fn split_interleave(phys: &[NodeDesc], nr_nodes: u64, block: u64) -> Result<Split, DescError> {
    let total: u64 = phys.iter().map(|node| node_bytes(&node.ranges)).sum();
    if nr_nodes == 0 || total / nr_nodes < FAKE_NODE_MIN_SIZE {
        return Err(DescError::new(
            "cmdline numa",
            format!(
                "numa=fake={nr_nodes}: {} cannot make {nr_nodes} nodes of at least {}",
                format_size(total),
                format_size(FAKE_NODE_MIN_SIZE)
            ),
        ));
    }
    let per = total / nr_nodes;
    let size = per / FAKE_NODE_MIN_SIZE * FAKE_NODE_MIN_SIZE;
    let mut big = (per - size) * nr_nodes / FAKE_NODE_MIN_SIZE;
    let mut left: Vec<Vec<MemRange>> = phys.iter().map(|node| node.ranges.clone()).collect();
    let (mut children, mut parents): (Vec<Vec<MemRange>>, Vec<usize>) = (Vec::new(), Vec::new());
    let mut last_child = vec![None; phys.len()];
    while (children.len() as u64) < nr_nodes && left.iter().any(|ranges| !ranges.is_empty()) {
        for (parent, ranges) in left.iter_mut().enumerate() {
            if ranges.is_empty() || children.len() as u64 >= nr_nodes {
                continue;
            }
            let mut bytes = size;
            if big > 0 {
                bytes += FAKE_NODE_MIN_SIZE;
                big -= 1;
            }
            // Too little would remain for another node: take it all now.
            if node_bytes(ranges).saturating_sub(bytes) < FAKE_NODE_MIN_SIZE {
                bytes = u64::MAX;
            }
            last_child[parent] = Some(children.len());
            children.push(carve(ranges, bytes, block));
            parents.push(parent);
        }
    }
    for (parent, ranges) in left.into_iter().enumerate() {
        if ranges.is_empty() {
            continue;
        }
        match last_child[parent] {
            Some(child) => children[child].extend(ranges),
            None => {
                children.push(ranges);
                parents.push(parent);
            }
        }
    }
    Ok((children, parents))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CpuId;

    #[test]
    fn uniform_split_halves_each_node() {
        let mut desc = MachineDesc::uniform(2 << 30, 2, 4).unwrap();
        desc.numa_fake = Some(NumaFake::Uniform(2));
        let (emu, parents) = emulate_numa(&desc).unwrap();
        assert_eq!(parents, vec![0, 0, 1, 1]);
        assert!(emu
            .nodes
            .iter()
            .all(|node| node_bytes(&node.ranges) == 512 << 20));
        assert_eq!(emu.nodes[1].ranges[0].start, 512 << 20);
        assert_eq!(emu.distance(0, 1), 10);
        assert_eq!(emu.distance(0, 2), 20);
        assert_eq!(emu.nodes[0].cpus, vec![CpuId(0)]);
        assert_eq!(emu.nodes[1].cpus, vec![CpuId(1)]);
        let layout = desc.layout().unwrap();
        assert_eq!(layout.nodes.len(), 4);
    }

    #[test]
    fn interleave_alternates_parents() {
        let mut desc = MachineDesc::uniform(2 << 30, 2, 2).unwrap();
        desc.numa_fake = Some(NumaFake::Interleave(4));
        let (emu, parents) = emulate_numa(&desc).unwrap();
        assert_eq!(parents, vec![0, 1, 0, 1]);
        assert_eq!(emu.nodes[1].ranges[0].start, 1 << 30);
        let total: u64 = emu.nodes.iter().map(|node| node_bytes(&node.ranges)).sum();
        assert_eq!(total, 2 << 30);
    }

    #[test]
    fn too_small_nodes_are_an_error() {
        let mut desc = MachineDesc::uniform(64 << 20, 1, 1).unwrap();
        desc.numa_fake = Some(NumaFake::Uniform(4));
        assert_eq!(desc.layout().unwrap_err().field, "cmdline numa");
    }
}
