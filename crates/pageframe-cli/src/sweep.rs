//! `pageframe sweep SPEC.toml`: the spec is read and every point checked
//! before anything runs (a bad spec is the usual one-line error, status 2);
//! then the points not yet done run on every core (`--jobs`), or on a Ray
//! cluster (`--ray ADDRESS`, handed to the Python package, which runs the
//! same points through the same library calls and writes the same results
//! directory). The table and report page are gathered at the end; stdout
//! gets one line saying how many points ran, failed, and where the files are.
//! A failed point is recorded with its error and the sweep goes on; the
//! exit status stays 0 (the table has the errors).

use crate::args::SweepArgs;
use crate::error::CliError;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pageframe_lab::files;
use pageframe_lab::sweep::{self, Sweep};
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// `pageframe sweep`, validated.
#[derive(Debug)]
pub struct SweepPlan {
    /// The spec file.
    pub spec_path: PathBuf,
    /// Its text.
    pub spec_text: String,
    /// The parsed spec.
    pub sweep: Sweep,
    /// The results directory.
    pub out: PathBuf,
    /// Threads of the local run.
    pub jobs: usize,
    /// The Ray cluster's address, if the points run there.
    pub ray: Option<String>,
    /// Progress bar wanted.
    pub progress: bool,
}

/// The most points `--jobs` may run at once: one thread each.
const MAX_JOBS: usize = 1024;

impl SweepPlan {
    /// Reads and checks the spec.
    pub fn from_args(args: SweepArgs) -> Result<SweepPlan, CliError> {
        let spec_text =
            files::read_text(&args.spec, files::MAX_CONFIG_BYTES).map_err(CliError::Invalid)?;
        let sweep = Sweep::parse(&args.spec.display().to_string(), &spec_text)
            .map_err(CliError::Invalid)?;
        let jobs = match args.jobs {
            Some(0) => return Err(CliError::Invalid("--jobs: at least 1".into())),
            Some(jobs) if jobs > MAX_JOBS => {
                return Err(CliError::Invalid(format!("--jobs: at most {MAX_JOBS}")))
            }
            Some(jobs) => jobs,
            None => std::thread::available_parallelism().map_or(1, usize::from),
        };
        let out = args.out.unwrap_or_else(|| {
            let stem = args
                .spec
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_else(|| "sweep".into());
            PathBuf::from(format!("{stem}-results"))
        });
        crate::arg_checks::check_out_dir(Some(&out))?;
        if args
            .ray
            .as_deref()
            .is_some_and(|address| address.trim().is_empty())
        {
            return Err(CliError::Invalid(
                "--ray: an empty address (give auto, local or ray://host:port)".into(),
            ));
        }
        Ok(SweepPlan {
            spec_path: args.spec,
            spec_text,
            sweep,
            out,
            jobs,
            ray: args.ray,
            progress: !args.quiet && std::io::stderr().is_terminal(),
        })
    }
}

/// Runs the sweep's pending points and gathers the table and page.
pub fn execute(plan: &SweepPlan, out: &mut dyn Write) -> Result<(), CliError> {
    if let Some(address) = &plan.ray {
        return on_ray(plan, address);
    }
    std::fs::create_dir_all(&plan.out)
        .map_err(|err| CliError::Invalid(format!("cannot create {}: {err}", plan.out.display())))?;
    let bar = if plan.progress {
        ProgressBar::with_draw_target(
            Some(sweep::pending(&plan.sweep, &plan.out).len() as u64),
            ProgressDrawTarget::stderr(),
        )
    } else {
        ProgressBar::hidden()
    };
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{bar:32.cyan/blue}] {pos}/{len} points  {elapsed}  {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    let (ran, failed) = sweep::run_local(&plan.sweep, &plan.out, plan.jobs, &|record, _, _| {
        bar.inc(1);
        if let Err(error) = &record.outcome {
            bar.println(format!("pageframe: point {} failed: {error}", record.key));
        }
    })
    .map_err(CliError::Invalid)?;
    bar.finish_and_clear();
    let gathered =
        sweep::gather(&plan.sweep, &plan.out, &plan.spec_text).map_err(CliError::Invalid)?;
    writeln!(
        out,
        "{} points: {} ok, {} failed; {ran} run now ({failed} failed); table {}, page {}",
        plan.sweep.points.len(),
        gathered.ok,
        gathered.failed,
        gathered.table.display(),
        gathered.page.display()
    )?;
    Ok(())
}

/// The most of the interpreter's stderr kept for the end of a Ray sweep.
const MAX_RAY_STDERR_BYTES: usize = 64 << 10;

/// Hands the sweep to `python3 -m pageframe.sweep --ray ADDRESS`. Its
/// stderr (Ray's log, or a traceback) is kept, up to its last 64 KiB, and
/// shown after a sweep that succeeded; when the sweep failed, its last line
/// ends our one-line error instead (a missing package is
/// "No module named 'pageframe'", a bad address Ray's ConnectionError).
/// The trade-off: Ray's log shows at the end, not as it comes.
fn on_ray(plan: &SweepPlan, address: &str) -> Result<(), CliError> {
    let python = std::env::var("PAGEFRAME_PYTHON").unwrap_or_else(|_| "python3".into());
    let hint = "the Python package runs Ray sweeps: pip install ./python ray";
    let mut child = Command::new(&python)
        .args(["-m", "pageframe.sweep", "--ray", address, "--out"])
        .arg(&plan.out)
        .arg(&plan.spec_path)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| CliError::Invalid(format!("--ray: cannot run {python} ({hint}): {err}")))?;
    let stderr = child
        .stderr
        .take()
        .map(|stderr| last_bytes(stderr, MAX_RAY_STDERR_BYTES))
        .unwrap_or_default();
    let status = child
        .wait()
        .map_err(|err| CliError::Invalid(format!("--ray: waiting for {python}: {err}")))?;
    if status.success() {
        // Ray's log, when it had one; not worth an error if stderr is gone.
        let _ = std::io::stderr().write_all(&stderr);
        return Ok(());
    }
    let text = String::from_utf8_lossy(&stderr);
    let last = text
        .lines()
        .map(str::trim)
        .rfind(|line| !line.is_empty())
        .map(|line| line.strip_prefix("pageframe: ").unwrap_or(line));
    Err(CliError::Invalid(match last {
        Some(last) => format!("--ray: {python} -m pageframe.sweep failed ({status}): {last}"),
        None => format!("--ray: {python} -m pageframe.sweep failed ({status}; {hint})"),
    }))
}

/// Reads `reader` to its end, keeping its last `limit` bytes (or up to
/// twice that); a read error other than an interruption ends it (the pipe
/// is then closed, so the writer is not left blocked).
fn last_bytes(mut reader: impl Read, limit: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => kept.extend_from_slice(&buffer[..read]),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        if kept.len() > 2 * limit {
            kept.drain(..kept.len() - limit);
        }
    }
    kept
}
