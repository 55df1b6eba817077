//! Experiment `trace-replay`: the page-allocator trace shipped with the
//! repository (a kernel source untar and build, recorded with `pageframe
//! trace record` on a 2-CPU machine) replayed on a pageframe machine shaped
//! like the traced host, once with the kernel's policy and once with the
//! policy the parameters switch (default: `page_alloc.shuffle=1`; also the
//! fallback order and the per-CPU list sizing). Each result row puts the traced kernel's figure
//! beside pageframe's (sections of [`trace::compare`](mod@crate::trace::compare)); the series
//! `fragmentation` samples the unusable free index over the trace's time.
//! Deterministic: the trace is fixed and the machine is seeded.

mod plot;
pub mod rows;

use super::{Experiment, ExperimentError, RunOptions, Scale};
use crate::params::{Param, Params};
use crate::plots::Plot;
use crate::report::{round_to, Report, Row};
use crate::summary::Headline;
use crate::trace::{self, FragSample, ReplayPolicy};
use pageframe::{FallbackOrder, PcpSizing};
use rows::{CompareRow, FragmentationRow, FRAGMENTATION, REFILLS_KEY};

/// The names of [`FallbackOrder::ALL`], for the `fallback_order` choice.
const FALLBACK_ORDERS: [&str; 2] = [FallbackOrder::ALL[0].name(), FallbackOrder::ALL[1].name()];

/// The allocator the parameters switch, to compare with the kernel's.
fn second_policy(params: &Params) -> Result<ReplayPolicy, ExperimentError> {
    let fallback_order = FallbackOrder::from_name(params.choice("fallback_order"))
        .ok_or_else(|| ExperimentError::Failed("unknown fallback order".into()))?;
    let fraction =
        u32::try_from(params.int("pcp_high_fraction")).map_err(ExperimentError::failed)?;
    let batch = u32::try_from(params.int("pcp_batch")).map_err(ExperimentError::failed)?;
    let pcp = PcpSizing::new(fraction, (batch != 0).then_some(batch)).map_err(|_| {
        ExperimentError::Failed(format!(
            "pcp_high_fraction {fraction}: 0 or at least {}",
            PcpSizing::MIN_HIGH_FRACTION
        ))
    })?;
    Ok(ReplayPolicy::with_switches(
        params.bool("shuffle"),
        fallback_order,
        pcp,
    ))
}

/// The unusable free index of `order` in `sample`, as a fraction.
fn unusable(sample: &FragSample, order: usize) -> Option<f64> {
    sample
        .unusable
        .get(order)
        .map(|thousandths| *thousandths as f64 / 1000.0)
}

/// The experiment `trace-replay`.
pub struct TraceReplay;

impl Experiment for TraceReplay {
    fn name(&self) -> &'static str {
        "trace-replay"
    }

    fn source(&self) -> &'static str {
        ""
    }

    fn about(&self) -> &'static str {
        "the shipped kernel trace replayed on pageframe, kernel default and a switched policy (shuffle, fallback order, pcp sizing), the traced kernel's figures beside pageframe's"
    }

    /// The parameters (config file keys) with their defaults; the same at
    /// both scales (the trace is what it is).
    fn params(&self, _scale: Scale) -> Vec<Param> {
        vec![
            Param::int(
                "samples",
                "Fragmentation samples taken over the trace (plus one at its end)",
                32,
                1,
                1024,
            ),
            Param::bool(
                "shuffle",
                "The second allocator shuffles its free lists (page_alloc.shuffle=1)",
                true,
            ),
            Param::choice(
                "fallback_order",
                "The second allocator's fallback table: kernel (Linux's fallbacks[]) or reversed (each migratetype tries the kernel's second choice first)",
                "kernel",
                &FALLBACK_ORDERS,
            ),
            Param::int(
                "pcp_high_fraction",
                "The second allocator's vm.percpu_pagelist_high_fraction (0: the kernel's default from the low watermark; else at least 8)",
                0,
                0,
                1 << 20,
            ),
            Param::int(
                "pcp_batch",
                "The second allocator's per-CPU list batch in pages (0: the kernel's zone_batchsize())",
                0,
                0,
                PcpSizing::MAX_BATCH as i64,
            ),
        ]
    }

    fn run(&self, options: &RunOptions, params: &Params) -> Result<Report, ExperimentError> {
        let path = trace::shipped_trace_path();
        if !path.is_file() {
            return Err(ExperimentError::Failed(format!(
                "the shipped trace {} is missing (it is traces/kernel-untar-build.pftrace of the repository)",
                path.display()
            )));
        }
        let recorded = trace::import(&path).map_err(ExperimentError::failed)?;
        if recorded.clock() != trace::TraceClock::Nanoseconds {
            return Err(ExperimentError::Failed(format!(
                "the shipped trace {} counts clock ticks: the fragmentation series needs seconds",
                path.display()
            )));
        }
        let samples = usize::try_from(params.int("samples")).map_err(ExperimentError::failed)?;
        let policies = [ReplayPolicy::kernel(), second_policy(params)?];
        let reports = trace::replay_policies(&recorded, options.seed, samples, &policies)
            .map_err(ExperimentError::failed)?;
        let mut rows = Vec::new();
        for (policy, report) in &reports {
            for row in &report.rows {
                let typed = CompareRow {
                    policy: policy.clone(),
                    section: row.section.into(),
                    key: row.key.clone(),
                    kernel: row.kernel,
                    pageframe: row.pageframe,
                };
                rows.push(Row::from_typed(&typed).map_err(ExperimentError::failed)?);
            }
        }
        for (policy, report) in &reports {
            for sample in &report.outcome.samples {
                let typed = FragmentationRow {
                    policy: policy.clone(),
                    seconds: round_to(sample.timestamp as f64 / 1e9, 3),
                    unusable_order_3: unusable(sample, 3),
                    unusable_order_9: unusable(sample, 9),
                };
                rows.push(
                    Row::series_sample(FRAGMENTATION, &typed).map_err(ExperimentError::failed)?,
                );
            }
        }
        let machine = reports
            .first()
            .map(|(_, report)| {
                format!(
                    "{} MiB, {} CPUs",
                    report.outcome.machine.bytes_within_mem_limit() >> 20,
                    report.outcome.machine.nr_cpus()
                )
            })
            .unwrap_or_default();
        Ok(Report {
            experiment: "trace-replay".into(),
            seed: options.seed,
            scale: options.scale.name().into(),
            rows,
            notes: vec![
                format!("trace: {}", trace::summary(&recorded)),
                format!(
                    "replayed on a host-shaped machine ({machine}) per policy: {}; kernel = the traced kernel's figure, - where the trace has none",
                    policies.iter().map(ReplayPolicy::describe).collect::<Vec<_>>().join("; ")
                ),
            ],
        })
    }

    /// pcp refills (rmqueue_bulk calls) under the kernel's default policy,
    /// pageframe's beside the traced kernel's.
    fn headline(&self, report: &Report) -> Option<Headline> {
        let row = report
            .results_as::<CompareRow>()
            .find(|row| row.policy == "kernel" && row.section == "pcp" && row.key == REFILLS_KEY)?;
        Some(Headline {
            metric: "pcp refills replaying the shipped trace (document: the traced kernel)".into(),
            ours: format!("{}", row.pageframe?),
            document: format!("{}", row.kernel?),
            direction_matches: None,
        })
    }

    fn plots(&self, report: &Report) -> Vec<Plot> {
        plot::plots(report)
    }
}
