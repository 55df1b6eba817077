//! Page faults: a first read maps the shared zero page; a first write (or a
//! write over the zero page) allocates through the effective policy
//! (do_anonymous_page() / do_wp_page() → vma_alloc_folio()); a PROT_NONE entry is a NUMA
//! hinting fault (do_numa_page()), which may migrate the page
//! (migrate_misplaced_page()). Also the page replacement shared by every
//! migration (mbind, move_pages, migrate_pages).

use super::mempolicy::{self, MemPolicy, Mode};
use super::page_table::{Pte, PTE_PRESENT, PTE_PROTNONE, PTE_WRITTEN, PTE_ZERO};
use super::{Pid, Task, Vm};
use crate::error::Errno;
use crate::gfp::Gfp;
use crate::page_alloc::Page;
use crate::types::{CpuId, NodeId, Nodemask, Order, Pfn};

/// What an access did besides reading or writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The page was mapped and accessible.
    None,
    /// First touch: a page was allocated.
    FirstTouch,
    /// A read before any write: the shared zero page was mapped.
    ZeroPage,
    /// A NUMA hinting fault; `migrated_from` is the node the page left.
    Hint {
        /// The node the page was on before a migration, when it moved.
        migrated_from: Option<NodeId>,
    },
}

/// The outcome of one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The page's node after the access.
    pub node: NodeId,
    /// The page; `None` for the shared zero page (not a page of the machine).
    pub pfn: Option<Pfn>,
    /// The fault taken, if any.
    pub fault: FaultKind,
}

/// `numa_migrate_prep()`'s flags for task_numa_fault().
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FaultFlags {
    pub(crate) local: bool,
    pub(crate) migrated: bool,
    pub(crate) migrate_fail: bool,
}

impl Vm<'_> {
    /// The policy that applies at a VMA of a task (get_vma_policy(): the
    /// VMA's, else the task's, else the system default for the task's node).
    pub fn effective_policy(&self, pid: Pid, addr: u64) -> Result<MemPolicy, Errno> {
        let task = self.tasks.get(&pid).ok_or(Errno::ESRCH)?;
        let vma = task
            .mm
            .find_vma(addr >> self.page_shift())
            .ok_or(Errno::EFAULT)?;
        Ok(self.vma_policy(task, vma.policy))
    }

    pub(crate) fn vma_policy(&self, task: &Task, vma_policy: Option<MemPolicy>) -> MemPolicy {
        vma_policy
            .or(task.policy)
            .unwrap_or_else(|| MemPolicy::system_default(self.task_cpu_node(task.cpu)))
    }

    /// The node of the shared zero page: it lives in the kernel image, on
    /// the first node with memory.
    pub fn zero_page_node(&self) -> NodeId {
        self.mem_nodes.iter().next().unwrap_or(NodeId(0))
    }

    /// Reads (or writes) the byte at `addr` in task `pid`, faulting as the
    /// kernel would. EFAULT outside every VMA (the SIGSEGV case); ENOMEM when
    /// the policy's nodes have no page left (the VM_FAULT_OOM case).
    pub fn access(&mut self, pid: Pid, addr: u64, write: bool) -> Result<Access, Errno> {
        let vpn = addr >> self.page_shift();
        let zero_node = self.zero_page_node();
        // Fast path: mapped and accessible — no fault, nothing to change.
        let zero_page_read = {
            let task = self.tasks.get_mut(&pid).ok_or(Errno::ESRCH)?;
            let vma = task.mm.find_vma_mut(vpn).ok_or(Errno::EFAULT)?;
            match vma.ptes.get_mut(vpn) {
                Some(pte) if pte.is_present() && !pte.is_protnone() => {
                    if write {
                        pte.flags |= PTE_WRITTEN;
                    }
                    let pfn = Pfn(pte.pfn as u64);
                    let node = self.pfn_node(pfn).expect("a mapped page is memory");
                    return Ok(Access {
                        node,
                        pfn: Some(pfn),
                        fault: FaultKind::None,
                    });
                }
                Some(pte) if pte.is_zero_page() && !write => {
                    return Ok(Access {
                        node: zero_node,
                        pfn: None,
                        fault: FaultKind::None,
                    });
                }
                Some(_) => false,
                None => !write,
            }
        };
        if zero_page_read {
            // do_anonymous_page() on a read: map the zero page, allocate nothing.
            let task = self.tasks.get_mut(&pid).expect("looked up above");
            let vma = task.mm.find_vma_mut(vpn).expect("looked up above");
            vma.ptes.insert(
                vpn,
                Pte {
                    flags: PTE_ZERO,
                    ..Pte::NONE
                },
            );
            self.counters.pgfault += 1;
            return Ok(Access {
                node: zero_node,
                pfn: None,
                fault: FaultKind::ZeroPage,
            });
        }
        let mut task = self.tasks.remove(&pid).expect("looked up above");
        let result = if task.mm.pte(vpn).is_some_and(Pte::is_present) {
            Ok(self.do_numa_page(&mut task, vpn, write))
        } else {
            self.do_anonymous_page(&mut task, vpn, write)
        };
        self.tasks.insert(pid, task);
        result
    }

    /// First write of an anonymous page (do_anonymous_page(), or
    /// do_wp_page() over the zero page: both allocate through the policy).
    fn do_anonymous_page(
        &mut self,
        task: &mut Task,
        vpn: u64,
        write: bool,
    ) -> Result<Access, Errno> {
        let vma = task.mm.find_vma(vpn).expect("checked by the caller");
        let policy = self.vma_policy(task, vma.policy);
        let offset = vma.pgoff + (vpn - vma.start);
        let pfn = self.alloc_for_policy(&policy, task.cpu, offset)?;
        self.counters.pgfault += 1;
        let vma = task.mm.find_vma_mut(vpn).expect("checked by the caller");
        vma.ptes.insert(
            vpn,
            Pte {
                pfn: pfn.0 as u32,
                flags: PTE_PRESENT | if write { PTE_WRITTEN } else { 0 },
                ..Pte::NONE
            },
        );
        task.mm.rss += 1;
        self.pages_mapped += 1;
        self.pages_allocated += 1;
        Ok(Access {
            node: self.pfn_node(pfn).expect("an allocated page is memory"),
            pfn: Some(pfn),
            fault: FaultKind::FirstTouch,
        })
    }

    /// Allocates the page a policy wants for interleave offset `offset`
    /// (mirrors vma_alloc_folio(): interleave by offset, PREFERRED_MANY
    /// with a no-reclaim try on its nodes first, else policy_node() and
    /// policy_nodemask() through the preferred node's zonelist).
    pub(crate) fn alloc_for_policy(
        &self,
        policy: &MemPolicy,
        cpu: CpuId,
        offset: u64,
    ) -> Result<Pfn, Errno> {
        let handle = self.allocator.cpu(cpu).map_err(|_| Errno::EINVAL)?;
        let local = self.task_cpu_node(cpu);
        let gfp = Gfp::HIGHUSER_MOVABLE;
        let order = Order(0);
        let page = match policy.mode {
            Mode::Interleave | Mode::WeightedInterleave => {
                let node = self.interleave_node(policy, offset).unwrap_or(local);
                handle.alloc_pages(gfp, order, node)
            }
            Mode::PreferredMany => {
                let first_try = (gfp | Gfp::NOWARN) - Gfp::DIRECT_RECLAIM - Gfp::NOFAIL;
                let preferred = policy.home_node.unwrap_or(local);
                handle
                    .alloc_pages_nodemask(first_try, order, preferred, &policy.nodes)
                    .or_else(|_| handle.alloc_pages(gfp, order, preferred))
            }
            _ => match mempolicy::policy_target(policy, local) {
                (node, Some(mask)) => handle.alloc_pages_nodemask(gfp, order, node, &mask),
                (node, None) => handle.alloc_pages(gfp, order, node),
            },
        };
        page.map(Page::pfn).map_err(|_| Errno::ENOMEM)
    }

    /// The interleave node of a page offset (offset_il_node(), or the
    /// weighted walk for WEIGHTED_INTERLEAVE).
    pub(crate) fn interleave_node(&self, policy: &MemPolicy, offset: u64) -> Option<NodeId> {
        match policy.mode {
            Mode::WeightedInterleave => {
                mempolicy::weighted_nth_node(&policy.nodes, &self.interleave_weights, offset)
            }
            _ => mempolicy::nth_node(&policy.nodes, offset),
        }
    }

    /// The node of `nodes` nearest to `from` by SLIT distance, lowest id on
    /// a tie (the first zone of `from`'s zonelist inside the mask).
    pub(crate) fn nearest_node(&self, from: NodeId, nodes: &Nodemask) -> Option<NodeId> {
        let distance = &self.allocator.layout().distance;
        nodes
            .iter()
            .filter(|node| self.mem_nodes.contains(*node))
            .min_by_key(|node| (distance[from.index()][node.index()], node.0))
    }

    /// A NUMA hinting fault (mirrors do_numa_page() with numa_migrate_prep()
    /// and mpol_misplaced()).
    fn do_numa_page(&mut self, task: &mut Task, vpn: u64, write: bool) -> Access {
        self.counters.pgfault += 1;
        self.counters.numa_hint_faults += 1;
        let this_node = self.task_cpu_node(task.cpu);
        let vma = task.mm.find_vma(vpn).expect("checked by the caller");
        let policy = self.vma_policy(task, vma.policy);
        let offset = vma.pgoff + (vpn - vma.start);
        let pte = *vma.ptes.get(vpn).expect("checked by the caller");
        let mut page_node = self.pfn_node(Pfn(pte.pfn as u64)).expect("mapped page");
        let mut flags = FaultFlags::default();
        if page_node == this_node {
            self.counters.numa_hint_faults_local += 1;
            flags.local = true;
        }
        let last_cpupid = pte.last_cpupid;
        let interleave = self.interleave_node(&policy, offset);
        let mut target =
            mempolicy::mpol_misplaced_target(&policy, page_node, this_node, interleave, |nodes| {
                self.nearest_node(this_node, nodes)
            });
        if let Some((_, true)) = target {
            let vma = task.mm.find_vma_mut(vpn).expect("checked by the caller");
            let pte = vma.ptes.get_mut(vpn).expect("checked by the caller");
            if !self.should_numa_migrate_memory(
                task.pid,
                task.cpu,
                task.numa.preferred_nid,
                task.numa.scan_seq,
                pte,
            ) {
                target = None;
            }
        }
        let mut migrated_from = None;
        if let Some((node, _)) = target.filter(|(node, _)| *node != page_node) {
            let vma = task.mm.find_vma_mut(vpn).expect("checked by the caller");
            let pte = vma.ptes.get_mut(vpn).expect("checked by the caller");
            if self.migrate_misplaced_page(task.cpu, pte, node) {
                migrated_from = Some(page_node);
                page_node = node;
                flags.migrated = true;
                task.numa.pages_migrated += 1;
            } else {
                flags.migrate_fail = true;
            }
        }
        let vma = task.mm.find_vma_mut(vpn).expect("checked by the caller");
        let pte = vma.ptes.get_mut(vpn).expect("checked by the caller");
        pte.flags &= !PTE_PROTNONE;
        if write {
            pte.flags |= PTE_WRITTEN;
        }
        let pfn = Pfn(pte.pfn as u64);
        self.task_numa_fault(task, last_cpupid, page_node, flags);
        Access {
            node: page_node,
            pfn: Some(pfn),
            fault: FaultKind::Hint { migrated_from },
        }
    }

    /// True when the target node has room to take `nr_pages` and stay above
    /// its high watermark in some zone (migrate_balanced_pgdat()).
    pub(crate) fn migrate_balanced(&self, node: NodeId, nr_pages: u64) -> bool {
        self.node_zones[node.index()]
            .iter()
            .any(|&(zone, reserve)| {
                self.allocator
                    .zone_free_pages(zone)
                    .is_some_and(|(free, marks)| free > marks.high + nr_pages + reserve)
            })
    }

    /// Moves a misplaced page to `node` (migrate_misplaced_page()): refuses
    /// a node near its high watermark, allocates with THISNODE and no
    /// reclaim, copies and remaps. Counts numa_pages_migrated and
    /// pgmigrate_success/fail.
    fn migrate_misplaced_page(&mut self, cpu: CpuId, pte: &mut Pte, node: NodeId) -> bool {
        if !self.migrate_balanced(node, 1) {
            return false;
        }
        let gfp =
            (Gfp::HIGHUSER_MOVABLE | Gfp::THISNODE | Gfp::NOMEMALLOC | Gfp::NORETRY | Gfp::NOWARN)
                - Gfp::RECLAIM;
        if self.migrate_page(cpu, pte, gfp, node, None) {
            self.counters.numa_pages_migrated += 1;
            true
        } else {
            false
        }
    }

    /// Replaces the page of `pte` by a new one from `node` (or `nodemask`):
    /// allocate, copy (nothing to copy in simulation), remap, free the old
    /// page. Counts pgmigrate_success or pgmigrate_fail.
    pub(crate) fn migrate_page(
        &mut self,
        cpu: CpuId,
        pte: &mut Pte,
        gfp: Gfp,
        node: NodeId,
        nodemask: Option<&Nodemask>,
    ) -> bool {
        let handle = self.allocator.cpu(cpu).expect("a task's CPU exists");
        let new = match nodemask {
            Some(mask) => handle.alloc_pages_nodemask(gfp, Order(0), node, mask),
            None => handle.alloc_pages(gfp, Order(0), node),
        };
        let Ok(new) = new else {
            self.counters.pgmigrate_fail += 1;
            return false;
        };
        handle
            .free_pages(Page::from_pfn(Pfn(pte.pfn as u64)), Order(0))
            .expect("a mapped page is an allocated order-0 page");
        pte.pfn = new.pfn().0 as u32;
        // A migrated page keeps its last cpupid (folio_migrate_flags()).
        self.counters.pgmigrate_success += 1;
        true
    }
}
