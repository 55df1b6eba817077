//! Experiment `bulk`: reproduces bulk-page-allocator.txt. The cost per page
//! of order-0 allocation and free, one page at a time through the per-CPU
//! lists (batch 0), and through `alloc_pages_bulk`/`free_pages_bulk` at
//! batch sizes 1 to 256, measured on this machine in TSC cycles and
//! nanoseconds, beside the kernel figures of the document.
//!
//! In the same run: the peers a user could pick instead (see `peers`), at
//! order 0 and, where they can, orders 3 and 9; and the two knobs the
//! document discusses for the bulk path: statistics updates and safety checks
//! (`variant` column). `ratio` is each row's cost over pageframe's default
//! cost at the same batch and order.
//!
//! Like the document's page_bench, one CPU allocates and frees in a tight
//! loop on a warm allocator; every figure is the median over rounds.

mod plot;
pub mod rows;

use super::{Experiment, ExperimentError, RunOptions, Scale};
use crate::callgrind::{self, Unavailable};
use crate::observe;
use crate::params::{Param, Params};
use crate::peers::{BuddyAllocCrate, BuddySystem, PeerAllocator, VecStack};
use crate::plots::Plot;
use crate::report::{round_to, Report, Row};
use crate::summary::Headline;
use crate::timing::{cycles_per_ns, median, read_cycles};
use pageframe::Local;
use pageframe::{
    AllocOptions, CpuHandle, CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Page,
    PageAllocator,
};
use rows::CostRow;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Batch sizes of the document's table.
pub const BATCHES: [usize; 10] = [1, 2, 3, 4, 8, 16, 32, 64, 128, 256];
/// Order-0 pages the `aged` variant allocates, holds and frees before it
/// is measured: the phase after which high-order frees used to drain the
/// per-CPU lists every time.
pub const AGING_PAGES: usize = 1 << 16;
/// The most pages one measurement allocates and frees (pages_per_round x
/// rounds): 5 times the full scale's. Each bound alone allows 2^24 x
/// 100 001 pages, a day of timing.
pub const MAX_MEASURED_PAGES: i64 = 1 << 28;
/// The variant measured after [`AGING_PAGES`] order-0 pages were held and freed.
const AGED: &str = "after-order0-churn";
/// The document's single-page cost in cycles.
pub const REFERENCE_SINGLE_CYCLES: u64 = 158;
/// Per-page cycles of the kernel's bulk API at [`BATCHES`].
pub const REFERENCE_BULK_CYCLES: [u64; 10] = [128, 107, 100, 95, 91, 88, 85, 85, 84, 115];
/// The document's single-page cost in nanoseconds.
pub const REFERENCE_SINGLE_NS: f64 = 39.593;
/// Per-page nanoseconds of the kernel's bulk API at [`BATCHES`].
pub const REFERENCE_BULK_NS: [f64; 10] = [
    32.134, 26.783, 25.047, 23.988, 22.823, 22.093, 21.338, 21.315, 21.214, 28.979,
];

type Handle<'a> = CpuHandle<&'a PageAllocator<Local>, Local>;

/// The knob settings measured, by the `variant` name of their rows.
const VARIANTS: [(&str, AllocOptions); 4] = [
    (
        "default",
        AllocOptions {
            vm_events: true,
            free_checks: true,
            ..AllocOptions::KERNEL
        },
    ),
    (
        "no-stats",
        AllocOptions {
            vm_events: false,
            free_checks: true,
            ..AllocOptions::KERNEL
        },
    ),
    (
        "no-checks",
        AllocOptions {
            vm_events: true,
            free_checks: false,
            ..AllocOptions::KERNEL
        },
    ),
    (
        "no-stats-no-checks",
        AllocOptions {
            vm_events: false,
            free_checks: false,
            ..AllocOptions::KERNEL
        },
    ),
];

/// Per-page cost of one measurement: medians over rounds.
#[derive(Clone, Copy, Debug)]
pub struct Cost {
    /// Nanoseconds per page.
    pub ns: f64,
    /// TSC cycles per page.
    pub cycles: f64,
}

struct Plan {
    pages_per_round: usize,
    rounds: usize,
}

impl Plan {
    fn from_params(params: &Params) -> Plan {
        Plan {
            pages_per_round: params.int("pages_per_round") as usize,
            rounds: params.int("rounds") as usize,
        }
    }

    /// Runs `rounds` rounds after one warm-up; median cost per page.
    fn measure(
        &self,
        mut round: impl FnMut(usize) -> Result<usize, ExperimentError>,
    ) -> Result<Cost, ExperimentError> {
        round(self.pages_per_round)?;
        let mut ns = Vec::with_capacity(self.rounds);
        let mut cycles = Vec::with_capacity(self.rounds);
        for _ in 0..self.rounds {
            let clock = Instant::now();
            let start = read_cycles();
            let pages = round(self.pages_per_round)? as f64;
            cycles.push((read_cycles() - start) as f64 / pages);
            ns.push(clock.elapsed().as_nanos() as f64 / pages);
        }
        Ok(Cost {
            ns: median(&mut ns),
            cycles: median(&mut cycles),
        })
    }
}

/// One measured row before ratios are known.
struct Measured {
    allocator: &'static str,
    variant: &'static str,
    order: u8,
    batch: usize,
    cost: Cost,
    reference: Option<(u64, f64)>,
}

/// The row of a measured case: its cost beside pageframe's default cost
/// at the same order and batch, the callgrind count and the document's
/// figures.
fn to_row(row: &Measured, all: &[Measured], instructions: &HashMap<String, f64>) -> CostRow {
    let baseline = all
        .iter()
        .find(|other| {
            other.allocator == "pageframe"
                && other.variant == "default"
                && other.order == row.order
                && other.batch == row.batch
        })
        .map(|other| other.cost.ns);
    CostRow {
        allocator: row.allocator.into(),
        variant: row.variant.into(),
        order: u64::from(row.order),
        batch: row.batch as u64,
        ns_per_page: round_to(row.cost.ns, 2),
        cycles_per_page: round_to(row.cost.cycles, 1),
        instructions_per_page: instructions
            .get(&case_key(row.allocator, row.variant, row.order, row.batch))
            .map(|count| round_to(*count, 1)),
        ratio: baseline.map(|ns| round_to(row.cost.ns / ns, 2)),
        reference_cycles: row.reference.map(|(cycles, _)| cycles),
        reference_ns: row.reference.map(|(_, ns)| round_to(ns, 3)),
    }
}

/// The orders measured one block at a time and the batch sizes measured
/// through the bulk API, for a variant.
fn cases(variant: &str) -> (&'static [u8], Vec<usize>) {
    match variant {
        "default" => (&[0, 3, 9], BATCHES.to_vec()),
        AGED => (&[0, 9], Vec::new()),
        _ => (&[0], vec![32]),
    }
}

/// The key of a case in the callgrind probe's output.
fn case_key(allocator: &str, variant: &str, order: u8, batch: usize) -> String {
    format!("{allocator}/{variant}/{order}/{batch}")
}

/// The machine every pageframe case runs on.
fn boot(alloc_options: AllocOptions) -> Result<LocalPageAllocator, ExperimentError> {
    let machine = MachineDesc::uniform(4 << 30, 1, 2)?;
    Ok(LocalPageAllocator::boot_with(&machine, alloc_options)?)
}

/// Takes an allocator to the state of the order-9 cliff: [`AGING_PAGES`]
/// order-0 pages allocated and held, then freed one at a time.
fn age(cpu: &Handle<'_>) -> Result<(), ExperimentError> {
    let mut held = Vec::with_capacity(AGING_PAGES);
    for _ in 0..AGING_PAGES {
        held.push(
            cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0))
                .map_err(ExperimentError::failed)?,
        );
    }
    for page in held {
        cpu.free_pages(page, Order(0))
            .map_err(ExperimentError::failed)?;
    }
    Ok(())
}

fn measure_pageframe(
    plan: &Plan,
    variant: &'static str,
    alloc_options: AllocOptions,
    out: &mut Vec<Measured>,
) -> Result<(), ExperimentError> {
    let allocator = boot(alloc_options)?;
    let cpu = allocator.cpu(CpuId(0)).map_err(ExperimentError::failed)?;
    let is_default = variant == "default";
    if variant == AGED {
        age(&cpu)?;
    }
    let (orders, batches) = cases(variant);
    for &order in orders {
        let cost = plan.measure(|pages| single_round(&cpu, order, pages))?;
        let reference =
            (order == 0 && is_default).then_some((REFERENCE_SINGLE_CYCLES, REFERENCE_SINGLE_NS));
        out.push(Measured {
            allocator: "pageframe",
            variant,
            order,
            batch: 0,
            cost,
            reference,
        });
    }
    let mut slots: Vec<Option<Page>> = Vec::with_capacity(256);
    for batch in batches {
        let cost = plan.measure(|total| bulk_round(&cpu, batch, total, &mut slots))?;
        let at = BATCHES.iter().position(|&known| known == batch);
        out.push(Measured {
            allocator: "pageframe",
            variant,
            order: 0,
            batch,
            cost,
            reference: at
                .filter(|_| is_default)
                .map(|at| (REFERENCE_BULK_CYCLES[at], REFERENCE_BULK_NS[at])),
        });
    }
    if is_default {
        observe::machine(
            "pageframe, default variant, after its measurements",
            &allocator,
        );
    }
    allocator
        .check_invariants()
        .map_err(ExperimentError::failed)
}

/// The order-9 cliff's state, with the default options: see [`age`].
fn measure_aged(plan: &Plan, out: &mut Vec<Measured>) -> Result<(), ExperimentError> {
    measure_pageframe(plan, AGED, VARIANTS[0].1, out)
}

/// Pages each probe case allocates and frees under callgrind (at least 64
/// blocks at high orders): instruction counts need no repetition.
fn probe_pages(order: u8) -> usize {
    (1usize << 13).max(64 << order)
}

/// The callgrind probe of `bulk` (see [`callgrind`]): every pageframe case
/// of every variant and the peers, once each after a warm-up.
pub fn callgrind_probe() -> Result<(), ExperimentError> {
    let mut variants = VARIANTS.to_vec();
    variants.push((AGED, VARIANTS[0].1));
    for (variant, alloc_options) in variants {
        let allocator = boot(alloc_options)?;
        let cpu = allocator.cpu(CpuId(0)).map_err(ExperimentError::failed)?;
        if variant == AGED {
            age(&cpu)?;
        }
        let (orders, batches) = cases(variant);
        for &order in orders {
            let pages = probe_pages(order);
            callgrind::probe_case(&case_key("pageframe", variant, order, 0), || {
                single_round(&cpu, order, pages)
            })?;
        }
        let mut slots: Vec<Option<Page>> = Vec::with_capacity(256);
        for batch in batches {
            let pages = probe_pages(0);
            callgrind::probe_case(&case_key("pageframe", variant, 0, batch), || {
                bulk_round(&cpu, batch, pages, &mut slots)
            })?;
        }
    }
    let mut peers = peer_list()?;
    for (peer, orders) in peers.iter_mut() {
        for &order in orders.iter() {
            // The slowest peer costs thousands of instructions a block.
            let pages = probe_pages(order) / 8;
            callgrind::probe_case(&case_key(peer.name(), "default", order, 0), || {
                peer_round(peer.as_mut(), order, pages)
            })?;
        }
    }
    let mut stack = VecStack::new();
    let mut pfns = vec![0u32; 256];
    for &batch in &BATCHES {
        let pages = probe_pages(0);
        callgrind::probe_case(&case_key("vec-stack", "default", 0, batch), || {
            Ok::<usize, ExperimentError>(stack_round(&mut stack, &mut pfns, batch, pages))
        })?;
    }
    Ok(())
}

/// A peer and the orders it is measured at.
type PeerCase = (Box<dyn PeerAllocator>, &'static [u8]);

/// The peers and the orders each is measured at.
fn peer_list() -> Result<Vec<PeerCase>, ExperimentError> {
    let buddy_alloc = BuddyAllocCrate::new()
        .ok_or_else(|| ExperimentError::failed("cannot allocate buddy-alloc's buffer"))?;
    Ok(vec![
        (Box::new(BuddySystem::new()), &[0, 3, 9]),
        (Box::new(buddy_alloc), &[0]),
        (Box::new(VecStack::new()), &[0]),
    ])
}

/// One round of the `Vec<u32>` floor at a batch size.
fn stack_round(stack: &mut VecStack, pfns: &mut [u32], batch: usize, total: usize) -> usize {
    let mut done = 0;
    while done < total {
        let got = stack.pop_bulk(&mut pfns[..batch]);
        stack.push_bulk(black_box(&pfns[..got]));
        done += batch;
    }
    done
}

fn measure_peers(plan: &Plan, out: &mut Vec<Measured>) -> Result<(), ExperimentError> {
    let mut peers = peer_list()?;
    for (peer, orders) in peers.iter_mut() {
        for &order in orders.iter() {
            let cost = plan.measure(|pages| peer_round(peer.as_mut(), order, pages))?;
            out.push(Measured {
                allocator: peer.name(),
                variant: "default",
                order,
                batch: 0,
                cost,
                reference: None,
            });
        }
    }
    let mut stack = VecStack::new();
    let mut pfns = vec![0u32; 256];
    for &batch in &BATCHES {
        let cost = plan.measure(|total| Ok(stack_round(&mut stack, &mut pfns, batch, total)))?;
        out.push(Measured {
            allocator: "vec-stack",
            variant: "default",
            order: 0,
            batch,
            cost,
            reference: None,
        });
    }
    Ok(())
}

fn single_round(cpu: &Handle<'_>, order: u8, pages: usize) -> Result<usize, ExperimentError> {
    let blocks = (pages >> order).max(1);
    for _ in 0..blocks {
        let page = cpu
            .alloc_pages(Gfp::KERNEL, Order(order), NodeId(0))
            .map_err(ExperimentError::failed)?;
        cpu.free_pages(black_box(page), Order(order))
            .map_err(ExperimentError::failed)?;
    }
    Ok(blocks)
}

fn peer_round(
    peer: &mut dyn PeerAllocator,
    order: u8,
    pages: usize,
) -> Result<usize, ExperimentError> {
    let blocks = (pages >> order).max(1);
    for _ in 0..blocks {
        let block = peer
            .alloc(order)
            .ok_or_else(|| ExperimentError::failed(format!("{} is out of memory", peer.name())))?;
        peer.free(black_box(block), order);
    }
    Ok(blocks)
}

/// One round of the bulk path: fill an array of `batch` empty slots with
/// `alloc_pages_bulk`, give it back with `free_pages_bulk_array` (which
/// empties the slots for the next call), as a page-pool refill would.
fn bulk_round(
    cpu: &Handle<'_>,
    batch: usize,
    total: usize,
    slots: &mut Vec<Option<Page>>,
) -> Result<usize, ExperimentError> {
    slots.clear();
    slots.resize(batch, None);
    let mut done = 0;
    while done < total {
        let got = cpu
            .alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, slots)
            .map_err(ExperimentError::failed)?;
        if got != batch {
            return Err(ExperimentError::failed(format!(
                "bulk allocation returned {got} of {batch} pages"
            )));
        }
        cpu.free_pages_bulk_array(black_box(slots))
            .map_err(ExperimentError::failed)?;
        done += batch;
    }
    Ok(done)
}

/// The experiment `bulk`.
pub struct Bulk;

impl Experiment for Bulk {
    fn name(&self) -> &'static str {
        "bulk"
    }

    fn source(&self) -> &'static str {
        "bulk-page-allocator.txt"
    }

    fn about(&self) -> &'static str {
        "order-0 cost per page, one at a time and through alloc_pages_bulk, beside the kernel and peers"
    }

    fn check(&self, params: &Params) -> Result<(), ExperimentError> {
        super::check_product(
            params,
            ["pages_per_round", "rounds"],
            MAX_MEASURED_PAGES,
            "pages per measurement",
        )
    }

    /// The parameters (config file keys) with their defaults at `scale`.
    fn params(&self, scale: Scale) -> Vec<Param> {
        // Many short rounds: the median then ignores slow spells of a shared
        // host that would swallow a few long rounds whole.
        let (pages_per_round, rounds) = match scale {
            Scale::Quick => (1 << 16, 41),
            Scale::Full => (1 << 18, 201),
        };
        vec![
            Param::int(
                "pages_per_round",
                "Pages allocated and freed in one timed round",
                pages_per_round,
                256,
                1 << 24,
            ),
            Param::int(
                "rounds",
                "Timed rounds per measurement; each figure is their median",
                rounds,
                1,
                100_001,
            ),
            Param::bool(
                "knobs",
                "Also measure the variants without statistics and/or checks",
                true,
            ),
            Param::bool("peers", "Also measure the peer allocators", true),
            Param::bool(
                "instructions",
                "Also count instructions per page with callgrind (needs valgrind)",
                true,
            ),
        ]
    }

    fn run(&self, options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
        let plan = Plan::from_params(params);
        let rate = cycles_per_ns(Duration::from_millis(50));
        let mut measured = Vec::new();
        let variants = if params.bool("knobs") {
            &VARIANTS[..]
        } else {
            &VARIANTS[..1]
        };
        let steps = variants.len() as u64 + u64::from(params.bool("peers"));
        for (step, (variant, alloc_options)) in variants.iter().enumerate() {
            observe::progress(step as u64, steps);
            measure_pageframe(&plan, variant, *alloc_options, &mut measured)?;
        }
        measure_aged(&plan, &mut measured)?;
        if params.bool("peers") {
            observe::progress(steps - 1, steps);
            measure_peers(&plan, &mut measured)?;
        }
        let instructions = if params.bool("instructions") {
            callgrind::measure("bulk")
        } else {
            Err(Unavailable::Failed(
                "not asked for (instructions = false)".into(),
            ))
        };
        observe::progress(steps, steps);
        let instructions_note = match &instructions {
            Ok(_) => "instructions_per_page: callgrind (valgrind) instruction count per page (per block at batch 0), measured in a separate run of the same cases".to_string(),
            Err(why) => format!("instructions_per_page: not measured — {why}"),
        };
        let instructions = instructions.unwrap_or_default();
        let rows = measured
            .iter()
            .map(|row| Row::from_typed(&to_row(row, &measured, &instructions)))
            .collect::<Result<Vec<Row>, _>>()
            .map_err(ExperimentError::failed)?;
        Ok(Report {
            experiment: "bulk".into(),
            seed: options.seed,
            scale: options.scale.name().into(),
            rows,
            notes: vec![
                format!("batch 0 = one block at a time (pageframe: through the per-CPU lists); batch N = alloc_pages_bulk into an array of N slots, then free_pages_bulk_array; reference = kernel figures of bulk-page-allocator.txt; TSC {rate:.3} cycles/ns"),
                format!(
                    "median of {} rounds of {} pages; pageframe on one CPU of a 4 GiB single-node simulated machine, GFP_KERNEL; ratio = cost / pageframe default cost at the same order and batch",
                    plan.rounds, plan.pages_per_round
                ),
                format!("variant {AGED} = default options, measured after {AGING_PAGES} order-0 pages were allocated, held and freed one at a time"),
                instructions_note,
            ],
        })
    }

    /// Cycles per page at batch 32 against the kernel's 85, and the
    /// direction from one page per call (158 in the kernel) to batch 32.
    fn headline(&self, report: &Report) -> Option<Headline> {
        let ours = |batch: u64| {
            report
                .results_as::<CostRow>()
                .find(|row| row.is_order0("pageframe", "default") && row.batch == batch)
        };
        let bulk = ours(32)?;
        let single = ours(0)?;
        let (bulk_cycles, single_cycles) = (bulk.cycles_per_page, single.cycles_per_page);
        let reference = bulk.reference_cycles;
        let reference_single = single.reference_cycles;
        Some(Headline {
            metric: "cycles/page at batch 32 (one at a time)".into(),
            ours: format!("{bulk_cycles:.0} ({single_cycles:.0})"),
            document: match (reference, reference_single) {
                (Some(bulk), Some(single)) => format!("{bulk:.0} ({single:.0})"),
                _ => "-".into(),
            },
            direction_matches: reference
                .zip(reference_single)
                .map(|(bulk, single)| (bulk < single) == (bulk_cycles < single_cycles)),
        })
    }

    fn plots(&self, report: &Report) -> Vec<Plot> {
        plot::plots(report)
    }
}
