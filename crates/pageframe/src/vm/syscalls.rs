//! The memory-policy system calls, as a task of the simulation makes them:
//! `set_mempolicy`, `get_mempolicy`, `mbind`, `migrate_pages`, `move_pages`.
//! Arguments are the syscalls' own (raw mode with flags, user bitmap words
//! and `maxnode`); results and errors are Linux's, checked in the kernel's
//! order (mirrors kernel_set_mempolicy(), do_get_mempolicy(), do_mbind(),
//! kernel_migrate_pages(), kernel_move_pages() of mm/mempolicy.c and
//! mm/migrate.c, Linux 6.1).

use super::mempolicy::{
    self, get_nodes, mpol_new, mpol_set_nodemask, sanitize_mpol_flags, MemPolicy, Mode,
    MPOL_F_ADDR, MPOL_F_MEMS_ALLOWED, MPOL_F_NODE, MPOL_MF_MOVE, MPOL_MF_MOVE_ALL, MPOL_MF_STRICT,
    MPOL_MF_VALID, MPOL_MODE_FLAGS,
};
use super::mm::Pte;
use super::{Pid, Vm};
use crate::error::Errno;
use crate::gfp::Gfp;
use crate::types::{NodeId, Nodemask, Pfn, MAX_NUMNODES};

impl Vm<'_> {
    /// `set_mempolicy(mode | flags, nmask, maxnode)` for task `pid`.
    pub fn set_mempolicy(
        &mut self,
        pid: Pid,
        mode: i32,
        nmask: Option<&[u64]>,
        maxnode: u64,
    ) -> Result<(), Errno> {
        let (mode, flags) = sanitize_mpol_flags(mode)?;
        let nodes = get_nodes(nmask, maxnode)?;
        let task = self.tasks.get(&pid).ok_or(Errno::ESRCH)?;
        let mems_allowed = task.mems_allowed;
        let mut policy = mpol_new(mode, flags, &nodes)?;
        if let Some(policy) = policy.as_mut() {
            mpol_set_nodemask(policy, &nodes, &mems_allowed)?;
        }
        let task = self.tasks.get_mut(&pid).expect("looked up above");
        if policy.is_some_and(|policy| policy.mode == Mode::Interleave) {
            task.il_prev = Some(NodeId(MAX_NUMNODES as u16 - 1));
        }
        task.policy = policy;
        Ok(())
    }

    /// `get_mempolicy(&policy, nmask, maxnode, addr, flags)`: returns the
    /// `policy` word (mode | user flags, or a node id with MPOL_F_NODE) and
    /// the nodes.
    pub fn get_mempolicy(
        &mut self,
        pid: Pid,
        addr: u64,
        flags: u32,
    ) -> Result<(i32, Nodemask), Errno> {
        if flags & !(MPOL_F_NODE | MPOL_F_ADDR | MPOL_F_MEMS_ALLOWED) != 0 {
            return Err(Errno::EINVAL);
        }
        let task = self.tasks.get(&pid).ok_or(Errno::ESRCH)?;
        if flags & MPOL_F_MEMS_ALLOWED != 0 {
            if flags & (MPOL_F_NODE | MPOL_F_ADDR) != 0 {
                return Err(Errno::EINVAL);
            }
            return Ok((0, task.mems_allowed));
        }
        let policy: Option<MemPolicy> = if flags & MPOL_F_ADDR != 0 {
            let vma = task
                .mm
                .find_vma(addr >> self.page_shift())
                .ok_or(Errno::EFAULT)?;
            vma.policy
        } else if addr != 0 {
            return Err(Errno::EINVAL);
        } else {
            task.policy
        };
        if flags & MPOL_F_NODE != 0 {
            if flags & MPOL_F_ADDR != 0 {
                // lookup_node(): fault the page in, report its node.
                let access = self.access(pid, addr, false)?;
                return Ok((access.node.0 as i32, Nodemask::NONE));
            }
            match (policy, task.policy) {
                (Some(policy), Some(_)) if policy.mode == Mode::Interleave => {
                    let node = mempolicy::next_node_in(task.il_prev, &policy.nodes)
                        .ok_or(Errno::EINVAL)?;
                    return Ok((node.0 as i32, Nodemask::NONE));
                }
                _ => return Err(Errno::EINVAL),
            }
        }
        Ok(match policy {
            None => (0, Nodemask::NONE),
            Some(policy) => {
                let nodes = if policy.mode == Mode::Local {
                    Nodemask::NONE
                } else {
                    policy.nodes
                };
                let nodes = if policy.flags as i32
                    & (mempolicy::MPOL_F_STATIC_NODES | mempolicy::MPOL_F_RELATIVE_NODES)
                    != 0
                {
                    policy.user_nodemask
                } else {
                    nodes
                };
                (
                    policy.mode as i32 | (policy.flags as i32 & MPOL_MODE_FLAGS),
                    nodes,
                )
            }
        })
    }

    /// `mbind(addr, len, mode | flags, nmask, maxnode, mbind_flags)`.
    #[allow(clippy::too_many_arguments)]
    pub fn mbind(
        &mut self,
        pid: Pid,
        addr: u64,
        len: u64,
        mode: i32,
        nmask: Option<&[u64]>,
        maxnode: u64,
        mbind_flags: u32,
    ) -> Result<(), Errno> {
        let (mode, mode_flags) = sanitize_mpol_flags(mode)?;
        let nodes = get_nodes(nmask, maxnode)?;
        let mut flags = mbind_flags;
        if flags & !MPOL_MF_VALID != 0 {
            return Err(Errno::EINVAL);
        }
        let task = self.tasks.get(&pid).ok_or(Errno::ESRCH)?;
        if flags & MPOL_MF_MOVE_ALL != 0 && !task.cap_sys_nice {
            return Err(Errno::EPERM);
        }
        let shift = self.page_shift();
        if addr & ((1 << shift) - 1) != 0 {
            return Err(Errno::EINVAL);
        }
        if mode == Mode::Default {
            flags &= !MPOL_MF_STRICT;
        }
        let len = len.checked_add((1 << shift) - 1).ok_or(Errno::EINVAL)? >> shift << shift;
        let end = addr.checked_add(len).ok_or(Errno::EINVAL)?;
        if end == addr {
            return Ok(());
        }
        let mut policy = mpol_new(mode, mode_flags, &nodes)?;
        if let Some(policy) = policy.as_mut() {
            mpol_set_nodemask(policy, &nodes, &task.mems_allowed)?;
        }
        let (start, end) = (addr >> shift, end >> shift);
        // queue_pages_range(): holes are EFAULT unless the new policy is the default.
        let discontig_ok = policy.is_none();
        let any_vma = task
            .mm
            .vmas
            .values()
            .any(|vma| vma.start < end && vma.end > start);
        if !any_vma || (!discontig_ok && !task.mm.covers(start, end)) {
            return Err(Errno::EFAULT);
        }
        // Pages on nodes outside the user's mask are misplaced (MPOL_MF_INVERT).
        let mut misplaced = Vec::new();
        for vma in task
            .mm
            .vmas
            .values()
            .filter(|vma| vma.start < end && vma.end > start)
        {
            for vpn in vma.start.max(start)..vma.end.min(end) {
                let pte = &vma.ptes[(vpn - vma.start) as usize];
                if pte.is_present() {
                    let node = self.pfn_node(Pfn(pte.pfn as u64)).expect("mapped page");
                    if !nodes.contains(node) {
                        misplaced.push(vpn);
                    }
                }
            }
        }
        let can_move = flags & (MPOL_MF_MOVE | MPOL_MF_MOVE_ALL) != 0;
        let unmovable = !misplaced.is_empty() && !can_move;
        // mbind_range(): install the policy on exactly [start, end).
        let mut task = self.tasks.remove(&pid).expect("looked up above");
        task.mm.split_at(start);
        task.mm.split_at(end);
        for vma in task.mm.vmas.range_mut(start..end).map(|(_, vma)| vma) {
            vma.policy = policy;
        }
        let mut failed = 0;
        if can_move {
            for vpn in misplaced {
                let vma = task.mm.find_vma(vpn).expect("inside the range");
                let effective = self.vma_policy(&task, vma.policy);
                let offset = vma.pgoff + (vpn - vma.start);
                let local = self.cpu_node(task.cpu);
                let (node, mask) = match effective.mode {
                    Mode::Interleave | Mode::WeightedInterleave => (
                        self.interleave_node(&effective, offset).unwrap_or(local),
                        None,
                    ),
                    _ => mempolicy::policy_target(&effective, local),
                };
                let cpu = task.cpu;
                let vma = task.mm.find_vma_mut(vpn).expect("inside the range");
                let index = (vpn - vma.start) as usize;
                let mut pte = vma.ptes[index];
                if !self.migrate_page(cpu, &mut pte, Gfp::HIGHUSER_MOVABLE, node, mask.as_ref()) {
                    failed += 1;
                }
                task.mm.find_vma_mut(vpn).expect("inside the range").ptes[index] = pte;
            }
        }
        self.tasks.insert(pid, task);
        if (unmovable || failed > 0) && flags & MPOL_MF_STRICT != 0 {
            return Err(Errno::EIO);
        }
        Ok(())
    }

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
        let mut new = get_nodes(new_nodes, maxnode)?;
        let current = self.tasks.get(&caller).ok_or(Errno::ESRCH)?;
        let (capable, current_mems) = (current.cap_sys_nice, current.mems_allowed);
        let target = if pid == 0 { caller } else { Pid(pid) };
        let task = self.tasks.get(&target).ok_or(Errno::ESRCH)?;
        // ptrace_may_access(): modelled as "itself, or CAP_SYS_NICE".
        if target != caller && !capable {
            return Err(Errno::EPERM);
        }
        if !new.iter().all(|node| task.mems_allowed.contains(node)) && !capable {
            return Err(Errno::EPERM);
        }
        new = mempolicy::and(&new, &current_mems);
        if new.is_empty() {
            return Err(Errno::EINVAL);
        }
        // do_migrate_pages(): each source node maps onto the destination
        // node of the same rank (node_remap()); pages already there stay.
        let old_list: Vec<NodeId> = old.iter().collect();
        let new_list: Vec<NodeId> = new.iter().collect();
        let remap = |node: NodeId| -> Option<NodeId> {
            let rank = old_list.iter().position(|n| *n == node)?;
            let dest = new_list[rank % new_list.len()];
            if old.weight() != new.weight() && new.contains(node) {
                return None;
            }
            Some(dest).filter(|dest| *dest != node)
        };
        let mut task = self.tasks.remove(&target).expect("looked up above");
        let cpu = task.cpu;
        let mut failed = 0;
        let gfp = Gfp::HIGHUSER_MOVABLE | Gfp::THISNODE;
        let starts: Vec<u64> = task.mm.vmas.keys().copied().collect();
        for at in starts {
            let len = task.mm.vmas[&at].ptes.len();
            for index in 0..len {
                let mut pte: Pte = task.mm.vmas[&at].ptes[index];
                if !pte.is_present() {
                    continue;
                }
                let node = self.pfn_node(Pfn(pte.pfn as u64)).expect("mapped page");
                if let Some(dest) = remap(node) {
                    if !self.migrate_page(cpu, &mut pte, gfp, dest, None) {
                        failed += 1;
                    }
                    task.mm.vmas.get_mut(&at).expect("listed").ptes[index] = pte;
                }
            }
        }
        self.tasks.insert(target, task);
        Ok(failed)
    }

    /// `move_pages(pid, count, pages, nodes, status, flags)` called by
    /// `caller`. With `nodes` `None` it only queries: each status is the
    /// page's node, -EFAULT (no VMA) or -ENOENT (not present). Otherwise
    /// each page moves to its node; status is the node reached or a
    /// negative errno. Returns the number of pages that failed to migrate
    /// (per-page errors such as -EFAULT are only in `status`).
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
            // do_pages_stat().
            for (addr, status) in pages.iter().zip(status.iter_mut()) {
                *status = match task.mm.find_vma(addr >> shift) {
                    None => -Errno::EFAULT.code(),
                    Some(_) => match task.mm.pte(addr >> shift).filter(|pte| pte.is_present()) {
                        None => -Errno::ENOENT.code(),
                        Some(pte) => self.pfn_node(Pfn(pte.pfn as u64)).expect("mapped").0 as i32,
                    },
                };
            }
            return Ok(0);
        };
        // do_pages_move(): a bad node fails the whole call.
        let task_nodes = task.mems_allowed;
        for &node in nodes.iter().take(pages.len()) {
            if node < 0
                || node as usize >= MAX_NUMNODES
                || !self.mem_nodes.contains(NodeId(node as u16))
            {
                return Err(Errno::ENODEV);
            }
            if !task_nodes.contains(NodeId(node as u16)) {
                return Err(Errno::EACCES);
            }
        }
        let mut task = self.tasks.remove(&target).expect("looked up above");
        let cpu = task.cpu;
        let mut not_moved = 0;
        for ((addr, &node), status) in pages.iter().zip(nodes).zip(status.iter_mut()) {
            let vpn = addr >> shift;
            let node = NodeId(node as u16);
            let Some(vma) = task.mm.find_vma_mut(vpn) else {
                *status = -Errno::EFAULT.code();
                continue;
            };
            let index = (vpn - vma.start) as usize;
            let mut pte = vma.ptes[index];
            if !pte.is_present() {
                *status = -Errno::ENOENT.code();
                continue;
            }
            let current_node = self.pfn_node(Pfn(pte.pfn as u64)).expect("mapped");
            if current_node == node {
                *status = node.0 as i32;
                continue;
            }
            if self.migrate_page(
                cpu,
                &mut pte,
                Gfp::HIGHUSER_MOVABLE | Gfp::THISNODE,
                node,
                None,
            ) {
                *status = node.0 as i32;
            } else {
                *status = -Errno::ENOMEM.code();
                not_moved += 1;
            }
            task.mm.find_vma_mut(vpn).expect("found above").ptes[index] = pte;
        }
        self.tasks.insert(target, task);
        Ok(not_moved)
    }
}
