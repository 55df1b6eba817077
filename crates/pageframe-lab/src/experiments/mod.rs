//! The experiments. Each reproduces one source document's headline result
//! and computes every number it prints from a run.
//!
//! An experiment is one module implementing one trait, [`Experiment`]: its
//! name, source document and about line, its typed parameters (defaults per
//! scale, bounds checked when a config file is read), its run, its headline
//! beside the document's figure and its plots. Its rows are typed: structs
//! deriving `Serialize`/`Deserialize` in its `rows` module (the one home of
//! its column names), turned into report rows with
//! [`crate::report::Row::from_typed`] by the run and read back with
//! [`Report::results_as`] / [`Report::series_as`] by the headline and the
//! plots.
//! To add one, write the module and list it once in [`ALL`].
//!
//! Every table, config file, plot and summary line the tools produce comes
//! from [`ALL`]; nothing else knows the experiments by name.

pub mod bulk;
pub mod numa_balancing;
pub mod scaling;
pub mod shuffle_cache;
pub mod trace_replay;
pub mod unmapped_populate;
pub mod zram_untar;

use crate::params::{Param, Params};
use crate::plots::{self, Plot};
use crate::report::Report;
use crate::summary::Headline;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use thiserror::Error;

/// Every experiment, in the order `run all` runs them: the one list.
pub const ALL: &[&dyn Experiment] = &[
    &bulk::Bulk,
    &scaling::Scaling,
    &shuffle_cache::ShuffleCache,
    &numa_balancing::NumaBalancing,
    &zram_untar::ZramUntar,
    &unmapped_populate::UnmappedPopulate,
    &trace_replay::TraceReplay,
];

/// One experiment: what the tools (run, config files, plots, the summary,
/// the report page) know about it.
pub trait Experiment: Sync {
    /// Its name, as `pageframe run` takes it.
    fn name(&self) -> &'static str;
    /// The source document it reproduces (in shared/sources/), or "".
    fn source(&self) -> &'static str;
    /// One line: what it measures.
    fn about(&self) -> &'static str;
    /// Its parameters with their defaults at `scale` and their bounds
    /// (checked when a config file is read); empty when it has none.
    fn params(&self, scale: Scale) -> Vec<Param>;
    /// Checks that `params` (each inside its bounds) fit together and stay
    /// within the experiment's limits, before anything runs; the error
    /// names the keys.
    fn check(&self, _params: &Params) -> Result<(), ExperimentError> {
        Ok(())
    }
    /// Runs it with `params` (values of [`Self::params`], checked).
    fn run(&self, options: &RunOptions, params: &Params) -> Result<Report, ExperimentError>;
    /// Its headline number beside the document's figure, when the rows have
    /// it; none by default.
    fn headline(&self, _report: &Report) -> Option<Headline> {
        None
    }
    /// Its plots of a report; by default none of its own, and
    /// [`plots::generic`] draws the report.
    fn plots(&self, _report: &Report) -> Vec<Plot> {
        Vec::new()
    }
}

impl std::fmt::Debug for dyn Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How big a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Well under a minute per experiment on 2 cores.
    Quick,
    /// The source document's setup, or the largest that fits 24 GiB.
    Full,
}

impl Scale {
    /// Parses `quick` or `full`.
    pub fn parse(text: &str) -> Option<Scale> {
        match text {
            "quick" => Some(Scale::Quick),
            "full" => Some(Scale::Full),
            _ => None,
        }
    }

    /// The name printed in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Full => "full",
        }
    }
}

/// What every experiment run takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Size of the run.
    pub scale: Scale,
    /// Seed of every random choice.
    pub seed: u64,
    /// The kernel source tarball of `zram-untar` (`--corpus`); `None` reads
    /// [`crate::corpus::DEFAULT_TARBALL`].
    pub corpus: Option<PathBuf>,
    /// `zram-untar --fs ext4`: run the workload for real on the kernel's
    /// ext4 (root) instead of replaying a trace.
    pub fs_ext4: bool,
    /// `zram-untar --trace FILE`: the block trace to replay, or with
    /// `fs_ext4` the one to write.
    pub block_trace: Option<PathBuf>,
    /// How many threads the run may use for the parts it computes in
    /// parallel only to finish sooner (the results never depend on it).
    /// Experiments whose subject is concurrency (`scaling`,
    /// `unmapped-populate`) choose their own threads. A sweep running
    /// several points at once gives each point its share of the cores.
    pub threads: NonZeroUsize,
}

impl RunOptions {
    /// Options with the default corpus.
    pub fn new(scale: Scale, seed: u64) -> RunOptions {
        RunOptions {
            scale,
            seed,
            corpus: None,
            fs_ext4: false,
            block_trace: None,
            threads: host_threads(),
        }
    }
}

/// The threads this process may run at once: every core it is allowed on.
pub fn host_threads() -> NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
}

/// Why an experiment could not run.
#[derive(Debug, Error)]
pub enum ExperimentError {
    /// No experiment has that name.
    #[error("unknown experiment '{0}' (known: {known})", known = names().join(", "))]
    Unknown(String),
    /// A list names an experiment twice.
    #[error("experiment '{0}' is listed twice (the same seed gives the same report)")]
    Twice(String),
    /// The experiment's machine could not boot.
    #[error("{0}")]
    Machine(#[from] pageframe::DescError),
    /// The experiment failed while running.
    #[error("{0}")]
    Failed(String),
}

impl ExperimentError {
    /// A failure while running, from any error (`.map_err(ExperimentError::failed)`).
    pub fn failed(err: impl std::fmt::Display) -> ExperimentError {
        ExperimentError::Failed(err.to_string())
    }
}

/// The names of [`ALL`], in order.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|experiment| experiment.name()).collect()
}

/// The entry point of [`crate::callgrind::PROBE_COMMAND`]: runs the
/// callgrind probe named `name` (an experiment's cases, counted by
/// [`crate::callgrind::measure`]).
pub fn callgrind_probe(name: &str) -> Result<(), String> {
    match name {
        "bulk" => bulk::callgrind_probe().map_err(|err| err.to_string()),
        _ => Err(format!("unknown callgrind probe '{name}'")),
    }
}

/// The experiment called `name`.
pub fn find(name: &str) -> Result<&'static dyn Experiment, ExperimentError> {
    ALL.iter()
        .copied()
        .find(|experiment| experiment.name() == name)
        .ok_or_else(|| ExperimentError::Unknown(name.to_string()))
}

/// A comma-separated list of names (`bulk,scaling`), or `all` for every
/// experiment in order; the first unknown name is the error, and so is a
/// name given twice (its second run would repeat the first, and its files
/// and its table in `pageframe config` would collide).
pub fn parse_list(text: &str) -> Result<Vec<&'static dyn Experiment>, ExperimentError> {
    if text.trim() == "all" {
        return Ok(ALL.to_vec());
    }
    let mut list: Vec<&'static dyn Experiment> = Vec::new();
    for name in text.split(',') {
        let experiment = find(name.trim())?;
        if list.iter().any(|listed| listed.name() == experiment.name()) {
            return Err(ExperimentError::Twice(experiment.name().to_string()));
        }
        list.push(experiment);
    }
    Ok(list)
}

/// The default parameters of `experiment` at `scale`.
pub fn default_params(experiment: &dyn Experiment, scale: Scale) -> Params {
    Params::defaults(&experiment.params(scale))
}

/// Runs `name` with its default parameters at the options' scale.
pub fn run(name: &str, options: &RunOptions) -> Result<Report, ExperimentError> {
    let experiment = find(name)?;
    experiment.run(options, &default_params(experiment, options.scale))
}

/// The plots of a report: its experiment's own when they draw something,
/// else the generic plot.
pub fn plots_of(report: &Report) -> Vec<Plot> {
    let specific = find(&report.experiment)
        .map(|experiment| experiment.plots(report))
        .unwrap_or_default();
    plots::or_generic(report, specific)
}

/// The headline of a report, if its experiment has one and the rows have it.
pub fn headline_of(report: &Report) -> Option<Headline> {
    find(&report.experiment)
        .ok()
        .and_then(|experiment| experiment.headline(report))
}

/// Refuses parameters whose product (`keys[0]` x `keys[1]`, each bounded
/// by its [`Param`], so the product fits an i64) passes `limit`: the error
/// names both keys, their values, the product in `unit` and the limit.
pub(crate) fn check_product(
    params: &Params,
    keys: [&str; 2],
    limit: i64,
    unit: &str,
) -> Result<(), ExperimentError> {
    let [first, second] = keys.map(|key| params.int(key));
    let product = first.saturating_mul(second);
    if product > limit {
        return Err(ExperimentError::Failed(format!(
            "{} x {} = {first} x {second} = {product} {unit}, more than {limit}",
            keys[0], keys[1]
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_has_working_defaults() {
        for experiment in ALL {
            for scale in [Scale::Quick, Scale::Full] {
                let params = experiment.params(scale);
                let defaults = Params::defaults(&params);
                assert_eq!(defaults.values().len(), params.len());
            }
        }
    }

    #[test]
    fn names_and_parameter_keys_are_unique() {
        let names = names();
        for (at, name) in names.iter().enumerate() {
            assert!(!names[..at].contains(name), "{name} twice");
        }
        for experiment in ALL {
            let params = experiment.params(Scale::Quick);
            for (at, param) in params.iter().enumerate() {
                assert!(
                    params[..at].iter().all(|other| other.key != param.key),
                    "{}.{} twice",
                    experiment.name(),
                    param.key
                );
            }
        }
    }

    #[test]
    fn lists_parse_in_order_and_name_the_unknown() {
        let names = |text: &str| {
            parse_list(text).map(|list| list.iter().map(|e| e.name()).collect::<Vec<_>>())
        };
        assert_eq!(names("bulk,scaling").unwrap(), ["bulk", "scaling"]);
        assert_eq!(names("all").unwrap(), super::names());
        let error = names("bulk,nope").unwrap_err().to_string();
        assert!(
            error.starts_with("unknown experiment 'nope' (known: bulk, "),
            "{error}"
        );
        assert!(names("").is_err());
        // Regression: "bulk,bulk" ran bulk twice into the same files, and
        // `pageframe config bulk,bulk` printed a table TOML refuses back.
        let error = names("bulk, scaling,bulk").unwrap_err().to_string();
        assert!(
            error.starts_with("experiment 'bulk' is listed twice"),
            "{error}"
        );
    }
}
