//! What one alloc+free pair costs, in callgrind instructions, in states an
//! allocator reaches by allocating and freeing, against the same machine
//! fresh: the evidence behind the README's order-9 goal item ("met in the
//! state the issue names, not in every state").
//!
//! `cargo run --release -p pageframe-lab --example pair_cost_states` runs
//! itself again under `valgrind --tool=callgrind` (as `perf-table` does,
//! through `pageframe_lab::callgrind`) and prints one row per state and
//! order: instructions per pair, the fresh cost of the same order on the
//! same machine, and their ratio. Each case builds its state with the
//! public API only, then measures steady pairs of one order on CPU 0.
//!
//! The states: after 64 Ki order-0 pages were held and freed (the bulk
//! experiment's `after-order0-churn`); the order-0 per-CPU list left 300
//! pages below its `high` with a calm free count; the zone between its low
//! and high watermarks, and between min and low (per-CPU lists drained,
//! as their pages do not count as free); every pageblock but one holding
//! an allocated page; node 0's Normal zone filled until an allocation
//! falls back to another zone (DMA32) or node, whose memory is untouched.

use pageframe::{
    CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Page, Watermarks, ZoneType,
};
use pageframe_lab::callgrind;
use std::collections::HashMap;
use std::hint::black_box;

type Cpu<'a> = pageframe::CpuHandle<&'a LocalPageAllocator, pageframe::Local>;

/// The probe's name for [`callgrind::measure`] (any: this binary runs only
/// this probe).
const PROBE: &str = "pair-cost-states";

/// The machines the states are reached on.
#[derive(Clone, Copy)]
enum Machine {
    /// 4 GiB, one node, one Normal zone, 2 CPUs.
    OneNode,
    /// 8 GiB, one node with DMA, DMA32 and Normal, 2 CPUs.
    ThreeZones,
    /// 8 GiB in two nodes, 2 CPUs.
    TwoNodes,
}

impl Machine {
    const ALL: [Machine; 3] = [Machine::OneNode, Machine::ThreeZones, Machine::TwoNodes];

    fn name(self) -> &'static str {
        match self {
            Machine::OneNode => "one-node",
            Machine::ThreeZones => "three-zones",
            Machine::TwoNodes => "two-nodes",
        }
    }

    fn boot(self) -> LocalPageAllocator {
        let (bytes, nodes) = match self {
            Machine::OneNode => (4 << 30, 1),
            Machine::ThreeZones => (8 << 30, 1),
            Machine::TwoNodes => (8 << 30, 2),
        };
        let mut desc = MachineDesc::uniform(bytes, nodes, 2).expect("machine");
        if let Machine::ThreeZones = self {
            desc.dma = true;
            desc.dma32 = true;
        }
        LocalPageAllocator::boot(&desc).expect("boot")
    }
}

/// A state: its name, machine, the orders measured and how it is reached.
struct State {
    name: &'static str,
    machine: Machine,
    orders: &'static [u8],
    /// Takes a fresh allocator to the state; returns what it must keep
    /// allocated while the pairs run.
    reach: fn(&LocalPageAllocator, &Cpu<'_>) -> Vec<Page>,
}

const STATES: &[State] = &[
    State {
        name: "after-order0-churn",
        machine: Machine::OneNode,
        orders: &[0, 3, 9],
        reach: |_, cpu| {
            free_all(cpu, hold(cpu, Gfp::KERNEL, 1 << 16));
            Vec::new()
        },
    },
    State {
        name: "pcp-near-high",
        machine: Machine::OneNode,
        orders: &[3, 9],
        reach: pcp_near_high,
    },
    State {
        name: "below-high",
        machine: Machine::OneNode,
        orders: &[0, 3, 9],
        reach: |allocator, cpu| {
            hold_normal_until(allocator, cpu, |marks| (marks.low + marks.high) / 2)
        },
    },
    State {
        name: "below-low",
        machine: Machine::OneNode,
        orders: &[0, 3, 9],
        reach: |allocator, cpu| {
            hold_normal_until(allocator, cpu, |marks| (marks.min + marks.low) / 2)
        },
    },
    State {
        name: "one-free-pageblock",
        machine: Machine::OneNode,
        orders: &[3, 9],
        reach: one_free_pageblock,
    },
    State {
        name: "zone-fallback",
        machine: Machine::ThreeZones,
        orders: &[0, 3, 9],
        reach: hold_until_fallback,
    },
    State {
        name: "node-fallback",
        machine: Machine::TwoNodes,
        orders: &[0, 3, 9],
        reach: hold_until_fallback,
    },
];

/// Steady pairs of `order` on CPU 0 of node 0.
fn pairs(cpu: &Cpu<'_>, order: u8, count: usize) -> usize {
    for _ in 0..count {
        let page = cpu
            .alloc_pages(Gfp::KERNEL, Order(order), NodeId(0))
            .expect("alloc");
        cpu.free_pages(black_box(page), Order(order)).expect("free");
    }
    count
}

fn pairs_of(order: u8) -> usize {
    if order >= 9 {
        256
    } else {
        2048
    }
}

fn hold(cpu: &Cpu<'_>, gfp: Gfp, count: usize) -> Vec<Page> {
    (0..count)
        .map(|_| cpu.alloc_pages(gfp, Order(0), NodeId(0)).expect("hold"))
        .collect()
}

fn free_all(cpu: &Cpu<'_>, pages: Vec<Page>) {
    for page in pages {
        cpu.free_pages(page, Order(0)).expect("free");
    }
}

/// The index of `node`'s zone of `zone_type`.
fn zone_of(allocator: &LocalPageAllocator, node: NodeId, zone_type: ZoneType) -> usize {
    let zones = allocator.zone_snapshots();
    (0..zones.len())
        .find(|&at| zones[at].node == node && zones[at].zone_type == zone_type)
        .expect("zone")
}

/// Holds order-0 pages until node 0's Normal zone has at most
/// `target(marks)` free pages with the per-CPU lists drained: the pages a
/// list holds are not free pages (the kernel's `NR_FREE_PAGES` leaves them
/// out too), so the zone sits between the target and one batch above it.
fn hold_normal_until(
    allocator: &LocalPageAllocator,
    cpu: &Cpu<'_>,
    target: fn(Watermarks) -> u64,
) -> Vec<Page> {
    let zone = zone_of(allocator, NodeId(0), ZoneType::Normal);
    let target = target(allocator.zone_free_pages(zone).expect("zone").1);
    let mut held = Vec::new();
    loop {
        let free = allocator.zone_free_pages(zone).expect("zone").0;
        if free <= target {
            allocator.drain_all_pages();
            let batch = allocator.zone_snapshot(zone).expect("zone").pcp[0].batch;
            if allocator.zone_free_pages(zone).expect("zone").0 <= target + u64::from(batch) {
                return held;
            }
            continue;
        }
        let chunk = (free - target).min(4096) as usize;
        held.extend(hold(cpu, Gfp::KERNEL, chunk));
    }
}

/// Holds order-0 pages from node 0's Normal zone until an allocation
/// comes from elsewhere (that zone failed its low watermark, the walk went
/// on), then frees that one page: every other zone keeps its memory.
fn hold_until_fallback(allocator: &LocalPageAllocator, cpu: &Cpu<'_>) -> Vec<Page> {
    let zone = allocator
        .zone_snapshot(zone_of(allocator, NodeId(0), ZoneType::Normal))
        .expect("zone");
    let normal = zone.start_pfn..zone.start_pfn + zone.spanned;
    let mut held = Vec::new();
    loop {
        let page = cpu
            .alloc_pages(Gfp::KERNEL, Order(0), NodeId(0))
            .expect("hold");
        if !normal.contains(&page.pfn().0) {
            cpu.free_pages(page, Order(0)).expect("free");
            return held;
        }
        held.push(page);
    }
}

/// 64 Ki order-0 pages held, then freed until CPU 0's order-0 list is 300
/// pages below its `high`, then a few order-0 pairs to calm its free count.
fn pcp_near_high(allocator: &LocalPageAllocator, cpu: &Cpu<'_>) -> Vec<Page> {
    const GAP: u32 = 300;
    let zone = zone_of(allocator, NodeId(0), ZoneType::Normal);
    let mut held = hold(cpu, Gfp::KERNEL, 1 << 16).into_iter();
    let mut freed = 0u32;
    let mut reached = false;
    for page in held.by_ref() {
        cpu.free_pages(page, Order(0)).expect("free");
        freed += 1;
        if freed > 20_000 && freed % 16 == 0 {
            let pcp = allocator.zone_snapshot(zone).expect("zone").pcp[0];
            if pcp.count + GAP >= pcp.high && pcp.count + GAP < pcp.high + 16 {
                reached = true;
                break;
            }
        }
    }
    assert!(reached, "the order-0 list never came within {GAP} of high");
    pairs(cpu, 0, 16);
    held.collect()
}

/// Every page allocated, then all freed but the first page of each
/// pageblock, except for one pageblock left wholly free.
fn one_free_pageblock(allocator: &LocalPageAllocator, cpu: &Cpu<'_>) -> Vec<Page> {
    let mut all = Vec::new();
    while let Ok(page) = cpu.alloc_pages(Gfp::KERNEL | Gfp::MEMALLOC, Order(0), NodeId(0)) {
        all.push(page);
    }
    all.sort_by_key(|page| page.pfn().0);
    let last = all.last().expect("pages").pfn().0;
    let free_block = (last & !1023) - 2048;
    let mut kept = Vec::new();
    for page in all {
        let pfn = page.pfn().0;
        let in_free_block = (free_block..free_block + 512).contains(&pfn);
        if !in_free_block && pfn % 512 == 0 {
            kept.push(page);
        } else {
            cpu.free_pages(page, Order(0)).expect("free");
        }
    }
    allocator.drain_all_pages();
    kept
}

/// The probe process: every case under callgrind's boundaries.
fn probe() {
    for machine in Machine::ALL {
        for order in [0u8, 3, 9] {
            let allocator = machine.boot();
            let cpu = allocator.cpu(CpuId(0)).expect("cpu");
            let key = format!("{}/fresh/{order}", machine.name());
            callgrind::probe_case(&key, || Ok::<_, ()>(pairs(&cpu, order, pairs_of(order))))
                .expect("probe");
        }
    }
    for state in STATES {
        for &order in state.orders {
            let allocator = state.machine.boot();
            let cpu = allocator.cpu(CpuId(0)).expect("cpu");
            let kept = (state.reach)(&allocator, &cpu);
            let key = format!("{}/{order}", state.name);
            callgrind::probe_case(&key, || Ok::<_, ()>(pairs(&cpu, order, pairs_of(order))))
                .expect("probe");
            allocator.check_invariants().expect("invariants");
            drop(kept);
        }
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some(callgrind::PROBE_COMMAND) {
        probe();
        return;
    }
    callgrind::enable_probe();
    let costs: HashMap<String, f64> = match callgrind::measure(PROBE) {
        Ok(costs) => costs,
        Err(why) => {
            eprintln!("pair_cost_states: {why}");
            std::process::exit(2);
        }
    };
    println!("| state | order | instructions per pair | fresh | ratio |");
    println!("|---|---:|---:|---:|---:|");
    for state in STATES {
        for &order in state.orders {
            let cost = costs[&format!("{}/{order}", state.name)];
            let fresh = costs[&format!("{}/fresh/{order}", state.machine.name())];
            println!(
                "| {} | {order} | {cost:.1} | {fresh:.1} | {:.2} |",
                state.name,
                cost / fresh
            );
        }
    }
}
