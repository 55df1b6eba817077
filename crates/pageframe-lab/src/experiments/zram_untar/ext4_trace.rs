//! The `ext4-trace` workload of `zram-untar`: a block trace of the real
//! ext4 workload — recorded now with `--fs ext4` (root, the `live`
//! module), given with `--trace FILE`, or the shipped one — replayed on
//! every allocator, with the kernel's figures beside: the real /dev/zram
//! of the recording, the kernel given the same stream (`kernel_replay`),
//! and the kernel's band over several fresh runs (`kernel_runs`, the
//! `band` module) against which each row is judged.

use super::rows::KernelBandColumns;
use super::{band, corpus_path, live, replay, typed, BACKENDS, LIVE_DISK_BYTES};
use crate::experiments::{ExperimentError, RunOptions};
use crate::observe;
use crate::parallel;
use crate::params::Params;
use crate::report::Report;
use crate::zram_serve::block_trace::{read_trace, TraceRecord};
use pageframe::zram::Backend;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

/// Checks the block trace `--trace FILE` names as its replay will take it:
/// readable, with step marks, and a replay on `threads` threads that the
/// host can hold. The command calls it when it makes its plan, so that a
/// bad trace is refused before any experiment runs (it was found when
/// zram-untar's turn came, after the experiments before it had printed
/// their reports); the run reads the trace again.
pub fn check_replay_trace(path: &Path, threads: NonZeroUsize) -> Result<(), ExperimentError> {
    let records = read_with_steps(path)?;
    replay::check_host_holds(
        &records,
        &path.display().to_string(),
        allocators_at_once(threads),
        crate::host_memory::available(),
    )
}

/// The records of the trace at `path`, which must have a step mark (a
/// step is what the report shows).
fn read_with_steps(path: &Path) -> Result<Vec<TraceRecord>, ExperimentError> {
    let records = read_trace(path).map_err(ExperimentError::failed)?;
    if !records
        .iter()
        .any(|record| matches!(record, TraceRecord::Step { .. }))
    {
        return Err(ExperimentError::failed(format!(
            "{}: no step marks, so no step to report",
            path.display()
        )));
    }
    Ok(records)
}

/// How many allocators replay at once on `threads` threads (each its own
/// machine and pool, in memory together).
fn allocators_at_once(threads: NonZeroUsize) -> usize {
    threads.get().min(BACKENDS.len())
}

/// The `ext4-trace` workload: record (with `--fs ext4`) or take a trace,
/// replay it on every allocator.
pub(super) fn run(options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
    use crate::zram_serve::block_trace::{parse_trace, read_trace, TRACE_CODECS};
    let codec = ["lz4", "lzo", "zstd"]
        .iter()
        .position(|name| *name == params.choice("codec"))
        .unwrap_or(0);
    let mut notes = Vec::new();
    let mut served = None;
    let rounds = params.int("rounds") as u32;
    let kernel_runs = params.int("kernel_runs") as usize;
    let tar = if options.fs_ext4 || kernel_runs > 0 {
        live::load_tarball(&corpus_path(options))?
    } else {
        Vec::new()
    };
    let (records, name) = if options.fs_ext4 {
        let data_pages = live::data_pages(&tar)?;
        let fit = crate::zram_serve::block_trace::rounds_that_fit(data_pages);
        if u64::from(rounds) > fit {
            return Err(ExperimentError::failed(format!(
                "rounds = {rounds} with --fs ext4: the block trace of {} ({data_pages} data pages a round) holds at most {fit} rounds",
                corpus_path(options).display()
            )));
        }
        let trace = options.block_trace.clone().unwrap_or_else(|| {
            PathBuf::from(format!("zram-untar-ext4-{}.pfzt", options.scale.name()))
        });
        let live = live::LiveOptions {
            tarball: corpus_path(options),
            rounds,
            trace: trace.clone(),
            disk_bytes: LIVE_DISK_BYTES,
            kernel_beside: params.choice("record_beside") == "kernel",
            threads: options.threads,
        };
        let recording = live::record(&live, &tar)?;
        served = Some(recording.served);
        notes.push(recording.note);
        let records = read_trace(&trace).map_err(ExperimentError::failed)?;
        notes.push(format!(
            "recorded now: ext4 (mount -o discard) on a served pageframe zram{}, {} of {}; block trace written to {}",
            if live.kernel_beside {
                " and on a real /dev/zram (lz4) at the same time"
            } else {
                " alone (kernel_* columns empty)"
            },
            live.rounds,
            live.tarball.display(),
            trace.display()
        ));
        (records, trace.display().to_string())
    } else {
        match &options.block_trace {
            Some(path) => (read_with_steps(path)?, path.display().to_string()),
            None => (
                parse_trace(replay::SHIPPED, Path::new(replay::SHIPPED_NAME))
                    .map_err(ExperimentError::failed)?,
                replay::SHIPPED_NAME.to_string(),
            ),
        }
    };
    replay::check_host_holds(
        &records,
        &name,
        allocators_at_once(options.threads),
        crate::host_memory::available(),
    )?;
    let kernel_band_runs = if kernel_runs > 0 {
        let beside = params.choice("kernel_runs_with") == "served";
        let runs = live::kernel_runs(&tar, rounds, LIVE_DISK_BYTES, kernel_runs, beside)?;
        notes.push(format!(
            "kernel_band_*: the kernel's overhead ratio over {kernel_runs} fresh runs of the workload on a real /dev/zram (lz4, this kernel's zsmalloc; ext4, mount -o discard; {rounds} rounds of {}), {}, min, max and mean per step; in_kernel_band: the row's overhead_ratio within [min - {tolerance}, max + {tolerance}]; the runs took {} s",
            corpus_path(options).display(),
            if beside {
                "each beside a fresh served pageframe zram (two untars at once, as a recording with record_beside = kernel)"
            } else {
                "each alone"
            },
            runs.iter()
                .map(|run| format!("{:.0}", run.seconds))
                .collect::<Vec<_>>()
                .join(", "),
            tolerance = band::TOLERANCE,
        ));
        drop(tar);
        Some(runs.into_iter().map(|run| run.steps).collect::<Vec<_>>())
    } else {
        drop(tar);
        None
    };
    let kernel_replay = if options.fs_ext4 || params.bool("kernel_replay") {
        let replay = crate::zram_serve::kernel_replay::replay_on_kernel(&records)
            .map_err(ExperimentError::Failed)?;
        notes.push(format!(
            "kernel_replay_*: this trace replayed on a real /dev/zram (lz4, this kernel's zsmalloc): each write a synthetic page the kernel compresses to the trace's lz4 size ({} of {} writes stored with another size: no page length gives theirs), each discard a BLKDISCARD",
            replay.inexact_writes, replay.writes
        ));
        Some(replay)
    } else {
        None
    };
    let total = BACKENDS.len() as u64;
    let mut rows = Vec::new();
    // Largest gaps of chain 8 against the kernel of the run, and against
    // the kernel given the same stream.
    let mut worst: [Option<(f64, u32, String)>; 2] = [None, None];
    // Chain 8's (and the kernel replay's) values in rounds 1-3 with the
    // band of their step.
    let mut judged: [Vec<(f64, Option<band::Band>)>; 2] = [Vec::new(), Vec::new()];
    // Each backend's replay is its own machine: on up to `threads` threads.
    let replays = parallel::map_in_order(
        options.threads,
        &BACKENDS,
        |&backend| replay::replay(&records, backend, codec),
        |finished| observe::progress(finished as u64, total),
    )
    .map_err(ExperimentError::failed)?;
    for (backend, steps) in BACKENDS.into_iter().zip(replays) {
        let steps = steps?;
        if let (Some(served), Backend::Zsmalloc { chain_size: 8 }, 0) = (&served, backend, codec) {
            let same = steps.len() == served.len()
                && steps.iter().zip(served).all(|(step, stat)| {
                    (step.orig, step.compr, step.used)
                        == (
                            stat.orig_data_size,
                            stat.compr_data_size,
                            stat.mem_used_total,
                        )
                });
            notes.push(format!(
                "the replay of zsmalloc-chain8 with lz4 {} the served device's own mm_stat at every step",
                if same { "equals" } else { "DIFFERS FROM" }
            ));
        }
        for (at, step) in steps.iter().enumerate() {
            let mut row = replay::row(backend, step);
            row.kernel_replay_overhead_ratio = kernel_replay
                .as_ref()
                .and_then(|replay| replay.steps.get(at))
                .map(replay::kernel_ratio);
            let band = kernel_band_runs
                .as_ref()
                .and_then(|runs| band::band_at(runs, step.round, &step.label));
            row.kernel_band = band.map(|band| KernelBandColumns {
                kernel_band_min: band.min,
                kernel_band_max: band.max,
                kernel_band_mean: band.mean,
                in_kernel_band: band.admits(row.sizes.overhead_ratio),
                kernel_replay_in_kernel_band: row
                    .kernel_replay_overhead_ratio
                    .map(|ratio| band.admits(ratio)),
            });
            if backend == (Backend::Zsmalloc { chain_size: 8 }) && step.round <= 3 {
                judged[0].push((row.sizes.overhead_ratio, band));
                if let Some(ratio) = row.kernel_replay_overhead_ratio {
                    judged[1].push((ratio, band));
                }
                let ours = row.sizes.overhead_ratio;
                let kernels = [row.kernel_overhead_ratio, row.kernel_replay_overhead_ratio];
                for (worst, kernel) in worst.iter_mut().zip(kernels) {
                    let Some(kernel) = kernel else { continue };
                    let gap = ours - kernel;
                    if worst
                        .as_ref()
                        .is_none_or(|(worst, ..)| gap.abs() > worst.abs())
                    {
                        *worst = Some((gap, step.round, step.label.clone()));
                    }
                }
            }
            rows.push(typed(&row)?);
        }
    }
    notes.push(format!(
        "block trace {name}: {} records; sizes of {} ({}); sizes in MiB, ratios in % of compr_size; overhead = used_size - compr_size; real_overhead (afmalloc): metadata + chunk rounding",
        records.len(),
        TRACE_CODECS[codec].name(),
        if codec == 2 { "level 3" } else { "as recorded" }
    ));
    notes.push("kernel_*: the real /dev/zram (lz4, this kernel's zsmalloc, chain size of its build) measured beside the served device while the trace was recorded (empty when it was recorded alone); reference_*: the afmalloc document's overhead ratios (Linux 3.17, lzo, zsmalloc of 2014) for rounds 1, 2, 9 and 10".into());
    if kernel_band_runs.is_some() {
        let judges = ["zsmalloc-chain8", "the kernel given the same stream"];
        for (judged, judge) in judged.into_iter().zip(judges) {
            if judged.is_empty() {
                continue;
            }
            let (within, steps) = band::tally(judged);
            notes.push(format!(
                "{judge}: steps within the kernel band ±{}: {within}/{steps} (rounds 1-3)",
                band::TOLERANCE
            ));
        }
    }
    let against = ["the kernel", "the kernel given the same stream"];
    for (worst, against) in worst.into_iter().zip(against) {
        if let Some((gap, round, label)) = worst {
            notes.push(format!(
                "zsmalloc-chain8 vs {against} over rounds 1-3: largest gap {gap:+.2} points (round {round}, {label})"
            ));
        }
    }
    Ok(Report {
        experiment: "zram-untar".into(),
        seed: options.seed,
        scale: options.scale.name().into(),
        rows,
        notes,
    })
}
