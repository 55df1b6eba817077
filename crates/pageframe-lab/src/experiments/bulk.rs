//! Experiment `bulk`: reproduces bulk-page-allocator.txt. The cost per page
//! of order-0 allocation and free, one page at a time through the per-CPU
//! lists (batch 0), and through `alloc_pages_bulk`/`free_pages_bulk` at
//! batch sizes 1 to 256, measured on this machine in TSC cycles and
//! nanoseconds, beside the kernel figures of the document.
//!
//! Like the document's page_bench, one CPU allocates and frees in a tight
//! loop on a warm allocator; every figure is the median over rounds.

use super::{ExperimentError, RunOptions, Scale};
use crate::report::{Report, Row};
use crate::timing::{cycles_per_ns, median, read_cycles};
use pageframe::sync::Local;
use pageframe::{CpuHandle, CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order, Page, PageAllocator};
use std::time::Duration;

/// Batch sizes of the document's table.
pub const BATCHES: [usize; 10] = [1, 2, 3, 4, 8, 16, 32, 64, 128, 256];

/// The document's figures in cycles: single page, then per batch size.
pub const REFERENCE_SINGLE_CYCLES: u64 = 158;
/// Per-page cycles of the kernel's bulk API at [`BATCHES`].
pub const REFERENCE_BULK_CYCLES: [u64; 10] = [128, 107, 100, 95, 91, 88, 85, 85, 84, 115];
/// The document's nanoseconds: single page, then per batch size.
pub const REFERENCE_SINGLE_NS: f64 = 39.593;
/// Per-page nanoseconds of the kernel's bulk API at [`BATCHES`].
pub const REFERENCE_BULK_NS: [f64; 10] = [32.134, 26.783, 25.047, 23.988, 22.823, 22.093, 21.338, 21.315, 21.214, 28.979];

type Handle<'a> = CpuHandle<&'a PageAllocator<Local>, Local>;

struct Plan {
    pages_per_round: usize,
    rounds: usize,
}

impl Plan {
    fn for_scale(scale: Scale) -> Plan {
        match scale {
            Scale::Quick => Plan {
                pages_per_round: 1 << 20,
                rounds: 7,
            },
            Scale::Full => Plan {
                pages_per_round: 1 << 23,
                rounds: 21,
            },
        }
    }
}

/// Runs the experiment.
pub fn run(options: &RunOptions) -> Result<Report, ExperimentError> {
    let plan = Plan::for_scale(options.scale);
    let machine = MachineDesc::uniform(4 << 30, 1, 2)?;
    let allocator = LocalPageAllocator::boot(&machine)?;
    let cpu = allocator
        .cpu(CpuId(0))
        .map_err(|err| ExperimentError::Failed(err.to_string()))?;
    let rate = cycles_per_ns(Duration::from_millis(50));
    let mut rows = Vec::new();

    let single = measure(&plan, || single_round(&cpu, plan.pages_per_round))?;
    rows.push(row(0, single, REFERENCE_SINGLE_CYCLES, REFERENCE_SINGLE_NS));
    let mut slots: Vec<Option<Page>> = Vec::with_capacity(256);
    let mut pages: Vec<Page> = Vec::with_capacity(256);
    for (at, &batch) in BATCHES.iter().enumerate() {
        let per_page = measure(&plan, || bulk_round(&cpu, batch, plan.pages_per_round, &mut slots, &mut pages))?;
        rows.push(row(batch, per_page, REFERENCE_BULK_CYCLES[at], REFERENCE_BULK_NS[at]));
    }
    allocator
        .check_invariants()
        .map_err(|err| ExperimentError::Failed(err.to_string()))?;
    Ok(Report {
        experiment: "bulk".into(),
        seed: options.seed,
        scale: options.scale.name().into(),
        rows,
        notes: vec![
            format!(
                "batch 0 = one page at a time through the per-CPU lists; reference = kernel figures of bulk-page-allocator.txt; TSC {rate:.3} cycles/ns"
            ),
            format!(
                "median of {} rounds of {} pages, order 0, GFP_KERNEL, one CPU of a 4 GiB single-node simulated machine",
                plan.rounds, plan.pages_per_round
            ),
        ],
    })
}

fn row(batch: usize, cost: Cost, reference_cycles: u64, reference_ns: f64) -> Row {
    Row::new()
        .with("allocator", "pageframe")
        .with("batch", batch)
        .with_f64("ns_per_page", cost.ns, 2)
        .with_f64("cycles_per_page", cost.cycles, 1)
        .with("reference_cycles", reference_cycles)
        .with_f64("reference_ns", reference_ns, 3)
}

/// Per-page cost of one measurement: medians over rounds.
#[derive(Clone, Copy, Debug)]
pub struct Cost {
    /// Nanoseconds per page.
    pub ns: f64,
    /// TSC cycles per page.
    pub cycles: f64,
}

/// Runs `rounds` rounds (after one warm-up) and returns the median cost per page.
fn measure(plan: &Plan, mut round: impl FnMut() -> Result<usize, ExperimentError>) -> Result<Cost, ExperimentError> {
    round()?;
    let mut ns = Vec::with_capacity(plan.rounds);
    let mut cycles = Vec::with_capacity(plan.rounds);
    for _ in 0..plan.rounds {
        let clock = std::time::Instant::now();
        let start = read_cycles();
        let pages = round()? as f64;
        cycles.push((read_cycles() - start) as f64 / pages);
        ns.push(clock.elapsed().as_nanos() as f64 / pages);
    }
    Ok(Cost {
        ns: median(&mut ns),
        cycles: median(&mut cycles),
    })
}

fn single_round(cpu: &Handle<'_>, pages: usize) -> Result<usize, ExperimentError> {
    for _ in 0..pages {
        let page = cpu.alloc_pages(Gfp::KERNEL, Order(0), NodeId(0)).map_err(failed)?;
        cpu.free_pages(std::hint::black_box(page), Order(0)).map_err(failed)?;
    }
    Ok(pages)
}

fn bulk_round(
    cpu: &Handle<'_>,
    batch: usize,
    total: usize,
    slots: &mut Vec<Option<Page>>,
    pages: &mut Vec<Page>,
) -> Result<usize, ExperimentError> {
    let mut done = 0;
    while done < total {
        slots.clear();
        slots.resize(batch, None);
        let got = cpu.alloc_pages_bulk(Gfp::KERNEL, NodeId(0), None, slots).map_err(failed)?;
        if got != batch {
            return Err(ExperimentError::Failed(format!("bulk allocation returned {got} of {batch} pages")));
        }
        pages.clear();
        pages.extend(slots.iter().flatten());
        cpu.free_pages_bulk(std::hint::black_box(pages)).map_err(failed)?;
        done += batch;
    }
    Ok(done)
}

fn failed(err: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Failed(err.to_string())
}
