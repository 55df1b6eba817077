//! Page cache, LRU lists and reclaim over the page allocator: the part of
//! mm/ that gives free memory back its real-machine history. Free pages
//! return from page cache reclaim (in LRU order) and process exits (in
//! virtual address order), not in the order they were allocated.
//!
//! [`Mm`] owns, for one [`LocalPageAllocator`] it borrows:
//! - files and their page cache (`page_cache`): pages by file offset,
//!   reads that allocate in offset order through readahead windows
//!   (`readahead`), dirty/clean state, writeback, `POSIX_FADV_DONTNEED`,
//!   truncation and deletion, over ext4 as the page cache sees it: written
//!   pages and holes, delayed allocation (`extents`), and the journal's
//!   data=ordered commits at fsync (`journal`); shadow entries of evicted
//!   pages, which activate a page read back soon enough (`workingset`);
//! - processes with anonymous memory (`anon`), freed in address order at exit;
//! - per-node LRU lists, inactive and active, anon and file (`lru`), aged
//!   by `shrink_active_list()` and `shrink_inactive_list()` (`vmscan`);
//! - kswapd per node (`kswapd`), woken below the low watermark and
//!   reclaiming to the high one when the driver lets it run;
//! - the allocation slow path with direct reclaim (`slowpath`);
//! - a memory cgroup limit over all of it, whose charges reclaim the
//!   cgroup's lists when it is reached (`memcg`);
//! - vmstat counters (`vmstat`) and the `/proc/meminfo` view (`meminfo`).
//!
//! Reclaim only ever starts when an allocation through [`Mm`] finds the
//! zones below their watermarks, or a charge finds the memory cgroup at a
//! limit the caller set: a machine without memory pressure behaves exactly
//! as the bare allocator.
//!
//! There is no swap device: anonymous pages are not reclaimable (the
//! kernel's get_scan_count() picks SCAN_FILE when there is no swap), so
//! reclaim scans the file lists only. Writeback completes at once.
//!
//! Not modelled: the per-CPU LRU batches (folio_batch of 31 pages that
//! folio_add_lru(), folio_activate() and the rotations fill before the
//! lists see a page: here a page joins its list at once, as after
//! lru_add_drain()); background writeback (balance_dirty_pages() and
//! `dirty_background_ratio`, the flusher's periodic and expiry writeback):
//! dirty pages are written by fsync(2), sync(2), the journal's commit and
//! the flusher reclaim wakes; compaction; the OOM killer.
//!
//! Invariants (`check_invariants`): every page is exactly one of free,
//! page cache, anon, or other (allocated by someone else); the LRU lists
//! hold exactly the page cache and anon pages, and their counts match.
//!
//! Single-threaded: no locks. The allocator's own locks are taken inside
//! its calls only.

mod aging;
mod anon;
mod error;
mod extents;
mod invariants;
mod journal;
mod kswapd;
mod lru;
mod memcg;
mod meminfo;
mod page_cache;
mod readahead;
mod shadow_nodes;
mod slowpath;
mod vmscan;
mod vmstat;
mod workingset;

pub use aging::{AgingConfig, AgingConfigError, AgingWorkload, MAX_DATASET_FILES, MAX_WORK_FACTOR};
pub use error::MmError;
pub use kswapd::{KswapdState, KswapdStep};
pub use lru::{LruList, Owner};
pub use meminfo::Meminfo;
pub use vmstat::{ReclaimCounters, ReclaimEvent};
pub use workingset::WorkingsetStats;

use crate::gfp::Gfp;
use crate::page_alloc::LocalPageAllocator;
use crate::types::{CpuId, NodeId, Order, ZoneType};
use crate::zone::watermark::Watermarks;
use anon::Process;
use kswapd::Kswapd;
use lru::Lru;
use page_cache::FileSlot;
use std::collections::BTreeMap;
use std::fmt;

/// A file of the page cache (its inode, and the one descriptor that uses it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

impl fmt::Display for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A process with anonymous memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid(pub u32);

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// `mapping_gfp_mask()` of a regular file: GFP_HIGHUSER_MOVABLE (page
/// cache reads, writes and readahead allocate with it).
pub(crate) const MAPPING_GFP: Gfp = Gfp::HIGHUSER_MOVABLE;

/// `MAX_LFS_FILESIZE` on 64-bit: the largest `s_maxbytes`.
pub const MAX_LFS_FILESIZE: u64 = i64::MAX as u64;

/// Options of the reclaim layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmConfig {
    /// The file system's maximum file size (`sb->s_maxbytes`); sizes beyond
    /// it are EFBIG.
    pub max_file_bytes: u64,
    /// The file system's device's readahead window in KiB
    /// (`/sys/block/DEV/queue/read_ahead_kb`; 0 turns readahead off, each
    /// missing page is then read alone).
    pub read_ahead_kb: u32,
    /// The device's largest I/O in KiB (`max_sectors_kb`, the
    /// `bdi->io_pages` a read larger than the window may use).
    pub max_sectors_kb: u32,
}

/// `VM_READAHEAD_PAGES` in KiB: the default window (128 KiB).
pub const DEFAULT_READ_AHEAD_KB: u32 = 128;

/// The block layer's default largest I/O in KiB (`BLK_DEF_MAX_SECTORS_CAP`,
/// 2560 sectors).
pub const DEFAULT_MAX_SECTORS_KB: u32 = 1280;

impl Default for MmConfig {
    fn default() -> MmConfig {
        MmConfig {
            max_file_bytes: MAX_LFS_FILESIZE,
            read_ahead_kb: DEFAULT_READ_AHEAD_KB,
            max_sectors_kb: DEFAULT_MAX_SECTORS_KB,
        }
    }
}

/// Static facts of one populated zone, read once from its snapshot.
#[derive(Clone, Debug)]
pub(crate) struct ZoneInfo {
    /// The allocator's zone index.
    pub(crate) index: usize,
    pub(crate) node: NodeId,
    pub(crate) zone_type: ZoneType,
    pub(crate) start_pfn: u64,
    pub(crate) end_pfn: u64,
    pub(crate) managed: u64,
    pub(crate) lowmem_reserve: [u64; ZoneType::COUNT],
}

/// The page cache, processes, LRU lists and reclaim of one machine.
pub struct Mm<'a> {
    allocator: &'a LocalPageAllocator,
    config: MmConfig,
    zones: Vec<ZoneInfo>,
    lru: Lru,
    files: Vec<FileSlot>,
    processes: Vec<Process>,
    kswapd: Vec<Kswapd>,
    counters: ReclaimCounters,
    /// Each node's refault state.
    workingset: Vec<WorkingsetStats>,
    nr_file: u64,
    nr_anon: u64,
    nr_dirty: u64,
    /// Blocks handed out by [`Mm::alloc_pages`] and not yet freed through
    /// [`Mm::free_pages`], by first PFN, with their order.
    other_pages: BTreeMap<u64, Order>,
    /// Their pages (`sum(1 << order)`).
    nr_other: u64,
    /// Pages ext4 zeroed through the cache since the journal's last commit
    /// (data=ordered: the commit writes them first), as (file, offset).
    ordered_data: Vec<(FileId, u64)>,
    /// The memory cgroup's limit in pages (`memcg::UNLIMITED`: none).
    memcg_max: u64,
    /// Per node, the cgroup's statistics as last flushed; empty until the
    /// workload is put in a cgroup (`set_memcg_limit`).
    memcg_flushed: Vec<memcg::FlushedStats>,
    /// The page cache's tree nodes holding only shadows, and their shrinker.
    shadow_nodes: shadow_nodes::ShadowNodes,
}

impl<'a> Mm<'a> {
    /// The reclaim layer over `allocator`, with no files and no processes.
    pub fn new(allocator: &'a LocalPageAllocator, config: MmConfig) -> Mm<'a> {
        let zones = allocator
            .zone_snapshots()
            .into_iter()
            .enumerate()
            .filter(|(_, zone)| zone.managed > 0)
            .map(|(index, zone)| ZoneInfo {
                index,
                node: zone.node,
                zone_type: zone.zone_type,
                start_pfn: zone.start_pfn,
                end_pfn: zone.start_pfn + zone.spanned,
                managed: zone.managed,
                lowmem_reserve: zone.lowmem_reserve,
            })
            .collect();
        let nodes = allocator.nr_nodes();
        Mm {
            allocator,
            config,
            zones,
            lru: Lru::new(allocator.layout().end_pfn.0, nodes),
            files: Vec::new(),
            processes: Vec::new(),
            kswapd: vec![Kswapd::default(); nodes],
            counters: ReclaimCounters::default(),
            workingset: vec![WorkingsetStats::default(); nodes],
            nr_file: 0,
            nr_anon: 0,
            nr_dirty: 0,
            other_pages: BTreeMap::new(),
            nr_other: 0,
            ordered_data: Vec::new(),
            memcg_max: memcg::UNLIMITED,
            memcg_flushed: Vec::new(),
            shadow_nodes: shadow_nodes::ShadowNodes::new(nodes),
        }
    }

    /// Host bytes the layer keeps per PFN of the machine, whatever it
    /// holds (the page state and LRU links of `lru`); pages cached,
    /// processes' pages and shadows cost their map entries on top.
    pub const fn host_bytes_per_pfn() -> u64 {
        std::mem::size_of::<lru::PageMeta>() as u64
    }

    /// The allocator underneath.
    pub fn allocator(&self) -> &'a LocalPageAllocator {
        self.allocator
    }

    /// The options.
    pub fn config(&self) -> MmConfig {
        self.config
    }

    /// Number of nodes.
    pub fn nr_nodes(&self) -> usize {
        self.kswapd.len()
    }

    /// The event counters.
    pub fn counters(&self) -> &ReclaimCounters {
        &self.counters
    }

    /// Pages in the page cache (`NR_FILE_PAGES`).
    pub fn nr_file_pages(&self) -> u64 {
        self.nr_file
    }

    /// Anonymous pages of live processes (`NR_ANON_MAPPED`).
    pub fn nr_anon_pages(&self) -> u64 {
        self.nr_anon
    }

    /// Dirty page cache pages (`NR_FILE_DIRTY`).
    pub fn nr_dirty(&self) -> u64 {
        self.nr_dirty
    }

    /// Pages on `list` of `node`.
    pub fn lru_pages(&self, node: NodeId, list: LruList) -> u64 {
        if node.index() >= self.nr_nodes() {
            return 0;
        }
        self.lru.count(node.index(), list)
    }

    /// Who holds `pfn`, as far as the reclaim layer knows.
    pub fn owner(&self, pfn: u64) -> Owner {
        if pfn >= self.allocator.layout().end_pfn.0 {
            return Owner::None;
        }
        self.lru.meta(pfn).owner
    }

    /// The node and zone type of a PFN of the machine.
    fn place_of(&self, pfn: u64) -> (u16, ZoneType) {
        self.zones
            .iter()
            .find(|zone| (zone.start_pfn..zone.end_pfn).contains(&pfn))
            .map_or((0, ZoneType::Dma), |zone| (zone.node.0, zone.zone_type))
    }

    /// `NR_FREE_PAGES` and watermarks of a zone.
    fn zone_free(&self, zone: &ZoneInfo) -> (u64, Watermarks) {
        self.allocator
            .zone_free_pages(zone.index)
            .unwrap_or((0, Watermarks::default()))
    }

    /// The node of a CPU.
    fn cpu_node(&self, cpu: CpuId) -> Result<NodeId, MmError> {
        self.allocator
            .layout()
            .cpu_node
            .get(cpu.index())
            .copied()
            .ok_or(MmError::Cpu(crate::page_alloc::CpuError::NoSuchCpu(cpu)))
    }

    /// Frees a page cache or anon page the layer owns: off its LRU list,
    /// out of its file or process, back to the allocator on `cpu`.
    fn free_owned(&mut self, cpu: CpuId, pfn: u64) -> Result<(), MmError> {
        let meta = *self.lru.meta(pfn);
        match meta.owner {
            Owner::File { file, index } => {
                let slot = &mut self.files[file.0 as usize];
                slot.pages.remove(&index);
                self.nr_file -= 1;
                if meta.test(lru::DIRTY) {
                    slot.dirty -= 1;
                    self.nr_dirty -= 1;
                }
                self.update_shadow_nodes(file, index..=index);
            }
            Owner::Anon { pid, vpn } => {
                self.processes[pid.0 as usize].pages.remove(&vpn);
                self.nr_anon -= 1;
            }
            Owner::None => return Ok(()),
        }
        self.lru.release(pfn);
        let handle = self.allocator.cpu(cpu)?;
        handle
            .free_pages(crate::Page::from_pfn(crate::Pfn(pfn)), crate::Order(0))
            .map_err(MmError::Free)
    }
}
