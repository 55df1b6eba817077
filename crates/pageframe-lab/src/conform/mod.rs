//! Conformance suites: the same cases run on the live kernel and on
//! pageframe, compared row by row.
//!
//! Owns the shapes every suite reports in ([`ConformRow`], [`SuiteResult`],
//! [`Verdict`]) and their text table, so that each suite (mempolicy,
//! zoneinfo, slab, zsmalloc, buddy, sysctl) only produces rows. A suite that
//! cannot run on this host (not root, a syscall missing) reports itself
//! [`SuiteOutcome::Skipped`] with the reason: never failed, never faked.

pub mod buddy;
pub mod host;
pub mod host_machine;
pub mod mempolicy;
pub mod pagecache;
mod process;
pub mod saved;
pub mod slab;
pub mod suites;
pub mod sysctl;
pub mod zoneinfo;
pub mod zram_device;
pub mod zsmalloc;

use pageframe::Errno;

/// Whether the kernel and pageframe agreed on a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Same result.
    Match,
    /// Different results.
    Diff,
}

impl Verdict {
    /// `MATCH` or `DIFF`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Match => "MATCH",
            Verdict::Diff => "DIFF",
        }
    }
}

/// One case: what the kernel did, what pageframe did, and the verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConformRow {
    /// The case, as a readable call with its arguments.
    pub case: String,
    /// The kernel's result (return value, out-parameters, state after).
    pub kernel: String,
    /// Pageframe's result, in the same words.
    pub pageframe: String,
    /// `Match` when both are equal.
    pub verdict: Verdict,
    /// Why a DIFF is accepted on this host, when the suite knows it from
    /// the host itself (a kernel feature pageframe does not model, found
    /// running); [`suites::LISTED_DIFFS`] holds the reasons that hold on
    /// every host.
    pub listed: Option<&'static str>,
}

impl ConformRow {
    /// A row whose verdict is whether the two results are equal.
    pub fn compare(case: String, kernel: String, pageframe: String) -> ConformRow {
        let verdict = if kernel == pageframe {
            Verdict::Match
        } else {
            Verdict::Diff
        };
        ConformRow {
            case,
            kernel,
            pageframe,
            verdict,
            listed: None,
        }
    }

    /// The row with `reason` as why its DIFF is accepted, when `applies`
    /// (a MATCH stays a MATCH).
    pub fn listed_if(self, applies: bool, reason: &'static str) -> ConformRow {
        ConformRow {
            listed: applies.then_some(reason),
            ..self
        }
    }
}

/// What a suite produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SuiteOutcome {
    /// The suite ran: one row per case.
    Ran(Vec<ConformRow>),
    /// The suite could not run here; the reason says why.
    Skipped {
        /// Why (not root, a syscall missing, ...).
        reason: String,
    },
}

/// A suite's name and outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteResult {
    /// The suite (`mempolicy`, ...).
    pub suite: &'static str,
    /// Its rows, or why it was skipped.
    pub outcome: SuiteOutcome,
}

impl SuiteResult {
    /// A suite skipped for `reason` (not root, a syscall missing, ...).
    pub fn skipped(suite: &'static str, reason: impl Into<String>) -> SuiteResult {
        SuiteResult {
            suite,
            outcome: SuiteOutcome::Skipped {
                reason: reason.into(),
            },
        }
    }

    /// The rows (none when skipped).
    pub fn rows(&self) -> &[ConformRow] {
        match &self.outcome {
            SuiteOutcome::Ran(rows) => rows,
            SuiteOutcome::Skipped { .. } => &[],
        }
    }

    /// The rows whose verdict is DIFF.
    pub fn diffs(&self) -> impl Iterator<Item = &ConformRow> {
        self.rows()
            .iter()
            .filter(|row| row.verdict == Verdict::Diff)
    }

    /// The report as text: one `case | kernel | pageframe | verdict` line
    /// per row (only the DIFF rows unless `all`; a DIFF listed in
    /// [`suites::LISTED_DIFFS`] carries its reason), then a summary line.
    pub fn render(&self, all: bool) -> String {
        let mut out = String::new();
        match &self.outcome {
            SuiteOutcome::Skipped { reason } => {
                out.push_str(&format!("conform {}: skipped: {reason}\n", self.suite));
            }
            SuiteOutcome::Ran(rows) => {
                out.push_str("case | kernel | pageframe | verdict\n");
                for row in rows
                    .iter()
                    .filter(|row| all || row.verdict == Verdict::Diff)
                {
                    let listed = match row.verdict {
                        Verdict::Diff => suites::listed_reason(self.suite, row)
                            .map(|reason| format!(" (listed: {reason})"))
                            .unwrap_or_default(),
                        Verdict::Match => String::new(),
                    };
                    out.push_str(&format!(
                        "{} | {} | {} | {}{listed}\n",
                        row.case,
                        row.kernel,
                        row.pageframe,
                        row.verdict.label()
                    ));
                }
                let diffs = self.diffs().count();
                out.push_str(&format!(
                    "conform {}: {} cases, {} MATCH, {diffs} DIFF\n",
                    self.suite,
                    rows.len(),
                    rows.len() - diffs
                ));
            }
        }
        out
    }
}

/// Why a suite could not produce a result (as opposed to a skip).
#[derive(Debug, thiserror::Error)]
pub enum ConformError {
    /// Reading the host's topology failed.
    #[error("reading the host topology: {0}")]
    Host(String),
    /// Booting the pageframe machine failed.
    #[error("booting pageframe like the host: {0}")]
    Boot(String),
    /// The process running the kernel cases failed.
    #[error("running the kernel cases: {0}")]
    Kernel(String),
}

/// The errno name of a raw error code (`EINVAL`), or `errno N`.
pub fn errno_label(code: i32) -> String {
    const KNOWN: [Errno; 11] = [
        Errno::EPERM,
        Errno::ENOENT,
        Errno::ESRCH,
        Errno::EIO,
        Errno::ENOMEM,
        Errno::EACCES,
        Errno::EFAULT,
        Errno::EBUSY,
        Errno::ENODEV,
        Errno::EINVAL,
        Errno::EOPNOTSUPP,
    ];
    match KNOWN.iter().find(|errno| errno.code() == code) {
        Some(errno) => errno.name().to_string(),
        None if code == libc::ENOSYS => "ENOSYS".to_string(),
        None if code == libc::EBADF => "EBADF".to_string(),
        None if code == libc::EFBIG => "EFBIG".to_string(),
        None => format!("errno {code}"),
    }
}
