//! The vm layer: simulated tasks with address spaces, VMAs and page tables
//! over a [`LocalPageAllocator`]; first-touch faults through the effective
//! memory policy; NUMA balancing (scanner, hinting faults, misplaced-page
//! migration); the memory-policy calls with Linux errno values.
//!
//! Owns: tasks ([`Task`]), their address spaces ([`mm::Mm`]), page-table
//! entries with per-page side state (PROT_NONE, last cpupid, scan time) and
//! the NUMA counters. Does not own: physical pages — every page comes from
//! and returns to the page allocator through its public API (allocation with
//! a nodemask or THISNODE, free, `zone_free_pages` for the watermark check);
//! the memmap record is never touched, only read in `check_invariants`.
//!
//! One task per address space (single-threaded processes): the kernel's
//! per-mm scan state and per-task fault statistics then coincide.
//!
//! Every call that fails leaves the vm as it was, except where Linux itself
//! changes state before failing (a `move_pages` stopped by a bad node has
//! moved the pages before it; an `mbind` whose migration fails has
//! installed its policy; a `set_mempolicy_home_node` stopped by EOPNOTSUPP
//! keeps the home nodes it set on the VMAs before).
//!
//! Invariants (checked by [`Vm::check_invariants`]):
//! - every present PTE maps a distinct PFN whose memmap record is an
//!   allocated order-0 head: `mapped PTEs == pages_mapped`;
//! - `pages_allocated − pages_freed == pages_mapped` (pages are conserved);
//! - PROT_NONE ⇒ present; zero-page entries are not present; VMAs are
//!   disjoint, sorted, below TASK_SIZE, and hold only entries inside them.
//!
//! Lock order: none; the simulator is single-threaded (`&mut self`).
//!
//! ```
//! use pageframe::vm::{NumaBalancingConfig, Vm};
//! use pageframe::{CpuId, LocalPageAllocator, MachineDesc, NodeId};
//!
//! let allocator = LocalPageAllocator::boot(&MachineDesc::uniform(128 << 20, 2, 2)?)?;
//! let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
//! let pid = vm.spawn(CpuId(1), &[], 0)?;
//! let addr = vm.mmap(pid, 4 * 4096)?;
//! // First touch with the default policy: the page is on the CPU's node.
//! let access = vm.access(pid, addr, true)?;
//! assert_eq!(access.node, NodeId(1));
//! vm.check_invariants()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod fault;
mod home_node;
mod invariants;
pub mod mempolicy;
mod migrate;
mod mm;
mod nodestring;
mod numa;
mod page_table;
mod syscalls;
mod user_nodes;
mod vmstat;

use std::collections::BTreeMap;

use crate::error::Errno;
use crate::page_alloc::LocalPageAllocator;
use crate::types::{CpuId, NodeId, Nodemask, Pfn, ZoneType};
pub use fault::{Access, FaultKind};
use mempolicy::MemPolicy;
pub use mm::{Mm, Vma, TASK_SIZE};
pub use nodestring::{format_nodestring, parse_nodestring, NodestringError};
pub use page_table::{PageTable, Pte, PTES_PER_TABLE};
pub use user_nodes::UserNodemask;

/// A process id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pid(pub u32);

/// `kernel.numa_balancing` and the `numa_balancing` debugfs knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumaBalancingConfig {
    /// 0 off, 1 normal (2, memory tiering, is not modelled: EINVAL).
    pub mode: u8,
    /// `scan_delay_ms`: the first scan of a task waits this long.
    pub scan_delay_ms: u64,
    /// `scan_period_min_ms`.
    pub scan_period_min_ms: u64,
    /// `scan_period_max_ms`.
    pub scan_period_max_ms: u64,
    /// `scan_size_mb`: address space marked per scan.
    pub scan_size_mb: u64,
}

impl NumaBalancingConfig {
    /// The configuration with each knob cut to what the kernel can hold:
    /// the `numa_balancing` sysctls are `unsigned int`, so delays, periods
    /// and the scan size are at most `u32::MAX` (a larger value would
    /// overflow the scan-time and page-count arithmetic).
    pub fn clamped(self) -> NumaBalancingConfig {
        let cap = |value: u64| value.min(u64::from(u32::MAX));
        NumaBalancingConfig {
            mode: self.mode,
            scan_delay_ms: cap(self.scan_delay_ms),
            scan_period_min_ms: cap(self.scan_period_min_ms),
            scan_period_max_ms: cap(self.scan_period_max_ms),
            scan_size_mb: cap(self.scan_size_mb),
        }
    }
}

impl Default for NumaBalancingConfig {
    /// The kernel's defaults, balancing on.
    fn default() -> NumaBalancingConfig {
        NumaBalancingConfig {
            mode: 1,
            scan_delay_ms: 1000,
            scan_period_min_ms: 1000,
            scan_period_max_ms: 60000,
            scan_size_mb: 256,
        }
    }
}

/// The vm layer's counters, under their /proc/vmstat names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VmCounters {
    /// PTEs made PROT_NONE by the scanner.
    pub numa_pte_updates: u64,
    /// NUMA hinting faults.
    pub numa_hint_faults: u64,
    /// Hinting faults on a page of the faulting CPU's node.
    pub numa_hint_faults_local: u64,
    /// Pages migrated by NUMA balancing.
    pub numa_pages_migrated: u64,
    /// Pages migrated, by any cause.
    pub pgmigrate_success: u64,
    /// Pages that failed to migrate.
    pub pgmigrate_fail: u64,
    /// Page faults (first touch and hinting).
    pub pgfault: u64,
}

/// NUMA-balancing state of one task (the `numa_*` fields of task_struct).
#[derive(Clone, Debug, Default)]
pub struct TaskNuma {
    /// Runtime at which the next scan period starts (`node_stamp`).
    pub node_stamp_ms: u64,
    /// `numa_scan_period`.
    pub scan_period_ms: u64,
    /// `numa_scan_period_max`.
    pub scan_period_max_ms: u64,
    /// `numa_scan_seq` as last seen by placement.
    pub scan_seq: u32,
    /// `numa_preferred_nid`.
    pub preferred_nid: Option<NodeId>,
    /// Decayed memory faults per node, [shared, private] (`NUMA_MEM`).
    pub faults_mem: Vec<[u64; 2]>,
    /// Faults since the last placement, per node, [shared, private] (`NUMA_MEMBUF`).
    pub faults_buf: Vec<[u64; 2]>,
    /// `numa_faults_locality`: [remote, local, migrate-failed].
    pub faults_locality: [u64; 3],
    /// Pages this task migrated.
    pub pages_migrated: u64,
    /// Virtual pages the scanner made PROT_NONE since the last
    /// [`Vm::drain_marked`] (recorded only when [`Vm::record_scans`] is on).
    pub marked: Vec<u64>,
}

/// A simulated task: one thread with its own address space.
#[derive(Clone, Debug)]
pub struct Task {
    /// Its pid.
    pub pid: Pid,
    /// The CPU it runs on.
    pub cpu: CpuId,
    /// CPUs it may run on (`sched_setaffinity`).
    pub cpus_allowed: Vec<CpuId>,
    /// Nodes its cpuset allows (`mems_allowed`).
    pub mems_allowed: Nodemask,
    /// Its task policy; `None` is the default.
    pub policy: Option<MemPolicy>,
    /// Last interleave node (`il_prev`).
    pub il_prev: Option<NodeId>,
    /// Has CAP_SYS_NICE (may MOVE_ALL, move others' pages).
    pub cap_sys_nice: bool,
    /// Simulated time at which it was created (its runtime starts there).
    pub start_ms: u64,
    /// Its address space.
    pub mm: Mm,
    /// NUMA balancing state.
    pub numa: TaskNuma,
}

/// The vm of one simulated machine.
pub struct Vm<'a> {
    pub(crate) allocator: &'a LocalPageAllocator,
    pub(crate) tasks: BTreeMap<Pid, Task>,
    next_pid: u32,
    pub(crate) config: NumaBalancingConfig,
    pub(crate) counters: VmCounters,
    /// Present PFN ranges `[start, end)` and their node, sorted.
    node_spans: Vec<(u64, u64, NodeId)>,
    /// Per node: (zone index, lowmem_reserve against ZONE_MOVABLE), highest zone first.
    pub(crate) node_zones: Vec<Vec<(usize, u64)>>,
    /// Nodes with memory (`N_MEMORY`).
    pub(crate) mem_nodes: Nodemask,
    /// Pages the allocator manages (`totalram_pages()`), for overcommit.
    pub(crate) totalram_pages: u64,
    /// Weighted-interleave weights per node (sysfs `weighted_interleave/nodeN`).
    pub(crate) interleave_weights: Vec<u8>,
    pub(crate) pages_mapped: u64,
    pub(crate) pages_allocated: u64,
    pub(crate) pages_freed: u64,
    pub(crate) record_scans: bool,
    /// Simulated time of the last [`Vm::tick`] (`jiffies`, in ms).
    pub(crate) now_ms: u64,
}

impl<'a> Vm<'a> {
    /// A vm over `allocator` with NUMA balancing configured as `config`
    /// ([`NumaBalancingConfig::clamped`]). Simulated time may run to
    /// `u64::MAX`: scan times past it saturate.
    pub fn new(allocator: &'a LocalPageAllocator, config: NumaBalancingConfig) -> Vm<'a> {
        let config = config.clamped();
        let layout = allocator.layout();
        let mut node_spans = Vec::new();
        let mut node_zones = vec![Vec::new(); layout.nodes.len()];
        let mut mem_nodes = Nodemask::NONE;
        let snapshots = allocator.zone_snapshots();
        for (index, zone) in layout.zones().enumerate() {
            for range in &zone.present {
                node_spans.push((range.start.0, range.end.0, zone.node));
            }
            if zone.is_populated() {
                mem_nodes.set(zone.node);
                let reserve = snapshots.get(index).map_or(0, |snapshot| {
                    snapshot.lowmem_reserve[ZoneType::Movable.index()]
                });
                node_zones[zone.node.index()].insert(0, (index, reserve));
            }
        }
        node_spans.sort_unstable();
        let totalram_pages = snapshots.iter().map(|snapshot| snapshot.managed).sum();
        Vm {
            allocator,
            tasks: BTreeMap::new(),
            next_pid: 1,
            config,
            counters: VmCounters::default(),
            node_spans,
            node_zones,
            mem_nodes,
            totalram_pages,
            interleave_weights: vec![1; layout.nodes.len()],
            pages_mapped: 0,
            pages_allocated: 0,
            pages_freed: 0,
            record_scans: false,
            now_ms: 0,
        }
    }

    /// The page allocator.
    pub fn allocator(&self) -> &'a LocalPageAllocator {
        self.allocator
    }

    /// The NUMA balancing configuration.
    pub fn config(&self) -> NumaBalancingConfig {
        self.config
    }

    /// Sets `kernel.numa_balancing` (0 or 1; anything else is EINVAL here).
    pub fn set_numa_balancing(&mut self, mode: u8) -> Result<(), Errno> {
        if mode > 1 {
            return Err(Errno::EINVAL);
        }
        self.config.mode = mode;
        Ok(())
    }

    /// The counters.
    pub fn counters(&self) -> VmCounters {
        self.counters
    }

    /// Nodes with memory.
    pub fn mem_nodes(&self) -> Nodemask {
        self.mem_nodes
    }

    /// Pages mapped by every task.
    pub fn pages_mapped(&self) -> u64 {
        self.pages_mapped
    }

    /// The node of a CPU; `None` for a CPU the machine does not have.
    pub fn cpu_node(&self, cpu: CpuId) -> Option<NodeId> {
        self.allocator.layout().cpu_node.get(cpu.index()).copied()
    }

    /// The node of a task's CPU (checked when the task was spawned or
    /// moved: [`Vm::spawn`], [`Vm::set_cpu`]).
    pub(crate) fn task_cpu_node(&self, cpu: CpuId) -> NodeId {
        self.allocator.layout().cpu_node[cpu.index()]
    }

    /// The node of a PFN; `None` for a hole.
    pub fn pfn_node(&self, pfn: Pfn) -> Option<NodeId> {
        let index = self.node_spans.partition_point(|span| span.1 <= pfn.0);
        self.node_spans
            .get(index)
            .filter(|span| span.0 <= pfn.0)
            .map(|span| span.2)
    }

    /// Creates a task on `cpu`, allowed on `cpus_allowed` (every CPU when
    /// empty) and every node with memory, at simulated time `now_ms`
    /// (mirrors fork + init_numa_balancing()).
    pub fn spawn(&mut self, cpu: CpuId, cpus_allowed: &[CpuId], now_ms: u64) -> Result<Pid, Errno> {
        let nr_cpus = self.allocator.nr_cpus();
        if cpu.index() >= nr_cpus || cpus_allowed.iter().any(|cpu| cpu.index() >= nr_cpus) {
            return Err(Errno::EINVAL);
        }
        let cpus_allowed = if cpus_allowed.is_empty() {
            (0..nr_cpus).map(|cpu| CpuId(cpu as u16)).collect()
        } else {
            cpus_allowed.to_vec()
        };
        if !cpus_allowed.contains(&cpu) {
            return Err(Errno::EINVAL);
        }
        let pid = Pid(self.next_pid);
        self.next_pid += 1;
        let nr_nodes = self.allocator.nr_nodes();
        let task = Task {
            pid,
            cpu,
            cpus_allowed,
            mems_allowed: self.mem_nodes,
            policy: None,
            il_prev: None,
            cap_sys_nice: false,
            start_ms: now_ms,
            mm: Mm::new(now_ms.saturating_add(self.config.scan_delay_ms)),
            numa: TaskNuma {
                scan_period_ms: self.config.scan_delay_ms,
                faults_mem: vec![[0; 2]; nr_nodes],
                faults_buf: vec![[0; 2]; nr_nodes],
                ..TaskNuma::default()
            },
        };
        self.tasks.insert(pid, task);
        Ok(pid)
    }

    /// A task.
    pub fn task(&self, pid: Pid) -> Option<&Task> {
        self.tasks.get(&pid)
    }

    /// The pids of every task, lowest first.
    pub fn pids(&self) -> Vec<Pid> {
        self.tasks.keys().copied().collect()
    }

    /// Gives a task CAP_SYS_NICE (or takes it away).
    pub fn set_capable(&mut self, pid: Pid, capable: bool) -> Result<(), Errno> {
        self.tasks.get_mut(&pid).ok_or(Errno::ESRCH)?.cap_sys_nice = capable;
        Ok(())
    }

    /// Moves a task to another CPU of its affinity (`sched_setaffinity` +
    /// migration); EINVAL when not allowed.
    pub fn set_cpu(&mut self, pid: Pid, cpu: CpuId) -> Result<(), Errno> {
        let task = self.tasks.get_mut(&pid).ok_or(Errno::ESRCH)?;
        if !task.cpus_allowed.contains(&cpu) {
            return Err(Errno::EINVAL);
        }
        task.cpu = cpu;
        Ok(())
    }

    /// Restricts a task's cpuset memory nodes (`cpuset.mems`).
    pub fn set_mems_allowed(&mut self, pid: Pid, mems: Nodemask) -> Result<(), Errno> {
        let mems = mempolicy::and(&mems, &self.mem_nodes);
        if mems.is_empty() {
            return Err(Errno::EINVAL);
        }
        self.tasks.get_mut(&pid).ok_or(Errno::ESRCH)?.mems_allowed = mems;
        Ok(())
    }

    /// Ends a task: unmaps its whole address space, freeing every page.
    pub fn exit(&mut self, pid: Pid) -> Result<(), Errno> {
        let mut task = self.tasks.remove(&pid).ok_or(Errno::ESRCH)?;
        let ranges: Vec<(u64, u64)> = task
            .mm
            .vmas
            .values()
            .map(|vma| (vma.start, vma.end))
            .collect();
        for (start, end) in ranges {
            self.unmap_range(&mut task, start, end);
        }
        Ok(())
    }

    /// Sets the weighted-interleave weight of a node (1–255; 0 is EINVAL).
    pub fn set_interleave_weight(&mut self, node: NodeId, weight: u32) -> Result<(), Errno> {
        if node.index() >= self.interleave_weights.len() {
            return Err(Errno::ENODEV);
        }
        if weight == 0 || weight > 255 {
            return Err(Errno::EINVAL);
        }
        self.interleave_weights[node.index()] = weight as u8;
        Ok(())
    }
}
