//! Running sweep points and keeping their results: one JSON file per point
//! in `DIR/points/`, named after a hash of the point's key and holding the
//! key, so a re-run skips the points whose file says `ok` (failed points run
//! again). Each file is written whole ([`crate::files::write_atomic`]).
//!
//! [`run_point`] is a pure function of the spec and the point: any executor
//! may call it — the local thread pool of [`run_local`], or a cluster
//! engine's workers (the Python package drives Ray with it). Points share no
//! state: each run boots its own machines.

use super::spec::{Point, Sweep};
use crate::experiments::host_threads;
use crate::files;
use crate::observe::{self, Observer};
use serde_json::{json, Value};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The outcome of one point, as stored in its file.
#[derive(Clone, Debug, PartialEq)]
pub struct PointRecord {
    /// The point's key.
    pub key: String,
    /// The report's JSON (the output contract's object), or the error.
    pub outcome: Result<Value, String>,
    /// Wall time of the run.
    pub seconds: f64,
}

impl PointRecord {
    /// The record as the JSON object of its file.
    pub fn to_json(&self) -> Value {
        let (status, report, error) = match &self.outcome {
            Ok(report) => ("ok", report.clone(), Value::Null),
            Err(error) => ("error", Value::Null, Value::String(error.clone())),
        };
        json!({
            "key": self.key,
            "status": status,
            "error": error,
            "seconds": self.seconds,
            "report": report,
        })
    }

    /// A record from its file's JSON; `None` if it is not one.
    pub fn from_json(value: &Value) -> Option<PointRecord> {
        let key = value.get("key")?.as_str()?.to_string();
        let seconds = value.get("seconds")?.as_f64()?;
        let outcome = match value.get("status")?.as_str()? {
            "ok" => Ok(value.get("report")?.clone()),
            "error" => Err(value.get("error")?.as_str()?.to_string()),
            _ => return None,
        };
        Some(PointRecord {
            key,
            outcome,
            seconds,
        })
    }

    /// Writes the record to its file in `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        let path = point_path(dir, &self.key);
        let parent = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent)
            .and_then(|()| files::write_atomic(&path, self.to_json().to_string() + "\n"))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))
    }
}

/// The largest point file read back (a record holds one run's report rows).
const MAX_RECORD_BYTES: u64 = 64 << 20;

/// The file of the point with `key` in results directory `dir`.
pub fn point_path(dir: &Path, key: &str) -> PathBuf {
    dir.join("points").join(format!("{:016x}.json", fnv1a(key)))
}

/// The stored record of `point`, if its file exists and is one of it.
pub fn stored(dir: &Path, point: &Point) -> Option<PointRecord> {
    // Read up to a bound: a results directory is input too (a point file
    // replaced by /dev/zero filled memory); a larger file is no record.
    let text = files::read_text(&point_path(dir, &point.key), MAX_RECORD_BYTES).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    PointRecord::from_json(&value).filter(|record| record.key == point.key)
}

/// The indexes of the points without an `ok` record in `dir`.
pub fn pending(sweep: &Sweep, dir: &Path) -> Vec<usize> {
    (0..sweep.points.len())
        .filter(|&index| {
            stored(dir, &sweep.points[index]).is_none_or(|record| record.outcome.is_err())
        })
        .collect()
}

/// Runs point `index` of the sweep, letting it use `threads` threads for
/// its parallel parts (its results do not depend on them). A failure (an
/// error or a panic of the experiment) is the record's outcome, not an
/// error of this call. `on_progress` gets the experiment's (done, total)
/// steps.
pub fn run_point(
    sweep: &Sweep,
    index: usize,
    threads: NonZeroUsize,
    on_progress: Box<dyn FnMut(u64, u64)>,
) -> PointRecord {
    let Some(point) = sweep.points.get(index) else {
        return PointRecord {
            key: format!("#{index}"),
            outcome: Err(format!(
                "no point {index} (the sweep has {})",
                sweep.points.len()
            )),
            seconds: 0.0,
        };
    };
    let options = sweep.options(point, threads);
    let started = Instant::now();
    let observer = Observer {
        on_progress,
        views: Vec::new(),
        rendered: Vec::new(),
    };
    let (outcome, _) = observe::observed(observer, || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            sweep.experiment.run(&options, &point.params)
        }))
    });
    let outcome = match outcome {
        Ok(Ok(report)) => Ok(report.to_json()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(panic) => Err(format!("panicked: {}", panic_message(&panic))),
    };
    PointRecord {
        key: point.key.clone(),
        outcome,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Runs the pending points of the sweep, `jobs` at a time, writing each
/// record as it completes; `on_done` sees each record and how many are done
/// of how many pending. Returns how many points ran and how many of them
/// failed.
///
/// The cores are shared out: each point may use the host's threads divided
/// by `jobs` (at least one), so points that compute in parallel do not
/// oversubscribe the cores when several run at once.
pub fn run_local(
    sweep: &Sweep,
    dir: &Path,
    jobs: usize,
    on_done: &(dyn Fn(&PointRecord, usize, usize) + Sync),
) -> Result<(usize, usize), String> {
    let pending = pending(sweep, dir);
    let threads =
        NonZeroUsize::new(host_threads().get() / jobs.max(1)).unwrap_or(NonZeroUsize::MIN);
    let next = AtomicUsize::new(0);
    let done = Mutex::new((0usize, 0usize, None::<String>));
    let mut workers = 0usize;
    let mut spawn_error = None;
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, pending.len().max(1)) {
            let worker = || loop {
                let at = next.fetch_add(1, Ordering::Relaxed);
                let Some(&index) = pending.get(at) else {
                    break;
                };
                let record = run_point(sweep, index, threads, Box::new(|_, _| {}));
                let written = record.write(dir);
                let mut state = done.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                state.0 += 1;
                state.1 += usize::from(record.outcome.is_err());
                if let Err(err) = written {
                    state.2.get_or_insert(err);
                    next.store(pending.len(), Ordering::Relaxed);
                }
                on_done(&record, state.0, pending.len());
            };
            // A thread the system refuses leaves the points to the
            // workers already running.
            match std::thread::Builder::new().spawn_scoped(scope, worker) {
                Ok(_) => workers += 1,
                Err(err) => {
                    spawn_error = Some(err);
                    break;
                }
            }
        }
    });
    if let (0, Some(err)) = (workers, spawn_error) {
        return Err(format!("cannot start a worker thread: {err}"));
    }
    let (ran, failed, write_error) = done.into_inner().unwrap_or_else(|p| p.into_inner());
    match write_error {
        Some(err) => Err(err),
        None => Ok((ran, failed)),
    }
}

/// The text of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// 64-bit FNV-1a: a stable file name for a key.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
