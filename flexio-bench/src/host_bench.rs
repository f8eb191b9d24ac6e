//! The `host-to-host` scenario: `flexio serve` + `flexio get` across a veth
//! pair between two network namespaces (loopback when not root), beside
//! the tools people move files between hosts with — the rsync daemon,
//! `tar | nc`, curl and `aria2c -x N` from nginx with `sendfile on` — and
//! iperf3 on the same link as the ceiling. Every client is a process,
//! rounds are interleaved and rotated (A B C, B C A, C A B …: no contender
//! always runs right after the same one), medians are taken after a
//! warm-up round that also checks the copy; the CPU seconds of each
//! server's process tree are read around every run.
//!
//! Then the OS project's Fig 5 (1000 MiB as 1, 5 and 10 files, sender
//! mechanism × receiver mechanism) and Fig 6 (the sender's buffer size
//! with read-write against its map size with mmap).
//!
//! ```text
//! host_bench.rs        options, the cells and the interleaved rounds
//!  ├ link.rs           the namespaces and veth pair (or loopback)
//!  ├ servers.rs        server processes, their CPU, bounded clients
//!  ├ contenders.rs     what each contender runs, per part
//!  └ report.rs         the table and the three SVG charts
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use flexio::MechanismName;
use serde::{Deserialize, Serialize};

use crate::stats::median;
use crate::tree_bench::{make_tree, TreeShape};
use crate::{Error, Report, Result, Scenario};

mod contenders;
pub use flexio_harness::netns as link;
pub use flexio_harness::netns::line;
mod report;
pub mod servers;

pub use link::Link;
pub use report::{table, write_charts};

use contenders::{Contender, ServerSide};

/// What to run.
#[derive(Clone, Debug)]
pub struct HostBenchOptions {
    /// A new directory for the served files and the copies (its file
    /// system is the one written; removed by the caller).
    pub dir: PathBuf,
    /// The `flexio` binary to time.
    pub flexio: PathBuf,
    /// Timed rounds per contender in the main part (after a warm-up).
    pub runs: usize,
    /// Timed rounds per contender in Fig 5 and Fig 6.
    pub figure_runs: usize,
    /// The single file's size (1 GiB in the issue); Fig 5 and Fig 6 move
    /// 1000/1024 of it.
    pub file_bytes: u64,
    /// Trees A and B at this fraction of their size.
    pub tree_scale: f64,
    /// `flexio get --streams` and `aria2c -x`.
    pub streams: usize,
    /// Try network namespaces (root); loopback otherwise.
    pub namespaces: bool,
    /// Also Fig 5 and Fig 6.
    pub figures: bool,
}

/// A part of the host-to-host scenario; results name it `host-to-host`,
/// `fig5` or `fig6`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostPart {
    /// The main part: flexio get against the peers, per workload.
    HostToHost,
    /// The OS project's Fig 5: the same bytes as 1, 5 and 10 files, sender
    /// mechanism × receiver mechanism.
    Fig5,
    /// The OS project's Fig 6: the sender's buffer size with read-write
    /// against its map size with mmap.
    Fig6,
}

impl HostPart {
    /// Its name in tables and results.
    pub fn name(self) -> &'static str {
        match self {
            HostPart::HostToHost => "host-to-host",
            HostPart::Fig5 => "fig5",
            HostPart::Fig6 => "fig6",
        }
    }
}

impl std::fmt::Display for HostPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// Who a contender is, for the comparisons the report draws (the
/// reference, a target's peer, a chart's colour or series): named by type,
/// not recovered from the label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostContender {
    /// `flexio get` (verifying): the main part's reference.
    FlexioGet,
    /// `flexio get --no-verify`.
    FlexioGetNoVerify,
    /// curl against `flexio serve`.
    CurlFlexioServe,
    /// curl against nginx.
    CurlNginx,
    /// aria2c with several connections against nginx.
    Aria2c,
    /// The rsync daemon.
    RsyncDaemon,
    /// `tar | nc -l` to `nc | tar`.
    TarNc,
    /// iperf3 memory to memory: the link's ceiling.
    Iperf3,
    /// iperf3 writing into a file (`-F`).
    Iperf3IntoFile,
    /// scp.
    Scp,
    /// Fig 5: `flexio serve --via send` to `flexio get --via receive`.
    Fig5 {
        /// The server's mechanism.
        send: MechanismName,
        /// The client's mechanism.
        receive: MechanismName,
    },
    /// Fig 6: `flexio serve --via send --chunk chunk`.
    Fig6 {
        /// The server's mechanism (read-write or mmap).
        send: MechanismName,
        /// Its buffer or map size in bytes.
        chunk: u64,
    },
}

impl HostContender {
    /// flexio's own client (the main part's bars in flexio's colour).
    pub fn is_flexio_get(self) -> bool {
        matches!(
            self,
            HostContender::FlexioGet | HostContender::FlexioGetNoVerify
        )
    }

    /// iperf3, with or without a file (the link, not a copy).
    pub fn is_iperf3(self) -> bool {
        matches!(self, HostContender::Iperf3 | HostContender::Iperf3IntoFile)
    }
}

/// One contender's timings in one cell.
#[derive(Clone, Debug, Serialize)]
pub struct HostTiming {
    /// The part of the scenario.
    pub part: HostPart,
    /// `1 GiB file`, `tree B`, `1000 MiB as 5 files`, ...
    pub workload: String,
    /// `flexio get`, `rsync daemon`, `send mmap / recv splice`, ...
    pub contender: String,
    /// Who `contender` is (not written: `contender` names it in results).
    #[serde(skip)]
    pub kind: HostContender,
    /// The server side: `flexio serve`, `nginx`, `nc`, ...
    pub server: String,
    /// Files moved.
    pub files: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Wall seconds of each timed run (the client process from spawn to
    /// exit, or iperf3's own transfer time for iperf3).
    pub seconds: Vec<f64>,
    /// CPU seconds the server side used in each timed run.
    pub server_cpu_seconds: Vec<f64>,
    /// Whether the warm-up's copy matched the source (`None`: nothing is
    /// written, as with iperf3).
    pub verified: Option<bool>,
    /// Why the contender stopped, if it failed.
    pub failed: Option<String>,
}

impl HostTiming {
    /// The median wall time (infinite when no run counted).
    pub fn median(&self) -> f64 {
        if self.seconds.is_empty() {
            return f64::INFINITY;
        }
        median(&mut self.seconds.clone())
    }

    /// The median of the server's CPU seconds per GiB moved.
    pub fn server_cpu_per_gib(&self) -> Option<f64> {
        if self.server_cpu_seconds.is_empty() || self.bytes == 0 {
            return None;
        }
        let per_gib: Vec<f64> = self
            .server_cpu_seconds
            .iter()
            .map(|s| s / (self.bytes as f64 / (1u64 << 30) as f64))
            .collect();
        Some(median(&mut per_gib.clone()))
    }
}

/// What a run produced (written as `host.json`; not read back: the kinds
/// of its rows are not in it).
#[derive(Clone, Debug, Serialize)]
pub struct HostResults {
    /// The link, in words (veth or loopback, and why).
    pub link: String,
    /// Every cell's contenders.
    pub timings: Vec<HostTiming>,
    /// Contenders not run, each with the reason.
    pub skipped: Vec<(String, String)>,
}

/// A workload: what is served (a path under the served directory).
struct Workload {
    part: HostPart,
    name: String,
    /// Relative to the served directory: a file, or a directory (a tree).
    path: String,
    tree: bool,
    files: u64,
    bytes: u64,
}

/// Runs the scenario.
///
/// # Errors
/// The data cannot be made or a server cannot be started; a contender
/// that fails is recorded as failed instead.
pub fn run(options: &HostBenchOptions) -> Result<HostResults> {
    let link = Link::create(options.namespaces);
    let served = options.dir.join("served");
    let copies = options.dir.join("copies");
    let logs = options.dir.join("logs");
    for dir in [&served, &copies, &logs] {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("mkdir", dir, e))?;
    }
    let mut results = HostResults {
        link: link.description.clone(),
        timings: Vec::new(),
        skipped: Vec::new(),
    };
    // The single file: Fig 4's one-file tree scaled to the size, moved up.
    let made = served.join("made");
    let scale = options.file_bytes as f64 / (100u64 << 20) as f64;
    let (_, file_bytes) = make_tree(&made, TreeShape::Fig1, scale)?;
    std::fs::rename(made.join("d000/f0000"), served.join("file"))
        .map_err(|e| Error::io("rename the single file to", served.join("file"), e))?;
    let _ = std::fs::remove_dir_all(&made);
    let mut workloads = vec![Workload {
        part: HostPart::HostToHost,
        name: format!("{} file", flexio::format_bytes(file_bytes)),
        path: "file".into(),
        tree: false,
        files: 1,
        bytes: file_bytes,
    }];
    for shape in [TreeShape::B, TreeShape::A] {
        let path = format!("tree{}", shape.name());
        let (files, bytes) = make_tree(&served.join(&path), shape, options.tree_scale)?;
        workloads.push(Workload {
            part: HostPart::HostToHost,
            name: format!("tree {}", shape.name()),
            path,
            tree: true,
            files,
            bytes,
        });
    }
    let _ = Command::new("sync").status();
    {
        let main = contenders::main_part(&link, options, &served, &logs, &mut results.skipped)?;
        for workload in &workloads {
            let eligible: Vec<&Contender> =
                main.iter().filter(|c| !workload.tree || c.trees).collect();
            results.timings.extend(run_cell(
                workload,
                &eligible,
                options.runs,
                &served,
                &copies,
                &link,
            ));
        }
    }
    if options.figures {
        let fig_bytes = file_bytes * 1000 / 1024 / 4096 * 4096;
        let mut fig_workloads = Vec::new();
        for (count, shape) in [
            (1, TreeShape::Fig1),
            (5, TreeShape::Fig5),
            (10, TreeShape::Fig10),
        ] {
            let path = format!("fig5-{count}");
            let scale = fig_bytes as f64 / (100u64 << 20) as f64;
            let (files, bytes) = make_tree(&served.join(&path), shape, scale)?;
            fig_workloads.push(Workload {
                part: HostPart::Fig5,
                name: format!(
                    "{} as {count} file{}",
                    flexio::format_bytes(bytes),
                    if count == 1 { "" } else { "s" }
                ),
                path,
                tree: true,
                files,
                bytes,
            });
        }
        let _ = Command::new("sync").status();
        {
            let fig5 = contenders::fig5(&link, options, &served, &logs)?;
            let all: Vec<&Contender> = fig5.iter().collect();
            for workload in &fig_workloads {
                results.timings.extend(run_cell(
                    workload,
                    &all,
                    options.figure_runs,
                    &served,
                    &copies,
                    &link,
                ));
            }
        }
        for workload in &fig_workloads {
            let _ = std::fs::remove_dir_all(served.join(&workload.path));
        }
        let fig6 = contenders::fig6(&link, options, &served, &logs)?;
        let all: Vec<&Contender> = fig6.iter().collect();
        let workload = Workload {
            part: HostPart::Fig6,
            name: format!("{} file", flexio::format_bytes(file_bytes)),
            path: "file".into(),
            tree: false,
            files: 1,
            bytes: file_bytes,
        };
        results.timings.extend(run_cell(
            &workload,
            &all,
            options.figure_runs,
            &served,
            &copies,
            &link,
        ));
    }
    Ok(results)
}

/// One group of interleaved runs of the host-to-host scenario: one
/// workload, every contender of its part, `runs` timed rounds after a
/// warm-up round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCell {
    /// The main part, Fig 5 or Fig 6.
    pub part: HostPart,
    /// `the file`, `tree B`, `tree A`; `1 file`, `5 files`, `10 files`
    /// (Fig 5: 1000/1024 of the file's size).
    pub workload: &'static str,
    /// Timed rounds per contender.
    pub runs: usize,
}

/// The host-to-host scenario behind [`Scenario`]; its files are
/// `host.json`, `host.md` and the charts of [`write_charts`].
///
/// # Examples
/// ```
/// use flexio_bench::host_bench::{HostBench, HostBenchOptions, HostPart};
/// use flexio_bench::Scenario;
/// let mut options = HostBenchOptions {
///     dir: std::env::temp_dir(),
///     flexio: "flexio".into(),
///     runs: 5,
///     figure_runs: 3,
///     file_bytes: 1 << 20,
///     tree_scale: 0.01,
///     streams: 4,
///     namespaces: false,
///     figures: false,
/// };
/// let workloads = |options: &HostBenchOptions| -> Vec<_> {
///     let cells = HostBench::cells(options).unwrap();
///     cells.iter().map(|c| (c.part, c.workload, c.runs)).collect()
/// };
/// let main = [
///     (HostPart::HostToHost, "the file", 5),
///     (HostPart::HostToHost, "tree B", 5),
///     (HostPart::HostToHost, "tree A", 5),
/// ];
/// assert_eq!(workloads(&options), main);
/// // The OS project's figures after the main part, at their own rounds.
/// options.figures = true;
/// let all = workloads(&options);
/// assert_eq!(all.len(), 7);
/// assert_eq!(all[3], (HostPart::Fig5, "1 file", 3));
/// assert_eq!(all[6], (HostPart::Fig6, "the file", 3));
/// ```
pub struct HostBench;

impl Scenario for HostBench {
    type Options = HostBenchOptions;
    type Cell = HostCell;
    type Results = HostResults;
    const NAME: &'static str = "host";

    /// The file, tree B and tree A; then, with `figures`, Fig 5's three
    /// trees and Fig 6's file: the order [`run`] moves them in.
    fn cells(options: &HostBenchOptions) -> Result<Vec<HostCell>> {
        let cell = |part, workload, runs| HostCell {
            part,
            workload,
            runs,
        };
        let mut cells: Vec<HostCell> = ["the file", "tree B", "tree A"]
            .into_iter()
            .map(|workload| cell(HostPart::HostToHost, workload, options.runs))
            .collect();
        if options.figures {
            for workload in ["1 file", "5 files", "10 files"] {
                cells.push(cell(HostPart::Fig5, workload, options.figure_runs));
            }
            cells.push(cell(HostPart::Fig6, "the file", options.figure_runs));
        }
        Ok(cells)
    }

    fn run(options: &HostBenchOptions) -> Result<HostResults> {
        run(options)
    }

    /// The table with how the rounds ran; the charts have no footer (their
    /// titles say the setup).
    fn report(
        options: &HostBenchOptions,
        results: &HostResults,
        out: &Path,
        _command: &str,
    ) -> Result<Report> {
        let charts = write_charts(results, out)
            .map_err(|e| Error::io("write the host-to-host charts into", out, e))?;
        let table = format!(
            "{}\n{} runs per contender after a warm-up round that checks the copy ({} for Fig 5 and 6), interleaved, each round starting one contender later; every client timed as a process (iperf3 by its own timer, so its ceiling leaves out process start); \"÷ flexio\" is the row's median time over flexio get's (above 1: flexio is faster); server CPU is the server process tree's user+system time per GiB (nanoseconds for living threads, from schedstat)\n",
            table(results),
            options.runs,
            options.figure_runs
        );
        Ok(Report { table, charts })
    }

    /// The results beside the file's size, the trees' scale and the
    /// rounds; the scenario is named as `--scenario` takes it.
    fn document(
        options: &HostBenchOptions,
        results: &HostResults,
        _command: &str,
    ) -> Result<serde_json::Value> {
        Ok(serde_json::json!({
            "schema_version": 1,
            "scenario": "host-to-host",
            "file_bytes": options.file_bytes,
            "tree_scale": options.tree_scale,
            "runs": options.runs,
            "results": crate::to_json(results)?,
        }))
    }
}

/// The longest one client may take (a debug build over a slow link).
const CLIENT_LIMIT: Duration = Duration::from_secs(600);

/// One workload, every contender, `runs` interleaved rounds after a
/// warm-up round that checks the copy.
///
/// Each round starts one contender later than the last, so that no
/// contender always inherits what the same predecessor left (on a virtual
/// machine that hands freed memory back to its host: the 1 GiB copy the
/// previous client wrote and the bench just deleted).
fn run_cell(
    workload: &Workload,
    contenders: &[&Contender],
    runs: usize,
    served: &Path,
    copies: &Path,
    link: &Link,
) -> Vec<HostTiming> {
    let mut rows: Vec<HostTiming> = contenders
        .iter()
        .map(|c| HostTiming {
            part: workload.part,
            workload: workload.name.clone(),
            contender: c.name.clone(),
            kind: c.kind,
            server: c.server_name(),
            files: workload.files,
            bytes: workload.bytes,
            seconds: Vec::new(),
            server_cpu_seconds: Vec::new(),
            verified: None,
            failed: None,
        })
        .collect();
    for round in 0..=runs {
        let count = rows.len();
        for index in (0..count).map(|i| (i + round) % count) {
            let (row, contender) = (&mut rows[index], contenders[index]);
            if row.failed.is_some() {
                continue;
            }
            match run_once(workload, contender, copies, link) {
                Ok((seconds, cpu)) if round == 0 => {
                    row.verified = contender.writes.then(|| {
                        same(
                            &served.join(&workload.path),
                            &copies.join(&workload.path),
                            workload.tree,
                        )
                    });
                    let _ = (seconds, cpu);
                }
                Ok((seconds, cpu)) => {
                    row.seconds.push(seconds);
                    row.server_cpu_seconds.push(cpu);
                }
                Err(why) => {
                    eprintln!(
                        "flexio bench: {} on {}: {why}",
                        contender.name, workload.name
                    );
                    row.failed = Some(why.to_string());
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(copies);
    let _ = std::fs::create_dir_all(copies);
    rows
}

/// The server CPU seconds between two readings of a process tree's time.
/// Living threads are counted to the nanosecond, threads and children
/// that exit in between only in clock ticks (see `process_cpu`): a
/// forking server whose short-lived children's nanoseconds were counted
/// before and their ticks after can read a few milliseconds less than
/// before. Time does not run backwards, so such a reading is zero (below
/// the clock's resolution), never a negative cost (Fig 5 once showed
/// -0.054 s/GiB).
fn cpu_used(before: f64, after: f64) -> f64 {
    (after - before).max(0.0)
}

/// Runs one contender once: `(wall seconds, server CPU seconds)`.
fn run_once(
    workload: &Workload,
    contender: &Contender,
    copies: &Path,
    link: &Link,
) -> Result<(f64, f64)> {
    let _ = std::fs::remove_dir_all(copies);
    std::fs::create_dir_all(copies).map_err(|e| Error::io("mkdir", copies, e))?;
    let mut per_run: Option<Child> = None;
    let cpu_before = match &contender.server {
        ServerSide::Running(server) => server.cpu_seconds(),
        ServerSide::PerRun { port, command, .. } => {
            let mut sender = command(link, &workload.path);
            let child = flexio_sys::process::terminate_with_parent(&mut sender)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| Error::spawn("start", "the sender", e))?;
            let pid = child.id();
            per_run = Some(child);
            let mut ready = false;
            for _ in 0..1000 {
                if link::listening(pid, *port) {
                    ready = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            if !ready {
                if let Some(mut child) = per_run {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                return Err(Error::peer(
                    "the sender",
                    format!("did not listen on port {port}"),
                ));
            }
            0.0
        }
    };
    let command = (contender.client)(link, workload, copies);
    let outcome = servers::run_bounded(command, CLIENT_LIMIT);
    let children_before = flexio::measure::children_rusage();
    let cpu = match (&contender.server, per_run.take()) {
        (_, Some(mut child)) => {
            let status = child
                .wait()
                .map_err(|e| Error::spawn("wait for", "the sender", e))?;
            let used = flexio::measure::children_rusage().since(&children_before);
            if !status.success() && outcome.is_ok() {
                return Err(Error::program("the sender", format!("failed: {status}")));
            }
            used.cpu_ns as f64 / 1e9
        }
        (ServerSide::Running(server), None) => cpu_used(cpu_before, server.cpu_seconds()),
        (ServerSide::PerRun { .. }, None) => 0.0,
    };
    let (output, seconds) = outcome?;
    if !output.status.success() {
        return Err(Error::program(
            &contender.name,
            format!(
                "exit {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ));
    }
    let seconds = match contender.own_timer {
        Some(parse) => parse(&output.stdout)?,
        None => seconds,
    };
    Ok((seconds, cpu))
}

/// Whether the copy matches the source (cmp for a file, diff -r for a tree).
pub(crate) fn same(source: &Path, copy: &Path, tree: bool) -> bool {
    let mut command = if tree {
        let mut c = Command::new("diff");
        c.args(["-r", "-q"]);
        c
    } else {
        let mut c = Command::new("cmp");
        c.arg("-s");
        c
    };
    command
        .arg(source)
        .arg(copy)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    /// Issue 28: the host bench's Fig 5 reported a server CPU of -0.054
    /// s/GiB: a reading that went back by less than a clock tick when a
    /// forking server's children exited. It is zero, never negative.
    #[test]
    fn server_cpu_is_never_negative() {
        assert_eq!(super::cpu_used(1.250, 1.247), 0.0);
        assert!((super::cpu_used(1.0, 1.5) - 0.5).abs() < 1e-12);
    }
}
