//! State-machine property test of the page allocator with memory hotplug
//! and boot-time reservations: a machine booted with a few random
//! `memblock_reserve()`d byte ranges, then random sequences of allocations,
//! frees, bulk allocations and frees, drains, and onlines and offlines of
//! 4 MiB sections (boot memory's and the hotplug area's), run against a
//! reference model (the blocks the caller holds, by (PFN, order), the
//! sections online and the reserved pages). After every step
//! `check_invariants()` holds, the allocator's allocated pages and present
//! pages equal the model's, no block handed out touches a reserved page,
//! and every refused online left the views and the layout unchanged; an
//! offline succeeds exactly when the section holds no reserved page and
//! the model holds none of its pages. proptest shrinks a failing sequence
//! to a short one.
//!
//! ```text
//!  PFN 0                8192              16384
//!  | boot memory (32M):   | hotplug area:    |
//!  | sections 0-7, online | sections 8-15    |   a section: 4 MiB (1024 pages)
//! ```

mod common;

use common::{assert_unchanged_mut, MIB};
use pageframe::machine::{MemRange, PfnRange};
use pageframe::{
    CpuId, Gfp, HotplugError, LocalPageAllocator, MachineDesc, NodeId, Order, Page, Pfn, ZoneType,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

const NR_CPUS: u16 = 2;
const BOOT_PAGES: u64 = (32 * MIB) >> 12;
/// Pages in a hotplug section (one MAX_PAGE_ORDER block).
const SECTION_PAGES: u64 = 1024;
/// Sections of boot memory, then as many in the hotplug area.
const BOOT_SECTIONS: u64 = BOOT_PAGES / SECTION_PAGES;
const NR_SECTIONS: u64 = 2 * BOOT_SECTIONS;

/// Two nodes of 16 MiB, a CPU each, with `reserved` as (start, bytes).
fn machine(reserved: &[(u64, u64)]) -> MachineDesc {
    let mut desc = MachineDesc::uniform(32 * MIB, 2, NR_CPUS as usize).unwrap();
    desc.reserved = reserved
        .iter()
        .map(|&(start, size)| MemRange { start, size })
        .collect();
    desc
}

/// Up to four reservations inside boot memory: byte starts and sizes, so
/// that partial pages are reserved whole; most small, some up to 2 MiB.
fn reserved_strategy() -> impl Strategy<Value = Vec<(u64, u64)>> {
    let size = prop_oneof![3 => 1u64..=64 << 10, 1 => 1u64..=2 * MIB];
    proptest::collection::vec(
        (0..32 * MIB, size).prop_map(|(start, size)| (start, size.min(32 * MIB - start))),
        0..=4,
    )
}

fn gfp_choices() -> [Gfp; 4] {
    [
        Gfp::KERNEL,
        Gfp::HIGHUSER_MOVABLE,
        Gfp::ATOMIC,
        Gfp::KERNEL | Gfp::RECLAIMABLE,
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        cpu: u16,
        gfp: usize,
        order: u8,
    },
    Free {
        cpu: u16,
        pick: usize,
    },
    BulkAlloc {
        cpu: u16,
        gfp: usize,
        len: usize,
    },
    BulkFree {
        cpu: u16,
        count: usize,
    },
    Drain,
    Online {
        section: u64,
        node: u16,
        movable: bool,
    },
    Offline {
        section: u64,
    },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let cpu = 0..NR_CPUS;
    let gfp = 0..gfp_choices().len();
    let order = prop_oneof![4 => Just(0u8), 2 => 1u8..=3, 1 => 4u8..=10];
    prop_oneof![
        8 => (cpu.clone(), gfp.clone(), order)
            .prop_map(|(cpu, gfp, order)| Op::Alloc { cpu, gfp, order }),
        5 => (cpu.clone(), any::<usize>()).prop_map(|(cpu, pick)| Op::Free { cpu, pick }),
        2 => (cpu.clone(), gfp, 1usize..=48)
            .prop_map(|(cpu, gfp, len)| Op::BulkAlloc { cpu, gfp, len }),
        2 => (cpu, 1usize..=48).prop_map(|(cpu, count)| Op::BulkFree { cpu, count }),
        1 => Just(Op::Drain),
        2 => (0..NR_SECTIONS, 0u16..2, any::<bool>())
            .prop_map(|(section, node, movable)| Op::Online { section, node, movable }),
        2 => (0..NR_SECTIONS).prop_map(|section| Op::Offline { section }),
    ]
}

/// What the caller holds, which sections are online and which pages are
/// reserved.
struct Model {
    held: BTreeMap<u64, Order>,
    online: BTreeSet<u64>,
    reserved: BTreeSet<u64>,
}

impl Model {
    /// Boot memory online; the pages the reservations touch, reserved.
    fn booted(reserved: &[(u64, u64)]) -> Model {
        Model {
            held: BTreeMap::new(),
            online: (0..BOOT_SECTIONS).collect(),
            reserved: reserved
                .iter()
                .flat_map(|&(start, size)| start >> 12..(start + size).div_ceil(4096))
                .collect(),
        }
    }

    fn allocated_pages(&self) -> u64 {
        self.held.values().map(|order| order.nr_pages()).sum()
    }

    fn present_pages(&self) -> u64 {
        self.online.len() as u64 * SECTION_PAGES
    }

    fn reserves_any_of(&self, range: PfnRange) -> bool {
        self.reserved
            .range(range.start.0..range.end.0)
            .next()
            .is_some()
    }

    fn take(&mut self, pfn: u64, order: Order) {
        assert!(Pfn(pfn).is_aligned(order), "PFN {pfn} unaligned at {order}");
        if let Some((&below, &below_order)) = self.held.range(..=pfn).next_back() {
            assert!(
                below + below_order.nr_pages() <= pfn,
                "{pfn} overlaps {below}"
            );
        }
        if let Some((&above, _)) = self.held.range(pfn..).next() {
            assert!(pfn + order.nr_pages() <= above, "{pfn} overlaps {above}");
        }
        assert!(
            self.online.contains(&(pfn / SECTION_PAGES)),
            "PFN {pfn} is in an offline section"
        );
        let block = PfnRange {
            start: Pfn(pfn),
            end: Pfn(pfn + order.nr_pages()),
        };
        assert!(
            !self.reserves_any_of(block),
            "order-{order} block at {pfn} is reserved"
        );
        self.held.insert(pfn, order);
    }

    fn holds_any_of(&self, range: PfnRange) -> bool {
        self.held
            .range(..range.end.0)
            .any(|(&pfn, order)| pfn + order.nr_pages() > range.start.0)
    }
}

fn section_range(section: u64) -> PfnRange {
    let start = section * SECTION_PAGES;
    PfnRange {
        start: Pfn(start),
        end: Pfn(start + SECTION_PAGES),
    }
}

fn step(allocator: &mut LocalPageAllocator, model: &mut Model, op: &Op) {
    match *op {
        Op::Alloc { cpu, gfp, order } => {
            let handle = allocator.cpu(CpuId(cpu)).unwrap();
            let node = NodeId(cpu % 2);
            if let Ok(page) = handle.alloc_pages(gfp_choices()[gfp], Order(order), node) {
                model.take(page.pfn().0, Order(order));
            }
        }
        Op::Free { cpu, pick } => {
            if model.held.is_empty() {
                return;
            }
            let (&pfn, &order) = model.held.iter().nth(pick % model.held.len()).unwrap();
            let handle = allocator.cpu(CpuId(cpu)).unwrap();
            handle.free_pages(Page::from_pfn(Pfn(pfn)), order).unwrap();
            model.held.remove(&pfn);
        }
        Op::BulkAlloc { cpu, gfp, len } => {
            let handle = allocator.cpu(CpuId(cpu)).unwrap();
            let mut pages = Vec::new();
            let node = NodeId(cpu % 2);
            let got = handle
                .alloc_pages_bulk_vec(gfp_choices()[gfp], node, len, &mut pages)
                .unwrap();
            assert!(got <= len && got == pages.len());
            for page in pages {
                model.take(page.pfn().0, Order(0));
            }
        }
        Op::BulkFree { cpu, count } => {
            let pages: Vec<Page> = model
                .held
                .iter()
                .filter(|(_, &order)| order == Order(0))
                .take(count)
                .map(|(&pfn, _)| Page::from_pfn(Pfn(pfn)))
                .collect();
            let handle = allocator.cpu(CpuId(cpu)).unwrap();
            handle.free_pages_bulk(&pages).unwrap();
            for page in pages {
                model.held.remove(&page.pfn().0);
            }
        }
        Op::Drain => allocator.drain_all_pages(),
        Op::Online {
            section,
            node,
            movable,
        } => {
            let range = section_range(section);
            let zone = if movable {
                ZoneType::Movable
            } else {
                ZoneType::Normal
            };
            if model.online.contains(&section) {
                let err = assert_unchanged_mut(allocator, |allocator| {
                    allocator
                        .online_pages(range, NodeId(node), zone)
                        .unwrap_err()
                });
                assert!(matches!(err, HotplugError::Invalid(_)), "{err:?}");
            } else {
                allocator.online_pages(range, NodeId(node), zone).unwrap();
                model.online.insert(section);
            }
        }
        Op::Offline { section } => {
            let range = section_range(section);
            let result = allocator.offline_pages(range);
            if !model.online.contains(&section) {
                assert!(
                    matches!(result, Err(HotplugError::Invalid(_))),
                    "{result:?}"
                );
            } else if model.reserves_any_of(range) {
                assert!(
                    matches!(result, Err(HotplugError::Reserved { .. })),
                    "{result:?}"
                );
            } else if model.holds_any_of(range) {
                assert!(
                    matches!(result, Err(HotplugError::Busy { .. })),
                    "{result:?}"
                );
            } else {
                assert_eq!(result.unwrap(), SECTION_PAGES);
                model.online.remove(&section);
            }
        }
    }
}

fn run(reserved: &[(u64, u64)], ops: &[Op]) {
    let mut allocator = LocalPageAllocator::boot(&machine(reserved)).unwrap();
    let mut model = Model::booted(reserved);
    for op in ops {
        step(&mut allocator, &mut model, op);
        allocator.check_invariants().unwrap();
        assert_eq!(
            allocator.nr_allocated_pages(),
            model.allocated_pages(),
            "{op:?}"
        );
        assert_eq!(
            allocator.layout().present_pages(),
            model.present_pages(),
            "{op:?}"
        );
    }
    // Everything back: the machine is whole again and every section can go.
    {
        let handle = allocator.cpu(CpuId(0)).unwrap();
        for (&pfn, &order) in &model.held {
            handle.free_pages(Page::from_pfn(Pfn(pfn)), order).unwrap();
        }
    }
    let mut kept = 0;
    for &section in &model.online {
        let range = section_range(section);
        let result = allocator.offline_pages(range);
        if model.reserves_any_of(range) {
            assert!(
                matches!(result, Err(HotplugError::Reserved { .. })),
                "{result:?}"
            );
            kept += SECTION_PAGES;
        } else {
            assert_eq!(result.unwrap(), SECTION_PAGES);
        }
        allocator.check_invariants().unwrap();
    }
    assert_eq!(allocator.layout().present_pages(), kept);
    assert_eq!(allocator.nr_allocated_pages(), 0);
}

proptest! {
    // About 150 steps a case on average: some 200 000 steps, a few seconds
    // in the test profile.
    #![proptest_config(ProptestConfig { cases: 1300, ..ProptestConfig::default() })]

    #[test]
    fn page_allocator_with_hotplug_matches_the_model(
        reserved in reserved_strategy(),
        ops in proptest::collection::vec(op_strategy(), 1..300)
    ) {
        run(&reserved, &ops);
    }
}
