//! A state-machine test of the vm's memory policies and page placement:
//! random sequences of mmap, munmap, touch (read or write), set_mempolicy,
//! mbind (with STRICT / MOVE), migrate_pages and move_pages, each run on
//! the vm and on a small reference model of the policy state (task policy,
//! per-page VMA policy) and of every page's state (untouched, zero page, or
//! a page on a node). After every step: the call's result equals the
//! model's, the vm's invariants hold, every page's `move_pages` status and
//! `get_mempolicy(MPOL_F_ADDR)` answer equal the model's, and a call that
//! failed left the task exactly as it was (except `move_pages` stopped by a
//! bad node, which Linux lets move the pages before it). Proptest shrinks a
//! failing sequence.
//!
//! The machine: 4 nodes of 16 MiB, CPU n on node n, SLIT 10 local / 20
//! remote, so the first node of a mask in the CPU node's zonelist is the
//! CPU's node, else the next one above it, else the lowest.

use std::collections::BTreeMap;

use pageframe::vm::mempolicy::*;
use pageframe::vm::{NumaBalancingConfig, Pid, Vm};
use pageframe::Errno;
use pageframe::{CpuId, LocalPageAllocator, MachineDesc, NodeId, Nodemask};
use proptest::prelude::*;

const PAGE: u64 = 4096;
const NODES: u16 = 4;
/// The node the invalid move_pages target stands for.
const BAD_NODE: i32 = 1024;

/// A policy as the model keeps it (`None` is the default policy).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pol {
    Local,
    Preferred(u16),
    Bind(Vec<u16>),
    Interleave(Vec<u16>),
}

impl Pol {
    /// get_mempolicy's answer: the mode word and the nodes.
    fn report(policy: Option<&Pol>) -> (i32, Vec<u16>) {
        match policy {
            None => (MPOL_DEFAULT, vec![]),
            Some(Pol::Local) => (MPOL_LOCAL, vec![]),
            Some(Pol::Preferred(node)) => (MPOL_PREFERRED, vec![*node]),
            Some(Pol::Bind(nodes)) => (MPOL_BIND, nodes.clone()),
            Some(Pol::Interleave(nodes)) => (MPOL_INTERLEAVE, nodes.clone()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PageState {
    Untouched,
    Zero,
    OnNode(u16),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct ModelPage {
    /// Page offset in its original mapping (interleave index).
    offset: u64,
    state: PageState,
    policy: Option<Pol>,
}

/// The reference model of one task.
#[derive(Clone, Debug, Default)]
struct Model {
    pages: BTreeMap<u64, ModelPage>,
    task_policy: Option<Pol>,
}

#[derive(Clone, Debug)]
enum Op {
    Mmap(u64),
    Munmap(u16, u64),
    Touch(u16, bool),
    SetPolicy(u8, u8, bool),
    Mbind(u16, u64, u8, u8, bool, u8),
    Migrate(u8, u8),
    MovePages(u16, u64, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (1u64..12).prop_map(Op::Mmap),
        1 => (any::<u16>(), 1u64..6).prop_map(|(at, n)| Op::Munmap(at, n)),
        5 => (any::<u16>(), any::<bool>()).prop_map(|(at, write)| Op::Touch(at, write)),
        2 => (0u8..5, 0u8..16, any::<bool>()).prop_map(|(m, n, big)| Op::SetPolicy(m, n, big)),
        3 => (any::<u16>(), 1u64..8, 0u8..5, 0u8..16, any::<bool>(), 0u8..4)
            .prop_map(|(at, n, m, mask, big, f)| Op::Mbind(at, n, m, mask, big, f)),
        1 => (0u8..16, 0u8..16).prop_map(|(old, new)| Op::Migrate(old, new)),
        2 => (any::<u16>(), 1u64..4, 0u8..5).prop_map(|(at, n, node)| Op::MovePages(at, n, node)),
    ]
}

const MODES: [i32; 5] = [
    MPOL_DEFAULT,
    MPOL_PREFERRED,
    MPOL_BIND,
    MPOL_INTERLEAVE,
    MPOL_LOCAL,
];

fn mask_nodes(mask: u8) -> Vec<u16> {
    (0..NODES).filter(|node| mask >> node & 1 != 0).collect()
}

/// The user bitmap of `mask` (bit 300, a node that cannot exist, with `big`).
fn words(mask: u8, big: bool) -> Vec<u64> {
    let mut words = vec![0u64; 16];
    words[0] = u64::from(mask);
    if big {
        words[300 / 64] |= 1 << (300 % 64);
    }
    words
}

/// What mpol_new() + mpol_set_nodemask() make of a request on a machine
/// whose every node has memory.
fn expected_policy(mode: i32, mask: u8, big: bool) -> Result<Option<Pol>, Errno> {
    let nodes = mask_nodes(mask);
    let user_empty = nodes.is_empty() && !big;
    match mode {
        MPOL_DEFAULT if user_empty => Ok(None),
        MPOL_LOCAL if user_empty => Ok(Some(Pol::Local)),
        MPOL_DEFAULT | MPOL_LOCAL => Err(Errno::EINVAL),
        MPOL_PREFERRED if user_empty => Ok(Some(Pol::Local)),
        _ if nodes.is_empty() => Err(Errno::EINVAL),
        MPOL_PREFERRED => Ok(Some(Pol::Preferred(nodes[0]))),
        MPOL_BIND => Ok(Some(Pol::Bind(nodes))),
        _ => Ok(Some(Pol::Interleave(nodes))),
    }
}

/// The node a new page at `page` gets from the CPU on node `cpu_node`.
fn place(model: &Model, page: &ModelPage, cpu_node: u16) -> u16 {
    match page.policy.as_ref().or(model.task_policy.as_ref()) {
        None | Some(Pol::Local) => cpu_node,
        Some(Pol::Preferred(node)) => *node,
        Some(Pol::Bind(nodes)) if nodes.contains(&cpu_node) => cpu_node,
        // The first node of the CPU node's zonelist in the mask: at equal
        // distance the zonelist takes the nodes above the local one first
        // (find_next_best_node()'s penalty for lower ids).
        Some(Pol::Bind(nodes)) => nodes
            .iter()
            .copied()
            .find(|node| *node > cpu_node)
            .unwrap_or(nodes[0]),
        Some(Pol::Interleave(nodes)) => nodes[(page.offset % nodes.len() as u64) as usize],
    }
}

struct Harness<'a> {
    vm: Vm<'a>,
    pid: Pid,
    cpu_node: u16,
    model: Model,
    /// First virtual page mmap hands out, and one past the last handed out.
    window: (u64, u64),
}

impl Harness<'_> {
    /// A virtual page of the window from a random choice.
    fn pick(&self, at: u16) -> u64 {
        let (start, end) = self.window;
        start + u64::from(at) % (end - start).max(1)
    }

    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let before = format!("{:?}", self.vm.task(self.pid));
        let mut may_change_on_error = false;
        let (actual, expected): (Result<(), Errno>, Vec<Result<(), Errno>>) = match *op {
            Op::Mmap(pages) => {
                let addr = self
                    .vm
                    .mmap(self.pid, pages * PAGE)
                    .map_err(|err| TestCaseError::fail(format!("mmap of {pages} pages: {err}")))?;
                let start = addr / PAGE;
                if self.window.0 == 0 {
                    self.window.0 = start;
                }
                self.window.1 = self.window.1.max(start + pages);
                for offset in 0..pages {
                    let old = self.model.pages.insert(
                        start + offset,
                        ModelPage {
                            offset,
                            state: PageState::Untouched,
                            policy: None,
                        },
                    );
                    prop_assert!(old.is_none(), "mmap reused page {}", start + offset);
                }
                (Ok(()), vec![Ok(())])
            }
            Op::Munmap(at, pages) => {
                let start = self.pick(at);
                let result = self.vm.munmap(self.pid, start * PAGE, pages * PAGE);
                for vpn in start..start + pages {
                    self.model.pages.remove(&vpn);
                }
                (result, vec![Ok(())])
            }
            Op::Touch(at, write) => {
                let vpn = self.pick(at);
                let result = self.vm.access(self.pid, vpn * PAGE, write);
                let expected = match self.model.pages.get(&vpn).cloned() {
                    None => Err(Errno::EFAULT),
                    Some(page) => {
                        let state = match (page.state, write) {
                            (PageState::OnNode(node), _) => PageState::OnNode(node),
                            (_, true) => {
                                PageState::OnNode(place(&self.model, &page, self.cpu_node))
                            }
                            (_, false) => PageState::Zero,
                        };
                        self.model.pages.get_mut(&vpn).expect("present").state = state;
                        let node = match state {
                            PageState::OnNode(node) => node,
                            _ => 0,
                        };
                        if let Ok(access) = &result {
                            prop_assert_eq!(
                                access.node,
                                NodeId(node),
                                "touch of page {:#x} ({:?}, write {})",
                                vpn,
                                page,
                                write
                            );
                        }
                        Ok(())
                    }
                };
                (result.map(drop), vec![expected])
            }
            Op::SetPolicy(mode, mask, big) => {
                let mode = MODES[mode as usize];
                let result = self
                    .vm
                    .set_mempolicy(self.pid, mode, Some(&words(mask, big)), 1025);
                let expected = expected_policy(mode, mask, big).map(|policy| {
                    self.model.task_policy = policy;
                });
                (result, vec![expected])
            }
            Op::Mbind(at, pages, mode, mask, big, flags) => {
                let start = self.pick(at);
                let mode = MODES[mode as usize];
                let flags = [
                    0,
                    MPOL_MF_STRICT,
                    MPOL_MF_MOVE,
                    MPOL_MF_STRICT | MPOL_MF_MOVE,
                ][flags as usize];
                let result = self.vm.mbind(
                    self.pid,
                    start * PAGE,
                    pages * PAGE,
                    mode,
                    Some(&words(mask, big)),
                    1025,
                    flags,
                );
                (
                    result,
                    self.model_mbind(start, pages, mode, mask, big, flags),
                )
            }
            Op::Migrate(old, new) => {
                let result = self
                    .vm
                    .migrate_pages(
                        self.pid,
                        0,
                        1025,
                        Some(&words(old, false)),
                        Some(&words(new, false)),
                    )
                    .map(|failed| assert_eq!(failed, 0));
                let expected = if new == 0 {
                    Err(Errno::EINVAL)
                } else {
                    self.model_migrate(&mask_nodes(old), &mask_nodes(new));
                    Ok(())
                };
                (result, vec![expected])
            }
            Op::MovePages(at, count, node) => {
                let start = self.pick(at);
                let pages: Vec<u64> = (start..start + count).map(|vpn| vpn * PAGE).collect();
                let target = if node == 4 { BAD_NODE } else { i32::from(node) };
                let mut nodes = vec![0; pages.len()];
                *nodes.last_mut().expect("at least one page") = target;
                let mut status = vec![i32::MIN; pages.len()];
                let result = self
                    .vm
                    .move_pages(self.pid, 0, &pages, Some(&nodes), &mut status, 0)
                    .map(drop);
                let mut expected_status = vec![i32::MIN; pages.len()];
                let mut expected = Ok(());
                for (index, (addr, node)) in pages.iter().zip(&nodes).enumerate() {
                    if *node == BAD_NODE {
                        expected = Err(Errno::ENODEV);
                        may_change_on_error = true;
                        break;
                    }
                    expected_status[index] = match self.model.pages.get_mut(&(addr / PAGE)) {
                        None => -Errno::EFAULT.code(),
                        Some(page) => match page.state {
                            PageState::Untouched => -Errno::ENOENT.code(),
                            PageState::Zero => -Errno::EFAULT.code(),
                            PageState::OnNode(_) => {
                                page.state = PageState::OnNode(*node as u16);
                                *node
                            }
                        },
                    };
                }
                prop_assert_eq!(&status, &expected_status, "move_pages statuses");
                (result, vec![expected])
            }
        };
        prop_assert!(
            expected.contains(&actual),
            "{op:?}: vm {actual:?}, model {expected:?}"
        );
        if actual.is_err() && !may_change_on_error {
            prop_assert_eq!(
                &before,
                &format!("{:?}", self.vm.task(self.pid)),
                "{:?} failed but changed the task",
                op
            );
        }
        self.compare()
    }

    /// The reference mbind: the errors it may give (EFAULT and EIO may both
    /// be right when a range has a hole and a misplaced page: which comes
    /// first depends on VMA boundaries), or its effect.
    fn model_mbind(
        &mut self,
        start: u64,
        pages: u64,
        mode: i32,
        mask: u8,
        big: bool,
        flags: u32,
    ) -> Vec<Result<(), Errno>> {
        let policy = match expected_policy(mode, mask, big) {
            Err(errno) => return vec![Err(errno)],
            Ok(policy) => policy,
        };
        let is_default = mode == MPOL_DEFAULT;
        let strict = flags & MPOL_MF_STRICT != 0 && !is_default;
        let moving = flags & MPOL_MF_MOVE != 0;
        let user = mask_nodes(mask);
        let range: Vec<u64> = (start..start + pages).collect();
        let mapped: Vec<u64> = range
            .iter()
            .copied()
            .filter(|vpn| self.model.pages.contains_key(vpn))
            .collect();
        let misplaced = |model: &Model, vpn: &u64| matches!(model.pages[vpn].state, PageState::OnNode(node) if !user.contains(&node));
        let any_misplaced = mapped.iter().any(|vpn| misplaced(&self.model, vpn));
        if mapped.is_empty() {
            return vec![Err(Errno::EFAULT)];
        }
        let hole = mapped.len() != range.len() && !is_default;
        let eio = strict && !moving && any_misplaced;
        match (hole, eio) {
            (true, true) => return vec![Err(Errno::EFAULT), Err(Errno::EIO)],
            (true, false) => return vec![Err(Errno::EFAULT)],
            (false, true) => return vec![Err(Errno::EIO)],
            (false, false) => {}
        }
        let to_move: Vec<u64> = if moving {
            mapped
                .iter()
                .copied()
                .filter(|vpn| misplaced(&self.model, vpn))
                .collect()
        } else {
            vec![]
        };
        for vpn in &mapped {
            self.model.pages.get_mut(vpn).expect("mapped").policy = policy.clone();
        }
        for vpn in to_move {
            let node = place(&self.model, &self.model.pages[&vpn], self.cpu_node);
            self.model.pages.get_mut(&vpn).expect("mapped").state = PageState::OnNode(node);
        }
        vec![Ok(())]
    }

    /// The reference do_migrate_pages() (one source node at a time).
    fn model_migrate(&mut self, old: &[u16], new: &[u16]) {
        let mut pending = old.to_vec();
        while !pending.is_empty() {
            let mut chosen = None;
            for &source in &pending {
                if old.len() != new.len() && new.contains(&source) {
                    continue;
                }
                let rank = old.iter().position(|node| *node == source).expect("listed");
                let dest = new[rank % new.len()];
                if dest == source {
                    continue;
                }
                chosen = Some((source, dest));
                if !pending.contains(&dest) {
                    break;
                }
            }
            let Some((source, dest)) = chosen else { break };
            pending.retain(|node| *node != source);
            for page in self.model.pages.values_mut() {
                if page.state == PageState::OnNode(source) {
                    page.state = PageState::OnNode(dest);
                }
            }
        }
    }

    /// Invariants, then every page of the window against the model.
    fn compare(&mut self) -> Result<(), TestCaseError> {
        self.vm
            .check_invariants()
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        let (mode, nodes) = Pol::report(self.model.task_policy.as_ref());
        let got = self.vm.get_mempolicy(self.pid, 0, 0).expect("task policy");
        prop_assert_eq!(got, (mode, node_set(&nodes)), "task policy");
        let (start, end) = self.window;
        let addrs: Vec<u64> = (start..end).map(|vpn| vpn * PAGE).collect();
        let mut status = vec![i32::MIN; addrs.len()];
        self.vm
            .move_pages(self.pid, 0, &addrs, None, &mut status, 0)
            .expect("query");
        for (addr, status) in addrs.iter().zip(status) {
            let vpn = addr / PAGE;
            let Some(page) = self.model.pages.get(&vpn) else {
                prop_assert_eq!(status, -Errno::EFAULT.code(), "unmapped page {:#x}", vpn);
                prop_assert_eq!(
                    self.vm.get_mempolicy(self.pid, *addr, MPOL_F_ADDR),
                    Err(Errno::EFAULT)
                );
                continue;
            };
            let expected = match page.state {
                PageState::Untouched => -Errno::ENOENT.code(),
                PageState::Zero => -Errno::EFAULT.code(),
                PageState::OnNode(node) => i32::from(node),
            };
            prop_assert_eq!(status, expected, "page {:#x}", vpn);
            let (mode, nodes) = Pol::report(page.policy.as_ref());
            let got = self
                .vm
                .get_mempolicy(self.pid, *addr, MPOL_F_ADDR)
                .expect("mapped");
            prop_assert_eq!(got, (mode, node_set(&nodes)), "policy of page {:#x}", vpn);
        }
        Ok(())
    }
}

fn node_set(nodes: &[u16]) -> Nodemask {
    let mut mask = Nodemask::NONE;
    for node in nodes {
        mask.set(NodeId(*node));
    }
    mask
}

fn run(ops: &[Op], cpu: u16) -> Result<(), TestCaseError> {
    let allocator =
        LocalPageAllocator::boot(&MachineDesc::uniform(64 << 20, 4, 4).unwrap()).unwrap();
    let mut vm = Vm::new(&allocator, NumaBalancingConfig::default());
    let pid = vm.spawn(CpuId(cpu), &[], 0).unwrap();
    let mut harness = Harness {
        vm,
        pid,
        cpu_node: cpu,
        model: Model::default(),
        window: (0, 0),
    };
    harness.step(&Op::Mmap(8))?;
    for op in ops {
        harness.step(op)?;
    }
    harness.vm.exit(pid).unwrap();
    harness.vm.check_invariants().unwrap();
    allocator.check_invariants().unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// 400 sequences of 200–300 operations: over 100k operations.
    #[test]
    fn vm_matches_the_reference_model(
        cpu in 0u16..4,
        ops in proptest::collection::vec(op(), 200..300),
    ) {
        run(&ops, cpu)?;
    }
}
