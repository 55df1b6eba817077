//! Property tests: random sequences of allocations (any order, GFP class,
//! CPU, node, node mask), frees, bulk allocations with pre-populated slots,
//! bulk frees, drains, and bad calls (double frees, wrong orders, stray
//! PFNs, unknown CPUs and nodes, bad GFP combinations). After every step the
//! invariants hold, the allocator holds exactly the pages the model says are
//! allocated, every refused call left all four /proc views byte-for-byte
//! unchanged, and a successful allocation never overlaps a held block. The
//! same sequence run on the single-threaded and the shared allocator gives
//! identical views (determinism, and both lock families behave alike).

mod common;

use common::{assert_conserved, assert_unchanged, ProcViews, MIB};
use pageframe::machine::apply_cmdline;
use pageframe::LockFamily;
use pageframe::{
    proc, AllocError, CpuError, CpuHandle, CpuId, FreeError, Gfp, LocalPageAllocator, MachineDesc,
    MachineRng, MigrateType, NodeId, Nodemask, Order, Page, PageAllocator, Pfn,
    SharedPageAllocator,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

const NR_CPUS: u16 = 3;
const NR_NODES: u16 = 2;
const MAX_ORDER: u8 = 10;
/// One past the machine's last PFN.
const END_PFN: u64 = (32 * MIB) >> 12;

/// Two nodes of 16 MiB, each with 4 MiB of ZONE_MOVABLE, three CPUs: small
/// enough that random sequences run out of memory now and then.
fn machine() -> MachineDesc {
    let mut desc = MachineDesc::uniform(32 * MIB, NR_NODES as usize, NR_CPUS as usize).unwrap();
    apply_cmdline(&mut desc, "movablecore=8M").unwrap();
    desc
}

/// GFP masks the sequences draw from, and whether the kernel calls them bad.
fn gfp_choices() -> [(Gfp, bool); 17] {
    [
        (Gfp::KERNEL, false),
        (Gfp::USER, false),
        (Gfp::HIGHUSER_MOVABLE, false),
        (Gfp::MOVABLE, false),
        (Gfp::KERNEL | Gfp::RECLAIMABLE, false),
        (Gfp::ATOMIC, false),
        (Gfp::NOWAIT, false),
        (Gfp::KERNEL | Gfp::HIGH, false),
        (Gfp::KERNEL | Gfp::THISNODE, false),
        (Gfp::HIGHUSER_MOVABLE | Gfp::THISNODE | Gfp::ZERO, false),
        (Gfp::KERNEL | Gfp::DMA32, false),
        (Gfp::KERNEL | Gfp::UNMAPPED, false),
        (Gfp::KERNEL | Gfp::UNMAPPED | Gfp::ZERO, false),
        (Gfp::NOWAIT | Gfp::UNMAPPED, false),
        (Gfp::MOVABLE | Gfp::UNMAPPED, true),
        (Gfp::MOVABLE | Gfp::RECLAIMABLE, true),
        (Gfp::KERNEL | Gfp::DMA, true),
    ]
}

/// One step of a sequence. Indices (`pick`) select among the pages the
/// model holds, modulo their number.
#[derive(Clone, Debug)]
enum Op {
    Alloc {
        cpu: u16,
        gfp: usize,
        order: u8,
        node: u16,
    },
    AllocMasked {
        cpu: u16,
        gfp: usize,
        order: u8,
        node: u16,
        mask: u8,
    },
    Free {
        cpu: u16,
        pick: usize,
    },
    BulkAlloc {
        cpu: u16,
        gfp: usize,
        node: u16,
        len: usize,
        prefill: u64,
    },
    BulkFree {
        cpu: u16,
        count: usize,
        skip: usize,
    },
    Drain {
        cpu: Option<u16>,
    },
    DoubleFree {
        cpu: u16,
        pick: usize,
    },
    WrongOrderFree {
        cpu: u16,
        pick: usize,
        delta: u8,
    },
    StrayFree {
        cpu: u16,
        pfn: u64,
        order: u8,
    },
    /// Allocates until the allocator refuses: out of memory, or bad input.
    Exhaust {
        cpu: u16,
        gfp: usize,
        order: u8,
    },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let cpu = 0..NR_CPUS;
    let gfp = 0..gfp_choices().len();
    let order =
        prop_oneof![5 => Just(0u8), 2 => 1u8..=3, 4 => 4u8..=MAX_ORDER, 1 => Just(MAX_ORDER + 1)];
    let node = prop_oneof![9 => 0..NR_NODES, 1 => Just(NR_NODES)];
    prop_oneof![
        8 => (cpu.clone(), gfp.clone(), order.clone(), node.clone())
            .prop_map(|(cpu, gfp, order, node)| Op::Alloc { cpu, gfp, order, node }),
        2 => (cpu.clone(), gfp.clone(), order, node.clone(), 0u8..8).prop_map(
            |(cpu, gfp, order, node, mask)| Op::AllocMasked { cpu, gfp, order, node, mask }
        ),
        4 => (cpu.clone(), any::<usize>()).prop_map(|(cpu, pick)| Op::Free { cpu, pick }),
        3 => (cpu.clone(), gfp, node, 1usize..=64, any::<u64>()).prop_map(
            |(cpu, gfp, node, len, prefill)| Op::BulkAlloc { cpu, gfp, node, len, prefill }
        ),
        2 => (cpu.clone(), 1usize..=48, any::<usize>())
            .prop_map(|(cpu, count, skip)| Op::BulkFree { cpu, count, skip }),
        1 => proptest::option::of(0..=NR_CPUS).prop_map(|cpu| Op::Drain { cpu }),
        1 => (cpu.clone(), any::<usize>()).prop_map(|(cpu, pick)| Op::DoubleFree { cpu, pick }),
        1 => (cpu.clone(), any::<usize>(), 1u8..=3)
            .prop_map(|(cpu, pick, delta)| Op::WrongOrderFree { cpu, pick, delta }),
        1 => (cpu.clone(), 0..END_PFN + 2048, 0u8..=MAX_ORDER + 1)
            .prop_map(|(cpu, pfn, order)| Op::StrayFree { cpu, pfn, order }),
        1 => (cpu, 0..gfp_choices().len(), 0u8..=MAX_ORDER)
            .prop_map(|(cpu, gfp, order)| Op::Exhaust { cpu, gfp, order }),
    ]
}

/// What the caller holds, by first PFN, and what it freed recently.
#[derive(Default)]
struct Model {
    held: BTreeMap<u64, Order>,
    freed: Vec<Page>,
}

impl Model {
    fn pages(&self) -> u64 {
        self.held.values().map(|order| order.nr_pages()).sum()
    }

    /// Records a new block, asserting it overlaps nothing held.
    fn take(&mut self, page: Page, order: Order) {
        let start = page.pfn().0;
        assert!(
            page.pfn().is_aligned(order),
            "{page:?} unaligned at order {order}"
        );
        if let Some((&below, &below_order)) = self.held.range(..=start).next_back() {
            assert!(
                below + below_order.nr_pages() <= start,
                "{start} overlaps {below}"
            );
        }
        if let Some((&above, _)) = self.held.range(start..).next() {
            assert!(
                start + order.nr_pages() <= above,
                "{start} overlaps {above}"
            );
        }
        self.held.insert(start, order);
    }

    fn pick(&self, pick: usize) -> Option<(Page, Order)> {
        let len = self.held.len();
        (len > 0).then(|| {
            let (&pfn, &order) = self.held.iter().nth(pick % len).unwrap();
            (Page::from_pfn(Pfn(pfn)), order)
        })
    }

    fn release(&mut self, page: Page) {
        self.held.remove(&page.pfn().0);
        self.freed.push(page);
        if self.freed.len() > 64 {
            self.freed.remove(0);
        }
    }

    fn order0_pages(&self) -> Vec<Page> {
        self.held
            .iter()
            .filter(|(_, order)| order.0 == 0)
            .map(|(&pfn, _)| Page::from_pfn(Pfn(pfn)))
            .collect()
    }
}

type Handle<'a, L> = CpuHandle<&'a PageAllocator<L>, L>;

/// Runs `ops`, checking everything after each, and returns the views at
/// the end (before the model's pages are given back).
fn run<L: LockFamily>(
    allocator: &PageAllocator<L>,
    handles: &[Handle<'_, L>],
    ops: &[Op],
) -> ProcViews {
    let boot_buddyinfo = proc::buddyinfo(allocator);
    let mut model = Model::default();
    for op in ops {
        step(allocator, handles, &mut model, op);
        assert_conserved(allocator, model.pages());
    }
    let views = ProcViews::capture(allocator);
    for (&pfn, &order) in &model.held {
        handles[0]
            .free_pages(Page::from_pfn(Pfn(pfn)), order)
            .unwrap();
    }
    allocator.drain_all_pages();
    assert_conserved(allocator, 0);
    let highatomic_blocks: u64 = allocator
        .zone_snapshots()
        .iter()
        .map(|zone| zone.pageblocks[MigrateType::HighAtomic.index()])
        .sum();
    // HIGHATOMIC blocks never merge with their neighbours, nor unmapped
    // blocks with mapped ones; without them everything merges back to the
    // boot state.
    if highatomic_blocks == 0 && allocator.nr_unmapped_pageblocks() == 0 {
        assert_eq!(proc::buddyinfo(allocator), boot_buddyinfo);
    }
    views
}

fn expected_alloc_error(gfp: usize, order: u8, node: u16) -> Option<AllocError> {
    if order > MAX_ORDER {
        return Some(AllocError::OrderTooLarge {
            order: Order(order),
            max: Order(MAX_ORDER),
        });
    }
    if node >= NR_NODES {
        return Some(AllocError::NoSuchNode(NodeId(node)));
    }
    gfp_choices()[gfp].1.then_some(AllocError::Unsupported(""))
}

fn same_error(actual: &AllocError, expected: &AllocError) -> bool {
    match (actual, expected) {
        (AllocError::Unsupported(_), AllocError::Unsupported(_)) => true,
        _ => actual == expected,
    }
}

fn check_alloc<L: LockFamily>(
    allocator: &PageAllocator<L>,
    model: &mut Model,
    (gfp, order, node): (usize, u8, u16),
    no_eligible_zone: bool,
    call: impl FnOnce() -> Result<Page, AllocError>,
) -> bool {
    if let Some(expected) = expected_alloc_error(gfp, order, node) {
        let err = assert_unchanged(allocator, call).unwrap_err();
        assert!(
            same_error(&err, &expected),
            "{err:?}, expected {expected:?}"
        );
        return false;
    }
    if no_eligible_zone {
        let result = assert_unchanged(allocator, call);
        assert_eq!(
            result,
            Err(AllocError::NoMemory {
                order: Order(order)
            })
        );
        return false;
    }
    match call() {
        Ok(page) => {
            model.take(page, Order(order));
            true
        }
        Err(AllocError::WouldBlock { order: refused }) => {
            let mask = gfp_choices()[gfp].0;
            assert!(mask.contains(Gfp::UNMAPPED) && !mask.contains(Gfp::DIRECT_RECLAIM));
            assert_eq!(refused, Order(order));
            false
        }
        Err(err) => {
            assert_eq!(
                err,
                AllocError::NoMemory {
                    order: Order(order)
                }
            );
            false
        }
    }
}

fn step<L: LockFamily>(
    allocator: &PageAllocator<L>,
    handles: &[Handle<'_, L>],
    model: &mut Model,
    op: &Op,
) {
    let dma32 = |gfp: usize| gfp_choices()[gfp].0.contains(Gfp::DMA32);
    match *op {
        Op::Alloc {
            cpu,
            gfp,
            order,
            node,
        } => {
            let handle = &handles[cpu as usize];
            check_alloc(allocator, model, (gfp, order, node), dma32(gfp), || {
                handle.alloc_pages(gfp_choices()[gfp].0, Order(order), NodeId(node))
            });
        }
        Op::Exhaust { cpu, gfp, order } => {
            let handle = &handles[cpu as usize];
            let attempt = || handle.alloc_pages(gfp_choices()[gfp].0, Order(order), NodeId(0));
            let mut allocations = 0;
            while check_alloc(allocator, model, (gfp, order, 0), dma32(gfp), attempt) {
                allocations += 1;
                assert!(allocations <= END_PFN, "allocated more blocks than pages");
            }
        }
        Op::AllocMasked {
            cpu,
            gfp,
            order,
            node,
            mask,
        } => {
            let mut nodemask = Nodemask::NONE;
            for bit in 0..3u16 {
                if mask & (1 << bit) != 0 {
                    // Bit 2 stands for a node the machine does not have.
                    nodemask.set(NodeId(if bit == 2 { 7 } else { bit }));
                }
            }
            let no_node = mask & 0b11 == 0;
            let handle = &handles[cpu as usize];
            check_alloc(
                allocator,
                model,
                (gfp, order, node),
                no_node || dma32(gfp),
                || {
                    handle.alloc_pages_nodemask(
                        gfp_choices()[gfp].0,
                        Order(order),
                        NodeId(node),
                        &nodemask,
                    )
                },
            );
        }
        Op::Free { cpu, pick } => {
            if let Some((page, order)) = model.pick(pick) {
                handles[cpu as usize].free_pages(page, order).unwrap();
                model.release(page);
            }
        }
        Op::BulkAlloc {
            cpu,
            gfp,
            node,
            len,
            prefill,
        } => {
            bulk_alloc(
                allocator,
                &handles[cpu as usize],
                model,
                (gfp, node, len, prefill),
            );
        }
        Op::BulkFree { cpu, count, skip } => {
            let pages: Vec<Page> = model
                .order0_pages()
                .into_iter()
                .skip(skip % 8)
                .take(count)
                .collect();
            handles[cpu as usize].free_pages_bulk(&pages).unwrap();
            for page in pages {
                model.release(page);
            }
        }
        Op::Drain { cpu: None } => allocator.drain_all_pages(),
        Op::Drain { cpu: Some(cpu) } if cpu < NR_CPUS => allocator.drain_pcp(CpuId(cpu)).unwrap(),
        Op::Drain { cpu: Some(cpu) } => {
            let result = assert_unchanged(allocator, || allocator.drain_pcp(CpuId(cpu)));
            assert_eq!(result, Err(CpuError::NoSuchCpu(CpuId(cpu))));
        }
        Op::DoubleFree { cpu, pick } => {
            if model.freed.is_empty() {
                return;
            }
            let page = model.freed[pick % model.freed.len()];
            if model.held.contains_key(&page.pfn().0) {
                return;
            }
            let result = assert_unchanged(allocator, || {
                handles[cpu as usize].free_pages(page, Order(0))
            });
            assert!(
                matches!(
                    result,
                    Err(FreeError::DoubleFree(_) | FreeError::NotAllocated(_))
                ),
                "{result:?}"
            );
        }
        Op::WrongOrderFree { cpu, pick, delta } => {
            let Some((page, order)) = model.pick(pick) else {
                return;
            };
            let wrong = if delta == 1 && order.0 > 0 {
                order.0 - 1
            } else {
                order.0 + delta
            };
            let result = assert_unchanged(allocator, || {
                handles[cpu as usize].free_pages(page, Order(wrong))
            });
            assert_eq!(
                result,
                Err(FreeError::WrongOrder {
                    pfn: page.pfn(),
                    allocated: order,
                    freed: Order(wrong)
                })
            );
        }
        Op::StrayFree { cpu, pfn, order } => {
            if model.held.contains_key(&pfn) {
                return;
            }
            let page = Page::from_pfn(Pfn(pfn));
            let result = assert_unchanged(allocator, || {
                handles[cpu as usize].free_pages(page, Order(order))
            });
            if pfn >= END_PFN {
                assert_eq!(result, Err(FreeError::NotMemory(Pfn(pfn))));
            } else {
                assert!(result.is_err());
            }
        }
    }
}

fn bulk_alloc<L: LockFamily>(
    allocator: &PageAllocator<L>,
    handle: &Handle<'_, L>,
    model: &mut Model,
    (gfp, node, len, prefill): (usize, u16, usize, u64),
) {
    let mut mine = model.order0_pages().into_iter();
    let mut slots: Vec<Option<Page>> = (0..len)
        .map(|slot| {
            if prefill >> (slot % 64) & 1 == 1 {
                mine.next()
            } else {
                None
            }
        })
        .collect();
    let before = slots.clone();
    let call = |slots: &mut [Option<Page>]| {
        handle.alloc_pages_bulk(gfp_choices()[gfp].0, NodeId(node), None, slots)
    };
    if let Some(expected) = expected_alloc_error(gfp, 0, node) {
        let err = assert_unchanged(allocator, || call(&mut slots)).unwrap_err();
        assert!(same_error(&err, &expected), "{err:?}");
        assert_eq!(slots, before);
        return;
    }
    let populated = call(&mut slots).unwrap();
    assert!(populated <= len);
    assert!(slots[..populated].iter().all(Option::is_some));
    // The count is an index: the slot it points at was not filled by this
    // call (it may hold a page the caller put there).
    if populated < len {
        assert!(
            slots[populated] == before[populated],
            "slot {populated} filled but not counted"
        );
    }
    for (index, (old, new)) in before.iter().zip(&slots).enumerate() {
        match (old, new) {
            (Some(old), new) => assert_eq!(Some(*old), *new, "pre-populated slot {index} changed"),
            (None, Some(page)) => {
                assert!(
                    index < populated,
                    "slot {index} filled beyond the count {populated}"
                );
                model.take(*page, Order(0));
            }
            (None, None) => {}
        }
    }
}

fn run_local(ops: &[Op]) -> ProcViews {
    let allocator = LocalPageAllocator::boot(&machine()).unwrap();
    let handles: Vec<_> = (0..NR_CPUS)
        .map(|cpu| allocator.cpu(CpuId(cpu)).unwrap())
        .collect();
    run(&allocator, &handles, ops)
}

fn run_shared(ops: &[Op]) -> ProcViews {
    let allocator = SharedPageAllocator::boot(&machine()).unwrap();
    let handles: Vec<_> = (0..NR_CPUS)
        .map(|cpu| allocator.register_cpu(CpuId(cpu)).unwrap())
        .collect();
    run(&allocator, &handles, ops)
}

/// The machine of [`machine`] laid out as firmware reports memory: node 0
/// from byte `low` (pages below it absent, a partial first pageblock) to
/// 6 MiB less `cut`, a hole of `hole` bytes, then to 16 MiB; node 1 from
/// 16 MiB to 32 MiB less `tail` bytes; and up to three reservations
/// anywhere (partial pages reserved whole, holes reserving nothing).
fn e820_machine(low: u64, cut: u64, hole: u64, tail: u64, reserved: &[(u64, u64)]) -> MachineDesc {
    use pageframe::machine::MemRange;
    let mut desc = machine();
    let range = |start: u64, end: u64| MemRange {
        start,
        size: end - start,
    };
    desc.nodes[0].ranges = vec![range(low, 6 * MIB - cut), range(6 * MIB + hole, 16 * MIB)];
    desc.nodes[1].ranges = vec![range(16 * MIB, 32 * MIB - tail)];
    desc.reserved = reserved
        .iter()
        .map(|&(start, size)| MemRange { start, size })
        .collect();
    desc
}

fn e820_strategy() -> impl Strategy<Value = MachineDesc> {
    (
        0..256 * 1024u64,
        0..256 * 1024u64,
        0..3 * MIB,
        0..MIB,
        proptest::collection::vec((0..32 * MIB - MIB, 1..512 * 1024u64), 0..=3),
    )
        .prop_map(|(low, cut, hole, tail, reserved)| e820_machine(low, cut, hole, tail, &reserved))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_sequences_keep_every_invariant(ops in proptest::collection::vec(op_strategy(), 1..200)) {
        let local = run_local(&ops);
        let shared = run_shared(&ops);
        prop_assert_eq!(local, shared);
    }

    /// The same on machines with holes, partial pageblocks and reserved
    /// memory: nothing is handed out of a hole or a reservation (the
    /// conservation check counts present pages and the model's), and a
    /// stray free there changes nothing.
    #[test]
    fn random_sequences_on_e820_layouts_keep_every_invariant(
        desc in e820_strategy(),
        ops in proptest::collection::vec(op_strategy(), 1..200)
    ) {
        // A reservation wholly in the hole is refused (it reserves nothing).
        if let Err(err) = desc.layout() {
            prop_assume!(!err.field.starts_with("reserved"));
        }
        let allocator = LocalPageAllocator::boot(&desc).unwrap();
        let handles: Vec<_> = (0..NR_CPUS)
            .map(|cpu| allocator.cpu(CpuId(cpu)).unwrap())
            .collect();
        run(&allocator, &handles, &ops);
    }
}

/// A long sequence drawn from the machine RNG, for reruns without proptest.
fn seeded_ops(seed: u64, count: usize) -> Vec<Op> {
    let mut rng = MachineRng::new(seed);
    let nr_gfps = gfp_choices().len() as u64;
    (0..count)
        .map(|_| {
            let cpu = rng.below(NR_CPUS as u64) as u16;
            let order = if rng.chance(3, 4) {
                rng.below(4)
            } else {
                rng.below(11)
            } as u8;
            match rng.below(6) {
                0 | 1 => Op::Alloc {
                    cpu,
                    gfp: rng.below(nr_gfps) as usize,
                    order,
                    node: rng.below(NR_NODES as u64) as u16,
                },
                2 => Op::BulkAlloc {
                    cpu,
                    gfp: rng.below(nr_gfps) as usize,
                    node: rng.below(NR_NODES as u64) as u16,
                    len: 1 + rng.below(64) as usize,
                    prefill: rng.next_u64(),
                },
                3 => Op::BulkFree {
                    cpu,
                    count: 1 + rng.below(32) as usize,
                    skip: 0,
                },
                4 if rng.chance(1, 8) => Op::Drain { cpu: Some(cpu) },
                _ => Op::Free {
                    cpu,
                    pick: rng.next_u64() as usize,
                },
            }
        })
        .collect()
}

#[test]
fn the_same_sequence_gives_byte_identical_views() {
    let ops = seeded_ops(42, 1500);
    let first = run_local(&ops);
    let second = run_local(&ops);
    assert_eq!(first, second);
    assert_ne!(first.vmstat, run_local(&seeded_ops(43, 1500)).vmstat);
}
