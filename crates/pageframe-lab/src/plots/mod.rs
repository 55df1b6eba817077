//! Plots of reports. A [`Plot`] is data, not drawing: an experiment's plot
//! function (`Experiment::plots`, in the experiment's `plot` module, or
//! [`generic`] for a report no experiment draws) reads the rows of its
//! [`Report`] and says which series to draw; [`render`] draws any plot as SVG or PNG with plotters.
//! The source document's figures are series of their own (drawn dashed),
//! so each plot shows ours beside the document's.
//!
//! Plot functions never fail: rows they cannot read are left out, and a plot
//! with nothing to draw is not returned.

pub mod generic;
pub mod render;

use crate::report::{Report, Row};

/// One plot of a report.
#[derive(Clone, Debug, PartialEq)]
pub struct Plot {
    /// File stem, unique within the experiment (`cycles-per-page`).
    pub name: String,
    /// Title drawn above the plot.
    pub title: String,
    /// One sentence under the plot in the HTML page: how to read it.
    pub caption: String,
    /// Label of the value axis.
    pub value_label: String,
    /// What to draw.
    pub kind: PlotKind,
}

/// The two shapes of plot the experiments need.
#[derive(Clone, Debug, PartialEq)]
pub enum PlotKind {
    /// Lines over a numeric x axis.
    Lines {
        /// Label of the x axis.
        x_label: String,
        /// Logarithmic (base 2) x axis, for batch sizes and the like.
        log_x: bool,
        /// Logarithmic (base 10) value axis, for values spanning decades.
        log_y: bool,
        /// The lines.
        series: Vec<Series>,
        /// Vertical markers: (x, label), e.g. an event in simulated time.
        markers: Vec<(f64, String)>,
    },
    /// Horizontal bars, one group per category, one bar per series.
    Bars {
        /// Category names, top to bottom.
        categories: Vec<String>,
        /// The bars of each category.
        series: Vec<BarSeries>,
    },
}

/// One line.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// (x, y), in x order.
    pub points: Vec<(f64, f64)>,
    /// A figure of the source document (drawn dashed).
    pub reference: bool,
    /// Palette index; `None` takes the series' position. Give ours and the
    /// document's figure of the same thing one colour.
    pub colour: Option<usize>,
}

/// One bar per category (or none, where the value is missing).
#[derive(Clone, Debug, PartialEq)]
pub struct BarSeries {
    /// Legend entry.
    pub name: String,
    /// One value per category.
    pub values: Vec<Option<f64>>,
    /// Optional (min, max) whiskers per category.
    pub ranges: Vec<Option<(f64, f64)>>,
    /// A figure of the source document (drawn hatched-light).
    pub reference: bool,
}

impl Plot {
    /// True when the plot has at least one value to draw.
    pub fn has_data(&self) -> bool {
        match &self.kind {
            PlotKind::Lines { series, .. } => series.iter().any(|line| !line.points.is_empty()),
            PlotKind::Bars { series, .. } => series
                .iter()
                .any(|bars| bars.values.iter().any(Option::is_some)),
        }
    }
}

/// A numeric cell as f64 (`None` for text, null or a missing column).
pub fn number(row: &Row, column: &str) -> Option<f64> {
    row.get(column)
        .and_then(serde_json::Value::as_f64)
        .filter(|value| value.is_finite())
}

/// A text cell.
pub fn text<'a>(row: &'a Row, column: &str) -> Option<&'a str> {
    row.get(column).and_then(serde_json::Value::as_str)
}

/// The plots of a report, whatever the experiment: `specific` (the
/// experiment's own) where they draw something, else [`generic`].
pub fn or_generic(report: &Report, specific: Vec<Plot>) -> Vec<Plot> {
    let plots: Vec<Plot> = specific.into_iter().filter(Plot::has_data).collect();
    if plots.is_empty() {
        generic::plots(report)
            .into_iter()
            .filter(Plot::has_data)
            .collect()
    } else {
        plots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(name: &str, rows: Vec<Row>) -> Report {
        Report {
            experiment: name.into(),
            seed: 1,
            scale: "quick".into(),
            rows,
            notes: Vec::new(),
        }
    }

    #[test]
    fn an_experiment_without_plots_gets_the_generic_one() {
        let rows = vec![
            Row::new()
                .with("step", "untar")
                .with("allocator", "zsmalloc")
                .with("overhead", 0.2)
                .with("reference", 0.38),
            Row::new()
                .with("step", "untar")
                .with("allocator", "afmalloc")
                .with("overhead", 0.04)
                .with("reference", serde_json::Value::Null),
        ];
        let plots = or_generic(&report("zram-untar", rows), Vec::new());
        assert_eq!(plots.len(), 1);
        let PlotKind::Bars { categories, series } = &plots[0].kind else {
            panic!("bars expected");
        };
        assert_eq!(categories, &["untar zsmalloc", "untar afmalloc"]);
        assert_eq!(series[0].values, vec![Some(0.2), Some(0.04)]);
        assert_eq!(series[1].values, vec![Some(0.38), None]);
        assert!(series[1].reference);
    }

    #[test]
    fn a_plot_function_with_nothing_to_draw_falls_back() {
        let rows = vec![Row::new().with("case", "x").with("value", 3)];
        let plots = crate::experiments::plots_of(&report("bulk", rows));
        assert_eq!(plots.len(), 1);
        assert_eq!(plots[0].name, "value");
        assert!(crate::experiments::plots_of(&report("empty", Vec::new())).is_empty());
    }
}
