//! What the suites read from the running host: root, the kernel command
//! line, CPU counts, sysctls, and a parser of `/proc/zoneinfo`-shaped text
//! (used on the host's file and on pageframe's view alike, so both sides are
//! read the same way).

use super::ConformError;
use std::collections::BTreeMap;

/// True when the process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A host file as text.
pub fn read(path: &str) -> Result<String, ConformError> {
    std::fs::read_to_string(path).map_err(|err| ConformError::Host(format!("{path}: {err}")))
}

/// A host file holding one number (a sysctl).
pub fn read_number(path: &str) -> Result<u64, ConformError> {
    let text = read(path)?;
    text.trim()
        .parse()
        .map_err(|err| ConformError::Host(format!("{path}: '{}': {err}", text.trim())))
}

/// The value of `name=` on the kernel command line, if given.
pub fn cmdline_param(name: &str) -> Result<Option<String>, ConformError> {
    let cmdline = read("/proc/cmdline")?;
    let prefix = format!("{name}=");
    Ok(cmdline
        .split_whitespace()
        .take_while(|word| *word != "--")
        .filter_map(|word| word.strip_prefix(prefix.as_str()))
        .last()
        .map(str::to_string))
}

/// How many CPUs a sysfs list such as `0-3,8` names.
pub fn count_in_list(path: &str) -> Result<usize, ConformError> {
    let text = read(path)?;
    let mut count = 0usize;
    for part in text.trim().split(',').filter(|part| !part.is_empty()) {
        let bad = |err: std::num::ParseIntError| ConformError::Host(format!("{path}: {err}"));
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (
                first.trim().parse::<usize>().map_err(bad)?,
                last.trim().parse::<usize>().map_err(bad)?,
            ),
            None => {
                let id = part.trim().parse::<usize>().map_err(bad)?;
                (id, id)
            }
        };
        count += last.saturating_sub(first) + 1;
    }
    Ok(count)
}

/// One zone of a `/proc/zoneinfo` text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneText {
    /// Node id.
    pub node: usize,
    /// Zone name (`DMA`, `DMA32`, `Normal`, ...).
    pub name: String,
    /// `key value` lines of the zone (`min`, `managed`, `spanned`, ...),
    /// first value kept.
    pub fields: BTreeMap<String, u64>,
    /// The `protection: (...)` entries.
    pub protection: Vec<u64>,
    /// Per CPU of the pagesets: `count`, `high`, `batch`, `high_min`, ...
    pub pcp: Vec<BTreeMap<String, u64>>,
}

impl ZoneText {
    /// A numeric field of the zone.
    pub fn field(&self, key: &str) -> Option<u64> {
        self.fields.get(key).copied()
    }
}

/// Parses `/proc/zoneinfo` text into its zones. Unknown lines are kept as
/// fields when they are `key value` pairs and ignored otherwise.
pub fn parse_zoneinfo(text: &str) -> Vec<ZoneText> {
    let mut zones: Vec<ZoneText> = Vec::new();
    let mut in_pagesets = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Node ") {
            let (node, zone) = rest.split_once(", zone").unwrap_or((rest, ""));
            zones.push(ZoneText {
                node: node.trim().parse().unwrap_or(0),
                name: zone.trim().to_string(),
                ..ZoneText::default()
            });
            in_pagesets = false;
            continue;
        }
        let Some(zone) = zones.last_mut() else {
            continue;
        };
        let trimmed = line.trim();
        if let Some(list) = trimmed.strip_prefix("protection:") {
            zone.protection = list
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(',')
                .filter_map(|value| value.trim().parse().ok())
                .collect();
            continue;
        }
        if trimmed == "pagesets" {
            in_pagesets = true;
            continue;
        }
        if in_pagesets && trimmed.starts_with("cpu:") {
            zone.pcp.push(BTreeMap::new());
            continue;
        }
        let (key, value) = match trimmed.split_once(':') {
            Some((key, value)) if in_pagesets => (key.trim(), value.trim()),
            _ => match trimmed.rsplit_once(char::is_whitespace) {
                Some((key, value)) => (key.trim().trim_end_matches(':'), value.trim()),
                None => continue,
            },
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        match zone.pcp.last_mut() {
            Some(cpu) if in_pagesets && !key.starts_with("node_") && key != "start_pfn" => {
                cpu.entry(key.to_string()).or_insert(value);
            }
            _ => {
                let key = key.strip_prefix("pages ").unwrap_or(key);
                zone.fields.entry(key.to_string()).or_insert(value);
            }
        }
    }
    zones
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 5
  pages free     3840
        boost    0
        min      10
        low      13
        high     16
        spanned  4095
        present  3998
        managed  3840
        protection: (0, 3019, 24090, 24090, 24090)
  pagesets
    cpu: 0
              count:    0
              high:     0
              batch:    1
              high_min: 6
              high_max: 240
  vm stats threshold: 4
    cpu: 1
              count:    2
              high:     7
              batch:    1
  node_unreclaimable:  0
  start_pfn:           1
Node 0, zone  Movable
  pages free     0
        min      32
        protection: (0, 0, 0, 0, 0)
";

    #[test]
    fn zones_fields_protection_and_pagesets_parse() {
        let zones = parse_zoneinfo(SAMPLE);
        assert_eq!(zones.len(), 2);
        let dma = &zones[0];
        assert_eq!((dma.node, dma.name.as_str()), (0, "DMA"));
        assert_eq!(dma.field("free"), Some(3840));
        assert_eq!(dma.field("min"), Some(10));
        assert_eq!(dma.field("managed"), Some(3840));
        assert_eq!(dma.field("start_pfn"), Some(1));
        assert_eq!(dma.protection, [0, 3019, 24090, 24090, 24090]);
        assert_eq!(dma.pcp.len(), 2);
        assert_eq!(dma.pcp[0].get("high_max"), Some(&240));
        assert_eq!(dma.pcp[1].get("high"), Some(&7));
        assert_eq!(dma.pcp[1].get("high_min"), None);
        assert_eq!(zones[1].field("min"), Some(32));
        assert!(zones[1].pcp.is_empty());
    }
}
