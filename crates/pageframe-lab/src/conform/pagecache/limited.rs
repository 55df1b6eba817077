//! Programs run under a memory cgroup limit, compared call by call: the
//! host's cgroup reclaims its own pages as its charges reach the limit,
//! and pageframe's reclaim layer does the same under the same limit
//! (`Mm::set_memcg_limit`); the refault decision of each program's last
//! call is a row of its own (`refault`). Which pages each side evicts, and
//! when, differ by charges pageframe does not count — the kernel memory
//! charged to the cgroup (its page cache's xarray nodes, the worker's page
//! tables) and a per-CPU charge stock of up to `MEMCG_CHARGE_BATCH` pages
//! left on a CPU other than the worker's — and by where the last reclaim
//! of a call stops (each frees 32 pages or more).
//! So a row compares the call's result, its dirty pages and anonymous
//! pages exactly, and the cgroup's file pages, active and inactive, within
//! [`tolerance`] pages.

use super::cases::{Case, Step, P};
use super::memcg::LruCounts;
use super::{rows_of, CaseRun};
use crate::conform::ConformRow;

/// A program and the memory limit of its cgroup (and of pageframe's).
pub(super) struct LimitedCase {
    pub(super) case: Case<'static>,
    pub(super) limit_bytes: u64,
}

/// A MiB in bytes.
pub(super) const MIB: u64 = 1 << 20;

use Step::{DontNeed, Read, Touch, Write};

/// The programs: a file read back soon after a stream pushed it out while
/// another stays active; a file twice the memory read twice; an evicted
/// file overwritten; an evicted file dropped, then read; an active file
/// and a stream; anonymous memory and a stream.
pub(super) const LIMITED_CASES: &[LimitedCase] = &[
    LimitedCase {
        case: Case {
            name: "refault: a file read back soon after eviction",
            files: &[16 * MIB, 4 * MIB, 16 * MIB],
            steps: &[
                Read(0, 0, 16 * MIB),
                Read(0, 0, 16 * MIB),
                Read(1, 0, 4 * MIB),
                Read(2, 0, 16 * MIB),
                Read(1, 0, 4 * MIB),
            ],
        },
        limit_bytes: 32 * MIB,
    },
    LimitedCase {
        case: Case {
            name: "refault: a file twice the memory read twice",
            files: &[32 * MIB],
            steps: &[Read(0, 0, 32 * MIB), Read(0, 0, 32 * MIB)],
        },
        limit_bytes: 16 * MIB,
    },
    LimitedCase {
        case: Case {
            name: "refault: an evicted file overwritten",
            files: &[2 * MIB, 32 * MIB],
            steps: &[
                Read(0, 0, 2 * MIB),
                Read(1, 0, 32 * MIB),
                Write(0, 0, 2 * MIB),
            ],
        },
        limit_bytes: 16 * MIB,
    },
    LimitedCase {
        case: Case {
            name: "refault: an evicted file dropped, then read",
            files: &[2 * MIB, 32 * MIB],
            steps: &[
                Read(0, 0, 2 * MIB),
                Read(1, 0, 32 * MIB),
                DontNeed(0, 0, 0),
                Read(0, 0, 2 * MIB),
            ],
        },
        limit_bytes: 16 * MIB,
    },
    LimitedCase {
        case: Case {
            name: "reclaim: an active file, then a stream twice the memory",
            files: &[8 * MIB, 32 * MIB],
            steps: &[
                Read(0, 0, 8 * MIB),
                Read(0, 0, 8 * MIB),
                Read(1, 0, 32 * MIB),
                Read(0, 0, 8 * MIB),
            ],
        },
        limit_bytes: 16 * MIB,
    },
    LimitedCase {
        case: Case {
            name: "reclaim: anonymous memory, then a stream twice the memory",
            files: &[32 * MIB],
            steps: &[Touch(1024), Read(0, 0, 32 * MIB), Read(0, 0, 32 * MIB)],
        },
        limit_bytes: 16 * MIB,
    },
];

/// `MEMCG_CHARGE_BATCH`: the pages a CPU's charge stock holds at most.
const MEMCG_CHARGE_BATCH: u64 = 64;

/// How far apart the two sides' file counts may be under a limit of
/// `limit_bytes`: three charge batches — one for a stock left on another
/// CPU, one for the kernel memory (a 32 MiB file's xarray nodes alone are
/// about 20 pages), one for where the last reclaim of a call stops — or a
/// 32nd of the limit when that is more.
pub(super) fn tolerance(limit_bytes: u64) -> u64 {
    (3 * MEMCG_CHARGE_BATCH).max(limit_bytes / P / 32)
}

/// Whether two counts after a call agree: the file lists within
/// `tolerance` pages, the rest exactly (anon as a change from each side's
/// own baseline).
fn agree(
    (kernel, kernel_baseline): (LruCounts, LruCounts),
    (model, model_baseline): (LruCounts, LruCounts),
    tolerance: u64,
) -> bool {
    let near = |a: u64, b: u64| a.abs_diff(b) <= tolerance;
    let anon = |counts: LruCounts, baseline: LruCounts| {
        [
            counts.anon as i64 - baseline.anon as i64,
            counts.active_anon as i64 - baseline.active_anon as i64,
            counts.inactive_anon as i64 - baseline.inactive_anon as i64,
        ]
    };
    near(kernel.file, model.file)
        && near(kernel.active_file, model.active_file)
        && near(kernel.inactive_file, model.inactive_file)
        && kernel.dirty == model.dirty
        && anon(kernel, kernel_baseline) == anon(model, model_baseline)
}

/// The rows of `case` run under `limit_bytes`: one per call, then the
/// counts after the exit.
pub(super) fn compare(
    case: &Case<'_>,
    limit_bytes: u64,
    kernel: &CaseRun,
    model: &CaseRun,
) -> Vec<ConformRow> {
    let tolerance = tolerance(limit_bytes);
    let title = format!(
        "{} ({} MiB, file pages within {tolerance})",
        case.name,
        limit_bytes >> 20
    );
    rows_of(&title, case, kernel, model, |k, m| {
        k.0 == m.0 && agree((k.1, k.2), (m.1, m.2), tolerance)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(file: u64, active: u64, dirty: u64, anon: u64) -> LruCounts {
        LruCounts {
            file,
            active_file: active,
            inactive_file: file - active,
            dirty,
            anon,
            ..LruCounts::default()
        }
    }

    /// File lists agree within the tolerance; dirty and anon only exactly.
    #[test]
    fn file_lists_agree_within_the_tolerance_and_the_rest_exactly() {
        let base = LruCounts::default();
        let t = tolerance(16 << 20);
        assert_eq!(t, 192);
        assert_eq!(tolerance(64 << 20), 512);
        let kernel = counts(3752, 0, 0, 0);
        assert!(agree((kernel, base), (counts(3838, 0, 0, 0), base), t));
        assert!(agree((kernel, base), (counts(3752 + t, 0, 0, 0), base), t));
        assert!(!agree((kernel, base), (counts(3753 + t, 0, 0, 0), base), t));
        assert!(!agree((kernel, base), (counts(3752, 0, 1, 0), base), t));
        assert!(!agree((kernel, base), (counts(3752, 0, 0, 1), base), t));
        // Active and inactive each within it, not only their sum.
        let split = counts(4000, 2000, 0, 0);
        assert!(!agree(
            (split, base),
            (counts(4000, 2000 + t + 1, 0, 0), base),
            t
        ));
        // Anon as a change from each side's own baseline.
        let worker = counts(0, 0, 0, 3);
        assert!(agree(
            (counts(3752, 0, 0, 13), worker),
            (counts(3752, 0, 0, 10), base),
            t
        ));
    }

    /// Every program ends with a call that reads or writes, and fits the
    /// suite's 64 MiB scratch file system.
    #[test]
    fn programs_end_with_a_call_that_moves_pages_and_fit_the_scratch_fs() {
        for case in LIMITED_CASES {
            assert!(case.case.steps.last().unwrap().buffer_bytes() > 0);
            assert!(case.case.files.iter().sum::<u64>() <= 48 * MIB);
        }
    }
}
