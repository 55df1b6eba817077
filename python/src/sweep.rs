//! Sweeps from Python: the lab's spec, point runs, records and gathering,
//! so that any executor (the local thread pool, Ray's workers) runs the same
//! points the same way. A spec crosses as its text (workers on other hosts
//! need not see the file); `source` names it in errors.

use crate::errors::{failed, invalid};
use pageframe_lab::sweep::{self, PointRecord, Sweep};
use pyo3::prelude::*;
use std::num::NonZeroUsize;
use std::path::PathBuf;

fn parsed(source: &str, text: &str) -> PyResult<Sweep> {
    Sweep::parse(source, text).map_err(invalid)
}

/// The keys of the spec's points, in run order (checks the whole spec).
#[pyfunction]
fn sweep_keys(source: &str, text: &str) -> PyResult<Vec<String>> {
    Ok(parsed(source, text)?
        .points
        .into_iter()
        .map(|point| point.key)
        .collect())
}

/// Indexes of the points without an `ok` record in `dir`.
#[pyfunction]
fn sweep_pending(source: &str, text: &str, dir: PathBuf) -> PyResult<Vec<usize>> {
    Ok(sweep::pending(&parsed(source, text)?, &dir))
}

/// Runs point `index` on `threads` threads (GIL released); returns its
/// record's JSON. A failed run is a record with its error, not an exception.
#[pyfunction]
#[pyo3(signature = (source, text, index, threads=1))]
fn sweep_run_point(
    py: Python<'_>,
    source: &str,
    text: &str,
    index: usize,
    threads: usize,
) -> PyResult<String> {
    let sweep = parsed(source, text)?;
    let threads = NonZeroUsize::new(threads).unwrap_or(NonZeroUsize::MIN);
    let record =
        py.allow_threads(|| sweep::run_point(&sweep, index, threads, Box::new(|_, _| {})));
    Ok(record.to_json().to_string())
}

/// Stores a record (the JSON of [`sweep_run_point`]) in `dir`.
#[pyfunction]
fn sweep_store(dir: PathBuf, record: &str) -> PyResult<()> {
    let value: serde_json::Value =
        serde_json::from_str(record).map_err(|err| invalid(err.to_string()))?;
    let record =
        PointRecord::from_json(&value).ok_or_else(|| invalid("not a sweep point record".into()))?;
    record.write(&dir).map_err(failed)
}

/// Runs the pending points on `jobs` threads (GIL released); `progress`
/// gets (done, pending) after each point. Returns (ran, failed).
#[pyfunction]
#[pyo3(signature = (source, text, dir, jobs=None, progress=None))]
fn sweep_run_local(
    py: Python<'_>,
    source: &str,
    text: &str,
    dir: PathBuf,
    jobs: Option<usize>,
    progress: Option<PyObject>,
) -> PyResult<(usize, usize)> {
    let sweep = parsed(source, text)?;
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    std::fs::create_dir_all(&dir).map_err(failed)?;
    py.allow_threads(|| {
        sweep::run_local(&sweep, &dir, jobs, &|_, done, total| {
            if let Some(callback) = &progress {
                Python::with_gil(|py| {
                    let _ = callback.call1(py, (done, total));
                });
            }
        })
    })
    .map_err(failed)
}

/// Writes `dir`/results.csv and `dir`/index.html; returns (table, page,
/// ok, failed, missing).
#[pyfunction]
fn sweep_gather(
    source: &str,
    text: &str,
    dir: PathBuf,
) -> PyResult<(PathBuf, PathBuf, usize, usize, usize)> {
    let gathered = sweep::gather(&parsed(source, text)?, &dir, text).map_err(failed)?;
    Ok((
        gathered.table,
        gathered.page,
        gathered.ok,
        gathered.failed,
        gathered.missing,
    ))
}

/// Adds the sweep functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sweep_keys, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_pending, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_run_point, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_store, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_run_local, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_gather, m)?)?;
    Ok(())
}
