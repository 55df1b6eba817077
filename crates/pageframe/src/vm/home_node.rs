//! `set_mempolicy_home_node`: gives the BIND and PREFERRED_MANY policies of
//! the VMAs in a range a home node, the node their allocations then try
//! first instead of the faulting CPU's (mirrors the syscall of
//! mm/mempolicy.c, Linux 6.12; the same results on a live 6.18 kernel).
//!
//! Checked in Linux's order: an unaligned start, then flags ≠ 0, then a
//! node at or above `MAX_NUMNODES` or not online are EINVAL; a range that
//! wraps is EINVAL and an empty one succeeds. Then each VMA of the range in
//! turn: one without a policy is skipped, one whose policy is neither BIND
//! nor PREFERRED_MANY stops the call with EOPNOTSUPP, the others get a copy
//! of their policy with the home node on the part inside the range. A range
//! where no VMA had a policy (holes included) is ENOENT.
//!
//! Like Linux, a call stopped by EOPNOTSUPP keeps the home nodes it already
//! set on the VMAs before (the one exception to "a failing call changes
//! nothing" here; the kernel says it does not reset them).

use super::mempolicy::{MemPolicy, Mode};
use super::user_nodes::SYSCALL_MAX_NUMNODES;
use super::{Pid, Vm};
use crate::error::Errno;
use crate::types::NodeId;

impl Vm<'_> {
    /// `set_mempolicy_home_node(start, len, home_node, flags)` for task `pid`.
    pub fn set_mempolicy_home_node(
        &mut self,
        pid: Pid,
        start: u64,
        len: u64,
        home_node: u64,
        flags: u64,
    ) -> Result<(), Errno> {
        let shift = self.page_shift();
        let page_mask = (1u64 << shift) - 1;
        if start & page_mask != 0 || flags != 0 {
            return Err(Errno::EINVAL);
        }
        // Every node of a machine is online.
        let online = self.allocator.nr_nodes() as u64;
        if home_node >= SYSCALL_MAX_NUMNODES as u64 || home_node >= online {
            return Err(Errno::EINVAL);
        }
        let node = NodeId(home_node as u16);
        // PAGE_ALIGN() and the end in unsigned arithmetic, as mbind.
        let len = len.wrapping_add(page_mask) & !page_mask;
        let end = start.wrapping_add(len);
        if end < start {
            return Err(Errno::EINVAL);
        }
        if end == start {
            return Ok(());
        }
        let (start, end) = (start >> shift, end >> shift);
        let task = self.tasks.get_mut(&pid).ok_or(Errno::ESRCH)?;
        let starts: Vec<u64> = task
            .mm
            .vmas
            .range(..end)
            .filter(|(_, vma)| vma.end > start)
            .map(|(at, _)| *at)
            .collect();
        let mut outcome = Err(Errno::ENOENT);
        for at in starts {
            let Some(vma) = task.mm.vmas.get(&at) else {
                continue;
            };
            let Some(old) = vma.policy else {
                continue;
            };
            if !matches!(old.mode, Mode::Bind | Mode::PreferredMany) {
                outcome = Err(Errno::EOPNOTSUPP);
                break;
            }
            let new = MemPolicy {
                home_node: Some(node),
                ..old
            };
            // mbind_range(): the part of this VMA inside [start, end).
            let (from, to) = (start.max(vma.start), end.min(vma.end));
            task.mm.split_at(from);
            task.mm.split_at(to);
            for (_, vma) in task.mm.vmas.range_mut(from..to) {
                vma.policy = Some(new);
            }
            outcome = Ok(());
        }
        outcome
    }
}
