//! Experiment `scaling`: the thread-safe allocator from 1, 2 and 4 threads
//! (4 oversubscribes a 2-core machine), each thread registered as its own
//! CPU. Two patterns: `local` (each thread allocates and frees its own
//! pages, the per-CPU fast path) and `remote-free` (pages allocated on one
//! thread are freed by the next, so frees land on another CPU's lists and
//! reach the zone through drains — the cross-CPU pattern of network drivers).
//! Rows report pages per second and the zone-lock and pcp-lock counters.

use super::{ExperimentError, RunOptions, Scale};
use crate::observe;
use crate::params::{Param, Params};
use crate::report::{Report, Row};
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
pub fn params(scale: Scale) -> Vec<Param> {
    let pages_per_thread = match scale {
        Scale::Quick => 1 << 21,
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

/// Runs the experiment with the scale's default parameters.
pub fn run(options: &RunOptions) -> Result<Report, ExperimentError> {
    run_with(options, &Params::defaults(&params(options.scale)))
}

/// Runs the experiment with the given parameters (see [`params`]).
pub fn run_with(options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
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
        row.get("mpages_per_s")
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
            .map_err(|err| ExperimentError::Failed(err.to_string()))?;
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
        .map_err(|err| ExperimentError::Failed(err.to_string()))?;
    let counters = vmstat_counters(&allocator);
    let counter = |name: &str| {
        counters
            .iter()
            .find(|(key, _)| key == name)
            .map_or(0, |(_, value)| *value)
    };
    let pages = (threads * pages_per_thread) as f64;
    Ok(Row::new()
        .with("allocator", "pageframe")
        .with("threads", threads)
        .with("pattern", pattern)
        .with_f64("mpages_per_s", pages / seconds / 1e6, 2)
        .with_f64("ns_per_page", seconds * 1e9 / pages, 2)
        .with("zone_lock_acquired", counter("zone_lock_acquired"))
        .with("zone_lock_contended", counter("zone_lock_contended"))
        .with("pcp_trylock_fail", counter("pcp_trylock_fail")))
}
