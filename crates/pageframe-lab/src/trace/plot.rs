//! The fragmentation plot of a replay: the unusable free index and the
//! fragmentation index per order over the trace, one line per order, as a
//! self-contained SVG (two panels; the kernel's end-of-trace values, from
//! the host's buddyinfo, as dots at the right edge).

use super::host::{host_file, parse_buddyinfo, Moment};
use super::replay::FragSample;
use super::{ReplayReport, Trace, TraceError};
use std::fmt::Write;

const WIDTH: f64 = 900.0;
const PANEL_HEIGHT: f64 = 260.0;
const MARGIN: f64 = 50.0;

/// One panel: its title, which index of a sample it shows, and its range.
struct Panel {
    title: &'static str,
    series: fn(&FragSample) -> &Vec<i64>,
    low: f64,
    high: f64,
}

fn colour(order: usize) -> String {
    // Hue around the wheel, orders 0..=10.
    format!("hsl({},70%,40%)", order * 33 % 360)
}

/// Renders the plot of a replay of `trace`.
pub fn to_svg(trace: &Trace, report: &ReplayReport) -> String {
    let samples = &report.outcome.samples;
    let host_end = host_file(trace, Moment::End, "buddyinfo").map(|text| {
        let lines = parse_buddyinfo(&text);
        let nr_free = super::frag::sum_orders(lines.iter().map(|line| line.nr_free.as_slice()));
        FragSample::from_nr_free(0, 0, nr_free)
    });
    let mut svg = String::new();
    let height = 2.0 * PANEL_HEIGHT + 2.0 * MARGIN;
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\"><rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
    );
    let last_events = samples.last().map_or(1, |sample| sample.events.max(1)) as f64;
    let panels = [
        Panel {
            title: "unusable free index (pageframe lines, kernel dots at end)",
            series: |sample| &sample.unusable,
            low: 0.0,
            high: 1000.0,
        },
        Panel {
            title: "fragmentation index (-1 = request would succeed)",
            series: |sample| &sample.fragmentation,
            low: -1000.0,
            high: 1000.0,
        },
    ];
    for (index, panel) in panels.iter().enumerate() {
        let Panel {
            title,
            series,
            low,
            high,
        } = *panel;
        let top = MARGIN / 2.0 + index as f64 * (PANEL_HEIGHT + MARGIN);
        let left = MARGIN;
        let plot_width = WIDTH - 2.0 * MARGIN - 60.0;
        let x = |events: u64| left + events as f64 / last_events * plot_width;
        let y =
            |value: i64| top + 20.0 + (high - value as f64) / (high - low) * (PANEL_HEIGHT - 30.0);
        let _ = writeln!(
            svg,
            "<text x=\"{left}\" y=\"{}\">{title}</text>",
            top + 12.0
        );
        let _ = writeln!(
            svg,
            "<rect x=\"{left}\" y=\"{}\" width=\"{plot_width}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>",
            top + 20.0,
            PANEL_HEIGHT - 30.0
        );
        for (value, label) in [(high as i64, high / 1000.0), (low as i64, low / 1000.0)] {
            let _ = writeln!(svg, "<text x=\"4\" y=\"{}\">{label}</text>", y(value) + 4.0);
        }
        let orders = samples.first().map_or(0, |sample| series(sample).len());
        for order in 0..orders {
            let points: Vec<String> = samples
                .iter()
                .map(|sample| format!("{:.1},{:.1}", x(sample.events), y(series(sample)[order])))
                .collect();
            let _ = writeln!(
                svg,
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>",
                colour(order),
                points.join(" ")
            );
            if let Some(value) = host_end.as_ref().and_then(|host| series(host).get(order)) {
                let _ = writeln!(
                    svg,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"/>",
                    left + plot_width + 8.0,
                    y(*value),
                    colour(order)
                );
            }
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" fill=\"{}\">order {order}</text>",
                left + plot_width + 16.0,
                top + 32.0 + order as f64 * 16.0,
                colour(order)
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\">events replayed: {}</text>",
            left + plot_width / 2.0 - 60.0,
            top + PANEL_HEIGHT + 4.0,
            last_events as u64
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Writes the plot to `path`.
pub fn write_svg(
    trace: &Trace,
    report: &ReplayReport,
    path: &std::path::Path,
) -> Result<(), TraceError> {
    std::fs::write(path, to_svg(trace, report)).map_err(|err| TraceError::io(path, err))
}
