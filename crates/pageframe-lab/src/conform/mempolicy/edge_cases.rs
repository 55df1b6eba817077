//! Fixed cases the random generator ([`super::random`]) showed worth
//! keeping: the user-bitmap word edges around `MAX_NUMNODES` (where Linux's
//! get_nodes() checks whole words, so a bit past `maxnode - 1` can still be
//! EINVAL), raw addresses no mapping uses, the caller's own pid spelled
//! out, unknown mode flag bits, `move_pages` past its 16-page chunk, and
//! short sequences whose first calls leave VMA policies for the last one
//! to see, `set_mempolicy_home_node` among them.

use pageframe::vm::mempolicy::{
    MPOL_BIND, MPOL_DEFAULT, MPOL_F_ADDR, MPOL_F_NODE, MPOL_F_RELATIVE_NODES, MPOL_F_STATIC_NODES,
    MPOL_INTERLEAVE, MPOL_MF_MOVE, MPOL_MF_STRICT, MPOL_PREFERRED, MPOL_PREFERRED_MANY,
};

use super::names::steps_name;
use super::{Addr, Call, Case, PageState, PidArg, MISSING_PID, PAGE};
use PageState::{Hole, Read, Untouched, Written};

/// Every edge case.
pub(super) fn edge_cases() -> Vec<Case> {
    let mut cases = word_edge_cases();
    cases.extend(raw_address_cases());
    cases.extend(pid_and_flag_cases());
    cases.extend(sequence_cases());
    cases.extend(home_node_cases());
    cases
}

/// A case over one region of `pages` (none when empty).
fn case(pages: Vec<PageState>, before: Vec<Call>, call: Call) -> Case {
    let layout = if pages.is_empty() {
        vec![]
    } else {
        vec![pages]
    };
    let on = layout
        .first()
        .map_or(String::new(), |pages| format!(" on {pages:?}"));
    Case {
        name: format!("{}{on}", steps_name(&before, &call, &layout)),
        layout,
        prior: None,
        before,
        call,
    }
}

/// A bit just below, at and past the last bit `maxnode` reads, and at the
/// ends of its word, with each call that reads a bitmap.
fn word_edge_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for maxnode in [
        64u64, 65, 100, 1024, 1025, 1026, 1088, 1089, 1090, 2048, 2049,
    ] {
        let last = maxnode - 2;
        let word_end = (last / 64) * 64 + 63;
        let mut bits = vec![last, last + 1, last + 2, word_end, word_end + 1];
        bits.sort_unstable();
        bits.dedup();
        for bit in bits {
            let mask = Some(vec![0, bit as usize]);
            cases.push(case(
                vec![],
                vec![],
                Call::SetMempolicy {
                    mode: MPOL_BIND,
                    mask: mask.clone(),
                    maxnode,
                },
            ));
            cases.push(case(
                vec![Written],
                vec![],
                Call::Mbind {
                    addr: Addr::page(0, 0),
                    len: PAGE,
                    mode: MPOL_PREFERRED,
                    mask: mask.clone(),
                    maxnode,
                    flags: MPOL_MF_STRICT | MPOL_MF_MOVE,
                },
            ));
            cases.push(case(
                vec![Written],
                vec![],
                Call::MigratePages {
                    pid: PidArg::Raw(0),
                    maxnode,
                    old: Some(vec![1]),
                    new: mask,
                },
            ));
        }
    }
    cases
}

/// Addresses below `mmap_min_addr`, above user space and non-canonical.
fn raw_address_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for raw in [0x1000u64, 0x8000_0000_0000, 0xffff_ffff_ffff_f000] {
        let addr = Addr::Raw(raw);
        for flags in [MPOL_F_ADDR, MPOL_F_ADDR | MPOL_F_NODE] {
            cases.push(case(
                vec![Written],
                vec![],
                Call::GetMempolicy {
                    want_policy: true,
                    want_mask: true,
                    maxnode: 1025,
                    addr,
                    flags: u64::from(flags),
                },
            ));
        }
        for mode in [MPOL_BIND, MPOL_DEFAULT] {
            cases.push(case(
                vec![Written],
                vec![],
                Call::Mbind {
                    addr,
                    len: 2 * PAGE,
                    mode,
                    mask: Some(vec![0]),
                    maxnode: 1025,
                    flags: 0,
                },
            ));
        }
        for nodes in [None, Some(vec![0, 0])] {
            cases.push(case(
                vec![Written],
                vec![],
                Call::MovePages {
                    pid: PidArg::Raw(0),
                    pages: vec![addr, Addr::page(0, 0)],
                    nodes,
                    flags: MPOL_MF_MOVE,
                },
            ));
        }
    }
    cases
}

/// The caller's own pid (not 0), pids no process has, unknown mode bits,
/// and `move_pages` over more than one 16-page chunk.
fn pid_and_flag_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let layout = vec![Written, Read, Untouched, Hole];
    let all: Vec<Addr> = (0..4).map(|page| Addr::page(0, page)).collect();
    for pid in [
        PidArg::Own,
        PidArg::Raw(-1),
        PidArg::Raw(i32::MIN),
        PidArg::Raw(MISSING_PID),
    ] {
        cases.push(case(
            layout.clone(),
            vec![],
            Call::MigratePages {
                pid,
                maxnode: 1025,
                old: Some(vec![0]),
                new: Some(vec![0]),
            },
        ));
        for nodes in [None, Some(vec![0; 4])] {
            cases.push(case(
                layout.clone(),
                vec![],
                Call::MovePages {
                    pid,
                    pages: all.clone(),
                    nodes,
                    flags: 0,
                },
            ));
        }
    }
    for mode in [
        MPOL_BIND | 1 << 12,
        MPOL_BIND | 1 << 16,
        MPOL_BIND | i32::MIN,
        -1,
        MPOL_PREFERRED | MPOL_F_STATIC_NODES | 1 << 11,
    ] {
        cases.push(case(
            vec![],
            vec![],
            Call::SetMempolicy {
                mode,
                mask: Some(vec![0]),
                maxnode: 1025,
            },
        ));
        cases.push(case(
            vec![Written],
            vec![],
            Call::Mbind {
                addr: Addr::page(0, 0),
                len: PAGE,
                mode,
                mask: Some(vec![0]),
                maxnode: 1025,
                flags: 0,
            },
        ));
    }
    let many: Vec<Addr> = (0..18).map(|index| Addr::page(0, index % 4)).collect();
    let mut nodes = vec![0; 18];
    cases.push(case(
        layout.clone(),
        vec![],
        Call::MovePages {
            pid: PidArg::Raw(0),
            pages: many.clone(),
            nodes: None,
            flags: 0,
        },
    ));
    nodes[16] = 1024;
    cases.push(case(
        layout,
        vec![],
        Call::MovePages {
            pid: PidArg::Raw(0),
            pages: many,
            nodes: Some(nodes),
            flags: MPOL_MF_MOVE,
        },
    ));
    cases
}

fn mbind(first: usize, pages: u64, mode: i32, nodes: Vec<usize>, flags: u32) -> Call {
    Call::Mbind {
        addr: Addr::page(0, first),
        len: pages * PAGE,
        mode,
        mask: Some(nodes),
        maxnode: 1025,
        flags,
    }
}

/// A policy installed on part of a region (splitting its VMA), then read
/// back, replaced or checked against.
fn sequence_cases() -> Vec<Case> {
    let layout = vec![Written, Untouched, Written, Read];
    let setups = [
        mbind(1, 2, MPOL_BIND | MPOL_F_STATIC_NODES, vec![0, 300], 0),
        mbind(1, 2, MPOL_PREFERRED | MPOL_F_RELATIVE_NODES, vec![1, 5], 0),
        mbind(0, 3, MPOL_INTERLEAVE, vec![0, 1, 1023], MPOL_MF_MOVE),
        mbind(2, 2, MPOL_PREFERRED_MANY, vec![0], MPOL_MF_STRICT),
    ];
    let mut cases = Vec::new();
    for setup in setups {
        for page in [0, 1, 3] {
            for maxnode in [2, 1025] {
                cases.push(case(
                    layout.clone(),
                    vec![setup.clone()],
                    Call::GetMempolicy {
                        want_policy: true,
                        want_mask: true,
                        maxnode,
                        addr: Addr::page(0, page),
                        flags: u64::from(MPOL_F_ADDR),
                    },
                ));
            }
        }
        cases.push(case(
            layout.clone(),
            vec![setup.clone()],
            Call::GetMempolicy {
                want_policy: true,
                want_mask: false,
                maxnode: 0,
                addr: Addr::page(0, 1),
                flags: u64::from(MPOL_F_ADDR | MPOL_F_NODE),
            },
        ));
        for (first, pages) in [(0, 4), (2, 1)] {
            cases.push(case(
                layout.clone(),
                vec![setup.clone()],
                mbind(first, pages, MPOL_DEFAULT, vec![], MPOL_MF_STRICT),
            ));
            cases.push(case(
                layout.clone(),
                vec![setup.clone()],
                mbind(
                    first,
                    pages,
                    MPOL_BIND | MPOL_F_RELATIVE_NODES,
                    vec![1],
                    MPOL_MF_STRICT,
                ),
            ));
        }
    }
    cases
}

fn home_node(first: usize, len: u64, home_node: u64, flags: u64) -> Call {
    Call::SetMempolicyHomeNode {
        addr: Addr::page(0, first),
        len,
        home_node,
        flags,
    }
}

/// `set_mempolicy_home_node` after no policy, BIND, PREFERRED_MANY and
/// INTERLEAVE on part of the region: its argument checks in order, ranges
/// over VMAs with and without a policy, over holes, wrapping and empty.
fn home_node_cases() -> Vec<Case> {
    let layout = vec![Written, Untouched, Hole, Written];
    let setups: [Vec<Call>; 5] = [
        vec![],
        vec![mbind(1, 1, MPOL_BIND, vec![0], 0)],
        vec![mbind(0, 2, MPOL_PREFERRED_MANY, vec![0], 0)],
        vec![mbind(3, 1, MPOL_INTERLEAVE, vec![0], 0)],
        vec![
            mbind(0, 1, MPOL_BIND | MPOL_F_STATIC_NODES, vec![0, 300], 0),
            mbind(3, 1, MPOL_PREFERRED, vec![0], 0),
        ],
    ];
    let calls = [
        home_node(0, 4 * PAGE, 0, 0),
        home_node(0, 2 * PAGE, 0, 0),
        home_node(1, PAGE, 0, 0),
        home_node(3, PAGE, 0, 0),
        home_node(2, PAGE, 0, 0),
        home_node(0, 4 * PAGE, 1, 0),
        home_node(0, 4 * PAGE, 1024, 0),
        home_node(0, 4 * PAGE, 0, 1),
        home_node(0, 0, 0, 0),
        home_node(0, u64::MAX - 100, 0, 0),
        home_node(0, 0u64.wrapping_sub(PAGE), 0, 0),
        Call::SetMempolicyHomeNode {
            addr: Addr::Page {
                region: 0,
                page: 0,
                offset: 1,
            },
            len: PAGE,
            home_node: 1,
            flags: 1,
        },
        Call::SetMempolicyHomeNode {
            addr: Addr::Raw(0x1000),
            len: PAGE,
            home_node: 0,
            flags: 0,
        },
    ];
    let mut cases = Vec::new();
    for setup in &setups {
        for call in &calls {
            cases.push(case(layout.clone(), setup.clone(), call.clone()));
        }
    }
    cases
}
