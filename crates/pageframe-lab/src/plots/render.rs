//! Draws a [`Plot`] with plotters, as an SVG string or a PNG file. Text is
//! laid out with DejaVu Sans, embedded (assets/DejaVuSans.ttf, licence
//! beside it), so that PNGs need no system font libraries; SVGs name the
//! font family and let the viewer draw it.
//!
//! Styles: ours are solid lines with points or filled bars; the source
//! document's figures are dashed lines or pale bars, in the same palette.

use super::{BarSeries, Plot, PlotKind, Series};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// Width and height of every plot, in pixels.
pub const SIZE: (u32, u32) = (900, 520);

const FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

/// A distinct colour per series, readable on white.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
];

fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The font is ours and valid; a failure would only lose text.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// The plot as an SVG document.
pub fn to_svg(plot: &Plot) -> Result<String, String> {
    register_font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(plot, &root)?;
        root.present().map_err(|err| err.to_string())?;
    }
    Ok(svg)
}

/// Draws the plot into a PNG file.
pub fn write_png(plot: &Plot, path: &Path) -> Result<(), String> {
    register_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    draw(plot, &root)?;
    root.present().map_err(|err| err.to_string())
}

/// The largest magnitude a plotted value may have: the axes reach a few
/// dozen times the data's extent, which must stay finite (plotters looks
/// for the key points of an infinite axis forever).
const MAX_PLOTTED: f64 = 1e300;

/// Every value the plot draws (points, markers, bars and whiskers).
fn plotted_values(kind: &PlotKind) -> Vec<f64> {
    match kind {
        PlotKind::Lines {
            series, markers, ..
        } => series
            .iter()
            .flat_map(|series| series.points.iter().flat_map(|(x, y)| [*x, *y]))
            .chain(markers.iter().map(|(x, _)| *x))
            .collect(),
        PlotKind::Bars { series, .. } => series
            .iter()
            .flat_map(|bars| {
                bars.values.iter().flatten().copied().chain(
                    bars.ranges
                        .iter()
                        .flatten()
                        .flat_map(|(min, max)| [*min, *max]),
                )
            })
            .collect(),
    }
}

fn draw<DB: DrawingBackend>(plot: &Plot, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
    if let Some(value) = plotted_values(&plot.kind)
        .into_iter()
        .find(|value| value.is_nan() || value.abs() > MAX_PLOTTED)
    {
        return Err(format!(
            "plot {}: the value {value} is past what an axis can show (±{MAX_PLOTTED:e})",
            plot.name
        ));
    }
    root.fill(&WHITE).map_err(|err| err.to_string())?;
    match &plot.kind {
        PlotKind::Lines {
            x_label,
            log_x,
            log_y,
            series,
            markers,
        } => draw_lines(plot, root, x_label, (*log_x, *log_y), series, markers),
        PlotKind::Bars { categories, series } => draw_bars(plot, root, categories, series),
    }
}

/// Numbers as people write them on axes: no trailing `.0`, thousands short.
pub fn short_number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        format!("{}M", trim(value / 1e6))
    } else if magnitude >= 1e4 {
        format!("{}k", trim(value / 1e3))
    } else {
        trim(value)
    }
}

fn trim(value: f64) -> String {
    let text = if value.abs() < 1.0 {
        format!("{value:.3}")
    } else {
        format!("{value:.2}")
    };
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Lines with at most this many points get a dot on each.
const DOTTED_POINTS: usize = 40;

fn draw_lines<DB: DrawingBackend>(
    plot: &Plot,
    root: &DrawingArea<DB, Shift>,
    x_label: &str,
    (log_x, log_y): (bool, bool),
    series: &[Series],
    markers: &[(f64, String)],
) -> Result<(), String> {
    let points = || series.iter().flat_map(|line| line.points.iter());
    let x_min = points().map(|point| point.0).fold(f64::INFINITY, f64::min);
    let x_max = points()
        .map(|point| point.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let y_max = points().map(|point| point.1).fold(0.0, f64::max);
    let y_min = points().map(|point| point.1).fold(0.0, f64::min);
    let (x_min, x_max) = if x_min < x_max {
        (x_min, x_max)
    } else {
        (x_min - 1.0, x_min + 1.0)
    };
    // Headroom above the lines for the legend in the upper right corner.
    let y_range = y_min * 1.1..(y_max * 1.4).max(1e-9);
    let positive_min = points()
        .map(|point| point.1)
        .filter(|y| *y > 0.0)
        .fold(f64::INFINITY, f64::min);
    let log_y = log_y && y_min >= 0.0 && positive_min.is_finite();
    let log_y_range = (positive_min * 0.7)..(y_max * 40.0);
    let log_x = log_x && x_min > 0.0;
    let pad = (x_max - x_min) * 0.02;
    let x_range = x_min - pad..x_max + pad;
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(&plot.title, (FAMILY, 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64);
    let log2_x = || (x_min..x_max).log_scale().base(2.0);
    let log10_y = || log_y_range.clone().log_scale();
    match (log_x, log_y) {
        (true, true) => {
            let chart = builder.build_cartesian_2d(log2_x(), log10_y());
            finish_lines(
                chart.map_err(|err| err.to_string())?,
                plot,
                x_label,
                series,
                markers,
            )
        }
        (true, false) => {
            let chart = builder.build_cartesian_2d(log2_x(), y_range);
            finish_lines(
                chart.map_err(|err| err.to_string())?,
                plot,
                x_label,
                series,
                markers,
            )
        }
        (false, true) => {
            let chart = builder.build_cartesian_2d(x_range, log10_y());
            finish_lines(
                chart.map_err(|err| err.to_string())?,
                plot,
                x_label,
                series,
                markers,
            )
        }
        (false, false) => {
            let chart = builder.build_cartesian_2d(x_range, y_range);
            finish_lines(
                chart.map_err(|err| err.to_string())?,
                plot,
                x_label,
                series,
                markers,
            )
        }
    }
}

fn finish_lines<'a, DB, X, Y>(
    mut chart: ChartContext<'a, DB, Cartesian2d<X, Y>>,
    plot: &Plot,
    x_label: &str,
    series: &[Series],
    markers: &[(f64, String)],
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    // Whole-number x values (threads, batch sizes) get no ticks between.
    let whole_x = series
        .iter()
        .flat_map(|line| line.points.iter())
        .all(|point| point.0.fract() == 0.0);
    let x_format = |x: &f64| {
        if whole_x && (x - x.round()).abs() > 1e-9 {
            String::new()
        } else {
            short_number(*x)
        }
    };
    let y_format = |y: &f64| short_number(*y);
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(&plot.value_label)
        .x_label_formatter(&x_format)
        .y_label_formatter(&y_format)
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|err| err.to_string())?;
    let y_range = chart.y_range();
    for (x, label) in markers {
        let style = ShapeStyle::from(&BLACK.mix(0.6)).stroke_width(1);
        chart
            .draw_series(DashedLineSeries::new(
                [(*x, y_range.start), (*x, y_range.end)],
                6,
                4,
                style,
            ))
            .map_err(|err| err.to_string())?;
        chart
            .draw_series([Text::new(
                label.clone(),
                (*x, y_range.end),
                (FAMILY, 13).into_font().color(&BLACK),
            )])
            .map_err(|err| err.to_string())?;
    }
    for (index, line) in series.iter().enumerate() {
        let colour = colour(line.colour.unwrap_or(index));
        let style = ShapeStyle::from(&colour).stroke_width(2);
        let legend_style = style;
        if line.reference {
            chart
                .draw_series(DashedLineSeries::new(line.points.clone(), 8, 5, style))
                .map_err(|err| err.to_string())?
                .label(&line.name)
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (7, 0)], legend_style)
                        + PathElement::new(vec![(12, 0), (20, 0)], legend_style)
                });
        } else {
            chart
                .draw_series(LineSeries::new(line.points.clone(), style))
                .map_err(|err| err.to_string())?
                .label(&line.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], legend_style));
        }
        // Dots mark measured points; a dense line (a time series) is its
        // own mark, and dots would only thicken it.
        let dots = if line.points.len() <= DOTTED_POINTS {
            &line.points[..]
        } else {
            &[]
        };
        chart
            .draw_series(
                dots.iter()
                    .map(|point| Circle::new(*point, 3, colour.filled())),
            )
            .map_err(|err| err.to_string())?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .draw()
        .map_err(|err| err.to_string())
}

fn draw_bars<DB: DrawingBackend>(
    plot: &Plot,
    root: &DrawingArea<DB, Shift>,
    categories: &[String],
    series: &[BarSeries],
) -> Result<(), String> {
    let count = categories.len().max(1);
    let high = series
        .iter()
        .flat_map(|bars| {
            bars.values
                .iter()
                .flatten()
                .copied()
                .chain(bars.ranges.iter().flatten().map(|range| range.1))
        })
        .fold(0.0, f64::max);
    let low = series
        .iter()
        .flat_map(|bars| bars.values.iter().flatten().copied())
        .fold(0.0, f64::min);
    // Category `at` sits at y = count - 1 - at, so the first is on top.
    let label_width = categories
        .iter()
        .map(|name| name.chars().count())
        .max()
        .unwrap_or(4) as u32
        * 8
        + 16;
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, (FAMILY, 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(label_width.min(SIZE.0 / 3))
        .build_cartesian_2d(
            // Room on the right for the legend, clear of the longest bar.
            low * 1.15..(high * 1.45).max(1e-9),
            -0.5..count as f64 - 0.5,
        )
        .map_err(|err| err.to_string())?;
    let category_of = |y: &f64| {
        if (y - y.round()).abs() > 0.01 {
            return String::new();
        }
        let at = count as i64 - 1 - y.round() as i64;
        usize::try_from(at)
            .ok()
            .and_then(|at| categories.get(at).cloned())
            .unwrap_or_default()
    };
    let x_format = |x: &f64| short_number(*x);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(count)
        .x_desc(&plot.value_label)
        .x_label_formatter(&x_format)
        .y_label_formatter(&category_of)
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|err| err.to_string())?;
    let groups = series.len().max(1) as f64;
    let thickness = 0.8 / groups;
    for (index, bars) in series.iter().enumerate() {
        let colour = colour(index);
        let fill = if bars.reference {
            colour.mix(0.35).filled()
        } else {
            colour.filled()
        };
        let band = |at: usize| {
            let centre = (count - 1 - at) as f64;
            let top = centre + 0.4 - thickness * index as f64;
            (top - thickness * 0.92, top)
        };
        let rectangles: Vec<Rectangle<(f64, f64)>> = bars
            .values
            .iter()
            .enumerate()
            .filter_map(|(at, value)| {
                let (bottom, top) = band(at);
                value.map(|value| Rectangle::new([(0.0, bottom), (value, top)], fill))
            })
            .collect();
        chart
            .draw_series(rectangles)
            .map_err(|err| err.to_string())?
            .label(&bars.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], fill));
        let whisker = ShapeStyle::from(&BLACK).stroke_width(1);
        for (at, range) in bars.ranges.iter().enumerate() {
            if let Some((min, max)) = range {
                let (bottom, top) = band(at);
                let middle = (bottom + top) / 2.0;
                let quarter = (top - bottom) / 4.0;
                let lines = [
                    vec![(*min, middle), (*max, middle)],
                    vec![(*min, middle - quarter), (*min, middle + quarter)],
                    vec![(*max, middle - quarter), (*max, middle + quarter)],
                ];
                chart
                    .draw_series(
                        lines
                            .into_iter()
                            .map(|line| PathElement::new(line, whisker)),
                    )
                    .map_err(|err| err.to_string())?;
            }
        }
        let labels: Vec<Text<'_, (f64, f64), String>> = bars
            .values
            .iter()
            .enumerate()
            .filter_map(|(at, value)| {
                let (bottom, top) = band(at);
                value.map(|value| {
                    let end = bars
                        .ranges
                        .get(at)
                        .copied()
                        .flatten()
                        .map_or(value, |range| range.1.max(value));
                    Text::new(
                        format!(" {}", short_number(value)),
                        (end, top - (top - bottom) * 0.15),
                        (FAMILY, 12).into_font().color(&BLACK),
                    )
                })
            })
            .collect();
        chart.draw_series(labels).map_err(|err| err.to_string())?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .draw()
        .map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Plot {
        Plot {
            name: "test".into(),
            title: "Cycles per page".into(),
            caption: String::new(),
            value_label: "cycles".into(),
            kind: PlotKind::Lines {
                x_label: "batch".into(),
                log_x: true,
                log_y: true,
                series: vec![
                    Series {
                        name: "ours".into(),
                        points: vec![(1.0, 60.0), (32.0, 40.0), (256.0, 45.0)],
                        reference: false,
                        colour: None,
                    },
                    Series {
                        name: "kernel".into(),
                        points: vec![(1.0, 128.0), (32.0, 85.0), (256.0, 115.0)],
                        reference: true,
                        colour: Some(0),
                    },
                ],
                markers: vec![(8.0, "event".into())],
            },
        }
    }

    fn bars() -> Plot {
        Plot {
            name: "bars".into(),
            title: "Conflict rate".into(),
            caption: String::new(),
            value_label: "rate".into(),
            kind: PlotKind::Bars {
                categories: vec!["fresh".into(), "aged+shuffle".into()],
                series: vec![
                    BarSeries {
                        name: "ours".into(),
                        values: vec![Some(0.08), Some(0.12)],
                        ranges: vec![Some((0.07, 0.09)), None],
                        reference: false,
                    },
                    BarSeries {
                        name: "document".into(),
                        values: vec![Some(0.08), None],
                        ranges: vec![None, None],
                        reference: true,
                    },
                ],
            },
        }
    }

    #[test]
    fn svg_has_title_legend_and_axis_text() {
        for (plot, words) in [
            (lines(), ["Cycles per page", "kernel", "batch"]),
            (bars(), ["Conflict rate", "document", "aged+shuffle"]),
        ] {
            let svg = to_svg(&plot).unwrap();
            assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
            for word in words {
                assert!(svg.contains(word), "{word} missing");
            }
        }
    }

    #[test]
    fn png_is_written() {
        let dir = std::env::temp_dir().join(format!("pageframe-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for plot in [lines(), bars()] {
            let path = dir.join(format!("{}.png", plot.name));
            write_png(&plot, &path).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(&bytes[1..4], b"PNG");
            assert!(bytes.len() > 5_000, "{} bytes", bytes.len());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A value no axis can hold (plotters looped forever on the axis of
    /// a bar of 1e308) is an error naming the plot, not a hang.
    #[test]
    fn values_past_an_axis_are_refused() {
        for value in [1e308, -1e308, f64::INFINITY, f64::NAN] {
            let mut plot = bars();
            if let PlotKind::Bars { series, .. } = &mut plot.kind {
                series[0].values[0] = Some(value);
            }
            let err = to_svg(&plot).unwrap_err();
            assert!(err.contains("past what an axis can show"), "{err}");
            let mut plot = lines();
            if let PlotKind::Lines { series, .. } = &mut plot.kind {
                series[0].points[0].1 = value;
            }
            assert!(to_svg(&plot).is_err());
        }
        assert!(to_svg(&bars()).is_ok());
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short_number(32.0), "32");
        assert_eq!(short_number(0.126), "0.126");
        assert_eq!(short_number(0.1), "0.1");
        assert_eq!(short_number(25_000.0), "25k");
        assert_eq!(short_number(3_500_000.0), "3.5M");
    }
}
