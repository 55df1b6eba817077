//! The rows of `numa-balancing`, typed: one struct per kind of row, the one
//! home of its column names (field names, in column order), written by the
//! run and read back by the headline and the plots.

use serde::{Deserialize, Serialize};

/// Which run a row belongs to: the first two columns of every row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// The memory policy (`bind`, `bind+numa_balancing`).
    pub policy: String,
    /// `kernel.numa_balancing`.
    pub numa_balancing: u64,
}

impl Run {
    /// The run's name in legends and categories.
    pub fn label(&self) -> String {
        format!("{}, sysctl={}", self.policy, self.numa_balancing)
    }

    /// The run that the document's +17.5% is about: the flag, balancing on.
    pub fn is_balanced(&self) -> bool {
        self.policy.contains("numa_balancing") && self.numa_balancing != 0
    }
}

/// One run's result: the score before and after the eater exits, and how
/// much balancing moved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// The run.
    #[serde(flatten)]
    pub run: Run,
    /// Summed score before the exit, M accesses per simulated s.
    pub score_before: f64,
    /// Summed score after the exit.
    pub score_after: f64,
    /// `score_after / score_before - 1`.
    pub improvement: f64,
    /// The document's improvement (+17.5%).
    pub reference_improvement: f64,
    /// The improvement over the last 10 s.
    pub improvement_last_10s: f64,
    /// Share of the node-3 processes' accesses that go to node 1, before.
    pub remote_before: f64,
    /// The same share after.
    pub remote_after: f64,
    /// Seconds after the exit until that share is below 5%; `None` when it
    /// never is.
    pub settle_s: Option<f64>,
    /// `numa_pages_migrated`.
    pub pages_migrated: u64,
    /// `numa_hint_faults`.
    pub hint_faults: u64,
    /// `numa_pte_updates`.
    pub pte_updates: u64,
    /// `pgmigrate_fail`.
    pub pgmigrate_fail: u64,
    /// When the eater exited, simulated s.
    pub eater_exit_s: f64,
}

/// One sample of a run's `timeline` series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineRow {
    /// The run.
    #[serde(flatten)]
    pub run: Run,
    /// End of the sample window, simulated s.
    pub t_s: f64,
    /// Summed score in the window, M accesses per simulated s.
    pub score: f64,
    /// Share of the node-3 processes' accesses that go to node 1.
    pub remote: f64,
    /// The processes' pages on each node at the end of the window: columns
    /// `pages_node0`, `pages_node1`, ...
    #[serde(flatten, with = "pages_per_node")]
    pub pages_node: Vec<u64>,
    /// `numa_pages_migrated` so far.
    pub pages_migrated: u64,
}

/// The `pages_node<N>` columns of a [`TimelineRow`]: node `N`'s pages in
/// column `pages_node<N>`, nodes in order; read back from whichever such
/// columns a row has (other columns are left alone).
mod pages_per_node {
    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    const PREFIX: &str = "pages_node";

    pub fn serialize<S: Serializer>(pages: &[u64], serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(pages.len()))?;
        for (node, pages) in pages.iter().enumerate() {
            map.serialize_entry(&format!("{PREFIX}{node}"), pages)?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u64>, D::Error> {
        deserializer.deserialize_map(NodeColumns)
    }

    struct NodeColumns;

    impl<'de> Visitor<'de> for NodeColumns {
        type Value = Vec<u64>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
            formatter.write_str("pages_node<N> columns")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<u64>, A::Error> {
            let mut pages: Vec<Option<u64>> = Vec::new();
            while let Some(column) = map.next_key::<String>()? {
                let node = column
                    .strip_prefix(PREFIX)
                    .and_then(|node| node.parse::<usize>().ok())
                    .filter(|node| *node < pageframe::MAX_NUMNODES);
                let Some(node) = node else {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                };
                if pages.len() <= node {
                    pages.resize(node + 1, None);
                }
                pages[node] = Some(map.next_value()?);
            }
            pages
                .into_iter()
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| serde::de::Error::custom("a gap in the pages_node<N> columns"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Row;

    #[test]
    fn a_timeline_row_puts_its_nodes_in_place_and_reads_back() {
        let sample = TimelineRow {
            run: Run {
                policy: "bind".into(),
                numa_balancing: 1,
            },
            t_s: 2.0,
            score: 1.5,
            remote: 0.25,
            pages_node: vec![0, 7, 0, 3],
            pages_migrated: 9,
        };
        let row = Row::series_sample("timeline", &sample).unwrap();
        let columns: Vec<&str> = row.cells().iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            columns,
            [
                "series",
                "policy",
                "numa_balancing",
                "t_s",
                "score",
                "remote",
                "pages_node0",
                "pages_node1",
                "pages_node2",
                "pages_node3",
                "pages_migrated"
            ]
        );
        assert_eq!(row.to_typed::<TimelineRow>(), Some(sample));
        let gap = Row::new()
            .with("policy", "bind")
            .with("numa_balancing", 1)
            .with("t_s", 2.0)
            .with("score", 1.5)
            .with("remote", 0.25)
            .with("pages_node1", 3)
            .with("pages_migrated", 0);
        assert_eq!(gap.to_typed::<TimelineRow>(), None);
    }
}
