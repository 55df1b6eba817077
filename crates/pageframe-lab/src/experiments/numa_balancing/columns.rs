//! The row fields (columns) of `numa-balancing`: one home for each name, used by
//! the run that writes the rows and by the headline and plots that read
//! them.

/// Column `policy`.
pub const POLICY: &str = "policy";
/// Column `numa_balancing`.
pub const NUMA_BALANCING: &str = "numa_balancing";
/// Column `score_before`.
pub const SCORE_BEFORE: &str = "score_before";
/// Column `score_after`.
pub const SCORE_AFTER: &str = "score_after";
/// Column `improvement`.
pub const IMPROVEMENT: &str = "improvement";
/// Column `reference_improvement`.
pub const REFERENCE_IMPROVEMENT: &str = "reference_improvement";
/// Column `improvement_last_10s`.
pub const IMPROVEMENT_LAST_10S: &str = "improvement_last_10s";
/// Column `remote_before`.
pub const REMOTE_BEFORE: &str = "remote_before";
/// Column `remote_after`.
pub const REMOTE_AFTER: &str = "remote_after";
/// Column `settle_s`.
pub const SETTLE_S: &str = "settle_s";
/// Column `pages_migrated`.
pub const PAGES_MIGRATED: &str = "pages_migrated";
/// Column `hint_faults`.
pub const HINT_FAULTS: &str = "hint_faults";
/// Column `pte_updates`.
pub const PTE_UPDATES: &str = "pte_updates";
/// Column `pgmigrate_fail`.
pub const PGMIGRATE_FAIL: &str = "pgmigrate_fail";
/// Column `eater_exit_s`.
pub const EATER_EXIT_S: &str = "eater_exit_s";
/// Column `t_s`.
pub const T_S: &str = "t_s";
/// Column `score`.
pub const SCORE: &str = "score";
/// Column `remote`.
pub const REMOTE: &str = "remote";

/// Column `pages_node<node>` of the timeline series: the processes' pages on
/// that node.
pub fn pages_node(node: impl std::fmt::Display) -> String {
    format!("pages_node{node}")
}
