//! The `server` scenario: `flexio serve` against nginx (`sendfile on`),
//! both on loopback, loaded by `wrk`:
//!
//! - **cells**: 1, 4, 64 and 256 clients (kept-alive connections) fetching
//!   one file of 4 KiB, 1 MiB or 64 MiB: requests/s, throughput (bytes
//!   read, headers included), p50/p99 latency, and the server's CPU per
//!   GiB (utime + stime of the server and its children from
//!   `/proc/PID/stat` before and after);
//! - **latency under load**: the p99 of a 4 KiB request from one client
//!   while 4 clients download a large file, against the same request on an
//!   idle server;
//! - **latency beside hashing** (flexio only): the same probe while 8
//!   clients each ask `?manifest` of a different file not hashed yet
//!   ([`manifest_load`]);
//! - **fairness**: 4 equal clients, each on its own connection, fetching
//!   the large file for a fixed time: each client's rate and Jain's index
//!   over them, without and with a per-client rate limit (`flexio serve
//!   --rate-per-connection`, nginx `limit_rate`) — Cue's Table 8, where
//!   wuftpd served 1–4 clients.
//!
//! - **over TLS** (with `tls`): the same cells with both servers speaking
//!   HTTPS with one certificate (nginx `ssl`, TLS 1.2 and 1.3), and the
//!   large file downloaded whole by `flexio get https://` and by `curl`
//!   from each server ([`tls`]).
//!
//! Rounds interleave the servers (flexio, nginx, then nginx, flexio …);
//! the tables show medians. Both servers and wrk share the machine: the
//! figures compare the servers with each other under the same load, not
//! with a network.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::stats::{jain, median};

pub mod manifest_load;
pub use flexio_harness::{clients, servers};
pub mod tls;
pub mod wrk;

use servers::{ServerKind, ServerProcess, TlsFiles};
use wrk::{Load, WrkReport};

const GIB: f64 = (1u64 << 30) as f64;

/// The name of the 4 KiB file the latency probe fetches.
const PROBE_FILE: &str = "probe-4k";
/// The name of the large file of the load and fairness phases.
const LARGE_FILE: &str = "large";

/// What to run.
#[derive(Clone, Debug)]
pub struct ServerBenchOptions {
    /// A scratch directory (made, filled and left for the caller to
    /// remove): the served files and nginx's configuration.
    pub dir: PathBuf,
    /// The `flexio` binary whose `serve` is measured.
    pub flexio: PathBuf,
    /// Client counts of the cells.
    pub clients: Vec<u32>,
    /// File sizes of the cells.
    pub sizes: Vec<u64>,
    /// Counted rounds.
    pub rounds: usize,
    /// Seconds each wrk run (and each fairness run) lasts.
    pub seconds: u64,
    /// The large file of the load and fairness phases (1 GiB in the
    /// issue's run).
    pub large_size: u64,
    /// The per-client rate limit of the fairness phase, bytes per second.
    pub rate_per_client: u64,
    /// Equal clients in the fairness phase.
    pub fair_clients: usize,
    /// The cells again over TLS, and the large file downloaded over TLS.
    pub tls: bool,
    /// Clients asking, at once, for the manifest of a file each.
    pub manifest_clients: usize,
    /// Bytes of each file whose manifest is asked.
    pub manifest_size: u64,
}

impl ServerBenchOptions {
    /// The issue's run: 1, 4, 64, 256 clients; 4 KiB, 1 MiB, 64 MiB;
    /// 2 s per run; a 1 GiB file for the load; 32 MiB/s per client.
    pub fn issue(dir: PathBuf, flexio: PathBuf, rounds: usize) -> Self {
        ServerBenchOptions {
            dir,
            flexio,
            clients: vec![1, 4, 64, 256],
            sizes: vec![4 << 10, 1 << 20, 64 << 20],
            rounds,
            seconds: 2,
            large_size: 1 << 30,
            rate_per_client: 32 << 20,
            fair_clients: 4,
            tls: true,
            manifest_clients: 8,
            manifest_size: 1 << 30,
        }
    }

    /// A run of a few seconds (for tests): 1 and 4 clients, 4 KiB and
    /// 1 MiB, one 1 s round, a 64 MiB large file.
    pub fn quick(dir: PathBuf, flexio: PathBuf) -> Self {
        ServerBenchOptions {
            clients: vec![1, 4],
            sizes: vec![4 << 10, 1 << 20],
            rounds: 1,
            seconds: 1,
            large_size: 64 << 20,
            rate_per_client: 8 << 20,
            tls: false,
            manifest_size: 8 << 20,
            ..Self::issue(dir, flexio, 1)
        }
    }

    fn manifest_hash_seconds(&self) -> u64 {
        (self.manifest_clients as u64 * self.manifest_size) >> 31
    }

    /// Roughly how long the run takes, seconds.
    pub fn estimate_seconds(&self) -> u64 {
        let cells = (self.clients.len() * self.sizes.len()) as u64;
        let mut per_round =
            cells * 2 * (self.seconds + 1) + 2 * 3 * (self.seconds + 1) + 4 * self.seconds;
        // The probe beside the manifests, and their files' hashing beyond
        // it (BLAKE3 at about 1 GB/s a core, two cores).
        per_round += self.seconds + 1 + self.manifest_hash_seconds();
        if self.tls {
            // The cells again, and four downloads at about 200 MiB/s.
            per_round += cells * 2 * (self.seconds + 1) + 4 * (self.large_size >> 28).max(1);
        }
        per_round * self.rounds as u64 + 10
    }
}

/// One wrk run of one server in one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellRun {
    /// `flexio serve` or `nginx`.
    pub server: String,
    /// Bytes of the file fetched.
    pub size: u64,
    /// Concurrent clients.
    pub clients: u32,
    /// Round, from 1.
    pub round: usize,
    /// Over TLS.
    #[serde(default)]
    pub tls: bool,
    /// What wrk said.
    pub wrk: WrkReport,
    /// CPU seconds the server used during the run.
    pub server_cpu_s: f64,
}

impl CellRun {
    /// Requests per second.
    pub fn requests_per_s(&self) -> f64 {
        self.wrk.requests as f64 / self.wrk.seconds.max(1e-9)
    }

    /// Bytes read per second (headers included).
    pub fn bytes_per_s(&self) -> f64 {
        self.wrk.bytes_read as f64 / self.wrk.seconds.max(1e-9)
    }

    /// Server CPU seconds per GiB read by the clients.
    pub fn cpu_s_per_gib(&self) -> f64 {
        self.server_cpu_s / (self.wrk.bytes_read as f64 / GIB).max(1e-12)
    }
}

/// The latency probe on an idle server and under load, one round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadLatency {
    /// The server.
    pub server: String,
    /// Round, from 1.
    pub round: usize,
    /// The probe alone.
    pub idle: WrkReport,
    /// The probe while the load ran.
    pub loaded: WrkReport,
    /// The load itself (4 clients on the large file).
    pub load: WrkReport,
}

/// One fairness run: equal clients on one server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FairnessRun {
    /// The server.
    pub server: String,
    /// The per-client limit, bytes per second (`None`: unlimited).
    pub rate_limit: Option<u64>,
    /// Round, from 1.
    pub round: usize,
    /// Each client's body bytes per second.
    pub client_rates: Vec<f64>,
    /// Each client's body bytes.
    pub client_bytes: Vec<u64>,
    /// Jain's index over `client_rates`.
    pub jain: Option<f64>,
}

/// Everything the scenario measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerBenchResults {
    /// Every cell run.
    pub cells: Vec<CellRun>,
    /// Every latency-under-load round.
    pub latency: Vec<LoadLatency>,
    /// Every fairness run.
    pub fairness: Vec<FairnessRun>,
    /// What was left out, and why.
    pub skipped: Vec<String>,
    /// The large file's size.
    pub large_size: u64,
    /// Every download of the large file over TLS.
    #[serde(default)]
    pub downloads: Vec<tls::DownloadRun>,
    /// Every round of the probe beside manifests.
    #[serde(default)]
    pub manifest_latency: Vec<manifest_load::ManifestLatency>,
}

/// The served files: one per cell size (`f-SIZE`), the probe, the large
/// file; made world-readable, as nginx's workers need.
fn make_files(root: &Path, options: &ServerBenchOptions) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(root)?;
    let mut wanted: Vec<(String, u64)> = options
        .sizes
        .iter()
        .map(|&size| (format!("f-{size}"), size))
        .collect();
    wanted.push((PROBE_FILE.into(), 4 << 10));
    wanted.push((LARGE_FILE.into(), options.large_size));
    for index in 0..options.manifest_clients {
        wanted.push((manifest_load::file_name(index), options.manifest_size));
    }
    for (name, size) in wanted {
        let path = root.join(name);
        write_pattern(&path, size)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    }
    for dir in [root, options.dir.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Writes `size` bytes of a pseudo-random pattern (no holes) to `path`.
pub(crate) fn write_pattern(path: &Path, size: u64) -> io::Result<()> {
    use std::io::Write;
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut block = vec![0u8; 1 << 20];
    let mut x = size | 1;
    for byte in block.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *byte = x as u8;
    }
    let mut left = size;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        file.write_all(&block[..n])?;
        left -= n as u64;
    }
    file.flush()
}

/// Whether `flexio serve` takes `--rate-per-connection` (the pacing work).
fn flexio_has_rate_limit(flexio: &Path) -> bool {
    std::process::Command::new(flexio)
        .args(["serve", "--help"])
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("--rate-per-connection"))
}

/// The servers of a run: flexio always, nginx when installed.
struct Servers {
    running: Vec<ServerProcess>,
}

impl Servers {
    fn start(
        options: &ServerBenchOptions,
        root: &Path,
        rate_limit: Option<u64>,
        tls: Option<&TlsFiles>,
        skipped: &mut Vec<String>,
    ) -> io::Result<Self> {
        let mut running = Vec::new();
        let extra: Vec<String> = match rate_limit {
            Some(rate) if flexio_has_rate_limit(&options.flexio) => {
                vec!["--rate-per-connection".into(), rate.to_string()]
            }
            Some(_) => {
                skipped.push(
                    "flexio serve with a rate limit: this flexio has no --rate-per-connection"
                        .into(),
                );
                Vec::new()
            }
            None => Vec::new(),
        };
        if rate_limit.is_none() || !extra.is_empty() {
            running.push(ServerProcess::flexio(&options.flexio, root, &extra, tls)?);
        }
        match servers::nginx_binary() {
            Some(binary) => {
                let scratch = options.dir.join(match (rate_limit, tls) {
                    (Some(_), _) => "nginx-limited",
                    (None, Some(_)) => "nginx-tls",
                    (None, None) => "nginx",
                });
                match ServerProcess::nginx(&binary, root, &scratch, rate_limit, tls) {
                    Ok(server) => running.push(server),
                    Err(e) => skipped.push(format!("nginx: {e}")),
                }
            }
            None => skipped.push("nginx: not installed (apt-get install nginx-light)".into()),
        }
        Ok(Servers { running })
    }

    /// The servers in this round's order: flexio first in odd rounds.
    fn in_order(&self, round: usize) -> Vec<&ServerProcess> {
        let mut order: Vec<&ServerProcess> = self.running.iter().collect();
        if round.is_multiple_of(2) {
            order.reverse();
        }
        order
    }
}

/// One wrk run with the server's CPU measured around it.
fn measured(server: &ServerProcess, load: &Load, path: &str) -> io::Result<(WrkReport, f64)> {
    let before = server.cpu_seconds()?;
    let report = load.run(&server.url(path))?;
    let after = server.cpu_seconds()?;
    Ok((report, after - before))
}

/// Runs the scenario; `progress` gets a line per phase.
///
/// # Errors
/// The files cannot be made, or `flexio serve` does not start. A missing
/// wrk, nginx or curl is a line in `skipped`, not an error.
pub fn run(
    options: &ServerBenchOptions,
    progress: &mut dyn FnMut(&str),
) -> io::Result<ServerBenchResults> {
    let root = options.dir.join("www");
    make_files(&root, options)?;
    let mut results = ServerBenchResults {
        large_size: options.large_size,
        ..ServerBenchResults::default()
    };
    let servers = Servers::start(options, &root, None, None, &mut results.skipped)?;
    let duration = Duration::from_secs(options.seconds.max(1));
    if wrk::available() {
        warm_up(&servers, progress);
        for round in 1..=options.rounds {
            progress(&format!("cells, round {round} of {}", options.rounds));
            cells_round(&servers, options, round, &mut results)?;
            progress(&format!("latency under load, round {round}"));
            for server in servers.in_order(round) {
                results
                    .latency
                    .push(latency_round(server, round, duration)?);
            }
            if options.manifest_clients > 0 {
                progress(&format!("latency beside manifests, round {round}"));
                results.manifest_latency.push(manifest_load::round(
                    &options.flexio,
                    &root,
                    &format!("/{PROBE_FILE}"),
                    options.manifest_clients,
                    options.manifest_size,
                    duration,
                    round,
                )?);
            }
        }
    } else {
        results
            .skipped
            .push("wrk: not installed (apt-get install wrk): no cells and no latency".into());
    }
    progress("fairness without a limit");
    let large = format!("/{LARGE_FILE}");
    fairness(&servers, None, options, &large, duration, &mut results)?;
    drop(servers);
    progress("fairness with a per-client limit");
    let limited = Servers::start(
        options,
        &root,
        Some(options.rate_per_client),
        None,
        &mut results.skipped,
    )?;
    fairness(
        &limited,
        Some(options.rate_per_client),
        options,
        &large,
        duration,
        &mut results,
    )?;
    drop(limited);
    if options.tls {
        tls::run(options, &root, &mut results, progress)?;
    }
    Ok(results)
}

/// One short load on each server before anything counts.
fn warm_up(servers: &Servers, progress: &mut dyn FnMut(&str)) {
    progress("warming up both servers");
    for server in &servers.running {
        let _ = Load::clients(4, Duration::from_secs(1)).run(&server.url("/f-4096"));
    }
}

/// Every cell (size × clients) once on each server, in this round's order.
fn cells_round(
    servers: &Servers,
    options: &ServerBenchOptions,
    round: usize,
    results: &mut ServerBenchResults,
) -> io::Result<()> {
    let duration = Duration::from_secs(options.seconds.max(1));
    for scenario::ServerCell { size, clients } in scenario::wrk_cells(options) {
        let load = Load::clients(clients, duration);
        for server in servers.in_order(round) {
            let (report, cpu) = measured(server, &load, &format!("/f-{size}"))?;
            results.cells.push(CellRun {
                server: server.kind.name().into(),
                size,
                clients,
                round,
                tls: server.tls,
                wrk: report,
                server_cpu_s: cpu,
            });
        }
    }
    Ok(())
}

/// The probe alone, then beside 4 clients downloading the large file.
fn latency_round(
    server: &ServerProcess,
    round: usize,
    duration: Duration,
) -> io::Result<LoadLatency> {
    let probe = Load {
        connections: 1,
        threads: 1,
        duration,
        timeout: Duration::from_secs(10),
    };
    let path = format!("/{PROBE_FILE}");
    let (probe_url, large_url) = (server.url(&path), server.url(&format!("/{LARGE_FILE}")));
    let idle = probe.run(&probe_url)?;
    let load = Load {
        connections: 4,
        threads: 2,
        // The load outlasts the probe on both sides.
        duration: duration + Duration::from_secs(1),
        timeout: Duration::from_secs(120),
    };
    let loader = std::thread::spawn(move || load.run(&large_url));
    std::thread::sleep(Duration::from_millis(400));
    let loaded = probe.run(&probe_url);
    let load = loader
        .join()
        .map_err(|_| io::Error::other("the load thread panicked"))??;
    Ok(LoadLatency {
        server: server.kind.name().into(),
        round,
        idle,
        loaded: loaded?,
        load,
    })
}

fn fairness(
    servers: &Servers,
    rate_limit: Option<u64>,
    options: &ServerBenchOptions,
    path: &str,
    duration: Duration,
    results: &mut ServerBenchResults,
) -> io::Result<()> {
    for round in 1..=options.rounds {
        for server in servers.in_order(round) {
            let shares =
                clients::equal_clients(server.address, path, options.fair_clients, duration)?;
            let client_rates: Vec<f64> = shares.iter().map(|s| s.rate()).collect();
            results.fairness.push(FairnessRun {
                server: server.kind.name().into(),
                rate_limit,
                round,
                jain: jain(&client_rates),
                client_bytes: shares.iter().map(|s| s.bytes).collect(),
                client_rates,
            });
        }
    }
    Ok(())
}

/// The fairness runs of one server at one limit, summarised.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FairnessSummary {
    /// The server.
    pub server: String,
    /// The per-client limit, bytes per second (`None`: unlimited).
    pub rate_limit: Option<u64>,
    /// The median Jain index over rounds.
    pub jain: Option<f64>,
    /// Each client's median rate, bytes per second.
    pub client_rates: Vec<f64>,
}

/// The medians of one server in one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    /// The server.
    pub server: String,
    /// File size.
    pub size: u64,
    /// Clients.
    pub clients: u32,
    /// Over TLS.
    pub tls: bool,
    /// Median requests per second.
    pub requests_per_s: f64,
    /// Median bytes per second.
    pub bytes_per_s: f64,
    /// Median p50 latency, microseconds.
    pub p50_us: Option<f64>,
    /// Median p99 latency, microseconds.
    pub p99_us: Option<f64>,
    /// Median server CPU seconds per GiB.
    pub cpu_s_per_gib: f64,
    /// Errors over all rounds.
    pub errors: u64,
}

fn med(values: impl Iterator<Item = f64>) -> f64 {
    median(&mut values.collect::<Vec<_>>())
}

fn med_opt(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut values: Vec<f64> = values.flatten().collect();
    (!values.is_empty()).then(|| median(&mut values))
}

impl ServerBenchResults {
    /// Per (TLS or not, size, clients, server): the medians over rounds,
    /// plain cells first.
    pub fn summaries(&self) -> Vec<CellSummary> {
        let mut keys: Vec<(bool, u64, u32, String)> = self
            .cells
            .iter()
            .map(|c| (c.tls, c.size, c.clients, c.server.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .map(|(tls, size, clients, server)| {
                let runs: Vec<&CellRun> = self
                    .cells
                    .iter()
                    .filter(|c| {
                        c.tls == tls && c.size == size && c.clients == clients && c.server == server
                    })
                    .collect();
                CellSummary {
                    requests_per_s: med(runs.iter().map(|r| r.requests_per_s())),
                    bytes_per_s: med(runs.iter().map(|r| r.bytes_per_s())),
                    p50_us: med_opt(runs.iter().map(|r| r.wrk.p50_us)),
                    p99_us: med_opt(runs.iter().map(|r| r.wrk.p99_us)),
                    cpu_s_per_gib: med(runs.iter().map(|r| r.cpu_s_per_gib())),
                    errors: runs.iter().map(|r| r.wrk.errors).sum(),
                    server,
                    size,
                    clients,
                    tls,
                }
            })
            .collect()
    }

    /// flexio's median over nginx's, per cell, of `value` (`None` where one
    /// of them did not run).
    pub fn ratio(
        &self,
        cell: (u64, u32, bool),
        value: impl Fn(&CellSummary) -> f64,
    ) -> Option<f64> {
        let (size, clients, tls) = cell;
        let summaries = self.summaries();
        let find = |server: ServerKind| {
            summaries.iter().find(|s| {
                s.tls == tls && s.size == size && s.clients == clients && s.server == server.name()
            })
        };
        let (flexio, nginx) = (find(ServerKind::Flexio)?, find(ServerKind::Nginx)?);
        Some(value(flexio) / value(nginx))
    }

    /// Per server: median idle p99, median loaded p99 (microseconds).
    pub fn latency_summary(&self) -> Vec<(String, Option<f64>, Option<f64>)> {
        let mut servers: Vec<String> = self.latency.iter().map(|l| l.server.clone()).collect();
        servers.dedup();
        servers.sort();
        servers.dedup();
        servers
            .into_iter()
            .map(|server| {
                let rounds: Vec<&LoadLatency> =
                    self.latency.iter().filter(|l| l.server == server).collect();
                let idle = med_opt(rounds.iter().map(|l| l.idle.p99_us));
                let loaded = med_opt(rounds.iter().map(|l| l.loaded.p99_us));
                (server, idle, loaded)
            })
            .collect()
    }

    /// Per (server, limit): the median Jain index and each client's
    /// median rate.
    pub fn fairness_summary(&self) -> Vec<FairnessSummary> {
        let mut keys: Vec<(String, Option<u64>)> = self
            .fairness
            .iter()
            .map(|f| (f.server.clone(), f.rate_limit))
            .collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .map(|(server, limit)| {
                let runs: Vec<&FairnessRun> = self
                    .fairness
                    .iter()
                    .filter(|f| f.server == server && f.rate_limit == limit)
                    .collect();
                let jain = med_opt(runs.iter().map(|f| f.jain));
                let clients = runs.iter().map(|f| f.client_rates.len()).max().unwrap_or(0);
                let rates = (0..clients)
                    .map(|i| med(runs.iter().filter_map(|f| f.client_rates.get(i).copied())))
                    .collect();
                FairnessSummary {
                    server,
                    rate_limit: limit,
                    jain,
                    client_rates: rates,
                }
            })
            .collect()
    }
}

mod report;
mod scenario;
pub use report::{table, write_charts};
pub use scenario::{ServerBench, ServerCell};
