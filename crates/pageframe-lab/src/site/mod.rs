//! `--out DIR`: a run's results on disk. Per experiment, `DIR/<name>/` holds
//! `<name>.json` and `<name>.csv` (the report's rows), each plot as
//! `<plot>.svg` and `<plot>.png`, and `proc.txt` when views were asked for;
//! `DIR/index.html` is one self-contained page (plots embedded) with every
//! table and plot, the run's seed, scale, machine and date, and the
//! conformance suites' summaries (`conform::saved`).
//!
//! The page is rewritten after each experiment, so it is complete for what
//! has run even when a later experiment fails. Every file is written whole
//! or not at all (`files`): a stopped run leaves no half-written file.

mod conform_section;
mod html;
mod markup;

use crate::conform::saved::SuiteSummary;
use crate::experiments;
use crate::files;
use crate::params::Params;
use crate::plots::{render, Plot};
use crate::report::{Format, Report};
use crate::summary::Headline;
use std::fs;
use std::path::{Path, PathBuf};

pub use html::base64;
pub use markup::escape;

/// What the page says about the run as a whole.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The command line, as typed.
    pub command: String,
    /// Seed of the run.
    pub seed: u64,
    /// `quick` or `full`.
    pub scale: String,
    /// The host: CPU, cores, memory, kernel.
    pub machine: String,
    /// When the run started, UTC.
    pub date: String,
}

/// One experiment's part of the page.
#[derive(Clone, Debug)]
pub struct Section {
    /// Its report.
    pub report: Report,
    /// The parameters it ran with.
    pub params: Params,
    /// Its headline for the summary.
    pub headline: Option<Headline>,
    /// Its plots and their SVG text.
    pub plots: Vec<(Plot, String)>,
    /// Views of its machine: (label, view, text).
    pub views: Vec<(String, &'static str, String)>,
    /// Wall-clock seconds it took.
    pub seconds: f64,
}

/// A results directory being written.
#[derive(Debug)]
pub struct Site {
    dir: PathBuf,
    info: RunInfo,
    sections: Vec<Section>,
    conform: Option<Vec<SuiteSummary>>,
}

/// Why the directory could not be written: one line naming the file.
pub type SiteError = String;

fn io_error(path: &Path, err: impl std::fmt::Display) -> SiteError {
    format!("cannot write {}: {err}", path.display())
}

/// A PNG that could not be drawn or written.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("{0}")]
    Render(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Writes a file whole or not at all (see `files`).
fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), SiteError> {
    files::write_atomic(path, bytes).map_err(|err| io_error(path, err))
}

impl Site {
    /// Creates `dir` (and its parents) for a run.
    pub fn create(dir: &Path, info: RunInfo) -> Result<Site, SiteError> {
        fs::create_dir_all(dir).map_err(|err| io_error(dir, err))?;
        Ok(Site {
            dir: dir.to_path_buf(),
            info,
            sections: Vec::new(),
            conform: None,
        })
    }

    /// The page's path.
    pub fn index(&self) -> PathBuf {
        self.dir.join("index.html")
    }

    /// Writes one experiment's files and rewrites the page.
    pub fn add(
        &mut self,
        report: &Report,
        params: &Params,
        views: Vec<(String, &'static str, String)>,
        seconds: f64,
    ) -> Result<(), SiteError> {
        let name = &report.experiment;
        let folder = self.dir.join(name);
        fs::create_dir_all(&folder).map_err(|err| io_error(&folder, err))?;
        write(
            &folder.join(format!("{name}.json")),
            report.render(Format::Json),
        )?;
        write(
            &folder.join(format!("{name}.csv")),
            report.render(Format::Csv),
        )?;
        let mut plots = Vec::new();
        for plot in experiments::plots_of(report) {
            let svg =
                render::to_svg(&plot).map_err(|err| format!("{name}/{}: {err}", plot.name))?;
            write(&folder.join(format!("{}.svg", plot.name)), &svg)?;
            let png = folder.join(format!("{}.png", plot.name));
            files::write_atomic_with(&png, |temporary| {
                render::write_png(&plot, temporary).map_err(WriteError::Render)
            })
            .map_err(|err| io_error(&png, err))?;
            plots.push((plot, svg));
        }
        if !views.is_empty() {
            let text: String = views
                .iter()
                .map(|(label, view, text)| format!("==> /proc/{view} ({label}) <==\n{text}\n"))
                .collect();
            write(&folder.join("proc.txt"), text)?;
        }
        self.sections.push(Section {
            headline: experiments::headline_of(report),
            report: report.clone(),
            params: params.clone(),
            plots,
            views,
            seconds,
        });
        self.write_page()
    }

    /// Sets the conformance section (`conform::saved::for_page`) and
    /// rewrites the page.
    pub fn set_conform(&mut self, summaries: Vec<SuiteSummary>) -> Result<(), SiteError> {
        self.conform = Some(summaries);
        self.write_page()
    }

    fn write_page(&self) -> Result<(), SiteError> {
        let page = html::page(&self.info, &self.sections, self.conform.as_deref());
        write(&self.index(), page)
    }

    /// The sections written so far.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }
}

/// This host as one line: CPU model, cores, memory, kernel.
pub fn host_description() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split(':').nth(1))
        .map_or("unknown CPU".to_string(), |model| model.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(0, |cores| cores.get());
    let memory_gib =
        crate::host_memory::total().map_or("? GiB".to_string(), crate::host_memory::gib);
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(
        |_| std::env::consts::OS.to_string(),
        |release| format!("Linux {}", release.trim()),
    );
    format!("{model}, {cores} cores, {memory_gib} memory, {kernel}")
}

/// Now, UTC, as `2026-11-22 07:05:00 UTC`.
pub fn utc_now() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    utc_date(seconds)
}

/// A Unix time as `YYYY-MM-DD HH:MM:SS UTC` (civil calendar from days since
/// the epoch, after Howard Hinnant's `civil_from_days`).
pub fn utc_date(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let second_of_day = unix_seconds % 86_400;
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil() {
        assert_eq!(utc_date(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_date(1_795_331_100), "2026-11-22 07:05:00 UTC");
    }
}
