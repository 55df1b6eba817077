//! The `pagecache` conformance suite: the page cache, readahead and LRU
//! lists of the live kernel beside pageframe's reclaim layer
//! (`pageframe::reclaim`). Each case (`cases`) is a short program of
//! calls — pread, pwrite, fsync, ftruncate, `POSIX_FADV_DONTNEED`,
//! unlink, first touches of anonymous memory — made on the host by one
//! process in a fresh memory cgroup (`host`, `memcg`) and on pageframe by
//! the same calls (`model`). After each call the call's result and the
//! cgroup's page cache pages, active and inactive file pages, dirty pages
//! and anonymous pages (as a change from the worker's own) are compared
//! with pageframe's counts. Then programs run in a cgroup with a memory
//! limit (`limited`): each call's counts are compared within the charges
//! pageframe does not count, and the last call's refault decision
//! (`refault`).
//!
//! The files live on the suite's own ext4 (`scratch_fs`: a loop device
//! with direct I/O, made so that ext4 caches in order-0 pages as pageframe
//! does), and pageframe takes that device's readahead window and largest
//! I/O (`read_ahead_kb`, `max_sectors_kb`).
//!
//! Skipped, with the reason: not root; no memory cgroup controller; MGLRU
//! on (its generations are not the two lists pageframe models); a page
//! size other than 4 KiB; no loop device or mkfs.ext4.

mod case_files;
mod cases;
mod drain;
mod host;
mod limited;
mod memcg;
mod model;
mod random;
mod refault;
mod scratch_fs;
mod worker;

use super::host::{is_root, read, read_number};
use super::{errno_label, ConformError, ConformRow, SuiteOutcome, SuiteResult, Verdict};
pub use cases::{Case, Step, CASES, P};
use memcg::{LruCounts, MemcgRoot};
use pageframe::reclaim::MmConfig;
pub use random::{random_programs, Program};
use scratch_fs::ScratchFs;
use std::path::Path;

/// The suite's name.
const SUITE: &str = "pagecache";

/// A call's result and the counts after it, as a row shows them.
fn describe(result: Option<i64>, counts: LruCounts, baseline: LruCounts) -> String {
    let delta = |now: u64, then: u64| now as i64 - then as i64;
    let result = match result {
        Some(value) if value < 0 => format!("{}; ", errno_label((-value) as i32)),
        Some(value) => format!("{value}; "),
        None => String::new(),
    };
    format!(
        "{result}file {} (active {}, inactive {}), dirty {}; anon {:+} (active {:+}, inactive {:+})",
        counts.file,
        counts.active_file,
        counts.inactive_file,
        counts.dirty,
        delta(counts.anon, baseline.anon),
        delta(counts.active_anon, baseline.active_anon),
        delta(counts.inactive_anon, baseline.inactive_anon),
    )
}

/// Why the suite cannot run on this host, if it cannot (before any setup).
fn unsupported() -> Result<Option<String>, ConformError> {
    if !is_root() {
        return Ok(Some(
            "not root (a memory cgroup and a loop device per run need it)".into(),
        ));
    }
    let lru_gen = Path::new("/sys/kernel/mm/lru_gen/enabled");
    if lru_gen.exists() && !read(&lru_gen.to_string_lossy())?.trim().ends_with("0000") {
        return Ok(Some("MGLRU is on: the kernel ages generations, not the active and inactive lists pageframe models".into()));
    }
    // SAFETY: sysconf has no preconditions.
    if unsafe { libc::sysconf(libc::_SC_PAGESIZE) } != cases::P as libc::c_long {
        return Ok(Some("the host's page size is not 4 KiB".into()));
    }
    Ok(None)
}

/// The reclaim layer's config for the device under `queue` (its sysfs
/// `queue` directory).
fn device_config(queue: &Path) -> Result<MmConfig, ConformError> {
    let number = |name: &str| -> Result<u32, ConformError> {
        let path = queue.join(name).to_string_lossy().into_owned();
        u32::try_from(read_number(&path)?)
            .map_err(|err| ConformError::Host(format!("{path}: {err}")))
    };
    Ok(MmConfig {
        read_ahead_kb: number("read_ahead_kb")?,
        max_sectors_kb: number("max_sectors_kb")?,
        ..MmConfig::default()
    })
}

/// The first CPU this process may run on.
fn first_allowed_cpu() -> Result<usize, ConformError> {
    // SAFETY: a zeroed cpu_set_t is valid for sched_getaffinity to fill.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a cpu_set_t of the size passed.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return Err(ConformError::Host(format!(
            "sched_getaffinity: {}",
            std::io::Error::last_os_error()
        )));
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE.
        .find(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .ok_or_else(|| ConformError::Host("no CPU in this process's affinity".into()))
}

/// What a case gave on one side: the counts after the worker's no-op,
/// each call's result (minus the errno on failure) and counts, and the
/// counts after the worker exited.
pub struct CaseRun {
    /// Counts before the first call.
    pub baseline: LruCounts,
    /// Each call's result and the counts after it.
    pub steps: Vec<(i64, LruCounts)>,
    /// Counts after the process exited.
    pub exited: LruCounts,
}

/// How often a case whose host run differs is run on the host: the host
/// is shared, and a write-back the flusher starts for a system-wide dirty
/// threshold (another process's writes) can clean the case's pages between
/// two calls. The last run is reported.
const RUNS_OF_A_DIFFERING_CASE: usize = 3;

/// How often a program under a memory limit whose host run differs is
/// run: besides the above, the kernel's periodic flush of the cgroup
/// statistics (every 2 s), which pageframe does not model, can land inside
/// a call and change reclaim's deactivation decision for the rest of it.
const RUNS_OF_A_DIFFERING_LIMITED_PROGRAM: usize = 5;

/// Runs a case on the host and compares it (`host_run`) up to `runs`
/// times, until every row matches; the last run's rows, the last one
/// naming the host run it came from when it was not the first.
fn until_match(
    runs: usize,
    mut host_run: impl FnMut() -> Result<Vec<ConformRow>, ConformError>,
) -> Result<Vec<ConformRow>, ConformError> {
    let mut rows = Vec::new();
    for run in 1..=runs {
        rows = host_run()?;
        if rows.iter().all(|row| row.verdict == Verdict::Match) || run == runs {
            if let Some(last) = rows.last_mut().filter(|_| run > 1) {
                last.case.push_str(&format!(" (host run {run} of {runs})"));
            }
            break;
        }
    }
    Ok(rows)
}

/// One side of a row: the call's result (none after the exit), the counts
/// after it, and the counts its anonymous pages are shown against.
type Side = (Option<i64>, LruCounts, LruCounts);

/// The rows of one case titled `title`: each call's, then the counts after
/// the exit (when the cgroup holds no anonymous page at all); `same` says
/// whether a row's two sides agree.
fn rows_of(
    title: &str,
    case: &Case<'_>,
    kernel: &CaseRun,
    model: &CaseRun,
    same: impl Fn(Side, Side) -> bool,
) -> Vec<ConformRow> {
    let row = |label: String, kernel_side: Side, model_side: Side| ConformRow {
        case: label,
        kernel: describe(kernel_side.0, kernel_side.1, kernel_side.2),
        pageframe: describe(model_side.0, model_side.1, model_side.2),
        verdict: if same(kernel_side, model_side) {
            Verdict::Match
        } else {
            Verdict::Diff
        },
        listed: None,
    };
    let mut rows: Vec<ConformRow> = case
        .steps
        .iter()
        .zip(kernel.steps.iter().zip(&model.steps))
        .enumerate()
        .map(|(at, (step, (&(k, kc), &(m, mc))))| {
            row(
                format!("{title} #{} {}", at + 1, step.label()),
                (Some(k), kc, kernel.baseline),
                (Some(m), mc, model.baseline),
            )
        })
        .collect();
    let none = LruCounts::default();
    rows.push(row(
        format!("{title}: after exit"),
        (None, kernel.exited, none),
        (None, model.exited, none),
    ));
    rows
}

/// The rows of one case, each a MATCH when both sides read the same.
fn compare(case: &Case<'_>, kernel: &CaseRun, model: &CaseRun) -> Vec<ConformRow> {
    rows_of(case.name, case, kernel, model, |k, m| {
        describe(k.0, k.1, k.2) == describe(m.0, m.1, m.2)
    })
}

/// Runs every case of the suite on the host and on pageframe, then the
/// programs under a memory limit (`limited`).
pub fn run() -> Result<SuiteResult, ConformError> {
    run_with_limited(CASES, limited::LIMITED_CASES)
}

/// Runs `cases` on the host and on pageframe, as the suite runs its own:
/// one row per call and one after each case's exit; skipped, with the
/// reason, where the host cannot run them.
pub fn run_cases(cases: &[Case<'_>]) -> Result<SuiteResult, ConformError> {
    run_with_limited(cases, &[])
}

fn run_with_limited(
    cases: &[Case<'_>],
    limited_cases: &[limited::LimitedCase],
) -> Result<SuiteResult, ConformError> {
    if let Some(reason) = unsupported()? {
        return Ok(SuiteResult::skipped(SUITE, reason));
    }
    let Some(root) = MemcgRoot::find()? else {
        return Ok(SuiteResult::skipped(
            SUITE,
            "no memory cgroup controller (cgroup v1 memory, or v2 delegating memory)",
        ));
    };
    let scratch = match ScratchFs::make(&std::env::temp_dir())? {
        Ok(scratch) => scratch,
        Err(reason) => return Ok(SuiteResult::skipped(SUITE, reason)),
    };
    let queue = scratch
        .queue()
        .ok_or_else(|| ConformError::Host("the scratch ext4's loop device has no name".into()))?;
    let config = device_config(&queue)?;
    let dir = scratch.dir();
    let cpu = first_allowed_cpu()?;
    let mut rows = Vec::new();
    let model_runs: Vec<CaseRun> = cases
        .iter()
        .map(|case| model::run_case(case, config, None))
        .collect::<Result<_, _>>()?;
    for (number, (case, model)) in cases.iter().zip(&model_runs).enumerate() {
        let name = format!("pageframe-conform-{}-{number}", std::process::id());
        rows.extend(until_match(RUNS_OF_A_DIFFERING_CASE, || {
            let kernel = host::run_case(case, number, dir, || root.create(&name), cpu)?;
            Ok(compare(case, &kernel, model))
        })?);
    }
    for (number, limited_case) in limited_cases.iter().enumerate() {
        let case = &limited_case.case;
        let limit = limited_case.limit_bytes;
        let model = model::run_case(case, config, Some(limit))?;
        let name = format!("pageframe-conform-limited-{}-{number}", std::process::id());
        let make_memcg = || {
            let memcg = root.create(&name)?;
            memcg.limit(limit)?;
            Ok(memcg)
        };
        rows.extend(until_match(RUNS_OF_A_DIFFERING_LIMITED_PROGRAM, || {
            let kernel = host::run_case(case, cases.len() + number, dir, make_memcg, cpu)?;
            let mut case_rows = limited::compare(case, limit, &kernel, &model);
            case_rows.push(refault::compare(limited_case, &kernel, &model));
            Ok(case_rows)
        })?);
    }
    Ok(SuiteResult {
        suite: SUITE,
        outcome: SuiteOutcome::Ran(rows),
    })
}
