//! Experiment `scaling`: the thread-safe allocator from 1, 2 and 4 threads
//! (4 oversubscribes a 2-core machine), each thread registered as its own
//! CPU. Two patterns: `local` (each thread allocates and frees its own
//! pages, the per-CPU fast path) and `remote-free` (pages allocated on one
//! thread are freed by the next, so frees land on another CPU's lists and
//! reach the zone through drains — the cross-CPU pattern of network drivers).
//! Rows report pages per second and the zone-lock and pcp-lock counters.

mod plot;
pub mod rows;

use super::{Experiment, ExperimentError, RunOptions, Scale};
use crate::observe;
use crate::params::{Param, Params};
use crate::plots::Plot;
use crate::report::{round_to, Report, Row};
use crate::summary::Headline;
use pageframe::proc::vmstat_counters;
use pageframe::{CpuId, Gfp, MachineDesc, NodeId, Order, Page, SharedPageAllocator};
use rows::ThroughputRow;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Thread counts measured.
pub const THREADS: [usize; 3] = [1, 2, 4];
/// Pages a thread hands to its neighbour at a time in `remote-free`.
const HANDOFF: usize = 1024;
/// Hand-offs a thread may have sent ahead of those it received back in
/// `remote-free`, so that a thread finds its neighbour's pages waiting
/// rather than sleeping on the channel until they come: the pattern
/// measures the allocator's cross-CPU frees, not the threads' wake-ups.
/// At most the channel's capacity, so that a send never blocks.
const HANDOFFS_AHEAD: usize = 2;
/// Hand-offs a channel holds.
const CHANNEL_CAPACITY: usize = 8;

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
    pattern: &'static str,
    threads: usize,
    pages_per_thread: usize,
) -> Result<ThroughputRow, ExperimentError> {
    let machine = MachineDesc::uniform(4 << 30, 1, threads.max(4))?;
    let allocator = Arc::new(SharedPageAllocator::boot(&machine)?);
    let barrier = Arc::new(Barrier::new(threads + 1));
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..threads)
        .map(|_| mpsc::sync_channel::<Vec<Page>>(CHANNEL_CAPACITY))
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
                while sent < pages_per_thread && sent < received + HANDOFFS_AHEAD * HANDOFF {
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
    Ok(ThroughputRow {
        allocator: "pageframe".into(),
        threads: threads as u64,
        pattern: pattern.into(),
        mpages_per_s: round_to(pages / seconds / 1e6, 2),
        ns_per_page: round_to(seconds * 1e9 / pages, 2),
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
        let mut rows = Vec::new();
        let steps = 2 * counts.len() as u64;
        for pattern in ["local", "remote-free"] {
            for &threads in &counts {
                observe::progress(rows.len() as u64, steps);
                let median = median_run(repeats, || measure(pattern, threads, pages_per_thread))?;
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
                "SharedPageAllocator, one node of 4 GiB, 4 CPUs; each thread allocates and frees {pages_per_thread} order-0 pages (remote-free: in hand-offs of {HANDOFF} to the next thread, up to {HANDOFFS_AHEAD} ahead of those received); each row is the median of {repeats} runs; {} cores here",
                std::thread::available_parallelism().map_or(0, |cores| cores.get())
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
