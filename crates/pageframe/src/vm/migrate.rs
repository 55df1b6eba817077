//! The page-moving memory-policy calls: `migrate_pages` (mirrors
//! kernel_migrate_pages() / do_migrate_pages(), mm/mempolicy.c) and
//! `move_pages` (mirrors kernel_move_pages(), do_pages_move(),
//! do_pages_stat_array(), mm/migrate.c), Linux 6.12; plus the page
//! replacement of one virtual page they and `mbind` share.
//!
//! Pages never written map the shared zero page: it is not migrated, and
//! `move_pages` reports it as -EFAULT, as Linux does.
//!
//! Not modelled: a batch whose migration fails stops `move_pages` in Linux
//! with the count of pages left; here each page that cannot move gets
//! -ENOMEM and the call goes on (pages only fail to move when a node is
//! full, which the kernel-compared cases never reach).

use super::mempolicy::{self, MPOL_MF_MOVE, MPOL_MF_MOVE_ALL};
use super::user_nodes::get_nodes;
use super::{Pid, Task, Vm};
use crate::error::Errno;
use crate::gfp::Gfp;
use crate::types::{NodeId, Nodemask, Pfn};

impl Vm<'_> {
    /// `migrate_pages(pid, maxnode, old_nodes, new_nodes)` called by
    /// `caller`; returns the number of pages that could not be moved.
    pub fn migrate_pages(
        &mut self,
        caller: Pid,
        pid: u32,
        maxnode: u64,
        old_nodes: Option<&[u64]>,
        new_nodes: Option<&[u64]>,
    ) -> Result<u64, Errno> {
        let old = get_nodes(old_nodes, maxnode)?;
        let new_user = get_nodes(new_nodes, maxnode)?;
        let current = self.tasks.get(&caller).ok_or(Errno::ESRCH)?;
        let (capable, current_mems) = (current.cap_sys_nice, current.mems_allowed);
        let target = if pid == 0 { caller } else { Pid(pid) };
        let task = self.tasks.get(&target).ok_or(Errno::ESRCH)?;
        // ptrace_may_access(): modelled as "itself, or CAP_SYS_NICE".
        if target != caller && !capable {
            return Err(Errno::EPERM);
        }
        let subset = new_user.iter().all(|node| {
            node < crate::types::MAX_NUMNODES && task.mems_allowed.contains(NodeId(node as u16))
        });
        if !subset && !capable {
            return Err(Errno::EPERM);
        }
        let new: Nodemask = mempolicy::and(&new_user.to_nodemask(), &current_mems);
        if new.is_empty() {
            return Err(Errno::EINVAL);
        }
        // do_migrate_pages(): one source node at a time, each onto the
        // node of the same rank in `new` (node_remap()), preferring a
        // source whose destination is not itself still to be emptied.
        let old_list: Vec<usize> = old.iter().collect();
        let new_list: Vec<NodeId> = new.iter().collect();
        let mut pending = old_list.clone();
        let mut task = self.tasks.remove(&target).expect("looked up above");
        let mut failed = 0;
        while !pending.is_empty() {
            let mut chosen = None;
            for &source in &pending {
                let in_new =
                    source < crate::types::MAX_NUMNODES && new.contains(NodeId(source as u16));
                if old_list.len() != new_list.len() && in_new {
                    continue;
                }
                let rank = old_list
                    .iter()
                    .position(|node| *node == source)
                    .expect("listed");
                let dest = new_list[rank % new_list.len()];
                if dest.index() == source {
                    continue;
                }
                chosen = Some((source, dest));
                if !pending.contains(&dest.index()) {
                    break;
                }
            }
            let Some((source, dest)) = chosen else {
                break;
            };
            pending.retain(|node| *node != source);
            failed += self.migrate_node_pages(&mut task, source, dest);
        }
        self.tasks.insert(target, task);
        Ok(failed)
    }

    /// `move_pages(pid, count, pages, nodes, status, flags)` called by
    /// `caller`. With `nodes` `None` it only queries: each status is the
    /// page's node, -EFAULT (no VMA, or the zero page) or -ENOENT (never
    /// touched). Otherwise each page moves to its node; status is the node
    /// reached or a negative errno. A node that is out of range or has no
    /// memory (ENODEV) or is outside the target's cpuset (EACCES) stops the
    /// call with that error, the pages before it already handled and their
    /// statuses filled (as Linux). Returns the number of pages that failed
    /// to migrate (per-page errors such as -EFAULT are only in `status`).
    pub fn move_pages(
        &mut self,
        caller: Pid,
        pid: u32,
        pages: &[u64],
        nodes: Option<&[i32]>,
        status: &mut [i32],
        flags: u32,
    ) -> Result<u64, Errno> {
        if flags & !(MPOL_MF_MOVE | MPOL_MF_MOVE_ALL) != 0 {
            return Err(Errno::EINVAL);
        }
        let current = self.tasks.get(&caller).ok_or(Errno::ESRCH)?;
        if flags & MPOL_MF_MOVE_ALL != 0 && !current.cap_sys_nice {
            return Err(Errno::EPERM);
        }
        let capable = current.cap_sys_nice;
        let target = if pid == 0 { caller } else { Pid(pid) };
        let task = self.tasks.get(&target).ok_or(Errno::ESRCH)?;
        if target != caller && !capable {
            return Err(Errno::EPERM);
        }
        if status.len() < pages.len() || nodes.is_some_and(|nodes| nodes.len() < pages.len()) {
            return Err(Errno::EFAULT);
        }
        let shift = self.page_shift();
        let Some(nodes) = nodes else {
            // do_pages_stat_array().
            for (addr, status) in pages.iter().zip(status.iter_mut()) {
                let vpn = addr >> shift;
                *status = match task.mm.find_vma(vpn) {
                    None => -Errno::EFAULT.code(),
                    Some(vma) => match vma.ptes.get(vpn) {
                        None => -Errno::ENOENT.code(),
                        Some(pte) if pte.is_zero_page() => -Errno::EFAULT.code(),
                        Some(pte) => {
                            i32::from(self.pfn_node(Pfn(u64::from(pte.pfn))).expect("mapped").0)
                        }
                    },
                };
            }
            return Ok(0);
        };
        // do_pages_move(): page by page, a bad node stopping the call.
        let task_nodes = task.mems_allowed;
        let mut task = self.tasks.remove(&target).expect("looked up above");
        let mut not_moved = 0;
        let mut outcome = Ok(());
        for ((addr, &node), status) in pages.iter().zip(nodes).zip(status.iter_mut()) {
            let node = match usize::try_from(node) {
                Ok(node)
                    // Nodes up to the ABI's MAX_NUMNODES pass the range check but
                    // have no memory past the machine's nodes: ENODEV either way.
                    if node < crate::types::MAX_NUMNODES
                        && self.mem_nodes.contains(NodeId(node as u16)) =>
                {
                    NodeId(node as u16)
                }
                _ => {
                    outcome = Err(Errno::ENODEV);
                    break;
                }
            };
            if !task_nodes.contains(node) {
                outcome = Err(Errno::EACCES);
                break;
            }
            let vpn = addr >> shift;
            let pte = match task.mm.find_vma(vpn) {
                None => {
                    *status = -Errno::EFAULT.code();
                    continue;
                }
                Some(vma) => vma.ptes.get(vpn).copied(),
            };
            *status = match pte {
                None => -Errno::ENOENT.code(),
                Some(pte) if pte.is_zero_page() => -Errno::EFAULT.code(),
                Some(pte) => {
                    let current_node = self.pfn_node(Pfn(u64::from(pte.pfn))).expect("mapped");
                    let gfp = Gfp::HIGHUSER_MOVABLE | Gfp::THISNODE;
                    if current_node == node || self.migrate_vpn(&mut task, vpn, gfp, node, None) {
                        i32::from(node.0)
                    } else {
                        not_moved += 1;
                        -Errno::ENOMEM.code()
                    }
                }
            };
        }
        self.tasks.insert(target, task);
        outcome.map(|()| not_moved)
    }

    /// mirrors migrate_to_node(): moves every page of `task` on node
    /// `source` to `dest` (THISNODE; the zero page stays); returns the
    /// number that could not move.
    fn migrate_node_pages(&mut self, task: &mut Task, source: usize, dest: NodeId) -> u64 {
        let mut on_source = Vec::new();
        for vma in task.mm.vmas.values() {
            for (vpn, pte) in vma.ptes.entries().filter(|(_, pte)| pte.is_present()) {
                let node = self.pfn_node(Pfn(u64::from(pte.pfn))).expect("mapped page");
                if node.index() == source {
                    on_source.push(vpn);
                }
            }
        }
        let gfp = Gfp::HIGHUSER_MOVABLE | Gfp::THISNODE;
        let mut failed = 0;
        for vpn in on_source {
            if !self.migrate_vpn(task, vpn, gfp, dest, None) {
                failed += 1;
            }
        }
        failed
    }

    /// Moves the page mapped at `vpn` of `task` to a new page from `node`
    /// (or `nodemask`), keeping the entry's side state; false when no page
    /// could be allocated (nothing changed then).
    pub(crate) fn migrate_vpn(
        &mut self,
        task: &mut Task,
        vpn: u64,
        gfp: Gfp,
        node: NodeId,
        nodemask: Option<&Nodemask>,
    ) -> bool {
        let cpu = task.cpu;
        let vma = task.mm.find_vma_mut(vpn).expect("a mapped page");
        let mut pte = *vma.ptes.get(vpn).expect("a mapped page");
        let moved = self.migrate_page(cpu, &mut pte, gfp, node, nodemask);
        let vma = task.mm.find_vma_mut(vpn).expect("a mapped page");
        *vma.ptes.get_mut(vpn).expect("a mapped page") = pte;
        moved
    }
}
