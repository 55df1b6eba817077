//! From parsed arguments to a validated plan: every name known, every size
//! parsed, the machine description read and laid out — so that nothing a
//! user typed can fail once execution starts (an experiment still can).

use crate::arg_checks::{
    check_in_file, check_not_input, check_out_dir, check_out_file, parse_sysctl_writes,
    parse_view_names,
};
use crate::args::{Cli, Command, TraceCommand};
use crate::conform::ConformPlan;
use crate::error::{CliError, Completion};
use crate::info::InfoPlan;
use crate::perf_table::PerfTablePlan;
use crate::proc_views::ProcPlan;
use crate::run::RunPlan;
use crate::trace::TracePlan;
use crate::{conform, info, perf_table, proc_views, run, sweep, trace};
use pageframe::{AllocOptions, FallbackOrder, PcpSizing};
use pageframe_lab::conform::suites;
use pageframe_lab::experiments::{self, RunOptions, Scale};
use pageframe_lab::machine_args::MachineArgs;
use pageframe_lab::report::Format;
use pageframe_lab::trace::{PcpDecay, RecordTarget, ReplayOptions};
use std::io::Write;
use std::time::Duration;

/// What zram-untar will read of `--trace` and `--corpus`, checked as the
/// plan is made. A trace to replay is read and checked whole here (a bad
/// one was found when zram-untar's turn came, after the experiments before
/// it had printed their reports); a trace the `files` workload would not
/// read is refused. A `--corpus` that the trace replay does not read (no
/// `--fs ext4`, no `kernel_runs`) is warned of, not refused: the README's
/// `run zram-untar --corpus other-linux.tar.xz` is such a run.
fn check_zram_untar_inputs(
    options: &RunOptions,
    params: &pageframe_lab::params::Params,
) -> Result<(), CliError> {
    // With --fs ext4 the trace is written (checked as an output) and the
    // tarball read.
    if options.fs_ext4 {
        return Ok(());
    }
    let replays = params.choice("workload") == "ext4-trace";
    if let Some(trace) = &options.block_trace {
        if !replays {
            return Err(CliError::Invalid(format!(
                "--trace {}: zram-untar's workload = \"files\" replays no trace (the ext4-trace workload does)",
                trace.display()
            )));
        }
        pageframe_lab::experiments::zram_untar::check_replay_trace(trace, options.threads)
            .map_err(|err| CliError::Invalid(format!("--trace {err}")))?;
    }
    if let Some(corpus) = &options.corpus {
        if replays && params.int("kernel_runs") == 0 {
            eprintln!(
                "pageframe: warning: --corpus {} is not read: zram-untar replays a block trace (workload = \"ext4-trace\"); give workload = \"files\" in a --config file to write the tarball's files, or --fs ext4 to record its trace",
                corpus.display()
            );
        }
    }
    Ok(())
}

/// A command ready to run.
#[derive(Debug)]
pub enum Plan {
    /// Run experiments and print their reports.
    Run(RunPlan),
    /// Boot, churn, print views.
    Proc(ProcPlan),
    /// Boot and describe the machine.
    Info(InfoPlan),
    /// Regenerate the performance section.
    PerfTable(PerfTablePlan),
    /// Print parameters as commented TOML.
    Config(String),
    /// Run conformance suites.
    Conform(ConformPlan),
    /// Record, import or replay a trace.
    Trace(TracePlan),
    /// Run a sweep.
    Sweep(sweep::SweepPlan),
    /// Serve a zram.
    Zram(crate::zram::ZramPlan),
    /// Calibrate the simulation's prices on this host.
    Calibrate(crate::args::CalibrateArgs),
}

impl Plan {
    /// Checks everything the user gave.
    pub fn from_args(cli: Cli) -> Result<Plan, CliError> {
        match cli.command {
            Command::Run(args) => {
                let scale = parse_scale(&args.scale)?;
                let format = Format::parse(&args.format).ok_or_else(|| {
                    CliError::Invalid(format!(
                        "unknown format '{}' (known: table, json, csv)",
                        args.format
                    ))
                })?;
                let experiments = experiments::parse_list(&args.experiments)
                    .map_err(|err| CliError::Invalid(err.to_string()))?;
                // zram-untar's flags change nothing in a run without it
                // (`run shuffle-cache --fs ext4` ran the simulation, silently).
                if !experiments.iter().any(|e| e.name() == "zram-untar") {
                    let given = [
                        ("--corpus", args.corpus.is_some()),
                        ("--fs", args.fs.is_some()),
                        ("--trace", args.trace.is_some()),
                    ];
                    if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
                        return Err(CliError::Invalid(format!(
                            "{flag} is zram-untar's, which this run does not include"
                        )));
                    }
                }
                let fs_ext4 = match args.fs.as_deref() {
                    None => false,
                    Some("ext4") => true,
                    Some(other) => {
                        return Err(CliError::Invalid(format!(
                            "--fs {other}: only ext4 is known"
                        )))
                    }
                };
                let options = RunOptions {
                    corpus: args.corpus,
                    fs_ext4,
                    block_trace: args.trace,
                    ..RunOptions::new(scale, args.seed)
                };
                let params = run::params_of(&experiments, scale, args.config.as_deref())?;
                let views = match &args.proc_views {
                    Some(text) => run::parse_machine_views(text)?,
                    None => Vec::new(),
                };
                check_out_dir(args.out.as_deref())?;
                if let Some(corpus) = &options.corpus {
                    check_in_file("--corpus", corpus)?;
                }
                // Without --fs the trace is read (with it, written).
                if let Some(trace) = &options.block_trace {
                    if fs_ext4 {
                        check_out_file("--trace", trace)?;
                    } else {
                        check_in_file("--trace", trace)?;
                    }
                }
                if let Some(at) = experiments.iter().position(|e| e.name() == "zram-untar") {
                    check_zram_untar_inputs(&options, &params[at])?;
                }
                Ok(Plan::Run(RunPlan {
                    experiments,
                    options,
                    format,
                    params,
                    out: args.out,
                    views,
                    quiet: args.quiet,
                }))
            }
            Command::Config(args) => Ok(Plan::Config(run::commented_defaults(
                &args.experiment,
                parse_scale(&args.scale)?,
            )?)),
            Command::Proc(args) => {
                let views = parse_views(&args.views)?;
                if let Some(ops) = args.churn {
                    if ops > pageframe_lab::churn::MAX_OPS {
                        return Err(CliError::Invalid(format!(
                            "--churn {ops}: more than the limit of {} operations",
                            pageframe_lab::churn::MAX_OPS
                        )));
                    }
                }
                if let Some(runs) = args.aging {
                    let limit = pageframe_lab::reclaim_views::MAX_AGING_RUNS;
                    if runs > limit {
                        return Err(CliError::Invalid(format!(
                            "--aging {runs}: more than the limit of {limit} runs"
                        )));
                    }
                }
                let sysctl = parse_sysctl_writes(&args.sysctl.writes)?;
                let machine = MachineArgs::from(args.machine).to_desc()?;
                let plan = ProcPlan {
                    machine,
                    views,
                    aging: args.aging,
                    churn: args.churn.map(|ops| (ops, args.seed)),
                    seed: args.seed,
                    sysctl,
                };
                plan.check_workload()?;
                Ok(Plan::Proc(plan))
            }
            Command::Conform(args) => {
                let json = match args.format.as_str() {
                    "table" => false,
                    "json" => true,
                    other => {
                        return Err(CliError::Invalid(format!(
                            "unknown format '{other}' (known: table, json)"
                        )))
                    }
                };
                check_out_dir(args.out.as_deref())?;
                Ok(Plan::Conform(ConformPlan {
                    suites: suites::parse(&args.suites).map_err(CliError::Invalid)?,
                    json,
                    all: args.all,
                    out: args.out,
                }))
            }
            Command::Trace(command) => Ok(Plan::Trace(trace_plan(command)?)),
            Command::Sweep(args) => Ok(Plan::Sweep(sweep::SweepPlan::from_args(args)?)),
            Command::Zram(command) => Ok(Plan::Zram(crate::zram::plan(command)?)),
            Command::Calibrate(args) => {
                pageframe::backing::calibrate_check(args.pages, args.rounds).map_err(|err| {
                    CliError::Invalid(format!(
                        "--pages {} --rounds {}: {err}",
                        args.pages, args.rounds
                    ))
                })?;
                check_out_file("--out", &args.out)?;
                Ok(Plan::Calibrate(args))
            }
            Command::Info(args) => Ok(Plan::Info(InfoPlan {
                sysctl: parse_sysctl_writes(&args.sysctl.writes)?,
                machine: MachineArgs::from(args.machine).to_desc()?,
                arena: args.arena,
            })),
            Command::PerfTable(args) => {
                let scale = parse_scale(&args.scale)?;
                let target = match args.write {
                    None => None,
                    Some(path) => {
                        let text = pageframe_lab::files::read_text(
                            &path,
                            pageframe_lab::perf_table::MAX_TARGET_BYTES,
                        )
                        .map_err(CliError::Invalid)?;
                        if pageframe_lab::perf_table::splice(&text, "").is_none() {
                            return Err(CliError::Invalid(format!(
                                "{} has no '{}' ... '{}' markers",
                                path.display(),
                                pageframe_lab::perf_table::BEGIN_MARKER,
                                pageframe_lab::perf_table::END_MARKER
                            )));
                        }
                        Some((path, text))
                    }
                };
                Ok(Plan::PerfTable(PerfTablePlan {
                    options: RunOptions::new(scale, 42),
                    target,
                }))
            }
        }
    }

    /// Runs the plan, writing its output to `out`.
    pub fn execute(self, out: &mut dyn Write) -> Result<Completion, CliError> {
        match self {
            Plan::Run(plan) => run::execute(&plan, out),
            Plan::Proc(plan) => proc_views::execute(&plan, out),
            Plan::Info(plan) => info::execute(&plan, out),
            Plan::PerfTable(plan) => perf_table::execute(&plan, out),
            Plan::Config(text) => out.write_all(text.as_bytes()).map_err(CliError::from),
            Plan::Trace(plan) => trace::execute(&plan, out),
            Plan::Sweep(plan) => sweep::execute(&plan, out),
            Plan::Zram(plan) => crate::zram::execute(plan, out),
            Plan::Conform(plan) => return conform::execute(&plan, out),
            Plan::Calibrate(args) => crate::calibrate::execute(&args, out),
        }
        .map(|()| Completion::Clean)
    }
}

/// A trace subcommand, checked: a positive finite duration or a command
/// to record; a known output format and a valid machine to replay on.
fn trace_plan(command: TraceCommand) -> Result<TracePlan, CliError> {
    match command {
        TraceCommand::Record(args) => {
            let target = match (args.duration, args.command.is_empty()) {
                (Some(seconds), true) => {
                    let duration = Duration::try_from_secs_f64(seconds)
                        .ok()
                        .filter(|duration| !duration.is_zero())
                        .ok_or_else(|| {
                            // A finite positive number fails only past
                            // what a Duration holds.
                            let what = if seconds.is_finite() && seconds > 0.0 {
                                format!("too large (at most {} seconds)", Duration::MAX.as_secs())
                            } else {
                                "not a positive number of seconds".to_string()
                            };
                            CliError::Invalid(format!("--duration {seconds:?}: {what}"))
                        })?;
                    RecordTarget::Duration(duration)
                }
                (None, false) => RecordTarget::Command(args.command),
                _ => {
                    return Err(CliError::Invalid(
                        "trace record needs a command after -- or --duration SECS".into(),
                    ))
                }
            };
            if let Some(max_events) = args.max_events {
                if max_events == 0 || max_events > pageframe_lab::trace::MAX_TRACE_EVENTS {
                    return Err(CliError::Invalid(format!(
                        "--max-events {max_events}: between 1 and {} (the most a trace holds)",
                        pageframe_lab::trace::MAX_TRACE_EVENTS
                    )));
                }
            }
            check_out_file("-o", &args.output)?;
            Ok(TracePlan::Record {
                target,
                max_events: args.max_events,
                output: args.output,
            })
        }
        TraceCommand::Import(args) => {
            if let Some(output) = &args.output {
                check_out_file("-o", output)?;
                check_not_input("-o", output, &args.file)?;
            }
            Ok(TracePlan::Import {
                file: args.file,
                output: args.output,
            })
        }
        TraceCommand::Replay(args) => {
            let free_high = match args.free_high.as_deref() {
                None => None,
                Some("6.12") => Some(pageframe::FreeHighThreshold::Batch),
                Some("6.16") => Some(pageframe::FreeHighThreshold::BatchAndHalfHighMin),
                Some(other) => {
                    return Err(CliError::Invalid(format!(
                        "--free-high {other}: 6.12 or 6.16"
                    )))
                }
            };
            let format = Format::parse(&args.format).ok_or_else(|| {
                CliError::Invalid(format!(
                    "unknown format '{}' (known: table, json, csv)",
                    args.format
                ))
            })?;
            let mut machine_args = MachineArgs::from(args.machine);
            // The command line is the replay's policy switches, applied once
            // by the replay to whichever machine it boots.
            let cmdline = machine_args.cmdline.take().unwrap_or_default();
            let machine = if machine_args == MachineArgs::default() {
                None
            } else {
                Some(machine_args.to_desc()?)
            };
            if let Some(plot) = &args.plot {
                check_out_file("--plot", plot)?;
                check_not_input("--plot", plot, &args.file)?;
            }
            let fallback_order =
                FallbackOrder::from_name(&args.fallback_order).ok_or_else(|| {
                    CliError::Invalid(format!(
                        "--fallback-order {}: known orders are {}",
                        args.fallback_order,
                        FallbackOrder::ALL.map(FallbackOrder::name).join(", ")
                    ))
                })?;
            // Each flag checked alone, so that the message names the bad one
            // (it showed both, the batch as `Some(0)` or `None`).
            PcpSizing::new(args.pcp_high_fraction, None).map_err(|_| {
                CliError::Invalid(format!(
                    "--pcp-high-fraction {}: 0 (the kernel's default) or at least {}",
                    args.pcp_high_fraction,
                    PcpSizing::MIN_HIGH_FRACTION
                ))
            })?;
            let pcp = PcpSizing::new(args.pcp_high_fraction, args.pcp_batch).map_err(|_| {
                CliError::Invalid(format!(
                    "--pcp-batch {}: from 1 to {} pages",
                    args.pcp_batch.unwrap_or_default(),
                    PcpSizing::MAX_BATCH
                ))
            })?;
            Ok(TracePlan::Replay {
                file: args.file,
                options: Box::new(ReplayOptions {
                    machine,
                    cmdline,
                    alloc: AllocOptions {
                        fallback_order,
                        pcp,
                        ..AllocOptions::KERNEL
                    },
                    seed: args.seed,
                    fit: args.fit,
                    hold_pretrace: !args.skip_pretrace_frees,
                    host_pcp_start: !args.empty_pcp_start,
                    host_free_start: !args.fresh_free_lists,
                    pcp_decay: match (args.no_pcp_decay, args.pcp_decay_timer) {
                        (true, _) => PcpDecay::Off,
                        (false, true) => PcpDecay::Timer,
                        (false, false) => PcpDecay::Worker,
                    },
                    free_high,
                    ..ReplayOptions::default()
                }),
                format,
                plot: args.plot,
            })
        }
    }
}

/// `quick` or `full`.
fn parse_scale(text: &str) -> Result<Scale, CliError> {
    Scale::parse(text)
        .ok_or_else(|| CliError::Invalid(format!("unknown scale '{text}' (known: quick, full)")))
}

/// `buddyinfo,vmstat` into known view names, in the order given.
fn parse_views(text: &str) -> Result<Vec<&'static str>, CliError> {
    let known = [
        &pageframe::proc::VIEWS[..],
        &pageframe_lab::object_views::VIEWS[..],
        &pageframe_lab::reclaim_views::VIEWS[..],
    ]
    .concat();
    parse_view_names(text, &known, "")
}
