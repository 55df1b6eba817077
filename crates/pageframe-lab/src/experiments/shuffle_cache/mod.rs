//! Experiment `shuffle-cache`: reproduces shuffle-free-memory.txt on a
//! scaled machine with a direct-mapped memory-side cache.
//!
//! - `two-instances` / `two-instances+shuffle`: the document's contrived
//!   case. Memory is split with `numa=fake=4U` into cache-sized emulated
//!   nodes; one STREAM instance runs on each of nodes 0 and 1. In address
//!   order both instances' pages sit at the same offsets of their nodes, so
//!   they map to the same cache sets and evict each other; shuffled, the
//!   4 MiB blocks each gets are random and overlap only partly.
//!   Document: 3x faster with shuffle.
//! - `fresh`, `aged`, `aged+shuffle`, `fresh+shuffle`: a managed-runtime heap
//!   3x the cache (hot/warm/cold mix), measured at every run of a benchmark
//!   repeated on a machine that also reads files through the page cache, so
//!   that reclaim and exits shape the free lists (`heap_runs`): the first
//!   run is fresh, the second half of the runs aged; without and with
//!   shuffle. Document: 8%, 21% after aging, 11% with randomization. The
//!   object mix is calibrated once, so that `fresh` is near 8%; the other
//!   rows are then what the simulation predicts.
//! - `shuffle-cost`: one shuffle pass against a boot of the same memory.
//!   Document: "in the noise".
//! - `security` / `security+shuffle`: on a fresh machine, how predictable
//!   consecutive order-0 allocations are.
//!
//! Every heap and stream figure is the mean over several seeds (the run's
//! seed and the next ones) with the spread shown.
//!
//! Besides the case rows, the report holds the series `runs` (see
//! `report::SERIES`): the heap's conflict rate at every benchmark run,
//! without and with shuffle.

mod heap_runs;
mod plot;
pub mod rows;

use super::{Experiment, ExperimentError, RunOptions, Scale};
use crate::cache_model::{BandwidthModel, CacheStats, DirectMappedCache};
use crate::params::{Param, Params};
use crate::plots::Plot;
use crate::report::{round_to, Report, Row};
use crate::summary::Headline;
use crate::workloads::stream::{run_interleaved, StreamInstance};
use crate::workloads::FirstTouchSpace;
use heap_runs::{HeapRuns, RUNS};
use pageframe::machine::{apply_cmdline, MemorySideCache};
use pageframe::{AllocOptions, CpuId, Gfp, LocalPageAllocator, MachineDesc, NodeId, Order};
use rows::{Conflict, HeapCaseRow, SecurityRow, ShuffleCostRow, StreamRow};
use std::time::Instant;

/// The document's conflict rates: fresh, aged, aged with shuffle.
pub const REFERENCE_FRESH: f64 = 0.08;
/// After page-allocator aging.
pub const REFERENCE_AGED: f64 = 0.21;
/// After aging, with randomization.
pub const REFERENCE_AGED_SHUFFLE: f64 = 0.11;
/// The contrived two-instance case's speedup.
pub const REFERENCE_SPEEDUP: f64 = 3.0;
/// Cache line size.
const LINE: u64 = 64;

struct Setup {
    cache: u64,
    heap_memory_factor: u64,
    heap_accesses: u64,
    /// Benchmark runs per aging machine.
    runs: u64,
    /// Seeds of the heap cases (an aging machine per seed and setting).
    heap_seeds: u64,
    stream_passes: u32,
    seeds: u64,
    cost_memory: u64,
}

fn setup(scale: Scale) -> Setup {
    match scale {
        Scale::Quick => Setup {
            cache: 64 << 20,
            heap_memory_factor: 8,
            heap_accesses: 12_000_000,
            runs: 20,
            heap_seeds: 2,
            stream_passes: 3,
            seeds: 5,
            cost_memory: 4 << 30,
        },
        Scale::Full => Setup {
            cache: 1 << 30,
            heap_memory_factor: 8,
            heap_accesses: 200_000_000,
            runs: 20,
            heap_seeds: 2,
            stream_passes: 3,
            seeds: 3,
            cost_memory: 64 << 30,
        },
    }
}

/// A machine with a memory-side cache of `cache` bytes (so shuffle is on by
/// default), optionally forced off on the command line.
fn machine(
    memory: u64,
    nodes_cpus: usize,
    cache: u64,
    shuffle: bool,
    extra_cmdline: &str,
) -> Result<MachineDesc, ExperimentError> {
    let mut desc = MachineDesc::uniform(memory, 1, nodes_cpus)?;
    desc.memory_side_cache = Some(MemorySideCache {
        size: cache,
        line: LINE,
        per_node: false,
    });
    let cmdline = format!(
        "{extra_cmdline} page_alloc.shuffle={}",
        if shuffle { 1 } else { 0 }
    );
    apply_cmdline(&mut desc, &cmdline)?;
    Ok(desc)
}

fn boot(desc: &MachineDesc, seed: u64) -> Result<LocalPageAllocator, ExperimentError> {
    Ok(LocalPageAllocator::boot_seeded(
        desc,
        AllocOptions::default(),
        seed,
    )?)
}

/// Mean, min and max.
fn spread(values: impl Iterator<Item = f64> + Clone) -> (f64, f64, f64) {
    let (sum, count) = values
        .clone()
        .fold((0.0, 0u64), |(sum, count), value| (sum + value, count + 1));
    let mean = sum / count.max(1) as f64;
    let min = values.clone().fold(f64::INFINITY, f64::min);
    let max = values.fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// The conflict rate of `rates`: their mean, min and max, rounded.
fn conflict(rates: impl Iterator<Item = f64> + Clone) -> Conflict {
    let (rate, min, max) = spread(rates);
    Conflict {
        conflict_rate: round_to(rate, 3),
        conflict_min: round_to(min, 3),
        conflict_max: round_to(max, 3),
    }
}

/// The report row of a typed row.
fn row(typed: &impl serde::Serialize) -> Result<Row, ExperimentError> {
    Row::from_typed(typed).map_err(ExperimentError::failed)
}

/// Two STREAM instances on emulated nodes 0 and 1; the cache counts of the
/// measured passes (after one warm-up pass).
fn two_instances(p: &Setup, shuffle: bool, seed: u64) -> Result<CacheStats, ExperimentError> {
    let desc = machine(4 * p.cache, 4, p.cache, shuffle, "numa=fake=4U")?;
    let allocator = boot(&desc, seed)?;
    let mut instances = Vec::new();
    for node in 0..2u16 {
        let cpu = allocator.layout().nodes[node as usize].cpus[0];
        let space = FirstTouchSpace::new(&allocator, p.cache / 4, cpu, NodeId(node));
        let mut instance = StreamInstance::new(space);
        instance.init(&allocator).map_err(ExperimentError::failed)?;
        instances.push(instance);
    }
    let mut cache = DirectMappedCache::new(p.cache, LINE).map_err(ExperimentError::failed)?;
    run_interleaved(&instances, &mut cache, 1, LINE);
    cache.reset_stats();
    run_interleaved(&instances, &mut cache, p.stream_passes, LINE);
    Ok(cache.stats())
}

/// The time of one shuffle pass against the time of a boot without shuffle.
fn shuffle_cost(p: &Setup, seed: u64) -> Result<ShuffleCostRow, ExperimentError> {
    let plain = MachineDesc::uniform(p.cost_memory, 1, 2)?;
    let started = Instant::now();
    let allocator = boot(&plain, seed)?;
    let boot_s = started.elapsed().as_secs_f64();
    drop(allocator);
    let mut shuffled = plain.clone();
    apply_cmdline(&mut shuffled, "page_alloc.shuffle=1")?;
    let mut allocator = boot(&shuffled, seed)?;
    let started = Instant::now();
    let stats = allocator.shuffle_free_memory();
    let shuffle_s = started.elapsed().as_secs_f64();
    Ok(ShuffleCostRow {
        case: "shuffle-cost".into(),
        boot_ms: round_to(boot_s * 1e3, 2),
        shuffle_ms: round_to(shuffle_s * 1e3, 2),
        shuffle_over_boot: round_to(shuffle_s / boot_s.max(1e-9), 3),
        blocks_swapped: stats.swapped,
        reference: "in the noise".into(),
    })
}

/// How predictable 16384 consecutive order-0 allocations on one CPU of a
/// fresh machine are: physically adjacent pairs, next PFN guessed by a
/// stride predictor, and at each move to another 4 MiB block whether that
/// block neighbours the previous one.
fn security(shuffle: bool, seed: u64) -> Result<SecurityRow, ExperimentError> {
    let mut desc = MachineDesc::uniform(1 << 30, 1, 1)?;
    apply_cmdline(
        &mut desc,
        if shuffle {
            "page_alloc.shuffle=1"
        } else {
            "page_alloc.shuffle=0"
        },
    )?;
    let allocator = boot(&desc, seed)?;
    let cpu = allocator.cpu(CpuId(0)).map_err(ExperimentError::failed)?;
    let block_shift = allocator.layout().max_order.0 as u32;
    let pfns: Vec<u64> = (0..16384)
        .map(|_| {
            cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NodeId(0))
                .map(|page| page.pfn().0)
                .map_err(ExperimentError::failed)
        })
        .collect::<Result<_, _>>()?;
    let pairs = pfns.len() as f64 - 1.0;
    let adjacent = pfns.windows(2).filter(|w| w[0].abs_diff(w[1]) == 1).count() as f64 / pairs;
    let guessed = pfns
        .windows(3)
        .filter(|w| w[1].wrapping_mul(2).wrapping_sub(w[0]) == w[2])
        .count() as f64
        / (pairs - 1.0);
    let (mut moves, mut neighbour) = (0u64, 0u64);
    for w in pfns.windows(2) {
        let (from, to) = (w[0] >> block_shift, w[1] >> block_shift);
        if from != to {
            moves += 1;
            neighbour += (from.abs_diff(to) == 1) as u64;
        }
    }
    Ok(SecurityRow {
        case: if shuffle {
            "security+shuffle"
        } else {
            "security"
        }
        .into(),
        adjacent_rate: round_to(adjacent, 3),
        guess_rate: round_to(guessed, 3),
        block_moves: moves,
        next_block_guess_rate: round_to(
            if moves == 0 {
                0.0
            } else {
                neighbour as f64 / moves as f64
            },
            3,
        ),
    })
}

/// The experiment `shuffle-cache`.
pub struct ShuffleCache;

impl Experiment for ShuffleCache {
    fn name(&self) -> &'static str {
        "shuffle-cache"
    }

    fn source(&self) -> &'static str {
        "shuffle-free-memory.txt"
    }

    fn about(&self) -> &'static str {
        "memory-side-cache conflicts fresh, aged and with free-list shuffling"
    }

    /// Its setup follows the scale; it has no parameters.
    fn params(&self, _scale: Scale) -> Vec<Param> {
        Vec::new()
    }

    /// Runs every case of the experiment.
    fn run(&self, options: &RunOptions, _params: &Params) -> Result<Report, ExperimentError> {
        let p = setup(options.scale);
        let seeds: Vec<u64> = (0..p.seeds)
            .map(|at| options.seed.wrapping_add(at))
            .collect();
        let bandwidth = BandwidthModel::default();
        let mut rows = Vec::new();

        // The contrived two-instance case.
        let mut times = [Vec::new(), Vec::new()];
        let mut rates = [Vec::new(), Vec::new()];
        for &seed in &seeds {
            for (at, shuffle) in [false, true].into_iter().enumerate() {
                let stats = two_instances(&p, shuffle, seed)?;
                rates[at].push(stats.conflict_rate());
                times[at].push(bandwidth.time_s(&stats, LINE));
            }
        }
        let (time_off, _, _) = spread(times[0].iter().copied());
        for (at, case) in ["two-instances", "two-instances+shuffle"]
            .into_iter()
            .enumerate()
        {
            let (time, _, _) = spread(times[at].iter().copied());
            rows.push(row(&StreamRow {
                case: case.into(),
                conflict: conflict(rates[at].iter().copied()),
                time_s: round_to(time, 4),
                speedup: round_to(time_off / time, 2),
                reference: (at == 1).then_some(REFERENCE_SPEEDUP),
            })?);
        }

        // The heap 3x the cache over the runs of an aging machine, without and
        // with shuffle.
        let heap_seeds = &seeds[..(p.heap_seeds.min(p.seeds) as usize)];
        let heap_runs = HeapRuns::measure(&p, heap_seeds, options.threads)?;
        for case in heap_runs.case_rows([
            Some(REFERENCE_FRESH),
            Some(REFERENCE_AGED),
            Some(REFERENCE_AGED_SHUFFLE),
        ]) {
            rows.push(row(&case)?);
        }

        rows.push(row(&shuffle_cost(&p, options.seed)?)?);
        for shuffle in [false, true] {
            rows.push(row(&security(shuffle, options.seed)?)?);
        }
        for sample in heap_runs.series_rows() {
            rows.push(Row::series_sample(RUNS, &sample).map_err(ExperimentError::failed)?);
        }

        Ok(Report {
            experiment: "shuffle-cache".into(),
            seed: options.seed,
            scale: options.scale.name().into(),
            rows,
            notes: vec![
                format!(
                    "direct-mapped memory-side cache of {} MiB, {LINE} B lines, indexed by physical address; near {} GB/s, far {} GB/s",
                    p.cache >> 20,
                    bandwidth.near_bytes_per_s / 1e9,
                    bandwidth.far_bytes_per_s / 1e9
                ),
                format!(
                    "two-instances: {} MiB with numa=fake=4U (cache-sized nodes), one STREAM instance of {} MiB on each of nodes 0 and 1, {} passes of copy/scale/add/triad; speedup = time without shuffle / time",
                    4 * (p.cache >> 20),
                    (p.cache / 4) >> 20,
                    p.stream_passes
                ),
                format!(
                    "heap: {} MiB machine, heap 3x the cache pre-touched at the start of each of {} benchmark runs, {} independent accesses per run after a warm-up of a quarter as many, the conflict rate their exact expectation for the run's placement (2.5% of pages take 85%, 27.5% take 12%, 70% take 3%; calibrated so that fresh is near 8%); each run then reads as much as the memory from a data set twice its size through the page cache, writes a log (4 kept), runs a helper process per read and exits; kswapd and direct reclaim free the page cache in LRU order, exits free the heap in address order",
                    (p.cache * p.heap_memory_factor) >> 20,
                    p.runs,
                    p.heap_accesses
                ),
                format!(
                    "fresh = run 1, aged = runs {}..{} (mean, min, max over runs and seeds {:?}); colour_sharers = other heap pages per heap page in the same page-sized slice of the cache (contiguous: 2.00, random placement: {:.2})",
                    p.runs / 2 + 1,
                    p.runs,
                    heap_seeds,
                    heap_runs.random_sharers
                ),
                format!(
                    "mean over seeds {:?} (heap: {:?}); conflict_rate = conflict misses / accesses; reference = shuffle-free-memory.txt",
                    seeds, heap_seeds
                ),
                format!(
                    "series {RUNS}: the heap's conflict rate and colour sharers at every benchmark run (mean, min, max over the seeds), without and with shuffle"
                ),
            ],
        })
    }

    /// The conflict rate after aging, without and with shuffle (document:
    /// 21% -> 11%).
    fn headline(&self, report: &Report) -> Option<Headline> {
        let case = |name: &str| {
            report
                .results_as::<HeapCaseRow>()
                .find(|row| row.case == name)
        };
        let (aged, shuffled) = (case("aged")?, case("aged+shuffle")?);
        let (ours_aged, ours_shuffled) =
            (aged.conflict.conflict_rate, shuffled.conflict.conflict_rate);
        let reference = aged.reference.zip(shuffled.reference);
        Some(Headline {
            metric: "conflict rate aged -> aged+shuffle".into(),
            ours: format!("{:.1}% -> {:.1}%", ours_aged * 100.0, ours_shuffled * 100.0),
            document: reference.map_or("-".into(), |(aged, shuffled)| {
                format!("{:.0}% -> {:.0}%", aged * 100.0, shuffled * 100.0)
            }),
            direction_matches: reference
                .map(|(aged, shuffled)| (shuffled < aged) == (ours_shuffled < ours_aged)),
        })
    }

    fn plots(&self, report: &Report) -> Vec<Plot> {
        plot::plots(report)
    }
}
