//! The memory-policy system calls that set and read policies, as a task of
//! the simulation makes them: `set_mempolicy`, `get_mempolicy`, `mbind`
//! (the page-moving calls are in `vm::migrate`). Arguments are the
//! syscalls' own (raw mode with flags, user bitmap words and `maxnode`);
//! results and errors are Linux's, checked in the kernel's order (mirrors
//! kernel_set_mempolicy(), kernel_get_mempolicy() / do_get_mempolicy(),
//! kernel_mbind() / do_mbind() of mm/mempolicy.c, Linux 6.12).
//!
//! A call that fails changes nothing, with the one exception Linux has:
//! `mbind` with MOVE installs its policy before migrating, so an EIO from
//! pages that would not move comes after the policy changed.

use super::mempolicy::{
    self, get_nodes, mpol_new, mpol_set_nodemask, sanitize_mpol_flags, MemPolicy, Mode,
    MPOL_F_ADDR, MPOL_F_MEMS_ALLOWED, MPOL_F_NODE, MPOL_MF_MOVE, MPOL_MF_MOVE_ALL, MPOL_MF_STRICT,
    MPOL_MF_VALID, MPOL_MODE_FLAGS,
};
use super::user_nodes::{copy_nodes_to_user, UserNodemask, SYSCALL_MAX_NUMNODES};
use super::{Pid, Vm};
use crate::error::Errno;
use crate::gfp::Gfp;
use crate::types::{NodeId, Nodemask, Pfn};

/// `il_prev` after an interleave policy is installed: `MAX_NUMNODES - 1`,
/// so that the next node is the mask's first.
const IL_PREV_RESET: NodeId = NodeId(crate::types::MAX_NUMNODES as u16 - 1);

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
        // do_set_mempolicy(): nothing fails past this point.
        let task = self.tasks.get_mut(&pid).expect("looked up above");
        if policy.is_some_and(|policy| {
            matches!(policy.mode, Mode::Interleave | Mode::WeightedInterleave)
        }) {
            task.il_prev = Some(IL_PREV_RESET);
        }
        task.policy = policy;
        Ok(())
    }

    /// `get_mempolicy(policy, nmask, maxnode, addr, flags)` as the syscall
    /// takes it: `policy` and `nmask` are the optional out-parameters (the
    /// policy word is mode | user flags, or a node id with MPOL_F_NODE;
    /// `nmask` receives `maxnode` bits). EINVAL when `nmask` is given with
    /// `maxnode` below `nr_node_ids`, for bad flag combinations, for `addr`
    /// without MPOL_F_ADDR and for MPOL_F_NODE alone without a task
    /// interleave policy; EFAULT when `addr` is in no VMA. As in Linux, a
    /// failure to write `nmask` comes after `policy` was written.
    ///
    /// Not modelled: `il_weight` (the kernel moves it only for allocations
    /// outside any VMA, which tasks here never make), so after
    /// WEIGHTED_INTERLEAVE the answer is always the next node after `il_prev`.
    pub fn sys_get_mempolicy(
        &mut self,
        pid: Pid,
        policy_out: Option<&mut i32>,
        nmask: Option<&mut [u64]>,
        maxnode: u64,
        addr: u64,
        flags: u64,
    ) -> Result<(), Errno> {
        let nr_node_ids = self.allocator.nr_nodes();
        if nmask.is_some() && maxnode < nr_node_ids as u64 {
            return Err(Errno::EINVAL);
        }
        let (word, nodes) = self.do_get_mempolicy(pid, addr, flags)?;
        if let Some(out) = policy_out {
            *out = word;
        }
        if let Some(mask) = nmask {
            copy_nodes_to_user(mask, maxnode, &nodes, nr_node_ids)?;
        }
        Ok(())
    }

    /// `get_mempolicy` with a full-width mask: the policy word and the
    /// nodes (a convenience over [`Vm::sys_get_mempolicy`]).
    pub fn get_mempolicy(
        &mut self,
        pid: Pid,
        addr: u64,
        flags: u32,
    ) -> Result<(i32, Nodemask), Errno> {
        let mut word = 0;
        let mut mask = [0u64; SYSCALL_MAX_NUMNODES / 64];
        self.sys_get_mempolicy(
            pid,
            Some(&mut word),
            Some(&mut mask),
            SYSCALL_MAX_NUMNODES as u64 + 1,
            addr,
            u64::from(flags),
        )?;
        let mut nodes = Nodemask::NONE;
        for bit in 0..crate::types::MAX_NUMNODES {
            if mask[bit / 64] >> (bit % 64) & 1 != 0 {
                nodes.set(NodeId(bit as u16));
            }
        }
        Ok((word, nodes))
    }

    /// mirrors do_get_mempolicy() (6.12): the policy word and the nodes to
    /// report.
    fn do_get_mempolicy(
        &mut self,
        pid: Pid,
        addr: u64,
        flags: u64,
    ) -> Result<(i32, UserNodemask), Errno> {
        let known = u64::from(MPOL_F_NODE | MPOL_F_ADDR | MPOL_F_MEMS_ALLOWED);
        if flags & !known != 0 {
            return Err(Errno::EINVAL);
        }
        let task = self.tasks.get(&pid).ok_or(Errno::ESRCH)?;
        let has = |flag: u32| flags & u64::from(flag) != 0;
        if has(MPOL_F_MEMS_ALLOWED) {
            if has(MPOL_F_NODE) || has(MPOL_F_ADDR) {
                return Err(Errno::EINVAL);
            }
            return Ok((0, UserNodemask::from_nodemask(&task.mems_allowed)));
        }
        let policy: Option<MemPolicy> = if has(MPOL_F_ADDR) {
            // __get_vma_policy(): the VMA's own policy, no task fallback.
            task.mm
                .find_vma(addr >> self.page_shift())
                .ok_or(Errno::EFAULT)?
                .policy
        } else if addr != 0 {
            return Err(Errno::EINVAL);
        } else {
            task.policy
        };
        let word = if has(MPOL_F_NODE) {
            if has(MPOL_F_ADDR) {
                // lookup_node(): fault the page in for reading, its node.
                i32::from(self.access(pid, addr, false)?.node.0)
            } else {
                let interleave = task.policy.filter(|policy| {
                    matches!(policy.mode, Mode::Interleave | Mode::WeightedInterleave)
                });
                let Some(policy) = interleave else {
                    return Err(Errno::EINVAL);
                };
                let node =
                    mempolicy::next_node_in(task.il_prev, &policy.nodes).ok_or(Errno::EINVAL)?;
                i32::from(node.0)
            }
        } else {
            policy.map_or(0, |policy| {
                policy.mode as i32 | (i32::from(policy.flags) & MPOL_MODE_FLAGS)
            })
        };
        let nodes = match policy {
            None => UserNodemask::NONE,
            Some(policy) if policy.stores_user_nodemask() => policy.user_nodemask,
            Some(policy) if policy.mode == Mode::Local => UserNodemask::NONE,
            Some(policy) => UserNodemask::from_nodemask(&policy.nodes),
        };
        Ok((word, nodes))
    }

    /// `mbind(addr, len, mode | flags, nmask, maxnode, mbind_flags)`.
    ///
    /// STRICT without MOVE fails with EIO as soon as the walk meets a
    /// misplaced page, before any policy is installed (queue_pages_range()
    /// returns -EIO and do_mbind() skips mbind_range(), 6.12; the same on
    /// a live 6.18 kernel, where the conform suite's `mbind(BIND|RELATIVE,
    /// {1}, STRICT)` gives EIO and leaves every page's policy DEFAULT). With
    /// MOVE the policy is installed first and EIO reports pages that did
    /// not move. A misplaced page is one on a node outside the user's mask
    /// as passed (MPOL_MF_INVERT), not the policy's effective nodes.
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
        let page_mask = (1u64 << shift) - 1;
        if addr & page_mask != 0 {
            return Err(Errno::EINVAL);
        }
        if mode == Mode::Default {
            flags &= !MPOL_MF_STRICT;
        }
        // PAGE_ALIGN() and the end in unsigned arithmetic: a length that
        // aligns to 0 is an empty range (success), a wrapping end EINVAL.
        let len = len.wrapping_add(page_mask) & !page_mask;
        let end = addr.wrapping_add(len);
        if end < addr {
            return Err(Errno::EINVAL);
        }
        if end == addr {
            return Ok(());
        }
        let mut policy = mpol_new(mode, mode_flags, &nodes)?;
        if let Some(policy) = policy.as_mut() {
            mpol_set_nodemask(policy, &nodes, &task.mems_allowed)?;
        }
        let (start, end) = (addr >> shift, end >> shift);
        let misplaced = self.queue_pages_range(pid, start, end, &nodes, policy.is_none(), flags)?;
        // mbind_range(): install the policy on exactly [start, end).
        let mut task = self.tasks.remove(&pid).expect("looked up above");
        task.mm.split_at(start);
        task.mm.split_at(end);
        for vma in task.mm.vmas.range_mut(start..end).map(|(_, vma)| vma) {
            vma.policy = policy;
        }
        let mut failed = 0;
        for vpn in misplaced {
            let vma = task.mm.find_vma(vpn).expect("inside the range");
            let effective = self.vma_policy(&task, vma.policy);
            let offset = vma.pgoff + (vpn - vma.start);
            let local = self.task_cpu_node(task.cpu);
            let (node, mask) = match effective.mode {
                Mode::Interleave | Mode::WeightedInterleave => (
                    self.interleave_node(&effective, offset).unwrap_or(local),
                    None,
                ),
                _ => mempolicy::policy_target(&effective, local),
            };
            if !self.migrate_vpn(&mut task, vpn, Gfp::HIGHUSER_MOVABLE, node, mask.as_ref()) {
                failed += 1;
            }
        }
        self.tasks.insert(pid, task);
        if failed > 0 && flags & MPOL_MF_STRICT != 0 {
            return Err(Errno::EIO);
        }
        Ok(())
    }

    /// mirrors queue_pages_range() with MPOL_MF_INVERT as do_mbind() calls
    /// it: walks the VMAs of `[start, end)` in order, failing with EFAULT
    /// at a hole (unless `discontig_ok`, and always when no VMA is met),
    /// and with EIO at the first misplaced page (one on a node outside the
    /// user's `nodes`) when STRICT comes without MOVE. Returns the pages to
    /// move; changes nothing.
    fn queue_pages_range(
        &self,
        pid: Pid,
        start: u64,
        end: u64,
        nodes: &UserNodemask,
        discontig_ok: bool,
        flags: u32,
    ) -> Result<Vec<u64>, Errno> {
        let task = self.tasks.get(&pid).ok_or(Errno::ESRCH)?;
        let can_move = flags & (MPOL_MF_MOVE | MPOL_MF_MOVE_ALL) != 0;
        let scan = can_move || flags & MPOL_MF_STRICT != 0;
        let mut queued = Vec::new();
        let mut first = true;
        let vmas = task
            .mm
            .vmas
            .range(..end)
            .map(|(_, vma)| vma)
            .filter(|vma| vma.end > start);
        for vma in vmas {
            // queue_pages_test_walk(): holes at the head, middle or tail.
            if first && !discontig_ok && start < vma.start {
                return Err(Errno::EFAULT);
            }
            first = false;
            let next_start = task.mm.vmas.range(vma.end..).next().map(|(at, _)| *at);
            if !discontig_ok && vma.end < end && next_start.is_none_or(|next| vma.end < next) {
                return Err(Errno::EFAULT);
            }
            if !scan {
                continue;
            }
            // The zero page is no folio of the VMA (vm_normal_folio()).
            let range = start.max(vma.start)..end.min(vma.end);
            for (vpn, pte) in vma.ptes.entries().filter(|(vpn, _)| range.contains(vpn)) {
                if !pte.is_present() {
                    continue;
                }
                let node = self.pfn_node(Pfn(u64::from(pte.pfn))).expect("mapped page");
                if nodes.contains(node.index()) {
                    continue;
                }
                if !can_move {
                    return Err(Errno::EIO);
                }
                queued.push(vpn);
            }
        }
        if first {
            // The whole range is a hole.
            return Err(Errno::EFAULT);
        }
        Ok(queued)
    }
}
