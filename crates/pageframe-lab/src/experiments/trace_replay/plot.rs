//! Plot of `trace-replay`: the unusable free index at the costly order and
//! the pageblock order over the trace's time, one line per policy and order.

use super::rows::{FragmentationRow, FRAGMENTATION};
use crate::plots::{Plot, PlotKind, Series};
use crate::report::Report;

/// The plots of a `trace-replay` report.
pub fn plots(report: &Report) -> Vec<Plot> {
    let samples: Vec<FragmentationRow> = report.series_as(FRAGMENTATION).collect();
    let mut policies: Vec<&str> = Vec::new();
    for row in &samples {
        if !policies.contains(&row.policy.as_str()) {
            policies.push(&row.policy);
        }
    }
    let mut series = Vec::new();
    for order in FragmentationRow::ORDERS {
        for policy in &policies {
            let points = samples
                .iter()
                .filter(|row| row.policy == *policy)
                .filter_map(|row| Some((row.seconds, row.unusable(order)?)))
                .collect();
            series.push(Series {
                name: format!("{policy}, order {order}"),
                points,
                reference: false,
                colour: None,
            });
        }
    }
    vec![Plot {
        name: "unusable-index".into(),
        title: "Unusable free index during the replayed trace".into(),
        caption: "The share of free memory that cannot serve an order-3 or order-9 request, sampled while pageframe replays the trace, under each policy; the kernel's figure at the end is the unusable_index rows' kernel column.".into(),
        value_label: "unusable free index".into(),
        kind: PlotKind::Lines {
            x_label: "trace time (s)".into(),
            log_x: false,
            log_y: false,
            series,
            markers: Vec::new(),
        },
    }]
}
