//! The heap cases of `shuffle-cache`: a heap 3x the memory-side cache,
//! measured at every run of a benchmark repeated on a machine that ages as
//! a server does ([`pageframe::reclaim::aging`]): each run pre-touches its
//! heap, is measured, does its work (reads a data set twice the memory
//! through the page cache, writes a log, runs helper processes) and exits;
//! reclaim and exits give the memory back, and the next run's heap is built
//! from it. Nothing in the workload is tuned to a conflict rate.
//!
//! - `fresh` / `fresh+shuffle`: the first run (a fresh machine);
//! - `aged` / `aged+shuffle`: the runs of the second half (the machine aged
//!   by at least half the runs);
//! - the series `runs`: every run, without and with shuffle.
//!
//! Every run is measured with the same access model (its conflict rate is
//! the exact expectation over the accesses: [`conflict_rate`]), so runs
//! differ only in where the heap's pages are. Beside the conflict rate, each run's
//! colour sharers ([`colour_sharers`]) show the placement itself.

use super::rows::{HeapCaseRow, RunRow};
use super::{boot, conflict, machine, spread, Setup, LINE};
use crate::cache_model::{colour_sharers, random_colour_sharers};
use crate::experiments::ExperimentError;
use crate::report::round_to;
use crate::workloads::heap::{conflict_rate, HeapMix};
use pageframe::reclaim::{AgingConfig, AgingWorkload};
use pageframe::CpuId;
use std::num::NonZeroUsize;

/// The name of the report's series of conflict rate per benchmark run.
pub const RUNS: &str = "runs";

/// One run's measurement on one machine.
#[derive(Clone, Copy, Debug, PartialEq)]
struct RunSample {
    conflict_rate: f64,
    colour_sharers: f64,
}

/// Every run's samples, per shuffle setting (index 0: off, 1: on), per run,
/// per seed.
pub(super) struct HeapRuns {
    samples: [Vec<Vec<RunSample>>; 2],
    /// The sharers random placement would give the heap.
    pub(super) random_sharers: f64,
}

impl HeapRuns {
    /// Runs the benchmark `p.runs` times on one aging machine per seed and
    /// shuffle setting; the machines run on up to `threads` threads (each
    /// is deterministic on its own, so the result is the same either way).
    pub(super) fn measure(
        p: &Setup,
        seeds: &[u64],
        threads: NonZeroUsize,
    ) -> Result<HeapRuns, ExperimentError> {
        let machines: Vec<(bool, u64)> = [false, true]
            .into_iter()
            .flat_map(|shuffle| seeds.iter().map(move |&seed| (shuffle, seed)))
            .collect();
        let measured = crate::parallel::map_in_order(
            threads,
            &machines,
            |&(shuffle, seed)| one_machine(p, shuffle, seed),
            |_| {},
        )
        .map_err(ExperimentError::failed)?;
        let mut samples = [
            vec![Vec::new(); p.runs as usize],
            vec![Vec::new(); p.runs as usize],
        ];
        let mut random_sharers = 0.0;
        for (&(shuffle, _), machine) in machines.iter().zip(measured) {
            let (runs, random) = machine?;
            random_sharers = random;
            for (run, sample) in runs.into_iter().enumerate() {
                samples[shuffle as usize][run].push(sample);
            }
        }
        Ok(HeapRuns {
            samples,
            random_sharers,
        })
    }

    /// The runs counted as aged: the second half.
    fn aged_runs(&self) -> std::ops::Range<usize> {
        let runs = self.samples[0].len();
        runs / 2..runs
    }

    /// The samples of `runs` with shuffle `shuffle`.
    fn pick(
        &self,
        shuffle: bool,
        runs: std::ops::Range<usize>,
    ) -> impl Iterator<Item = RunSample> + Clone + '_ {
        self.samples[shuffle as usize][runs]
            .iter()
            .flatten()
            .copied()
    }

    /// The rows `fresh`, `aged`, `aged+shuffle`, `fresh+shuffle`.
    pub(super) fn case_rows(&self, references: [Option<f64>; 3]) -> Vec<HeapCaseRow> {
        let [fresh, aged, aged_shuffle] = references;
        [
            ("fresh", false, false, fresh),
            ("aged", true, false, aged),
            ("aged+shuffle", true, true, aged_shuffle),
            ("fresh+shuffle", false, true, None),
        ]
        .into_iter()
        .map(|(case, is_aged, shuffle, reference)| {
            let runs = if is_aged { self.aged_runs() } else { 0..1 };
            let samples = self.pick(shuffle, runs);
            let (sharers, _, _) = spread(samples.clone().map(|s| s.colour_sharers));
            HeapCaseRow {
                case: case.into(),
                conflict: conflict(samples.map(|s| s.conflict_rate)),
                colour_sharers: round_to(sharers, 2),
                reference,
            }
        })
        .collect()
    }

    /// The samples of the series `runs`: per shuffle setting, every run in
    /// order.
    pub(super) fn series_rows(&self) -> Vec<RunRow> {
        let mut rows = Vec::new();
        for shuffle in [false, true] {
            for run in 0..self.samples[shuffle as usize].len() {
                let samples = self.pick(shuffle, run..run + 1);
                let (sharers, _, _) = spread(samples.clone().map(|s| s.colour_sharers));
                rows.push(RunRow {
                    run: run as u64 + 1,
                    shuffle,
                    conflict: conflict(samples.map(|s| s.conflict_rate)),
                    colour_sharers: round_to(sharers, 2),
                });
            }
        }
        rows
    }
}

/// Boots one machine 8x the cache and runs the benchmark `p.runs` times
/// on it: the heap of every run measured with the same access model.
/// Also returns the colour sharers random placement would give the heap.
fn one_machine(
    p: &Setup,
    shuffle: bool,
    seed: u64,
) -> Result<(Vec<RunSample>, f64), ExperimentError> {
    let memory = p.cache * p.heap_memory_factor;
    let desc = machine(memory, 2, p.cache, shuffle, "")?;
    let allocator = boot(&desc, seed)?;
    let page_shift = allocator.layout().page_shift as u32;
    let cache_pages = p.cache >> page_shift;
    let (heap_pages, memory_pages) = (3 * cache_pages, memory >> page_shift);
    let config = AgingConfig::for_machine(heap_pages, memory_pages, CpuId(0));
    let mut workload =
        AgingWorkload::new(&allocator, config, seed ^ 0xa9e).map_err(ExperimentError::failed)?;
    let mut samples = Vec::new();
    for _ in 0..p.runs {
        let sample = workload
            .benchmark_run(|pfns| {
                Ok::<_, String>(RunSample {
                    conflict_rate: conflict_rate(
                        pfns,
                        HeapMix::default(),
                        page_shift,
                        (p.cache, LINE),
                        p.heap_accesses,
                    )?,
                    colour_sharers: colour_sharers(pfns, cache_pages),
                })
            })
            .map_err(ExperimentError::failed)?
            .map_err(ExperimentError::failed)?;
        samples.push(sample);
    }
    workload
        .mm()
        .check_invariants()
        .map_err(ExperimentError::failed)?;
    let random = random_colour_sharers(heap_pages, memory_pages, cache_pages);
    Ok((samples, random))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Report, Row};

    /// A machine small enough for a unit test: a 4 MiB cache, 32 MiB of
    /// memory, four runs.
    fn small() -> Setup {
        Setup {
            cache: 4 << 20,
            heap_memory_factor: 8,
            heap_accesses: 100_000,
            runs: 4,
            heap_seeds: 2,
            stream_passes: 1,
            seeds: 2,
            cost_memory: 64 << 20,
        }
    }

    /// The series: per shuffle setting, every run from 1 in order, rates
    /// in [0, 1]; the fresh case is run 1 (a contiguous heap: 2 sharers
    /// per page without shuffle) and the aged case the second half.
    #[test]
    fn the_runs_series_holds_every_run_and_the_cases_come_from_it() {
        let p = small();
        let heap_runs = HeapRuns::measure(&p, &[7, 8], NonZeroUsize::MIN).unwrap();
        let report = Report {
            experiment: "shuffle-cache".into(),
            seed: 7,
            scale: "quick".into(),
            rows: heap_runs
                .series_rows()
                .iter()
                .map(|sample| Row::series_sample(RUNS, sample).unwrap())
                .collect(),
            notes: Vec::new(),
        };
        assert_eq!(report.series_names(), vec![RUNS.to_string()]);
        assert_eq!(report.results().count(), 0);
        for shuffle in [false, true] {
            let samples: Vec<RunRow> = report
                .series_as::<RunRow>(RUNS)
                .filter(|row| row.shuffle == shuffle)
                .collect();
            let runs: Vec<u64> = samples.iter().map(|row| row.run).collect();
            assert_eq!(runs, vec![1, 2, 3, 4], "shuffle={shuffle}");
            for row in &samples {
                let rate = row.conflict.conflict_rate;
                assert!((0.0..=1.0).contains(&rate), "{row:?}");
                assert!(row.conflict.conflict_min <= rate + 1e-9);
                assert!(row.conflict.conflict_max >= rate - 1e-9);
            }
        }
        let cases = heap_runs.case_rows([Some(0.08), Some(0.21), Some(0.11)]);
        let case = |name: &str| cases.iter().find(|row| row.case == name).unwrap();
        let first = report.series_as::<RunRow>(RUNS).next().unwrap();
        assert_eq!(
            case("fresh").conflict.conflict_rate,
            first.conflict.conflict_rate
        );
        assert_eq!(case("fresh").colour_sharers, 2.0);
        assert_eq!(case("aged").reference, Some(0.21));
        let aged: Vec<f64> = heap_runs.samples[0][2..]
            .iter()
            .flatten()
            .map(|sample| sample.conflict_rate)
            .collect();
        let mean = aged.iter().sum::<f64>() / aged.len() as f64;
        assert_eq!(
            case("aged").conflict.conflict_rate,
            (mean * 1000.0).round() / 1000.0
        );
        assert!(heap_runs.random_sharers > 2.0);
    }

    /// The thread budget changes how long the runs take, never what they
    /// measure: one thread and two give the same samples.
    #[test]
    fn one_thread_and_two_measure_the_same() {
        let p = Setup { runs: 2, ..small() };
        let one = HeapRuns::measure(&p, &[3], NonZeroUsize::MIN).unwrap();
        let two = HeapRuns::measure(&p, &[3], NonZeroUsize::new(2).unwrap()).unwrap();
        assert_eq!(one.samples, two.samples);
        assert_eq!(one.random_sharers, two.random_sharers);
    }
}
