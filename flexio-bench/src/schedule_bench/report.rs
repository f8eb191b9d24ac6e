//! The `schedule` scenario's table (Cue's Tables 3–5 beside it) and
//! charts.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::ScheduleSummary;
use crate::report::charts::plain::{write_line_chart, LineChart, PlainSeries};

fn schedule_label(s: &ScheduleSummary) -> String {
    match (s.chunks, s.pause_ms) {
        (Some(k), Some(t)) => format!("k={k} t={t}ms"),
        _ => "no schedule".into(),
    }
}

/// The grid as a table, each mechanism's unscheduled row first, then
/// Cue's figures.
pub fn table(summaries: &[ScheduleSummary], size: u64, chunk: usize) -> String {
    let mut text = format!(
        "schedule: {} to a loopback socket in {} chunks, the meter on the transfer's CPU (medians)\n",
        crate::report::table::short_size(size),
        crate::report::table::short_size(chunk as u64)
    );
    let _ = writeln!(
        text,
        "  {:<11} {:<15} {:>9} {:>10} {:>10} {:>10} {:>9} {:>7} {:>7} {:>16} {:>7}",
        "mechanism",
        "schedule",
        "MiB/s",
        "wall s/GiB",
        "sys s/GiB",
        "CPU s/GiB",
        "µs/chunk",
        "chunks",
        "pauses",
        "ctx sw/GiB v/inv",
        "kept"
    );
    for s in summaries {
        let _ = writeln!(
            text,
            "  {:<11} {:<15} {:>9.1} {:>10.3} {:>10.3} {:>10.3} {:>9.1} {:>7.0} {:>7.0} {:>16} {:>6.0}%",
            s.mechanism,
            schedule_label(s),
            s.bytes_per_s / (1u64 << 20) as f64,
            s.wall_s_per_gib,
            s.sys_s_per_gib,
            s.cpu_s_per_gib,
            s.us_per_chunk,
            s.calls,
            s.pauses,
            format!("{:.0}/{:.0}", s.voluntary_per_gib, s.involuntary_per_gib),
            s.meter_kept * 100.0
        );
    }
    let _ = writeln!(
        text,
        "  kept: the share of its solo rate the meter kept during the transfer (its solo rate is measured just before each one)\n"
    );
    let originals = crate::report::originals::texts(crate::report::originals::Beside::Schedule);
    if !originals.is_empty() {
        let _ = writeln!(text, "{}", originals.join("\n\n"));
    }
    text
}

/// `schedule-kept.svg`, `schedule-throughput.svg` and `schedule-cpu.svg`:
/// against T, a line per mechanism and K, the unscheduled transfer as a
/// dashed level line.
///
/// # Errors
/// A chart cannot be written.
pub fn write_charts(
    dir: &Path,
    summaries: &[ScheduleSummary],
    footer: &str,
) -> io::Result<Vec<PathBuf>> {
    let mut pauses: Vec<u64> = summaries.iter().filter_map(|s| s.pause_ms).collect();
    pauses.sort_unstable();
    pauses.dedup();
    let (low, high) = match (pauses.first(), pauses.last()) {
        (Some(&low), Some(&high)) => (low as f64, high as f64),
        _ => return Ok(Vec::new()),
    };
    let series = |value: &dyn Fn(&ScheduleSummary) -> f64| {
        let mut keys: Vec<(String, Option<u32>)> = summaries
            .iter()
            .map(|s| (s.mechanism.clone(), s.chunks))
            .collect();
        keys.dedup();
        keys.into_iter()
            .map(|(mechanism, chunks)| {
                let rows: Vec<&ScheduleSummary> = summaries
                    .iter()
                    .filter(|s| s.mechanism == mechanism && s.chunks == chunks)
                    .collect();
                match chunks {
                    Some(k) => PlainSeries {
                        label: format!("{mechanism} k={k}"),
                        points: rows
                            .iter()
                            .filter_map(|s| Some((s.pause_ms? as f64, value(s))))
                            .collect(),
                        dashed: false,
                    },
                    None => PlainSeries {
                        label: format!("{mechanism}, no schedule"),
                        points: vec![(low, value(rows[0])), (high, value(rows[0]))],
                        dashed: true,
                    },
                }
            })
            .collect::<Vec<_>>()
    };
    let charts = [
        (
            "schedule-kept.svg",
            "share of its solo rate the meter kept",
            "kept share",
            series(&|s| s.meter_kept),
            false,
        ),
        (
            "schedule-throughput.svg",
            "throughput of the scheduled transfer",
            "MiB/s (log scale)",
            series(&|s| s.bytes_per_s / (1u64 << 20) as f64),
            true,
        ),
        (
            "schedule-cpu.svg",
            "CPU (user + system) per GiB of the sending thread",
            "CPU s per GiB (log scale)",
            series(&|s| s.cpu_s_per_gib),
            true,
        ),
    ];
    let mut written = Vec::new();
    for (name, title, y_desc, series, log_y) in charts {
        let path = dir.join(name);
        write_line_chart(
            &path,
            &LineChart {
                title: format!("schedule (k chunks, then t ms): {title}"),
                x_desc: "t, pause in ms (log2 scale)".into(),
                y_desc: y_desc.into(),
                log_x: high / low >= 4.0,
                log_y,
                series,
                footer: footer.into(),
                ..LineChart::default()
            },
        )?;
        written.push(path);
    }
    Ok(written)
}
