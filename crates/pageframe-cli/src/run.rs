//! `pageframe run`: experiments in order, each report printed as soon as it
//! is done. JSON gives one object per line; tables and CSV are separated by
//! a blank line. With several experiments, the table format ends with the
//! summary (headline numbers beside the documents'). `--out DIR` also writes
//! the files and report page of `pageframe_lab::site`, with its conformance
//! section (`conform::saved::for_page`, gathered before the experiments); `--proc` prints the
//! experiment's machine views after its report (on stderr with JSON, so that
//! stdout stays one object per line).

use crate::error::CliError;
use crate::progress::Progress;
use pageframe_lab::conform::saved;
use pageframe_lab::experiments::{self, Experiment, RunOptions, Scale};
use pageframe_lab::files;
use pageframe_lab::observe::{self, Observer};
use pageframe_lab::params::{self, ConfigFile, Params};
use pageframe_lab::report::Format;
use pageframe_lab::site::{self, RunInfo, Site};
use pageframe_lab::summary::{self, SummaryLine};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

/// `pageframe run`, validated.
#[derive(Debug)]
pub struct RunPlan {
    /// The experiments, in run order.
    pub experiments: Vec<&'static dyn Experiment>,
    /// Scale, seed and corpus (`--corpus`, checked to be a file).
    pub options: RunOptions,
    /// How to print each report.
    pub format: Format,
    /// Parameters of each experiment, in run order (`--config` over the
    /// scale's defaults).
    pub params: Vec<pageframe_lab::params::Params>,
    /// Where to write the results and the report page.
    pub out: Option<std::path::PathBuf>,
    /// Machine views to print after each experiment.
    pub views: Vec<&'static str>,
    /// No progress bars.
    pub quiet: bool,
}

/// Runs every experiment of the plan.
pub fn execute(plan: &RunPlan, out: &mut dyn Write) -> Result<(), CliError> {
    let names: Vec<&str> = plan.experiments.iter().map(|e| e.name()).collect();
    let progress = Progress::new(!plan.quiet && std::io::stdout().is_terminal(), &names);
    let mut site = match &plan.out {
        Some(dir) => Some(
            Site::create(
                dir,
                RunInfo {
                    command: std::env::args().collect::<Vec<_>>().join(" "),
                    seed: plan.options.seed,
                    scale: plan.options.scale.name().into(),
                    machine: site::host_description(),
                    date: site::utc_now(),
                },
            )
            .map_err(CliError::Invalid)?,
        ),
        None => None,
    };
    if let (Some(site), Some(dir)) = (site.as_mut(), &plan.out) {
        let summaries = saved::for_page(dir).map_err(CliError::Invalid)?;
        site.set_conform(summaries).map_err(CliError::Invalid)?;
    }
    let mut summary_lines: Vec<SummaryLine> = Vec::new();
    for (index, experiment) in plan.experiments.iter().enumerate() {
        let name = experiment.name();
        let params = &plan.params[index];
        let observer = Observer {
            on_progress: progress.start(index),
            views: plan.views.clone(),
            rendered: Vec::new(),
        };
        let started = Instant::now();
        let (result, views) = observe::observed(observer, || experiment.run(&plan.options, params));
        let seconds = started.elapsed().as_secs_f64();
        let report = result.map_err(|err| {
            progress.fail(index);
            CliError::Invalid(format!("{name}: {err}"))
        })?;
        let headline = experiment.headline(&report);
        progress.finish(
            index,
            match &headline {
                Some(headline) => format!(
                    "{seconds:.1}s  {}: {} (document {})",
                    headline.metric, headline.ours, headline.document
                ),
                None => format!("{seconds:.1}s"),
            },
        );
        progress.suspend(|| -> Result<(), CliError> {
            if index > 0 && plan.format != Format::Json {
                writeln!(out)?;
            }
            out.write_all(report.render(plan.format).as_bytes())?;
            print_views(plan, name, &views, out)?;
            out.flush()?;
            Ok(())
        })?;
        if let Some(site) = site.as_mut() {
            site.add(&report, params, views, seconds)
                .map_err(CliError::Invalid)?;
        }
        summary_lines.push((name.to_string(), headline));
    }
    progress.clear();
    if plan.format == Format::Table && plan.experiments.len() > 1 {
        progress.suspend(|| -> Result<(), CliError> {
            writeln!(out)?;
            out.write_all(summary::render(&summary_lines).as_bytes())?;
            Ok(())
        })?;
    }
    if let Some(site) = &site {
        if !plan.quiet {
            eprintln!("pageframe: report page {}", site.index().display());
        }
    }
    Ok(())
}

fn print_views(
    plan: &RunPlan,
    name: &str,
    views: &[(String, &'static str, String)],
    out: &mut dyn Write,
) -> Result<(), CliError> {
    if plan.views.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    if views.is_empty() {
        text += &format!("# {name}: this experiment does not show its machine (no views)\n");
    }
    for (label, view, body) in views {
        text += &format!("\n==> /proc/{view} ({name}: {label}) <==\n{body}");
    }
    if plan.format == Format::Json {
        eprint!("{text}");
    } else {
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}

/// `buddyinfo,vmstat` into machine view names (`pageframe::proc::VIEWS`).
pub fn parse_machine_views(text: &str) -> Result<Vec<&'static str>, CliError> {
    crate::arg_checks::parse_view_names(text, &pageframe::proc::VIEWS, "--proc: ")
}

/// The parameters of each experiment: the scale's defaults, overridden by
/// the config file, each set checked by its experiment (keys that do not fit
/// together, limits). Every table of the file is checked, not only those of
/// the experiments run.
pub fn params_of(
    chosen: &[&'static dyn Experiment],
    scale: Scale,
    config: Option<&Path>,
) -> Result<Vec<Params>, CliError> {
    let params = configured_params(chosen, scale, config)?;
    for (experiment, params) in chosen.iter().zip(&params) {
        experiment
            .check(params)
            .map_err(|err| CliError::Invalid(format!("{}: {err}", experiment.name())))?;
    }
    Ok(params)
}

fn configured_params(
    chosen: &[&'static dyn Experiment],
    scale: Scale,
    config: Option<&Path>,
) -> Result<Vec<Params>, CliError> {
    let Some(path) = config else {
        return Ok(chosen
            .iter()
            .map(|experiment| experiments::default_params(*experiment, scale))
            .collect());
    };
    let text = files::read_text(path, files::MAX_CONFIG_BYTES).map_err(CliError::Invalid)?;
    let file = ConfigFile::parse(&path.display().to_string(), &text, &experiments::names())
        .map_err(|err| CliError::Invalid(err.to_string()))?;
    let params_of = |experiment: &dyn Experiment| {
        file.params(experiment.name(), &experiment.params(scale))
            .map_err(|err| CliError::Invalid(err.to_string()))
    };
    for experiment in experiments::ALL {
        params_of(*experiment)?;
    }
    chosen
        .iter()
        .map(|experiment| params_of(*experiment))
        .collect()
}

/// `pageframe config <experiment|all>`: the defaults as commented TOML.
pub fn commented_defaults(names: &str, scale: Scale) -> Result<String, CliError> {
    let chosen =
        experiments::parse_list(names).map_err(|err| CliError::Invalid(err.to_string()))?;
    let tables: Vec<String> = chosen
        .iter()
        .map(|experiment| {
            let about = match (experiment.about(), experiment.source()) {
                ("", _) => "parameters".to_string(),
                (about, "") => about.to_string(),
                (about, source) => format!("{about} ({source})"),
            };
            params::commented_defaults(
                experiment.name(),
                &about,
                scale.name(),
                &experiment.params(scale),
            )
        })
        .collect();
    Ok(tables.join("\n"))
}
