//! Experiment `scaling`: the thread-safe allocator from 1, 2 and 4 threads
//! (4 oversubscribes a 2-core machine), each thread registered as its own
//! CPU. Two patterns: `local` (each thread allocates and frees its own
//! pages, the per-CPU fast path) and `remote-free` (pages allocated on one
//! thread are freed by the next, so frees land on another CPU's lists and
//! reach the zone through drains — the cross-CPU pattern of network drivers).
//! Rows report pages per second and the zone-lock and pcp-lock counters.

mod columns;
mod plot;

use super::{Experiment, ExperimentError, RunOptions, Scale};
use crate::observe;
use crate::params::{Param, Params};
use crate::plots::Plot;
use crate::plots::{number, text};
use crate::report::{Report, Row};
use crate::summary::{self, Headline};
use pageframe::proc::vmstat_counters;
use pageframe::{CpuId, Gfp, MachineDesc, NodeId, Order, Page, SharedPageAllocator};
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Thread counts measured.
pub const THREADS: [usize; 3] = [1, 2, 4];
/// Pages a thread hands to its neighbour at a time in `remote-free`.
const HANDOFF: usize = 1024;

/// The parameters of `scaling` (config file keys) with their defaults.
fn params(scale: Scale) -> Vec<Param> {
    let pages_per_thread = match scale {
        // Quick: about a second for all rows on two cores, so that `run all`
        // stays within its budget.
        Scale::Quick => 1 << 20,
        Scale::Full => 1 << 24,
    };
    vec![
        Param::int(
            "pages_per_thread",
            "Order-0 pages each thread allocates and frees",
            pages_per_thread,
            HANDOFF as i64,
            1 << 30,
        ),
        Param::int(
            "repeats",
            "Runs of each configuration; the row is the run with the median throughput",
            match scale {
                Scale::Quick => 5,
                Scale::Full => 9,
            },
            1,
            101,
        ),
        Param::int(
            "max_threads",
            "Largest thread count; counts are 1, 2, 4, ... up to it",
            *THREADS.last().unwrap_or(&4) as i64,
            1,
            64,
        ),
    ]
}

/// Runs the experiment with the given parameters (see [`params`]).
fn run_with(options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
    // Whole hand-offs, so that every thread receives what it waits for.
    let pages_per_thread = (params.int("pages_per_thread") as usize).div_ceil(HANDOFF) * HANDOFF;
    let max_threads = params.int("max_threads") as usize;
    let repeats = params.int("repeats") as usize;
    let counts: Vec<usize> = (0..)
        .map(|power| 1usize << power)
        .take_while(|threads| *threads <= max_threads)
        .collect();
    let mut rows = Vec::new();
    let steps = 2 * counts.len() as u64;
    for pattern in ["local", "remote-free"] {
        for &threads in &counts {
            observe::progress(rows.len() as u64, steps);
            rows.push(median_run(repeats, || {
                measure(pattern, threads, pages_per_thread)
            })?);
        }
    }
    observe::progress(steps, steps);
    Ok(Report {
        experiment: "scaling".into(),
        seed: options.seed,
        scale: options.scale.name().into(),
        rows,
        notes: vec![format!(
            "SharedPageAllocator, one node of 4 GiB, 4 CPUs; each thread allocates and frees {pages_per_thread} order-0 pages (remote-free: in hand-offs of {HANDOFF} to the next thread); each row is the median of {repeats} runs; {} cores here",
            std::thread::available_parallelism().map_or(0, |cores| cores.get())
        )],
    })
}

/// Runs a measurement `repeats` times and keeps the run with the median
/// throughput, so that one descheduled run on a shared host does not decide
/// the row.
fn median_run(
    repeats: usize,
    mut run: impl FnMut() -> Result<Row, ExperimentError>,
) -> Result<Row, ExperimentError> {
    let mut runs = (0..repeats.max(1))
        .map(|_| run())
        .collect::<Result<Vec<Row>, _>>()?;
    let throughput = |row: &Row| {
        row.get(columns::MPAGES_PER_S)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0)
    };
    runs.sort_by(|a, b| throughput(a).total_cmp(&throughput(b)));
    Ok(runs.swap_remove(runs.len() / 2))
}

fn measure(
    pattern: &'static str,
    threads: usize,
    pages_per_thread: usize,
) -> Result<Row, ExperimentError> {
    let machine = MachineDesc::uniform(4 << 30, 1, threads.max(4))?;
    let allocator = Arc::new(SharedPageAllocator::boot(&machine)?);
    let barrier = Arc::new(Barrier::new(threads + 1));
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..threads)
        .map(|_| mpsc::sync_channel::<Vec<Page>>(8))
        .unzip();
    let mut workers = Vec::new();
    for (thread, receiver) in receivers.into_iter().enumerate() {
        let handle = allocator
            .register_cpu_arc(CpuId(thread as u16))
            .map_err(ExperimentError::failed)?;
        let barrier = Arc::clone(&barrier);
        let next = senders[(thread + 1) % threads].clone();
        workers.push(std::thread::spawn(move || -> Result<(), String> {
            barrier.wait();
            if pattern == "local" {
                for _ in 0..pages_per_thread {
                    let page = handle
                        .alloc_pages(Gfp::KERNEL, Order(0), NodeId(0))
                        .map_err(|err| err.to_string())?;
                    handle
                        .free_pages(page, Order(0))
                        .map_err(|err| err.to_string())?;
                }
                return Ok(());
            }
            let mut sent = 0;
            let mut received = 0;
            while received < pages_per_thread {
                if sent < pages_per_thread {
                    let mut batch = Vec::with_capacity(HANDOFF);
                    for _ in 0..HANDOFF {
                        batch.push(
                            handle
                                .alloc_pages(Gfp::KERNEL, Order(0), NodeId(0))
                                .map_err(|err| err.to_string())?,
                        );
                    }
                    sent += HANDOFF;
                    next.send(batch).map_err(|err| err.to_string())?;
                }
                let batch = receiver.recv().map_err(|err| err.to_string())?;
                received += batch.len();
                for page in batch {
                    handle
                        .free_pages(page, Order(0))
                        .map_err(|err| err.to_string())?;
                }
            }
            Ok(())
        }));
    }
    drop(senders);
    barrier.wait();
    let start = Instant::now();
    for worker in workers {
        worker
            .join()
            .map_err(|_| ExperimentError::Failed("a worker thread panicked".into()))?
            .map_err(ExperimentError::Failed)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    observe::machine(
        &format!("{pattern}, {threads} threads, after the run"),
        &allocator,
    );
    allocator
        .check_invariants()
        .map_err(ExperimentError::failed)?;
    let counters = vmstat_counters(&allocator);
    let counter = |name: &str| {
        counters
            .iter()
            .find(|(key, _)| key == name)
            .map_or(0, |(_, value)| *value)
    };
    let pages = (threads * pages_per_thread) as f64;
    Ok(Row::new()
        .with(columns::ALLOCATOR, "pageframe")
        .with(columns::THREADS, threads)
        .with(columns::PATTERN, pattern)
        .with_f64(columns::MPAGES_PER_S, pages / seconds / 1e6, 2)
        .with_f64(columns::NS_PER_PAGE, seconds * 1e9 / pages, 2)
        .with(columns::ZONE_LOCK_ACQUIRED, counter("zone_lock_acquired"))
        .with(columns::ZONE_LOCK_CONTENDED, counter("zone_lock_contended"))
        .with(columns::PCP_TRYLOCK_FAIL, counter("pcp_trylock_fail")))
}

/// `scaling`: the 2-thread speedup of the local pattern. No document has a
/// figure for it.
fn headline(report: &Report) -> Option<Headline> {
    let rate = |threads: f64| {
        summary::find_result(report, |row| {
            text(row, columns::PATTERN) == Some("local")
                && number(row, columns::THREADS) == Some(threads)
        })
        .and_then(|row| number(row, columns::MPAGES_PER_S))
    };
    let speedup = rate(2.0)? / rate(1.0)?;
    Some(Headline {
        metric: "2-thread speedup, local alloc+free".into(),
        ours: format!("{speedup:.2}x"),
        document: "-".into(),
        direction_matches: None,
    })
}

/// The experiment `scaling`.
pub struct Scaling;

impl Experiment for Scaling {
    fn name(&self) -> &'static str {
        "scaling"
    }

    fn source(&self) -> &'static str {
        ""
    }

    fn about(&self) -> &'static str {
        "thread-safe allocator throughput from 1, 2, 4 threads, local and remote frees"
    }

    fn params(&self, scale: Scale) -> Vec<Param> {
        params(scale)
    }

    fn run(&self, options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
        run_with(options, params)
    }

    fn headline(&self, report: &Report) -> Option<Headline> {
        headline(report)
    }

    fn plots(&self, report: &Report) -> Vec<Plot> {
        plot::plots(report)
    }
}
