//! Experiment `numa-balancing`: reproduces numa-balancing-bound-nodes.txt.
//!
//! A 4-node machine (SLIT 10 local, 21 remote). A memory eater bound to
//! node 3 fills most of it; then N pmbench processes start, half on node-1
//! CPUs and half on node-3 CPUs, all bound (CPUs and memory) to nodes 1 and
//! 3, so the node-3 processes get part of their memory from node 1. After
//! 100 simulated seconds the eater exits; the run goes on for 100 more.
//! Each policy is run from a fresh machine with the same seed:
//!
//! - `bind`: `set_mempolicy(MPOL_BIND, "1,3")` — NUMA balancing does not
//!   touch explicit policies, so nothing moves;
//! - `bind+numa_balancing`: `MPOL_BIND | MPOL_F_NUMA_BALANCING` (with the
//!   document's fallback to plain BIND on EINVAL), `kernel.numa_balancing=1`:
//!   hinting faults move node-3 processes' pages home once node 3 has room;
//! - the same with `kernel.numa_balancing=0`: the flag alone changes nothing.
//!
//! Scores are accesses per simulated second summed over the processes
//! (pmbench's score), before the eater exits and after; see `pmbench` for
//! the cost model and how accesses are batched.
//!
//! Scale: full is the document's 4 × 48 GiB nodes, a 40 GiB eater and
//! 64 × 640 MiB processes. Quick divides memory by 16 and processes by 4
//! (4 × 3 GiB, 2.5 GiB eater, 16 × 160 MiB) and the scan size by 4
//! (64 MB), so that a process still spans 2.5 scan windows as in full.
//! Every size, time and numa_balancing knob is a parameter
//! ([`NumaBalancing`]'s `params`).
//!
//! Besides one result row per run, the report holds the series `timeline`
//! (see `report::SERIES`): per run, one sample per `sample_s` of simulated
//! time with the summed score in that window and the processes' pages on
//! each node at its end, from the processes' own faults and migrations.

mod plot;
pub mod rows;

use super::{Experiment, ExperimentError, RunOptions, Scale};
use crate::observe;
use crate::parallel;
use crate::params::{Param, Params};
use crate::plots::Plot;
use crate::pmbench::{CostModel, Pattern, Process};
use crate::report::{round_to, Report, Row};
use crate::summary::Headline;
use pageframe::vm::mempolicy::{nodemask_words, MPOL_BIND, MPOL_F_NUMA_BALANCING};
use pageframe::vm::{parse_nodestring, NumaBalancingConfig, Pid, Vm};
use pageframe::{CpuId, LocalPageAllocator, MachineDesc, MachineRng, NodeId, Nodemask, Pfn};
use rows::{Run, RunRow, TimelineRow};
use std::sync::Arc;

/// The document's pmbench improvement.
pub const REFERENCE_IMPROVEMENT: f64 = 0.175;

/// The name of the report's time series.
pub const TIMELINE: &str = "timeline";

/// The access patterns a config may choose (`pattern`).
pub const PATTERNS: &[&str] = &["uniform", "normal", "zipf", "linear"];

/// Nodes of the simulated machine: the document's four.
const NODES: usize = 4;

const MIB: u64 = 1 << 20;
/// The most samples of the timeline series per run (duration_s / sample_s):
/// each is a report row.
pub const MAX_SAMPLES: u64 = 10_000;
/// The most process steps per run (processes x duration_s / tick_ms): 6.5
/// times the full scale's (the quick scale's 320 000 take about a second).
/// Each bound alone allows 4096 processes x 10^9 ticks, years of work.
pub const MAX_PROCESS_TICKS: u64 = 1 << 23;
/// The most pages the NUMA-balancing scanner may visit per run, at most
/// (processes x duration_s / scan_period_min_ms x the pages a pass scans):
/// 2.5 times the full scale's 839 M. A scan period of 1 ms at quick scale
/// (5.2e10 pages) ran for minutes within every other bound.
pub const MAX_SCANNED_PAGES: u64 = 1 << 31;

/// The (policy, MPOL_F_NUMA_BALANCING, kernel.numa_balancing) of each run.
const RUNS: [(&str, bool, u8); 3] = [
    ("bind", false, 1),
    ("bind+numa_balancing", true, 1),
    ("bind+numa_balancing", true, 0),
];

/// The sizes and times of one run.
#[derive(Clone, Copy, Debug)]
struct Setup {
    node_bytes: u64,
    cpus_per_node: usize,
    processes: usize,
    ws_bytes: u64,
    pattern: Pattern,
    eater_bytes: u64,
    balancing: NumaBalancingConfig,
    exit_ms: u64,
    duration_ms: u64,
    tick_ms: u64,
    sample_ms: u64,
}

impl Setup {
    /// The setup of `params`, or a one-line error naming the keys that do
    /// not fit together.
    fn from_params(params: &Params) -> Result<Setup, ExperimentError> {
        let int = |key: &str| params.int(key) as u64;
        let invalid = |message: String| Err(ExperimentError::Failed(message));
        let (node_mib, eater_mib) = (int("node_mib"), int("eater_mib"));
        let (processes, map_mib) = (int("processes"), int("map_mib"));
        if eater_mib >= node_mib {
            return invalid(format!(
                "eater_mib = {eater_mib} must be below node_mib = {node_mib} (the eater fills node 3)"
            ));
        }
        let room = 2 * node_mib - eater_mib;
        if processes * map_mib > room {
            return invalid(format!(
                "processes x map_mib = {} MiB does not fit nodes 1 and 3 beside the eater (2 x node_mib - eater_mib = {room} MiB)",
                processes * map_mib
            ));
        }
        if int("eater_exit_s") >= int("duration_s") {
            return invalid(format!(
                "eater_exit_s = {} must be below duration_s = {}",
                int("eater_exit_s"),
                int("duration_s")
            ));
        }
        let samples = int("duration_s").div_ceil(int("sample_s"));
        if samples > MAX_SAMPLES {
            return invalid(format!(
                "duration_s / sample_s = {samples} timeline samples per run, more than {MAX_SAMPLES} (take a larger sample_s)"
            ));
        }
        let ticks = (int("duration_s") * 1000).div_ceil(int("tick_ms"));
        if processes * ticks > MAX_PROCESS_TICKS {
            return invalid(format!(
                "processes x duration_s / tick_ms = {processes} x {ticks} = {} process steps per run, more than {MAX_PROCESS_TICKS} (take fewer processes, a shorter duration_s or a longer tick_ms)",
                processes * ticks
            ));
        }
        if int("scan_period_min_ms") > int("scan_period_max_ms") {
            return invalid(format!(
                "scan_period_min_ms = {} must not exceed scan_period_max_ms = {}",
                int("scan_period_min_ms"),
                int("scan_period_max_ms")
            ));
        }
        // task_numa_work() scans scan_size of a process's memory at most
        // once per scan_period_min_ms.
        let passes = processes
            .saturating_mul(int("duration_s").saturating_mul(1000))
            .div_ceil(int("scan_period_min_ms").max(1));
        let pages_per_pass = int("scan_size_mb").min(map_mib).saturating_mul(256);
        let scanned = passes.saturating_mul(pages_per_pass);
        if scanned > MAX_SCANNED_PAGES {
            return invalid(format!(
                "processes x duration_s / scan_period_min_ms x min(scan_size_mb, map_mib) = {passes} scan passes of {pages_per_pass} pages = {scanned} pages scanned per run at most, more than {MAX_SCANNED_PAGES} (take a longer scan_period_min_ms, a smaller scan_size_mb, fewer processes or a shorter duration_s)"
            ));
        }
        let pattern = match params.choice("pattern") {
            "normal" => Pattern::Normal {
                sigma: params.float("normal_sigma"),
            },
            "zipf" => Pattern::Zipf {
                s: params.float("zipf_s"),
            },
            "linear" => Pattern::Linear,
            _ => Pattern::Uniform,
        };
        Ok(Setup {
            node_bytes: node_mib * MIB,
            cpus_per_node: int("cpus_per_node") as usize,
            processes: processes as usize,
            ws_bytes: map_mib * MIB,
            pattern,
            eater_bytes: eater_mib * MIB,
            balancing: NumaBalancingConfig {
                scan_delay_ms: int("scan_delay_ms"),
                scan_period_min_ms: int("scan_period_min_ms"),
                scan_period_max_ms: int("scan_period_max_ms"),
                scan_size_mb: int("scan_size_mb"),
                ..NumaBalancingConfig::default()
            },
            exit_ms: int("eater_exit_s") * 1000,
            duration_ms: int("duration_s") * 1000,
            tick_ms: int("tick_ms"),
            sample_ms: int("sample_s") * 1000,
        })
    }

    /// Samples of the timeline per run (windows end at multiples of
    /// `sample_ms` and at the end).
    fn samples(&self) -> u64 {
        self.duration_ms.div_ceil(self.sample_ms)
    }
}

/// One sample of the timeline: a window of simulated time.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    /// End of the window, simulated ms.
    end_ms: u64,
    /// Width of the window, ms.
    window_ms: u64,
    /// Accesses of all processes in the window.
    accesses: f64,
    /// The processes' pages on each node at the end of the window.
    pages: Vec<u64>,
    /// Share of the node-3 processes' accesses that go to node 1, at the end.
    remote: f64,
    /// numa_pages_migrated so far.
    migrated: u64,
}

/// One measured run.
struct Outcome {
    score_before: f64,
    score_after: f64,
    score_last: f64,
    remote_before: f64,
    remote_after: f64,
    settle_s: Option<f64>,
    /// When the eater exited, simulated ms (the first tick at or after
    /// `exit_ms`).
    exited_ms: u64,
    counters: pageframe::vm::VmCounters,
    timeline: Vec<Sample>,
    /// The processes' pages per node in their page tables at the end.
    mapped_pages: Vec<u64>,
    /// Pages each process maps.
    map_pages: u64,
}

/// Rounds to 3 decimals without printing `-0.0` for a sum of floats that
/// cancels to a hair below zero.
fn round3(value: f64) -> f64 {
    round_to(value, 3) + 0.0
}

/// The run whose machine `--proc` shows: balancing on, with the flag.
const SHOWN_RUN: usize = 1;

/// Simulates every run of [`RUNS`], in their order. Each run is its own
/// seeded machine, so the outcomes do not depend on how they are spread:
/// the shown run (whose progress and machine the observer sees) runs on
/// the calling thread, the others on up to `options.threads - 1` more.
fn simulate_runs(
    setup: &Setup,
    cost: &CostModel,
    options: &RunOptions,
) -> Result<Vec<Outcome>, ExperimentError> {
    let one = |index: usize, progress: &dyn Fn(u64)| {
        let (policy, flag, sysctl) = RUNS[index];
        let show = (index == SHOWN_RUN).then(|| {
            format!(
                "{policy}, kernel.numa_balancing={sysctl}, at {} s",
                setup.duration_ms / 1000
            )
        });
        simulate(
            setup,
            cost,
            flag,
            sysctl,
            options.seed,
            progress,
            show.as_deref(),
        )
    };
    // The shown run first: parallel::map_in_order runs it on this thread.
    let order: Vec<usize> = std::iter::once(SHOWN_RUN)
        .chain((0..RUNS.len()).filter(|&index| index != SHOWN_RUN))
        .collect();
    let samples = setup.samples();
    let total = samples * order.len() as u64;
    let outcomes = parallel::map_in_order(
        options.threads,
        &order,
        |&index| {
            let progress = |done: u64| {
                if index == SHOWN_RUN {
                    observe::progress(done.min(samples), total);
                }
            };
            one(index, &progress)
        },
        |finished| observe::progress(finished as u64 * samples, total),
    )
    .map_err(|why| {
        ExperimentError::failed(format!("a numa-balancing run thread panicked: {why}"))
    })?;
    // Back to the order of RUNS.
    let mut by_run: Vec<(usize, Result<Outcome, ExperimentError>)> =
        order.into_iter().zip(outcomes).collect();
    by_run.sort_by_key(|&(index, _)| index);
    by_run.into_iter().map(|(_, outcome)| outcome).collect()
}

fn simulate(
    setup: &Setup,
    cost: &CostModel,
    flag: bool,
    sysctl: u8,
    seed: u64,
    progress: &dyn Fn(u64),
    show_machine: Option<&str>,
) -> Result<Outcome, ExperimentError> {
    let failed =
        |what: &str, err: &dyn std::fmt::Display| ExperimentError::Failed(format!("{what}: {err}"));
    let mut desc = MachineDesc::uniform(
        setup.node_bytes * NODES as u64,
        NODES,
        setup.cpus_per_node * NODES,
    )?;
    desc.distances = Some(
        (0..NODES)
            .map(|from| {
                (0..NODES)
                    .map(|to| if from == to { 10 } else { 21 })
                    .collect()
            })
            .collect(),
    );
    let allocator = LocalPageAllocator::boot(&desc)?;
    let distance = allocator.layout().distance.clone();
    let node_cpus: Vec<Vec<CpuId>> = allocator
        .layout()
        .nodes
        .iter()
        .map(|node| node.cpus.clone())
        .collect();
    let mut vm = Vm::new(&allocator, setup.balancing);
    vm.set_numa_balancing(sysctl)
        .map_err(|err| failed("sysctl", &err))?;
    vm.record_scans(true);
    let mut rng = MachineRng::new(seed);
    let shift = vm.page_shift();

    // The memory eater: bound to node 3, touches all of its memory.
    let eater = vm
        .spawn(node_cpus[3][0], &[], 0)
        .map_err(|err| failed("spawn", &err))?;
    let node3 = nodemask_words(&Nodemask::of(NodeId(3)));
    vm.set_mempolicy(eater, MPOL_BIND, Some(&node3), 257)
        .map_err(|err| failed("eater set_mempolicy", &err))?;
    if setup.eater_bytes > 0 {
        let eater_base = vm
            .mmap(eater, setup.eater_bytes)
            .map_err(|err| failed("eater mmap", &err))?;
        for page in 0..setup.eater_bytes >> shift {
            vm.access(eater, eater_base + (page << shift), true)
                .map_err(|err| failed("eater touch (eater_mib too close to node_mib?)", &err))?;
        }
    }

    // The pmbench processes, bound to "1,3" as in the document's snippet.
    let bound =
        parse_nodestring("1,3", &vm.mem_nodes()).map_err(|err| failed("nodestring", &err))?;
    let bound_words = nodemask_words(&bound);
    let allowed_cpus: Vec<CpuId> = node_cpus[1].iter().chain(&node_cpus[3]).copied().collect();
    let weights = Arc::new(setup.pattern.weights((setup.ws_bytes >> shift) as usize));
    let mut processes = Vec::new();
    for index in 0..setup.processes {
        let node = if index % 2 == 0 { 1 } else { 3 };
        let cpu = node_cpus[node][(index / 2) % node_cpus[node].len()];
        let pid = vm
            .spawn(cpu, &allowed_cpus, 0)
            .map_err(|err| failed("spawn", &err))?;
        let mode = if flag {
            MPOL_BIND | MPOL_F_NUMA_BALANCING
        } else {
            MPOL_BIND
        };
        let mut result = vm.set_mempolicy(
            pid,
            mode,
            Some(&bound_words),
            bound.iter().last().map_or(0, |n| n.0 as u64 + 2),
        );
        if result == Err(pageframe::Errno::EINVAL) {
            result = vm.set_mempolicy(pid, MPOL_BIND, Some(&bound_words), 257);
        }
        result.map_err(|err| failed("set_mempolicy", &err))?;
        processes.push(
            Process::new(&mut vm, pid, weights.len() as u64, Arc::clone(&weights))
                .map_err(|err| failed("pmbench", &err))?,
        );
    }
    // Set-up passes run side by side: each process touches 256 pages in turn.
    let ws_pages = weights.len();
    for from in (0..ws_pages).step_by(256) {
        for process in &mut processes {
            process.populate(&mut vm, from, from + 256).map_err(|err| {
                failed(
                    "populate (processes x map_mib too large for nodes 1,3?)",
                    &err,
                )
            })?;
        }
    }

    let remote_share = |processes: &[Process]| {
        let node3: Vec<&Process> = processes.iter().filter(|p| p.node == NodeId(3)).collect();
        node3.iter().map(|p| p.mass()[1]).sum::<f64>() / node3.len().max(1) as f64
    };
    let pages_per_node = |processes: &[Process]| {
        let mut pages = vec![0u64; NODES];
        for process in processes {
            for (node, count) in process.pages_per_node().iter().enumerate() {
                pages[node] += count;
            }
        }
        pages
    };
    let remote_before = remote_share(&processes);
    // Time is spent in ticks of `tick_ms`; each phase's score divides its
    // accesses by the ticks it really had.
    let total_ms = setup.duration_ms;
    let mut exited_ms = None;
    let (mut before, mut after, mut last) = (0.0, 0.0, 0.0);
    let (mut before_ms, mut after_ms, mut last_ms) = (0u64, 0u64, 0u64);
    let mut timeline = Vec::new();
    let (mut window_start, mut window_accesses) = (0u64, 0.0);
    let mut now = 0;
    let mut settle_s = None;
    while now < total_ms {
        if exited_ms.is_none() && now >= setup.exit_ms {
            vm.exit(eater).map_err(|err| failed("eater exit", &err))?;
            exited_ms = Some(now);
        }
        vm.tick(now);
        let mut accesses = 0.0;
        for process in &mut processes {
            accesses += process
                .tick(
                    &mut vm,
                    cost,
                    &distance,
                    setup.tick_ms as f64 * 1e6,
                    &mut rng,
                )
                .map_err(|err| failed("pmbench", &err))?
                .accesses;
        }
        let after_exit = exited_ms.is_some();
        if after_exit {
            after += accesses;
            after_ms += setup.tick_ms;
            if settle_s.is_none() && remote_share(&processes) < 0.05 {
                settle_s = Some((now - exited_ms.unwrap_or(now)) as f64 / 1000.0);
            }
        } else {
            before += accesses;
            before_ms += setup.tick_ms;
        }
        // The last 10 s of the run (or all of it after the exit, if shorter).
        let last_window_ms = 10_000.min(total_ms - setup.exit_ms);
        if now >= total_ms - last_window_ms {
            last += accesses;
            last_ms += setup.tick_ms;
        }
        now += setup.tick_ms;
        window_accesses += accesses;
        if now >= window_start / setup.sample_ms * setup.sample_ms + setup.sample_ms
            || now >= total_ms
        {
            timeline.push(Sample {
                end_ms: now,
                window_ms: now - window_start,
                accesses: window_accesses,
                pages: pages_per_node(&processes),
                remote: remote_share(&processes),
                migrated: vm.counters().numa_pages_migrated,
            });
            progress(timeline.len() as u64);
            window_start = now;
            window_accesses = 0.0;
        }
    }
    let remote_after = remote_share(&processes);
    vm.check_invariants().map_err(|err| failed("vm", &err))?;
    let pids: Vec<Pid> = processes.iter().map(|process| process.pid).collect();
    let mapped_pages = mapped_per_node(&vm, &pids);
    if let Some(label) = show_machine {
        observe::machine(label, &allocator);
    }
    let per_second = |accesses: f64, ms: u64| accesses / (ms.max(1) as f64 / 1000.0);
    Ok(Outcome {
        score_before: per_second(before, before_ms),
        score_after: per_second(after, after_ms),
        score_last: per_second(last, last_ms),
        remote_before,
        remote_after,
        settle_s,
        exited_ms: exited_ms.unwrap_or(setup.exit_ms),
        counters: vm.counters(),
        timeline,
        mapped_pages,
        map_pages: ws_pages as u64,
    })
}

/// The pages `pids` map on each node, read from their page tables.
fn mapped_per_node(vm: &Vm<'_>, pids: &[Pid]) -> Vec<u64> {
    let mut pages = vec![0u64; NODES];
    for pid in pids {
        let Some(task) = vm.task(*pid) else { continue };
        for vma in task.mm.vmas.values() {
            for pte in vma.ptes.iter().filter(|pte| pte.is_present()) {
                if let Some(node) = vm.pfn_node(Pfn(u64::from(pte.pfn))) {
                    pages[node.index()] += 1;
                }
            }
        }
    }
    pages
}

/// The experiment `numa-balancing`.
pub struct NumaBalancing;

impl Experiment for NumaBalancing {
    fn name(&self) -> &'static str {
        "numa-balancing"
    }

    fn source(&self) -> &'static str {
        "numa-balancing-bound-nodes.txt"
    }

    fn about(&self) -> &'static str {
        "pmbench score with MPOL_BIND and MPOL_F_NUMA_BALANCING after a memory eater exits"
    }

    /// Every size, time and numa_balancing knob (config file keys), with
    /// its default at `scale`.
    fn params(&self, scale: Scale) -> Vec<Param> {
        let (node_mib, cpus_per_node, processes, map_mib, eater_mib, scan_size_mb) = match scale {
            Scale::Quick => (3 * 1024, 8, 16, 160, 2560, 64),
            Scale::Full => (48 * 1024, 32, 64, 640, 40 * 1024, 256),
        };
        let kernel = NumaBalancingConfig::default();
        let ms = |value: u64| value as i64;
        vec![
            Param::int(
                "node_mib",
                "Memory of each of the 4 nodes, MiB",
                node_mib,
                64,
                256 * 1024,
            ),
            Param::int("cpus_per_node", "CPUs of each node", cpus_per_node, 1, 256),
            Param::int(
                "processes",
                "pmbench processes; even ones start on node-1 CPUs, odd ones on node-3 CPUs",
                processes,
                2,
                4096,
            ),
            Param::int(
                "map_mib",
                "Each process's mapping, MiB (all of it its working set)",
                map_mib,
                1,
                64 * 1024,
            ),
            Param::choice(
                "pattern",
                "How a process picks the pages it accesses",
                "uniform",
                PATTERNS,
            ),
            Param::float(
                "normal_sigma",
                "pattern = \"normal\": standard deviation over the working-set size",
                0.1,
                0.001,
                10.0,
            ),
            Param::float("zipf_s", "pattern = \"zipf\": the exponent", 1.0, 0.0, 10.0),
            Param::int(
                "eater_mib",
                "The memory eater bound to node 3, MiB",
                eater_mib,
                0,
                256 * 1024,
            ),
            Param::int(
                "eater_exit_s",
                "Simulated second at which the eater exits",
                100,
                1,
                1_000_000,
            ),
            Param::int(
                "duration_s",
                "Simulated seconds in all (the eater exits within them)",
                200,
                2,
                1_000_000,
            ),
            Param::int(
                "tick_ms",
                "Simulation step, ms: scanner ticks and batches of accesses",
                10,
                1,
                1000,
            ),
            Param::int(
                "sample_s",
                "Width of one sample of the timeline series, simulated s",
                2,
                1,
                1_000_000,
            ),
            Param::int(
                "scan_size_mb",
                "numa_balancing scan_size_mb: address space armed per scan",
                scan_size_mb,
                1,
                1 << 20,
            ),
            Param::int(
                "scan_delay_ms",
                "numa_balancing scan_delay_ms: a task's first scan waits this long",
                ms(kernel.scan_delay_ms),
                0,
                1 << 30,
            ),
            Param::int(
                "scan_period_min_ms",
                "numa_balancing scan_period_min_ms",
                ms(kernel.scan_period_min_ms),
                1,
                1 << 30,
            ),
            Param::int(
                "scan_period_max_ms",
                "numa_balancing scan_period_max_ms",
                ms(kernel.scan_period_max_ms),
                1,
                1 << 30,
            ),
        ]
    }

    fn check(&self, params: &Params) -> Result<(), ExperimentError> {
        Setup::from_params(params).map(|_| ())
    }

    fn run(&self, options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
        let setup = Setup::from_params(params)?;
        let cost = CostModel::default();
        let outcomes = simulate_runs(&setup, &cost, options)?;
        let mut rows = Vec::new();
        let mut timeline = Vec::new();
        let mut exited_ms = setup.exit_ms;
        for ((policy, _, sysctl), outcome) in RUNS.into_iter().zip(outcomes) {
            exited_ms = outcome.exited_ms;
            // The timeline's pages come from the processes' own bookkeeping;
            // the page tables must agree, and pages are conserved.
            let last = outcome.timeline.last().map(|sample| &sample.pages);
            if last != Some(&outcome.mapped_pages)
                || outcome.mapped_pages.iter().sum::<u64>()
                    != outcome.map_pages * setup.processes as u64
            {
                return Err(ExperimentError::Failed(format!(
                    "{policy}: timeline pages {last:?} disagree with the page tables {:?}",
                    outcome.mapped_pages
                )));
            }
            let run = Run {
                policy: policy.to_string(),
                numa_balancing: sysctl as u64,
            };
            let result = RunRow {
                run: run.clone(),
                score_before: round_to(outcome.score_before / 1e6, 2),
                score_after: round_to(outcome.score_after / 1e6, 2),
                improvement: round3(outcome.score_after / outcome.score_before - 1.0),
                reference_improvement: REFERENCE_IMPROVEMENT,
                improvement_last_10s: round3(outcome.score_last / outcome.score_before - 1.0),
                remote_before: round3(outcome.remote_before),
                remote_after: round3(outcome.remote_after),
                settle_s: outcome.settle_s,
                pages_migrated: outcome.counters.numa_pages_migrated,
                hint_faults: outcome.counters.numa_hint_faults,
                pte_updates: outcome.counters.numa_pte_updates,
                pgmigrate_fail: outcome.counters.pgmigrate_fail,
                eater_exit_s: outcome.exited_ms as f64 / 1000.0,
            };
            rows.push(Row::from_typed(&result).map_err(ExperimentError::failed)?);
            for sample in &outcome.timeline {
                let sample = TimelineRow {
                    run: run.clone(),
                    t_s: sample.end_ms as f64 / 1000.0,
                    score: round_to(
                        sample.accesses / (sample.window_ms as f64 / 1000.0) / 1e6,
                        2,
                    ),
                    remote: round3(sample.remote),
                    pages_node: sample.pages.clone(),
                    pages_migrated: sample.migrated,
                };
                timeline
                    .push(Row::series_sample(TIMELINE, &sample).map_err(ExperimentError::failed)?);
            }
        }
        rows.extend(timeline);
        Ok(Report {
            experiment: "numa-balancing".into(),
            seed: options.seed,
            scale: options.scale.name().into(),
            rows,
            notes: vec![
                format!(
                    "4 nodes x {} MiB, SLIT 10/21, {} CPUs per node; eater {} MiB bound to node 3; {} pmbench processes x {} MiB ({}), half on node-1 CPUs, half on node-3 CPUs, CPUs and memory bound to nodes 1,3",
                    setup.node_bytes / MIB,
                    setup.cpus_per_node,
                    setup.eater_bytes / MIB,
                    setup.processes,
                    setup.ws_bytes / MIB,
                    params.choice("pattern")
                ),
                format!(
                    "eater exits at {} s; score_before over [0, {} s), score_after over the {} s after (M accesses per simulated s, summed); scan_size {} MB, scan_delay {} ms, scan_period {}..{} ms",
                    exited_ms as f64 / 1000.0,
                    exited_ms as f64 / 1000.0,
                    (setup.duration_ms.saturating_sub(exited_ms)) as f64 / 1000.0,
                    setup.balancing.scan_size_mb,
                    setup.balancing.scan_delay_ms,
                    setup.balancing.scan_period_min_ms,
                    setup.balancing.scan_period_max_ms
                ),
                format!(
                    "access cost = {} ns + {} ns x distance/10; hinting fault {} ns, migration {} ns; remote_* = share of node-3 processes' accesses that go to node 1; settle_s = seconds after the eater exits until that share is below 5%",
                    cost.cpu_ns, cost.local_ns, cost.hint_fault_ns, cost.migrate_ns
                ),
                format!(
                    "series {TIMELINE}: per run, every {} s of simulated time, the summed score in that window (score) and the processes' pages on each node at its end (pages_nodeN)",
                    setup.sample_ms / 1000
                ),
            ],
        })
    }

    /// The pmbench score change of MPOL_BIND with MPOL_F_NUMA_BALANCING
    /// after the eater exits (document: +17.5%).
    fn headline(&self, report: &Report) -> Option<Headline> {
        let row = report
            .results_as::<RunRow>()
            .find(|row| row.run.is_balanced())?;
        let (ours, reference) = (row.improvement, row.reference_improvement);
        Some(Headline {
            metric: "pmbench score change, bind+numa_balancing".into(),
            ours: format!("{:+.1}%", ours * 100.0),
            document: format!("{:+.1}%", reference * 100.0),
            direction_matches: Some((reference > 0.0) == (ours > 0.0)),
        })
    }

    fn plots(&self, report: &Report) -> Vec<Plot> {
        plot::plots(report)
    }
}

#[cfg(test)]
mod tests;
