//! The traced host's layout and state: the /proc files a recording saves at
//! its start and end, and what replay reads back from them (memory size,
//! CPUs, buddyinfo per zone).
//!
//! Metadata keys: `host.start.<name>` and `host.end.<name>` for each of
//! [`HOST_FILES`], and `cpus` (online CPUs of the host).

use super::event::Trace;
use std::collections::BTreeMap;

/// The files saved, by short name (`/proc/iomem` shows its addresses to
/// root only, which a recording is). The page allocator's sysctls are saved
/// under their names (`pageframe::VmSysctl::name`), so that a replay on a
/// host-shaped machine writes the host's values.
pub const HOST_FILES: [(&str, &str); 11] = [
    ("zoneinfo", "/proc/zoneinfo"),
    ("iomem", "/proc/iomem"),
    ("buddyinfo", "/proc/buddyinfo"),
    ("pagetypeinfo", "/proc/pagetypeinfo"),
    ("vmstat", "/proc/vmstat"),
    ("min_free_kbytes", "/proc/sys/vm/min_free_kbytes"),
    (
        "watermark_boost_factor",
        "/proc/sys/vm/watermark_boost_factor",
    ),
    (
        "watermark_scale_factor",
        "/proc/sys/vm/watermark_scale_factor",
    ),
    (
        "percpu_pagelist_high_fraction",
        "/proc/sys/vm/percpu_pagelist_high_fraction",
    ),
    ("lowmem_reserve_ratio", "/proc/sys/vm/lowmem_reserve_ratio"),
    ("osrelease", "/proc/sys/kernel/osrelease"),
];

/// Which moment of the recording a snapshot belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// Before tracing starts.
    Start,
    /// After tracing stops.
    End,
}

impl Moment {
    fn prefix(self) -> &'static str {
        match self {
            Moment::Start => "host.start.",
            Moment::End => "host.end.",
        }
    }
}

/// Saves this host's files into the trace's metadata (files that cannot be
/// read are left out).
pub fn snapshot_into(trace: &mut Trace, moment: Moment) {
    for (name, path) in HOST_FILES {
        if let Ok(text) = std::fs::read_to_string(path) {
            trace.set_meta(&format!("{}{name}", moment.prefix()), text);
        }
    }
}

/// A saved host file.
pub fn host_file(trace: &Trace, moment: Moment, name: &str) -> Option<String> {
    trace
        .meta(&format!("{}{name}", moment.prefix()))
        .map(str::to_string)
}

/// One zone's line of /proc/buddyinfo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuddyLine {
    /// Node number.
    pub node: u32,
    /// Zone name (`DMA32`, `Normal`...).
    pub zone: String,
    /// Free blocks per order.
    pub nr_free: Vec<u64>,
}

/// Parses /proc/buddyinfo text; lines that do not parse are skipped.
pub fn parse_buddyinfo(text: &str) -> Vec<BuddyLine> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("Node ")?;
            let (node, rest) = rest.split_once(',')?;
            let rest = rest.trim_start().strip_prefix("zone")?;
            let mut words = rest.split_whitespace();
            let zone = words.next()?.to_string();
            let nr_free = words
                .map(|word| word.parse::<u64>().ok())
                .collect::<Option<Vec<u64>>>()?;
            Some(BuddyLine {
                node: node.trim().parse().ok()?,
                zone,
                nr_free,
            })
        })
        .collect()
}

/// What /proc/pagetypeinfo says: its layout (pageblock order and size, the
/// columns of both tables) and per zone, free blocks per order on each
/// migratetype's lists and pageblocks per migratetype.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pagetypeinfo {
    /// `Page block order: N`, as written.
    pub pageblock_order: String,
    /// `Pages per block: N`, as written.
    pub pages_per_block: String,
    /// The order columns of the free-pages table.
    pub orders: Vec<String>,
    /// The migratetype columns of the block-count table.
    pub block_types: Vec<String>,
    /// `Node N, zone Z, type T  c0 c1 ...`: one line per zone and type.
    pub free: Vec<FreeListLine>,
    /// `Node N, zone Z  c0 c1 ...` under "Number of blocks type".
    pub blocks: Vec<BlockCountLine>,
}

/// Free blocks per order on one migratetype's lists of one zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeListLine {
    /// Node number.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// Migratetype name (`Unmovable`, `Movable`...).
    pub migratetype: String,
    /// Free blocks per order.
    pub nr_free: Vec<u64>,
}

/// Pageblocks per migratetype of one zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockCountLine {
    /// Node number.
    pub node: u32,
    /// Zone name.
    pub zone: String,
    /// `(migratetype name, pageblocks)` in the header's order.
    pub counts: Vec<(String, u64)>,
}

/// Parses /proc/pagetypeinfo text; lines that do not parse are skipped.
pub fn parse_pagetypeinfo(text: &str) -> Pagetypeinfo {
    let mut parsed = Pagetypeinfo::default();
    let mut in_blocks = false;
    let words = |text: &str| text.split_whitespace().map(str::to_string).collect();
    for line in text.lines() {
        if let Some(order) = line.strip_prefix("Page block order:") {
            parsed.pageblock_order = order.trim().to_string();
            continue;
        }
        if let Some(pages) = line.strip_prefix("Pages per block:") {
            parsed.pages_per_block = pages.trim().to_string();
            continue;
        }
        if let Some(orders) = line.strip_prefix("Free pages count per migrate type at order") {
            parsed.orders = words(orders);
            continue;
        }
        if let Some(header) = line.strip_prefix("Number of blocks type") {
            parsed.block_types = words(header);
            in_blocks = true;
            continue;
        }
        let Some((node, zone, rest)) = node_and_zone(line) else {
            continue;
        };
        match (rest.trim_start().strip_prefix("type"), in_blocks) {
            (Some(typed), _) => {
                let mut words = typed.split_whitespace();
                let Some(migratetype) = words.next() else {
                    continue;
                };
                let Some(nr_free) = words.map(|word| word.parse().ok()).collect() else {
                    continue;
                };
                parsed.free.push(FreeListLine {
                    node,
                    zone,
                    migratetype: migratetype.to_string(),
                    nr_free,
                });
            }
            (None, true) => {
                let Some(counts) = rest
                    .split_whitespace()
                    .map(|word| word.parse::<u64>().ok())
                    .collect::<Option<Vec<u64>>>()
                else {
                    continue;
                };
                parsed.blocks.push(BlockCountLine {
                    node,
                    zone,
                    counts: parsed.block_types.iter().cloned().zip(counts).collect(),
                });
            }
            (None, false) => {}
        }
    }
    parsed
}

/// `Node N, zone Z[,] rest`: the node, the zone's name and the rest.
fn node_and_zone(line: &str) -> Option<(u32, String, &str)> {
    let (node, rest) = line.strip_prefix("Node")?.split_once(',')?;
    let rest = rest.trim_start().strip_prefix("zone")?.trim_start();
    let end = rest
        .find(|c: char| c == ',' || c.is_whitespace())
        .unwrap_or(rest.len());
    let (zone, rest) = rest.split_at(end);
    Some((
        node.trim().parse().ok()?,
        zone.to_string(),
        rest.strip_prefix(',').unwrap_or(rest),
    ))
}

/// Sum of the `managed` pages of every zone in /proc/zoneinfo text.
pub fn managed_pages(zoneinfo: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut seen = false;
    for line in zoneinfo.lines() {
        let mut words = line.split_whitespace();
        if words.next() == Some("managed") {
            total = total.checked_add(words.next()?.parse::<u64>().ok()?)?;
            seen = true;
        }
    }
    seen.then_some(total)
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

/// The node and name of a zoneinfo header line's words `Node 0, zone
/// Normal` (given `0,` and `Normal`).
fn zone_id(node: &str, name: &str) -> Option<(u16, String)> {
    let node = node.trim_end_matches(',').parse().ok()?;
    Some((node, name.to_string()))
}

/// A zone of the host, as /proc/zoneinfo shows it: where its PFNs are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostZoneSpan {
    /// The zone's node.
    pub node: u16,
    /// The zone's name (`DMA`, `DMA32`, `Normal`, `Movable`).
    pub zone: String,
    /// `start_pfn:`.
    pub start_pfn: u64,
    /// `spanned`.
    pub spanned: u64,
}

/// The zone names a kernel's /proc/zoneinfo prints.
const ZONE_NAMES: [&str; 6] = ["DMA", "DMA32", "Normal", "HighMem", "Movable", "Device"];

/// Every zone of /proc/zoneinfo text with both `spanned` and `start_pfn:`,
/// in the file's order: one per node (below `MAX_NUMNODES`) and zone name
/// a kernel prints, the first where a damaged text repeats one, so that a
/// PFN is placed among a bounded number of spans.
pub fn parse_zone_spans(zoneinfo: &str) -> Vec<HostZoneSpan> {
    let mut spans: Vec<HostZoneSpan> = Vec::new();
    for zone in parse_zoneinfo(zoneinfo) {
        let known = zone.node < pageframe::MAX_NUMNODES && ZONE_NAMES.contains(&zone.name.as_str());
        let repeated = spans
            .iter()
            .any(|span| usize::from(span.node) == zone.node && span.zone == zone.name);
        if !known || repeated {
            continue;
        }
        let (Some(start_pfn), Some(spanned)) = (zone.field("start_pfn"), zone.field("spanned"))
        else {
            continue;
        };
        spans.push(HostZoneSpan {
            node: zone.node as u16,
            start_pfn,
            spanned,
            zone: zone.name,
        });
    }
    spans
}

/// One CPU's per-CPU lists of one zone, as /proc/zoneinfo shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPcp {
    /// The zone's node.
    pub node: u16,
    /// The zone's name (`DMA`, `DMA32`, `Normal`, `Movable`).
    pub zone: String,
    /// The CPU.
    pub cpu: usize,
    /// Pages listed (`count:`).
    pub count: u32,
    /// The adaptive limit (`high:`).
    pub high: u32,
}

/// Every CPU's `count:` and `high:` per zone in /proc/zoneinfo text, in
/// the file's order; a CPU block without both is left out.
pub fn parse_pcp(zoneinfo: &str) -> Vec<HostPcp> {
    /// A CPU block being read: its zone and CPU, and the two values once seen.
    type Block = ((u16, String), usize, Option<u32>, Option<u32>);
    let mut found = Vec::new();
    let mut zone: Option<(u16, String)> = None;
    let mut block: Option<Block> = None;
    let mut finish = |block: Option<Block>| {
        if let Some(((node, zone), cpu, Some(count), Some(high))) = block {
            found.push(HostPcp {
                node,
                zone,
                cpu,
                count,
                high,
            });
        }
    };
    for line in zoneinfo.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match (words.as_slice(), block.as_mut()) {
            (["Node", node, "zone", name], _) => {
                finish(block.take());
                zone = zone_id(node, name);
            }
            (["cpu:", cpu], _) => {
                finish(block.take());
                block = zone
                    .clone()
                    .zip(cpu.parse().ok())
                    .map(|(zone, cpu)| (zone, cpu, None, None));
            }
            (["count:", value], Some(block)) => block.2 = value.parse().ok(),
            (["high:", value], Some(block)) => block.3 = value.parse().ok(),
            _ => {}
        }
    }
    finish(block.take());
    found
}

/// The traced kernel's release: the saved `osrelease`, else the word after
/// `Linux ` in the `host` description (traces recorded before `osrelease`
/// was saved, such as the shipped one).
pub fn kernel_release(trace: &Trace) -> Option<String> {
    if let Some(release) = host_file(trace, Moment::Start, "osrelease") {
        return Some(release.trim().to_string());
    }
    let host = trace.meta("host")?;
    let after = &host[host.find("Linux ")? + "Linux ".len()..];
    Some(after.split([' ', ',', ';']).next()?.to_string())
}

/// The host's CPU count: the `cpus` key, else one more than the highest
/// CPU seen in the events.
pub fn host_cpus(trace: &Trace) -> usize {
    trace
        .meta("cpus")
        .and_then(|text| text.trim().parse::<usize>().ok())
        .filter(|cpus| (1..=usize::from(u16::MAX)).contains(cpus))
        .unwrap_or_else(|| trace.nr_cpus_seen().max(1))
}

/// The host's memory in bytes (4 KiB pages), from zoneinfo at start.
pub fn host_bytes(trace: &Trace) -> Option<u64> {
    managed_pages(&host_file(trace, Moment::Start, "zoneinfo")?)?.checked_mul(4096)
}

/// How much a /proc/vmstat counter grew between the recording's start and
/// end (`None` when either snapshot lacks it, or it went down: a counter
/// the kernel does not only increase).
pub fn vmstat_growth(trace: &Trace, name: &str) -> Option<u64> {
    let value = |moment| {
        host_file(trace, moment, "vmstat")?
            .lines()
            .find_map(|line| {
                let (key, value) = line.split_once(' ')?;
                (key == name).then(|| value.trim().parse::<u64>().ok())?
            })
    };
    value(Moment::End)?.checked_sub(value(Moment::Start)?)
}

/// Number of CPUs in `/sys/devices/system/cpu/online` notation (`0-3,6`).
pub fn count_cpu_list(text: &str) -> Option<usize> {
    let mut count = 0usize;
    for part in text.trim().split(',').filter(|part| !part.is_empty()) {
        match part.split_once('-') {
            Some((low, high)) => {
                let (low, high) = (low.parse::<usize>().ok()?, high.parse::<usize>().ok()?);
                count = count.checked_add(high.checked_sub(low)?.checked_add(1)?)?;
            }
            None => {
                part.parse::<usize>().ok()?;
                count = count.checked_add(1)?;
            }
        }
    }
    Some(count)
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
