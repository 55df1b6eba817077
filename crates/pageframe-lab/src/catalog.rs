//! The catalog: what the tools around the experiments (config files, plots,
//! the summary table, the report page) know about each one. One [`Entry`]
//! per experiment in [`ENTRIES`]; an experiment without an entry still runs,
//! plots (generic plot) and appears in the summary (without headline).
//!
//! To plug a new experiment in, add one entry: its source document, its
//! parameters and how to run with them (`params`/`run_with`, or none), its
//! plot function (`plots/<name>.rs`) and its headline (`summary.rs`).

use crate::experiments::{
    self, bulk, numa_balancing, scaling, unmapped_populate, zram_untar, ExperimentError,
    RunOptions, Scale,
};
use crate::params::{Param, Params};
use crate::plots::{self, Plot};
use crate::report::Report;
use crate::summary::{self, Headline};

/// Runs an experiment with parameters.
pub type RunWith = fn(&RunOptions, &Params) -> Result<Report, ExperimentError>;

/// What the lab's tools know about one experiment.
#[derive(Clone, Copy)]
pub struct Entry {
    /// The experiment's name, as `pageframe run` takes it.
    pub name: &'static str,
    /// The source document it reproduces (in shared/sources/), or "".
    pub source: &'static str,
    /// One line: what it measures.
    pub about: &'static str,
    /// Its parameters and their defaults at a scale.
    pub params: fn(Scale) -> Vec<Param>,
    /// Runs it with parameters; `None` runs `experiments::run` (no
    /// parameters).
    pub run_with: Option<RunWith>,
    /// Its plots; `None` draws the generic plot.
    pub plots: Option<fn(&Report) -> Vec<Plot>>,
    /// Its headline for the summary; `None` leaves the line blank.
    pub headline: Option<fn(&Report) -> Option<Headline>>,
}

fn no_params(_: Scale) -> Vec<Param> {
    Vec::new()
}

/// Every experiment the tools know, by name.
pub const ENTRIES: &[Entry] = &[
    Entry {
        name: "bulk",
        source: "bulk-page-allocator.txt",
        about: "order-0 cost per page, one at a time and through alloc_pages_bulk, beside the kernel and peers",
        params: bulk::params,
        run_with: Some(bulk::run_with),
        plots: Some(plots::bulk::plots),
        headline: Some(summary::bulk),
    },
    Entry {
        name: "scaling",
        source: "",
        about: "thread-safe allocator throughput from 1, 2, 4 threads, local and remote frees",
        params: scaling::params,
        run_with: Some(scaling::run_with),
        plots: Some(plots::scaling::plots),
        headline: Some(summary::scaling),
    },
    Entry {
        name: "shuffle-cache",
        source: "shuffle-free-memory.txt",
        about: "memory-side-cache conflicts fresh, aged and with free-list shuffling",
        params: no_params,
        run_with: None,
        plots: Some(plots::shuffle_cache::plots),
        headline: Some(summary::shuffle_cache),
    },
    Entry {
        name: "numa-balancing",
        source: "numa-balancing-bound-nodes.txt",
        about: "pmbench score with MPOL_BIND and MPOL_F_NUMA_BALANCING after a memory eater exits",
        params: numa_balancing::params,
        run_with: Some(numa_balancing::run_with),
        plots: Some(plots::numa_balancing::plots),
        headline: Some(summary::numa_balancing),
    },
    Entry {
        name: "zram-untar",
        source: "afmalloc.txt",
        about: "zram overhead of zsmalloc and afmalloc while kernel source is untarred and its directories removed, round after round",
        params: zram_untar::params,
        run_with: Some(zram_untar::run_with),
        plots: Some(plots::zram_untar::plots),
        headline: Some(zram_untar::headline),
    },
    Entry {
        name: "unmapped-populate",
        source: "gfp-unmapped.txt",
        about: "guest-memory populate latency: per-page unmap and flush, __GFP_UNMAPPED with the mermap, no flush",
        params: unmapped_populate::params,
        run_with: Some(unmapped_populate::run_with),
        plots: Some(plots::unmapped_populate::plots),
        headline: Some(summary::unmapped_populate),
    },
];

/// The entry of `name`, or a bare one (no parameters, generic plot, no
/// headline) for an experiment the catalog does not list yet.
pub fn entry(name: &str) -> Entry {
    ENTRIES
        .iter()
        .find(|entry| entry.name == name)
        .copied()
        .unwrap_or(Entry {
            name: "",
            source: "",
            about: "",
            params: no_params,
            run_with: None,
            plots: None,
            headline: None,
        })
}

/// Runs `name` with `params` (the defaults of its scale when `None`).
pub fn run(
    name: &str,
    options: &RunOptions,
    params: Option<&Params>,
) -> Result<Report, ExperimentError> {
    let entry = entry(name);
    match (entry.run_with, params) {
        (Some(run_with), Some(params)) => run_with(options, params),
        _ => experiments::run(name, options),
    }
}

/// The plots of a report (the experiment's own, else the generic one).
pub fn plots(report: &Report) -> Vec<Plot> {
    plots::plots_of(report, entry(&report.experiment).plots)
}

/// The headline of a report, if its experiment has one and the rows have it.
pub fn headline(report: &Report) -> Option<Headline> {
    entry(&report.experiment)
        .headline
        .and_then(|headline| headline(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_experiment_has_a_working_entry_or_a_fallback() {
        for name in experiments::NAMES {
            let entry = entry(name);
            for scale in [Scale::Quick, Scale::Full] {
                let params = (entry.params)(scale);
                let defaults = Params::defaults(&params);
                assert_eq!(defaults.values().len(), params.len());
            }
        }
    }

    #[test]
    fn parameter_keys_are_unique() {
        for entry in ENTRIES {
            let params = (entry.params)(Scale::Quick);
            for (at, param) in params.iter().enumerate() {
                assert!(
                    params[..at].iter().all(|other| other.key != param.key),
                    "{}.{} twice",
                    entry.name,
                    param.key
                );
            }
        }
    }
}
