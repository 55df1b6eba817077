//! Machine descriptions shaped like a host from what its `/proc/zoneinfo`
//! shows: the conformance suites' machine and a trace replay's (from the
//! zoneinfo the recording saved). With the host's `/proc/iomem`
//! ([`system_ram`]) each node's memory is the `System RAM` within its
//! zones' spans, at the bytes e820 gave ([`node_ranges`]); without it, a
//! zone's present pages are laid from its `start_pfn` on.
//!
//! Where a host's boot reservations lie is not visible after boot (x86
//! keeps no memblock debugfs). [`reserve_unmanaged`] places, in each zone,
//! as many pages as the host's zone has present but does not manage, as
//! x86-64 makes most of them: every present page below 1 MiB first
//! (setup_arch() reserves the first MiB), then the rest at the top of the
//! zone's memory, where memblock's top-down allocations (the memmap, page
//! tables) put theirs. Sizes then follow the host's counts; the buddy
//! lists' shape near the kernel image does not.

use crate::trace::host::ZoneText;
use pageframe::machine::{MemRange, NodeDesc};
use pageframe::{CpuId, Errno, LocalPageAllocator, MachineDesc, MachineLayout, VmSysctl};

/// Page size of the hosts described (x86-64).
const PAGE_SHIFT: u32 = 12;

/// The first MiB, in pages.
const LOW_MEMORY_PFNS: u64 = (1 << 20) >> PAGE_SHIFT;

/// Byte ranges reserving, in each zone of `layout`, its present pages less
/// the managed pages of the host's zone of the same node and name in
/// `zones` (placed as the module header says). Fails naming the zone when
/// the host manages more than the zone has present.
pub fn reserve_unmanaged(
    layout: &MachineLayout,
    zones: &[ZoneText],
) -> Result<Vec<MemRange>, String> {
    let mut reserved = Vec::new();
    for zone in layout.zones() {
        let name = zone.zone_type.name();
        let managed = zones
            .iter()
            .find(|host| host.node == zone.node.index() && host.name == name)
            .and_then(|host| host.field("managed"))
            .unwrap_or(0);
        let present = zone.present_pages();
        let mut left = present.checked_sub(managed).ok_or_else(|| {
            format!(
                "node {} {name}: the host manages {managed} pages, the machine has {present}",
                zone.node
            )
        })?;
        // (first PFN, pages): the low MiB from the bottom, then the rest
        // from the top.
        let mut pfn_ranges = Vec::new();
        for range in &zone.present {
            let end = range.end.0.min(LOW_MEMORY_PFNS);
            let pages = end.saturating_sub(range.start.0).min(left);
            pfn_ranges.push((range.start.0, pages));
            left -= pages;
        }
        for range in zone.present.iter().rev() {
            let start = range.start.0.max(LOW_MEMORY_PFNS);
            let pages = range.end.0.saturating_sub(start).min(left);
            pfn_ranges.push((range.end.0 - pages, pages));
            left -= pages;
        }
        pfn_ranges.retain(|&(_, pages)| pages > 0);
        reserved.extend(pfn_ranges.into_iter().map(|(start, pages)| MemRange {
            start: start << PAGE_SHIFT,
            size: pages << PAGE_SHIFT,
        }));
    }
    Ok(reserved)
}

/// The top-level `System RAM` ranges of a `/proc/iomem` text as `[start,
/// end)` bytes; `None` when the text hides the addresses (as it does from
/// all but root: every range reads `00000000-00000000`) or has no RAM.
pub fn system_ram(iomem: &str) -> Option<Vec<(u64, u64)>> {
    let mut hidden = false;
    let ram: Vec<(u64, u64)> = iomem
        .lines()
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| {
            let (range, name) = line.split_once(" : ")?;
            if name.trim() != "System RAM" {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = u64::from_str_radix(start.trim(), 16).ok()?;
            let end = u64::from_str_radix(end.trim(), 16).ok()?;
            hidden |= start == 0 && end == 0;
            let end = end.checked_add(1)?;
            (end > start).then_some((start, end))
        })
        .collect();
    (!hidden && !ram.is_empty()).then_some(ram)
}

/// The nodes the zones name (the highest node number plus one); `None`
/// past `MAX_NUMNODES` (a damaged text must not size the machine) or with
/// no zone.
fn node_count(zones: &[ZoneText]) -> Option<usize> {
    let nr_nodes = zones.iter().map(|zone| zone.node.saturating_add(1)).max()?;
    (nr_nodes <= pageframe::MAX_NUMNODES).then_some(nr_nodes)
}

/// Each node's memory: the `ram` ranges within the span of its zones (from
/// the lowest `start_pfn` to the highest end), clipped to it. `None` when a
/// zone's start or span is missing or overflows.
pub fn node_ranges(zones: &[ZoneText], ram: &[(u64, u64)]) -> Option<Vec<Vec<MemRange>>> {
    let nr_nodes = node_count(zones)?;
    let mut spans: Vec<Option<(u64, u64)>> = vec![None; nr_nodes];
    for zone in zones
        .iter()
        .filter(|zone| zone.field("spanned").unwrap_or(0) > 0)
    {
        let start = zone.field("start_pfn")?.checked_mul(1 << PAGE_SHIFT)?;
        let end = zone
            .field("spanned")?
            .checked_mul(1 << PAGE_SHIFT)?
            .checked_add(start)?;
        let span = &mut spans[zone.node];
        *span = Some(span.map_or((start, end), |(s, e)| (s.min(start), e.max(end))));
    }
    Some(
        spans
            .into_iter()
            .map(|span| {
                let Some((start, end)) = span else {
                    return Vec::new();
                };
                ram.iter()
                    .map(|&(s, e)| (s.max(start), e.min(end)))
                    .filter(|(s, e)| e > s)
                    .map(|(start, end)| MemRange {
                        start,
                        size: end - start,
                    })
                    .collect()
            })
            .collect(),
    )
}

/// Each node's memory without the memory map: each populated zone's present
/// pages from its `start_pfn` on (its holes, which zoneinfo does not
/// locate, gathered at the end of its span).
fn ranges_from_zone_starts(zones: &[ZoneText]) -> Option<Vec<Vec<MemRange>>> {
    let nr_nodes = node_count(zones)?;
    let mut nodes = vec![Vec::new(); nr_nodes];
    for zone in zones {
        let present = zone.field("present")?;
        if present == 0 {
            continue;
        }
        let start = zone.field("start_pfn")?;
        if present > zone.field("spanned")? {
            return None;
        }
        nodes[zone.node].push(MemRange {
            start: start.checked_mul(1 << PAGE_SHIFT)?,
            size: present.checked_mul(1 << PAGE_SHIFT)?,
        });
    }
    Some(nodes)
}

/// A machine with the zones of `zones` (a parsed `/proc/zoneinfo`): each
/// node's memory from `ram` (the host's `System RAM`, see [`node_ranges`])
/// when given and it gives every zone the present pages zoneinfo counts,
/// else from the zones' starts; DMA and DMA32 zones when the host has
/// them, `nr_cpus` CPUs spread over the nodes in blocks, and each zone's
/// unmanaged pages reserved ([`reserve_unmanaged`]). `None` when the text
/// lacks a zone's start or sizes, or the layout is refused (two nodes in
/// one pageblock, say).
pub fn from_zoneinfo(
    zones: &[ZoneText],
    ram: Option<&[(u64, u64)]>,
    nr_cpus: usize,
) -> Option<MachineDesc> {
    let mapped = ram.and_then(|ram| {
        let desc = shaped(zones, node_ranges(zones, ram)?, nr_cpus)?;
        let layout = desc.layout().ok()?;
        let counts_match = layout.zones().all(|zone| {
            let host = zones
                .iter()
                .find(|host| host.node == zone.node.index() && host.name == zone.zone_type.name());
            host.and_then(|host| host.field("present")).unwrap_or(0) == zone.present_pages()
        });
        counts_match.then_some(desc)
    });
    match mapped {
        Some(desc) => Some(desc),
        None => shaped(zones, ranges_from_zone_starts(zones)?, nr_cpus),
    }
}

/// [`from_zoneinfo`] with each node's memory given.
fn shaped(zones: &[ZoneText], ranges: Vec<Vec<MemRange>>, nr_cpus: usize) -> Option<MachineDesc> {
    let nr_nodes = ranges.len();
    let mut nodes: Vec<NodeDesc> = ranges
        .into_iter()
        .map(|ranges| NodeDesc {
            ranges,
            cpus: Vec::new(),
        })
        .collect();
    for (node, desc) in nodes.iter_mut().enumerate() {
        desc.cpus = (node * nr_cpus / nr_nodes..(node + 1) * nr_cpus / nr_nodes)
            .map(|cpu| u16::try_from(cpu).map(CpuId))
            .collect::<Result<_, _>>()
            .ok()?;
    }
    let has = |name: &str| zones.iter().any(|zone| zone.name == name);
    let mut desc = MachineDesc {
        nodes,
        dma: has("DMA"),
        dma32: has("DMA32"),
        ..MachineDesc::default()
    };
    let layout = desc.layout().ok()?;
    desc.reserved = reserve_unmanaged(&layout, zones).ok()?;
    desc.layout().ok()?;
    Some(desc)
}

/// The whitespace-separated values of a sysctl's text, at most `count`.
fn sysctl_values(text: &str, count: usize) -> Vec<&str> {
    text.split_whitespace().take(count).collect()
}

/// Writes a host's sysctls (`host` gives a sysctl's text, if known) to a
/// machine shaped like it, in the kernel's table order, as the host's
/// sysctl.conf did: each whose values differ from the machine's (the
/// host's `lowmem_reserve_ratio` has one more, ZONE_DEVICE's), except
/// those `keep` says the caller chose. A value no kernel holds is the
/// error, with its sysctl and text.
pub fn write_host_sysctls(
    allocator: &mut LocalPageAllocator,
    host: impl Fn(VmSysctl) -> Option<String>,
    keep: impl Fn(VmSysctl) -> bool,
) -> Result<(), (VmSysctl, String, Errno)> {
    for sysctl in VmSysctl::ALL {
        let Some(text) = host(sysctl).filter(|_| !keep(sysctl)) else {
            continue;
        };
        let ours = allocator.read_sysctl(sysctl);
        let count = ours.split_whitespace().count();
        if sysctl_values(&text, count) != sysctl_values(&ours, count) {
            allocator
                .write_sysctl(sysctl, &text)
                .map_err(|errno| (sysctl, text, errno))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::host::parse_zoneinfo;

    /// This host's zone sizes (Linux 6.18, 24 GiB).
    const ZONEINFO: &str = "Node 0, zone      DMA\n  pages free     3840\n        spanned  4095\n        present  3998\n        managed  3840\n  start_pfn:           1\n\
        Node 0, zone    DMA32\n  pages free     1000\n        spanned  1044480\n        present  782336\n        managed  772917\n  start_pfn:           4096\n\
        Node 0, zone   Normal\n  pages free     1000\n        spanned  5505024\n        present  5505024\n        managed  5394266\n  start_pfn:           1048576\n\
        Node 0, zone  Movable\n  pages free     0\n        spanned  0\n        present  0\n        managed  0\n";

    #[test]
    fn a_machine_from_zoneinfo_has_the_hosts_zone_sizes() {
        let zones = parse_zoneinfo(ZONEINFO);
        let desc = from_zoneinfo(&zones, None, 2).unwrap();
        let layout = desc.layout().unwrap();
        let sizes: Vec<(u64, u64, u64, u64)> = layout
            .zones()
            .filter(|zone| zone.is_populated())
            .map(|zone| {
                (
                    zone.span.start.0,
                    zone.spanned_pages(),
                    zone.present_pages(),
                    zone.managed_pages(),
                )
            })
            .collect();
        assert_eq!(
            sizes,
            [
                (1, 4095, 3998, 3840),
                (4096, 1044480, 782336, 772917),
                (1048576, 5505024, 5505024, 5394266)
            ]
        );
        // The DMA zone's unmanaged pages are its first MiB; the others' at
        // their tops.
        assert_eq!(layout.nodes[0].zones[0].reserved[0].start.0, 1);
        assert_eq!(
            layout.nodes[0].zones[2].reserved.last().unwrap().end.0,
            1048576 + 5505024
        );
    }

    /// This host's `System RAM` (24 GiB; e820's holes below 1 MiB and from
    /// 3 GiB to 4 GiB).
    const IOMEM: &str = "00000000-00000fff : Reserved\n00001000-0009fbff : System RAM\n000a0000-000fffff : Reserved\n00100000-bfffffff : System RAM\n  01000000-01ffffff : Kernel code\nc0000000-febfffff : PCI Bus 0000:00\n100000000-63fffffff : System RAM\n";

    #[test]
    fn system_ram_is_read_at_its_bytes_unless_hidden() {
        assert_eq!(
            system_ram(IOMEM),
            Some(vec![
                (0x1000, 0x9fc00),
                (0x10_0000, 0xc000_0000),
                (0x1_0000_0000, 0x6_4000_0000)
            ])
        );
        // What a user other than root reads.
        let hidden = "00000000-00000000 : Reserved\n00000000-00000000 : System RAM\n";
        assert_eq!(system_ram(hidden), None);
        assert_eq!(
            system_ram("garbage\n: System RAM\nx-y : System RAM\n"),
            None
        );
    }

    /// With the memory map, the zones' holes are where e820 put them: the
    /// DMA32 zone's present pages end at 3 GiB, not at its start plus its
    /// present pages; sizes are the host's either way. A map that does not
    /// give a zone its present pages is not used.
    #[test]
    fn the_memory_map_places_the_holes() {
        let zones = parse_zoneinfo(ZONEINFO);
        let ram = system_ram(IOMEM).unwrap();
        let mapped = from_zoneinfo(&zones, Some(&ram), 2).unwrap();
        let plain = from_zoneinfo(&zones, None, 2).unwrap();
        let (mapped, plain) = (mapped.layout().unwrap(), plain.layout().unwrap());
        let dma32 = |layout: &MachineLayout| {
            let zone = &layout.nodes[0].zones[1];
            (
                zone.present_pages(),
                zone.managed_pages(),
                zone.present.last().unwrap().end.0,
            )
        };
        assert_eq!(dma32(&mapped), (782_336, 772_917, 0xc0000));
        assert_eq!(dma32(&plain), (782_336, 772_917, 4096 + 782_336));
        assert_eq!(mapped.nodes[0].zones[0].present[0].end.0, 0x9f);
        let short = [(0x1000, 0x9fc00), (0x10_0000, 0x8000_0000)];
        let fallback = from_zoneinfo(&zones, Some(&short), 2).unwrap();
        assert_eq!(fallback.layout().unwrap(), plain);
    }

    /// A zoneinfo text of one node's DMA (from PFN 1), DMA32 (from 4096)
    /// and Normal (from 4G) zones with the given (present, managed) pages,
    /// each zone spanning its bounds.
    fn pc_zoneinfo(sizes: [(u64, u64); 3]) -> String {
        let zones = [
            ("DMA", 1u64, 4095u64),
            ("DMA32", 4096, (1 << 20) - 4096),
            ("Normal", 1 << 20, 1 << 21),
        ];
        zones
            .iter()
            .zip(sizes)
            .map(|(&(name, start, spanned), (present, managed))| {
                format!(
                    "Node 0, zone {name}\n        spanned  {spanned}\n        present  {present}\n        managed  {managed}\n  start_pfn:           {start}\n"
                )
            })
            .collect()
    }

    proptest::proptest! {
        /// Whatever a trace's zoneinfo claims, a machine comes back only
        /// when its layout is valid, with each populated zone's present
        /// and managed pages as claimed; nothing panics. Sizes are drawn
        /// near the zones' spans, then one field may be set to anything.
        #[test]
        fn any_zoneinfo_gives_a_valid_machine_or_none(
            sizes in proptest::collection::vec((0u64..1 << 20, 0u64..1 << 20), 3),
            hostile in proptest::option::of((0usize..15, proptest::prelude::any::<u64>())),
            cpus in 0usize..5,
        ) {
            let spans = [4095u64, (1 << 20) - 4096, 1 << 21];
            let sizes = [0, 1, 2].map(|zone| {
                let (present, managed) = sizes[zone];
                let present = present % (spans[zone] + 1);
                (present, managed % (present + 1))
            });
            let mut text = pc_zoneinfo(sizes);
            if let Some((field, value)) = hostile {
                // Replace the field-th number of the text.
                let mut count = 0;
                text = text
                    .split('\n')
                    .map(|line| {
                        let words: Vec<&str> = line.split_whitespace().collect();
                        match words.last().and_then(|word| word.parse::<u64>().ok()) {
                            Some(_) if { count += 1; count - 1 == field } => {
                                format!("{} {value}", words[..words.len() - 1].join(" "))
                            }
                            _ => line.to_string(),
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
            }
            let parsed = parse_zoneinfo(&text);
            if let Some(desc) = from_zoneinfo(&parsed, None, cpus) {
                let layout = desc.layout().unwrap();
                for zone in layout.zones().filter(|zone| zone.is_populated()) {
                    let host = parsed
                        .iter()
                        .find(|host| host.node == zone.node.index() && host.name == zone.zone_type.name())
                        .unwrap();
                    proptest::prop_assert_eq!(zone.present_pages(), host.field("present").unwrap());
                    proptest::prop_assert_eq!(zone.managed_pages(), host.field("managed").unwrap());
                }
            }
        }
    }

    #[test]
    fn zoneinfo_without_sizes_or_managing_too_much_gives_none() {
        let no_start = ZONEINFO.replace("start_pfn:           4096", "");
        assert!(from_zoneinfo(&parse_zoneinfo(&no_start), None, 2).is_none());
        let too_much = ZONEINFO.replace("managed  772917", "managed  999999");
        assert!(from_zoneinfo(&parse_zoneinfo(&too_much), None, 2).is_none());
        assert!(from_zoneinfo(&[], None, 2).is_none());
        // A node number past MAX_NUMNODES sizes nothing (it asked for
        // 206 GB of node descriptions before).
        let far = "Node 4294967295, zone Normal\n        spanned  0\n        present  0\n        managed  0\n  start_pfn:           0\n";
        assert!(from_zoneinfo(&parse_zoneinfo(far), None, 2).is_none());
        assert!(node_ranges(&parse_zoneinfo(far), &[(0, 1 << 30)]).is_none());
    }
}
