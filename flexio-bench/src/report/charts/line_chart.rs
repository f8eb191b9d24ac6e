//! Drawing a line chart: the axes (linear or logarithmic, the throughput
//! unit, which ticks are labelled), the series with their whiskers and
//! limits, and the legend panel beside the plot.

use std::io;
use std::ops::Range;
use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::legend::{self, Entry, Line};
use super::{Along, Chart, CHART_SIZE, LEGEND_WIDTH, RATE_LOG_FROM, SIZE_LOG_FROM};
use crate::model::ContenderKind;
use crate::report::table::short_size;

/// Where a set of positive values lies on an axis.
pub(super) struct Extent {
    pub(super) range: Range<f64>,
    pub(super) log: bool,
}

/// Linear, or logarithmic when the largest of `values` is `log_from` times
/// the smallest or more; padded so that no point sits on the frame.
pub(super) fn extent(values: &[f64], from_zero: bool, log_from: f64) -> Extent {
    let positive: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let low = positive.iter().copied().fold(f64::INFINITY, f64::min);
    let high = positive.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if positive.is_empty() {
        return Extent {
            range: 0.0..1.0,
            log: false,
        };
    }
    if high / low >= log_from {
        return Extent {
            range: low / 1.5..high * 1.5,
            log: true,
        };
    }
    if from_zero {
        return Extent {
            range: 0.0..high * 1.1,
            log: false,
        };
    }
    let pad = if high > low {
        (high - low) * 0.08
    } else {
        low * 0.5
    };
    Extent {
        range: (low - pad).max(0.0)..high + pad,
        log: false,
    }
}

/// The throughput unit of the y axis and its size in bytes per second.
/// GiB/s when everything is at least 1 GiB/s or the axis is linear;
/// MiB/s otherwise, so that a log axis is labelled in whole numbers
/// (plotters left 0.2 and 0.5 unlabelled on some).
pub(super) fn rate_unit(values_bps: &[f64]) -> (&'static str, f64) {
    const GIB: f64 = (1u64 << 30) as f64;
    let positive = values_bps
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0);
    let (low, high) = positive.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let log = high / low >= RATE_LOG_FROM;
    if high >= GIB && !(log && low < GIB) {
        ("GiB/s", GIB)
    } else {
        ("MiB/s", (1u64 << 20) as f64)
    }
}

pub(super) fn draw(path: &Path, chart: &Chart, machine: &str) -> io::Result<()> {
    let xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys_bps: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|p| [p.1, p.2, p.3]))
        .chain(chart.limits.iter().map(|l| l.1))
        .collect();
    let (unit, unit_bps) = rate_unit(&ys_bps);
    let ys: Vec<f64> = ys_bps.iter().map(|y| y / unit_bps).collect();
    let x = extent(&xs, false, SIZE_LOG_FROM);
    let y = extent(&ys, true, RATE_LOG_FROM);
    // plotters labels every integer multiple of a power of ten on a log
    // axis only when asked for ten labels per decade or more; the
    // formatter then keeps 1, 2 and 5.
    let decades = (y.range.end / y.range.start).log10().ceil().max(1.0);
    let y_labels = if y.log {
        10 * (decades as usize + 1)
    } else {
        10
    };
    let x_desc = match (chart.kind, x.log) {
        (Along::Size, false) => "bytes per flow",
        (Along::Size, true) => "bytes per flow (log2 scale)",
        (Along::Chunk, false) => "chunk size, bytes",
        (Along::Chunk, true) => "chunk size, bytes (log2 scale)",
        (Along::Flows, false) => "concurrent flows",
        (Along::Flows, true) => "concurrent flows (log2 scale)",
    };
    let y_desc = if y.log {
        format!("throughput, {unit} (log scale)")
    } else {
        format!("throughput, {unit}")
    };
    let axes = Axes {
        x_desc: x_desc.to_string(),
        y_desc,
        x_is_bytes: chart.kind != Along::Flows,
        unit_bps,
        y_labels,
        footer: machine.to_string(),
    };
    // Drawn into memory, then written like every other output file.
    let mut svg = String::new();
    let result = match (x.log, y.log) {
        (false, false) => draw_in(&mut svg, chart, &axes, x.range, y.range),
        (true, false) => draw_in(
            &mut svg,
            chart,
            &axes,
            x.range.log_scale().base(2.0),
            y.range,
        ),
        (false, true) => draw_in(&mut svg, chart, &axes, x.range, y.range.log_scale()),
        (true, true) => draw_in(
            &mut svg,
            chart,
            &axes,
            x.range.log_scale().base(2.0),
            y.range.log_scale(),
        ),
    };
    result
        .map_err(|error| io::Error::other(format!("drawing chart {}: {error}", path.display())))?;
    crate::report::files::write_replacing(path, svg.as_bytes())
}

struct Axes {
    x_desc: String,
    y_desc: String,
    x_is_bytes: bool,
    unit_bps: f64,
    y_labels: usize,
    footer: String,
}

fn draw_in<X, Y>(
    svg: &mut String,
    chart: &Chart,
    axes: &Axes,
    x_spec: X,
    y_spec: Y,
) -> Result<(), Box<dyn std::error::Error>>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let whole = SVGBackend::with_string(svg, CHART_SIZE).into_drawing_area();
    whole.fill(&WHITE)?;
    let (root, footer) = whole.split_vertically(CHART_SIZE.1 - 24);
    footer.draw(&Text::new(
        axes.footer.as_str(),
        (16, 4),
        ("sans-serif", 12).into_font().color(&BLACK.mix(0.6)),
    ))?;
    let (plot, legend_area) = root.split_horizontally(CHART_SIZE.0 - LEGEND_WIDTH);
    let mut context = ChartBuilder::on(&plot)
        .caption(&chart.title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(80)
        .build_cartesian_2d(x_spec, y_spec)?;
    let x_range = context.x_range();

    let x_label = |value: &f64| {
        if axes.x_is_bytes {
            short_size(value.round().max(0.0) as u64)
        } else if (value - value.round()).abs() < 1e-6 {
            format!("{}", value.round())
        } else {
            String::new()
        }
    };
    // plotters' log ticks skipped 200 and 500 on some ranges: on a log
    // axis the 1-2-5 labels are drawn below instead.
    let y_log = axes.y_labels > 10;
    let y_label = |value: &f64| match y_log {
        true => String::new(),
        false => rate_label(*value, false),
    };
    context
        .configure_mesh()
        .x_desc(axes.x_desc.as_str())
        .y_desc(axes.y_desc.as_str())
        .x_labels(10)
        .y_labels(axes.y_labels)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .axis_desc_style(("sans-serif", 16))
        .bold_line_style(BLACK.mix(0.15))
        .light_line_style(BLACK.mix(0.04))
        .draw()?;

    // Lines, whiskers and markers in pixels, on the whole canvas: every
    // chart kind draws them the same way.
    let at = |x: f64, y: f64| context.backend_coord(&(x, y / axes.unit_bps));
    if y_log {
        let (low, high) = (context.y_range().start, context.y_range().end);
        let left = |value: f64| at(x_range.start, value * axes.unit_bps);
        draw_log_y_labels(&whole, low, high, left)?;
    }
    let mut entries: Vec<Entry> = Vec::new();
    let mut heading = None;
    let mut limit_index = 0;
    for (index, series) in chart.series.iter().enumerate() {
        let mark = match series.kind {
            ContenderKind::Limit => {
                limit_index += 1;
                legend::limit_mark(limit_index - 1)
            }
            _ => legend::mark_for(index),
        };
        let mark = legend::Mark {
            filled: !series.hollow,
            ..mark
        };
        let line = Line::of(series.kind);
        for pair in series.points.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            legend::draw_line(&whole, at(a.0, a.1), at(b.0, b.1), line, mark.color)?;
        }
        for &(x, median, low, high) in &series.points {
            whisker(&whole, at(x, low), at(x, high), mark.color)?;
            legend::draw_mark(&whole, at(x, median), mark)?;
        }
        if heading != Some(series.kind) {
            heading = Some(series.kind);
            entries.push(Entry::Heading(legend::kind_heading(series.kind).into()));
        }
        entries.push(Entry::Item {
            label: series.label.clone(),
            mark: Some(mark),
            line,
            color: mark.color,
        });
    }
    if !chart.limits.is_empty() && heading != Some(ContenderKind::Limit) {
        entries.push(Entry::Heading(
            legend::kind_heading(ContenderKind::Limit).into(),
        ));
    }
    let across = |bps: f64| (at(x_range.start, bps), at(x_range.end, bps));
    draw_limits(&whole, &chart.limits, limit_index, across, &mut entries)?;
    legend::draw_legend(&legend_area, &entries)?;
    whole.present()?;
    Ok(())
}

/// The labelled ticks of a log y axis over `low..high` (in the axis's
/// unit), at the pixels `left` gives for each value.
fn draw_log_y_labels(
    whole: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    low: f64,
    high: f64,
    left: impl Fn(f64) -> (i32, i32),
) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    for (value, label) in super::ticks::log_ticks(low, high) {
        let (px, py) = left(value);
        let tick = ShapeStyle::from(&BLACK).stroke_width(1);
        whole.draw(&PathElement::new(vec![(px - 5, py), (px, py)], tick))?;
        let font = ("sans-serif", 13).into_font().color(&BLACK);
        whole.draw(&Text::new(
            label,
            (px - 8, py),
            font.pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// The limits measured apart as dotted lines across the plot (`across`
/// gives a line's ends for a rate), each in the legend.
fn draw_limits(
    whole: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    limits: &[(String, f64)],
    mut limit_index: usize,
    across: impl Fn(f64) -> ((i32, i32), (i32, i32)),
    entries: &mut Vec<Entry>,
) -> Result<(), Box<dyn std::error::Error>> {
    for (label, bps) in limits {
        // Several limits in one chart (cold and warm cells): tell them apart.
        let color = legend::LIMIT_COLORS[limit_index % legend::LIMIT_COLORS.len()];
        limit_index += 1;
        let (from, to) = across(*bps);
        legend::draw_line(whole, from, to, Line::Dotted, color)?;
        entries.push(Entry::Item {
            label: label.clone(),
            mark: None,
            line: Line::Dotted,
            color,
        });
    }
    Ok(())
}

/// A vertical or horizontal min–max whisker between two pixels, with caps.
pub(super) fn whisker(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    from: (i32, i32),
    to: (i32, i32),
    color: RGBColor,
) -> Result<(), Box<dyn std::error::Error>> {
    let style = ShapeStyle::from(&color.mix(0.8)).stroke_width(1);
    area.draw(&PathElement::new(vec![from, to], style))?;
    let vertical = from.0 == to.0;
    for end in [from, to] {
        let cap = if vertical {
            vec![(end.0 - 4, end.1), (end.0 + 4, end.1)]
        } else {
            vec![(end.0, end.1 - 4), (end.0, end.1 + 4)]
        };
        area.draw(&PathElement::new(cap, style))?;
    }
    Ok(())
}

/// A throughput axis label: on a log axis only 1, 2 and 5 of each decade.
pub(super) fn rate_label(value: f64, log: bool) -> String {
    if log && !one_two_or_five(value) {
        return String::new();
    }
    trimmed(value, if value.abs() >= 100.0 { 0 } else { 2 })
}

/// `value` with `decimals` decimals, less its trailing zeros (and point).
pub(super) fn trimmed(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Whether a tick of a log axis is labelled: plotters offers every
/// multiple of each power of ten, and only 1, 2 and 5 of each decade
/// (and 10, the next decade's 1) are.
pub(super) fn one_two_or_five(value: f64) -> bool {
    if value <= 0.0 {
        return true;
    }
    let mantissa = value / 10f64.powf(value.log10().floor());
    let round = mantissa.round();
    (mantissa - round).abs() <= 1e-6 && [1.0, 2.0, 5.0, 10.0].contains(&round)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_turn_logarithmic_at_two_decades() {
        assert!(!extent(&[4096.0, 65536.0], false, SIZE_LOG_FROM).log);
        assert!(extent(&[4096.0, 1048576.0], false, SIZE_LOG_FROM).log);
        assert!(extent(&[0.1, 1.0], true, RATE_LOG_FROM).log);
        let single = extent(&[8.0], false, SIZE_LOG_FROM);
        assert!(single.range.start < 8.0 && single.range.end > 8.0);
        assert_eq!(extent(&[], true, RATE_LOG_FROM).range, 0.0..1.0);
    }
}
