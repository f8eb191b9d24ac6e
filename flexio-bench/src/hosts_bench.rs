//! The `hosts` scenario (issue 29): N hosts as network namespaces on a
//! bridge, the servers in a hub namespace, every link's rate set by
//! flexio itself (`serve --rate-total R` or `get --rate R`: this machine
//! has no `tc`). For each N three comparisons, every contender a group of
//! `flexio` processes timed from the first spawn to the last exit:
//!
//! - N shards (`get --shard k/N`, each client at R) against one client at R;
//! - N mirrors (`get --mirror`, each server at R) against one server at R;
//! - a chain of N (`get --serve` links, the source at R) against one
//!   transfer and against naive fan-out (N clients of the one source).
//!
//! ```text
//! hosts_bench.rs   options, the groups, the rounds
//!  └ report.rs     the table, the ratios and the chart of time against N
//! ```

mod report;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::host_bench::link::{listening, Hosts};
use crate::host_bench::same;
use crate::host_bench::servers::Server;
use crate::stats::median;
use crate::{Error, Report, Result, Scenario};

pub use report::{ratios, table, write_chart};

/// What to run.
#[derive(Clone, Debug)]
pub struct HostsOptions {
    /// A new directory for the served data and the copies (removed by the
    /// caller).
    pub dir: PathBuf,
    /// The `flexio` binary to time.
    pub flexio: PathBuf,
    /// The host counts (each 2..=8).
    pub counts: Vec<usize>,
    /// Bytes of the file (mirrors, chain) and of the tree (shards).
    pub bytes: u64,
    /// Every link's rate in bytes per second.
    pub rate: u64,
    /// Timed rounds per contender (every round's copies are checked).
    pub runs: usize,
    /// Set by SIGINT/SIGTERM: stop after the current group.
    pub stop: Arc<AtomicBool>,
}

/// The comparison a contender belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contender {
    /// One client at R fetching the tree.
    OneClient,
    /// N shard clients, each at R.
    Shards,
    /// One client of one server at R.
    OneServer,
    /// One client of N servers, each at R.
    Mirrors,
    /// One host from the source at R.
    OneTransfer,
    /// N hosts in a chain from the source at R.
    Chain,
    /// N hosts each fetching from the source at R.
    Naive,
}

impl Contender {
    /// Every contender, in the table's order.
    pub const ALL: [Contender; 7] = [
        Contender::OneClient,
        Contender::Shards,
        Contender::OneServer,
        Contender::Mirrors,
        Contender::OneTransfer,
        Contender::Chain,
        Contender::Naive,
    ];

    /// Its name in tables and the chart.
    pub fn name(self) -> &'static str {
        match self {
            Contender::OneClient => "one client",
            Contender::Shards => "N shards",
            Contender::OneServer => "one server",
            Contender::Mirrors => "N mirrors",
            Contender::OneTransfer => "one transfer",
            Contender::Chain => "chain of N",
            Contender::Naive => "naive fan-out to N",
        }
    }
}

/// One contender's timings at one N.
#[derive(Clone, Debug, Serialize)]
pub struct HostsTiming {
    /// Hosts.
    pub n: usize,
    /// Which contender.
    pub contender: Contender,
    /// Wall seconds of each round (first spawn to last exit).
    pub seconds: Vec<f64>,
    /// Why it stopped, if it failed (a process failed or a copy differed).
    pub failed: Option<String>,
}

impl HostsTiming {
    /// The median wall time (infinite when no round counted).
    pub fn median(&self) -> f64 {
        if self.seconds.is_empty() || self.failed.is_some() {
            return f64::INFINITY;
        }
        median(&mut self.seconds.clone())
    }
}

/// What a run produced (`hosts.json`).
#[derive(Clone, Debug, Serialize)]
pub struct HostsResults {
    /// The network, in words.
    pub network: String,
    /// Bytes of the file and of the tree.
    pub bytes: u64,
    /// Every link's rate, bytes per second.
    pub rate: u64,
    /// Every timing.
    pub timings: Vec<HostsTiming>,
    /// Wall seconds the whole scenario took.
    pub seconds: f64,
}

/// The longest one group may take.
fn group_limit(options: &HostsOptions, n: usize) -> Duration {
    // Naive fan-out takes N transfers' time; four times that and a minute.
    let transfer = options.bytes as f64 / options.rate as f64;
    Duration::from_secs_f64(60.0 + 4.0 * transfer * n as f64)
}

/// The files every comparison moves: `one.bin` and `tree/` of 8 files,
/// each `bytes` in all, from a BLAKE3 stream (incompressible, no disk
/// reads of a source device).
fn make_data(served: &Path, bytes: u64) -> Result<()> {
    let write = |path: &Path, seed: &str, len: u64| -> Result<()> {
        let mut reader = blake3::Hasher::new().update(seed.as_bytes()).finalize_xof();
        let mut file = std::fs::File::create(path).map_err(|e| Error::io("create", path, e))?;
        let mut buffer = vec![0u8; 1 << 20];
        let mut left = len;
        while left > 0 {
            let take = left.min(buffer.len() as u64) as usize;
            reader.fill(&mut buffer[..take]);
            file.write_all(&buffer[..take])
                .map_err(|e| Error::io("write", path, e))?;
            left -= take as u64;
        }
        Ok(())
    };
    let tree = served.join("tree");
    std::fs::create_dir_all(&tree).map_err(|e| Error::io("mkdir", &tree, e))?;
    write(&served.join("one.bin"), "one", bytes)?;
    for i in 0..8u64 {
        let len = bytes / 8 + u64::from(i < bytes % 8);
        write(&tree.join(format!("f{i}")), &format!("tree {i}"), len)?;
    }
    Ok(())
}

/// A process of a group: its command and, for a chain's link, the port it
/// must listen on before the next is started.
struct Step {
    command: Command,
    listens_on: Option<u16>,
}

/// Starts the steps in order and waits for all: the wall seconds from the
/// first spawn to the last exit. Every process is killed past `limit`.
///
/// # Errors
/// A process cannot start, fails, does not listen in time, or runs past
/// `limit`.
fn run_group(steps: Vec<Step>, limit: Duration, logs: &Path) -> Result<f64> {
    let started = Instant::now();
    let deadline = started + limit;
    let mut children: Vec<Child> = Vec::new();
    let kill_all = |children: &mut Vec<Child>| {
        for child in children.iter_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    };
    for (index, mut step) in steps.into_iter().enumerate() {
        let log = logs.join(format!("process-{index}.log"));
        let file = std::fs::File::create(&log).map_err(|e| Error::io("create", &log, e))?;
        let errors = file
            .try_clone()
            .map_err(|e| Error::io("duplicate the descriptor of", &log, e))?;
        let spawned = flexio_sys::process::terminate_with_parent(&mut step.command)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(errors)
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) => {
                kill_all(&mut children);
                return Err(Error::spawn(
                    "start",
                    step.command.get_program().to_string_lossy(),
                    e,
                ));
            }
        };
        let pid = child.id();
        children.push(child);
        if let Some(port) = step.listens_on {
            while !listening(pid, port) {
                let exited = children[index].try_wait().ok().flatten();
                if exited.is_some() || Instant::now() > deadline {
                    kill_all(&mut children);
                    let said = std::fs::read_to_string(&log).unwrap_or_default();
                    return Err(Error::peer(
                        format!("process {index}"),
                        format!(
                            "did not listen on port {port} ({}): {}",
                            exited.map_or("past the limit".to_string(), |s| s.to_string()),
                            said.trim()
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
    let mut failed = None;
    for (index, child) in children.iter_mut().enumerate() {
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    if !status.success() && failed.is_none() {
                        let log = logs.join(format!("process-{index}.log"));
                        let said = std::fs::read_to_string(&log).unwrap_or_default();
                        failed = Some(Error::program(
                            format!("process {index}"),
                            format!("{status}: {}", said.trim()),
                        ));
                    }
                    break;
                }
                Ok(None) if Instant::now() > deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    failed.get_or_insert_with(|| {
                        Error::program(
                            format!("process {index}"),
                            format!("killed after {} s", limit.as_secs()),
                        )
                    });
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => {
                    failed.get_or_insert_with(|| {
                        Error::spawn("wait for", format!("process {index}"), e)
                    });
                    break;
                }
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    match failed {
        Some(why) => Err(why),
        None => Ok(seconds),
    }
}

/// The hub's servers: one unlimited (for the shard clients, which limit
/// themselves) and `max_n` at R (mirrors; the first is also the one
/// server and the chain's source).
struct Servers {
    free: Server,
    limited: Vec<Server>,
}

const FREE_PORT: u16 = 18000;
const LIMITED_PORT: u16 = 18001;
const CHAIN_PORT: u16 = 18100;

fn start_servers(
    hosts: &Hosts,
    options: &HostsOptions,
    served: &Path,
    logs: &Path,
    max_n: usize,
) -> Result<Servers> {
    let flexio = options.flexio.display().to_string();
    let start = |port: u16, rate: Option<u64>| {
        let mut command = hosts.hub_command(&flexio);
        command
            .arg("serve")
            .arg(served)
            .arg("--listen")
            .arg(format!("{}:{port}", Hosts::HUB))
            .args(["--public", "--read-only"]);
        if let Some(rate) = rate {
            command.arg("--rate-total").arg(rate.to_string());
        }
        let log = logs.join(format!("serve-{port}.log"));
        Server::start(&format!("flexio serve :{port}"), command, port, &log)
    };
    let free = start(FREE_PORT, None)?;
    let limited = (0..max_n)
        .map(|i| start(LIMITED_PORT + i as u16, Some(options.rate)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Servers { free, limited })
}

/// The URL of `path` on the hub's server at `port`.
fn hub_url(port: u16, path: &str) -> String {
    format!("http://{}:{port}/{path}", Hosts::HUB)
}

/// The processes of one contender at N, writing under `copies`, and what
/// each round's copies must equal: `(copy, source, is a tree)`.
fn steps(
    contender: Contender,
    n: usize,
    hosts: &Hosts,
    options: &HostsOptions,
    servers: &Servers,
    copies: &Path,
) -> (Vec<Step>, Vec<(PathBuf, String, bool)>) {
    let flexio = options.flexio.display().to_string();
    let rate = options.rate.to_string();
    let get = |k: usize| {
        let mut command = hosts.host_command(k, &flexio);
        command.args(["get", "--timeout", "60s"]);
        command
    };
    let plain = |command| Step {
        command,
        listens_on: None,
    };
    let limited = servers.limited[0].port;
    match contender {
        Contender::OneClient | Contender::Shards => {
            let dest = copies.join("tree");
            let url = hub_url(servers.free.port, "tree/");
            let shards = if contender == Contender::Shards { n } else { 1 };
            let steps = (0..shards)
                .map(|k| {
                    let mut command = get(k + 1);
                    command.arg(&url).arg(&dest).args(["--rate", &rate]);
                    if shards > 1 {
                        command.arg("--shard").arg(format!("{k}/{shards}"));
                    }
                    plain(command)
                })
                .collect();
            (steps, vec![(dest, "tree".into(), true)])
        }
        Contender::OneServer | Contender::Mirrors => {
            let dest = copies.join("one.bin");
            let mut command = get(1);
            // Pieces small enough to spread over N servers (a 16 MiB
            // default would be the whole of a small file).
            let piece = (options.bytes / 64).clamp(256 << 10, 16 << 20);
            command
                .arg(hub_url(limited, "one.bin"))
                .arg("--piece-size")
                .arg(piece.to_string());
            if contender == Contender::Mirrors {
                for server in &servers.limited[1..n] {
                    command.arg("--mirror").arg(hub_url(server.port, "one.bin"));
                }
                command.args(["--streams", "2"]);
            } else {
                command.args(["--streams", "4"]);
            }
            command.arg(&dest);
            (vec![plain(command)], vec![(dest, "one.bin".into(), false)])
        }
        Contender::OneTransfer | Contender::Naive => {
            let count = if contender == Contender::Naive { n } else { 1 };
            let mut steps = Vec::new();
            let mut checks = Vec::new();
            for k in 1..=count {
                let dest = copies.join(format!("h{k}/one.bin"));
                let mut command = get(k);
                command.arg(hub_url(limited, "one.bin")).arg(&dest);
                steps.push(plain(command));
                checks.push((dest, "one.bin".to_string(), false));
            }
            (steps, checks)
        }
        Contender::Chain => {
            let mut steps = Vec::new();
            let mut checks = Vec::new();
            let mut upstream = hub_url(limited, "one.bin");
            for k in 1..=n {
                let dest = copies.join(format!("h{k}/one.bin"));
                let mut command = get(k);
                command.arg(&upstream).arg(&dest);
                let mut listens_on = None;
                if k < n {
                    let port = CHAIN_PORT + k as u16;
                    let at = format!("{}:{port}", Hosts::address(k));
                    command
                        .args(["--serve", &at, "--public", "--linger", "0.2s"])
                        .args(["--upstream", &hub_url(limited, "one.bin")]);
                    listens_on = Some(port);
                    upstream = format!("http://{at}/one.bin");
                }
                steps.push(Step {
                    command,
                    listens_on,
                });
                checks.push((dest, "one.bin".to_string(), false));
            }
            (steps, checks)
        }
    }
}

/// Runs the scenario.
///
/// # Errors
/// The namespaces, the data or a server cannot be made, or the run was
/// stopped by a signal; a contender that fails is recorded as failed.
pub fn run(options: &HostsOptions) -> Result<HostsResults> {
    let started = Instant::now();
    let cells = HostsBench::cells(options)?;
    let max_n = cells.iter().map(|cell| cell.n).max().unwrap_or(2);
    let hosts = Hosts::create(max_n)?;
    let served = options.dir.join("served");
    let copies = options.dir.join("copies");
    let logs = options.dir.join("logs");
    for dir in [&served, &copies, &logs] {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("mkdir", dir, e))?;
    }
    make_data(&served, options.bytes)?;
    let servers = start_servers(&hosts, options, &served, &logs, max_n)?;
    let mut timings = Vec::new();
    for group in cells.chunks(Contender::ALL.len()) {
        let n = group[0].n;
        let mut rows: Vec<HostsTiming> = group
            .iter()
            .map(|cell| HostsTiming {
                n,
                contender: cell.contender,
                seconds: Vec::new(),
                failed: None,
            })
            .collect();
        for round in 0..options.runs {
            // Rotated, so that no contender always follows the same one.
            let count = rows.len();
            for index in (0..count).map(|i| (i + round) % count) {
                if options.stop.load(Ordering::Relaxed) {
                    return Err(Error::Stopped("stopped by a signal"));
                }
                let row = &mut rows[index];
                if row.failed.is_some() {
                    continue;
                }
                let _ = std::fs::remove_dir_all(&copies);
                for k in 1..=n {
                    let dir = copies.join(format!("h{k}"));
                    std::fs::create_dir_all(&dir).map_err(|e| Error::io("mkdir", &dir, e))?;
                }
                let (group, checks) = steps(row.contender, n, &hosts, options, &servers, &copies);
                match run_group(group, group_limit(options, n), &logs) {
                    Ok(seconds) => {
                        let wrong: Vec<_> = checks
                            .iter()
                            .filter(|(copy, source, tree)| !same(&served.join(source), copy, *tree))
                            .map(|(copy, _, _)| copy.display().to_string())
                            .collect();
                        if wrong.is_empty() {
                            row.seconds.push(seconds);
                        } else {
                            row.failed = Some(format!("copies differ: {}", wrong.join(", ")));
                        }
                    }
                    Err(why) => row.failed = Some(why.to_string()),
                }
                if let Some(why) = &row.failed {
                    eprintln!(
                        "flexio bench: hosts: {} at N={n}: {why}",
                        row.contender.name()
                    );
                }
            }
        }
        timings.extend(rows);
    }
    let _ = std::fs::remove_dir_all(&copies);
    drop(servers);
    let network = format!(
        "{} host namespaces and a hub ({}), the hosts on a bridge in a hub namespace holding the servers at {}; every link at {}/s by flexio's own rate limit",
        max_n,
        hosts.names().join(", "),
        Hosts::HUB,
        flexio::format_bytes(options.rate)
    );
    Ok(HostsResults {
        network,
        bytes: options.bytes,
        rate: options.rate,
        timings,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// One cell of the hosts scenario: a contender at N hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostsCell {
    /// The host count.
    pub n: usize,
    /// What runs at N.
    pub contender: Contender,
}

/// The hosts scenario behind [`Scenario`]: [`run`], [`table`] and
/// [`write_chart`].
pub struct HostsBench;

impl Scenario for HostsBench {
    type Options = HostsOptions;
    type Cell = HostsCell;
    type Results = HostsResults;
    const NAME: &'static str = "hosts";

    /// Every contender at each host count, counts in the order given.
    fn cells(options: &HostsOptions) -> Result<Vec<HostsCell>> {
        if let Some(bad) = options.counts.iter().find(|n| !(2..=8).contains(*n)) {
            return Err(Error::Usage(format!(
                "{bad} hosts: the hosts scenario takes 2 to 8"
            )));
        }
        Ok(options
            .counts
            .iter()
            .flat_map(|&n| {
                Contender::ALL
                    .iter()
                    .map(move |&contender| HostsCell { n, contender })
            })
            .collect())
    }

    fn run(options: &HostsOptions) -> Result<HostsResults> {
        run(options)
    }

    /// The chart has no footer: its title says the setup.
    fn report(
        options: &HostsOptions,
        results: &HostsResults,
        out: &Path,
        _command: &str,
    ) -> Result<Report> {
        let chart = write_chart(results, out)
            .map_err(|e| Error::io("write the hosts chart into", out, e))?;
        Ok(Report {
            table: format!(
                "{}\n{} timed rounds per contender, rotated; every round's copies checked against the source; took {:.0} s\n",
                table(results),
                options.runs,
                results.seconds
            ),
            charts: vec![chart],
        })
    }

    /// The results, the rounds and each N's ratios against one transfer.
    fn document(
        options: &HostsOptions,
        results: &HostsResults,
        _command: &str,
    ) -> Result<serde_json::Value> {
        let ratios: Vec<serde_json::Value> = options
            .counts
            .iter()
            .map(|&n| {
                let [shards, mirrors, chain, naive] = ratios(results, n);
                serde_json::json!({"n": n, "shards_over_one": shards, "mirrors_over_one": mirrors,
                    "chain_over_one_transfer": chain, "naive_over_one_transfer": naive})
            })
            .collect();
        Ok(serde_json::json!({
            "schema_version": 1,
            "scenario": Self::NAME,
            "runs": options.runs,
            "ratios": ratios,
            "results": crate::to_json(results)?,
        }))
    }
}
