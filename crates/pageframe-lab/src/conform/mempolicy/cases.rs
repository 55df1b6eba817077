//! The cases of the mempolicy suite: every mode × mode flag × nodemask
//! shape × `maxnode` edge for `set_mempolicy`; every `get_mempolicy` flag
//! combination with and without `nmask`, after each kind of task policy,
//! at each kind of address; `mbind` over mapped, unmapped and partly mapped
//! ranges with STRICT / MOVE / MOVE_ALL, plus its length and address edges;
//! `migrate_pages` over mask shapes and `maxnode` edges; `move_pages`
//! queries and moves of every kind of page, with bad nodes first and later;
//! then the edge cases of `edge_cases.rs` (bitmap word edges, raw
//! addresses, pids, call sequences, `set_mempolicy_home_node`).

use pageframe::vm::mempolicy::{
    MPOL_BIND, MPOL_DEFAULT, MPOL_F_ADDR, MPOL_F_MEMS_ALLOWED, MPOL_F_NODE, MPOL_F_NUMA_BALANCING,
    MPOL_F_RELATIVE_NODES, MPOL_F_STATIC_NODES, MPOL_INTERLEAVE, MPOL_LOCAL, MPOL_MAX,
    MPOL_MF_MOVE, MPOL_MF_MOVE_ALL, MPOL_MF_STRICT, MPOL_PREFERRED, MPOL_PREFERRED_MANY,
    MPOL_WEIGHTED_INTERLEAVE,
};

use super::names::{addr_name, mask_name, mode_name, prior_name};
use super::{Addr, Call, Case, MaskArg, PageState, PidArg, MISSING_PID, PAGE};
use PageState::{Hole, Read, Untouched, Written};

/// The nodemask shapes: NULL, empty, {0}, {0,1}, {0,300}, {0,1023}.
fn mask_shapes() -> Vec<MaskArg> {
    vec![
        None,
        Some(vec![]),
        Some(vec![0]),
        Some(vec![0, 1]),
        Some(vec![0, 300]),
        Some(vec![0, 1023]),
    ]
}

/// The `maxnode` edges.
const MAXNODES: [u64; 6] = [0, 1, 2, 64, 1025, 2000];

/// Every case of the suite.
pub fn all_cases() -> Vec<Case> {
    let mut cases = set_mempolicy_cases();
    cases.extend(get_mempolicy_cases());
    cases.extend(mbind_cases());
    cases.extend(migrate_pages_cases());
    cases.extend(move_pages_cases());
    cases.extend(super::edge_cases::edge_cases());
    cases
}

fn set_mempolicy_cases() -> Vec<Case> {
    let flag_sets = [
        0,
        MPOL_F_STATIC_NODES,
        MPOL_F_RELATIVE_NODES,
        MPOL_F_NUMA_BALANCING,
        MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES,
    ];
    let mut cases = Vec::new();
    for base in MPOL_DEFAULT..=MPOL_MAX {
        for flags in flag_sets {
            for mask in mask_shapes() {
                for maxnode in MAXNODES {
                    let mode = base | flags;
                    cases.push(Case {
                        name: format!(
                            "set_mempolicy({}, {}, maxnode={maxnode})",
                            mode_name(mode),
                            mask_name(&mask)
                        ),
                        layout: vec![],
                        prior: None,
                        before: vec![],
                        call: Call::SetMempolicy {
                            mode,
                            mask: mask.clone(),
                            maxnode,
                        },
                    });
                }
            }
        }
    }
    cases
}

fn get_mempolicy_cases() -> Vec<Case> {
    let layout = vec![vec![Written, Untouched, Read, Hole]];
    let priors: [Option<(i32, Vec<usize>)>; 6] = [
        None,
        Some((MPOL_INTERLEAVE, vec![0])),
        Some((MPOL_WEIGHTED_INTERLEAVE, vec![0])),
        Some((MPOL_BIND | MPOL_F_STATIC_NODES, vec![0, 1, 300])),
        Some((MPOL_PREFERRED, vec![0])),
        Some((MPOL_LOCAL, vec![])),
    ];
    let addrs = [
        Addr::Null,
        Addr::page(0, 0),
        Addr::page(0, 1),
        Addr::page(0, 2),
        Addr::page(0, 3),
    ];
    let masks: [(bool, u64); 7] = [
        (false, 0),
        (true, 0),
        (true, 1),
        (true, 2),
        (true, 64),
        (true, 1025),
        (true, 40000),
    ];
    let mut cases = Vec::new();
    for prior in &priors {
        for flags in (0..8u64).chain([8]) {
            for addr in addrs {
                for (index, (want_mask, maxnode)) in masks.into_iter().enumerate() {
                    // Once each without the policy pointer.
                    let want_policy = index != 2;
                    let prior_label = prior_name(prior);
                    let mut flag_names = Vec::new();
                    for (flag, name) in [
                        (MPOL_F_NODE, "NODE"),
                        (MPOL_F_ADDR, "ADDR"),
                        (MPOL_F_MEMS_ALLOWED, "MEMS_ALLOWED"),
                        (1 << 3, "bit3"),
                    ] {
                        if flags & u64::from(flag) != 0 {
                            flag_names.push(name);
                        }
                    }
                    cases.push(Case {
                        name: format!(
                            "get_mempolicy(policy={}, nmask={}, maxnode={maxnode}, addr={}, flags={}) after {prior_label}",
                            if want_policy { "ptr" } else { "NULL" },
                            if want_mask { "ptr" } else { "NULL" },
                            addr_name(addr, &layout),
                            if flag_names.is_empty() { "0".to_string() } else { flag_names.join("|") },
                        ),
                        layout: layout.clone(),
                        prior: prior.clone(),
                        before: vec![],
                        call: Call::GetMempolicy {
                            want_policy,
                            want_mask,
                            maxnode,
                            addr,
                            flags,
                        },
                    });
                }
            }
        }
    }
    cases
}

fn mbind_cases() -> Vec<Case> {
    let layouts: [(&str, Vec<PageState>); 4] = [
        ("mapped", vec![Written, Written, Read, Untouched]),
        ("partly mapped", vec![Written, Hole, Written, Untouched]),
        ("unmapped", vec![Hole, Hole]),
        ("hole at head", vec![Hole, Written, Written]),
    ];
    let policies: Vec<(i32, MaskArg)> = vec![
        (MPOL_DEFAULT, None),
        (MPOL_DEFAULT, Some(vec![])),
        (MPOL_DEFAULT, Some(vec![0])),
        (MPOL_PREFERRED, Some(vec![0])),
        (MPOL_PREFERRED, Some(vec![])),
        (MPOL_BIND, Some(vec![0])),
        (MPOL_BIND, Some(vec![0, 1])),
        (MPOL_BIND, Some(vec![1])),
        (MPOL_BIND | MPOL_F_STATIC_NODES, Some(vec![0, 1])),
        (MPOL_BIND | MPOL_F_RELATIVE_NODES, Some(vec![1])),
        (MPOL_PREFERRED | MPOL_F_RELATIVE_NODES, Some(vec![1])),
        (MPOL_INTERLEAVE, Some(vec![0, 300])),
        (MPOL_LOCAL, None),
        (MPOL_PREFERRED_MANY, Some(vec![0])),
        (MPOL_WEIGHTED_INTERLEAVE, Some(vec![0])),
        (MPOL_BIND | MPOL_F_NUMA_BALANCING, Some(vec![0])),
    ];
    let flag_sets: [(u32, &str); 7] = [
        (0, "0"),
        (MPOL_MF_STRICT, "STRICT"),
        (MPOL_MF_MOVE, "MOVE"),
        (MPOL_MF_MOVE_ALL, "MOVE_ALL"),
        (MPOL_MF_STRICT | MPOL_MF_MOVE, "STRICT|MOVE"),
        (MPOL_MF_STRICT | MPOL_MF_MOVE_ALL, "STRICT|MOVE_ALL"),
        (1 << 3, "LAZY"),
    ];
    let mut cases = Vec::new();
    for (layout_name, region) in &layouts {
        for (mode, mask) in &policies {
            for (flags, flags_name) in flag_sets {
                cases.push(Case {
                    name: format!(
                        "mbind({layout_name} {} pages, {}, {}, maxnode=1025, {flags_name})",
                        region.len(),
                        mode_name(*mode),
                        mask_name(mask)
                    ),
                    layout: vec![region.clone()],
                    prior: None,
                    before: vec![],
                    call: Call::Mbind {
                        addr: Addr::page(0, 0),
                        len: region.len() as u64 * PAGE,
                        mode: *mode,
                        mask: mask.clone(),
                        maxnode: 1025,
                        flags,
                    },
                });
            }
        }
    }
    let mapped = vec![Written, Written, Read, Untouched];
    let edges: [(&str, Addr, u64, u64, MaskArg); 10] = [
        ("length 0", Addr::page(0, 0), 0, 1025, Some(vec![0])),
        ("length 1 byte", Addr::page(0, 0), 1, 1025, Some(vec![0])),
        (
            "length 4 pages - 100",
            Addr::page(0, 0),
            4 * PAGE - 100,
            1025,
            Some(vec![0]),
        ),
        (
            "length aligning to 0",
            Addr::page(0, 0),
            u64::MAX - 100,
            1025,
            Some(vec![0]),
        ),
        (
            "end past 2^64",
            Addr::page(0, 0),
            0xffff_ffff_ffff_0000,
            1025,
            Some(vec![0]),
        ),
        (
            "unaligned start",
            Addr::Page {
                region: 0,
                page: 0,
                offset: 1,
            },
            PAGE,
            1025,
            Some(vec![0]),
        ),
        ("maxnode 0", Addr::page(0, 0), 4 * PAGE, 0, Some(vec![0])),
        ("maxnode 1", Addr::page(0, 0), 4 * PAGE, 1, Some(vec![0])),
        (
            "mask {0,1023} maxnode 2000",
            Addr::page(0, 0),
            4 * PAGE,
            2000,
            Some(vec![0, 1023]),
        ),
        ("NULL mask", Addr::page(0, 0), 4 * PAGE, 1025, None),
    ];
    for (edge, addr, len, maxnode, mask) in edges {
        for mode in [MPOL_BIND, MPOL_DEFAULT, MPOL_PREFERRED] {
            cases.push(Case {
                name: format!("mbind({edge}, {}, {})", mode_name(mode), mask_name(&mask)),
                layout: vec![mapped.clone()],
                prior: None,
                before: vec![],
                call: Call::Mbind {
                    addr,
                    len,
                    mode,
                    mask: mask.clone(),
                    maxnode,
                    flags: MPOL_MF_STRICT | MPOL_MF_MOVE,
                },
            });
        }
    }
    cases
}

fn migrate_pages_cases() -> Vec<Case> {
    let layout = vec![vec![Written, Read, Untouched]];
    let shapes: Vec<MaskArg> = mask_shapes().into_iter().take(5).collect();
    let mut cases = Vec::new();
    for pid in [PidArg::Raw(0), PidArg::Raw(MISSING_PID)] {
        for maxnode in MAXNODES {
            for old in &shapes {
                for new in &shapes {
                    cases.push(Case {
                        name: format!(
                            "migrate_pages(pid={}, maxnode={maxnode}, old={}, new={})",
                            pid.name(),
                            mask_name(old),
                            mask_name(new)
                        ),
                        layout: layout.clone(),
                        prior: None,
                        before: vec![],
                        call: Call::MigratePages {
                            pid,
                            maxnode,
                            old: old.clone(),
                            new: new.clone(),
                        },
                    });
                }
            }
        }
    }
    cases
}

fn move_pages_cases() -> Vec<Case> {
    let layout = vec![vec![Written, Read, Untouched, Hole]];
    let singles = [
        Addr::page(0, 0),
        Addr::Page {
            region: 0,
            page: 0,
            offset: 123,
        },
        Addr::page(0, 1),
        Addr::page(0, 2),
        Addr::page(0, 3),
        Addr::Null,
    ];
    let flag_sets: [(u32, &str); 4] = [
        (0, "0"),
        (MPOL_MF_MOVE, "MOVE"),
        (MPOL_MF_MOVE_ALL, "MOVE_ALL"),
        (1 << 0, "STRICT"),
    ];
    let mut cases = Vec::new();
    let mut push = |pid: PidArg, pages: Vec<Addr>, nodes: Option<Vec<i32>>, flags: (u32, &str)| {
        let names: Vec<String> = pages.iter().map(|addr| addr_name(*addr, &layout)).collect();
        cases.push(Case {
            name: format!(
                "move_pages(pid={}, [{}], nodes={}, {})",
                pid.name(),
                names.join(","),
                nodes
                    .as_ref()
                    .map_or("NULL".to_string(), |nodes| format!("{nodes:?}")),
                flags.1
            ),
            layout: layout.clone(),
            prior: None,
            before: vec![],
            call: Call::MovePages {
                pid,
                pages,
                nodes,
                flags: flags.0,
            },
        });
    };
    for addr in singles {
        for nodes in [
            None,
            Some(vec![0]),
            Some(vec![1]),
            Some(vec![-1]),
            Some(vec![1024]),
        ] {
            for flags in flag_sets {
                push(PidArg::Raw(0), vec![addr], nodes.clone(), flags);
            }
        }
    }
    let all: Vec<Addr> = (0..4).map(|page| Addr::page(0, page)).collect();
    for nodes in [
        None,
        Some(vec![0, 0, 0, 0]),
        Some(vec![0, 1, 0, 0]),
        Some(vec![0, 0, 1024, 0]),
        Some(vec![0, 0, 0, -1]),
    ] {
        for flags in [flag_sets[0], flag_sets[2]] {
            push(PidArg::Raw(0), all.clone(), nodes.clone(), flags);
            push(PidArg::Raw(MISSING_PID), all.clone(), nodes.clone(), flags);
        }
    }
    cases
}
