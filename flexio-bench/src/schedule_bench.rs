//! The `schedule` scenario: Cue's (k, t) grid. A file goes to a TCP socket
//! on loopback with `--schedule K,T` (K chunks, then a pause of T ms) for
//! each K and T of the grid and without a schedule, in-kernel (sendfile)
//! and through a user buffer (read-write), while the meter co-process
//! runs on the transfer's CPU: wall and system time per GiB, time per
//! chunk, chunks and pauses, context switches per GiB split voluntary and
//! involuntary, and the share of its solo rate the meter kept (Cue's
//! Tables 3–5). The bench's receiver runs on another CPU, as Cue's
//! receiver was another machine.

use std::ffi::OsString;
use std::io::{self, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flexio::pace::{Pacing, Schedule};
use flexio::{measure, Flow, MechanismName, Params, Sink, Source};
use serde::{Deserialize, Serialize};

use crate::meter::Meter;
use crate::stats::median;
use crate::{Error, Report, Result, Scenario};

const GIB: f64 = (1u64 << 30) as f64;

/// Cue's schedules, (k blocks, t ms): sets 1 and 2 (Tables 1-3, 5) and
/// sets 3 and 4 (Tables 4-5).
pub const CUE_SCHEDULES: [(u32, u64); 4] = [(3, 70), (4, 70), (1, 16), (1, 20)];

/// What to run.
#[derive(Clone, Debug)]
pub struct ScheduleBenchOptions {
    /// A scratch directory for the source file (made by the caller).
    pub dir: PathBuf,
    /// The meter co-process (`flexio bench --meter-child`).
    pub meter_command: Vec<OsString>,
    /// Bytes per transfer.
    pub size: u64,
    /// Bytes per chunk (one call).
    pub chunk: usize,
    /// The K axis: chunks between pauses.
    pub chunks: Vec<u32>,
    /// The T axis: the pause, milliseconds.
    pub pauses_ms: Vec<u64>,
    /// Schedules run beside the grid, (K, T ms): Cue's own.
    pub extra: Vec<(u32, u64)>,
    /// The mechanisms.
    pub mechanisms: Vec<MechanismName>,
    /// Counted rounds (after one warm-up round).
    pub rounds: usize,
}

impl ScheduleBenchOptions {
    /// The grid: K of 1, 4, 16; T of 1, 4, 16 ms, and Cue's schedules
    /// (3, 70), (4, 70), (1, 16), (1, 20) beside it; 64 MiB in 256 KiB
    /// chunks; sendfile and read-write.
    pub fn grid(dir: PathBuf, meter_command: Vec<OsString>, rounds: usize) -> Self {
        ScheduleBenchOptions {
            dir,
            meter_command,
            size: 64 << 20,
            chunk: 256 << 10,
            chunks: vec![1, 4, 16],
            pauses_ms: vec![1, 4, 16],
            extra: CUE_SCHEDULES.to_vec(),
            mechanisms: vec![MechanismName::Sendfile, MechanismName::ReadWrite],
            rounds,
        }
    }

    /// A run of a few seconds: K of 1 and 4, T of 1 and 4 ms, Cue's
    /// schedules, 4 MiB.
    pub fn quick(dir: PathBuf, meter_command: Vec<OsString>) -> Self {
        ScheduleBenchOptions {
            size: 4 << 20,
            chunks: vec![1, 4],
            pauses_ms: vec![1, 4],
            ..Self::grid(dir, meter_command, 1)
        }
    }

    /// Every schedule of the grid, then the extra ones not in it, and
    /// none (`None`) first.
    pub fn schedules(&self) -> Vec<Option<Schedule>> {
        let grid = self
            .chunks
            .iter()
            .flat_map(|&k| self.pauses_ms.iter().map(move |&t| (k, t)));
        let mut pairs: Vec<(u32, u64)> = grid.collect();
        for pair in &self.extra {
            if !pairs.contains(pair) {
                pairs.push(*pair);
            }
        }
        let schedules = pairs.into_iter().map(|(chunks, pause)| {
            Some(Schedule {
                chunks,
                pause: Duration::from_millis(pause),
            })
        });
        std::iter::once(None).chain(schedules).collect()
    }
}

/// One transfer of the grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScheduleRun {
    /// `sendfile` or `read-write`.
    pub mechanism: String,
    /// K, or `None` without a schedule.
    pub chunks: Option<u32>,
    /// T in milliseconds, or `None` without a schedule.
    pub pause_ms: Option<u64>,
    /// Round: 0 the warm-up, then from 1.
    pub round: usize,
    /// Bytes the receiver got.
    pub bytes: u64,
    /// Wall time of the transfer.
    pub wall_ns: u64,
    /// The sending thread's user CPU.
    pub cpu_user_ns: u64,
    /// The sending thread's system CPU.
    pub cpu_sys_ns: u64,
    /// Its voluntary context switches.
    pub voluntary_switches: u64,
    /// Its involuntary context switches.
    pub involuntary_switches: u64,
    /// Calls that moved bytes (chunks).
    pub calls: u64,
    /// Pauses the schedule made.
    pub pauses: u64,
    /// The share of its solo rate the meter kept (0..1).
    pub meter_kept: f64,
}

impl ScheduleRun {
    fn per_gib(&self, value: f64) -> f64 {
        value / (self.bytes as f64 / GIB).max(1e-12)
    }

    /// `k=4 t=16ms`, or `no schedule`.
    pub fn schedule_label(&self) -> String {
        match (self.chunks, self.pause_ms) {
            (Some(k), Some(t)) => format!("k={k} t={t}ms"),
            _ => "no schedule".into(),
        }
    }
}

/// One transfer of the grid, at every round: a mechanism under a
/// schedule (none: unpaced).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduleCell {
    /// The mechanism that sends.
    pub mechanism: MechanismName,
    /// `--schedule K,T`, or none.
    pub schedule: Option<Schedule>,
}

/// Every mechanism under every schedule of `options`, the order of the
/// even rounds (odd rounds run it backwards).
fn grid(options: &ScheduleBenchOptions) -> Vec<ScheduleCell> {
    options
        .mechanisms
        .iter()
        .flat_map(|&mechanism| {
            options
                .schedules()
                .into_iter()
                .map(move |schedule| ScheduleCell {
                    mechanism,
                    schedule,
                })
        })
        .collect()
}

/// The schedule scenario behind [`Scenario`]: its progress goes to
/// standard error; `schedule.json` holds the runs and their summary.
///
/// # Examples
/// ```
/// use flexio_bench::schedule_bench::{ScheduleBench, ScheduleBenchOptions};
/// use flexio_bench::Scenario;
/// let mut options = ScheduleBenchOptions::quick(std::env::temp_dir(), Vec::new());
/// options.mechanisms.truncate(1);
/// let cells = ScheduleBench::cells(&options).unwrap();
/// // Unpaced, then K of 1 and 4 by T of 1 and 4 ms, then Cue's four.
/// assert_eq!(cells.len(), 1 + 2 * 2 + 4);
/// assert_eq!(cells[0].schedule, None);
/// let first = cells[1].schedule.unwrap();
/// assert_eq!((first.chunks, first.pause.as_millis()), (1, 1));
/// options.mechanisms.clear();
/// assert!(ScheduleBench::cells(&options).is_err());
/// ```
pub struct ScheduleBench;

impl Scenario for ScheduleBench {
    type Options = ScheduleBenchOptions;
    type Cell = ScheduleCell;
    type Results = Vec<ScheduleRun>;
    const NAME: &'static str = "schedule";

    /// Every mechanism unpaced, then under each of
    /// [`ScheduleBenchOptions::schedules`]; no mechanism is refused.
    fn cells(options: &ScheduleBenchOptions) -> Result<Vec<ScheduleCell>> {
        if options.mechanisms.is_empty() {
            return Err(Error::Usage(
                "the schedule scenario needs at least one mechanism".into(),
            ));
        }
        Ok(grid(options))
    }

    fn run(options: &ScheduleBenchOptions) -> Result<Vec<ScheduleRun>> {
        Self::cells(options)?;
        std::fs::create_dir_all(&options.dir).map_err(|e| Error::io("mkdir", &options.dir, e))?;
        run(options, &mut |line| eprintln!("  {line}"))
            .map_err(|e| Error::io("run the schedule scenario in", &options.dir, e))
    }

    /// The summaries' table and charts, `command` under the charts.
    fn report(
        options: &ScheduleBenchOptions,
        runs: &Vec<ScheduleRun>,
        out: &Path,
        command: &str,
    ) -> Result<Report> {
        let summaries = summarize(runs);
        let charts = write_charts(out, &summaries, command)
            .map_err(|e| Error::io("write the schedule charts into", out, e))?;
        Ok(Report {
            table: table(&summaries, options.size, options.chunk),
            charts,
        })
    }

    /// Every run and their summary, beside the size, the chunk and the
    /// command that ran them.
    fn document(
        options: &ScheduleBenchOptions,
        runs: &Vec<ScheduleRun>,
        command: &str,
    ) -> Result<serde_json::Value> {
        Ok(serde_json::json!({
            "schema_version": 1,
            "scenario": Self::NAME,
            "command": command,
            "size": options.size,
            "chunk": options.chunk,
            "runs": crate::to_json(runs)?,
            "summary": crate::to_json(&summarize(runs))?,
        }))
    }
}

/// Runs the grid, interleaved: each round visits every (mechanism,
/// schedule) once, in an order that alternates between rounds.
///
/// # Errors
/// The source cannot be made, the meter does not start, or a transfer
/// fails.
pub fn run(
    options: &ScheduleBenchOptions,
    progress: &mut dyn FnMut(&str),
) -> io::Result<Vec<ScheduleRun>> {
    let source = options.dir.join("source");
    crate::server_bench::write_pattern(&source, options.size)?;
    // Warm: the scenario measures the CPU a transfer leaves, not the disk.
    io::copy(&mut std::fs::File::open(&source)?, &mut io::sink())?;
    let mut meter = {
        let _pinned = crate::affinity::pin_contender();
        Meter::start(&options.meter_command, Duration::from_millis(500))?
    };
    let grid = grid(options);
    let mut runs = Vec::new();
    for round in 0..=options.rounds {
        progress(&format!("round {round} of {} (0: warm-up)", options.rounds));
        let order: Vec<&ScheduleCell> = if round % 2 == 1 {
            grid.iter().rev().collect()
        } else {
            grid.iter().collect()
        };
        for cell in order {
            runs.push(one(
                &source,
                options,
                cell.mechanism,
                cell.schedule,
                round,
                &mut meter,
            )?);
        }
    }
    meter.stop();
    Ok(runs)
}

fn one(
    source: &Path,
    options: &ScheduleBenchOptions,
    mechanism: MechanismName,
    schedule: Option<Schedule>,
    round: usize,
    meter: &mut Meter,
) -> io::Result<ScheduleRun> {
    meter.measure_solo(Duration::from_millis(200))?;
    let _pinned = crate::affinity::pin_contender();
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    let receiver = std::thread::spawn(move || -> io::Result<u64> {
        crate::affinity::leave_contender_cpu();
        let (mut stream, _) = listener.accept()?;
        let mut buffer = vec![0u8; 256 << 10];
        let mut total = 0u64;
        loop {
            match stream.read(&mut buffer)? {
                0 => return Ok(total),
                n => total += n as u64,
            }
        }
    });
    let stream = std::net::TcpStream::connect(address)?;
    let (start_count, at) = (meter.count()?, Instant::now());
    let before = measure::thread_rusage();
    let report = Flow::new(
        Source::path(source),
        Sink::Fd(stream.into(), format!("tcp://{address}")),
    )
    .via(mechanism)
    .params(Params {
        chunk: options.chunk,
        ..Params::default()
    })
    .pacing(Pacing {
        schedule,
        ..Pacing::default()
    })
    .run();
    let used = measure::thread_rusage().since(&before);
    let (end_count, until) = (meter.count()?, Instant::now());
    let received = receiver
        .join()
        .map_err(|_| io::Error::other("the receiver panicked"))?;
    let report = report.map_err(|e| io::Error::other(e.to_string()))?;
    let bytes = received?;
    if bytes != options.size {
        return Err(io::Error::other(format!(
            "received {bytes} bytes of {}",
            options.size
        )));
    }
    let pacing = report.pacing.as_ref();
    Ok(ScheduleRun {
        mechanism: mechanism.as_str().into(),
        chunks: schedule.map(|s| s.chunks),
        pause_ms: schedule.map(|s| s.pause.as_millis() as u64),
        round,
        bytes,
        wall_ns: report.measured.wall_ns,
        cpu_user_ns: used.user_ns,
        cpu_sys_ns: used.sys_ns,
        voluntary_switches: used.voluntary_switches,
        involuntary_switches: used.involuntary_switches,
        calls: report.chunks,
        pauses: pacing.map_or(0, |p| p.pauses),
        meter_kept: meter.kept(
            end_count - start_count,
            until.duration_since(at).as_nanos() as u64,
        ),
    })
}

/// The medians of one (mechanism, schedule) over the counted rounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScheduleSummary {
    /// The mechanism.
    pub mechanism: String,
    /// K.
    pub chunks: Option<u32>,
    /// T, ms.
    pub pause_ms: Option<u64>,
    /// Median bytes per second.
    pub bytes_per_s: f64,
    /// Median wall seconds per GiB.
    pub wall_s_per_gib: f64,
    /// Median system seconds per GiB.
    pub sys_s_per_gib: f64,
    /// Median user + system seconds per GiB.
    pub cpu_s_per_gib: f64,
    /// Median wall microseconds per chunk (call).
    pub us_per_chunk: f64,
    /// Median calls.
    pub calls: f64,
    /// Median pauses.
    pub pauses: f64,
    /// Median voluntary context switches per GiB.
    pub voluntary_per_gib: f64,
    /// Median involuntary context switches per GiB.
    pub involuntary_per_gib: f64,
    /// Median kept share of the meter.
    pub meter_kept: f64,
}

/// Summarises the counted runs, in the grid's order.
pub fn summarize(runs: &[ScheduleRun]) -> Vec<ScheduleSummary> {
    let mut keys: Vec<(String, Option<u32>, Option<u64>)> = Vec::new();
    for run in runs.iter().filter(|r| r.round >= 1) {
        let key = (run.mechanism.clone(), run.chunks, run.pause_ms);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    keys.into_iter()
        .map(|(mechanism, chunks, pause_ms)| {
            let group: Vec<&ScheduleRun> = runs
                .iter()
                .filter(|r| {
                    r.round >= 1
                        && r.mechanism == mechanism
                        && r.chunks == chunks
                        && r.pause_ms == pause_ms
                })
                .collect();
            let med = |f: &dyn Fn(&ScheduleRun) -> f64| {
                median(&mut group.iter().map(|r| f(r)).collect::<Vec<_>>())
            };
            ScheduleSummary {
                bytes_per_s: med(&|r| r.bytes as f64 * 1e9 / r.wall_ns.max(1) as f64),
                wall_s_per_gib: med(&|r| r.per_gib(r.wall_ns as f64 / 1e9)),
                sys_s_per_gib: med(&|r| r.per_gib(r.cpu_sys_ns as f64 / 1e9)),
                cpu_s_per_gib: med(&|r| r.per_gib((r.cpu_user_ns + r.cpu_sys_ns) as f64 / 1e9)),
                us_per_chunk: med(&|r| r.wall_ns as f64 / 1e3 / r.calls.max(1) as f64),
                calls: med(&|r| r.calls as f64),
                pauses: med(&|r| r.pauses as f64),
                voluntary_per_gib: med(&|r| r.per_gib(r.voluntary_switches as f64)),
                involuntary_per_gib: med(&|r| r.per_gib(r.involuntary_switches as f64)),
                meter_kept: med(&|r| r.meter_kept),
                mechanism,
                chunks,
                pause_ms,
            }
        })
        .collect()
}

mod report;
pub use report::{table, write_charts};
