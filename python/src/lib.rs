//! `pageframe._native`: the Rust half of the Python package. Machines
//! ([`machine`]), experiment runs, trace replays and conformance suites
//! (here), sweeps ([`sweep`]). Results cross as the output contract's JSON
//! text, which the Python half turns into DataFrames, so the Python API's
//! rows are the CLI's `--format json` rows by construction.
//!
//! Long calls (experiments, replays, suites, sweep points) release the GIL;
//! a progress callback, if given, is called with the GIL taken again, at
//! most once per thousandth of the run.

mod errors;
mod machine;
mod sweep;

use errors::{failed, invalid, PageframeError};
use pageframe_lab::conform::suites;
use pageframe_lab::experiments::{self, Experiment, RunOptions, Scale};
use pageframe_lab::machine_args::MachineArgs;
use pageframe_lab::observe::{self, Observer};
use pageframe_lab::params::{ConfigFile, Params};
use pageframe_lab::trace::{self, ReplayOptions};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};
use std::path::PathBuf;

/// A progress callback as an observer's `on_progress`: called with
/// (done, total) when the run has moved on by a thousandth; its errors are
/// ignored (a broken progress bar does not stop a run).
pub(crate) fn progress_callback(callback: Option<PyObject>) -> Box<dyn FnMut(u64, u64)> {
    let Some(callback) = callback else {
        return Box::new(|_, _| {});
    };
    let mut shown = u64::MAX;
    Box::new(move |done, total| {
        let step = done
            .min(total)
            .saturating_mul(1000)
            .checked_div(total)
            .unwrap_or(0);
        if step != shown {
            shown = step;
            Python::with_gil(|py| {
                let _ = callback.call1(py, (done, total));
            });
        }
    })
}

/// The scale named `scale`.
pub(crate) fn scale_of(scale: &str) -> PyResult<Scale> {
    Scale::parse(scale).ok_or_else(|| invalid(format!("bad scale '{scale}' (quick or full)")))
}

/// A Python value as a TOML value of a parameter.
fn toml_value(value: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    if value.is_instance_of::<PyBool>() {
        Ok(toml::Value::Boolean(value.extract()?))
    } else if value.is_instance_of::<PyInt>() {
        Ok(toml::Value::Integer(value.extract()?))
    } else if value.is_instance_of::<PyFloat>() {
        Ok(toml::Value::Float(value.extract()?))
    } else if value.is_instance_of::<PyString>() {
        Ok(toml::Value::String(value.extract()?))
    } else {
        Err(PyTypeError::new_err(format!(
            "parameter values are int, float, bool or str, not {}",
            value.get_type().name()?
        )))
    }
}

/// The experiment's parameters at `scale`: its defaults, overridden by
/// `params`, checked as a config file's table and by the experiment.
fn params_of(
    experiment: &dyn Experiment,
    scale: Scale,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<Params> {
    let mut table = toml::Table::new();
    for (key, value) in params.into_iter().flat_map(|dict| dict.iter()) {
        table.insert(key.extract::<String>()?, toml_value(&value)?);
    }
    let mut document = toml::Table::new();
    document.insert(experiment.name().into(), toml::Value::Table(table));
    let params = ConfigFile::from_table("params", document, &[experiment.name()])
        .and_then(|file| file.params(experiment.name(), &experiment.params(scale)))
        .map_err(|err| invalid(err.to_string()))?;
    experiment
        .check(&params)
        .map_err(|err| invalid(format!("{}: {err}", experiment.name())))?;
    Ok(params)
}

/// Runs an experiment; returns its report as the output contract's JSON.
#[pyfunction]
#[pyo3(signature = (name, scale="quick", seed=42, params=None, progress=None, corpus=None))]
fn run(
    py: Python<'_>,
    name: &str,
    scale: &str,
    seed: u64,
    params: Option<&Bound<'_, PyDict>>,
    progress: Option<PyObject>,
    corpus: Option<PathBuf>,
) -> PyResult<String> {
    let experiment = experiments::find(name).map_err(|err| invalid(err.to_string()))?;
    let scale = scale_of(scale)?;
    let params = params_of(experiment, scale, params)?;
    let mut options = RunOptions::new(scale, seed);
    options.corpus = corpus;
    let report = py.allow_threads(move || {
        let observer = Observer {
            on_progress: progress_callback(progress),
            views: Vec::new(),
            rendered: Vec::new(),
        };
        observe::observed(observer, || experiment.run(&options, &params)).0
    });
    let report = report.map_err(|err| failed(format!("{name}: {err}")))?;
    Ok(report.to_json().to_string())
}

/// The experiments' names, in `run all` order.
#[pyfunction]
fn experiment_names() -> Vec<&'static str> {
    experiments::names()
}

/// An experiment's parameters at `scale` as JSON: key, doc, default.
#[pyfunction]
#[pyo3(signature = (name, scale="quick"))]
fn experiment_params(name: &str, scale: &str) -> PyResult<String> {
    let experiment = experiments::find(name).map_err(|err| invalid(err.to_string()))?;
    let params: Vec<serde_json::Value> = experiment
        .params(scale_of(scale)?)
        .iter()
        .map(|param| {
            serde_json::json!({
                "key": param.key,
                "doc": param.doc,
                "default": param.default.to_string(),
            })
        })
        .collect();
    Ok(serde_json::Value::Array(params).to_string())
}

/// Replays a trace file; returns (report JSON, notes). The machine is
/// shaped like the traced host unless `mem`/`nodes`/`cpus`/`config` say.
#[pyfunction]
#[pyo3(signature = (path, seed=42, cmdline="", fit=false, mem=None, nodes=None, cpus=None, config=None))]
#[allow(clippy::too_many_arguments)]
fn replay(
    py: Python<'_>,
    path: PathBuf,
    seed: u64,
    cmdline: &str,
    fit: bool,
    mem: Option<String>,
    nodes: Option<usize>,
    cpus: Option<usize>,
    config: Option<PathBuf>,
) -> PyResult<(String, Vec<String>)> {
    let machine_given = mem.is_some() || nodes.is_some() || cpus.is_some() || config.is_some();
    let machine = if machine_given {
        let args = MachineArgs {
            config,
            mem,
            nodes,
            cpus,
            ..MachineArgs::default()
        };
        Some(args.to_desc().map_err(errors::desc_error)?)
    } else {
        None
    };
    let options = ReplayOptions {
        machine,
        cmdline: cmdline.to_string(),
        seed,
        fit,
        ..ReplayOptions::default()
    };
    let report = py.allow_threads(|| {
        let imported = trace::import(&path)?;
        let outcome = trace::run_replay(&imported, &options)?;
        Ok::<_, trace::TraceError>(trace::replay_report(&path, &imported, &outcome, &options))
    });
    let report = report.map_err(failed)?;
    Ok((report.to_json().to_string(), report.notes))
}

/// The trace shipped with the repository, if this is a source checkout.
#[pyfunction]
fn shipped_trace() -> PathBuf {
    trace::shipped_trace_path()
}

/// Runs conformance suites (names, or `all`); returns their JSON (the CLI's
/// `conform --format json`). Suites that need root say why they skipped.
#[pyfunction]
#[pyo3(signature = (suites=None))]
fn conform(py: Python<'_>, suites: Option<Vec<String>>) -> PyResult<String> {
    let chosen = suites::parse(&suites.unwrap_or_default()).map_err(invalid)?;
    let results = py.allow_threads(|| {
        chosen
            .iter()
            .map(|(name, run)| run().map_err(|err| format!("conform {name}: {err}")))
            .collect::<Result<Vec<_>, _>>()
    });
    Ok(suites::to_json(&results.map_err(failed)?).to_string())
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PageframeError", m.py().get_type::<PageframeError>())?;
    m.add_class::<machine::Machine>()?;
    m.add_function(wrap_pyfunction!(machine::views, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_names, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_params, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(shipped_trace, m)?)?;
    m.add_function(wrap_pyfunction!(conform, m)?)?;
    sweep::register(m)?;
    Ok(())
}
