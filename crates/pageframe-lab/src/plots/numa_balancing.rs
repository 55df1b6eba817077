//! Plot of `numa-balancing`: the pmbench score change after the memory
//! eater exits, per policy, beside numa-balancing-bound-nodes.txt's +17.5%.

use super::{number, text, BarSeries, Plot, PlotKind};
use crate::report::{Report, Row};

/// The plots of a `numa-balancing` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let rows: Vec<&Row> = report
        .rows
        .iter()
        .filter(|row| number(row, "improvement").is_some())
        .collect();
    let label = |row: &Row| {
        let policy = text(row, "policy").unwrap_or("?");
        match number(row, "numa_balancing") {
            Some(sysctl) => format!("{policy}, sysctl={sysctl}"),
            None => policy.to_string(),
        }
    };
    let percent = |value: Option<f64>| value.map(|value| value * 100.0);
    vec![Plot {
        name: "improvement".into(),
        title: "pmbench score after the eater exits".into(),
        caption: "Change of the summed pmbench score from before the memory eater on node 3 exits to after, per policy and kernel.numa_balancing; pale: the document's +17.5% for MPOL_F_NUMA_BALANCING.".into(),
        value_label: "score change (%)".into(),
        kind: PlotKind::Bars {
            categories: rows.iter().map(|row| label(row)).collect(),
            series: vec![
                BarSeries {
                    name: "pageframe".into(),
                    values: rows.iter().map(|row| percent(number(row, "improvement"))).collect(),
                    ranges: vec![None; rows.len()],
                    reference: false,
                },
                BarSeries {
                    name: "document".into(),
                    values: rows
                        .iter()
                        .map(|row| {
                            let flagged = text(row, "policy").is_some_and(|p| p.contains("numa_balancing"))
                                && number(row, "numa_balancing") != Some(0.0);
                            percent(number(row, "reference_improvement").filter(|_| flagged))
                        })
                        .collect(),
                    ranges: vec![None; rows.len()],
                    reference: true,
                },
            ],
        },
    }]
}
