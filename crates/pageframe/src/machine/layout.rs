//! From a validated description to zone spans: mirrors free_area_init(),
//! find_zone_movable_pfns_for_nodes() and adjust_zone_range_for_zone_movable().

use super::desc::MachineDesc;
use super::error::DescError;
use super::pfn_range::{intersect, merge_sorted};
use super::size::format_size;
use crate::types::{CpuId, NodeId, Order, Pfn, ZoneType};

pub use super::pfn_range::PfnRange;

/// Most (CPU, zone) pairs a machine may have: each holds a set of per-CPU
/// lists with their lock and the CPU's event counters for the zone, about
/// 1 KiB, so the limit bounds per-CPU state near 256 MiB (e.g. 65535 CPUs
/// over 2 nodes, or 8192 CPUs, the kernel's largest NR_CPUS, over 16 nodes
/// of two zones). The kernel bounds the same state through NR_CPUS and
/// MAX_NUMNODES at build time.
pub const MAX_CPU_ZONE_PAIRS: usize = 1 << 18;

/// One zone of one node: its span and the present memory in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneLayout {
    /// The node.
    pub node: NodeId,
    /// The zone type.
    pub zone_type: ZoneType,
    /// The span `[zone_start_pfn, zone_end_pfn)`: the zone's bounds within
    /// the node, holes included; empty for an unpopulated zone.
    pub span: PfnRange,
    /// Present memory inside the span, sorted; holes are what is missing.
    pub present: Vec<PfnRange>,
    /// The present pages memblock kept at boot, sorted, disjoint and inside
    /// `present`: never in the buddy allocator, so not `managed`.
    pub reserved: Vec<PfnRange>,
}

impl ZoneLayout {
    /// Pages the span covers, holes included (`spanned_pages`).
    pub fn spanned_pages(&self) -> u64 {
        self.span.len()
    }

    /// Pages of memory in the zone (`present_pages`).
    pub fn present_pages(&self) -> u64 {
        self.present.iter().map(PfnRange::len).sum()
    }

    /// Pages reserved at boot.
    pub fn reserved_pages(&self) -> u64 {
        self.reserved.iter().map(PfnRange::len).sum()
    }

    /// Pages the buddy allocator manages: present and not reserved
    /// (`managed_pages`).
    pub fn managed_pages(&self) -> u64 {
        self.present_pages().saturating_sub(self.reserved_pages())
    }

    /// The managed memory: the present ranges with the reserved ones cut
    /// out, sorted.
    pub fn managed_ranges(&self) -> Vec<PfnRange> {
        super::pfn_range::subtract(&self.present, &self.reserved)
    }

    /// True when the zone has memory.
    pub fn is_populated(&self) -> bool {
        self.present_pages() > 0
    }
}

/// One node: CPUs and zones, lowest zone first (every configured zone type,
/// populated or not, as /proc/zoneinfo lists them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeLayout {
    /// The node.
    pub id: NodeId,
    /// Its CPUs.
    pub cpus: Vec<CpuId>,
    /// Its zones.
    pub zones: Vec<ZoneLayout>,
}

/// A bootable machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineLayout {
    /// log2 of the page size.
    pub page_shift: u8,
    /// MAX_PAGE_ORDER, inclusive.
    pub max_order: Order,
    /// pageblock_order.
    pub pageblock_order: Order,
    /// The nodes.
    pub nodes: Vec<NodeLayout>,
    /// SLIT distances.
    pub distance: Vec<Vec<u8>>,
    /// The node of each CPU.
    pub cpu_node: Vec<NodeId>,
    /// One past the highest PFN of the machine.
    pub end_pfn: Pfn,
    /// The free lists are shuffled (`page_alloc.shuffle`, resolved).
    pub shuffle: bool,
    /// The order whose free blocks are shuffled (SHUFFLE_ORDER).
    pub shuffle_order: Order,
    /// The physical parent of each node (itself without `numa=fake=`).
    pub physical_node: Vec<NodeId>,
    /// PMD-size transparent hugepages are enabled (see
    /// [`MachineDesc::transparent_hugepage`]).
    pub transparent_hugepage: bool,
    /// Where each `reserve_mem=` entry was placed, by name, in the order
    /// given (its pages are in the zones' `reserved`).
    pub reserve_mem: Vec<(String, super::desc::MemRange)>,
}

impl MachineLayout {
    /// Every zone of every node, node by node, lowest zone first.
    pub fn zones(&self) -> impl Iterator<Item = &ZoneLayout> {
        self.nodes.iter().flat_map(|node| node.zones.iter())
    }

    /// Pages of memory in the machine.
    pub fn present_pages(&self) -> u64 {
        self.zones().map(ZoneLayout::present_pages).sum()
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.cpu_node.len()
    }
}

impl MachineDesc {
    /// Validates the description and lays out its zones.
    pub fn layout(&self) -> Result<MachineLayout, DescError> {
        self.validate()?;
        if self.numa_fake.is_none() {
            return self.layout_validated((0..self.nodes.len()).collect());
        }
        let (emulated, parents) = super::numa_emulation::emulate_numa(self)?;
        emulated.layout_validated(parents)
    }

    /// Lays out a description already validated (or built by emulation,
    /// whose sibling distances of 10 the user-input check would refuse).
    fn layout_validated(&self, parents: Vec<usize>) -> Result<MachineLayout, DescError> {
        self.check_per_cpu_state()?;
        let shift = self.page_shift as u32;
        // The pages wholly inside each range, as memblock's
        // for_each_mem_pfn_range() gives them: PFN_UP(start) to
        // PFN_DOWN(end), after mem= and the merging of touching ranges.
        let page = 1u64 << shift;
        let node_ranges: Vec<Vec<PfnRange>> = self
            .nodes_within_mem_limit()
            .iter()
            .map(|node| {
                node.ranges
                    .iter()
                    .map(|range| PfnRange {
                        start: Pfn(range.start.div_ceil(page)),
                        end: Pfn(range.end() >> shift),
                    })
                    .filter(|range| !range.is_empty())
                    .collect()
            })
            .collect();
        if let Some(node) = node_ranges.iter().position(Vec::is_empty) {
            return Err(match self.mem_limit {
                Some(_) => DescError::new(
                    "mem",
                    format!(
                        "the limit leaves node {node} without memory; give fewer nodes or a larger mem="
                    ),
                ),
                None => DescError::new(
                    format!("node[{node}].mem"),
                    "no whole page of memory in its ranges",
                ),
            });
        }
        check_no_shared_pageblock(&node_ranges, self.pageblock_order)?;
        let total_pages: u64 = node_ranges.iter().flatten().map(PfnRange::len).sum();
        // mirrors zone_sizes_init() of x86-64: ZONE_DMA ends at 16 MiB
        // (MAX_DMA_PFN), ZONE_DMA32 at 4 GiB.
        let dma_end = if self.dma {
            Pfn(1u64 << (24 - shift))
        } else {
            Pfn(0)
        };
        let dma32_end = if self.dma32 {
            Pfn(1u64 << (32 - shift))
        } else {
            dma_end
        };
        let movable_start = self.zone_movable_pfns(&node_ranges, total_pages, dma32_end)?;
        let mut reserved = reserved_pfns(&self.reserved, shift);
        let mut memory: Vec<PfnRange> = node_ranges.iter().flatten().copied().collect();
        memory.sort_unstable_by_key(|range| range.start);
        let reserve_mem =
            super::reserve_mem::place(&self.reserve_mem, &memory, &mut reserved, shift)?;
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for (index, ranges) in node_ranges.iter().enumerate() {
            let node = NodeId(index as u16);
            let node_end = ranges.last().map_or(Pfn(0), |range| range.end);
            let node_start = ranges.first().map_or(Pfn(0), |range| range.start);
            let normal_end = movable_start[index].unwrap_or(node_end);
            let mut bounds = Vec::new();
            if self.dma {
                bounds.push((ZoneType::Dma, node_start, dma_end.min(normal_end)));
            }
            if self.dma32 {
                let start = node_start.max(dma_end);
                bounds.push((ZoneType::Dma32, start, dma32_end.min(normal_end)));
            }
            bounds.push((ZoneType::Normal, node_start.max(dma32_end), normal_end));
            bounds.push((ZoneType::Movable, normal_end, node_end));
            let zones = bounds
                .into_iter()
                .map(|(zone_type, start, end)| {
                    zone_layout(node, zone_type, start, end, ranges, &reserved)
                })
                .collect();
            nodes.push(NodeLayout {
                id: node,
                cpus: self.nodes[index].cpus.clone(),
                zones,
            });
        }
        let mut cpu_node = vec![NodeId(0); self.nr_cpus()];
        for (index, node) in self.nodes.iter().enumerate() {
            for cpu in &node.cpus {
                cpu_node[cpu.index()] = NodeId(index as u16);
            }
        }
        let distance = (0..self.nodes.len())
            .map(|from| {
                (0..self.nodes.len())
                    .map(|to| self.distance(from, to))
                    .collect()
            })
            .collect();
        let end_pfn = node_ranges
            .iter()
            .flatten()
            .map(|range| range.end)
            .max()
            .unwrap_or(Pfn(0));
        let managed: u64 = nodes
            .iter()
            .flat_map(|node| node.zones.iter())
            .map(ZoneLayout::managed_pages)
            .sum();
        if managed == 0 {
            return Err(DescError::new(
                "reserved",
                "the reservations leave no memory to manage",
            ));
        }
        Ok(MachineLayout {
            page_shift: self.page_shift,
            max_order: Order(self.max_order),
            pageblock_order: Order(self.pageblock_order),
            nodes,
            distance,
            cpu_node,
            end_pfn,
            shuffle: self.shuffle_enabled(),
            shuffle_order: Order(self.shuffle_order()),
            physical_node: parents
                .into_iter()
                .map(|node| NodeId(node as u16))
                .collect(),
            transparent_hugepage: self.transparent_hugepage,
            reserve_mem,
        })
    }

    /// Refuses a machine whose per-CPU state (one set of per-CPU lists and
    /// event counters per CPU and zone) would pass [`MAX_CPU_ZONE_PAIRS`],
    /// before anything is allocated for it.
    fn check_per_cpu_state(&self) -> Result<(), DescError> {
        let zones_per_node = 2 + usize::from(self.dma) + usize::from(self.dma32);
        let pairs = self
            .nr_cpus()
            .checked_mul(self.nodes.len())
            .and_then(|pairs| pairs.checked_mul(zones_per_node));
        match pairs {
            Some(pairs) if pairs <= MAX_CPU_ZONE_PAIRS => Ok(()),
            _ => Err(DescError::new(
                "cpus",
                format!(
                    "{} CPUs x {} nodes x {zones_per_node} zones need more than {MAX_CPU_ZONE_PAIRS} per-CPU list sets (about 1 KiB each); give fewer CPUs or nodes",
                    self.nr_cpus(),
                    self.nodes.len()
                ),
            )),
        }
    }

    /// Start of ZONE_MOVABLE per node, `None` where a node has none.
    /// mirrors find_zone_movable_pfns_for_nodes(): kernelcore is spread evenly
    /// over the nodes, memory below the Normal zone counts as kernelcore, and
    /// the result is rounded up to a MAX_PAGE_ORDER block.
    fn zone_movable_pfns(
        &self,
        node_ranges: &[Vec<PfnRange>],
        total_pages: u64,
        usable_start: Pfn,
    ) -> Result<Vec<Option<Pfn>>, DescError> {
        let shift = self.page_shift as u32;
        let max_block = 1u64 << self.max_order;
        let mut required_kernelcore = 0u64;
        if let Some(bytes) = self.movablecore {
            let movable = (bytes >> shift).div_ceil(max_block) * max_block;
            if movable >= total_pages {
                return Err(DescError::new(
                    "movablecore",
                    format!(
                        "{} leaves no memory outside ZONE_MOVABLE",
                        format_size(bytes)
                    ),
                ));
            }
            required_kernelcore = total_pages - movable;
        }
        if let Some(bytes) = self.kernelcore {
            if bytes == 0 {
                return Err(DescError::new("kernelcore", "must be above zero"));
            }
            required_kernelcore = required_kernelcore.max(bytes >> shift);
        }
        if required_kernelcore == 0 || required_kernelcore >= total_pages {
            return Ok(vec![None; node_ranges.len()]);
        }
        let mut movable_pfn = vec![0u64; node_ranges.len()];
        let mut usable_nodes = node_ranges.len() as u64;
        loop {
            let mut kernelcore_node = required_kernelcore / usable_nodes;
            for (node, ranges) in node_ranges.iter().enumerate() {
                if required_kernelcore < kernelcore_node {
                    kernelcore_node = required_kernelcore / usable_nodes;
                }
                let mut remaining = kernelcore_node;
                for range in ranges {
                    let mut start = range.start.0.max(movable_pfn[node]);
                    let end = range.end.0;
                    if start >= end {
                        continue;
                    }
                    if start < usable_start.0 {
                        let kernel_pages = end.min(usable_start.0) - start;
                        remaining -= kernel_pages.min(remaining);
                        required_kernelcore -= kernel_pages.min(required_kernelcore);
                        if end <= usable_start.0 {
                            movable_pfn[node] = end;
                            continue;
                        }
                        start = usable_start.0;
                    }
                    let size = (end - start).min(remaining);
                    movable_pfn[node] = start + size;
                    required_kernelcore -= size.min(required_kernelcore);
                    remaining -= size;
                    if remaining == 0 {
                        break;
                    }
                }
            }
            usable_nodes -= 1;
            if usable_nodes == 0 || required_kernelcore <= usable_nodes {
                break;
            }
        }
        Ok(node_ranges
            .iter()
            .zip(movable_pfn)
            .map(|(ranges, pfn)| {
                let rounded = pfn.div_ceil(max_block) * max_block;
                let node_end = ranges.last().map_or(0, |range| range.end.0);
                (rounded < node_end).then_some(Pfn(rounded))
            })
            .collect())
    }
}

/// Refuses memory of two nodes in one pageblock (the deviation noted on
/// [`super::NodeDesc::ranges`]), naming the later node.
fn check_no_shared_pageblock(
    node_ranges: &[Vec<PfnRange>],
    pageblock_order: u8,
) -> Result<(), DescError> {
    let mut blocks: Vec<(u64, u64, usize)> = node_ranges
        .iter()
        .enumerate()
        .flat_map(|(node, ranges)| {
            ranges.iter().map(move |range| {
                let first = range.start.0 >> pageblock_order;
                let last = (range.end.0 - 1) >> pageblock_order;
                (first, last, node)
            })
        })
        .collect();
    blocks.sort_unstable();
    // The ranges are disjoint, so only a range's first and last pageblock
    // can be shared, each with a range ending or starting beside it.
    for pair in blocks.windows(2) {
        let ((_, last_a, node_a), (first_b, _, node_b)) = (pair[0], pair[1]);
        if node_a != node_b && first_b <= last_a {
            return Err(DescError::new(
                format!("node[{node_b}].mem"),
                format!(
                    "memory at PFN {:#x} shares a pageblock with node {node_a}; give each node whole pageblocks of {} pages",
                    first_b << pageblock_order,
                    1u64 << pageblock_order
                ),
            ));
        }
    }
    Ok(())
}

fn zone_layout(
    node: NodeId,
    zone_type: ZoneType,
    start: Pfn,
    end: Pfn,
    ranges: &[PfnRange],
    reserved: &[PfnRange],
) -> ZoneLayout {
    let present = intersect(ranges, &[PfnRange { start, end }]);
    let reserved = intersect(&present, reserved);
    // mirrors zone_spanned_pages_in_node(): a zone spans from its bounds
    // clipped to the node, holes at its ends included (DMA32 spans to 4G
    // over a hole from 3G); an unpopulated zone spans nothing here.
    let span = if present.is_empty() {
        PfnRange::covering(&present)
    } else {
        PfnRange { start, end }
    };
    ZoneLayout {
        node,
        zone_type,
        span,
        present,
        reserved,
    }
}

/// The reservations as sorted, merged page ranges, each rounded out to
/// whole pages (memblock_free_all() frees `PFN_UP(start)..PFN_DOWN(end)`
/// of the memory between reservations).
fn reserved_pfns(reserved: &[super::desc::MemRange], shift: u32) -> Vec<PfnRange> {
    let page = 1u64 << shift;
    let mut ranges: Vec<PfnRange> = reserved
        .iter()
        .map(|range| PfnRange {
            start: Pfn(range.start >> shift),
            // validate_reserved() refused an end past 2^64.
            end: Pfn(range.end().div_ceil(page)),
        })
        .collect();
    merge_sorted(&mut ranges);
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::MemRange;

    #[test]
    fn movablecore_is_spread_over_nodes_and_rounded() {
        let mut desc = MachineDesc::uniform(16 << 30, 2, 2).unwrap();
        desc.movablecore = Some(4 << 30);
        let layout = desc.layout().unwrap();
        for node in &layout.nodes {
            let movable = &node.zones[1];
            assert_eq!(movable.zone_type, ZoneType::Movable);
            assert_eq!(
                movable.present_pages(),
                (2u64 << 30) >> 12,
                "node {}",
                node.id
            );
            assert!(movable.span.start.is_aligned(crate::types::Order(10)));
        }
    }

    #[test]
    fn dma_takes_the_first_16_mib_below_dma32() {
        let mut desc = MachineDesc::uniform(8 << 30, 1, 1).unwrap();
        desc.dma = true;
        let layout = desc.layout().unwrap();
        let types: Vec<ZoneType> = layout.nodes[0].zones.iter().map(|z| z.zone_type).collect();
        assert_eq!(types, [ZoneType::Dma, ZoneType::Normal, ZoneType::Movable]);
        assert_eq!(layout.nodes[0].zones[0].present_pages(), 4096);
        desc.dma32 = true;
        let layout = desc.layout().unwrap();
        let zones = &layout.nodes[0].zones;
        assert_eq!(zones[0].zone_type, ZoneType::Dma);
        assert_eq!(zones[1].zone_type, ZoneType::Dma32);
        assert_eq!(zones[1].span.start.0, 4096);
        assert_eq!(zones[1].present_pages(), (4u64 << 30 >> 12) - 4096);
        assert_eq!(zones[2].present_pages(), 4u64 << 30 >> 12);
    }

    #[test]
    fn dma32_takes_memory_below_4g_and_holes_are_kept() {
        let mut desc = MachineDesc::uniform(8 << 30, 1, 1).unwrap();
        desc.dma32 = true;
        desc.nodes[0].ranges = vec![
            MemRange {
                start: 0,
                size: 2 << 30,
            },
            MemRange {
                start: 3 << 30,
                size: 6 << 30,
            },
        ];
        let layout = desc.layout().unwrap();
        let zones = &layout.nodes[0].zones;
        assert_eq!(zones[0].zone_type, ZoneType::Dma32);
        assert_eq!(zones[0].present_pages(), (3u64 << 30) >> 12);
        assert_eq!(zones[0].spanned_pages(), (4u64 << 30) >> 12);
        assert_eq!(zones[1].present_pages(), (5u64 << 30) >> 12);
        assert!(!zones[2].is_populated());
    }

    #[test]
    fn mem_limit_clips_from_the_top() {
        let mut desc = MachineDesc::uniform(16 << 30, 2, 2).unwrap();
        desc.mem_limit = Some(12 << 30);
        let layout = desc.layout().unwrap();
        assert_eq!(layout.present_pages(), (12u64 << 30) >> 12);
        desc.mem_limit = Some(4 << 30);
        assert_eq!(desc.layout().unwrap_err().field, "mem");
    }

    #[test]
    fn movablecore_larger_than_memory_is_an_error() {
        let desc = MachineDesc {
            movablecore: Some(8 << 30),
            ..MachineDesc::default()
        };
        assert_eq!(desc.layout().unwrap_err().field, "movablecore");
    }
}
