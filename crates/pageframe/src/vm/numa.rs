//! NUMA balancing: the per-task scanner that arms hinting faults
//! (task_tick_numa(), task_numa_work(), change_prot_numa()), its period
//! adaptation (task_scan_min/max/start(), update_task_scan_period()), the
//! fault statistics (task_numa_fault(), task_numa_placement()) and the
//! two-stage cpupid filter (should_numa_migrate_memory()) of
//! kernel/sched/fair.c.
//!
//! Not modelled: numa groups (no task shares memory here), moving tasks to
//! their preferred node (tasks stay on the CPU the caller gives them), and
//! memory tiering (mode 2).

use super::fault::FaultFlags;
use super::page_table::{Pte, CPUPID_PID_BITS, CPUPID_UNSET, PTE_PROTNONE};
use super::{Pid, Task, Vm};
use crate::error::Errno;
use crate::types::{CpuId, NodeId};

/// `NUMA_PERIOD_SLOTS`.
const NUMA_PERIOD_SLOTS: u64 = 10;
/// `NUMA_PERIOD_THRESHOLD`.
const NUMA_PERIOD_THRESHOLD: u64 = 7;
/// `MAX_SCAN_WINDOW` (MB per second).
const MAX_SCAN_WINDOW: u64 = 2560;
/// Pages of a PMD: scan windows end on a huge-page boundary.
const HPAGE_PAGES: u64 = 512;

/// `cpu_pid_to_cpupid()`.
pub fn cpu_pid_to_cpupid(cpu: CpuId, pid: Pid) -> u32 {
    ((cpu.0 as u32) << CPUPID_PID_BITS) | (pid.0 & ((1 << CPUPID_PID_BITS) - 1))
}

/// `cpupid_pid_unset()`: the pid bits are all ones.
pub fn cpupid_pid_unset(cpupid: u32) -> bool {
    cpupid & ((1 << CPUPID_PID_BITS) - 1) == (1 << CPUPID_PID_BITS) - 1
}

/// `cpupid_to_cpu()`.
pub fn cpupid_to_cpu(cpupid: u32) -> u32 {
    (cpupid >> CPUPID_PID_BITS) & 0xffff
}

/// `cpupid_match_pid()`.
pub fn cpupid_match_pid(pid: Pid, cpupid: u32) -> bool {
    cpupid & ((1 << CPUPID_PID_BITS) - 1) == pid.0 & ((1 << CPUPID_PID_BITS) - 1)
}

impl Vm<'_> {
    /// Records scanned pages per task for [`Vm::drain_marked`] (used by
    /// simulations that resolve hinting faults in batches).
    pub fn record_scans(&mut self, on: bool) {
        self.record_scans = on;
    }

    /// Moves the virtual pages the scanner armed in `pid` into `out`.
    pub fn drain_marked(&mut self, pid: Pid, out: &mut Vec<u64>) {
        if let Some(task) = self.tasks.get_mut(&pid) {
            out.append(&mut task.numa.marked);
        }
    }

    /// `task_nr_scan_windows()`: scan windows that cover the task's RSS.
    fn nr_scan_windows(&self, task: &Task) -> u64 {
        let nr_scan_pages = (self.config.scan_size_mb << (20 - self.page_shift())).max(1);
        let mut rss = task.mm.rss;
        if rss == 0 {
            rss = task.mm.vmas.values().map(|vma| vma.end - vma.start).sum();
        }
        rss.div_ceil(nr_scan_pages).max(1)
    }

    /// `task_scan_min()`.
    pub(crate) fn task_scan_min(&self, task: &Task) -> u64 {
        let scan_size = self.config.scan_size_mb.max(1);
        let windows = if scan_size < MAX_SCAN_WINDOW {
            MAX_SCAN_WINDOW / scan_size
        } else {
            1
        };
        let floor = 1000 / windows;
        (self.config.scan_period_min_ms / self.nr_scan_windows(task)).max(floor)
    }

    /// `task_scan_max()` (no numa group scaling).
    pub(crate) fn task_scan_max(&self, task: &Task) -> u64 {
        let smin = self.task_scan_min(task);
        (self.config.scan_period_max_ms / self.nr_scan_windows(task)).max(smin)
    }

    /// Runs the scheduler tick's NUMA part for every task at simulated time
    /// `now_ms` (tasks run all the time, so runtime is time since spawn).
    pub fn tick(&mut self, now_ms: u64) {
        self.now_ms = self.now_ms.max(now_ms);
        if self.config.mode == 0 {
            return;
        }
        let pids: Vec<Pid> = self.tasks.keys().copied().collect();
        for pid in pids {
            let mut task = self.tasks.remove(&pid).expect("listed");
            self.task_tick_numa(&mut task, now_ms);
            self.tasks.insert(pid, task);
        }
    }

    /// mirrors task_tick_numa(): start a scan when a scan period of runtime
    /// has passed and the address space's next scan is due.
    fn task_tick_numa(&mut self, task: &mut Task, now_ms: u64) {
        let runtime = now_ms.saturating_sub(task.start_ms);
        let period = task.numa.scan_period_ms;
        if runtime > task.numa.node_stamp_ms.saturating_add(period) {
            if task.numa.node_stamp_ms == 0 {
                task.numa.scan_period_ms = self.task_scan_min(task);
            }
            task.numa.node_stamp_ms = task.numa.node_stamp_ms.saturating_add(period);
            if now_ms >= task.mm.numa_next_scan_ms {
                self.task_numa_work(task, now_ms);
            }
        }
    }

    /// mirrors task_numa_work(): arm up to scan_size MB of the address space
    /// (8x that of virtual space), starting where the last scan stopped.
    fn task_numa_work(&mut self, task: &mut Task, now_ms: u64) {
        if now_ms < task.mm.numa_next_scan_ms {
            return;
        }
        if task.numa.scan_period_ms == 0 {
            task.numa.scan_period_max_ms = self.task_scan_max(task);
            task.numa.scan_period_ms = self.task_scan_min(task);
        }
        task.mm.numa_next_scan_ms = now_ms.saturating_add(task.numa.scan_period_ms);
        let mut pages = (self.config.scan_size_mb << (20 - self.page_shift())) as i64;
        let mut virtpages = pages * 8;
        let mut start = task.mm.numa_scan_offset;
        if task.mm.find_vma(start).is_none() && task.mm.vmas.range(start..).next().is_none() {
            task.mm.numa_scan_offset = 0;
            task.mm.numa_scan_seq += 1;
            start = 0;
        }
        let this_node = self.task_cpu_node(task.cpu);
        let vma_starts: Vec<u64> = task
            .mm
            .vmas
            .iter()
            .filter(|(_, vma)| vma.end > start)
            .map(|(at, _)| *at)
            .collect();
        for at in vma_starts {
            let vma_policy = task.mm.vmas[&at].policy;
            if !self.vma_policy(task, vma_policy).wants_mof() {
                continue;
            }
            let vma = task.mm.vmas.get_mut(&at).expect("listed");
            loop {
                start = start.max(vma.start);
                let end = (start + pages.max(0) as u64)
                    .next_multiple_of(HPAGE_PAGES)
                    .min(vma.end);
                let updates = change_prot_numa(
                    vma.ptes.range_mut(start, end),
                    this_node,
                    |pfn| self.pfn_node(crate::types::Pfn(pfn as u64)),
                    now_ms,
                    if self.record_scans {
                        Some(&mut task.numa.marked)
                    } else {
                        None
                    },
                );
                self.counters.numa_pte_updates += updates;
                if updates > 0 {
                    pages -= (end - start) as i64;
                }
                virtpages -= (end - start) as i64;
                start = end;
                if pages <= 0 || virtpages <= 0 {
                    task.mm.numa_scan_offset = start;
                    return;
                }
                if end == vma.end {
                    break;
                }
            }
        }
        // The whole address space was scanned: start over (reset_ptenuma_scan()).
        task.mm.numa_scan_offset = 0;
        task.mm.numa_scan_seq += 1;
    }

    /// mirrors should_numa_migrate_memory(): records this fault's cpupid in
    /// the page and decides whether a MORON migration may go ahead — early
    /// in a task's life, first and private faults move at once; after that
    /// a page moves only when its previous hinting fault came from the same
    /// node (the two-stage filter against migrating on one stray access).
    pub(crate) fn should_numa_migrate_memory(
        &self,
        pid: Pid,
        cpu: CpuId,
        preferred_nid: Option<NodeId>,
        scan_seq: u32,
        pte: &mut Pte,
    ) -> bool {
        let dst_nid = self.task_cpu_node(cpu);
        let this_cpupid = cpu_pid_to_cpupid(cpu, pid);
        let last_cpupid = std::mem::replace(&mut pte.last_cpupid, this_cpupid);
        if (preferred_nid.is_none() || scan_seq <= 4)
            && (cpupid_pid_unset(last_cpupid) || cpupid_match_pid(pid, last_cpupid))
        {
            return true;
        }
        if !cpupid_pid_unset(last_cpupid) {
            let last_cpu = CpuId(cpupid_to_cpu(last_cpupid) as u16);
            if last_cpu.index() < self.allocator.nr_cpus()
                && self.task_cpu_node(last_cpu) != dst_nid
            {
                return false;
            }
        }
        if cpupid_match_pid(pid, last_cpupid) {
            return true;
        }
        // A shared fault without a numa group: allowed.
        true
    }

    /// mirrors task_numa_fault(): account a hinting fault to the task and
    /// run placement (and scan period adaptation) once per scan pass.
    pub(crate) fn task_numa_fault(
        &mut self,
        task: &mut Task,
        last_cpupid: u32,
        mem_node: NodeId,
        flags: FaultFlags,
    ) {
        if self.config.mode == 0 {
            return;
        }
        let private = last_cpupid == CPUPID_UNSET || cpupid_match_pid(task.pid, last_cpupid);
        self.task_numa_placement(task);
        if flags.migrate_fail {
            task.numa.faults_locality[2] += 1;
        }
        task.numa.faults_buf[mem_node.index()][private as usize] += 1;
        task.numa.faults_locality[flags.local as usize] += 1;
    }

    /// mirrors task_numa_placement(): once per completed scan pass, decay
    /// the per-node fault counts, pick the preferred node, adapt the period.
    fn task_numa_placement(&mut self, task: &mut Task) {
        let seq = task.mm.numa_scan_seq;
        if task.numa.scan_seq == seq {
            return;
        }
        task.numa.scan_seq = seq;
        task.numa.scan_period_max_ms = self.task_scan_max(task);
        let mut fault_types = [0u64; 2];
        let mut max = (0u64, None);
        for node in 0..task.numa.faults_mem.len() {
            let mut faults = 0;
            for (private, total) in fault_types.iter_mut().enumerate() {
                let buffered = std::mem::take(&mut task.numa.faults_buf[node][private]);
                *total += buffered;
                let mem = &mut task.numa.faults_mem[node][private];
                *mem = *mem - *mem / 2 + buffered;
                faults += *mem;
            }
            if faults > max.0 {
                max = (faults, Some(NodeId(node as u16)));
            }
        }
        if max.0 > 0 {
            task.numa.preferred_nid = max.1;
        }
        self.update_task_scan_period(task, fault_types[0], fault_types[1]);
    }

    /// mirrors update_task_scan_period(): scan slower when faults are local
    /// or private (or migrations fail), faster when they are remote.
    fn update_task_scan_period(&mut self, task: &mut Task, shared: u64, private: u64) {
        let [remote, local, failed] = task.numa.faults_locality;
        if local + shared == 0 || failed > 0 {
            task.numa.scan_period_ms = task
                .numa
                .scan_period_max_ms
                .min(task.numa.scan_period_ms << 1);
            task.mm.numa_next_scan_ms = self.now_ms.saturating_add(task.numa.scan_period_ms);
            return;
        }
        let period_slot = task.numa.scan_period_ms.div_ceil(NUMA_PERIOD_SLOTS) as i64;
        let lr_ratio = local * NUMA_PERIOD_SLOTS / (local + remote);
        let ps_ratio = private * NUMA_PERIOD_SLOTS / (private + shared);
        let diff = if ps_ratio >= NUMA_PERIOD_THRESHOLD {
            (ps_ratio - NUMA_PERIOD_THRESHOLD).max(1) as i64 * period_slot
        } else if lr_ratio >= NUMA_PERIOD_THRESHOLD {
            (lr_ratio - NUMA_PERIOD_THRESHOLD).max(1) as i64 * period_slot
        } else {
            let ratio = lr_ratio.max(ps_ratio);
            -((NUMA_PERIOD_THRESHOLD - ratio) as i64) * period_slot
        };
        let min = self.task_scan_min(task) as i64;
        let max = (self.task_scan_max(task) as i64).max(min);
        task.numa.scan_period_ms = (task.numa.scan_period_ms as i64 + diff).clamp(min, max) as u64;
        task.numa.faults_locality = [0; 3];
    }

    /// Sets a task's scan state as if it had been running since `now_ms`
    /// (for tests that want a scan right away): the next tick scans.
    pub fn numa_scan_now(&mut self, pid: Pid, now_ms: u64) -> Result<(), Errno> {
        let mut task = self.tasks.remove(&pid).ok_or(Errno::ESRCH)?;
        task.mm.numa_next_scan_ms = now_ms;
        self.task_numa_work(&mut task, now_ms);
        self.tasks.insert(pid, task);
        Ok(())
    }
}

/// mirrors change_pte_range() with prot_numa: arms present, not yet armed
/// entries (never the zero page), skipping pages already on the node of a
/// single-threaded task's CPU; returns the number of entries changed.
fn change_prot_numa<'p>(
    ptes: impl Iterator<Item = (u64, &'p mut Pte)>,
    this_node: NodeId,
    node_of: impl Fn(u32) -> Option<NodeId>,
    now_ms: u64,
    mut marked: Option<&mut Vec<u64>>,
) -> u64 {
    let mut updates = 0;
    for (vpn, pte) in ptes {
        if !pte.is_present() || pte.is_protnone() {
            continue;
        }
        if node_of(pte.pfn) == Some(this_node) {
            continue;
        }
        pte.flags |= PTE_PROTNONE;
        pte.scan_time_ms = now_ms as u32;
        updates += 1;
        if let Some(list) = marked.as_deref_mut() {
            list.push(vpn);
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LocalPageAllocator, MachineDesc};

    /// The two-stage filter of should_numa_migrate_memory(), once a task is
    /// past its first scan passes and has a preferred node: a fault from a
    /// node other than the page's last faulting node only records itself;
    /// the second fault from the same node lets the page move.
    #[test]
    fn two_stage_filter() {
        let allocator =
            LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 4, 4).unwrap()).unwrap();
        let vm = Vm::new(&allocator, super::super::NumaBalancingConfig::default());
        let (pid, other) = (Pid(7), Pid(8));
        let mut pte = Pte::NONE;
        // Early in life, a first fault (unset cpupid) migrates at once.
        assert!(vm.should_numa_migrate_memory(pid, CpuId(3), None, 0, &mut pte));
        assert_eq!(pte.last_cpupid, cpu_pid_to_cpupid(CpuId(3), pid));
        // Later: last fault from node 1, this one from node 3 → not yet.
        pte.last_cpupid = cpu_pid_to_cpupid(CpuId(1), pid);
        assert!(!vm.should_numa_migrate_memory(pid, CpuId(3), Some(NodeId(3)), 5, &mut pte));
        // Second fault from node 3 → private and same node: migrate.
        assert!(vm.should_numa_migrate_memory(pid, CpuId(3), Some(NodeId(3)), 5, &mut pte));
        // Another task's fault from the same node: shared, no numa group → allowed.
        assert!(vm.should_numa_migrate_memory(other, CpuId(3), Some(NodeId(3)), 5, &mut pte));
        // Early in life but the last fault was another task's: the
        // node test decides (same node here → allowed, other node → not).
        pte.last_cpupid = cpu_pid_to_cpupid(CpuId(2), other);
        assert!(!vm.should_numa_migrate_memory(pid, CpuId(3), None, 0, &mut pte));
    }

    #[test]
    fn cpupid_packing() {
        let cpupid = cpu_pid_to_cpupid(CpuId(5), Pid(0x1234));
        assert_eq!(cpupid_to_cpu(cpupid), 5);
        assert!(cpupid_match_pid(Pid(0x34), cpupid));
        assert!(cpupid_pid_unset(CPUPID_UNSET));
        assert!(!cpupid_pid_unset(cpupid));
    }
}
