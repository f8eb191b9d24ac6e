//! SVG charts of the summaries, one set per scenario:
//!
//! - `<scenario>-size.svg`: median throughput against bytes per flow, one
//!   line per contender with min–max whiskers (cells at each contender's
//!   default chunk), when the scenario has several sizes;
//! - `<scenario>-contenders.svg`: when it has one size, a dot plot instead:
//!   one row per contender, the median as a marker, min–max as whiskers,
//!   loopback (filled) and veth (hollow) side by side;
//! - `<scenario>-chunk.svg`: median throughput against `--chunk`, when the
//!   scenario sweeps several chunk sizes;
//! - `<scenario>-scaling.svg`: aggregate throughput against concurrent
//!   flows, for `parallel` (and any scenario with several flow counts);
//! - `meter-kept.svg`: the share of its solo rate the meter co-process
//!   kept while each contender ran;
//! - `parallel-fairness.svg`, `parallel-per-flow.svg`, `parallel-cpu.svg`:
//!   Jain's index over the flows, the median flow's throughput and CPU
//!   per GiB against concurrent flows (Cue's Tables 6–7).
//!
//! Every contender has its own colour and marker; lines say the kind:
//! engine thin, `flexio copy` as a process thick, peers dashed, limits
//! dotted. The legend sits in a panel right of the plot, grouped by kind.
//! An axis is logarithmic (base 2 for bytes and flows, base 10 for
//! throughput) when its values span two decades or more. plotters' SVG
//! backend writes text as `<text>` elements, so no font is needed to draw.

mod dots;
mod legend;
mod line_chart;
pub mod plain;
pub mod ticks;

pub use legend::COLORS;

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use line_chart::{draw, extent, rate_label, rate_unit, whisker, Extent};

use crate::model::{CacheState, Contender, ContenderKind, Results, Scenario};
use crate::report::table::{self, short_size};
use crate::stats::{self, Summary};

/// Bytes and flows are drawn on a log2 axis from two decades on.
const SIZE_LOG_FROM: f64 = 100.0;
/// Throughput is drawn on a log10 axis from one decade on: a cold disk and
/// memcpy side by side would flatten everything else on a linear one.
const RATE_LOG_FROM: f64 = 10.0;

/// Width and height of every line chart, in SVG pixels.
const CHART_SIZE: (u32, u32) = (1200, 600);

/// The legend panel right of every plot, in SVG pixels.
const LEGEND_WIDTH: u32 = 380;

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
        if scenario == Scenario::Limits {
            continue;
        }
        for chart in scenario_charts(summaries, scenario) {
            let path = dir.join(format!(
                "{}-{}{}.svg",
                scenario.name(),
                chart.prefix,
                chart.kind.suffix()
            ));
            draw(&path, &chart, &machine)?;
            written.push(path);
        }
        for chart in dots::scenario_dot_charts(results, summaries, scenario) {
            let path = dir.join(format!("{}-{}.svg", scenario.name(), chart.suffix));
            dots::draw(&path, &chart, &machine)?;
            written.push(path);
        }
        written.extend(flow_charts(dir, summaries, scenario, &machine)?);
    }
    Ok(written)
}

/// For a scenario whose runs kept each flow's throughput (parallel):
/// Jain's index, the median flow's throughput and CPU per GiB against
/// concurrent flows, a line per contender and path.
fn flow_charts(
    dir: &Path,
    summaries: &[Summary],
    scenario: Scenario,
    machine: &str,
) -> io::Result<Vec<PathBuf>> {
    let rows: Vec<&Summary> = summaries
        .iter()
        .filter(|s| s.cell.scenario == scenario && s.jain.is_some())
        .collect();
    let mut keys: Vec<(String, String)> = Vec::new();
    for row in &rows {
        let key = (row.contender.label(), row.cell.path.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let series = |value: &dyn Fn(&Summary) -> Option<f64>| -> Vec<plain::PlainSeries> {
        keys.iter()
            .map(|(label, path)| {
                let mut points: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|s| &s.contender.label() == label && &s.cell.path == path)
                    .filter_map(|s| Some((f64::from(s.cell.flows), value(s)?)))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                plain::PlainSeries {
                    label: match path.as_str() {
                        "" => format!("{label}, file to file"),
                        path => format!("{label}, to sockets ({path})"),
                    },
                    points,
                    dashed: path.is_empty(),
                }
            })
            .collect()
    };
    let mib = (1u64 << 20) as f64;
    let charts = [
        (
            "fairness",
            "Jain's index over the flows' own throughputs",
            "Jain index (1: equal shares)",
            series(&|s| s.jain),
            false,
        ),
        (
            "per-flow",
            "the median flow's own throughput",
            "MiB/s (log scale)",
            series(&|s| s.flow_median_bps.map(|b| b / mib)),
            true,
        ),
        (
            "cpu",
            "CPU per GiB of the flows",
            "CPU s per GiB (log scale)",
            series(&|s| Some(s.cpu_s_per_gib).filter(|c| c.is_finite())),
            true,
        ),
    ];
    let mut written = Vec::new();
    for (suffix, title, y_desc, series, log_y) in charts {
        let path = dir.join(format!("{}-{suffix}.svg", scenario.name()));
        plain::write_line_chart(
            &path,
            &plain::LineChart {
                title: format!("{scenario}: {title}"),
                x_desc: "concurrent flows".into(),
                y_desc: y_desc.into(),
                log_y,
                series,
                footer: machine.into(),
                ..plain::LineChart::default()
            },
        )?;
        written.push(path);
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

#[derive(Clone, Debug)]
struct Series {
    label: String,
    kind: ContenderKind,
    /// Drawn with hollow markers: a path other than loopback (veth).
    hollow: bool,
    /// (x, median, min, max throughput in bytes per second), sorted by x.
    points: Vec<(f64, f64, f64, f64)>,
}

#[derive(Clone, Debug)]
struct Chart {
    kind: Along,
    /// Before the kind in the file name: `warm-`, `cold-` or nothing.
    prefix: String,
    title: String,
    series: Vec<Series>,
    /// (label, bytes per second).
    limits: Vec<(String, f64)>,
}

/// The charts of one scenario: always by size, by chunk when swept, by
/// flows for `parallel` or when flows vary.
fn scenario_charts(summaries: &[Summary], scenario: Scenario) -> Vec<Chart> {
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
    // Warm and cold cells apart: together they made one tangle of lines.
    // One size: a dot plot by contender says more than lines of one point
    // (see `dots`).
    for (prefix, group) in by_cache(&by_size) {
        for (part, rows) in by_kind(&group) {
            if distinct(&rows, |s| s.cell.size) >= 2 {
                let mut sized = chart(summaries, scenario, Along::Size, &rows);
                sized.prefix = format!("{prefix}{part}");
                charts.push(sized);
            }
        }
    }

    let swept: Vec<&Summary> = rows.iter().copied().filter(|s| s.cell.chunk != 0).collect();
    if distinct(&swept, |s| s.cell.chunk) >= 2 {
        charts.push(chart(summaries, scenario, Along::Chunk, &swept));
    }

    // A socket pair's flows are files sent one after another, not
    // concurrent flows: the seeds' charts draw them.
    let concurrent = scenario != Scenario::SocketPair;
    if scenario == Scenario::Parallel
        || (concurrent && distinct(&rows, |s| u64::from(s.cell.flows)) >= 2)
    {
        charts.push(chart(summaries, scenario, Along::Flows, &by_size));
    }
    charts
}

/// The engine's rows apart from the processes and peers (each with the
/// cell's limits), with the prefix of their charts' file names: the engine
/// runs without a process's start-up, so its lines beside the processes'
/// invited a comparison the bench does not make. All together when one
/// of the two is absent.
fn by_kind<'a>(rows: &[&'a Summary]) -> Vec<(&'static str, Vec<&'a Summary>)> {
    use crate::model::ContenderKind::{Engine, Limit};
    let pick = |keep: &dyn Fn(crate::model::ContenderKind) -> bool| -> Vec<&'a Summary> {
        rows.iter()
            .copied()
            .filter(|s| keep(s.contender.kind()) || s.contender.kind() == Limit)
            .collect()
    };
    let has = |keep: &dyn Fn(crate::model::ContenderKind) -> bool| {
        rows.iter().any(|s| keep(s.contender.kind()))
    };
    if !(has(&|kind| kind == Engine) && has(&|kind| kind != Engine && kind != Limit)) {
        return vec![("", rows.to_vec())];
    }
    vec![
        ("engine-", pick(&|kind| kind == Engine)),
        ("", pick(&|kind| kind != Engine && kind != Limit)),
    ]
}

/// `rows` by cache state, each with the prefix of its charts' file names
/// (`warm-`, `cold-`), or all of them with none when they share one.
pub(crate) fn by_cache<'a>(rows: &[&'a Summary]) -> Vec<(String, Vec<&'a Summary>)> {
    let caches: BTreeSet<CacheState> = rows.iter().map(|s| s.cell.cache).collect();
    if caches.len() < 2 {
        return vec![(String::new(), rows.to_vec())];
    }
    caches
        .into_iter()
        .map(|cache| {
            let group = rows
                .iter()
                .copied()
                .filter(|s| s.cell.cache == cache)
                .collect();
            (format!("{}-", table::cache_name(cache)), group)
        })
        .collect()
}

fn distinct(rows: &[&Summary], key: impl Fn(&Summary) -> u64) -> usize {
    rows.iter().map(|s| key(s)).collect::<BTreeSet<_>>().len()
}

fn chart(summaries: &[Summary], scenario: Scenario, along: Along, rows: &[&Summary]) -> Chart {
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
        let (low, high) = (summary.min_bps, summary.max_bps);
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
                kind: summary.contender.kind(),
                hollow: !matches!(summary.cell.path.as_str(), "" | "loopback"),
                points: Vec::new(),
            });
            series.len() - 1
        });
        series[at].points.push((x, y, low, high));
    }
    for line in &mut series {
        line.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    // Grouped by kind, as the legend is (stable: each kind in run order).
    series.sort_by_key(|line| line.kind);

    let limits = limit_lines(summaries, rows);

    let title = match along {
        Along::Size => format!("{scenario}: throughput by size"),
        Along::Chunk => format!("{scenario}: throughput by chunk size"),
        Along::Flows => format!("{scenario}: aggregate throughput by concurrent flows"),
    };
    let cache = match rows.iter().map(|s| s.cell.cache).collect::<BTreeSet<_>>() {
        caches if caches.len() == 1 && !caches.contains(&CacheState::NotApplicable) => {
            format!(
                " ({})",
                table::cache_name(*caches.iter().next().expect("one"))
            )
        }
        _ => String::new(),
    };
    Chart {
        kind: along,
        prefix: String::new(),
        title: title + &cache,
        series,
        limits,
    }
}

/// The limits of `rows` measured apart (in the limits scenario), drawn
/// as horizontal lines: (label, bytes per second).
fn limit_lines(summaries: &[Summary], rows: &[&Summary]) -> Vec<(String, f64)> {
    let mut limits: Vec<(String, f64)> = Vec::new();
    for summary in rows {
        // Limits measured beside the contenders are series already.
        let measured_apart = |limit: &&Summary| limit.cell.scenario == Scenario::Limits;
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
    limits
}

/// The machine in one line, printed under every chart.
fn machine_line(results: &Results) -> String {
    let machine = &results.fingerprint;
    let mut parts = Vec::new();
    if !results.provenance.flexio_version.is_empty() {
        parts.push(format!(
            "flexio {} ({})",
            results.provenance.flexio_version,
            results
                .provenance
                .git_commit
                .get(..12)
                .unwrap_or(&results.provenance.git_commit)
        ));
    }
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
    parts.push("marker: median of counted runs; whiskers: min–max".to_string());
    parts.join(" · ")
}
