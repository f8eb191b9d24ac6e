//! The `host-to-host` scenario's table and its three charts: the main
//! part as bars (GiB/s, min–max whiskers), Fig 5 and Fig 6 as lines of
//! transfer time, as the OS project drew them.

use std::io;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use flexio::MechanismName;

use super::contenders::{FIG6_SIZES, IPERF3_INTO_FILE};
use super::{HostContender, HostPart, HostResults, HostTiming};

const GIB: f64 = (1u64 << 30) as f64;

/// The row the others are compared with in the main part.
const REFERENCE: HostContender = HostContender::FlexioGet;

fn groups(timings: &[HostTiming]) -> Vec<(HostPart, String)> {
    let mut groups: Vec<(HostPart, String)> = Vec::new();
    for t in timings {
        let key = (t.part, t.workload.clone());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    groups
}

fn rows<'a>(timings: &'a [HostTiming], part: HostPart, workload: &str) -> Vec<&'a HostTiming> {
    timings
        .iter()
        .filter(|t| t.part == part && t.workload == workload)
        .collect()
}

/// The row of `kind` that has counted runs.
fn find<'a>(rows: &[&'a HostTiming], kind: HostContender) -> Option<&'a HostTiming> {
    rows.iter()
        .find(|t| t.kind == kind && t.failed.is_none() && !t.seconds.is_empty())
        .copied()
}

/// The table: per part and workload, every contender's median, min, max,
/// GiB/s, its time over the reference's (main part: `flexio get`; Fig 5
/// and 6: the fastest), the server's CPU seconds per GiB and whether the
/// copy matched; then the targets.
pub fn table(results: &HostResults) -> String {
    let mut text = format!("link: {}\n", results.link);
    for (part, workload) in groups(&results.timings) {
        let rows = rows(&results.timings, part, &workload);
        let Some(first) = rows.first() else { continue };
        let reference = if part == HostPart::HostToHost {
            find(&rows, REFERENCE).map(HostTiming::median)
        } else {
            rows.iter()
                .map(|r| r.median())
                .reduce(f64::min)
                .filter(|m| m.is_finite())
        };
        text += &format!(
            "\n{part}: {workload} ({} file{}, {})\n",
            first.files,
            if first.files == 1 { "" } else { "s" },
            flexio::format_bytes(first.bytes)
        );
        text += &format!(
            "  {:<38} {:>9} {:>8} {:>8} {:>7} {:>8} {:>12}  {}\n",
            "contender",
            "median s",
            "min s",
            "max s",
            "GiB/s",
            if part == HostPart::HostToHost {
                "÷ flexio"
            } else {
                "÷ best"
            },
            "srv CPU s/GiB",
            "copy"
        );
        for row in rows {
            if let Some(why) = &row.failed {
                text += &format!("  {:<38} FAILED: {why}\n", row.contender);
                continue;
            }
            let median = row.median();
            let min = row.seconds.iter().copied().fold(f64::INFINITY, f64::min);
            let max = row.seconds.iter().copied().fold(0.0, f64::max);
            text += &format!(
                "  {:<38} {:>9.3} {:>8.3} {:>8.3} {:>7.2} {:>8} {:>12}  {}\n",
                row.contender,
                median,
                min,
                max,
                row.bytes as f64 / GIB / median,
                reference.map_or("-".into(), |r| format!("{:.2}", median / r)),
                row.server_cpu_per_gib()
                    .map_or("-".into(), |c| format!("{c:.3}")),
                match row.verified {
                    Some(true) => "same",
                    Some(false) => "DIFFERS",
                    None => "-",
                }
            );
        }
    }
    if !results.skipped.is_empty() {
        text += "\nnot run:\n";
        for (name, why) in &results.skipped {
            text += &format!("  {name}: {why}\n");
        }
    }
    text += &targets(&results.timings);
    text
}

/// The targets, each as flexio's speed over the peer's (time of
/// the peer over time of flexio: above 1, flexio is faster).
fn targets(timings: &[HostTiming]) -> String {
    let mut text = String::from(
        "\ntargets (speed of flexio get over the peer's; CPU: flexio serve's over nginx's):\n",
    );
    let main: Vec<(HostPart, String)> = groups(timings)
        .into_iter()
        .filter(|g| g.0 == HostPart::HostToHost)
        .collect();
    // `peer` names the peer in the line (aria2c without its flags).
    let line = |workload: &str, kind: HostContender, peer: &str, goal: f64| -> String {
        let rows = rows(timings, HostPart::HostToHost, workload);
        match (find(&rows, REFERENCE), find(&rows, kind)) {
            (Some(flexio), Some(other)) => {
                let ratio = other.median() / flexio.median();
                format!(
                    "  {workload}: {ratio:.2}× {peer} (target ≥ {goal}): {}\n",
                    if ratio >= goal { "met" } else { "MISSED" }
                )
            }
            _ => format!("  {workload}: {peer}: not measured\n"),
        }
    };
    let Some((_, file)) = main.first() else {
        return text;
    };
    text += &line(file, HostContender::Iperf3, super::contenders::IPERF3, 0.9);
    // Not a target: the same link with the same sink, which bounds any
    // copy of a file however it is sent.
    let rows_of_file = rows(timings, HostPart::HostToHost, file);
    if let (Some(flexio), Some(limit)) = (
        find(&rows_of_file, REFERENCE),
        find(&rows_of_file, HostContender::Iperf3IntoFile),
    ) {
        text += &format!(
            "  {file}: {:.2}× {IPERF3_INTO_FILE} (iperf3 paying for the received file as every copy does: the link's limit for a file)\n",
            limit.median() / flexio.median()
        );
    }
    text += &line(file, HostContender::Aria2c, "aria2c", 1.0);
    text += &line("tree B", HostContender::RsyncDaemon, "rsync daemon", 2.0);
    text += &line("tree B", HostContender::TarNc, "tar | nc", 1.0);
    text += &line("tree A", HostContender::TarNc, "tar | nc", 1.0);
    let rows = rows(timings, HostPart::HostToHost, file);
    // The target compares the servers under one client; the second line
    // is for reading beside it, not a verdict: the clients ask differently
    // (flexio get's verified streams against aria2c's plain ranges).
    for (ours, theirs, client, target) in [
        (
            HostContender::CurlFlexioServe,
            HostContender::CurlNginx,
            "both under curl",
            true,
        ),
        (
            REFERENCE,
            HostContender::Aria2c,
            "flexio get against aria2c: clients differ",
            false,
        ),
    ] {
        match (
            find(&rows, ours).and_then(HostTiming::server_cpu_per_gib),
            find(&rows, theirs).and_then(HostTiming::server_cpu_per_gib),
        ) {
            (Some(flexio), Some(nginx)) => {
                let verdict = match (target, flexio <= nginx) {
                    (false, _) => "not a target)".to_string(),
                    (true, met) => format!("target ≤): {}", if met { "met" } else { "MISSED" }),
                };
                text += &format!(
                    "  {file}: flexio serve's CPU {flexio:.3} s/GiB against nginx's {nginx:.3}, {client} ({verdict}\n",
                )
            }
            _ => text += &format!("  {file}: server CPU, {client}: not measured\n"),
        }
    }
    text
}

type Drawn = Result<(), Box<dyn std::error::Error>>;

/// Draws one chart into an SVG string.
type Draw = fn(&mut String, &HostResults) -> Drawn;

/// Writes `host-to-host.svg`, `host-fig5.svg` and `host-fig6.svg` (the
/// figures present in the results) into `out`; returns their paths.
///
/// # Errors
/// A chart that cannot be drawn or written.
pub fn write_charts(results: &HostResults, out: &Path) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let charts: [(&str, HostPart, Draw); 3] = [
        ("host-to-host.svg", HostPart::HostToHost, draw_main),
        ("host-fig5.svg", HostPart::Fig5, draw_fig5),
        ("host-fig6.svg", HostPart::Fig6, draw_fig6),
    ];
    for (name, part, draw) in charts {
        if !results
            .timings
            .iter()
            .any(|t| t.part == part && !t.seconds.is_empty())
        {
            continue;
        }
        let mut svg = String::new();
        draw(&mut svg, results).map_err(|e| io::Error::other(format!("drawing {name}: {e}")))?;
        let path = out.join(name);
        crate::report::files::write_replacing(&path, svg.as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

fn counted(rows: Vec<&HostTiming>) -> Vec<&HostTiming> {
    rows.into_iter()
        .filter(|r| r.failed.is_none() && !r.seconds.is_empty())
        .collect()
}

/// The main part: a panel per workload, a bar per contender at its median
/// GiB/s, whiskers from its slowest to its fastest run.
fn draw_main(svg: &mut String, results: &HostResults) -> Drawn {
    let workloads: Vec<String> = groups(&results.timings)
        .into_iter()
        .filter(|g| g.0 == HostPart::HostToHost)
        .map(|g| g.1)
        .collect();
    let height = 60 + workloads.len() as u32 * 260;
    let root = SVGBackend::with_string(svg, (1000, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(50);
    title.draw(&Text::new(
        format!("flexio serve + get against the field: {}", results.link),
        (16, 16),
        ("sans-serif", 15).into_font(),
    ))?;
    let panels = body.split_evenly((workloads.len().max(1), 1));
    for (panel, workload) in panels.iter().zip(&workloads) {
        let rows = counted(rows(&results.timings, HostPart::HostToHost, workload));
        let rate = |seconds: f64, bytes: u64| bytes as f64 / GIB / seconds;
        let top = rows
            .iter()
            .map(|r| {
                let fastest = r.seconds.iter().copied().fold(f64::INFINITY, f64::min);
                rate(fastest, r.bytes)
            })
            .fold(0.0, f64::max)
            * 1.1;
        let names: Vec<String> = rows.iter().map(|r| r.contender.clone()).collect();
        let n = rows.len().max(1) as f64;
        let mut chart = ChartBuilder::on(panel)
            .caption(workload.as_str(), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(200)
            .build_cartesian_2d(0f64..top.max(0.01), -0.5f64..n - 0.5)?;
        let label = |y: &f64| {
            let index = y.round();
            if (y - index).abs() < 1e-6 && index >= 0.0 {
                names.get(index as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(4 * rows.len().max(1) + 1)
            .y_label_formatter(&label)
            .x_desc("GiB/s (median; whiskers: slowest to fastest run)")
            .draw()?;
        for (index, row) in rows.iter().enumerate() {
            let y = index as f64;
            let color = if row.kind.is_flexio_get() {
                RGBColor(31, 119, 180)
            } else if row.kind.is_iperf3() {
                RGBColor(150, 150, 150)
            } else {
                RGBColor(255, 127, 14)
            };
            let median = rate(row.median(), row.bytes);
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.3), (median, y + 0.3)],
                color.filled(),
            )))?;
            let slowest = rate(row.seconds.iter().copied().fold(0.0, f64::max), row.bytes);
            let fastest = rate(
                row.seconds.iter().copied().fold(f64::INFINITY, f64::min),
                row.bytes,
            );
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(slowest, y), (fastest, y)],
                BLACK.stroke_width(2),
            )))?;
        }
    }
    root.present()?;
    Ok(())
}

const PALETTE: [RGBColor; 12] = [
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
    RGBColor(0, 0, 0),
    RGBColor(255, 187, 120),
];

/// Fig 5: transfer time of the same bytes as 1, 5 and 10 files, a line
/// per sender × receiver mechanism.
fn draw_fig5(svg: &mut String, results: &HostResults) -> Drawn {
    let workloads: Vec<String> = groups(&results.timings)
        .into_iter()
        .filter(|g| g.0 == HostPart::Fig5)
        .map(|g| g.1)
        .collect();
    let fig: Vec<&HostTiming> = counted(
        results
            .timings
            .iter()
            .filter(|t| t.part == HostPart::Fig5)
            .collect(),
    );
    let mut series: Vec<String> = Vec::new();
    for t in &fig {
        if !series.contains(&t.contender) {
            series.push(t.contender.clone());
        }
    }
    let top = fig.iter().map(|t| t.median()).fold(0.0, f64::max) * 1.15;
    let root = SVGBackend::with_string(svg, (1000, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let files: Vec<String> = workloads
        .iter()
        .map(|w| w.split(" as ").nth(1).unwrap_or(w).to_string())
        .collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Fig 5 (OS project): {} as 1, 5 and 10 files, sender × receiver mechanism",
                workloads
                    .first()
                    .and_then(|w| w.split(" as ").next())
                    .unwrap_or("")
            ),
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .right_y_label_area_size(0)
        .build_cartesian_2d(
            -0.3f64..(workloads.len() as f64 - 0.7).max(0.3),
            0f64..top.max(0.001),
        )?;
    let x_label = |x: &f64| {
        let index = x.round();
        if (x - index).abs() < 1e-6 && index >= 0.0 {
            files.get(index as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_labels(4 * workloads.len().max(1) + 1)
        .x_label_formatter(&x_label)
        .y_desc("transfer time, s (median; whiskers: min–max)")
        .draw()?;
    for (index, name) in series.iter().enumerate() {
        let color = PALETTE[index % PALETTE.len()];
        // Each series a little apart, so whiskers at one x do not overlap.
        let nudge = (index as f64 - (series.len() as f64 - 1.0) / 2.0) * 0.025;
        let points: Vec<(f64, &HostTiming)> = workloads
            .iter()
            .enumerate()
            .filter_map(|(x, w)| {
                fig.iter()
                    .find(|t| &t.workload == w && &t.contender == name)
                    .map(|t| (x as f64 + nudge, *t))
            })
            .collect();
        draw_timed_line(&mut chart, &points, name.as_str(), color)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// One series of timings: the medians joined by a line, a dot at each,
/// and a whisker from the fastest run to the slowest.
fn draw_timed_line<DB, X>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    points: &[(f64, &HostTiming)],
    label: &str,
    color: RGBColor,
) -> Drawn
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64>,
{
    chart
        .draw_series(LineSeries::new(
            points.iter().map(|(x, t)| (*x, t.median())),
            color.stroke_width(2),
        ))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    chart.draw_series(
        points
            .iter()
            .map(|(x, t)| Circle::new((*x, t.median()), 4, color.filled())),
    )?;
    for (x, t) in points {
        let low = t.seconds.iter().copied().fold(f64::INFINITY, f64::min);
        let high = t.seconds.iter().copied().fold(0.0, f64::max);
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(*x, low), (*x, high)],
            color.stroke_width(1),
        )))?;
    }
    Ok(())
}

/// Fig 6: transfer time against the sender's buffer size (read-write) and
/// map size (mmap).
fn draw_fig6(svg: &mut String, results: &HostResults) -> Drawn {
    let fig: Vec<&HostTiming> = counted(
        results
            .timings
            .iter()
            .filter(|t| t.part == HostPart::Fig6)
            .collect(),
    );
    let top = fig.iter().map(|t| t.median()).fold(0.0, f64::max) * 1.15;
    let workload = fig.first().map(|t| t.workload.clone()).unwrap_or_default();
    let root = SVGBackend::with_string(svg, (1000, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let low = FIG6_SIZES[0] as f64 / 1.5;
    let high = FIG6_SIZES[FIG6_SIZES.len() - 1] as f64 * 1.5;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Fig 6 (OS project): {workload}, sender's buffer size (read-write) and map size (mmap); receiver splice"),
            ("sans-serif", 18),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((low..high).log_scale().base(2.0), 0f64..top.max(0.001))?;
    let x_label = |x: &f64| {
        if FIG6_SIZES
            .iter()
            .any(|s| ((*s as f64) / x - 1.0).abs() < 0.01)
        {
            flexio::format_bytes(x.round() as u64)
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .x_labels(24)
        .x_label_formatter(&x_label)
        .x_desc("size of each read/write (buffer) or mapped window (map), log scale")
        .y_desc("transfer time, s (median; whiskers: min–max)")
        .draw()?;
    for (index, (send, label)) in [
        (MechanismName::ReadWrite, "read-write: buffer size"),
        (MechanismName::Mmap, "mmap: map size"),
    ]
    .into_iter()
    .enumerate()
    {
        let color = PALETTE[index];
        let points: Vec<(f64, &HostTiming)> = FIG6_SIZES
            .iter()
            .filter_map(|size| {
                let kind = HostContender::Fig6 {
                    send,
                    chunk: *size as u64,
                };
                fig.iter()
                    .find(|t| t.kind == kind)
                    .map(|t| (*size as f64, *t))
            })
            .collect();
        draw_timed_line(&mut chart, &points, label, color)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
