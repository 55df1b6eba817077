//! The user's description of a machine, before validation.

use super::error::DescError;
use super::size::format_size;
use crate::types::CpuId;

/// SLIT distance of a node to itself (`LOCAL_DISTANCE`).
pub const LOCAL_DISTANCE: u8 = 10;
/// SLIT distance between two nodes when none is given (`REMOTE_DISTANCE`).
pub const REMOTE_DISTANCE: u8 = 20;

/// A range of physical memory, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemRange {
    /// Physical start address.
    pub start: u64,
    /// Length in bytes.
    pub size: u64,
}

impl MemRange {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.start.saturating_add(self.size)
    }
}

/// One NUMA node: its memory ranges (holes between them are allowed) and CPUs.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct NodeDesc {
    /// Physical memory ranges of the node, in bytes (as firmware reports
    /// them: e820's `System RAM`); the pages wholly inside a range are
    /// present. Ranges of two nodes may not share a pageblock: pageframe
    /// keeps a pageblock's zone in its pageblock word, where the kernel
    /// keeps each page's zone in its page flags.
    pub ranges: Vec<MemRange>,
    /// CPUs of the node; a node may have none (a memory-only node).
    pub cpus: Vec<CpuId>,
}

/// A direct-mapped memory-side cache in front of memory (ACPI HMAT
/// "memory side cache"): DRAM caching persistent memory, or HBM caching DRAM.
/// Its presence is what auto-enables free-list shuffling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemorySideCache {
    /// Capacity in bytes (per node when `per_node`, else for the machine).
    pub size: u64,
    /// Line size in bytes (64 by default).
    pub line: u64,
    /// One cache per node, indexed by the address within the node; else one
    /// cache for the whole machine indexed by physical address.
    pub per_node: bool,
}

/// `page_alloc.shuffle=` and `page_alloc.shuffle_order=` as given, before the
/// machine decides. mirrors the two bits of `shuffle_state` in the source
/// document's mm/shuffle.c: a force-disable wins over any enable, given
/// before or after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShuffleParam {
    /// `page_alloc.shuffle=1` was given (SHUFFLE_ENABLE).
    pub enable: bool,
    /// `page_alloc.shuffle=0` was given (SHUFFLE_FORCE_DISABLE).
    pub force_disable: bool,
    /// `page_alloc.shuffle_order=`: `None` is SHUFFLE_ORDER (MAX_PAGE_ORDER).
    pub order: Option<u8>,
}

/// `numa=fake=` on the kernel command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumaFake {
    /// `numa=fake=N`: N nodes interleaved over the physical nodes.
    Interleave(u16),
    /// `numa=fake=NU`: every physical node split uniformly into N nodes.
    Uniform(u16),
}

/// One memory-hotplug step, applied after boot in order
/// (`PageAllocator::apply_hotplug`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotplugStep {
    /// True: online the range; false: offline it.
    pub online: bool,
    /// Physical start address.
    pub start: u64,
    /// Bytes.
    pub size: u64,
    /// The node (online only).
    pub node: usize,
    /// The zone (online only): Normal or Movable.
    pub zone: crate::types::ZoneType,
}

/// A whole machine as the user describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineDesc {
    /// log2 of the page size (12: 4 KiB pages).
    pub page_shift: u8,
    /// MAX_PAGE_ORDER: the largest buddy order, inclusive.
    pub max_order: u8,
    /// pageblock_order: the granule of migratetypes.
    pub pageblock_order: u8,
    /// The nodes, node `i` at index `i`.
    pub nodes: Vec<NodeDesc>,
    /// SLIT distances, `distances[from][to]`; `None` gives 10 local, 20 remote.
    pub distances: Option<Vec<Vec<u8>>>,
    /// Put memory below 16 MiB in a DMA zone (x86-64's `MAX_DMA_PFN`).
    pub dma: bool,
    /// Put memory below 4 GiB in a DMA32 zone.
    pub dma32: bool,
    /// Transparent hugepages of PMD size are enabled (`always` or
    /// `madvise`; `transparent_hugepage=` on the command line): khugepaged
    /// raises min_free_kbytes to its recommended minimum.
    pub transparent_hugepage: bool,
    /// `movablecore=`: bytes of ZONE_MOVABLE, spread over the nodes.
    pub movablecore: Option<u64>,
    /// `kernelcore=`: bytes not in ZONE_MOVABLE, spread over the nodes.
    pub kernelcore: Option<u64>,
    /// `mem=`: use only the first this many bytes of memory.
    pub mem_limit: Option<u64>,
    /// A direct-mapped memory-side cache, if the platform has one.
    pub memory_side_cache: Option<MemorySideCache>,
    /// `page_alloc.shuffle=` / `page_alloc.shuffle_order=`.
    pub shuffle: ShuffleParam,
    /// `numa=fake=`: NUMA emulation, applied when the layout is computed.
    pub numa_fake: Option<NumaFake>,
    /// Memory-hotplug steps to apply after boot (not part of the layout).
    pub hotplug: Vec<HotplugStep>,
    /// Memory reserved at boot (`memblock_reserve()`: firmware tables, the
    /// kernel image, the memmap): present, but never given to the buddy
    /// allocator. A reservation's partial pages are reserved whole, as
    /// memblock_free_all() frees only the pages wholly outside them; the
    /// part of a reservation over a hole reserves nothing.
    pub reserved: Vec<MemRange>,
    /// `reserve_mem=`: reservations by name, placed by memblock's
    /// allocator when the machine is laid out (see [`super::ReserveMem`]).
    pub reserve_mem: Vec<super::ReserveMem>,
}

impl Default for MachineDesc {
    /// One node of 4 GiB with 2 CPUs, 4 KiB pages, orders as on x86-64.
    fn default() -> MachineDesc {
        MachineDesc::uniform(4 << 30, 1, 2).expect("the default machine is valid")
    }
}

impl MachineDesc {
    /// `nr_nodes` nodes sharing `mem_bytes` contiguously from address 0, with
    /// `nr_cpus` CPUs spread over them in blocks (as `--mem --nodes --cpus`).
    /// Each node gets an equal pageblock-aligned share; the last one the rest.
    pub fn uniform(
        mem_bytes: u64,
        nr_nodes: usize,
        nr_cpus: usize,
    ) -> Result<MachineDesc, DescError> {
        let mut desc = MachineDesc {
            page_shift: 12,
            max_order: 10,
            pageblock_order: 9,
            nodes: Vec::new(),
            distances: None,
            dma: false,
            dma32: false,
            transparent_hugepage: false,
            movablecore: None,
            kernelcore: None,
            mem_limit: None,
            memory_side_cache: None,
            shuffle: ShuffleParam::default(),
            numa_fake: None,
            hotplug: Vec::new(),
            reserved: Vec::new(),
            reserve_mem: Vec::new(),
        };
        if nr_nodes == 0 {
            return Err(DescError::new("nodes", "a machine needs at least one node"));
        }
        if nr_nodes > crate::types::MAX_NUMNODES {
            return Err(DescError::new(
                "nodes",
                format!(
                    "{nr_nodes} nodes, at most {} are supported",
                    crate::types::MAX_NUMNODES
                ),
            ));
        }
        if nr_cpus == 0 {
            return Err(DescError::new("cpus", "a machine needs at least one CPU"));
        }
        if nr_cpus > u16::MAX as usize {
            return Err(DescError::new(
                "cpus",
                format!("{nr_cpus} CPUs, at most 65535 are supported"),
            ));
        }
        let block = desc.pageblock_bytes();
        let share = (mem_bytes / nr_nodes as u64) / block * block;
        let mut start = 0;
        for node in 0..nr_nodes {
            let size = if node + 1 == nr_nodes {
                (mem_bytes - start) / block * block
            } else {
                share
            };
            let cpus = (node * nr_cpus / nr_nodes..(node + 1) * nr_cpus / nr_nodes)
                .map(|cpu| CpuId(cpu as u16))
                .collect();
            desc.nodes.push(NodeDesc {
                ranges: vec![MemRange { start, size }],
                cpus,
            });
            start += size;
        }
        Ok(desc)
    }

    /// Bytes in a page; `u64::MAX` for a `page_shift` of 64 or more (which
    /// validation refuses).
    pub fn page_bytes(&self) -> u64 {
        shifted_bytes(u32::from(self.page_shift))
    }

    /// The highest physical address memory may reach: the end of PFN
    /// 2^32 - 2, as the memmap indexes PFNs with 32 bits and keeps
    /// `u32::MAX` for the end of a list; `u64::MAX` for a page so large that
    /// the address does not fit (which validation refuses).
    pub fn max_end_bytes(&self) -> u64 {
        (u64::from(u32::MAX) - 1)
            .checked_shl(u32::from(self.page_shift))
            .filter(|limit| limit >> self.page_shift == u64::from(u32::MAX) - 1)
            .unwrap_or(u64::MAX)
    }

    /// Bytes in a pageblock; `u64::MAX` when that is 2^64 or more (which
    /// validation refuses).
    pub fn pageblock_bytes(&self) -> u64 {
        shifted_bytes(u32::from(self.page_shift) + u32::from(self.pageblock_order))
    }

    /// Number of CPUs over all nodes.
    pub fn nr_cpus(&self) -> usize {
        self.nodes.iter().map(|node| node.cpus.len()).sum()
    }

    /// The bytes of memory the machine boots with: its ranges as
    /// [`MachineDesc::total_bytes`] adds them, after `mem=`.
    pub fn bytes_within_mem_limit(&self) -> u64 {
        self.nodes_within_mem_limit()
            .iter()
            .flat_map(|node| node.ranges.iter())
            .fold(0u64, |sum, range| sum.saturating_add(range.size))
    }

    /// The nodes as memory sizing sees them: each node's ranges sorted, and
    /// merged where one ends at the next one's start (memblock_add() merges
    /// touching regions of a node, so a page split between two e820 entries
    /// is present); then `mem=`: the lowest addresses kept up to the limit,
    /// rounded down to a pageblock, ranges left empty dropped (a node may
    /// be left without memory).
    pub(super) fn nodes_within_mem_limit(&self) -> Vec<NodeDesc> {
        let mut nodes = self.nodes.clone();
        for node in &mut nodes {
            node.ranges.sort_unstable_by_key(|range| range.start);
            let mut merged: Vec<MemRange> = Vec::with_capacity(node.ranges.len());
            for range in node.ranges.drain(..) {
                match merged.last_mut() {
                    Some(last) if last.end() == range.start => last.size += range.size,
                    _ => merged.push(range),
                }
            }
            node.ranges = merged;
        }
        let Some(limit) = self.mem_limit else {
            return nodes;
        };
        let block = self.pageblock_bytes();
        let mut all: Vec<(u64, usize, usize)> = nodes
            .iter()
            .enumerate()
            .flat_map(|(node, desc)| {
                desc.ranges
                    .iter()
                    .enumerate()
                    .map(move |(at, range)| (range.start, node, at))
            })
            .collect();
        all.sort_unstable();
        let mut left = limit / block * block;
        for (_, node, at) in all {
            let range = &mut nodes[node].ranges[at];
            range.size = range.size.min(left);
            left -= range.size;
        }
        for node in &mut nodes {
            node.ranges.retain(|range| range.size > 0);
        }
        nodes
    }

    /// Bytes of memory over all nodes (before `mem=`).
    pub fn total_bytes(&self) -> u64 {
        self.nodes
            .iter()
            .flat_map(|node| node.ranges.iter())
            .fold(0u64, |sum, range| sum.saturating_add(range.size))
    }

    /// Checks everything that does not depend on the zone layout; the first
    /// problem found is returned, naming its field.
    pub(super) fn validate(&self) -> Result<(), DescError> {
        if !(12..=16).contains(&self.page_shift) {
            let size = match 1u64.checked_shl(u32::from(self.page_shift)) {
                Some(bytes) => format_size(bytes),
                None => format!("2^{}", self.page_shift),
            };
            return Err(DescError::new(
                "page_size",
                format!("{size} is not a page size (a power of two from 4K to 64K)"),
            ));
        }
        if self.max_order > 20 {
            return Err(DescError::new(
                "max_order",
                format!("{} is above 20", self.max_order),
            ));
        }
        if self.pageblock_order > self.max_order {
            return Err(DescError::new(
                "pageblock_order",
                format!(
                    "{} is above max_order {}",
                    self.pageblock_order, self.max_order
                ),
            ));
        }
        if self.nodes.is_empty() {
            return Err(DescError::new("nodes", "a machine needs at least one node"));
        }
        if self.nodes.len() > crate::types::MAX_NUMNODES {
            return Err(DescError::new(
                "nodes",
                format!(
                    "{} nodes, at most {} are supported",
                    self.nodes.len(),
                    crate::types::MAX_NUMNODES
                ),
            ));
        }
        self.validate_ranges()?;
        self.validate_zone_ends()?;
        self.validate_reserved()?;
        self.validate_cpus()?;
        self.validate_distances()?;
        self.validate_shuffle_and_cache()
    }

    /// Whether the free lists are shuffled: a force-disable wins, else an
    /// enable from the command line or a detected memory-side cache.
    /// mirrors page_alloc_shuffle() of the source document.
    pub fn shuffle_enabled(&self) -> bool {
        !self.shuffle.force_disable && (self.shuffle.enable || self.memory_side_cache.is_some())
    }

    /// The order shuffled: `page_alloc.shuffle_order=` or MAX_PAGE_ORDER.
    pub fn shuffle_order(&self) -> u8 {
        self.shuffle.order.unwrap_or(self.max_order)
    }

    /// ZONE_DMA ends at 16 MiB and ZONE_DMA32 at 4 GiB; each end must be a
    /// pageblock boundary, as pageframe keeps one zone per pageblock (with
    /// 64K pages a pageblock is 32 MiB).
    fn validate_zone_ends(&self) -> Result<(), DescError> {
        let block = self.pageblock_bytes();
        for (on, field, end) in [
            (self.dma, "dma", 16u64 << 20),
            (self.dma32, "dma32", 4 << 30),
        ] {
            if on && end % block != 0 {
                return Err(DescError::new(
                    field,
                    format!(
                        "the zone ends at {}, inside a pageblock of {}; pageframe keeps one zone per pageblock",
                        format_size(end),
                        format_size(block)
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_shuffle_and_cache(&self) -> Result<(), DescError> {
        if let Some(order) = self.shuffle.order {
            if order > self.max_order {
                return Err(DescError::new(
                    "cmdline page_alloc.shuffle_order",
                    format!("{order} is above max_order {}", self.max_order),
                ));
            }
        }
        if let Some(cache) = &self.memory_side_cache {
            if cache.line == 0 || !cache.line.is_power_of_two() || cache.line > 1 << 20 {
                return Err(DescError::new(
                    "memory_side_cache.line",
                    format!("{} is not a power of two up to 1M", cache.line),
                ));
            }
            if cache.size < cache.line || cache.size % cache.line != 0 {
                return Err(DescError::new(
                    "memory_side_cache.size",
                    format!(
                        "{} is not a positive multiple of the line size {}",
                        format_size(cache.size),
                        cache.line
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_ranges(&self) -> Result<(), DescError> {
        let block = self.pageblock_bytes();
        let max_block = 1u64 << (self.page_shift as u32 + self.max_order as u32);
        let mut all = Vec::new();
        for (node, desc) in self.nodes.iter().enumerate() {
            let field = format!("node[{node}].mem");
            let bytes = desc
                .ranges
                .iter()
                .try_fold(0u64, |sum, range| sum.checked_add(range.size))
                .ok_or_else(|| DescError::new(&field, "the range sizes add up past 2^64 bytes"))?;
            if bytes == 0 {
                return Err(DescError::new(
                    field,
                    format!(
                        "no memory (--mem and uniform shares round down to whole pageblocks of {}; a node needs at least one max_order block of {})",
                        format_size(block),
                        format_size(max_block)
                    ),
                ));
            }
            if bytes < max_block {
                return Err(DescError::new(
                    field,
                    format!(
                        "{} is smaller than one max_order {} block ({})",
                        format_size(bytes),
                        self.max_order,
                        format_size(max_block)
                    ),
                ));
            }
            for range in &desc.ranges {
                if range.size == 0 {
                    return Err(DescError::new(field, "a range of zero bytes"));
                }
                // The memmap covers the last pageblock whole (see
                // Frames::new), so memory ends a pageblock below the limit.
                let limit = self.max_end_bytes();
                let pageblock_limit = limit / block * block;
                if range.end() > pageblock_limit || range.start.checked_add(range.size).is_none() {
                    return Err(DescError::new(
                        field,
                        format!(
                            "range ends above {} (2^32 pages)",
                            format_size(limit + self.page_bytes())
                        ),
                    ));
                }
                all.push((range.start, range.end(), node));
            }
        }
        all.sort_unstable();
        for pair in all.windows(2) {
            let ((_, end_a, node_a), (start_b, _, node_b)) = (pair[0], pair[1]);
            if start_b < end_a {
                return Err(DescError::new(
                    format!("node[{node_b}].mem"),
                    format!("range at {start_b:#x} overlaps a range of node {node_a}"),
                ));
            }
        }
        Ok(())
    }

    /// Each reservation is non-empty, ends below 2^64 and reaches the
    /// machine's memory (`mem=` aside: a reservation above the limit
    /// reserves nothing). Like memblock_reserve(), it may cover holes too:
    /// only the present pages in it are reserved.
    fn validate_reserved(&self) -> Result<(), DescError> {
        // validate_ranges() found the memory ranges disjoint: sorted by
        // start, they are sorted by end too.
        let mut memory: Vec<(u64, u64)> = self
            .nodes
            .iter()
            .flat_map(|node| node.ranges.iter())
            .map(|memory| (memory.start, memory.end()))
            .collect();
        memory.sort_unstable();
        for (index, range) in self.reserved.iter().enumerate() {
            let field = format!("reserved[{index}]");
            if range.size == 0 {
                return Err(DescError::new(field, "a reservation of zero bytes"));
            }
            let Some(end) = range.start.checked_add(range.size) else {
                return Err(DescError::new(
                    field,
                    format!(
                        "{:#x} + {:#x} ends past 2^64 bytes",
                        range.start, range.size
                    ),
                ));
            };
            // The first memory range ending after the reservation's start.
            let after = memory.partition_point(|&(_, stop)| stop <= range.start);
            let reaches_memory = memory.get(after).is_some_and(|&(start, _)| start < end);
            if !reaches_memory {
                return Err(DescError::new(
                    field,
                    format!(
                        "{:#x}..{end:#x} holds no memory of the machine",
                        range.start
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_cpus(&self) -> Result<(), DescError> {
        let Some(highest) = self.nodes.iter().flat_map(|node| node.cpus.iter()).max() else {
            return Err(DescError::new("cpus", "a machine needs at least one CPU"));
        };
        let nr_cpus = highest.index() + 1;
        let mut owner = vec![None; nr_cpus];
        for (node, desc) in self.nodes.iter().enumerate() {
            for cpu in &desc.cpus {
                let slot = &mut owner[cpu.index()];
                if let Some(other) = *slot {
                    return Err(DescError::new(
                        format!("node[{node}].cpus"),
                        format!("CPU {cpu} is on node {other} too"),
                    ));
                }
                *slot = Some(node);
            }
        }
        match owner.iter().position(Option::is_none) {
            Some(cpu) => Err(DescError::new("cpus", format!("CPU {cpu} is on no node"))),
            None => Ok(()),
        }
    }

    fn validate_distances(&self) -> Result<(), DescError> {
        let Some(matrix) = &self.distances else {
            return Ok(());
        };
        let nr_nodes = self.nodes.len();
        if matrix.len() != nr_nodes || matrix.iter().any(|row| row.len() != nr_nodes) {
            return Err(DescError::new(
                "distance",
                format!("the matrix must be {nr_nodes}x{nr_nodes}, one row and column per node"),
            ));
        }
        for (from, row) in matrix.iter().enumerate() {
            for (to, &distance) in row.iter().enumerate() {
                let field = format!("distance[{from}][{to}]");
                if from == to && distance != LOCAL_DISTANCE {
                    return Err(DescError::new(
                        field,
                        format!("a node's distance to itself must be {LOCAL_DISTANCE}"),
                    ));
                }
                if from != to && distance <= LOCAL_DISTANCE {
                    return Err(DescError::new(
                        field,
                        format!("{distance}: remote distances must be above {LOCAL_DISTANCE}"),
                    ));
                }
                if distance == u8::MAX {
                    return Err(DescError::new(
                        field,
                        "255 means unreachable and is not supported",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The SLIT distance from one node to another.
    pub fn distance(&self, from: usize, to: usize) -> u8 {
        match &self.distances {
            Some(matrix) => matrix[from][to],
            None if from == to => LOCAL_DISTANCE,
            None => REMOTE_DISTANCE,
        }
    }
}

/// `2^shift` bytes, `u64::MAX` when that does not fit.
fn shifted_bytes(shift: u32) -> u64 {
    1u64.checked_shl(shift).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_splits_memory_and_cpus() {
        let desc = MachineDesc::uniform(64 << 30, 4, 8).unwrap();
        assert_eq!(desc.nodes.len(), 4);
        assert!(desc
            .nodes
            .iter()
            .all(|node| node.ranges[0].size == 16 << 30 && node.cpus.len() == 2));
        assert_eq!(desc.nodes[3].ranges[0].start, 48 << 30);
        desc.validate().unwrap();
    }

    #[test]
    fn rejects_bad_descriptions_naming_the_field() {
        let cases: Vec<(MachineDesc, &str)> = vec![
            (
                {
                    let mut desc = MachineDesc::default();
                    desc.nodes[0].ranges[0].size = 0;
                    desc
                },
                "node[0].mem",
            ),
            (
                {
                    let mut desc = MachineDesc::uniform(8 << 30, 2, 2).unwrap();
                    desc.nodes[1].ranges[0].start = 2 << 30;
                    desc
                },
                "node[1].mem",
            ),
            (
                {
                    let mut desc = MachineDesc::uniform(8 << 30, 2, 2).unwrap();
                    desc.distances = Some(vec![vec![10, 20]]);
                    desc
                },
                "distance",
            ),
            (
                {
                    let mut desc = MachineDesc::uniform(8 << 30, 2, 2).unwrap();
                    desc.nodes[1].cpus = vec![CpuId(0), CpuId(1)];
                    desc
                },
                "node[1].cpus",
            ),
            (
                {
                    let mut desc = MachineDesc::uniform(8 << 30, 2, 4).unwrap();
                    desc.nodes[1].cpus.remove(0);
                    desc
                },
                "cpus",
            ),
            (
                {
                    let mut desc = MachineDesc {
                        max_order: 12,
                        ..MachineDesc::default()
                    };
                    desc.nodes[0].ranges[0].size = 8 << 20;
                    desc
                },
                "node[0].mem",
            ),
            (
                MachineDesc {
                    pageblock_order: 11,
                    ..MachineDesc::default()
                },
                "pageblock_order",
            ),
        ];
        for (desc, field) in cases {
            let err = desc.validate().unwrap_err();
            assert_eq!(err.field, field, "{err}");
        }
    }
}
