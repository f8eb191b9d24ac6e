//! Dot plots for scenarios measured at one size: one row per contender,
//! grouped by kind (engine, `flexio copy` as a process, peers, limits),
//! the median as the contender's marker and min–max as whiskers; where a
//! cell ran over loopback and veth, both on the row, loopback filled and
//! veth hollow. The meter scenario also gets the share of its solo rate
//! the meter co-process kept while each contender ran.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::legend::{self, Entry, Line};
use super::{extent, rate_unit, whisker, RATE_LOG_FROM};
use crate::model::{CacheState, ContenderKind, Results, Scenario};
use crate::report::table;
use crate::stats::{self, median, Summary};

/// Width of a dot plot, in SVG pixels; its height grows with its rows.
const WIDTH: u32 = 1200;
/// The legend panel.
const LEGEND_WIDTH: u32 = 380;
/// Room for the row labels left of the plot.
const LABEL_WIDTH: u32 = 330;
/// Pixels per row.
const ROW_HEIGHT: u32 = 30;

/// What a dot plot's x axis is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    /// Throughput, bytes per second.
    Throughput,
    /// The meter's kept share, 0..1.
    Kept,
}

/// One value of a row: a cell's path, its median and range.
#[derive(Clone, Debug)]
struct Dot {
    path: String,
    median: f64,
    min: f64,
    max: f64,
}

#[derive(Clone, Debug)]
struct Row {
    label: String,
    kind: ContenderKind,
    dots: Vec<Dot>,
}

/// A dot plot, ready to draw.
#[derive(Clone, Debug)]
pub(super) struct DotChart {
    /// The file name's suffix: `contenders` or `kept`, after `warm-` or
    /// `cold-` when the scenario has both.
    pub suffix: String,
    title: String,
    value: Value,
    rows: Vec<Row>,
    /// Limits measured apart, drawn as vertical lines: (label, value).
    limits: Vec<(String, f64)>,
}

/// The dot plots of a scenario: by contender when all its cells (at the
/// default chunk) have one size, and the meter's kept share.
pub(super) fn scenario_dot_charts(
    results: &Results,
    summaries: &[Summary],
    scenario: Scenario,
) -> Vec<DotChart> {
    let all: Vec<&Summary> = summaries
        .iter()
        .filter(|s| s.cell.scenario == scenario)
        .collect();
    let rows: Vec<&Summary> = match all.iter().any(|s| s.cell.chunk == 0) {
        true => all.iter().copied().filter(|s| s.cell.chunk == 0).collect(),
        false => all.clone(),
    };
    let mut charts = Vec::new();
    for (prefix, group) in super::by_cache(&rows) {
        let sizes: BTreeSet<u64> = group.iter().map(|s| s.cell.size).collect();
        let flows: BTreeSet<u32> = group.iter().map(|s| s.cell.flows).collect();
        // Several flow counts have their scaling chart.
        if sizes.len() != 1 || flows.len() != 1 {
            continue;
        }
        let size = table::short_size(*sizes.iter().next().unwrap_or(&0));
        let cache = prefix.trim_end_matches('-');
        let title = match cache {
            "" => format!("{scenario} {size}: throughput by contender"),
            cache => format!("{scenario} {size} {cache}: throughput by contender"),
        };
        charts.push(DotChart {
            suffix: format!("{prefix}contenders"),
            title,
            value: Value::Throughput,
            rows: dot_rows(&group, |s| Some((s.median_bps, s.min_bps, s.max_bps))),
            limits: limits_apart(summaries, &group),
        });
    }
    if rows.iter().any(|s| s.meter_kept.is_some()) {
        let kept = |s: &Summary| {
            let mut values: Vec<f64> = results
                .runs
                .iter()
                .filter(|r| r.round >= 1 && r.cell == s.cell && r.contender == s.contender)
                .filter_map(|r| r.meter_kept)
                .collect();
            let (low, high) = (
                values.iter().copied().fold(f64::INFINITY, f64::min),
                values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            );
            (!values.is_empty()).then(|| (median(&mut values), low, high))
        };
        charts.push(DotChart {
            suffix: "kept".to_string(),
            title: format!("{scenario}: share of its solo rate the meter kept"),
            value: Value::Kept,
            rows: dot_rows(&rows, kept),
            limits: Vec::new(),
        });
    }
    charts
}

/// Whether `key` takes more than one value over `rows`.
fn varies<K: Ord>(rows: &[&Summary], key: impl Fn(&Summary) -> K) -> bool {
    rows.iter().map(|s| key(s)).collect::<BTreeSet<_>>().len() > 1
}

/// One row per contender (and per cache state or flow count where those
/// vary), a dot per network path.
fn dot_rows(rows: &[&Summary], value: impl Fn(&Summary) -> Option<(f64, f64, f64)>) -> Vec<Row> {
    let cache_varies = varies(rows, |s| s.cell.cache);
    let flows_varies = varies(rows, |s| s.cell.flows);
    let size_varies = varies(rows, |s| s.cell.size);
    let contenders: Vec<&crate::model::Contender> = rows.iter().map(|s| &s.contender).collect();
    let mut out: Vec<Row> = Vec::new();
    // Kinds in their order (engine, process, peer, limit), each in the
    // order its contenders ran.
    let mut ordered: Vec<&Summary> = rows.to_vec();
    ordered.sort_by_key(|s| s.contender.kind());
    for summary in ordered {
        let Some((median, min, max)) = value(summary) else {
            continue;
        };
        if !(median.is_finite() && min.is_finite() && max.is_finite()) {
            continue;
        }
        let mut label = table::label_among(&summary.contender, &contenders);
        let mut qualifiers = Vec::new();
        if cache_varies && summary.cell.cache != CacheState::NotApplicable {
            qualifiers.push(table::cache_name(summary.cell.cache).to_string());
        }
        if flows_varies {
            qualifiers.push(format!("{} flows", summary.cell.flows));
        }
        if size_varies {
            qualifiers.push(table::short_size(summary.cell.size));
        }
        if !qualifiers.is_empty() {
            label = format!("{label} ({})", qualifiers.join(", "));
        }
        let dot = Dot {
            path: summary.cell.path.clone(),
            median,
            min,
            max,
        };
        match out.iter_mut().find(|row| row.label == label) {
            Some(row) => row.dots.push(dot),
            None => out.push(Row {
                label,
                kind: summary.contender.kind(),
                dots: vec![dot],
            }),
        }
    }
    out
}

/// The limits of `rows`' cells measured in the limits scenario (those
/// measured beside the contenders are rows of their own).
fn limits_apart(summaries: &[Summary], rows: &[&Summary]) -> Vec<(String, f64)> {
    let mut limits: Vec<(String, f64)> = Vec::new();
    for summary in rows {
        if let Some(limit) = stats::limit_for(summaries, &summary.cell)
            .filter(|limit| limit.cell.scenario == Scenario::Limits)
        {
            let label = format!(
                "{} ({})",
                limit.contender.label(),
                flexio::format_rate(limit.median_bps)
            );
            if limit.median_bps.is_finite() && !limits.iter().any(|(l, _)| *l == label) {
                limits.push((label, limit.median_bps));
            }
        }
    }
    limits
}

/// Draws `chart` into `path` (drawn in memory, then written only over a
/// regular file or nothing: see [`crate::report::files::write_replacing`]).
pub(super) fn draw(path: &Path, chart: &DotChart, machine: &str) -> io::Result<()> {
    let mut svg = String::new();
    draw_in(&mut svg, chart, machine)
        .map_err(|error| io::Error::other(format!("drawing chart {}: {error}", path.display())))?;
    crate::report::files::write_replacing(path, svg.as_bytes())
}

fn draw_in(
    svg: &mut String,
    chart: &DotChart,
    machine: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = chart
        .rows
        .iter()
        .flat_map(|row| row.dots.iter().map(|d| d.path.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let rows = chart.rows.len().max(1);
    let height = (150 + rows as u32 * ROW_HEIGHT).max(380);
    let whole = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    whole.fill(&WHITE)?;
    let (root, footer) = whole.split_vertically(height - 24);
    footer.draw(&Text::new(
        machine,
        (16, 4),
        ("sans-serif", 12).into_font().color(&BLACK.mix(0.6)),
    ))?;
    let (plot, legend_area) = root.split_horizontally(WIDTH - LEGEND_WIDTH);

    let values: Vec<f64> = chart
        .rows
        .iter()
        .flat_map(|row| row.dots.iter().flat_map(|d| [d.min, d.median, d.max]))
        .chain(chart.limits.iter().map(|l| l.1))
        .collect();
    let (unit_value, x_desc) = match chart.value {
        Value::Throughput => {
            let (unit, bps) = rate_unit(&values);
            (bps, format!("throughput, {unit}"))
        }
        Value::Kept => (0.01, "share of its solo rate the meter kept, %".to_string()),
    };
    let scaled: Vec<f64> = values.iter().map(|v| v / unit_value).collect();
    let x = match chart.value {
        Value::Throughput => extent(&scaled, true, RATE_LOG_FROM),
        Value::Kept => super::Extent {
            range: 0.0..scaled.iter().copied().fold(100.0, f64::max) * 1.05,
            log: false,
        },
    };
    let x_desc = if x.log {
        format!("{x_desc} (log scale)")
    } else {
        x_desc
    };
    let y_range = -0.6..(rows as f64 - 0.4);
    let mut builder = ChartBuilder::on(&plot);
    builder
        .caption(&chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(LABEL_WIDTH);
    let log = x.log;
    let label = move |value: &f64| super::rate_label(*value, log);
    let frame = Frame {
        whole: &whole,
        legend_area: &legend_area,
        paths: &paths,
        rows,
        unit_value,
        x_range: x.range.clone(),
        y_range: y_range.clone(),
        log_x: x.log,
    };
    if x.log {
        let mut context =
            builder.build_cartesian_2d(x.range.clone().log_scale(), y_range.clone())?;
        context
            .configure_mesh()
            .x_desc(x_desc.as_str())
            .x_labels(30)
            // plotters' log ticks skipped 200 and 500 on some ranges: the
            // 1-2-5 labels are drawn by `draw_rows` instead.
            .x_label_formatter(&|_| String::new())
            .y_labels(0)
            .disable_y_mesh()
            .axis_desc_style(("sans-serif", 16))
            .bold_line_style(BLACK.mix(0.15))
            .light_line_style(BLACK.mix(0.04))
            .draw()?;
        draw_rows(chart, &frame, &|x, y| context.backend_coord(&(x, y)))
    } else {
        let mut context = builder.build_cartesian_2d(x.range.clone(), y_range.clone())?;
        context
            .configure_mesh()
            .x_desc(x_desc.as_str())
            .x_labels(10)
            .x_label_formatter(&label)
            .y_labels(0)
            .disable_y_mesh()
            .axis_desc_style(("sans-serif", 16))
            .bold_line_style(BLACK.mix(0.15))
            .light_line_style(BLACK.mix(0.04))
            .draw()?;
        draw_rows(chart, &frame, &|x, y| context.backend_coord(&(x, y)))
    }
}

/// Where the rows of a dot plot go.
struct Frame<'a, 'b> {
    whole: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    legend_area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    paths: &'a [String],
    rows: usize,
    unit_value: f64,
    x_range: std::ops::Range<f64>,
    y_range: std::ops::Range<f64>,
    /// The x axis is logarithmic: label it 1, 2, 5 per decade here.
    log_x: bool,
}

/// The labelled ticks of a log x axis over `low..high`, under the
/// pixels `bottom` gives for each value.
fn draw_log_x_labels(
    whole: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    low: f64,
    high: f64,
    bottom: impl Fn(f64) -> (i32, i32),
) -> Result<(), Box<dyn std::error::Error>> {
    for (value, label) in super::ticks::log_ticks(low, high) {
        let (px, py) = bottom(value);
        let tick = ShapeStyle::from(&BLACK).stroke_width(1);
        whole.draw(&PathElement::new(vec![(px, py), (px, py + 5)], tick))?;
        whole.draw(&Text::new(
            label,
            (px, py + 8),
            ("sans-serif", 13)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    Ok(())
}

/// The legend's key to the network paths (filled: the first, hollow: the
/// second), where there are two.
fn path_entries(paths: &[String]) -> Vec<Entry> {
    let mut entries = Vec::new();
    if paths.len() > 1 {
        entries.push(Entry::Heading("network path".into()));
        for (k, name) in paths.iter().enumerate() {
            let mark = legend::Mark {
                color: RGBColor(90, 90, 90),
                shape: 0,
                filled: k == 0,
            };
            entries.push(Entry::Item {
                label: format!("{} {name}", if k == 0 { "filled:" } else { "hollow:" }),
                mark: Some(mark),
                line: Line::None,
                color: mark.color,
            });
        }
    }
    entries
}

/// The rows, limits and legend, `to_pixels` placing an (x in axis units,
/// row) point on the canvas.
fn draw_rows(
    chart: &DotChart,
    frame: &Frame<'_, '_>,
    to_pixels: &dyn Fn(f64, f64) -> (i32, i32),
) -> Result<(), Box<dyn std::error::Error>> {
    let (whole, paths, rows, unit_value) = (frame.whole, frame.paths, frame.rows, frame.unit_value);
    let y_range = frame.y_range.clone();
    // Row y: the first row on top.
    let row_y = |index: usize| (rows - 1 - index) as f64;
    let at = |value: f64, y: f64| to_pixels(value / unit_value, y);
    let (left, right) = (
        frame.x_range.start * unit_value,
        frame.x_range.end * unit_value,
    );

    if frame.log_x {
        let (low, high) = (frame.x_range.start, frame.x_range.end);
        draw_log_x_labels(whole, low, high, |value| to_pixels(value, y_range.start))?;
    }
    let mut entries: Vec<Entry> = Vec::new();
    let mut heading = None;
    for (index, row) in chart.rows.iter().enumerate() {
        let y = row_y(index);
        let mark = match row.kind {
            ContenderKind::Limit => legend::limit_mark(index),
            _ => legend::mark_for(index),
        };
        if heading != Some(row.kind) {
            if heading.is_some() {
                // A rule between the kinds' groups.
                legend::draw_line(
                    whole,
                    at(left, y + 0.5),
                    at(right, y + 0.5),
                    Line::Thin,
                    RGBColor(200, 200, 200),
                )?;
            }
            heading = Some(row.kind);
            entries.push(Entry::Heading(legend::kind_heading(row.kind).into()));
        }
        // The row's label, right-aligned left of the plot.
        let (x0, py) = at(left, y);
        whole.draw(&Text::new(
            row.label.clone(),
            (x0 - 8, py),
            ("sans-serif", 13)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        for dot in &row.dots {
            let k = paths.iter().position(|p| *p == dot.path).unwrap_or(0);
            let offset = if paths.len() > 1 {
                0.3 * (k as f64 - (paths.len() - 1) as f64 / 2.0)
            } else {
                0.0
            };
            let dot_y = y - offset;
            whisker(whole, at(dot.min, dot_y), at(dot.max, dot_y), mark.color)?;
            let filled = k == 0;
            legend::draw_mark(
                whole,
                at(dot.median, dot_y),
                legend::Mark { filled, ..mark },
            )?;
        }
        entries.push(Entry::Item {
            label: row.label.clone(),
            mark: Some(mark),
            line: Line::None,
            color: mark.color,
        });
    }
    for (index, (label, value)) in chart.limits.iter().enumerate() {
        let color = legend::LIMIT_COLORS[index % legend::LIMIT_COLORS.len()];
        legend::draw_line(
            whole,
            at(*value, y_range.start),
            at(*value, y_range.end),
            Line::Dotted,
            color,
        )?;
        if index == 0 {
            entries.push(Entry::Heading("limits measured apart".into()));
        }
        entries.push(Entry::Item {
            label: label.clone(),
            mark: None,
            line: Line::Dotted,
            color,
        });
    }
    entries.extend(path_entries(paths));
    entries.push(Entry::Heading("marker: median; whiskers: min–max".into()));
    legend::draw_legend(frame.legend_area, &entries)?;
    whole.present()?;
    Ok(())
}
