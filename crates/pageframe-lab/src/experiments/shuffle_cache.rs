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
//!   3x the cache (hot/warm/cold mix) on a fresh machine, after aging, each
//!   without and with shuffle. Document: 8%, 21% after aging, 11% with
//!   randomization. The object mix is calibrated once, so that `fresh` is
//!   near 8%; the other rows are then what the simulation predicts.
//! - `shuffle-cost`: one shuffle pass against a boot of the same memory.
//!   Document: "in the noise".
//! - `security` / `security+shuffle`: on a fresh machine, how predictable
//!   consecutive order-0 allocations are.
//!
//! Every heap and stream figure is the mean over several seeds (the run's
//! seed and the next ones) with the spread shown.

use super::{ExperimentError, RunOptions, Scale};
use crate::cache_model::{BandwidthModel, CacheStats, DirectMappedCache};
use crate::report::{Report, Row};
use crate::workloads::aging::{age, AgingConfig};
use crate::workloads::heap::{Heap, HeapMix};
use crate::workloads::stream::{run_interleaved, StreamInstance};
use crate::workloads::FirstTouchSpace;
use pageframe::machine::{apply_cmdline, MemorySideCache};
use pageframe::{
    AllocOptions, CpuId, Gfp, LocalPageAllocator, MachineDesc, MachineRng, NodeId, Order,
};
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

struct Params {
    cache: u64,
    heap_memory_factor: u64,
    heap_accesses: u64,
    aging_ops: u64,
    stream_passes: u32,
    seeds: u64,
    cost_memory: u64,
}

fn params(scale: Scale) -> Params {
    match scale {
        Scale::Quick => Params {
            cache: 64 << 20,
            heap_memory_factor: 8,
            heap_accesses: 12_000_000,
            aging_ops: 400_000,
            stream_passes: 3,
            seeds: 5,
            cost_memory: 4 << 30,
        },
        Scale::Full => Params {
            cache: 1 << 30,
            heap_memory_factor: 8,
            heap_accesses: 200_000_000,
            aging_ops: 4_000_000,
            stream_passes: 3,
            seeds: 3,
            cost_memory: 64 << 30,
        },
    }
}

fn failed(err: impl ToString) -> ExperimentError {
    ExperimentError::Failed(err.to_string())
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
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// Runs the experiment.
pub fn run(options: &RunOptions) -> Result<Report, ExperimentError> {
    let p = params(options.scale);
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
    let (time_off, _, _) = spread(&times[0]);
    let (time_on, _, _) = spread(&times[1]);
    for (at, case) in ["two-instances", "two-instances+shuffle"]
        .into_iter()
        .enumerate()
    {
        let (rate, min, max) = spread(&rates[at]);
        let (time, _, _) = spread(&times[at]);
        let mut row = Row::new()
            .with("case", case)
            .with_f64("conflict_rate", rate, 3)
            .with_f64("conflict_min", min, 3)
            .with_f64("conflict_max", max, 3)
            .with_f64("time_s", time, 4)
            .with_f64("speedup", time_off / time, 2);
        row = row.with(
            "reference",
            if at == 1 {
                serde_json::Value::from(REFERENCE_SPEEDUP)
            } else {
                serde_json::Value::Null
            },
        );
        rows.push(row);
    }
    let _ = time_on;

    // The heap 3x the cache, fresh and aged, without and with shuffle.
    for (case, aged, shuffle, reference) in [
        ("fresh", false, false, Some(REFERENCE_FRESH)),
        ("aged", true, false, Some(REFERENCE_AGED)),
        ("aged+shuffle", true, true, Some(REFERENCE_AGED_SHUFFLE)),
        ("fresh+shuffle", false, true, None),
    ] {
        let mut case_rates = Vec::new();
        for &seed in &seeds {
            let stats = heap_case(&p, aged, shuffle, seed)?;
            case_rates.push(stats.conflict_rate());
        }
        let (rate, min, max) = spread(&case_rates);
        rows.push(
            Row::new()
                .with("case", case)
                .with_f64("conflict_rate", rate, 3)
                .with_f64("conflict_min", min, 3)
                .with_f64("conflict_max", max, 3)
                .with("reference", reference),
        );
    }

    rows.push(shuffle_cost(&p, options.seed)?);
    for shuffle in [false, true] {
        rows.push(security(shuffle, options.seed)?);
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
                "heap: {} MiB machine, heap 3x the cache touched in order, {} accesses (2.5% of pages take 85%, 27.5% take 12%, 70% take 3%; calibrated so that fresh is near 8%); aged = {} seeded alloc/free cycles of mixed orders, lifetimes and GFP types leaving a 15% residue",
                (p.cache * p.heap_memory_factor) >> 20,
                p.heap_accesses,
                p.aging_ops
            ),
            format!(
                "mean over seeds {:?}; conflict_rate = conflict misses / accesses; reference = shuffle-free-memory.txt",
                seeds
            ),
        ],
    })
}

/// Two STREAM instances on emulated nodes 0 and 1; the cache counts of the
/// measured passes (after one warm-up pass).
fn two_instances(p: &Params, shuffle: bool, seed: u64) -> Result<CacheStats, ExperimentError> {
    let desc = machine(4 * p.cache, 4, p.cache, shuffle, "numa=fake=4U")?;
    let allocator = boot(&desc, seed)?;
    let mut instances = Vec::new();
    for node in 0..2u16 {
        let cpu = allocator.layout().nodes[node as usize].cpus[0];
        let space = FirstTouchSpace::new(&allocator, p.cache / 4, cpu, NodeId(node));
        let mut instance = StreamInstance::new(space);
        instance.init(&allocator).map_err(failed)?;
        instances.push(instance);
    }
    let mut cache = DirectMappedCache::new(p.cache, LINE).map_err(failed)?;
    run_interleaved(&instances, &mut cache, 1, LINE);
    cache.reset_stats();
    run_interleaved(&instances, &mut cache, p.stream_passes, LINE);
    Ok(cache.stats())
}

/// The heap case: boot, optionally age, touch the heap, run the mix.
fn heap_case(
    p: &Params,
    aged: bool,
    shuffle: bool,
    seed: u64,
) -> Result<CacheStats, ExperimentError> {
    let desc = machine(p.cache * p.heap_memory_factor, 2, p.cache, shuffle, "")?;
    let allocator = boot(&desc, seed)?;
    if aged {
        age(
            &allocator,
            AgingConfig {
                ops: p.aging_ops,
                hold_limit_percent: 60,
                residue_percent: 15,
            },
            seed ^ 0xa9e,
        )
        .map_err(failed)?;
    }
    let mut space = FirstTouchSpace::new(&allocator, 3 * p.cache, CpuId(0), NodeId(0));
    space.touch_all(&allocator).map_err(failed)?;
    let page_shift = allocator.layout().page_shift as u32;
    let heap = Heap::new(&space, HeapMix::default(), page_shift, LINE);
    let mut cache = DirectMappedCache::new(p.cache, LINE).map_err(failed)?;
    let mut rng = MachineRng::new(seed ^ 0x4ea9);
    heap.run(&space, &mut cache, &mut rng, p.heap_accesses / 4);
    cache.reset_stats();
    heap.run(&space, &mut cache, &mut rng, p.heap_accesses);
    Ok(cache.stats())
}

/// The time of one shuffle pass against the time of a boot without shuffle.
fn shuffle_cost(p: &Params, seed: u64) -> Result<Row, ExperimentError> {
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
    Ok(Row::new()
        .with("case", "shuffle-cost")
        .with_f64("boot_ms", boot_s * 1e3, 2)
        .with_f64("shuffle_ms", shuffle_s * 1e3, 2)
        .with_f64("shuffle_over_boot", shuffle_s / boot_s.max(1e-9), 3)
        .with("blocks_swapped", stats.swapped)
        .with("reference", "in the noise"))
}

/// How predictable 16384 consecutive order-0 allocations on one CPU of a
/// fresh machine are: physically adjacent pairs, next PFN guessed by a
/// stride predictor, and at each move to another 4 MiB block whether that
/// block neighbours the previous one.
fn security(shuffle: bool, seed: u64) -> Result<Row, ExperimentError> {
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
    let cpu = allocator.cpu(CpuId(0)).map_err(failed)?;
    let block_shift = allocator.layout().max_order as u32;
    let pfns: Vec<u64> = (0..16384)
        .map(|_| {
            cpu.alloc_pages(Gfp::HIGHUSER_MOVABLE, Order(0), NodeId(0))
                .map(|page| page.pfn().0)
                .map_err(failed)
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
    Ok(Row::new()
        .with(
            "case",
            if shuffle {
                "security+shuffle"
            } else {
                "security"
            },
        )
        .with_f64("adjacent_rate", adjacent, 3)
        .with_f64("guess_rate", guessed, 3)
        .with("block_moves", moves)
        .with_f64(
            "next_block_guess_rate",
            if moves == 0 {
                0.0
            } else {
                neighbour as f64 / moves as f64
            },
            3,
        ))
}
