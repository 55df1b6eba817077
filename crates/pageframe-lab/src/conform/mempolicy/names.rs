//! How the mempolicy suite names what a case does: modes with their flags,
//! nodemasks, addresses by the page they fall in, and whole calls. The
//! fixed, edge and random cases all take their row names from here, so one
//! call reads the same in every part of the suite.

use pageframe::vm::mempolicy::{
    MPOL_BIND, MPOL_DEFAULT, MPOL_F_NUMA_BALANCING, MPOL_F_RELATIVE_NODES, MPOL_F_STATIC_NODES,
    MPOL_INTERLEAVE, MPOL_LOCAL, MPOL_PREFERRED, MPOL_PREFERRED_MANY, MPOL_WEIGHTED_INTERLEAVE,
};

use super::{Addr, Call, MaskArg, PageState};

/// A mode with its flags, readably.
pub(super) fn mode_name(mode: i32) -> String {
    let flags = [
        (MPOL_F_STATIC_NODES, "STATIC"),
        (MPOL_F_RELATIVE_NODES, "RELATIVE"),
        (MPOL_F_NUMA_BALANCING, "NUMA_BALANCING"),
    ];
    let base = mode & !(MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING);
    let mut name = match base {
        MPOL_DEFAULT => "DEFAULT".to_string(),
        MPOL_PREFERRED => "PREFERRED".to_string(),
        MPOL_BIND => "BIND".to_string(),
        MPOL_INTERLEAVE => "INTERLEAVE".to_string(),
        MPOL_LOCAL => "LOCAL".to_string(),
        MPOL_PREFERRED_MANY => "PREFERRED_MANY".to_string(),
        MPOL_WEIGHTED_INTERLEAVE => "WEIGHTED_INTERLEAVE".to_string(),
        other => format!("mode {other}"),
    };
    for (flag, flag_name) in flags {
        if mode & flag != 0 {
            name.push('|');
            name.push_str(flag_name);
        }
    }
    name
}

/// A nodemask argument: `NULL` or its nodes in braces.
pub(super) fn mask_name(mask: &MaskArg) -> String {
    match mask {
        None => "NULL".to_string(),
        Some(nodes) => {
            let list: Vec<String> = nodes.iter().map(usize::to_string).collect();
            format!("{{{}}}", list.join(","))
        }
    }
}

/// An address: `NULL`, raw hex, or the state of the page it names with
/// its region, page and offset.
pub(super) fn addr_name(addr: Addr, layout: &[Vec<PageState>]) -> String {
    match addr {
        Addr::Null => "NULL".to_string(),
        Addr::Raw(addr) => format!("{addr:#x}"),
        Addr::Page {
            region,
            page,
            offset,
        } => {
            let state = format!("{:?}", layout[region][page]).to_lowercase();
            if offset == 0 {
                format!("{state}@{region}.{page}")
            } else {
                format!("{state}@{region}.{page}+{offset}")
            }
        }
    }
}

/// A call, readably.
pub(super) fn call_name(call: &Call, layout: &[Vec<PageState>]) -> String {
    match call {
        Call::SetMempolicy {
            mode,
            mask,
            maxnode,
        } => format!(
            "set_mempolicy({}, {}, maxnode={maxnode})",
            mode_name(*mode),
            mask_name(mask)
        ),
        Call::GetMempolicy {
            want_policy,
            want_mask,
            maxnode,
            addr,
            flags,
        } => format!(
            "get_mempolicy(policy={}, nmask={}, maxnode={maxnode}, addr={}, flags={flags:#x})",
            if *want_policy { "ptr" } else { "NULL" },
            if *want_mask { "ptr" } else { "NULL" },
            addr_name(*addr, layout)
        ),
        Call::Mbind {
            addr,
            len,
            mode,
            mask,
            maxnode,
            flags,
        } => format!(
            "mbind({}, len={len:#x}, {}, {}, maxnode={maxnode}, flags={flags:#x})",
            addr_name(*addr, layout),
            mode_name(*mode),
            mask_name(mask)
        ),
        Call::MigratePages {
            pid,
            maxnode,
            old,
            new,
        } => format!(
            "migrate_pages(pid={}, maxnode={maxnode}, old={}, new={})",
            pid.name(),
            mask_name(old),
            mask_name(new)
        ),
        Call::SetMempolicyHomeNode {
            addr,
            len,
            home_node,
            flags,
        } => format!(
            "set_mempolicy_home_node({}, len={len:#x}, home_node={home_node}, flags={flags:#x})",
            addr_name(*addr, layout)
        ),
        Call::MovePages {
            pid,
            pages,
            nodes,
            flags,
        } => {
            let names: Vec<String> = pages.iter().map(|addr| addr_name(*addr, layout)).collect();
            format!(
                "move_pages(pid={}, [{}], nodes={}, flags={flags:#x})",
                pid.name(),
                names.join(","),
                nodes
                    .as_ref()
                    .map_or("NULL".to_string(), |nodes| format!("{nodes:?}"))
            )
        }
    }
}

/// The calls made before a case and its own call, joined as a case name
/// shows them.
pub(super) fn steps_name(before: &[Call], call: &Call, layout: &[Vec<PageState>]) -> String {
    let mut steps: Vec<String> = before.iter().map(|call| call_name(call, layout)).collect();
    steps.push(call_name(call, layout));
    steps.join(" ; ")
}

/// The task policy set before a case, or `default`.
pub(super) fn prior_name(prior: &Option<(i32, Vec<usize>)>) -> String {
    prior
        .as_ref()
        .map_or("default".to_string(), |(mode, nodes)| {
            format!("{} {}", mode_name(*mode), mask_name(&Some(nodes.clone())))
        })
}
