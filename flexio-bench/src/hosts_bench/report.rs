//! The `hosts` scenario's table (medians, spread, the four ratios per N
//! and the targets) and its chart of time against N.

use std::io;
use std::path::{Path, PathBuf};

use super::{Contender, HostsResults, HostsTiming};
use crate::report::charts::plain::{write_line_chart, LineChart, PlainSeries};

fn find(results: &HostsResults, n: usize, contender: Contender) -> Option<&HostsTiming> {
    results
        .timings
        .iter()
        .find(|t| t.n == n && t.contender == contender)
}

fn median(results: &HostsResults, n: usize, contender: Contender) -> f64 {
    find(results, n, contender).map_or(f64::INFINITY, HostsTiming::median)
}

/// The four ratios at `n`: shards' speed over one client's, mirrors' over
/// one server's, chain's time over one transfer's, naive's over one
/// transfer's (NaN where a contender failed).
pub fn ratios(results: &HostsResults, n: usize) -> [f64; 4] {
    let m = |c| median(results, n, c);
    let ratio = |a: f64, b: f64| {
        if a.is_finite() && b.is_finite() && b > 0.0 {
            a / b
        } else {
            f64::NAN
        }
    };
    [
        ratio(m(Contender::OneClient), m(Contender::Shards)),
        ratio(m(Contender::OneServer), m(Contender::Mirrors)),
        ratio(m(Contender::Chain), m(Contender::OneTransfer)),
        ratio(m(Contender::Naive), m(Contender::OneTransfer)),
    ]
}

fn counts(results: &HostsResults) -> Vec<usize> {
    let mut counts: Vec<usize> = results.timings.iter().map(|t| t.n).collect();
    counts.dedup();
    counts
}

/// The table: per N every contender's median and range, then the ratios
/// and the targets.
pub fn table(results: &HostsResults) -> String {
    let mut text = format!(
        "hosts: {} per transfer, every link at {}/s\n{}\n",
        flexio::format_bytes(results.bytes),
        flexio::format_bytes(results.rate),
        results.network
    );
    for n in counts(results) {
        text += &format!("\nN = {n}\n");
        for contender in Contender::ALL {
            let Some(timing) = find(results, n, contender) else {
                continue;
            };
            match &timing.failed {
                Some(why) => text += &format!("  {:<20} FAILED: {why}\n", contender.name()),
                None => {
                    let low = timing.seconds.iter().copied().fold(f64::INFINITY, f64::min);
                    let high = timing.seconds.iter().copied().fold(0.0, f64::max);
                    text += &format!(
                        "  {:<20} {:>8.2} s  (range {:.2}–{:.2}, {} runs)\n",
                        contender.name(),
                        timing.median(),
                        low,
                        high,
                        timing.seconds.len()
                    );
                }
            }
        }
        let [shards, mirrors, chain, naive] = ratios(results, n);
        text += &format!(
            "  shards/one {shards:.2}x faster · mirrors/one {mirrors:.2}x faster · chain {chain:.2}x and naive {naive:.2}x one transfer's time\n"
        );
    }
    text += "\ntargets (issue 29)\n";
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let have = counts(results);
    if have.contains(&4) {
        let [shards, mirrors, _, _] = ratios(results, 4);
        text += &format!(
            "  4 shards >= 3.5x one client: {shards:.2}x {}\n  4 mirrors >= 3.5x one server: {mirrors:.2}x {}\n",
            verdict(shards >= 3.5),
            verdict(mirrors >= 3.5)
        );
    } else {
        text += "  4 shards, 4 mirrors: N = 4 not run\n";
    }
    if have.contains(&8) {
        let [_, _, chain, naive] = ratios(results, 8);
        text += &format!(
            "  chain of 8 <= 1.3x one transfer: {chain:.2}x {} (naive fan-out: {naive:.2}x, ~8x expected){}\n",
            verdict(chain <= 1.3),
            if results.bytes < 1 << 30 {
                format!("; at {}, not the 1 GiB of the target", flexio::format_bytes(results.bytes))
            } else {
                String::new()
            }
        );
    } else {
        text += "  chain of 8: N = 8 not run\n";
    }
    text
}

/// Writes `hosts.svg`: every contender's median time against N.
///
/// # Errors
/// Nothing to draw, or the file cannot be written.
pub fn write_chart(results: &HostsResults, out: &Path) -> io::Result<PathBuf> {
    let series = Contender::ALL
        .iter()
        .map(|&contender| PlainSeries {
            label: contender.name().to_string(),
            points: counts(results)
                .into_iter()
                .map(|n| (n as f64, median(results, n, contender)))
                .filter(|(_, y)| y.is_finite())
                .collect(),
            dashed: matches!(
                contender,
                Contender::OneClient | Contender::OneServer | Contender::OneTransfer
            ),
        })
        .collect();
    let chart = LineChart {
        title: format!(
            "hosts: {} per transfer, every link at {}/s",
            flexio::format_bytes(results.bytes),
            flexio::format_bytes(results.rate)
        ),
        x_desc: "hosts N".into(),
        y_desc: "median wall seconds".into(),
        series,
        footer: "each contender a group of flexio processes, first spawn to last exit; dashed: the single-transfer references".into(),
        ..LineChart::default()
    };
    let path = out.join("hosts.svg");
    write_line_chart(&path, &chart)?;
    Ok(path)
}
