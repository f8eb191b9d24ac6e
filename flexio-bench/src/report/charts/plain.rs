//! A plain line chart for the scenarios with their own runners (server,
//! parallel flows, schedule grid): named series of (x, y) points with
//! any quantity on either axis, a legend panel beside the plot, and
//! categories instead of numbers on the x axis when given.

use std::io;
use std::path::Path;

use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::COLORS;

/// Width and height of a plain chart, in SVG pixels.
const SIZE: (u32, u32) = (1100, 560);

/// The legend panel right of the plot.
const LEGEND_WIDTH: u32 = 300;

/// One line of a [`LineChart`].
#[derive(Clone, Debug)]
pub struct PlainSeries {
    /// The legend's label.
    pub label: String,
    /// (x, y) points, drawn in this order.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (a reference, or the second kind of a pair).
    pub dashed: bool,
}

/// What to draw.
#[derive(Clone, Debug, Default)]
pub struct LineChart {
    /// Above the plot.
    pub title: String,
    /// Under the x axis.
    pub x_desc: String,
    /// Beside the y axis.
    pub y_desc: String,
    /// A log2 x axis.
    pub log_x: bool,
    /// The x values are sizes in bytes: labelled `4 KiB`, `1 MiB`.
    pub x_sizes: bool,
    /// A log10 y axis.
    pub log_y: bool,
    /// Category names for x = 0, 1, 2 … (the x axis then shows them).
    pub categories: Vec<String>,
    /// The lines.
    pub series: Vec<PlainSeries>,
    /// Per series (by index), vertical bars `(x, low, high)`: the spread
    /// of the rounds a point is the median of. Fewer entries than series
    /// leave the rest without.
    pub whiskers: Vec<Vec<(f64, f64, f64)>>,
    /// Markers only, not joined (categories are not a scale); the series
    /// are set side by side within each category so none hides another.
    pub markers_only: bool,
    /// A footnote (the machine, the command).
    pub footer: String,
}

/// Draws `chart` as SVG into `path`.
///
/// # Errors
/// Nothing to draw, or the file cannot be written.
pub fn write_line_chart(path: &Path, chart: &LineChart) -> io::Result<()> {
    let points: Vec<(f64, f64)> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    if points.is_empty() {
        return Err(io::Error::other(format!(
            "{}: no points to draw",
            path.display()
        )));
    }
    let range = |values: Vec<f64>, log: bool, from_zero: bool| {
        let positive: Vec<f64> = values.into_iter().filter(|v| !log || *v > 0.0).collect();
        let low = positive.iter().copied().fold(f64::INFINITY, f64::min);
        let high = positive.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if log {
            (low / 1.5)..(high * 1.5)
        } else {
            let low = if from_zero { low.min(0.0) } else { low };
            let pad = ((high - low) * 0.08).max(high.abs() * 0.05).max(1e-9);
            (if from_zero { low } else { low - pad })..(high + pad)
        }
    };
    let x_range = if chart.categories.is_empty() {
        range(points.iter().map(|p| p.0).collect(), chart.log_x, false)
    } else {
        -0.5..(chart.categories.len() as f64 - 0.5)
    };
    let whisker_ends = chart
        .whiskers
        .iter()
        .flatten()
        .flat_map(|&(_, low, high)| [low, high])
        .filter(|v| v.is_finite());
    let y_range = range(
        points.iter().map(|p| p.1).chain(whisker_ends).collect(),
        chart.log_y,
        true,
    );
    let mut svg = String::new();
    let y = y_range.clone();
    // A log y axis gets its labelled ticks as its key points: plotters' own
    // leave a range below its first whole decade unlabelled.
    let y_keys: Vec<f64> = super::ticks::log_ticks(y.start, y.end)
        .into_iter()
        .map(|(value, _)| value)
        .collect();
    let result = match (chart.log_x && chart.categories.is_empty(), chart.log_y) {
        (false, false) => draw(&mut svg, chart, x_range, y_range, y),
        (true, false) => draw(&mut svg, chart, x_range.log_scale().base(2.0), y_range, y),
        (false, true) => draw(
            &mut svg,
            chart,
            x_range,
            y_range.log_scale().with_key_points(y_keys),
            y,
        ),
        (true, true) => draw(
            &mut svg,
            chart,
            x_range.log_scale().base(2.0),
            y_range.log_scale().with_key_points(y_keys),
            y,
        ),
    };
    result.map_err(|e| io::Error::other(format!("drawing chart {}: {e}", path.display())))?;
    crate::report::files::write_replacing(path, svg.as_bytes())
}

fn draw<X, Y>(
    svg: &mut String,
    chart: &LineChart,
    x_spec: X,
    y_spec: Y,
    y_extent: std::ops::Range<f64>,
) -> Result<(), Box<dyn std::error::Error>>
where
    X: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    Y: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    X::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
    Y::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let whole = SVGBackend::with_string(svg, SIZE).into_drawing_area();
    whole.fill(&WHITE)?;
    let (plot_area, legend_area) = whole.split_horizontally(SIZE.0 - LEGEND_WIDTH);
    let (plot_area, footer_area) = plot_area.split_vertically(SIZE.1 - 24);
    footer_area.draw_text(
        &chart.footer,
        &("sans-serif", 12).into_font().color(&RGBColor(90, 90, 90)),
        (10, 4),
    )?;
    let mut context = ChartBuilder::on(&plot_area)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(76)
        .build_cartesian_2d(x_spec, y_spec)?;
    let categories = chart.categories.clone();
    let log_x = chart.log_x;
    let x_sizes = chart.x_sizes;
    let (x_low, x_high) = (context.x_range().start, context.x_range().end);
    let x_label = move |x: &f64| -> String {
        if categories.is_empty() {
            // A log2 axis: powers of two only (clients, flows, sizes), at
            // most twelve of them.
            let labelled = super::ticks::log2_ticks(x_low, x_high);
            if log_x && !labelled.iter().any(|t| (t - x).abs() <= 1e-9 * t) {
                return String::new();
            }
            if x_sizes && *x >= 1.0 {
                return crate::report::table::short_size(x.round() as u64);
            }
            return compact(*x);
        }
        let index = x.round();
        if (x - index).abs() > 1e-6 || index < 0.0 {
            return String::new();
        }
        categories.get(index as usize).cloned().unwrap_or_default()
    };
    // Counts (clients, files, flows) on a linear axis: whole ticks only.
    let whole_x = !log_x
        && chart.categories.is_empty()
        && chart
            .series
            .iter()
            .flat_map(|s| &s.points)
            .all(|p| p.0.fract() == 0.0);
    let x_label = move |x: &f64| -> String {
        if whole_x && x.fract().abs() > 1e-9 {
            return String::new();
        }
        x_label(x)
    };
    let log_y = chart.log_y;
    let (y_low, y_high) = (y_extent.start, y_extent.end);
    let y_label = move |y: &f64| -> String {
        // On a log axis plotters offers every multiple of each power of
        // ten: only those `log_ticks` picks are labelled.
        if log_y {
            return super::ticks::log_label(*y, y_low, y_high);
        }
        compact(*y)
    };
    let mut mesh = context.configure_mesh();
    mesh.x_desc(chart.x_desc.as_str())
        .y_desc(chart.y_desc.as_str())
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .light_line_style(TRANSPARENT);
    if !chart.categories.is_empty() {
        mesh.x_labels(chart.categories.len() * 2 + 1);
    } else if chart.log_x {
        mesh.x_labels(40);
    }
    if chart.log_y {
        let decades = (y_extent.end / y_extent.start).log10().ceil().max(1.0) as usize;
        mesh.y_labels(10 * (decades + 1));
    }
    mesh.draw()?;
    let count = chart.series.len();
    for (index, series) in chart.series.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        // Side by side within a category: at most 0.6 of its width.
        let shift = if chart.markers_only && !chart.categories.is_empty() && count > 1 {
            (index as f64 - (count - 1) as f64 / 2.0) * 0.6 / count as f64
        } else {
            0.0
        };
        let visible =
            |(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!chart.log_y || *y > 0.0);
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .copied()
            .filter(visible)
            .map(|(x, y)| (x + shift, y))
            .collect();
        let style = ShapeStyle::from(&color).stroke_width(2);
        if chart.markers_only {
            // No line: a category's value stands alone.
        } else if series.dashed {
            context.draw_series(std::iter::once(DashedPathElement::new(
                points.clone(),
                6,
                4,
                style,
            )))?;
        } else {
            context.draw_series(LineSeries::new(points.clone(), style))?;
        }
        if let Some(whiskers) = chart.whiskers.get(index) {
            let bars = whiskers
                .iter()
                .filter(|&&(x, low, high)| visible(&(x, low)) && visible(&(x, high)))
                .map(|&(x, low, high)| {
                    PathElement::new(vec![(x + shift, low), (x + shift, high)], style)
                });
            context.draw_series(bars)?;
        }
        if series.dashed {
            // The original's values: hollow squares, told apart from ours
            // even where no line joins them.
            context.draw_series(
                points
                    .iter()
                    .map(|&p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], style)),
            )?;
        } else {
            context.draw_series(
                points
                    .iter()
                    .map(|&p| Circle::new(p, 4, ShapeStyle::from(&color).filled())),
            )?;
        }
    }
    // A long label wraps onto more lines in a smaller font, so the panel
    // holds it whole.
    let mut y = 40;
    for (index, series) in chart.series.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        let line = vec![(10, y), (40, y)];
        let style = ShapeStyle::from(&color).stroke_width(2);
        if series.dashed {
            legend_area.draw(&DashedPathElement::new(line, 6, 4, style))?;
            legend_area
                .draw(&(EmptyElement::at((25, y)) + Rectangle::new([(-4, -4), (4, 4)], style)))?;
        } else {
            legend_area.draw(&PathElement::new(line, style))?;
            legend_area.draw(&Circle::new((25, y), 4, style.filled()))?;
        }
        let long = series.label.chars().count() > 30;
        let (size, step) = if long { (12, 15) } else { (14, 22) };
        let font = ("sans-serif", size).into_font();
        let lines = wrap(&series.label, if long { 38 } else { 30 });
        for (n, text) in lines.iter().enumerate() {
            legend_area.draw_text(text, &font.color(&BLACK), (48, y - 7 + n as i32 * step))?;
        }
        y += 22.max(lines.len() as i32 * step + 7);
    }
    whole.present()?;
    Ok(())
}

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// A tick label: integers plainly, small values with up to three
/// significant decimals.
fn compact(value: f64) -> String {
    if value == 0.0 {
        return "0".into();
    }
    let decimals = if value.abs() >= 100.0 {
        0
    } else if value.abs() >= 1.0 {
        2
    } else {
        3
    };
    super::line_chart::trimmed(value, decimals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_with_categories_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.svg");
        let chart = LineChart {
            title: "t".into(),
            categories: vec!["idle".into(), "loaded".into()],
            series: vec![PlainSeries {
                label: "a".into(),
                points: vec![(0.0, 1.0), (1.0, 3.0)],
                dashed: true,
            }],
            ..LineChart::default()
        };
        write_line_chart(&path, &chart).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("loaded") && svg.contains("<svg"));
        let empty = LineChart::default();
        assert!(write_line_chart(&dir.path().join("e.svg"), &empty).is_err());
    }

    /// The texts of an SVG's `<text>` elements.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                Some(
                    t.split_once('>')?
                        .1
                        .split_once("</text>")?
                        .0
                        .trim()
                        .to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn a_log_axis_labels_values_below_its_first_whole_decade_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.svg");
        let chart = LineChart {
            title: "t".into(),
            log_y: true,
            series: vec![PlainSeries {
                label: "a".into(),
                points: vec![(1.0, 30.0), (2.0, 40.0), (3.0, 700.0)],
                dashed: false,
            }],
            ..LineChart::default()
        };
        write_line_chart(&path, &chart).unwrap();
        let texts = texts(&std::fs::read_to_string(&path).unwrap());
        for label in ["50", "100", "200", "500", "1000"] {
            let count = texts.iter().filter(|t| t.as_str() == label).count();
            assert_eq!(count, 1, "{label} in {texts:?}");
        }
    }

    #[test]
    fn a_count_axis_has_whole_ticks_and_whiskers_reach_past_the_points() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts.svg");
        let chart = LineChart {
            title: "t".into(),
            series: vec![PlainSeries {
                label: "a".into(),
                points: vec![(1.0, 10.0), (2.0, 12.0), (3.0, 11.0), (4.0, 13.0)],
                dashed: false,
            }],
            whiskers: vec![vec![(2.0, 5.0, 40.0)]],
            ..LineChart::default()
        };
        write_line_chart(&path, &chart).unwrap();
        let texts = texts(&std::fs::read_to_string(&path).unwrap());
        assert!(texts.iter().any(|t| t == "2"), "{texts:?}");
        assert!(!texts.iter().any(|t| t == "1.5" || t == "2.5"), "{texts:?}");
        // The y axis reaches the whisker's top, not only the points'.
        assert!(
            texts
                .iter()
                .any(|t| t.parse::<f64>().is_ok_and(|v| v >= 35.0)),
            "{texts:?}"
        );
    }

    #[test]
    fn a_long_legend_label_wraps_between_words_and_keeps_every_word() {
        let label = "mmap / read-write, 128 MiB cgroup (ours) against the original";
        let lines = wrap(label, 38);
        assert!(lines.len() > 1 && lines.iter().all(|l| l.chars().count() <= 38));
        assert_eq!(lines.join(" "), label);
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(compact(1500.0), "1500");
        assert_eq!(compact(2.5), "2.5");
        assert_eq!(compact(0.125), "0.125");
    }
}
