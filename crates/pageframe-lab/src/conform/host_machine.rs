//! A pageframe machine shaped like the running host, for the zoneinfo and
//! buddy suites: its memory from the top-level `System RAM` ranges of
//! `/proc/iomem` (at the bytes e820 gives: holes and all), its nodes and
//! zones from `/proc/zoneinfo` (a DMA and a DMA32 zone when the host has
//! them), the CPUs of each node from sysfs, `transparent_hugepage` as the
//! host's THP setting, and in each zone as many pages reserved at boot as
//! the host's zone has present pages it does not manage, placed as
//! [`crate::host_layout::reserve_unmanaged`] places them.

use super::host::{cmdline_param, read};
use super::ConformError;
use crate::host_layout::{node_ranges, system_ram};
use crate::trace::host::{parse_zoneinfo, ZoneText};
use pageframe::machine::{apply_cmdline, NodeDesc};
use pageframe::{CpuId, MachineDesc, MachineLayout};

/// The host as the suites read it, and the machine shaped like it.
pub struct HostMachine {
    /// The host's `/proc/zoneinfo`, parsed.
    pub zones: Vec<ZoneText>,
    /// The machine description shaped like the host.
    pub desc: MachineDesc,
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
        let ram = system_ram(&read("/proc/iomem")?).ok_or_else(|| {
            ConformError::Host("/proc/iomem shows no System RAM addresses".into())
        })?;
        let ranges = node_ranges(&zones, &ram)
            .ok_or_else(|| ConformError::Host("/proc/zoneinfo: a zone without its span".into()))?;
        let nodes = ranges
            .into_iter()
            .enumerate()
            .map(|(node, ranges)| {
                Ok(NodeDesc {
                    ranges,
                    cpus: node_cpus(node)?,
                })
            })
            .collect::<Result<Vec<_>, ConformError>>()?;
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
        host.desc.reserved = crate::host_layout::reserve_unmanaged(&host.layout()?, &host.zones)
            .map_err(ConformError::Boot)?;
        Ok(host)
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
