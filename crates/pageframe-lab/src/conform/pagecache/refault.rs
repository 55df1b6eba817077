//! Refault detection beside the live kernel: short programs run in a
//! memory cgroup limited to a few MiB, so that the kernel reclaims the
//! cgroup's page cache and leaves shadow entries, and on a pageframe
//! machine of that size. The two reclaim differently (the kernel per
//! cgroup, in charge batches; pageframe per node, at the watermarks), so
//! the pages evicted, and with them the counts, differ; what the rows
//! compare is the outcome mm/workingset.c decides for the program's last
//! call: whether it refaulted, on at least half of the pages it read,
//! whether every refault, none or some were activated, and whether any
//! was restored as working set.

use super::cases::{Case, Step, P};
use super::memcg::LruCounts;
use super::CaseRun;
use crate::conform::{ConformRow, Verdict};

/// A program, the memory its cgroup (and pageframe's machine) has, and
/// the pages its last call reads.
pub(super) struct RefaultCase {
    pub(super) case: Case<'static>,
    pub(super) limit_bytes: u64,
}

const MIB: u64 = 1 << 20;

use Step::{DontNeed, Read, Write};

/// The programs: a file read back soon after a stream pushed it out while
/// another stays active; a file twice the memory read twice; an evicted
/// file overwritten; an evicted file dropped, then read.
pub(super) const REFAULT_CASES: &[RefaultCase] = &[
    RefaultCase {
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
    RefaultCase {
        case: Case {
            name: "refault: a file twice the memory read twice",
            files: &[32 * MIB],
            steps: &[Read(0, 0, 32 * MIB), Read(0, 0, 32 * MIB)],
        },
        limit_bytes: 16 * MIB,
    },
    RefaultCase {
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
    RefaultCase {
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
];

/// The refault counters' change over the program's last call.
fn last_call(run: &CaseRun) -> (u64, u64, u64) {
    let after = run.steps.last().map_or(run.baseline, |&(_, counts)| counts);
    let before = match run.steps.len() {
        0 | 1 => run.baseline,
        n => run.steps[n - 2].1,
    };
    let delta = |field: fn(&LruCounts) -> u64| field(&after).saturating_sub(field(&before));
    (
        delta(|c| c.refault_file),
        delta(|c| c.activate_file),
        delta(|c| c.restore_file),
    )
}

/// The decision the counts show, for a call that read `pages` pages.
fn outcome((refaults, activated, restored): (u64, u64, u64), pages: u64) -> String {
    if refaults == 0 {
        return "no refault".into();
    }
    let share = if 2 * refaults >= pages {
        "at least half"
    } else {
        "under half"
    };
    // A host's activations can include other cgroups' (cgroup v1 counts
    // them machine-wide), and the kernel tests each refault against the
    // memory cgroup's active list as its statistics last flushed it
    // (workingset_test_recent() only calls
    // mem_cgroup_flush_stats_ratelimited(): the periodic flusher runs
    // every 2 s), so a long read's refaults can meet a stale count: 90% or
    // more activated is one outcome with every one (measured on 6.18 on a
    // loaded host: 999 of 1024).
    let activated = match activated {
        0 => "none activated",
        n if 10 * n >= 9 * refaults => "at least 90% activated",
        _ => "some activated",
    };
    let restored = if restored == 0 {
        "none restored"
    } else {
        "some restored"
    };
    format!("refaults on {share} of the pages read, {activated}, {restored}")
}

/// The row of one program: the kernel's and pageframe's outcome of its
/// last call, with the counts behind each.
pub(super) fn compare(case: &RefaultCase, kernel: &CaseRun, model: &CaseRun) -> ConformRow {
    let pages = case.case.steps.last().map_or(0, Step::buffer_bytes) / P;
    let describe = |run: &CaseRun| {
        let counts = last_call(run);
        let text = outcome(counts, pages);
        let (refaults, activated, restored) = counts;
        let shown =
            format!("{text} ({refaults} refaults, {activated} activated, {restored} restored)");
        (text, shown)
    };
    let ((kernel_outcome, kernel_shown), (model_outcome, model_shown)) =
        (describe(kernel), describe(model));
    let last = case.case.steps.len();
    ConformRow {
        case: format!(
            "{} ({} MiB) #{last} {}",
            case.case.name,
            case.limit_bytes / MIB,
            case.case.steps[last - 1].label()
        ),
        kernel: kernel_shown,
        pageframe: model_shown,
        verdict: if kernel_outcome == model_outcome {
            Verdict::Match
        } else {
            Verdict::Diff
        },
        listed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outcome names the rule's decision, not the counts.
    #[test]
    fn outcomes_classify_the_counts() {
        assert_eq!(outcome((0, 5, 0), 100), "no refault");
        // (refaults, activated, restored), pages read: share, activated, restored.
        let cases = [
            ((40, 40, 0), 100, "under half", "at least 90%", "none"),
            ((60, 0, 0), 100, "at least half", "none", "none"),
            ((60, 70, 3), 100, "at least half", "at least 90%", "some"),
            ((60, 10, 0), 100, "at least half", "some", "none"),
            (
                (1024, 999, 0),
                1024,
                "at least half",
                "at least 90%",
                "none",
            ),
            ((1024, 921, 0), 1024, "at least half", "some", "none"),
        ];
        for (counts, pages, share, activated, restored) in cases {
            assert_eq!(
                outcome(counts, pages),
                format!(
                    "refaults on {share} of the pages read, {activated} activated, {restored} restored"
                ),
                "{counts:?} of {pages}"
            );
        }
    }

    /// Every program ends with a call that reads or writes, and fits the
    /// suite's 64 MiB scratch file system.
    #[test]
    fn programs_end_with_a_call_that_moves_pages_and_fit_the_scratch_fs() {
        for case in REFAULT_CASES {
            assert!(case.case.steps.last().unwrap().buffer_bytes() > 0);
            assert!(case.case.files.iter().sum::<u64>() <= 48 * MIB);
        }
    }
}
