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
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::Command;

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
        crate::plan::check_out_dir(Some(&out))?;
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

/// Hands the sweep to `python3 -m pageframe.sweep --ray ADDRESS`.
fn on_ray(plan: &SweepPlan, address: &str) -> Result<(), CliError> {
    let python = std::env::var("PAGEFRAME_PYTHON").unwrap_or_else(|_| "python3".into());
    let status = Command::new(&python)
        .args(["-m", "pageframe.sweep", "--ray", address, "--out"])
        .arg(&plan.out)
        .arg(&plan.spec_path)
        .status()
        .map_err(|err| {
            CliError::Invalid(format!(
                "--ray: cannot run {python} (the Python package runs Ray sweeps: pip install ./python ray): {err}"
            ))
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(CliError::Invalid(format!(
            "--ray: {python} -m pageframe.sweep failed ({status})"
        )))
    }
}
