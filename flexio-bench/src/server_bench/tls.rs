//! The `server` scenario over TLS: both servers are given one certificate
//! (self-signed for 127.0.0.1, made here), the cells run again under wrk
//! over `https://`, and the large file is downloaded whole, as a process
//! into a fresh file each time, by `flexio get https://` and by `curl` from
//! each server — the client pair a user would compare.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::servers::{ServerKind, ServerProcess, TlsFiles};
use super::{cells_round, warm_up, ServerBenchOptions, ServerBenchResults, Servers, LARGE_FILE};
use crate::host_bench::servers::run_bounded;
use crate::report::table::short_size;
use crate::stats::median;

/// One whole download of the large file over TLS.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DownloadRun {
    /// `flexio get` or `curl`.
    pub client: String,
    /// The server it fetched from.
    pub server: String,
    /// Round, from 1.
    pub round: usize,
    /// Wall seconds of the client process, start to exit.
    pub seconds: f64,
    /// Bytes that arrived (the file's size: a short download is an error).
    pub bytes: u64,
}

/// The clients of the downloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Client {
    FlexioGet,
    Curl,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::FlexioGet => "flexio get",
            Client::Curl => "curl",
        }
    }
}

/// Writes a self-signed certificate for 127.0.0.1 and localhost and its
/// key into `dir` (not a CA, as a server's own certificate must be).
///
/// # Errors
/// The certificate cannot be made or written.
pub fn make_certificate(dir: &Path) -> io::Result<TlsFiles> {
    std::fs::create_dir_all(dir)?;
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
        .map_err(|e| io::Error::other(format!("making a certificate: {e}")))?;
    let files = TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    std::fs::write(&files.cert, made.cert.pem())?;
    std::fs::write(&files.key, made.key_pair.serialize_pem())?;
    Ok(files)
}

/// The TLS phase: the cells over `https://`, then the downloads.
pub(super) fn run(
    options: &ServerBenchOptions,
    root: &Path,
    results: &mut ServerBenchResults,
    progress: &mut dyn FnMut(&str),
) -> io::Result<()> {
    let scratch = options.dir.join("tls");
    let files = make_certificate(&scratch)?;
    let servers = Servers::start(options, root, None, Some(&files), &mut results.skipped)?;
    if super::wrk::available() {
        warm_up(&servers, progress);
        for round in 1..=options.rounds {
            progress(&format!(
                "cells over TLS, round {round} of {}",
                options.rounds
            ));
            cells_round(&servers, options, round, results)?;
        }
    }
    let curl = crate::peers::find_program("curl");
    if curl.is_none() {
        results
            .skipped
            .push("curl: not installed (apt-get install curl): no curl downloads over TLS".into());
    }
    let clients: Vec<Client> = [Client::FlexioGet, Client::Curl]
        .into_iter()
        .filter(|c| *c == Client::FlexioGet || curl.is_some())
        .collect();
    let destination = scratch.join("download");
    for round in 1..=options.rounds {
        progress(&format!(
            "{} downloads over TLS, round {round} of {}",
            short_size(options.large_size),
            options.rounds
        ));
        for server in servers.in_order(round) {
            for &client in &clients {
                let run = download(options, &files, server, client, &destination)?;
                results.downloads.push(DownloadRun { round, ..run });
            }
        }
    }
    Ok(())
}

/// One download of the large file by `client` from `server` into a fresh
/// `destination`, removed afterwards.
fn download(
    options: &ServerBenchOptions,
    files: &TlsFiles,
    server: &ServerProcess,
    client: Client,
    destination: &Path,
) -> io::Result<DownloadRun> {
    let _ = std::fs::remove_file(destination);
    let url = server.url(&format!("/{LARGE_FILE}"));
    let command = download_command(&options.flexio, client, files, &url, destination);
    // A generous bound: 20 MiB/s at the least, a minute at the least.
    let limit = Duration::from_secs((options.large_size >> 20) / 20 + 60);
    let (output, seconds) = run_bounded(command, limit).map_err(io::Error::other)?;
    let bytes = std::fs::metadata(destination).map_or(0, |m| m.len());
    let _ = std::fs::remove_file(destination);
    if !output.status.success() || bytes != options.large_size {
        return Err(io::Error::other(format!(
            "{} {url}: {} with {bytes} of {} bytes: {}",
            client.name(),
            output.status,
            options.large_size,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(DownloadRun {
        client: client.name().into(),
        server: server.kind.name().into(),
        round: 0,
        seconds,
        bytes,
    })
}

/// The command line of one download, each client trusting the one
/// certificate by its own flag.
fn download_command(
    flexio: &Path,
    client: Client,
    files: &TlsFiles,
    url: &str,
    destination: &Path,
) -> Command {
    let mut command;
    match client {
        Client::FlexioGet => {
            command = Command::new(flexio);
            command
                .args(["get", url])
                .arg(destination)
                .arg("--ca")
                .arg(&files.cert)
                .arg("-q");
        }
        Client::Curl => {
            command = Command::new("curl");
            command
                .args(["-sS", "--fail", "--cacert"])
                .arg(&files.cert)
                .arg(url)
                .arg("-o")
                .arg(destination);
        }
    }
    command
}

/// Per (client, server): the median seconds and their range.
pub fn download_summary(results: &ServerBenchResults) -> Vec<(String, String, f64, f64, f64)> {
    let mut keys: Vec<(String, String)> = results
        .downloads
        .iter()
        .map(|d| (d.client.clone(), d.server.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|(client, server)| {
            let mut seconds: Vec<f64> = results
                .downloads
                .iter()
                .filter(|d| d.client == client && d.server == server)
                .map(|d| d.seconds)
                .collect();
            let low = seconds.iter().copied().fold(f64::INFINITY, f64::min);
            let high = seconds.iter().copied().fold(0.0, f64::max);
            let middle = median(&mut seconds);
            (client, server, middle, low, high)
        })
        .collect()
}

/// The downloads' lines of the scenario's text: each pair's median and
/// range, and `flexio get` from `flexio serve` against `curl` from nginx.
pub(super) fn downloads_text(text: &mut String, results: &ServerBenchResults) {
    let summary = download_summary(results);
    if summary.is_empty() {
        return;
    }
    let _ = writeln!(
        text,
        "\n{} downloaded whole over TLS (a process into a fresh file; medians, range)",
        short_size(results.large_size)
    );
    let gib = results.large_size as f64 / (1u64 << 30) as f64;
    for (client, server, middle, low, high) in &summary {
        let _ = writeln!(
            text,
            "  {:<11} from {:<13} {:>7.3} s  ({low:.3}–{high:.3})  {:>7.1} MiB/s",
            client,
            server,
            middle,
            gib * 1024.0 / middle.max(1e-9)
        );
    }
    let find = |client: Client, server: ServerKind| {
        summary
            .iter()
            .find(|s| s.0 == client.name() && s.1 == server.name())
            .map(|s| s.2)
    };
    if let (Some(ours), Some(theirs)) = (
        find(Client::FlexioGet, ServerKind::Flexio),
        find(Client::Curl, ServerKind::Nginx),
    ) {
        let _ = writeln!(
            text,
            "  flexio get from flexio serve against curl from nginx: {:.2}× the throughput",
            theirs / ours.max(1e-9)
        );
    }
}
