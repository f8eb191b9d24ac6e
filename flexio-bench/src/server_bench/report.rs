//! The `server` scenario's table (with Cue's Table 8 beside it) and
//! charts.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use super::servers::ServerKind;
use super::{CellSummary, ServerBenchResults};
use crate::report::charts::plain::{write_line_chart, LineChart, PlainSeries};
use crate::report::table::short_size;

const MIB: f64 = (1u64 << 20) as f64;

fn or_dash(value: Option<f64>, scale: f64, digits: usize) -> String {
    value.map_or("-".into(), |v| format!("{:.*}", digits, v / scale))
}

/// The probe's p99 beside manifests: each round, with how much of the
/// probe's window the hashing covered.
fn manifest_text(text: &mut String, results: &ServerBenchResults) {
    let Some(first) = results.manifest_latency.first() else {
        return;
    };
    let _ = writeln!(
        text,
        "\np99 of a 4 KiB request to flexio serve while {} clients each ask ?manifest of a different {} file not hashed yet",
        first.manifest_s.len(),
        short_size(first.file_size)
    );
    for round in &results.manifest_latency {
        let slowest = round.manifest_s.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            text,
            "  round {}: p99 {:>9} ms  p50 {:>9} ms  {} requests, {} errors; manifests done in {slowest:.1} s, hashing through {:.0}% of the probe's window",
            round.round,
            or_dash(round.probe.p99_us, 1e3, 3),
            or_dash(round.probe.p50_us, 1e3, 3),
            round.probe.requests,
            round.probe.errors,
            round.overlap() * 100.0
        );
    }
}

/// The scenario's text: the cells (medians, flexio's ratios to nginx),
/// latency under load and beside manifests, fairness, the cells and downloads over TLS, what
/// was skipped, and Cue's Table 8.
pub fn table(results: &ServerBenchResults) -> String {
    let mut text = String::new();
    cells_text(&mut text, results, false);
    let latency = results.latency_summary();
    if !latency.is_empty() {
        let _ = writeln!(
            text,
            "\np99 of a 4 KiB request, idle and while 4 clients download {} (medians)",
            short_size(results.large_size)
        );
        for (server, idle, loaded) in latency {
            let ratio = match (idle, loaded) {
                (Some(i), Some(l)) if i > 0.0 => format!("{:.2}×", l / i),
                _ => "-".into(),
            };
            let _ = writeln!(
                text,
                "  {server:<13} idle {:>9} ms  loaded {:>9} ms  loaded/idle {ratio}",
                or_dash(idle, 1e3, 3),
                or_dash(loaded, 1e3, 3)
            );
        }
    }
    manifest_text(&mut text, results);
    let fairness = results.fairness_summary();
    if !fairness.is_empty() {
        let _ = writeln!(
            text,
            "\nequal clients fetching {} (each on its own connection; medians)",
            short_size(results.large_size)
        );
        for f in fairness {
            let (server, limit, jain) = (&f.server, f.rate_limit, f.jain);
            let rates: Vec<String> = f
                .client_rates
                .iter()
                .map(|r| format!("{:.1}", r / MIB))
                .collect();
            let _ = writeln!(
                text,
                "  {server:<13} {:<22} Jain {:>6}  MiB/s per client: {}",
                limit.map_or("no limit".into(), |l| format!(
                    "limit {:.1} MiB/s",
                    l as f64 / MIB
                )),
                jain.map_or("-".into(), |j| format!("{j:.4}")),
                rates.join(" ")
            );
        }
    }
    cells_text(&mut text, results, true);
    super::tls::downloads_text(&mut text, results);
    for line in &results.skipped {
        let _ = writeln!(text, "skipped: {line}");
    }
    for original in crate::report::originals::texts(crate::report::originals::Beside::ServeClients)
    {
        let _ = writeln!(text, "\n{original}");
    }
    text
}

/// The cells, plain or over TLS: medians per server, then flexio's ratios.
fn cells_text(text: &mut String, results: &ServerBenchResults, tls: bool) {
    let summaries: Vec<CellSummary> = results
        .summaries()
        .into_iter()
        .filter(|s| s.tls == tls)
        .collect();
    if summaries.is_empty() {
        return;
    }
    let over = if tls {
        "\nover TLS, both servers with one certificate: "
    } else {
        ""
    };
    let _ = writeln!(
        text,
        "{over}server cells (medians; throughput is bytes read by wrk, headers included; CPU is the server's per GiB read)"
    );
    let _ = writeln!(
        text,
        "  {:<8} {:>7} {:<13} {:>10} {:>10} {:>10} {:>10} {:>9} {:>6}",
        "size", "clients", "server", "req/s", "MiB/s", "p50 ms", "p99 ms", "CPU s/GiB", "errors"
    );
    for s in &summaries {
        let _ = writeln!(
            text,
            "  {:<8} {:>7} {:<13} {:>10.0} {:>10.1} {:>10} {:>10} {:>9.3} {:>6}",
            short_size(s.size),
            s.clients,
            s.server,
            s.requests_per_s,
            s.bytes_per_s / MIB,
            or_dash(s.p50_us, 1e3, 3),
            or_dash(s.p99_us, 1e3, 3),
            s.cpu_s_per_gib,
            s.errors
        );
    }
    let mut cells: Vec<(u64, u32)> = summaries.iter().map(|s| (s.size, s.clients)).collect();
    cells.dedup();
    let _ = writeln!(
        text,
        "\nflexio serve / nginx{} (throughput and req/s above 1: flexio ahead; CPU/GiB and p99 below 1: flexio ahead)",
        if tls { " over TLS" } else { "" }
    );
    for (size, clients) in cells {
        let ratio = |f: &dyn Fn(&CellSummary) -> f64| {
            results
                .ratio((size, clients, tls), f)
                .map_or("-".into(), |r| format!("{r:.2}×"))
        };
        let _ = writeln!(
            text,
            "  {:<8} {:>4} clients: throughput {:>7}  req/s {:>7}  CPU/GiB {:>7}  p99 {:>7}",
            short_size(size),
            clients,
            ratio(&|s| s.bytes_per_s),
            ratio(&|s| s.requests_per_s),
            ratio(&|s| s.cpu_s_per_gib),
            ratio(&|s| s.p99_us.unwrap_or(f64::NAN)),
        );
    }
}

/// `server-throughput.svg`, `server-requests.svg`, `server-cpu.svg`
/// (against clients, a line per server and size), `server-latency.svg`
/// (p99 idle and loaded) and `server-fairness.svg` (each client's rate);
/// the paths written.
///
/// # Errors
/// A chart cannot be written.
pub fn write_charts(
    dir: &Path,
    results: &ServerBenchResults,
    footer: &str,
) -> io::Result<Vec<PathBuf>> {
    let mut written = by_clients_charts(dir, results, footer)?;
    written.extend(latency_chart(dir, results, footer)?);
    written.extend(fairness_chart(dir, results, footer)?);
    Ok(written)
}

/// Throughput, requests and CPU against clients: a line per server and size.
fn by_clients_charts(
    dir: &Path,
    results: &ServerBenchResults,
    footer: &str,
) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let summaries = results.summaries();
    if summaries.is_empty() {
        return Ok(written);
    }
    let mut sizes: Vec<u64> = summaries.iter().map(|s| s.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let series = |value: &dyn Fn(&CellSummary) -> f64| -> Vec<PlainSeries> {
        let mut all = Vec::new();
        for tls in [false, true] {
            for &size in &sizes {
                for server in [ServerKind::Flexio, ServerKind::Nginx] {
                    let points: Vec<(f64, f64)> = summaries
                        .iter()
                        .filter(|s| s.tls == tls && s.size == size && s.server == server.name())
                        .map(|s| (f64::from(s.clients), value(s)))
                        .collect();
                    if !points.is_empty() {
                        all.push(PlainSeries {
                            label: format!(
                                "{} {}{}",
                                server.name(),
                                short_size(size),
                                if tls { " TLS" } else { "" }
                            ),
                            points,
                            dashed: server == ServerKind::Nginx,
                        });
                    }
                }
            }
        }
        all
    };
    let log_x = summaries.iter().any(|s| s.clients >= 16);
    let charts = [
        (
            "server-throughput.svg",
            "throughput against clients",
            "MiB/s read by wrk (log scale)",
            series(&|s| s.bytes_per_s / MIB),
        ),
        (
            "server-requests.svg",
            "requests per second against clients",
            "requests/s (log scale)",
            series(&|s| s.requests_per_s),
        ),
        (
            "server-cpu.svg",
            "server CPU per GiB served",
            "CPU s per GiB (log scale)",
            series(&|s| s.cpu_s_per_gib),
        ),
    ];
    for (name, title, y_desc, series) in charts {
        let path = dir.join(name);
        write_line_chart(
            &path,
            &LineChart {
                title: format!("flexio serve (solid) vs nginx (dashed): {title}"),
                x_desc: "concurrent clients".into(),
                y_desc: y_desc.into(),
                log_x,
                log_y: true,
                series,
                footer: footer.into(),
                ..LineChart::default()
            },
        )?;
        written.push(path);
    }
    Ok(written)
}

/// The p99 of a small request, idle and under load.
fn latency_chart(
    dir: &Path,
    results: &ServerBenchResults,
    footer: &str,
) -> io::Result<Option<PathBuf>> {
    let latency = results.latency_summary();
    if latency.is_empty() {
        return Ok(None);
    }
    let path = dir.join("server-latency.svg");
    let series = latency
        .iter()
        .map(|(server, idle, loaded)| PlainSeries {
            label: server.clone(),
            points: [(0.0, *idle), (1.0, *loaded)]
                .into_iter()
                .filter_map(|(x, y)| Some((x, y? / 1e3)))
                .collect(),
            dashed: server == ServerKind::Nginx.name(),
        })
        .collect();
    write_line_chart(
        &path,
        &LineChart {
            title: format!(
                "p99 of a 4 KiB request: idle, and while 4 clients download {}",
                short_size(results.large_size)
            ),
            x_desc: String::new(),
            y_desc: "p99 latency, ms".into(),
            categories: vec!["idle".into(), "under load".into()],
            series,
            footer: footer.into(),
            ..LineChart::default()
        },
    )?;
    Ok(Some(path))
}

/// Each equal client's rate, with Jain's index in the legend.
fn fairness_chart(
    dir: &Path,
    results: &ServerBenchResults,
    footer: &str,
) -> io::Result<Option<PathBuf>> {
    let fairness = results.fairness_summary();
    if fairness.is_empty() {
        return Ok(None);
    }
    let path = dir.join("server-fairness.svg");
    let series = fairness
        .iter()
        .map(|f| PlainSeries {
            label: format!(
                "{}, {} (Jain {})",
                f.server,
                f.rate_limit.map_or("no limit".into(), |l| format!(
                    "{:.0} MiB/s",
                    l as f64 / MIB
                )),
                f.jain.map_or("-".into(), |j| format!("{j:.3}"))
            ),
            points: f
                .client_rates
                .iter()
                .enumerate()
                .map(|(i, r)| (i as f64, r / MIB))
                .collect(),
            dashed: f.server == ServerKind::Nginx.name(),
        })
        .collect();
    let clients = fairness
        .iter()
        .map(|f| f.client_rates.len())
        .max()
        .unwrap_or(0);
    write_line_chart(
        &path,
        &LineChart {
            title: "equal clients: each client's rate".into(),
            x_desc: "client".into(),
            y_desc: "MiB/s (log scale)".into(),
            log_y: true,
            categories: (1..=clients).map(|i| format!("client {i}")).collect(),
            series,
            footer: footer.into(),
            ..LineChart::default()
        },
    )?;
    Ok(Some(path))
}
