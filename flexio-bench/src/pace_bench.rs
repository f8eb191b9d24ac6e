//! The `pace` scenario: how close a paced flow comes to its rate. Runs
//! `flexio copy --rate R FILE tcp://…` paced by the kernel
//! (`--pace-by kernel`, `SO_MAX_PACING_RATE`) and by flexio's token bucket,
//! and `… unix://…` (the bucket) as processes over loopback, for a set duration at each rate, while this
//! process receives and clocks every byte. The error is the receiver's
//! rate against the target: what a peer sees, not what the sender thinks.
//!
//! The source is a sparse file of `rate × duration` bytes: sendfile reads
//! its holes as zeros, so a 10 GiB flow at 1 GiB/s costs no disk and no
//! disk time.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::report::charts::plain::{write_line_chart, LineChart, PlainSeries};
use crate::{Error, Report, Result, Scenario};

/// What to run.
#[derive(Clone, Debug)]
pub struct PaceBenchOptions {
    /// Where the sparse source file and the Unix socket go.
    pub dir: PathBuf,
    /// The `flexio` binary that sends.
    pub flexio: PathBuf,
    /// Rates to try, in bytes per second.
    pub rates: Vec<u64>,
    /// How long each flow is to last at its rate.
    pub duration: Duration,
}

/// One paced flow, measured at both ends.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PaceResult {
    /// `tcp` or `unix`.
    pub sink: String,
    /// Who paced it, as the sender's report says (`kernel`, `token-bucket`).
    pub paced_by: String,
    /// The rate asked for.
    pub target_bytes_per_s: u64,
    /// Bytes the receiver got.
    pub bytes: u64,
    /// From the receiver's first byte to its last.
    pub receiver_ns: u64,
    /// Bytes of the receiver's first read (left out of its rate).
    pub first_read_bytes: u64,
    /// The receiver's rate: bytes after its first read over the time from
    /// that read to the last.
    pub receiver_bytes_per_s: u64,
    /// The sender's own figure (its report).
    pub sender_bytes_per_s: u64,
    /// The receiver's rate against the target, in percent (+: too fast).
    pub error_percent: f64,
    /// The sender's CPU time (user + system) per GiB.
    pub sender_cpu_s_per_gib: f64,
    /// The sender's calls, and its voluntary context switches.
    pub sender_calls: u64,
    /// Voluntary context switches of the sender.
    pub sender_voluntary_switches: u64,
}

/// What the receiver saw.
struct Received {
    bytes: u64,
    /// What the first read returned: those bytes arrived before the clock
    /// started (how long before is unknown), so the rate leaves them out.
    first_bytes: u64,
    span: Duration,
}

fn receive(mut stream: impl Read) -> Received {
    let mut buffer = vec![0u8; 1 << 20];
    let (mut bytes, mut first_bytes, mut first, mut last) = (0u64, 0, None, Instant::now());
    while let Ok(n @ 1..) = stream.read(&mut buffer) {
        last = Instant::now();
        if first.is_none() {
            first = Some(last);
            first_bytes = n as u64;
        }
        bytes += n as u64;
    }
    Received {
        bytes,
        first_bytes,
        span: last - first.unwrap_or(last),
    }
}

/// Runs every rate over TCP (kernel, then bucket) and over a Unix socket,
/// in that order.
///
/// # Errors
/// A message when the source cannot be made, a socket cannot be bound, or
/// `flexio copy` fails.
pub fn run(options: &PaceBenchOptions) -> Result<Vec<PaceResult>> {
    std::fs::create_dir_all(&options.dir).map_err(|e| Error::io("mkdir", &options.dir, e))?;
    let cells = PaceBench::cells(options)?;
    let mut results = Vec::new();
    for same_rate in cells.chunks(FLOWS_PER_RATE.len()) {
        let rate = same_rate[0].rate;
        let bytes = (rate as f64 * options.duration.as_secs_f64()) as u64;
        let source = options.dir.join("pace-source");
        let file = std::fs::File::create(&source).map_err(|e| Error::io("create", &source, e))?;
        file.set_len(bytes.max(1))
            .map_err(|e| Error::io("set the length of", &source, e))?;
        drop(file);
        for cell in same_rate {
            results.push(one_flow(
                options,
                &source,
                cell.rate,
                cell.sink,
                cell.paced_by,
            )?);
        }
        let _ = std::fs::remove_file(&source);
    }
    Ok(results)
}

/// The flows at each rate, in order: `(sink, paced by)`.
const FLOWS_PER_RATE: [(&str, &str); 3] =
    [("tcp", "kernel"), ("tcp", "bucket"), ("unix", "bucket")];

/// One flow of the pace scenario: a rate, a sink and who paces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaceCell {
    /// The rate asked for, bytes per second.
    pub rate: u64,
    /// `tcp` or `unix`.
    pub sink: &'static str,
    /// `--pace-by`: `kernel` or `bucket`.
    pub paced_by: &'static str,
}

/// The pace scenario behind [`Scenario`]: [`run`], [`table`] and
/// [`write_chart`].
pub struct PaceBench;

impl Scenario for PaceBench {
    type Options = PaceBenchOptions;
    type Cell = PaceCell;
    type Results = Vec<PaceResult>;
    const NAME: &'static str = "pace";

    fn cells(options: &PaceBenchOptions) -> Result<Vec<PaceCell>> {
        Ok(options
            .rates
            .iter()
            .flat_map(|&rate| {
                FLOWS_PER_RATE.map(|(sink, paced_by)| PaceCell {
                    rate,
                    sink,
                    paced_by,
                })
            })
            .collect())
    }

    fn run(options: &PaceBenchOptions) -> Result<Vec<PaceResult>> {
        run(options)
    }

    fn report(
        options: &PaceBenchOptions,
        results: &Vec<PaceResult>,
        out: &Path,
        command: &str,
    ) -> Result<Report> {
        let chart = write_chart(out, results, command)
            .map_err(|e| Error::io("write the pace chart into", out, e))?;
        Ok(Report {
            table: format!(
                "{}\nflexio copy --rate R --via sendfile FILE → loopback for {} s per rate; error: the receiver's rate against R; \"paced by\" is the sender's report: the kernel (SO_MAX_PACING_RATE) or flexio's token bucket\n",
                table(results),
                options.duration.as_secs_f64()
            ),
            charts: vec![chart],
        })
    }

    /// The results, with how long each flow lasted.
    fn document(
        options: &PaceBenchOptions,
        results: &Vec<PaceResult>,
        _command: &str,
    ) -> Result<serde_json::Value> {
        Ok(serde_json::json!({
            "schema_version": 1,
            "scenario": Self::NAME,
            "seconds": options.duration.as_secs_f64(),
            "results": crate::to_json(results)?,
        }))
    }
}

fn one_flow(
    options: &PaceBenchOptions,
    source: &Path,
    rate: u64,
    sink: &str,
    by: &str,
) -> Result<PaceResult> {
    let (address, receiver) = match sink {
        "tcp" => {
            let listener = TcpListener::bind("127.0.0.1:0").map_err(|source| Error::System {
                operation: "bind 127.0.0.1:0",
                source,
            })?;
            let address = format!(
                "tcp://{}",
                listener.local_addr().map_err(|source| Error::System {
                    operation: "the address of the receiver's socket",
                    source,
                })?
            );
            let receiver = std::thread::spawn(move || match listener.accept() {
                Ok((stream, _)) => receive(stream),
                Err(_) => receive(std::io::empty()),
            });
            (address, receiver)
        }
        _ => {
            let path = options.dir.join("pace-socket");
            let _ = std::fs::remove_file(&path);
            let listener = UnixListener::bind(&path).map_err(|e| Error::io("bind", &path, e))?;
            let receiver = std::thread::spawn(move || match listener.accept() {
                Ok((stream, _)) => receive(stream),
                Err(_) => receive(std::io::empty()),
            });
            (format!("unix://{}", path.display()), receiver)
        }
    };
    let output = Command::new(&options.flexio)
        .args([
            "copy",
            "--via",
            "sendfile",
            "--no-progress",
            "--json",
            "--pace-by",
            by,
            "--rate",
        ])
        .arg(rate.to_string())
        .arg(source)
        .arg(&address)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::spawn("start", options.flexio.display().to_string(), e))?;
    let received = receiver
        .join()
        .map_err(|_| Error::Panicked("the receiver"))?;
    if !output.status.success() {
        return Err(Error::program(
            format!("flexio copy --rate {rate} to {sink}"),
            String::from_utf8_lossy(&output.stderr).trim(),
        ));
    }
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|source| Error::Json {
            what: "flexio copy --json",
            source,
        })?;
    let pacing = &report["pacing"];
    let seen =
        (received.bytes - received.first_bytes) as f64 / received.span.as_secs_f64().max(1e-9);
    let cpu =
        report["cpu_user_ns"].as_u64().unwrap_or(0) + report["cpu_sys_ns"].as_u64().unwrap_or(0);
    Ok(PaceResult {
        sink: sink.to_string(),
        paced_by: pacing["paced_by"].as_str().unwrap_or("none").to_string(),
        target_bytes_per_s: rate,
        bytes: received.bytes,
        receiver_ns: received.span.as_nanos() as u64,
        first_read_bytes: received.first_bytes,
        receiver_bytes_per_s: seen as u64,
        sender_bytes_per_s: pacing["achieved_bytes_per_s"].as_u64().unwrap_or(0),
        error_percent: (seen / rate as f64 - 1.0) * 100.0,
        sender_cpu_s_per_gib: cpu as f64
            / 1e9
            / (received.bytes.max(1) as f64 / (1u64 << 30) as f64),
        sender_calls: pacing["calls"].as_u64().unwrap_or(0),
        sender_voluntary_switches: report["context_switches_voluntary"].as_u64().unwrap_or(0),
    })
}

/// The results as a table.
pub fn table(results: &[PaceResult]) -> String {
    let mut text = format!(
        "{:<6} {:<13} {:>12} {:>12} {:>12} {:>8} {:>9} {:>8} {:>10}\n",
        "sink",
        "paced by",
        "target",
        "receiver",
        "sender",
        "error",
        "seconds",
        "calls",
        "CPU-s/GiB"
    );
    for result in results {
        text += &format!(
            "{:<6} {:<13} {:>12} {:>12} {:>12} {:>+7.2}% {:>9.3} {:>8} {:>10.3}\n",
            result.sink,
            result.paced_by,
            flexio::format_rate(result.target_bytes_per_s as f64),
            flexio::format_rate(result.receiver_bytes_per_s as f64),
            flexio::format_rate(result.sender_bytes_per_s as f64),
            result.error_percent,
            result.receiver_ns as f64 / 1e9,
            result.sender_calls,
            result.sender_cpu_s_per_gib,
        );
    }
    text
}

/// `pace.svg`: the receiver's rate against the rate asked for, a line per
/// sink and pacer, with the target itself as a dashed line — a row on it
/// kept its rate.
///
/// # Errors
/// Nothing measured, or the file cannot be written.
pub fn write_chart(dir: &Path, results: &[PaceResult], footer: &str) -> std::io::Result<PathBuf> {
    let mib = |bytes_per_s: u64| bytes_per_s as f64 / (1u64 << 20) as f64;
    let mut keys: Vec<(String, String)> = results
        .iter()
        .map(|r| (r.sink.clone(), r.paced_by.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    let mut series: Vec<PlainSeries> = keys
        .into_iter()
        .map(|(sink, paced_by)| PlainSeries {
            label: format!("{sink}, {paced_by}"),
            points: results
                .iter()
                .filter(|r| r.sink == sink && r.paced_by == paced_by)
                .map(|r| (mib(r.target_bytes_per_s), mib(r.receiver_bytes_per_s)))
                .collect(),
            dashed: false,
        })
        .collect();
    let mut targets: Vec<f64> = results.iter().map(|r| mib(r.target_bytes_per_s)).collect();
    targets.sort_by(f64::total_cmp);
    targets.dedup();
    series.push(PlainSeries {
        label: "the rate asked for".into(),
        points: targets.iter().map(|&t| (t, t)).collect(),
        dashed: true,
    });
    let path = dir.join("pace.svg");
    write_line_chart(
        &path,
        &LineChart {
            title: "pace: the receiver's rate against --rate".into(),
            x_desc: "--rate, MiB/s (log2 scale)".into(),
            y_desc: "receiver's MiB/s (log scale)".into(),
            log_x: targets.len() > 1,
            log_y: true,
            series,
            footer: footer.into(),
            ..LineChart::default()
        },
    )?;
    Ok(path)
}
