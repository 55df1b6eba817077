//! Random cases for the mempolicy suite: a seeded, deterministic generator
//! of calls whose arguments lean on the edges the fixed list does not
//! enumerate — `maxnode` around word and `MAX_NUMNODES` boundaries and far
//! past them, bits for nodes that do not exist or lie past `maxnode`,
//! unknown mode and call flags, unaligned and wrapping ranges, raw
//! addresses no mapping uses, bad pids and node numbers; and
//! `set_mempolicy_home_node` over ranges whose VMAs carry each kind of
//! policy (set by the calls made before).
//!
//! Owns only case construction: the cases run through the suite's own
//! machinery ([`super::run_cases`]). Invariant: every case stays inside
//! what both sides can run safely — bitmap bits below `MASK_WORDS * 64`,
//! ranges that end inside their region (or wrap, or align to nothing), raw
//! addresses below `mmap_min_addr` or above user space, pids that name no
//! other process.

use pageframe::vm::mempolicy::{
    MPOL_F_NUMA_BALANCING, MPOL_F_RELATIVE_NODES, MPOL_F_STATIC_NODES, MPOL_MF_MOVE,
    MPOL_MF_MOVE_ALL, MPOL_MF_STRICT,
};

use super::names::{prior_name, steps_name};
use super::{Addr, Call, Case, MaskArg, PageState, PidArg, MASK_WORDS, MISSING_PID, PAGE};

/// A small deterministic generator (SplitMix64): the cases of a seed never
/// change, whatever the platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `bound` (> 0).
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }

    /// True with probability `1 / n`.
    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }
}

/// Node numbers worth setting: real nodes, word edges, `MAX_NUMNODES`
/// edges, and bits far past it (all below the buffer's width).
const NODES: [usize; 18] = [
    0, 0, 0, 1, 2, 5, 62, 63, 64, 65, 127, 300, 1022, 1023, 1024, 1025, 2047, 4095,
];

/// `maxnode` values around the edges.
const MAXNODES: [u64; 28] = [
    0,
    1,
    2,
    3,
    63,
    64,
    65,
    66,
    127,
    128,
    129,
    1023,
    1024,
    1025,
    1026,
    1089,
    2047,
    2048,
    2049,
    4097,
    32768,
    32769,
    32770,
    40000,
    1 << 32,
    (1 << 32) + 1,
    1 << 63,
    u64::MAX,
];

fn maxnode(rng: &mut Rng) -> u64 {
    if rng.one_in(5) {
        // Anything up to just past a page of bits.
        rng.below(33_000)
    } else if rng.one_in(5) {
        // Around MAX_NUMNODES, where get_nodes() changes rule.
        1000 + rng.below(200)
    } else {
        rng.pick(&MAXNODES)
    }
}

/// A bitmap, sometimes with bits just below, at and past `maxnode - 1`
/// (the last bit the kernel reads).
fn mask_near(rng: &mut Rng, maxnode: u64) -> MaskArg {
    let mut mask = mask(rng);
    if let Some(nodes) = mask.as_mut().filter(|_| rng.one_in(3)) {
        let last = maxnode.wrapping_sub(2);
        for delta in [0u64, 1, 2, 63, 64] {
            let node = last.wrapping_add(delta).wrapping_sub(1);
            if node < (MASK_WORDS * 64) as u64 && rng.one_in(2) {
                nodes.push(node as usize);
            }
        }
        nodes.sort_unstable();
        nodes.dedup();
    }
    mask
}

fn mask(rng: &mut Rng) -> MaskArg {
    if rng.one_in(6) {
        return None;
    }
    let count = rng.pick(&[0u64, 1, 1, 1, 2, 2, 3, 5]);
    let mut nodes: Vec<usize> = (0..count)
        .map(|_| {
            if rng.one_in(8) {
                rng.below((MASK_WORDS * 64) as u64) as usize
            } else {
                rng.pick(&NODES)
            }
        })
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    Some(nodes)
}

/// A mode with flags: mostly a known mode with any mix of the three mode
/// flags, sometimes an unknown mode or flag bit.
fn mode(rng: &mut Rng) -> i32 {
    let base = if rng.one_in(8) {
        rng.pick(&[7, 8, 15, -1, 0x1fff, i32::MIN])
    } else {
        rng.below(7) as i32
    };
    let mut flags = 0;
    for flag in [
        MPOL_F_STATIC_NODES,
        MPOL_F_RELATIVE_NODES,
        MPOL_F_NUMA_BALANCING,
    ] {
        if rng.one_in(4) {
            flags |= flag;
        }
    }
    if rng.one_in(10) {
        flags |= rng.pick(&[1 << 12, 1 << 16, 1 << 30, i32::MIN]);
    }
    base | flags
}

/// One region, sometimes two (mapped one after the other, so the kernel
/// may merge them into one VMA where pageframe keeps two: ranges never
/// cross from one region into the other).
fn layout(rng: &mut Rng) -> Vec<Vec<PageState>> {
    let states = [
        PageState::Written,
        PageState::Written,
        PageState::Read,
        PageState::Untouched,
        PageState::Hole,
    ];
    let regions = if rng.one_in(4) { 2 } else { 1 };
    (0..regions)
        .map(|_| {
            let pages = 1 + rng.below(5) as usize;
            (0..pages).map(|_| rng.pick(&states)).collect()
        })
        .collect()
}

/// Raw addresses nothing maps: below `mmap_min_addr` (both sides' mappings
/// start far above), above 47-bit user space, non-canonical.
const RAW_ADDRS: [u64; 6] = [
    0x1000,
    0x2000,
    0x8000_0000_0000,
    0x8000_0000_1000,
    0xffff_8000_0000_0000,
    0xffff_ffff_ffff_f000,
];

/// An address: mostly a page of the region (sometimes unaligned), or a raw
/// or NULL one.
fn addr(rng: &mut Rng, layout: &[Vec<PageState>]) -> Addr {
    match rng.below(10) {
        0 => Addr::Null,
        1 => Addr::Raw(rng.pick(&RAW_ADDRS)),
        _ => {
            let region = rng.below(layout.len() as u64) as usize;
            Addr::Page {
                region,
                page: rng.below(layout[region].len() as u64) as usize,
                offset: if rng.one_in(5) {
                    rng.pick(&[1, 8, 2048, PAGE - 1])
                } else {
                    0
                },
            }
        }
    }
}

/// A length for `mbind` at `addr`: inside the region, or one of the edges
/// that never reach past it (0, wrapping, aligning to nothing).
fn length(rng: &mut Rng, addr: Addr, layout: &[Vec<PageState>]) -> u64 {
    let room = match addr {
        Addr::Page {
            region,
            page,
            offset,
        } => (layout[region].len() - page) as u64 * PAGE - offset,
        // Small: [0, huge) would cover the live process's own mappings.
        Addr::Null | Addr::Raw(_) => {
            return rng.pick(&[0, 1, PAGE, 0x4000, u64::MAX, u64::MAX - 100]);
        }
    };
    match rng.below(8) {
        // Each wraps past 2^64 from a region (EINVAL) or aligns to 0.
        0 => rng.pick(&[
            0,
            u64::MAX,
            u64::MAX - 100,
            u64::MAX - PAGE + 2,
            0u64.wrapping_sub(PAGE),
            0u64.wrapping_sub(16 * PAGE),
        ]),
        1 => 1 + rng.below(room.max(1)),
        _ => room.min(PAGE * (1 + rng.below(room.div_ceil(PAGE).max(1)))),
    }
}

fn mbind_flags(rng: &mut Rng) -> u32 {
    let mut flags = 0;
    for flag in [MPOL_MF_STRICT, MPOL_MF_MOVE, MPOL_MF_MOVE_ALL] {
        if rng.one_in(3) {
            flags |= flag;
        }
    }
    if rng.one_in(10) {
        flags |= rng.pick(&[1 << 3, 1 << 4, 1 << 5, 1 << 31]);
    }
    flags
}

fn pid(rng: &mut Rng) -> PidArg {
    match rng.below(8) {
        0 => PidArg::Own,
        1 => PidArg::Raw(rng.pick(&[MISSING_PID, -1, i32::MIN, i32::MAX])),
        _ => PidArg::Raw(0),
    }
}

/// A task policy set before the call (maxnode 1025, so nodes below 1024).
fn prior(rng: &mut Rng) -> Option<(i32, Vec<usize>)> {
    if rng.one_in(2) {
        return None;
    }
    Some(rng.pick(&[
        (2, vec![0]),
        (3, vec![0]),
        (3, vec![0, 1, 300]),
        (6, vec![0]),
        (1, vec![0]),
        (4, vec![]),
        (5, vec![0]),
        (2 | MPOL_F_STATIC_NODES, vec![0, 1, 300]),
        (3 | MPOL_F_RELATIVE_NODES, vec![1, 2]),
        (2 | MPOL_F_NUMA_BALANCING, vec![0, 64]),
        (5 | MPOL_F_NUMA_BALANCING, vec![0]),
    ]))
}

fn node_value(rng: &mut Rng) -> i32 {
    if rng.one_in(3) {
        rng.pick(&[1, 2, -1, 1023, 1024, 1025, i32::MAX, i32::MIN, -22])
    } else {
        0
    }
}

/// A call that most often succeeds and leaves state behind: `mbind` of
/// a valid policy over part of the region (splitting its VMA), or a move.
fn setup_call(rng: &mut Rng, layout: &[Vec<PageState>]) -> Call {
    if rng.one_in(4) {
        return call(rng, layout);
    }
    let region = rng.below(layout.len() as u64) as usize;
    let pages = layout[region].len();
    let first = rng.below(pages as u64) as usize;
    let count = 1 + rng.below((pages - first) as u64);
    let (mode, nodes) = rng.pick(&[
        (0, vec![]),
        (1, vec![0]),
        (1, vec![]),
        (2, vec![0]),
        (2, vec![0, 1]),
        (3, vec![0, 300]),
        (4, vec![]),
        (5, vec![0]),
        (6, vec![0]),
        (1 | MPOL_F_STATIC_NODES, vec![0, 5]),
        (2 | MPOL_F_STATIC_NODES, vec![0, 300]),
        (2 | MPOL_F_RELATIVE_NODES, vec![1]),
        (3 | MPOL_F_RELATIVE_NODES, vec![2, 3]),
        (2 | MPOL_F_NUMA_BALANCING, vec![0]),
        (5 | MPOL_F_NUMA_BALANCING, vec![0, 64]),
    ]);
    Call::Mbind {
        addr: Addr::page(region, first),
        len: count * PAGE,
        mode,
        mask: Some(nodes),
        maxnode: 1025,
        flags: rng.pick(&[0, MPOL_MF_MOVE, MPOL_MF_STRICT | MPOL_MF_MOVE]),
    }
}

/// One random case.
fn case(rng: &mut Rng, index: usize) -> Case {
    let layout = layout(rng);
    let prior = prior(rng);
    let before = match rng.below(6) {
        0 => vec![setup_call(rng, &layout)],
        1 => vec![setup_call(rng, &layout), setup_call(rng, &layout)],
        _ => vec![],
    };
    let call = call(rng, &layout);
    let name = format!(
        "random#{index} {} on {:?} after {}",
        steps_name(&before, &call, &layout),
        layout,
        prior_name(&prior)
    );
    Case {
        name,
        layout,
        prior,
        before,
        call,
    }
}

/// One random call over `layout`.
fn call(rng: &mut Rng, layout: &[Vec<PageState>]) -> Call {
    match rng.below(6) {
        0 => {
            let maxnode = maxnode(rng);
            Call::SetMempolicy {
                mode: mode(rng),
                mask: mask_near(rng, maxnode),
                maxnode,
            }
        }
        1 => Call::GetMempolicy {
            want_policy: !rng.one_in(4),
            want_mask: !rng.one_in(4),
            maxnode: maxnode(rng),
            addr: addr(rng, layout),
            flags: if rng.one_in(10) {
                rng.pick(&[8, 16, 1 << 31, 1 << 32, u64::MAX])
            } else {
                rng.below(8)
            },
        },
        2 => {
            let start = addr(rng, layout);
            let maxnode = maxnode(rng);
            Call::Mbind {
                addr: start,
                len: length(rng, start, layout),
                mode: mode(rng),
                mask: mask_near(rng, maxnode),
                maxnode,
                flags: mbind_flags(rng),
            }
        }
        5 => {
            let start = addr(rng, layout);
            Call::SetMempolicyHomeNode {
                addr: start,
                len: length(rng, start, layout),
                home_node: if rng.one_in(4) {
                    rng.pick(&[1, 2, 1023, 1024, 1 << 40, u64::MAX])
                } else {
                    0
                },
                flags: if rng.one_in(8) {
                    rng.pick(&[1, 1 << 32, u64::MAX])
                } else {
                    0
                },
            }
        }
        3 => {
            let maxnode = maxnode(rng);
            Call::MigratePages {
                pid: pid(rng),
                maxnode,
                old: mask_near(rng, maxnode),
                new: mask_near(rng, maxnode),
            }
        }
        _ => {
            let count = rng.pick(&[0, 1, 1, 2, 3, 5, 17]);
            Call::MovePages {
                pid: pid(rng),
                pages: (0..count).map(|_| addr(rng, layout)).collect(),
                nodes: if rng.one_in(3) {
                    None
                } else {
                    Some((0..count).map(|_| node_value(rng)).collect())
                },
                flags: if rng.one_in(8) {
                    rng.pick(&[1, 8, 1 << 31, MPOL_MF_MOVE | MPOL_MF_MOVE_ALL])
                } else {
                    rng.pick(&[0, MPOL_MF_MOVE, MPOL_MF_MOVE_ALL])
                },
            }
        }
    }
}

/// `count` random cases from `seed`; the same seed gives the same cases.
pub fn random_cases(seed: u64, count: usize) -> Vec<Case> {
    let mut rng = Rng(seed);
    (0..count).map(|index| case(&mut rng, index)).collect()
}
