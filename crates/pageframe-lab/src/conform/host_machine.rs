//! A pageframe machine shaped like the running host, for the zoneinfo and
//! buddy suites: its memory from the top-level `System RAM` ranges of
//! `/proc/iomem`, rounded out to whole memory sections (128 MiB on x86-64:
//! the kernel's pageblock counts cover every block of an online section),
//! its nodes and zones from `/proc/zoneinfo` (a DMA and a DMA32 zone when
//! the host has them), the CPUs of each node from sysfs, and
//! `transparent_hugepage` as the host's THP setting.
//!
//! The kernel keeps memblock reservations (firmware, the kernel image, the
//! memmap) out of the buddy allocator, which pageframe does not model; for
//! the watermark cases [`HostMachine::managed_layout`] gives each zone the
//! host's managed pages instead, dropping pages from the zone's start.

use super::host::{cmdline_param, read};
use super::ConformError;
use crate::trace::host::{parse_zoneinfo, ZoneText};
use pageframe::machine::{apply_cmdline, MemRange, NodeDesc, PfnRange};
use pageframe::{CpuId, MachineDesc, MachineLayout};

/// x86-64's `SECTION_SIZE_BITS`: memory sections of 128 MiB.
const SECTION_BYTES: u64 = 1 << 27;

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

/// Ranges rounded out to memory sections, merged where they meet.
fn section_ranges(ram: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut rounded: Vec<(u64, u64)> = ram
        .iter()
        .map(|&(start, end)| {
            (
                start / SECTION_BYTES * SECTION_BYTES,
                end.div_ceil(SECTION_BYTES) * SECTION_BYTES,
            )
        })
        .collect();
    rounded.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in rounded {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
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
        let ram = section_ranges(&system_ram(&read("/proc/iomem")?));
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
                    .map(|&(s, e)| {
                        (
                            s.max(start / SECTION_BYTES * SECTION_BYTES),
                            e.min(end.div_ceil(SECTION_BYTES) * SECTION_BYTES),
                        )
                    })
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
        Ok(HostMachine { zones, desc })
    }

    /// The host's zone `name` of node `node`.
    pub fn zone(&self, node: usize, name: &str) -> Option<&ZoneText> {
        self.zones
            .iter()
            .find(|zone| zone.node == node && zone.name == name)
    }

    /// The machine's layout (present memory as the host's sections).
    pub fn layout(&self) -> Result<MachineLayout, ConformError> {
        self.desc
            .layout()
            .map_err(|err| ConformError::Boot(err.to_string()))
    }

    /// The layout with each zone holding the host's managed pages (its
    /// first present pages dropped), so that watermarks, reserves and
    /// per-CPU sizes see the host's sizes. Fails when a zone of the host
    /// manages more than the machine has present.
    pub fn managed_layout(&self) -> Result<MachineLayout, ConformError> {
        let mut layout = self.layout()?;
        for node in &mut layout.nodes {
            for zone in &mut node.zones {
                let host = self.zone(node.id.index(), zone.zone_type.name());
                let managed = host.and_then(|zone| zone.field("managed")).unwrap_or(0);
                let present = zone.present_pages();
                let mut drop = present.checked_sub(managed).ok_or_else(|| {
                    ConformError::Boot(format!(
                        "node {} {}: the host manages {managed} pages, the machine has {present}",
                        node.id,
                        zone.zone_type.name()
                    ))
                })?;
                let mut kept = Vec::with_capacity(zone.present.len());
                for range in &zone.present {
                    let cut = drop.min(range.len());
                    drop -= cut;
                    let start = pageframe::Pfn(range.start.0 + cut);
                    if start < range.end {
                        kept.push(PfnRange {
                            start,
                            end: range.end,
                        });
                    }
                }
                zone.present = kept;
                zone.span = PfnRange::covering(&zone.present);
            }
        }
        Ok(layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_ram_rounds_out_to_sections() {
        let iomem = "00000000-00000fff : Reserved\n00001000-0009fbff : System RAM\n00100000-bfffffff : System RAM\n  01000000-01ffffff : Kernel code\n100000000-63fffffff : System RAM\n";
        let ram = system_ram(iomem);
        assert_eq!(ram.len(), 3);
        assert_eq!(ram[0], (0x1000, 0x9fc00));
        assert_eq!(
            section_ranges(&ram),
            [(0, 0xc000_0000), (0x1_0000_0000, 0x6_4000_0000)]
        );
    }
}
