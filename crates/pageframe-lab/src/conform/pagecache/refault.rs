//! Refault detection beside the live kernel: the last call of each
//! program run under a memory limit (`limited`), where the cgroup's
//! reclaim has left shadow entries, is compared by the outcome
//! mm/workingset.c decides for it: whether it refaulted, on at least half
//! of the pages it read, whether every refault, none or some were
//! activated, and whether any was restored as working set.

use super::cases::{Step, P};
use super::limited::{LimitedCase, MIB};
use super::memcg::LruCounts;
use super::CaseRun;
use crate::conform::{ConformRow, Verdict};

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
pub(super) fn compare(case: &LimitedCase, kernel: &CaseRun, model: &CaseRun) -> ConformRow {
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
}
