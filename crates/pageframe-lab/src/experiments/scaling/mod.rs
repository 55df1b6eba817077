//! Experiment `scaling`: the thread-safe allocator from 1, 2 and 4 threads
//! (4 oversubscribes a 2-core machine), each thread registered as its own
//! CPU and pinned to a core. Two patterns: `local` (each thread allocates
//! and frees its own pages, the per-CPU fast path) and `remote-free` (pages
//! allocated on one thread are freed by the next — the cross-CPU pattern of
//! network drivers; as in the kernel's free_unref_page(), a freed page goes
//! on the freeing CPU's own lists, so the zone lock is taken only when those
//! lists drain or refill). Rows report pages per second over the timed
//! window, how many CPUs the threads kept busy in it, and the zone-lock and
//! pcp-lock counters. How the threads run is the `worker` module's.

mod plot;
pub mod rows;
mod worker;

use super::{Experiment, ExperimentError, RunOptions, Scale};
use crate::observe;
use crate::params::{Param, Params};
use crate::plots::Plot;
use crate::report::{round_to, Report, Row};
use crate::summary::Headline;
use pageframe::backing::allowed_cpus;
use pageframe::proc::vmstat_counters;
use pageframe::{CpuId, MachineDesc, SharedPageAllocator};
use rows::ThroughputRow;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use worker::{Pattern, Worker, CHANNEL_CAPACITY, HANDOFF, HANDOFFS_AHEAD, WARMUP_PAGES};

/// Thread counts measured.
pub const THREADS: [usize; 3] = [1, 2, 4];
/// The most pages a run allocates and frees in all (both patterns, every
/// repeat of every thread count): 4 times the full scale's. Each bound
/// alone allows 2^30 pages x 101 repeats x 127 threads x 2, days of work.
pub const MAX_TOTAL_PAGES: u64 = 1 << 33;

/// Runs a measurement `repeats` times and keeps the run with the median
/// throughput, so that one descheduled run on a shared host does not decide
/// the row.
fn median_run(
    repeats: usize,
    mut run: impl FnMut() -> Result<ThroughputRow, ExperimentError>,
) -> Result<ThroughputRow, ExperimentError> {
    let mut runs = (0..repeats.max(1))
        .map(|_| run())
        .collect::<Result<Vec<ThroughputRow>, _>>()?;
    runs.sort_by(|a, b| a.mpages_per_s.total_cmp(&b.mpages_per_s));
    Ok(runs.swap_remove(runs.len() / 2))
}

fn measure(
    pattern: Pattern,
    threads: usize,
    pages_per_thread: usize,
    cores: &[usize],
) -> Result<ThroughputRow, ExperimentError> {
    let machine = MachineDesc::uniform(4 << 30, 1, threads.max(4))?;
    let allocator = Arc::new(SharedPageAllocator::boot(&machine)?);
    let barrier = Arc::new(Barrier::new(threads));
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..threads)
        .map(|_| mpsc::sync_channel(CHANNEL_CAPACITY))
        .unzip();
    let mut workers = Vec::new();
    for (thread, receiver) in receivers.into_iter().enumerate() {
        let worker = Worker {
            handle: allocator
                .register_cpu_arc(CpuId(thread as u16))
                .map_err(ExperimentError::failed)?,
            core: cores[thread % cores.len()],
            receiver,
            next: senders[(thread + 1) % threads].clone(),
        };
        let barrier = Arc::clone(&barrier);
        workers.push(std::thread::spawn(move || {
            worker.run(pattern, pages_per_thread, &barrier)
        }));
    }
    drop(senders);
    let mut windows = Vec::new();
    for worker in workers {
        windows.push(
            worker
                .join()
                .map_err(|_| ExperimentError::Failed("a worker thread panicked".into()))?
                .map_err(ExperimentError::Failed)?,
        );
    }
    let start = windows.iter().map(|window| window.start).min();
    let end = windows.iter().map(|window| window.end).max();
    let seconds = match (start, end) {
        (Some(start), Some(end)) => (end - start).as_secs_f64().max(1e-9),
        _ => return Err(ExperimentError::Failed("no worker thread ran".into())),
    };
    let cpu_seconds: f64 = windows.iter().map(|window| window.cpu_seconds).sum();
    observe::machine(
        &format!("{}, {threads} threads, after the run", pattern.name()),
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
    Ok(ThroughputRow {
        allocator: "pageframe".into(),
        threads: threads as u64,
        pattern: pattern.name().into(),
        mpages_per_s: round_to(pages / seconds / 1e6, 2),
        ns_per_page: round_to(seconds * 1e9 / pages, 2),
        cpus_busy: round_to(cpu_seconds / seconds, 2),
        zone_lock_acquired: counter("zone_lock_acquired"),
        zone_lock_contended: counter("zone_lock_contended"),
        pcp_trylock_fail: counter("pcp_trylock_fail"),
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

    fn check(&self, params: &Params) -> Result<(), ExperimentError> {
        let pages = params.int("pages_per_thread") as u64;
        let repeats = params.int("repeats") as u64;
        let max_threads = params.int("max_threads") as u64;
        // 1 + 2 + 4 + ... up to max_threads: threads started per repeat.
        let threads = 2 * (1u64 << max_threads.ilog2()) - 1;
        // Each factor is bounded by its Param: the product fits a u64.
        let total = 2 * pages * repeats * threads;
        if total > MAX_TOTAL_PAGES {
            return Err(ExperimentError::Failed(format!(
                "2 patterns x pages_per_thread x repeats x {threads} threads (1, 2, 4, ... up to max_threads = {max_threads}) = {total} pages, more than {MAX_TOTAL_PAGES}"
            )));
        }
        Ok(())
    }

    /// The parameters (config file keys) with their defaults at `scale`.
    fn params(&self, scale: Scale) -> Vec<Param> {
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

    fn run(&self, options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
        // Whole hand-offs, so that every thread receives what it waits for.
        let pages_per_thread =
            (params.int("pages_per_thread") as usize).div_ceil(HANDOFF) * HANDOFF;
        let max_threads = params.int("max_threads") as usize;
        let repeats = params.int("repeats") as usize;
        let counts: Vec<usize> = (0..)
            .map(|power| 1usize << power)
            .take_while(|threads| *threads <= max_threads)
            .collect();
        let cores = allowed_cpus().map_err(ExperimentError::failed)?;
        let mut rows = Vec::new();
        let steps = 2 * counts.len() as u64;
        for pattern in [Pattern::Local, Pattern::RemoteFree] {
            for &threads in &counts {
                observe::progress(rows.len() as u64, steps);
                let median = median_run(repeats, || {
                    measure(pattern, threads, pages_per_thread, &cores)
                })?;
                rows.push(Row::from_typed(&median).map_err(ExperimentError::failed)?);
            }
        }
        observe::progress(steps, steps);
        Ok(Report {
            experiment: "scaling".into(),
            seed: options.seed,
            scale: options.scale.name().into(),
            rows,
            notes: vec![format!(
                "SharedPageAllocator, one node of 4 GiB, 4 CPUs; thread i is pinned to allowed core i mod {} and allocates and frees {pages_per_thread} order-0 pages in the timed window, after {WARMUP_PAGES} untimed (remote-free: in hand-offs of {HANDOFF} to the next thread, up to {HANDOFFS_AHEAD} ahead of those received); the window runs from the first thread's start to the last thread's end; cpus_busy = the threads' CPU time over the window (2 when two threads ran side by side throughout); each row is the median of {repeats} runs",
                cores.len()
            )],
        })
    }

    /// The 2-thread speedup of the local pattern. No document has a
    /// figure for it.
    fn headline(&self, report: &Report) -> Option<Headline> {
        let rate = |threads: u64| {
            report
                .results_as::<ThroughputRow>()
                .find(|row| row.pattern == "local" && row.threads == threads)
                .map(|row| row.mpages_per_s)
        };
        let speedup = rate(2)? / rate(1)?;
        Some(Headline {
            metric: "2-thread speedup, local alloc+free".into(),
            ours: format!("{speedup:.2}x"),
            document: "-".into(),
            direction_matches: None,
        })
    }

    fn plots(&self, report: &Report) -> Vec<Plot> {
        plot::plots(report)
    }
}
