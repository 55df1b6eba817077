//! A pageframe machine shaped like the running host, for the zoneinfo and
//! buddy suites: its memory from the top-level `System RAM` ranges of
//! `/proc/iomem` (at the bytes e820 gives: holes and all), its nodes and
//! zones from `/proc/zoneinfo` (a DMA and a DMA32 zone when the host has
//! them), the CPUs of each node from sysfs, `transparent_hugepage` as the
//! host's THP setting, and in each zone as many pages reserved at boot as
//! the host's zone has present pages it does not manage.
//!
//! Where the host's reservations lie is not visible after boot (x86 keeps
//! no memblock debugfs), so they are placed as x86-64 makes most of them:
//! every present page below 1 MiB first (setup_arch() reserves the first
//! MiB), then the rest at the top of the zone's memory, where memblock's
//! top-down allocations (the memmap, page tables) put theirs. Sizes depend
//! only on the counts; the buddy lists' shape near the kernel image does
//! not match.

use super::host::{cmdline_param, read};
use super::ConformError;
use crate::trace::host::{parse_zoneinfo, ZoneText};
use pageframe::machine::{apply_cmdline, MemRange, NodeDesc};
use pageframe::{CpuId, MachineDesc, MachineLayout};

/// Page size of the machine (x86-64).
const PAGE_SHIFT: u32 = 12;

/// The host as the suites read it, and the machine shaped like it.
pub struct HostMachine {
    /// The host's `/proc/zoneinfo`, parsed.
    pub zones: Vec<ZoneText>,
    /// The machine description shaped like the host.
    pub desc: MachineDesc,
}

/// The top-level `System RAM` ranges of `/proc/iomem` as `[start, end)`
/// bytes (root sees the addresses; others see zeros).
fn system_ram(iomem: &str) -> Vec<(u64, u64)> {
    iomem
        .lines()
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| {
            let (range, name) = line.split_once(" : ")?;
            if name.trim() != "System RAM" {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let start = u64::from_str_radix(start.trim(), 16).ok()?;
            let end = u64::from_str_radix(end.trim(), 16).ok()?.checked_add(1)?;
            (end > start).then_some((start, end))
        })
        .collect()
}

/// Whether PMD-size THP is enabled on the host: the global setting, or the
/// 2 MiB size's own (`inherit` follows the global one). mirrors
/// hugepage_pmd_enabled() (6.12).
fn host_thp() -> bool {
    let chosen = |path: &str| {
        std::fs::read_to_string(path).ok().and_then(|text| {
            let start = text.find('[')?;
            let end = text[start..].find(']')?;
            Some(text[start + 1..start + end].to_string())
        })
    };
    let global = chosen("/sys/kernel/mm/transparent_hugepage/enabled");
    let global_on = matches!(global.as_deref(), Some("always" | "madvise"));
    match chosen("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled").as_deref() {
        Some("always" | "madvise") => true,
        Some("inherit") | None => global_on,
        Some(_) => false,
    }
}

/// The CPUs of node `node` (its sysfs cpulist; every possible CPU when a
/// kernel without NUMA has no node directory).
fn node_cpus(node: usize) -> Result<Vec<CpuId>, ConformError> {
    let mut path = format!("/sys/devices/system/node/node{node}/cpulist");
    if node == 0 && !std::path::Path::new(&path).exists() {
        path = "/sys/devices/system/cpu/possible".to_string();
    }
    let text = read(&path)?;
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|part| !part.is_empty()) {
        let parse = |id: &str| {
            id.trim()
                .parse::<u16>()
                .map_err(|err| ConformError::Host(format!("{path}: {err}")))
        };
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (parse(first)?, parse(last)?),
            None => (parse(part)?, parse(part)?),
        };
        cpus.extend((first..=last).map(CpuId));
    }
    Ok(cpus)
}

impl HostMachine {
    /// Reads the host and describes the machine shaped like it.
    pub fn read() -> Result<HostMachine, ConformError> {
        let zones = parse_zoneinfo(&read("/proc/zoneinfo")?);
        let ram = system_ram(&read("/proc/iomem")?);
        if ram.is_empty() {
            return Err(ConformError::Host(
                "/proc/iomem shows no System RAM addresses".into(),
            ));
        }
        let nr_nodes = zones.iter().map(|zone| zone.node + 1).max().unwrap_or(1);
        // Each node's span: from its lowest zone start to its highest end.
        let span = |node: usize| {
            let spans = zones
                .iter()
                .filter(|zone| zone.node == node && zone.field("spanned").unwrap_or(0) > 0)
                .filter_map(|zone| {
                    let start = zone.field("start_pfn")? << PAGE_SHIFT;
                    Some((start, start + (zone.field("spanned")? << PAGE_SHIFT)))
                });
            spans.fold(None, |acc: Option<(u64, u64)>, (start, end)| {
                Some(acc.map_or((start, end), |(s, e)| (s.min(start), e.max(end))))
            })
        };
        let mut nodes = Vec::with_capacity(nr_nodes);
        for node in 0..nr_nodes {
            let ranges = match span(node) {
                Some((start, end)) => ram
                    .iter()
                    .map(|&(s, e)| (s.max(start), e.min(end)))
                    .filter(|(s, e)| e > s)
                    .map(|(start, end)| MemRange {
                        start,
                        size: end - start,
                    })
                    .collect(),
                None => Vec::new(),
            };
            nodes.push(NodeDesc {
                ranges,
                cpus: node_cpus(node)?,
            });
        }
        let has = |name: &str| zones.iter().any(|zone| zone.name == name);
        let mut desc = MachineDesc {
            nodes,
            dma: has("DMA"),
            dma32: has("DMA32"),
            transparent_hugepage: host_thp(),
            ..MachineDesc::default()
        };
        for key in ["movablecore", "kernelcore"] {
            if let Some(value) = cmdline_param(key)? {
                apply_cmdline(&mut desc, &format!("{key}={value}"))
                    .map_err(|err| ConformError::Boot(err.to_string()))?;
            }
        }
        let mut host = HostMachine { zones, desc };
        host.desc.reserved = host.reservations()?;
        Ok(host)
    }

    /// Byte ranges reserving, in each zone, the host's present pages less
    /// its managed ones (placed as the module header says). Fails when a
    /// zone of the host manages more than the machine has present.
    fn reservations(&self) -> Result<Vec<MemRange>, ConformError> {
        const LOW_MEMORY_PFNS: u64 = (1 << 20) >> PAGE_SHIFT;
        let layout = self.layout()?;
        let mut reserved = Vec::new();
        for zone in layout.zones() {
            let name = zone.zone_type.name();
            let host = self.zone(zone.node.index(), name);
            let managed = host.and_then(|zone| zone.field("managed")).unwrap_or(0);
            let present = zone.present_pages();
            let mut left = present.checked_sub(managed).ok_or_else(|| {
                ConformError::Boot(format!(
                    "node {} {name}: the host manages {managed} pages, the machine has {present}",
                    zone.node
                ))
            })?;
            // (first PFN, pages): the low MiB from the bottom, then the
            // rest from the top.
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

    /// The host's zone `name` of node `node`.
    pub fn zone(&self, node: usize, name: &str) -> Option<&ZoneText> {
        self.zones
            .iter()
            .find(|zone| zone.node == node && zone.name == name)
    }

    /// The machine's layout.
    pub fn layout(&self) -> Result<MachineLayout, ConformError> {
        self.desc
            .layout()
            .map_err(|err| ConformError::Boot(err.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_ram_is_read_at_its_bytes() {
        let iomem = "00000000-00000fff : Reserved\n00001000-0009fbff : System RAM\n00100000-bfffffff : System RAM\n  01000000-01ffffff : Kernel code\n100000000-63fffffff : System RAM\n";
        assert_eq!(
            system_ram(iomem),
            [
                (0x1000, 0x9fc00),
                (0x10_0000, 0xc000_0000),
                (0x1_0000_0000, 0x6_4000_0000)
            ]
        );
    }
}
