//! NUMA memory policies: the modes, flags and validation of mm/mempolicy.c,
//! and the two questions a policy answers — where to allocate a page
//! (`policy_node()` / `policy_nodemask()` / `interleave_nid()`) and whether a
//! page sits where the policy wants it (`mpol_misplaced()`).
//!
//! Owns: [`MemPolicy`] values and the pure functions over them. Does not own:
//! tasks, address spaces or pages (see `vm`), nor the syscalls that install
//! policies (`vm::syscalls`).
//!
//! Invariants of a [`MemPolicy`] built by [`mpol_new`] + [`mpol_set_nodemask`]:
//! `mode ∈ {BIND, INTERLEAVE, WEIGHTED_INTERLEAVE, PREFERRED_MANY} ⇒ nodes ≠ ∅`;
//! `mode = PREFERRED ⇒ |nodes| = 1`; `mode = LOCAL ⇒ nodes = ∅`;
//! `flags & NUMA_BALANCING ⇒ flags ⊇ MOF|MORON`.

use super::user_nodes::UserNodemask;
pub use super::user_nodes::{get_nodes, nodemask_words};
use crate::error::Errno;
use crate::types::{NodeId, Nodemask};

/// `MPOL_DEFAULT`.
pub const MPOL_DEFAULT: i32 = 0;
/// `MPOL_PREFERRED`.
pub const MPOL_PREFERRED: i32 = 1;
/// `MPOL_BIND`.
pub const MPOL_BIND: i32 = 2;
/// `MPOL_INTERLEAVE`.
pub const MPOL_INTERLEAVE: i32 = 3;
/// `MPOL_LOCAL`.
pub const MPOL_LOCAL: i32 = 4;
/// `MPOL_PREFERRED_MANY`.
pub const MPOL_PREFERRED_MANY: i32 = 5;
/// `MPOL_WEIGHTED_INTERLEAVE`.
pub const MPOL_WEIGHTED_INTERLEAVE: i32 = 6;
/// `MPOL_MAX`: one past the last mode.
pub const MPOL_MAX: i32 = 7;

/// `MPOL_F_STATIC_NODES`: the user's nodes are not remapped on cpuset change.
pub const MPOL_F_STATIC_NODES: i32 = 1 << 15;
/// `MPOL_F_RELATIVE_NODES`: the user's nodes are relative to the allowed set.
pub const MPOL_F_RELATIVE_NODES: i32 = 1 << 14;
/// `MPOL_F_NUMA_BALANCING`: let NUMA balancing optimise within the policy.
pub const MPOL_F_NUMA_BALANCING: i32 = 1 << 13;
/// `MPOL_MODE_FLAGS`: every optional mode flag.
pub const MPOL_MODE_FLAGS: i32 =
    MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING;

/// Internal `MPOL_F_MOF`: this policy wants migrate-on-fault.
pub const MPOL_F_MOF: u16 = 1 << 3;
/// Internal `MPOL_F_MORON`: migrate on protnone reference toward the faulting node.
pub const MPOL_F_MORON: u16 = 1 << 4;

/// get_mempolicy `MPOL_F_NODE`.
pub const MPOL_F_NODE: u32 = 1 << 0;
/// get_mempolicy `MPOL_F_ADDR`.
pub const MPOL_F_ADDR: u32 = 1 << 1;
/// get_mempolicy `MPOL_F_MEMS_ALLOWED`.
pub const MPOL_F_MEMS_ALLOWED: u32 = 1 << 2;

/// mbind `MPOL_MF_STRICT`: fail with EIO when pages are misplaced.
pub const MPOL_MF_STRICT: u32 = 1 << 0;
/// mbind `MPOL_MF_MOVE`: move this process's misplaced pages.
pub const MPOL_MF_MOVE: u32 = 1 << 1;
/// mbind `MPOL_MF_MOVE_ALL`: move every misplaced page (CAP_SYS_NICE).
pub const MPOL_MF_MOVE_ALL: u32 = 1 << 2;
/// `MPOL_MF_VALID`: the flags a caller may pass to mbind.
pub const MPOL_MF_VALID: u32 = MPOL_MF_STRICT | MPOL_MF_MOVE | MPOL_MF_MOVE_ALL;

/// A policy mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Fall back to the enclosing policy (task, then the system default).
    Default = 0,
    /// One preferred node, fallback anywhere.
    Preferred = 1,
    /// Only the nodes of the mask.
    Bind = 2,
    /// Round-robin over the mask.
    Interleave = 3,
    /// The node of the allocating CPU.
    Local = 4,
    /// The mask first, then anywhere.
    PreferredMany = 5,
    /// Round-robin over the mask, each node as often as its weight.
    WeightedInterleave = 6,
}

impl Mode {
    /// The mode for a mode number; `None` at or above `MPOL_MAX`.
    pub fn from_raw(mode: i32) -> Option<Mode> {
        Some(match mode {
            MPOL_DEFAULT => Mode::Default,
            MPOL_PREFERRED => Mode::Preferred,
            MPOL_BIND => Mode::Bind,
            MPOL_INTERLEAVE => Mode::Interleave,
            MPOL_LOCAL => Mode::Local,
            MPOL_PREFERRED_MANY => Mode::PreferredMany,
            MPOL_WEIGHTED_INTERLEAVE => Mode::WeightedInterleave,
            _ => return None,
        })
    }

    /// The name numa_maps prints (`bind`, `prefer`, `interleave`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Preferred => "prefer",
            Mode::Bind => "bind",
            Mode::Interleave => "interleave",
            Mode::Local => "local",
            Mode::PreferredMany => "prefer (many)",
            Mode::WeightedInterleave => "weighted interleave",
        }
    }
}

/// A memory policy (`struct mempolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemPolicy {
    /// The mode.
    pub mode: Mode,
    /// Mode flags (`MPOL_F_STATIC_NODES`... as u16) plus internal MOF/MORON.
    pub flags: u16,
    /// The effective nodes.
    pub nodes: Nodemask,
    /// What the user passed (with any mode flag; it may name nodes that do
    /// not exist) or the cpuset's mems at the time.
    pub user_nodemask: UserNodemask,
    /// The node BIND and PREFERRED_MANY allocate from first instead of the
    /// local one (`set_mempolicy_home_node`); `None` is NUMA_NO_NODE.
    pub home_node: Option<NodeId>,
}

impl MemPolicy {
    /// The policy of a task without one on `node`: `preferred_node_policy[node]`,
    /// PREFERRED with MOF|MORON, which is what makes NUMA balancing apply to
    /// tasks on the default policy.
    pub fn system_default(node: NodeId) -> MemPolicy {
        MemPolicy {
            mode: Mode::Preferred,
            flags: MPOL_F_MOF | MPOL_F_MORON,
            nodes: Nodemask::of(node),
            user_nodemask: UserNodemask::NONE,
            home_node: None,
        }
    }

    /// True when the policy wants migrate-on-fault (`vma_policy_mof()`).
    pub fn wants_mof(&self) -> bool {
        self.flags & MPOL_F_MOF != 0
    }

    /// True when the policy keeps the user's nodemask as given, which
    /// get_mempolicy reports (mirrors mpol_store_user_nodemask(): any mode
    /// flag, NUMA_BALANCING included).
    pub fn stores_user_nodemask(&self) -> bool {
        self.user_flags() != 0
    }

    /// The mode flags the user sees (internal flags masked off).
    pub fn user_flags(&self) -> i32 {
        self.flags as i32 & MPOL_MODE_FLAGS
    }
}

/// Splits a mode argument into mode and flags and checks them (mirrors
/// sanitize_mpol_flags(); NUMA_BALANCING is accepted for BIND and, as newer
/// kernels do, PREFERRED_MANY).
pub fn sanitize_mpol_flags(raw_mode: i32) -> Result<(Mode, u16), Errno> {
    let flags = raw_mode & MPOL_MODE_FLAGS;
    let mode = Mode::from_raw(raw_mode & !MPOL_MODE_FLAGS).ok_or(Errno::EINVAL)?;
    if flags & MPOL_F_STATIC_NODES != 0 && flags & MPOL_F_RELATIVE_NODES != 0 {
        return Err(Errno::EINVAL);
    }
    let mut flags = flags as u16;
    if flags as i32 & MPOL_F_NUMA_BALANCING != 0 {
        if !matches!(mode, Mode::Bind | Mode::PreferredMany) {
            return Err(Errno::EINVAL);
        }
        flags |= MPOL_F_MOF | MPOL_F_MORON;
    }
    Ok((mode, flags))
}

/// Builds a policy from a mode, flags and the user's nodes (mirrors
/// mpol_new()). `Ok(None)` is the default policy.
pub fn mpol_new(mode: Mode, flags: u16, nodes: &UserNodemask) -> Result<Option<MemPolicy>, Errno> {
    let static_or_relative = flags as i32 & (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES) != 0;
    let mut mode = mode;
    match mode {
        Mode::Default => {
            if !nodes.is_empty() {
                return Err(Errno::EINVAL);
            }
            return Ok(None);
        }
        Mode::Preferred => {
            if nodes.is_empty() {
                if static_or_relative {
                    return Err(Errno::EINVAL);
                }
                mode = Mode::Local;
            }
        }
        Mode::Local => {
            if !nodes.is_empty() || static_or_relative {
                return Err(Errno::EINVAL);
            }
        }
        _ => {
            if nodes.is_empty() {
                return Err(Errno::EINVAL);
            }
        }
    }
    Ok(Some(MemPolicy {
        mode,
        flags,
        nodes: Nodemask::NONE,
        user_nodemask: UserNodemask::NONE,
        home_node: None,
    }))
}

/// Gives a new policy its effective nodes, given the cpuset's `mems_allowed`
/// (already limited to nodes with memory): mirrors mpol_set_nodemask() and the
/// mode's create function (mpol_new_nodemask(), mpol_new_preferred()).
pub fn mpol_set_nodemask(
    policy: &mut MemPolicy,
    nodes: &UserNodemask,
    mems_allowed: &Nodemask,
) -> Result<(), Errno> {
    if policy.mode == Mode::Local {
        return Ok(());
    }
    let effective = if policy.flags as i32 & MPOL_F_RELATIVE_NODES != 0 {
        relative_nodemask(nodes, mems_allowed)
    } else {
        and(&nodes.to_nodemask(), mems_allowed)
    };
    policy.user_nodemask = if policy.stores_user_nodemask() {
        *nodes
    } else {
        UserNodemask::from_nodemask(mems_allowed)
    };
    if effective.is_empty() {
        return Err(Errno::EINVAL);
    }
    policy.nodes = if policy.mode == Mode::Preferred {
        Nodemask::of(effective.iter().next().expect("not empty"))
    } else {
        effective
    };
    Ok(())
}

/// The intersection of two masks.
pub fn and(a: &Nodemask, b: &Nodemask) -> Nodemask {
    let mut out = Nodemask::NONE;
    for node in a.iter().filter(|node| b.contains(*node)) {
        out.set(node);
    }
    out
}

/// `orig` folded onto the weight of `rel`, then mapped onto its set bits
/// (mirrors mpol_relative_nodemask(): nodes_fold() then nodes_onto()).
pub fn relative_nodemask(orig: &UserNodemask, rel: &Nodemask) -> Nodemask {
    let weight = rel.weight();
    let mut out = Nodemask::NONE;
    if weight == 0 {
        return out;
    }
    let rel_nodes: Vec<NodeId> = rel.iter().collect();
    for node in orig.iter() {
        out.set(rel_nodes[node % weight]);
    }
    out
}

/// The `n`-th node of `nodes` (wrapping), as offset_il_node() picks it.
pub fn nth_node(nodes: &Nodemask, n: u64) -> Option<NodeId> {
    let weight = nodes.weight() as u64;
    if weight == 0 {
        return None;
    }
    nodes.iter().nth((n % weight) as usize)
}

/// The next node of `nodes` after `prev`, wrapping (`next_node_in()`).
pub fn next_node_in(prev: Option<NodeId>, nodes: &Nodemask) -> Option<NodeId> {
    let start = prev.map_or(0, |node| node.index() + 1);
    nodes
        .iter()
        .find(|node| node.index() >= start)
        .or_else(|| nodes.iter().next())
}

/// The node of interleave index `index` under per-node `weights`
/// (mirrors weighted_interleave_nid(): walk the nodes, subtracting weights).
pub fn weighted_nth_node(nodes: &Nodemask, weights: &[u8], index: u64) -> Option<NodeId> {
    let weight_of = |node: NodeId| weights.get(node.index()).copied().unwrap_or(1).max(1) as u64;
    let total: u64 = nodes.iter().map(weight_of).sum();
    if total == 0 {
        return None;
    }
    let mut target = index % total;
    for node in nodes.iter() {
        let weight = weight_of(node);
        if target < weight {
            return Some(node);
        }
        target -= weight;
    }
    None
}

/// Where a policy wants a new page: the preferred node and the nodemask to
/// allocate from (mirrors policy_node() and policy_nodemask(); the interleave
/// node is chosen by the caller, which knows the offset). BIND and
/// PREFERRED_MANY start from their home node when they have one.
pub fn policy_target(policy: &MemPolicy, local: NodeId) -> (NodeId, Option<Nodemask>) {
    match policy.mode {
        Mode::Preferred => (policy.nodes.iter().next().unwrap_or(local), None),
        Mode::Bind | Mode::PreferredMany => (policy.home_node.unwrap_or(local), Some(policy.nodes)),
        _ => (local, None),
    }
}

/// What mpol_misplaced() decides before the cpupid filter: `None` when the
/// page is where the policy wants it (or the policy does not migrate on
/// fault); otherwise the node the policy wants and whether it is the
/// MORON "toward the faulting CPU" case. The caller must then, in the
/// MORON case, run should_numa_migrate_memory() (which records the
/// faulting cpupid even when the page stays), and migrate only when the
/// node differs from the page's.
///
/// `interleave_node` is the node the interleave rule gives this page's
/// offset; `nearest_in_mask` is the first node of the faulting node's
/// zonelist inside the policy's nodes.
pub fn mpol_misplaced_target(
    policy: &MemPolicy,
    page_node: NodeId,
    this_node: NodeId,
    interleave_node: Option<NodeId>,
    nearest_in_mask: impl Fn(&Nodemask) -> Option<NodeId>,
) -> Option<(NodeId, bool)> {
    if !policy.wants_mof() {
        return None;
    }
    let moron = policy.flags & MPOL_F_MORON != 0;
    let mut policy_node = match policy.mode {
        Mode::Interleave | Mode::WeightedInterleave => interleave_node?,
        Mode::Preferred => {
            if policy.nodes.contains(page_node) {
                return None;
            }
            policy.nodes.iter().next()?
        }
        Mode::Local => this_node,
        Mode::Bind | Mode::PreferredMany => {
            if moron {
                // The MPOL_F_NUMA_BALANCING case: move toward the faulting
                // CPU's node only when that node is allowed.
                if !policy.nodes.contains(this_node) {
                    return None;
                }
                this_node
            } else {
                if policy.nodes.contains(page_node) {
                    return None;
                }
                nearest_in_mask(&policy.nodes)?
            }
        }
        Mode::Default => return None,
    };
    if moron {
        policy_node = this_node;
    }
    Some((policy_node, moron))
}
