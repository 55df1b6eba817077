//! Machine descriptions from the three places a user gives them: a TOML
//! file, flags (`--mem 64G --nodes 4 --cpus 8`), and a kernel command line
//! (`movablecore=2G mem=16G`). Later sources win: file < flags < cmdline.
//!
//! This module owns the TOML format and the merge; it does not validate
//! memory layouts, CPU sets or distances — [`MachineDesc::layout`] does, and
//! [`MachineArgs::to_desc`] runs it so that every problem surfaces as one
//! [`DescError`] naming its field. No clap here: [`MachineArgs`] is plain data
//! that any front end fills in.
//!
//! The file format (every key optional except a node's memory):
//!
//! ```toml
//! page_size = "4K"
//! max_order = 10
//! pageblock_order = 9
//! dma = false
//! dma32 = false
//! cmdline = "movablecore=2G"
//! distance = [[10, 20], [20, 10]]
//! [[node]]
//! mem = "8G"        # contiguous, placed after the previous node's end
//! cpus = [0, 1]     # explicit ids, or a count numbered after the previous CPUs
//! [[node]]
//! ranges = [{ start = "8G", size = "4G" }, { start = "16G", size = "4G" }]
//! cpus = 2
//! [[hotplug]]       # after boot, in order (memory hotplug)
//! action = "online" # or "offline"
//! start = "20G"
//! size = "8G"
//! node = 1
//! zone = "movable"  # or "normal"
//! ```
//!
//! and, at the top level (before any table), memory reserved at boot,
//! present but never managed (memblock_reserve()):
//! `reserved = [{ start = "0x1000000", size = "48M" }]`.
//!
//! Errors in the file name their key path with a `config` prefix
//! (`config node[1].bogus: unknown key ...`), found from the error's byte
//! span in the document.

use pageframe::machine::{apply_cmdline, format_size, parse_size, MemRange, NodeDesc};
use pageframe::{CpuId, DescError, MachineDesc, MachineLayout, MetadataCost};
use serde::Deserialize;
use std::ops::Range;
use std::path::PathBuf;

/// Memory of the machine when neither a file nor `--mem` gives it.
pub const DEFAULT_MEM_BYTES: u64 = 4 << 30;
/// Nodes when neither a file nor `--nodes` gives them.
pub const DEFAULT_NODES: usize = 1;
/// CPUs when neither a file nor `--cpus` gives them.
pub const DEFAULT_CPUS: usize = 2;

/// Everything a user may say about a machine, unparsed. `None` (or `false`)
/// means "not given here": the file's value, or the default, stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineArgs {
    /// A TOML machine file (`--config`).
    pub config: Option<PathBuf>,
    /// Total memory (`--mem 64G`); with `nodes`/`cpus`, replaces the file's nodes.
    pub mem: Option<String>,
    /// Number of nodes (`--nodes 4`), sharing the memory equally.
    pub nodes: Option<usize>,
    /// Number of CPUs (`--cpus 8`), spread over the nodes in blocks.
    pub cpus: Option<usize>,
    /// A kernel command line (`--cmdline "movablecore=2G mem=16G"`).
    pub cmdline: Option<String>,
    /// `--dma`: put memory below 16 MiB in a DMA zone. `false` leaves the
    /// file's choice.
    pub dma: bool,
    /// `--dma32`: put memory below 4 GiB in a DMA32 zone. `false` leaves the
    /// file's choice.
    pub dma32: bool,
    /// MAX_PAGE_ORDER (`--max-order`).
    pub max_order: Option<u8>,
    /// pageblock_order (`--pageblock-order`).
    pub pageblock_order: Option<u8>,
    /// Page size (`--page-size 4K`), a power of two.
    pub page_size: Option<String>,
}

impl MachineArgs {
    /// Merges the file, the flags and the command line into a description,
    /// and validates it by laying it out. The first problem is returned,
    /// naming its field (`--mem`, `config node[1].mem`, `distance`, ...).
    pub fn to_desc(&self) -> Result<MachineDesc, DescError> {
        let (mut desc, file_cmdline) = match &self.config {
            Some(path) => {
                let text = crate::files::read_text(path, crate::files::MAX_CONFIG_BYTES)
                    .map_err(|err| DescError::new("config", err))?;
                let file = parse_machine_file(&text)?;
                (file.desc, file.cmdline)
            }
            None => (
                MachineDesc::uniform(DEFAULT_MEM_BYTES, DEFAULT_NODES, DEFAULT_CPUS)?,
                None,
            ),
        };
        self.apply_flags(&mut desc)?;
        if let Some(cmdline) = &file_cmdline {
            apply_cmdline(&mut desc, cmdline).map_err(|err| prefixed("config ", err))?;
        }
        if let Some(cmdline) = &self.cmdline {
            apply_cmdline(&mut desc, cmdline)?;
        }
        let layout = desc.layout()?;
        let available = crate::host_memory::available();
        check_host_holds(&layout, available)?;
        check_hotplug_steps(&desc, &layout, available)?;
        Ok(desc)
    }

    /// Geometry flags override the file's; `--mem`/`--nodes`/`--cpus`
    /// replace the nodes with a uniform layout, taking what they do not give
    /// from the file's nodes (or the defaults).
    fn apply_flags(&self, desc: &mut MachineDesc) -> Result<(), DescError> {
        if let Some(text) = &self.page_size {
            desc.page_shift = page_shift("--page-size", text)?;
        }
        if let Some(order) = self.max_order {
            desc.max_order = order;
        }
        if let Some(order) = self.pageblock_order {
            desc.pageblock_order = order;
        }
        if self.dma {
            desc.dma = true;
        }
        if self.dma32 {
            desc.dma32 = true;
        }
        if self.mem.is_none() && self.nodes.is_none() && self.cpus.is_none() {
            return Ok(());
        }
        let has_nodes = !desc.nodes.is_empty();
        let mem = match &self.mem {
            Some(text) => {
                let mem = parse_size("--mem", text)?;
                let limit = desc.max_end_bytes();
                if mem > limit {
                    return Err(DescError::new(
                        "--mem",
                        format!(
                            "'{}' is more than a machine may have: 2^32 - 2 pages of {} (just under {})",
                            text.trim(),
                            format_size(desc.page_bytes()),
                            format_size(limit.saturating_add(2 * desc.page_bytes()))
                        ),
                    ));
                }
                mem
            }
            None if has_nodes => desc.total_bytes(),
            None => DEFAULT_MEM_BYTES,
        };
        let nr_nodes = self.nodes.unwrap_or(if has_nodes {
            desc.nodes.len()
        } else {
            DEFAULT_NODES
        });
        let nr_cpus = self.cpus.unwrap_or(if has_nodes {
            desc.nr_cpus()
        } else {
            DEFAULT_CPUS
        });
        let uniform =
            MachineDesc::uniform(mem, nr_nodes, nr_cpus).map_err(|err| prefixed("--", err))?;
        if desc.nodes.len() != nr_nodes {
            desc.distances = None;
        }
        desc.nodes = uniform.nodes;
        // An impossible geometry (page or pageblock far too large) keeps the
        // default alignment; the layout reports the geometry.
        let block_shift = desc.page_shift as u32 + desc.pageblock_order as u32;
        if let Some(block) = 1u64.checked_shl(block_shift) {
            spread_memory(&mut desc.nodes, mem, block);
        }
        Ok(())
    }
}

/// The same error with its field prefixed (`config `, `--`).
fn prefixed(prefix: &str, err: DescError) -> DescError {
    DescError::new(format!("{prefix}{}", err.field), err.message)
}

/// log2 of a page size given as a size string.
fn page_shift(field: &str, text: &str) -> Result<u8, DescError> {
    let bytes = parse_size(field, text)?;
    if !bytes.is_power_of_two() {
        return Err(DescError::new(
            field,
            format!("'{}' is not a power of two", text.trim()),
        ));
    }
    Ok(bytes.trailing_zeros() as u8)
}

/// Gives the nodes equal contiguous shares of `mem` from address 0, aligned
/// to `block` bytes, the last node taking the rest — as
/// [`MachineDesc::uniform`] does, but for the description's own pageblock
/// size rather than the default one.
fn spread_memory(nodes: &mut [NodeDesc], mem: u64, block: u64) {
    let nr_nodes = nodes.len() as u64;
    let share = (mem / nr_nodes) / block * block;
    let mut start = 0;
    for (index, node) in nodes.iter_mut().enumerate() {
        let size = if index as u64 + 1 == nr_nodes {
            (mem - start) / block * block
        } else {
            share
        };
        node.ranges = vec![MemRange { start, size }];
        start += size;
    }
}

/// A machine file, parsed: the description and the command line it carries,
/// which is applied after the flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineFile {
    /// The description, before any command line.
    pub desc: MachineDesc,
    /// The file's `cmdline` key.
    pub cmdline: Option<String>,
}

/// Refuses a machine whose memmap and pageblock table are more than the
/// host's `MemAvailable` (`None`: unknown, not checked). Booting writes one
/// memmap record per MAX_PAGE_ORDER block and a run may write them all, so
/// a machine past that is killed part way by the OOM killer rather than
/// refused (past the host's memory and swap, the memmap's allocation itself
/// fails at boot).
pub fn check_host_holds(layout: &MachineLayout, available: Option<u64>) -> Result<(), DescError> {
    let cost = MetadataCost::for_layout(layout);
    match available {
        Some(available) if cost.total_bytes() > available => Err(DescError::new(
            "mem",
            format!(
                "the machine's page metadata takes {} ({} B per page), more than the host's MemAvailable of {}",
                crate::host_memory::gib(cost.total_bytes()),
                cost.memmap_record_bytes,
                crate::host_memory::gib(available)
            ),
        )),
        _ => Ok(()),
    }
}

/// Runs a machine file's `[[hotplug]]` steps (`desc.hotplug`) on the
/// machine booted from `desc`, in order, as every command that boots a
/// machine file does after boot (`proc`, `info`, `trace replay`); a
/// refused step is the error, naming it.
pub fn apply_hotplug_steps(
    allocator: &mut pageframe::LocalPageAllocator,
    desc: &MachineDesc,
) -> Result<(), DescError> {
    allocator
        .apply_hotplug(&desc.hotplug)
        .map_err(|(step, err)| DescError::new(format!("config hotplug[{step}]"), err.to_string()))
}

/// Most pages a machine's `[[hotplug]]` steps may online and offline in
/// all: twice the most a machine holds (each page onlined and offlined
/// once). A step's time is in its pages and a file holds some 20 000 steps:
/// 8T onlined and offlined in turn ran for hours.
pub const MAX_HOTPLUG_PAGES: u64 = 1 << 33;

/// Refuses hotplug steps that move more than [`MAX_HOTPLUG_PAGES`] in all,
/// or that grow the memmap past the host's `MemAvailable` (as
/// [`check_host_holds`] does at boot). A step past 2^32 pages is left to
/// the allocator, which refuses it naming the PFN.
pub fn check_hotplug_steps(
    desc: &MachineDesc,
    layout: &MachineLayout,
    available: Option<u64>,
) -> Result<(), DescError> {
    let pages = desc.hotplug.iter().fold(0u64, |pages, step| {
        pages.saturating_add(step.size >> desc.page_shift)
    });
    if pages > MAX_HOTPLUG_PAGES {
        return Err(DescError::new(
            "config hotplug",
            format!(
                "the steps move {pages} pages in all, more than 2^33 (each page of the largest machine onlined and offlined once)"
            ),
        ));
    }
    let furthest = desc
        .hotplug
        .iter()
        .enumerate()
        .filter(|(_, step)| step.online)
        .filter_map(|(index, step)| Some((index, step.start.checked_add(step.size)?)))
        .filter(|&(_, end)| end <= desc.max_end_bytes())
        .max_by_key(|&(_, end)| end);
    match furthest {
        Some((index, end)) if end >> desc.page_shift > layout.end_pfn.0 => {
            let grown = MachineLayout {
                end_pfn: pageframe::Pfn(end >> desc.page_shift),
                ..layout.clone()
            };
            check_host_holds(&grown, available).map_err(|err| {
                DescError::new(
                    format!("config hotplug[{index}]"),
                    format!("once online, {}", err.message),
                )
            })
        }
        _ => Ok(()),
    }
}

/// Parses the text of a TOML machine file. Errors are one line naming the
/// key path (`config node[1].bogus: unknown key, ...`).
pub fn parse_machine_file(text: &str) -> Result<MachineFile, DescError> {
    let file: FileRoot = toml::from_str(text).map_err(|err| toml_error(text, &err))?;
    let defaults = MachineDesc::default();
    let mut desc = MachineDesc {
        page_shift: match &file.page_size {
            Some(size) => page_shift("config page_size", &size.to_text())?,
            None => defaults.page_shift,
        },
        max_order: file.max_order.unwrap_or(defaults.max_order),
        pageblock_order: file.pageblock_order.unwrap_or(defaults.pageblock_order),
        nodes: Vec::with_capacity(file.node.len()),
        distances: file.distance,
        dma: file.dma.unwrap_or(false),
        dma32: file.dma32.unwrap_or(false),
        movablecore: None,
        kernelcore: None,
        mem_limit: None,
        ..defaults.clone()
    };
    let mut next_start = 0u64;
    let mut next_cpu = 0u32;
    for (index, node) in file.node.iter().enumerate() {
        let field = |key: &str| format!("config node[{index}].{key}");
        let ranges = match (&node.mem, &node.ranges) {
            (Some(_), Some(_)) => {
                return Err(DescError::new(
                    format!("config node[{index}]"),
                    "give mem or ranges, not both",
                ))
            }
            (Some(mem), None) => vec![MemRange {
                start: next_start,
                size: parse_size(&field("mem"), &mem.to_text())?,
            }],
            (None, Some(ranges)) => ranges
                .iter()
                .enumerate()
                .map(|(at, range)| {
                    let range_field = |key: &str| field(&format!("ranges[{at}].{key}"));
                    Ok(MemRange {
                        start: parse_size(&range_field("start"), &range.start.to_text())?,
                        size: parse_size(&range_field("size"), &range.size.to_text())?,
                    })
                })
                .collect::<Result<_, DescError>>()?,
            (None, None) => Vec::new(),
        };
        next_start = ranges.iter().map(MemRange::end).fold(next_start, u64::max);
        let cpus: Vec<CpuId> = match &node.cpus {
            None => Vec::new(),
            Some(CpusValue::Ids(ids)) => ids
                .iter()
                .map(|&id| {
                    u16::try_from(id).map(CpuId).map_err(|_| {
                        DescError::new(field("cpus"), format!("CPU id {id} is past 65535"))
                    })
                })
                .collect::<Result<_, DescError>>()?,
            Some(CpusValue::Count(count)) => {
                let end = next_cpu.checked_add(*count).filter(|&end| end <= 1 << 16);
                let end =
                    end.ok_or_else(|| DescError::new(field("cpus"), "CPU ids would pass 65535"))?;
                (next_cpu..end).map(|id| CpuId(id as u16)).collect()
            }
        };
        next_cpu = cpus
            .iter()
            .map(|cpu| cpu.0 as u32 + 1)
            .fold(next_cpu, u32::max);
        desc.nodes.push(NodeDesc { ranges, cpus });
    }
    for (index, range) in file.reserved.iter().enumerate() {
        let field = |key: &str| format!("config reserved[{index}].{key}");
        desc.reserved.push(MemRange {
            start: parse_size(&field("start"), &range.start.to_text())?,
            size: parse_size(&field("size"), &range.size.to_text())?,
        });
    }
    for (index, step) in file.hotplug.iter().enumerate() {
        let field = |key: &str| format!("config hotplug[{index}].{key}");
        let online = match step.action.as_str() {
            "online" => true,
            "offline" => false,
            other => {
                return Err(DescError::new(
                    field("action"),
                    format!("'{other}' is not online or offline"),
                ))
            }
        };
        let zone = match step.zone.as_deref().unwrap_or("movable") {
            "normal" | "Normal" => pageframe::ZoneType::Normal,
            "movable" | "Movable" => pageframe::ZoneType::Movable,
            other => {
                return Err(DescError::new(
                    field("zone"),
                    format!("'{other}' is not normal or movable"),
                ))
            }
        };
        desc.hotplug.push(pageframe::machine::HotplugStep {
            online,
            start: parse_size(&field("start"), &step.start.to_text())?,
            size: parse_size(&field("size"), &step.size.to_text())?,
            node: step.node.unwrap_or(0),
            zone,
        });
    }
    Ok(MachineFile {
        desc,
        cmdline: file.cmdline,
    })
}

/// The top level of a machine file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRoot {
    page_size: Option<SizeValue>,
    max_order: Option<u8>,
    pageblock_order: Option<u8>,
    dma: Option<bool>,
    dma32: Option<bool>,
    cmdline: Option<String>,
    distance: Option<Vec<Vec<u8>>>,
    #[serde(default)]
    node: Vec<FileNode>,
    #[serde(default)]
    hotplug: Vec<FileHotplug>,
    #[serde(default)]
    reserved: Vec<FileRange>,
}

/// One `[[hotplug]]` step: `action = "online"`, `start`, `size`, `node`,
/// `zone = "movable"|"normal"` (online only).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileHotplug {
    action: String,
    start: SizeValue,
    size: SizeValue,
    node: Option<usize>,
    zone: Option<String>,
}

/// One `[[node]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileNode {
    mem: Option<SizeValue>,
    ranges: Option<Vec<FileRange>>,
    cpus: Option<CpusValue>,
}

/// One `{ start = ..., size = ... }` of a node's `ranges` or of `reserved`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRange {
    start: SizeValue,
    size: SizeValue,
}

/// A size: `"8G"` or a plain number of bytes.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a size such as \"8G\" or a number of bytes")]
enum SizeValue {
    Text(String),
    Bytes(u64),
}

impl SizeValue {
    fn to_text(&self) -> String {
        match self {
            SizeValue::Text(text) => text.clone(),
            SizeValue::Bytes(bytes) => bytes.to_string(),
        }
    }
}

/// A node's CPUs: a count, or explicit ids.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a CPU count or a list of CPU ids (0 to 65535)")]
enum CpusValue {
    Count(u32),
    /// Read wider than a CPU id, so that an id past 65535 is named.
    Ids(Vec<u32>),
}

/// One line for a TOML syntax or schema error: the key path when the error's
/// span falls on a key or value, else the line number.
fn toml_error(text: &str, err: &toml::de::Error) -> DescError {
    let message = err
        .message()
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let message = match message.strip_prefix("unknown field `") {
        Some(rest) => match rest.split_once("`, ") {
            Some((_, expected)) => format!("unknown key, {expected}"),
            None => "unknown key".to_string(),
        },
        None => message,
    };
    let Some(span) = err.span() else {
        return DescError::new("config", message);
    };
    match key_path_at(text, span.start) {
        Some(path) => DescError::new(format!("config {path}"), message),
        None => {
            let before = &text.as_bytes()[..span.start.min(text.len())];
            let line = before.iter().filter(|&&byte| byte == b'\n').count() + 1;
            DescError::new("config", format!("line {line}: {message}"))
        }
    }
}

/// The dotted path (`node[1].ranges[0].start`) of the innermost key or value
/// whose span holds `offset`; `None` when the text does not parse or nothing
/// holds it.
fn key_path_at(text: &str, offset: usize) -> Option<String> {
    let document = toml_edit::ImDocument::parse(text).ok()?;
    path_in_table(document.as_table(), offset, "")
}

fn holds(span: Option<Range<usize>>, offset: usize) -> bool {
    span.is_some_and(|span| span.contains(&offset))
}

fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn path_in_table(table: &toml_edit::Table, offset: usize, path: &str) -> Option<String> {
    table.iter().find_map(|(key, item)| {
        let child = join_key(path, key);
        let on_key = table
            .get_key_value(key)
            .is_some_and(|(key, _)| holds(key.span(), offset));
        if on_key {
            return Some(child);
        }
        path_in_item(item, offset, &child)
    })
}

fn path_in_item(item: &toml_edit::Item, offset: usize, path: &str) -> Option<String> {
    match item {
        toml_edit::Item::None => None,
        toml_edit::Item::Value(value) => path_in_value(value, offset, path),
        toml_edit::Item::Table(table) => path_in_table(table, offset, path)
            .or_else(|| holds(table.span(), offset).then(|| path.to_string())),
        toml_edit::Item::ArrayOfTables(tables) => {
            tables.iter().enumerate().find_map(|(index, table)| {
                let element = format!("{path}[{index}]");
                path_in_table(table, offset, &element)
                    .or_else(|| holds(table.span(), offset).then_some(element))
            })
        }
    }
}

fn path_in_value(value: &toml_edit::Value, offset: usize, path: &str) -> Option<String> {
    let inner = match value {
        toml_edit::Value::Array(array) => array.iter().enumerate().find_map(|(index, element)| {
            path_in_value(element, offset, &format!("{path}[{index}]"))
        }),
        toml_edit::Value::InlineTable(table) => table.iter().find_map(|(key, element)| {
            let child = join_key(path, key);
            let on_key = table
                .get_key_value(key)
                .is_some_and(|(key, _)| holds(key.span(), offset));
            if on_key {
                Some(child)
            } else {
                path_in_value(element, offset, &child)
            }
        }),
        _ => None,
    };
    inner.or_else(|| holds(value.span(), offset).then(|| path.to_string()))
}

#[cfg(test)]
mod tests;
