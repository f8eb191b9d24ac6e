//! SVG charts of the summaries, one set per scenario:
//!
//! - `<scenario>-size.svg`: median throughput against bytes per flow, one
//!   series per contender (cells at each contender's default chunk);
//! - `<scenario>-chunk.svg`: median throughput against `--chunk`, when the
//!   scenario sweeps several chunk sizes;
//! - `<scenario>-scaling.svg`: aggregate throughput against concurrent
//!   flows, for `parallel` (and any scenario with several flow counts).
//!
//! flexio mechanisms are solid lines, peers dashed, physical limits dotted
//! horizontal lines. An axis is logarithmic (base 2 for bytes and flows,
//! base 10 for throughput) when its values span two decades or more.
//! plotters' SVG backend writes text as `<text>` elements, so no font is
//! needed to draw.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::model::{CacheState, Contender, Results};
use crate::stats::{self, Summary, LIMITS_SCENARIO};
use crate::table::{self, short_size};

/// Bytes and flows are drawn on a log2 axis from two decades on.
const SIZE_LOG_FROM: f64 = 100.0;
/// Throughput is drawn on a log10 axis from one decade on: a cold disk and
/// memcpy side by side would flatten everything else on a linear one.
const RATE_LOG_FROM: f64 = 10.0;

/// Width and height of every chart, in SVG pixels.
const CHART_SIZE: (u32, u32) = (960, 600);

/// Physical limits: dark, and unlike any series colour.
const LIMIT_COLORS: [RGBColor; 3] = [
    RGBColor(40, 40, 40),
    RGBColor(140, 140, 140),
    RGBColor(120, 70, 20),
];

/// Tableau 10: distinguishable, none too light on white.
const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Writes the charts of every scenario of `summaries` into `dir` and
/// returns their paths. The limits scenario gets no chart of its own: its
/// values are drawn as horizontal lines in the others.
///
/// # Errors
/// Creating or writing a file fails.
pub fn write_scenario_charts(
    dir: &Path,
    results: &Results,
    summaries: &[Summary],
) -> io::Result<Vec<PathBuf>> {
    let machine = machine_line(results);
    let mut written = Vec::new();
    for scenario in table::scenarios(summaries) {
        if scenario == LIMITS_SCENARIO {
            continue;
        }
        for chart in scenario_charts(summaries, &scenario) {
            let path = dir.join(format!(
                "{}-{}.svg",
                file_stem(&scenario),
                chart.kind.suffix()
            ));
            draw(&path, &chart, &machine)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// What a chart's x axis is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Along {
    Size,
    Chunk,
    Flows,
}

impl Along {
    fn suffix(self) -> &'static str {
        match self {
            Along::Size => "size",
            Along::Chunk => "chunk",
            Along::Flows => "scaling",
        }
    }
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    /// flexio: solid.
    Solid,
    /// A peer: dashed.
    Dashed,
    /// A limit measured beside the contenders (in the same cells): dotted.
    Dotted,
}

#[derive(Clone, Debug)]
struct Series {
    label: String,
    style: Style,
    /// (x, throughput in bytes per second), sorted by x.
    points: Vec<(f64, f64)>,
}

#[derive(Clone, Debug)]
struct Chart {
    kind: Along,
    title: String,
    series: Vec<Series>,
    /// (label, bytes per second).
    limits: Vec<(String, f64)>,
}

/// The charts of one scenario: always by size, by chunk when swept, by
/// flows for `parallel` or when flows vary.
fn scenario_charts(summaries: &[Summary], scenario: &str) -> Vec<Chart> {
    let rows: Vec<&Summary> = summaries
        .iter()
        .filter(|s| s.cell.scenario == scenario)
        .collect();
    let mut charts = Vec::new();

    let default_chunk: Vec<&Summary> = rows.iter().copied().filter(|s| s.cell.chunk == 0).collect();
    let by_size = if default_chunk.is_empty() {
        rows.clone()
    } else {
        default_chunk
    };
    charts.push(chart(summaries, scenario, Along::Size, &by_size));

    let swept: Vec<&Summary> = rows.iter().copied().filter(|s| s.cell.chunk != 0).collect();
    if distinct(&swept, |s| s.cell.chunk) >= 2 {
        charts.push(chart(summaries, scenario, Along::Chunk, &swept));
    }

    if scenario == "parallel" || distinct(&rows, |s| u64::from(s.cell.flows)) >= 2 {
        charts.push(chart(summaries, scenario, Along::Flows, &by_size));
    }
    charts
}

fn distinct(rows: &[&Summary], key: impl Fn(&Summary) -> u64) -> usize {
    rows.iter().map(|s| key(s)).collect::<BTreeSet<_>>().len()
}

fn chart(summaries: &[Summary], scenario: &str, along: Along, rows: &[&Summary]) -> Chart {
    let x_of = |s: &Summary| match along {
        Along::Size => s.cell.size as f64,
        Along::Chunk => s.cell.chunk as f64,
        Along::Flows => f64::from(s.cell.flows),
    };
    // The coordinates other than x that vary within the chart go into the
    // series label, so that a series is one line along x.
    let varies = |key: &dyn Fn(&Summary) -> String| {
        rows.iter().map(|s| key(s)).collect::<BTreeSet<_>>().len() > 1
    };
    let size_varies = along != Along::Size && varies(&|s| s.cell.size.to_string());
    let chunk_varies = along != Along::Chunk && varies(&|s| s.cell.chunk.to_string());
    let flows_varies = along != Along::Flows && varies(&|s| s.cell.flows.to_string());
    let cache_varies = varies(&|s| table::cache_name(s.cell.cache).to_string());
    let path_varies = varies(&|s| s.cell.path.clone());
    let contenders: Vec<&Contender> = rows.iter().map(|s| &s.contender).collect();

    let mut series: Vec<Series> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for summary in rows {
        let (x, y) = (x_of(summary), summary.median_bps);
        if !(x.is_finite() && y.is_finite()) {
            continue;
        }
        let mut label = if along == Along::Chunk {
            summary.contender.label()
        } else {
            table::label_among(&summary.contender, &contenders)
        };
        let mut qualifiers = Vec::new();
        if cache_varies && summary.cell.cache != CacheState::NotApplicable {
            qualifiers.push(table::cache_name(summary.cell.cache).to_string());
        }
        if path_varies && !summary.cell.path.is_empty() {
            qualifiers.push(summary.cell.path.clone());
        }
        if size_varies {
            qualifiers.push(short_size(summary.cell.size));
        }
        if chunk_varies {
            qualifiers.push(match summary.cell.chunk {
                0 => "default chunk".to_string(),
                chunk => format!("chunk {}", short_size(chunk)),
            });
        }
        if flows_varies {
            qualifiers.push(match summary.cell.flows {
                1 => "1 flow".to_string(),
                flows => format!("{flows} flows"),
            });
        }
        if !qualifiers.is_empty() {
            label = format!("{label} ({})", qualifiers.join(", "));
        }
        let at = *index.entry(label.clone()).or_insert_with(|| {
            series.push(Series {
                label,
                style: match summary.contender {
                    Contender::Flexio { .. } | Contender::Process { .. } => Style::Solid,
                    Contender::Peer { .. } => Style::Dashed,
                    Contender::Limit { .. } => Style::Dotted,
                },
                points: Vec::new(),
            });
            series.len() - 1
        });
        series[at].points.push((x, y));
    }
    for line in &mut series {
        line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }

    let mut limits: Vec<(String, f64)> = Vec::new();
    for summary in rows {
        // Limits measured beside the contenders are series already.
        let measured_apart = |limit: &&Summary| limit.cell.scenario == LIMITS_SCENARIO;
        if let Some(limit) = stats::limit_for(summaries, &summary.cell).filter(measured_apart) {
            let label = limit.contender.label();
            if limit.median_bps.is_finite()
                && !limits
                    .iter()
                    .any(|(l, v)| *l == label && *v == limit.median_bps)
            {
                limits.push((label, limit.median_bps));
            }
        }
    }
    // The same limit measured at several sizes: say which line is which.
    let repeated: Vec<String> = limits
        .iter()
        .filter(|(label, _)| limits.iter().filter(|(l, _)| l == label).count() > 1)
        .map(|(label, _)| label.clone())
        .collect();
    for (label, value) in &mut limits {
        if repeated.contains(label) {
            *label = format!("{label} ({})", flexio::format_rate(*value));
        }
    }

    let title = match along {
        Along::Size => format!("{scenario}: throughput by size"),
        Along::Chunk => format!("{scenario}: throughput by chunk size"),
        Along::Flows => format!("{scenario}: aggregate throughput by concurrent flows"),
    };
    Chart {
        kind: along,
        title,
        series,
        limits,
    }
}

/// Where a set of positive values lies on an axis.
struct Extent {
    range: Range<f64>,
    log: bool,
}

/// Linear, or logarithmic when the largest of `values` is `log_from` times
/// the smallest or more; padded so that no point sits on the frame.
fn extent(values: &[f64], from_zero: bool, log_from: f64) -> Extent {
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
fn rate_unit(max_bps: f64) -> (&'static str, f64) {
    if max_bps >= (1u64 << 30) as f64 {
        ("GiB/s", (1u64 << 30) as f64)
    } else {
        ("MiB/s", (1u64 << 20) as f64)
    }
}

/// The machine in one line, printed under every chart.
fn machine_line(results: &Results) -> String {
    let machine = &results.fingerprint;
    let mut parts = Vec::new();
    if !machine.cpu_model.is_empty() {
        parts.push(format!("{} × {}", machine.cpus, machine.cpu_model));
    }
    if machine.memory_bytes > 0 {
        parts.push(format!("{} memory", short_size(machine.memory_bytes)));
    }
    if !machine.kernel.is_empty() {
        parts.push(format!("Linux {}", machine.kernel));
    }
    if !machine.filesystem.is_empty() {
        parts.push(format!("{} on {}", machine.filesystem, machine.device));
    }
    parts.push("median of counted runs; peers dashed, limits dotted".to_string());
    parts.join(" · ")
}

fn draw(path: &Path, chart: &Chart, machine: &str) -> io::Result<()> {
    let xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys_bps: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(chart.limits.iter().map(|l| l.1))
        .collect();
    let (unit, unit_bps) = rate_unit(ys_bps.iter().copied().fold(0.0, f64::max));
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
    let result = match (x.log, y.log) {
        (false, false) => draw_in(path, chart, &axes, x.range, y.range),
        (true, false) => draw_in(path, chart, &axes, x.range.log_scale().base(2.0), y.range),
        (false, true) => draw_in(path, chart, &axes, x.range, y.range.log_scale()),
        (true, true) => draw_in(
            path,
            chart,
            &axes,
            x.range.log_scale().base(2.0),
            y.range.log_scale(),
        ),
    };
    result.map_err(|error| io::Error::other(format!("drawing chart {}: {error}", path.display())))
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
    path: &Path,
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
    let root = SVGBackend::new(path, CHART_SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (root, footer) = root.split_vertically(CHART_SIZE.1 - 24);
    footer.draw(&Text::new(
        axes.footer.as_str(),
        (16, 4),
        ("sans-serif", 12).into_font().color(&BLACK.mix(0.6)),
    ))?;
    let mut context = ChartBuilder::on(&root)
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
    let y_label = |value: &f64| {
        if axes.y_labels > 10 && *value > 0.0 {
            let mantissa = value / 10f64.powf(value.log10().floor());
            let round = mantissa.round();
            if (mantissa - round).abs() > 1e-6 || ![1.0, 2.0, 5.0, 10.0].contains(&round) {
                return String::new();
            }
        }
        let text = if value.abs() >= 100.0 {
            format!("{value:.0}")
        } else {
            format!("{value:.2}")
        };
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            text
        }
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

    let mut limit_colors = LIMIT_COLORS.iter().cycle();
    let mut palette = COLORS.iter().cycle();
    for series in &chart.series {
        let (color, style) = match series.style {
            Style::Dotted => {
                let color = limit_colors.next().copied().unwrap_or(BLACK).to_rgba();
                (color, ShapeStyle::from(&color).stroke_width(2))
            }
            _ => {
                let color = palette.next().copied().unwrap_or(BLACK).to_rgba();
                (color, ShapeStyle::from(&color).stroke_width(2))
            }
        };
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .map(|(x, y)| (*x, y / axes.unit_bps))
            .collect();
        let annotation = match series.style {
            Style::Solid => context.draw_series(LineSeries::new(points.clone(), style))?,
            Style::Dashed => {
                context.draw_series(DashedLineSeries::new(points.clone(), 8, 5, style))?
            }
            Style::Dotted => {
                context.draw_series(DashedLineSeries::new(points.clone(), 2, 4, style))?
            }
        };
        annotation.label(series.label.as_str());
        match series.style {
            Style::Solid => {
                annotation.legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style))
            }
            Style::Dashed => annotation.legend(move |(x, y)| {
                DashedPathElement::new(vec![(x, y), (x + 24, y)], 6, 4, style)
            }),
            Style::Dotted => annotation.legend(move |(x, y)| {
                DashedPathElement::new(vec![(x, y), (x + 24, y)], 2, 3, style)
            }),
        };
        context.draw_series(
            points
                .iter()
                .map(|point| Circle::new(*point, 3, color.filled())),
        )?;
    }

    for (label, bps) in &chart.limits {
        // Several limits in one chart (cold and warm cells): tell them apart.
        let color = limit_colors.next().copied().unwrap_or(BLACK);
        let style = ShapeStyle::from(&color).stroke_width(2);
        let level = bps / axes.unit_bps;
        let line = vec![(x_range.start, level), (x_range.end, level)];
        context
            .draw_series(DashedLineSeries::new(line, 2, 4, style))?
            .label(label.as_str())
            .legend(move |(x, y)| DashedPathElement::new(vec![(x, y), (x + 24, y)], 2, 3, style));
    }

    context
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    footer.present()?;
    Ok(())
}

/// A scenario name as a file name: anything but `[A-Za-z0-9_-]` becomes `-`.
fn file_stem(scenario: &str) -> String {
    scenario
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
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

    #[test]
    fn file_stems_are_plain() {
        assert_eq!(file_stem("file-to-file"), "file-to-file");
        assert_eq!(file_stem("a/b c"), "a-b-c");
    }
}
