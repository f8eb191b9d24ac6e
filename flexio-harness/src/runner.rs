//! Runs a [`Plan`]: for each cell a warm-up round (round 0), then the
//! counted rounds, the entrants interleaved (A B C A B C …) so that drift
//! — other tenants, thermal, writeback — hits all of them alike. One
//! [`RunRecord`] per (round, entrant).
//!
//! Around each run, outside its timed window: the source's page cache is
//! dropped (cold cells: fsync + `posix_fadvise(DONTNEED)`, and
//! `/proc/sys/vm/drop_caches` when root) or filled (warm cells), its
//! residency measured (mincore) and recorded, and the sink removed.
//!
//! The timed window is the bench's own clock around each contender, the
//! same for all: for flexio it runs from just before [`Flow::run`] (opening
//! included, as a tool's start-up is included for a peer) until the last
//! byte reached the sink — for streams, until the bench's reader drained
//! it. CPU is charged to whoever moved the bytes: the bench thread that ran
//! the flow (`RUSAGE_THREAD`), the peer's processes (`RUSAGE_CHILDREN`
//! deltas around their wait), or the whole process for the parallel
//! flows. Host CPU (all CPUs, `/proc/stat`) covers everything, the bench's
//! reader and sender threads included.
//!
//! Network and pipe helpers, the same for every contender:
//! - file → socket: a thread of the bench accepts and drains the socket
//!   with a plain `read` loop into a 256 KiB buffer (one copy, like any
//!   receiver);
//! - socket → file: a thread of the bench connects and writes a 256 KiB
//!   pattern from memory until the size is reached;
//! - file → pipe: a thread of the bench drains the pipe's read end with a
//!   plain `read` loop;
//! - pipe → file: a thread of the bench writes the pattern into a pipe of
//!   the kernel's default capacity.
//!
//! A socket pair (`pair.rs`) has no helper: both ends are flexio flows,
//! its N files sent one after another over one connection, timed from the
//! connection to the last file received, CPU the whole process's; each
//! received file is compared with its source after the window.
//!
//! In these stream cells (and for the iperf3 limits) the contender runs on
//! one CPU and the bench's end on another (see [`affinity`]).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use flexio::builtin_choice;
use flexio::measure;
use flexio::profile::Profile;

use crate::model::{CacheState, Contender, Provenance, Results, RunRecord, SCHEMA_VERSION};
use crate::peers::{self, VethPair};
use crate::plan::{Cell, Entrant, Plan};
use crate::stats::{self, another_round};
use crate::window::Measured;

mod cell;
mod pair;
mod parallel;
mod serve_clients;
mod streams;

use cell::CellContext;
use streams::Net;

/// The buffer the bench's stream helpers read into or write from. Small
/// enough to stay in a core's L2 cache: with 1 MiB, loopback zero-copy
/// runs split between 2.5 and 6 GiB/s as the buffer fell in or out of
/// cache (sendfile 64 MiB, nine rounds: 2.5–6.3 GiB/s with 1 MiB,
/// 4.3–5.7 with 256 KiB).
const HELPER_BUFFER: usize = 256 << 10;

/// How long a helper thread waits for its peer before giving up.
const IO_DEADLINE: Duration = Duration::from_secs(60);

/// How to run a plan.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Where the temporary directory with the generated data goes.
    pub dir: PathBuf,
    /// Warm-up rounds per cell (recorded as round 0, not counted).
    pub warmups: u32,
    /// Counted rounds per cell.
    pub rounds: u32,
    /// The meter co-process (`flexio bench --meter-child`); the meter
    /// scenario is skipped without one.
    pub meter_command: Option<Vec<OsString>>,
    /// Also write `/proc/sys/vm/drop_caches` for cold cells (root only).
    pub drop_caches: bool,
    /// The command line, for the results.
    pub command_line: String,
    /// The tuned profile `auto` consults (`None`: the built-in table). A
    /// plan built with `PlanOptions::auto_builtin` also runs `auto`
    /// without it.
    pub profile: Option<Profile>,
    /// The `flexio` executable run as a process beside the peers
    /// (`flexio copy`); without one those contenders are left out, with a
    /// note. `flexio bench` passes its own executable.
    pub flexio_exe: Option<PathBuf>,
    /// Run just before each timed run, after its source was put in the
    /// cell's cache state; an error drops the contender from the cell, as
    /// the run's own would.
    pub before_each_run: Option<BeforeRun>,
    /// The rate (bytes per second) the files' storage is held to, where
    /// it is (the seeds' throttled devices). A run of a cold, synced copy
    /// then copies [`storage_passes`] cold sources of the cell's size back
    /// to back, a second's worth at that rate: the kernel's throttle holds
    /// a shorter transfer to its rate only to within a tenth of a second.
    pub storage_rate: Option<u64>,
    /// Where set, a cell whose counted rounds of some entrant spread wider
    /// than this share of their median gets up to
    /// [`SETTLING_ROUNDS`](stats::SETTLING_ROUNDS) more rounds of every
    /// entrant ([`stats::another_round`]): the seeds' runs, whose grades
    /// judge each point's spread.
    pub settle_spread: Option<f64>,
}

/// How many cold sources of `size` bytes one run of a cold, synced copy
/// moves on storage held to `rate` bytes per second: a second's worth, at
/// least one, at most 64.
///
/// # Examples
/// ```
/// use flexio_harness::runner::storage_passes;
/// assert_eq!(storage_passes(64 << 20, 1 << 20), 64);
/// assert_eq!(storage_passes(64 << 20, 16 << 20), 4);
/// assert_eq!(storage_passes(64 << 20, 200 << 20), 1);
/// ```
pub fn storage_passes(rate: u64, size: u64) -> u64 {
    rate.div_ceil(size.max(1)).clamp(1, 64)
}

/// What [`RunOptions::before_each_run`] runs: the seeds' throttled
/// devices spend their credit there, so that every round starts from the
/// same state of the throttle.
///
/// # Examples
/// ```
/// use flexio_harness::runner::{BeforeRun, RunOptions};
/// let mut options = RunOptions::new(std::env::temp_dir());
/// options.before_each_run = Some(BeforeRun::new(|| Ok(())));
/// ```
#[derive(Clone)]
pub struct BeforeRun(Arc<dyn Fn() -> io::Result<()> + Send + Sync>);

impl BeforeRun {
    /// Wraps `run`.
    pub fn new(run: impl Fn() -> io::Result<()> + Send + Sync + 'static) -> Self {
        BeforeRun(Arc::new(run))
    }

    /// Runs it.
    ///
    /// # Errors
    /// Whatever it returns.
    pub fn run(&self) -> io::Result<()> {
        (self.0)()
    }
}

impl std::fmt::Debug for BeforeRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeRun(..)")
    }
}

impl RunOptions {
    /// One warm-up and five counted rounds in a temporary directory under
    /// `dir`; `drop_caches` when running as root.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RunOptions {
            dir: dir.into(),
            warmups: 1,
            rounds: 5,
            meter_command: None,
            drop_caches: is_root(),
            command_line: String::new(),
            profile: None,
            flexio_exe: None,
            before_each_run: None,
            storage_rate: None,
            settle_spread: None,
        }
    }
}

/// Whether the bench runs as root (drop_caches, network namespaces).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The note of a run stopped on request (Ctrl-C) before its plan ended.
pub const STOPPED_EARLY: &str = "stopped early on request";

/// What a run tells whoever watches it (a progress bar).
pub trait Observer {
    /// Cell `index` (0-based) of `cells` starts.
    fn cell_started(&mut self, _index: usize, _cells: usize, _label: &str) {}
    /// `done` of `total` runs are over (skipped ones included).
    fn run_finished(&mut self, _done: usize, _total: usize) {}
    /// Something was skipped or failed; it is also in `Results::notes`.
    fn note(&mut self, _text: &str) {}
    /// Asked between runs: stop early (what ran so far is returned).
    fn should_stop(&mut self) -> bool {
        false
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {}

/// The order of the runs of one cell: `warmups` rounds numbered 0, then
/// rounds 1..=`rounds`. Every round visits every contender once
/// (interleaved, so drift hits all alike), and rounds differ in where they
/// start and in the stride through the contenders (A B C D E, then C F A
/// D … for a stride of 3), so that no contender always runs right after
/// the same neighbour: a run can leave the machine slower for the next
/// one (runs after O_DIRECT runs were, here), and varying the neighbours
/// spreads that over everyone instead of charging one contender.
///
/// # Examples
/// ```
/// let order = flexio_harness::runner::schedule(2, 1, 2);
/// assert_eq!(order, vec![(0, 0), (0, 1), (1, 1), (1, 0), (2, 0), (2, 1)]);
/// ```
pub fn schedule(contenders: usize, warmups: u32, rounds: u32) -> Vec<(u32, usize)> {
    let n = contenders;
    // Strides coprime to n visit every contender exactly once.
    let strides: Vec<usize> = (1..n.max(2)).filter(|&s| gcd(s, n.max(1)) == 1).collect();
    let rounds = (0..warmups).map(|_| 0).chain(1..=rounds);
    rounds
        .enumerate()
        .flat_map(|(index, round)| {
            let stride = strides[index % strides.len()];
            (0..n).map(move |k| (round, (index + k * stride) % n))
        })
        .collect()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn other(error: impl std::fmt::Display) -> io::Error {
    io::Error::other(error.to_string())
}

fn joined<T>(handle: JoinHandle<io::Result<T>>, what: &str) -> io::Result<T> {
    handle
        .join()
        .map_err(|_| io::Error::other(format!("{what} thread panicked")))?
}

/// Runs `plan` and returns every run.
///
/// # Errors
/// Only when the temporary directory cannot be made; a contender that fails
/// is noted in `Results::notes` and dropped from its cell, a missing peer
/// is listed in `Results::missing_peers` and its cells run without it.
pub fn run(plan: &Plan, options: &RunOptions, observer: &mut dyn Observer) -> io::Result<Results> {
    let workspace = Workspace::new(&options.dir, options.drop_caches)?;
    let mut bench = Bench {
        results: Results {
            schema_version: SCHEMA_VERSION,
            fingerprint: crate::model::Fingerprint::of_this_machine(&options.dir),
            command: options.command_line.clone(),
            provenance: Provenance {
                auto_profile: options.profile.as_ref().map(|profile| {
                    profile
                        .path
                        .as_ref()
                        .map_or_else(|| "(unsaved profile)".into(), |p| p.display().to_string())
                }),
                flexio_executable: options
                    .flexio_exe
                    .as_ref()
                    .map(|exe| exe.display().to_string()),
                ..Provenance::now()
            },
            ..Results::default()
        },
        noted: BTreeSet::new(),
        workspace,
        veth: None,
        options,
    };
    if plan.cells.iter().any(|c| c.key.path == "veth") {
        match VethPair::create() {
            Ok(pair) => bench.veth = Some(pair),
            Err(e) => bench.note(observer, format!("veth cells skipped: {e}")),
        }
    }
    if options.drop_caches && !is_root() {
        bench.note(
            observer,
            "drop_caches needs root: cold cells use posix_fadvise(DONTNEED) only".into(),
        );
    }
    for note in crate::fingerprint::machine_notes(&options.dir) {
        bench.note(observer, note);
    }
    let mut progress = Progress {
        done: 0,
        total: plan.runs(options.warmups, options.rounds),
    };
    for (index, cell) in plan.cells.iter().enumerate() {
        if observer.should_stop() {
            bench.note(observer, STOPPED_EARLY.into());
            break;
        }
        observer.cell_started(index, plan.cells.len(), &cell.label());
        bench.run_cell(cell, observer, &mut progress);
    }
    Ok(bench.results)
}

/// Runs over and runs in all, for the observer: the total grows when a
/// cell gets settling rounds.
struct Progress {
    done: usize,
    total: usize,
}

impl Progress {
    fn advance(&mut self, runs: usize, observer: &mut dyn Observer) {
        self.done += runs;
        observer.run_finished(self.done, self.total);
    }
}

struct Bench<'a> {
    results: Results,
    noted: BTreeSet<String>,
    workspace: Workspace,
    veth: Option<VethPair>,
    options: &'a RunOptions,
}

impl Bench<'_> {
    fn note(&mut self, observer: &mut dyn Observer, text: String) {
        if self.noted.insert(text.clone()) {
            observer.note(&text);
            self.results.notes.push(text);
        }
    }

    fn missing(&mut self, observer: &mut dyn Observer, name: &str, programs: &[String]) {
        if !self.results.missing_peers.iter().any(|p| p == name) {
            self.results.missing_peers.push(name.to_string());
        }
        self.note(
            observer,
            format!(
                "{name}: not installed ({} not on PATH); its cells run without it",
                programs.join(", ")
            ),
        );
    }

    fn run_cell(&mut self, cell: &Cell, observer: &mut dyn Observer, progress: &mut Progress) {
        let slots = (self.options.warmups + self.options.rounds) as usize;
        let skip_all = |progress: &mut Progress, observer: &mut dyn Observer| {
            progress.advance(slots * cell.entrants.len(), observer);
        };
        let scenario = cell.key.scenario;
        let net = match cell.key.path.as_str() {
            "" | "loopback" => Net::loopback(),
            "veth" => match &self.veth {
                Some(pair) => Net::veth(pair),
                None => return skip_all(progress, observer),
            },
            other => {
                self.note(
                    observer,
                    format!("{}: unknown network path {other:?}", cell.label()),
                );
                return skip_all(progress, observer);
            }
        };
        // Entrants that can run here.
        let mut active = vec![true; cell.entrants.len()];
        for (i, entrant) in cell.entrants.iter().enumerate() {
            let (name, missing) = match entrant {
                Entrant::Peer(spec) => (spec.name.clone(), spec.missing_programs()),
                Entrant::Limit(probe) => {
                    let missing: Vec<String> = probe
                        .needs()
                        .iter()
                        .filter(|p| peers::find_program(p).is_none())
                        .map(|p| p.to_string())
                        .collect();
                    // A limit's tool is the peer that is missing.
                    (missing.join(" "), missing)
                }
                Entrant::Process { .. } => {
                    if self.options.flexio_exe.is_none() {
                        let label = entrant.contender().label();
                        self.note(
                            observer,
                            format!(
                                "{label}: no flexio executable given; its cells run without it"
                            ),
                        );
                        active[i] = false;
                    }
                    continue;
                }
                Entrant::Flexio { .. } | Entrant::Pair { .. } => continue,
            };
            if !missing.is_empty() {
                self.missing(observer, &name, &missing);
                active[i] = false;
            }
        }
        let mut context = match CellContext::prepare(self, scenario, cell, &net) {
            Ok(context) => context,
            Err(e) => {
                self.note(observer, format!("{}: skipped: {e}", cell.label()));
                return skip_all(progress, observer);
            }
        };
        if let Err(e) = context.calibrate(&mut self.workspace, cell, &active, &net) {
            self.note(observer, format!("{}: skipped: {e}", cell.label()));
            return skip_all(progress, observer);
        }
        for (round, i) in schedule(
            cell.entrants.len(),
            self.options.warmups,
            self.options.rounds,
        ) {
            self.run_entrant(&mut context, cell, (round, i), &mut active, &net, observer);
            progress.advance(1, observer);
        }
        // A cell whose rounds disagree gets a few more, every entrant
        // again; the total grows by them.
        if let Some(limit) = self.options.settle_spread {
            let planned = self.options.rounds as usize;
            let mut ran = planned;
            while !observer.should_stop()
                && another_round(ran, planned, || self.unsettled(cell, &active, limit))
            {
                ran += 1;
                progress.total += cell.entrants.len();
                for k in 0..cell.entrants.len() {
                    let i = (ran + k) % cell.entrants.len();
                    self.run_entrant(
                        &mut context,
                        cell,
                        (ran as u32, i),
                        &mut active,
                        &net,
                        observer,
                    );
                    progress.advance(1, observer);
                }
            }
        }
        if let Some(meter) = context.meter.take() {
            meter.stop();
        }
    }

    /// Runs entrant `i` of `cell` once as `round`, if it is still active;
    /// a failure drops it from the cell, with a note.
    fn run_entrant(
        &mut self,
        context: &mut CellContext,
        cell: &Cell,
        (round, i): (u32, usize),
        active: &mut [bool],
        net: &Net,
        observer: &mut dyn Observer,
    ) {
        if !active[i] || observer.should_stop() {
            return;
        }
        let entrant = &cell.entrants[i];
        match context.run(&mut self.workspace, cell, i, net) {
            Ok((measured, resident, meter_kept)) => {
                self.results.runs.push(record(
                    cell,
                    entrant.contender(),
                    round,
                    measured,
                    resident,
                    meter_kept,
                ));
            }
            Err(e) => {
                active[i] = false;
                let label = entrant.contender().label();
                self.note(
                    observer,
                    format!(
                        "{}: {label} failed, dropped from the cell: {e}",
                        cell.label()
                    ),
                );
            }
        }
    }

    /// Whether the counted rounds of any active entrant of `cell` spread
    /// wider than `limit` of their median ([`stats::unsettled`]), as
    /// throughputs or as times: a report may show either, and one slow
    /// round widens the times more than the rates.
    fn unsettled(&self, cell: &Cell, active: &[bool], limit: f64) -> bool {
        cell.entrants
            .iter()
            .zip(active)
            .filter(|(_, active)| **active)
            .any(|(entrant, _)| {
                let contender = entrant.contender();
                let rates: Vec<f64> = self
                    .results
                    .runs
                    .iter()
                    .filter(|r| r.round >= 1 && r.cell == cell.key && r.contender == contender)
                    .map(RunRecord::throughput)
                    .collect();
                let times: Vec<f64> = rates.iter().map(|rate| 1.0 / rate).collect();
                stats::unsettled(&rates, limit) || stats::unsettled(&times, limit)
            })
    }
}

fn record(
    cell: &Cell,
    contender: Contender,
    round: u32,
    measured: Measured,
    resident: Option<f64>,
    meter_kept: Option<f64>,
) -> RunRecord {
    RunRecord {
        cell: cell.key.clone(),
        contender,
        round,
        measured: measured.measurement,
        context_switches: measured.voluntary_switches + measured.involuntary_switches,
        involuntary_switches: Some(measured.involuntary_switches),
        source_resident_percent: resident,
        mechanism_used: measured.mechanism_used,
        decided_by: measured.decided_by,
        meter_kept,
        flow_bytes_per_s: measured.flow_rates,
    }
}

/// The temporary directory and the source files generated in it.
struct Workspace {
    dir: tempfile::TempDir,
    sources: Vec<(u64, PathBuf)>,
    drop_caches: bool,
    pattern: Arc<Vec<u8>>,
}

impl Workspace {
    fn new(parent: &Path, drop_caches: bool) -> io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("flexio-bench-")
            .tempdir_in(parent)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", parent.display())))?;
        let mut pattern = vec![0u8; HELPER_BUFFER];
        fill(&mut pattern, 0x9e37_79b9_7f4a_7c15);
        Ok(Workspace {
            dir,
            sources: Vec::new(),
            drop_caches,
            pattern: Arc::new(pattern),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The source file of `size` bytes (pseudo-random, no holes), made on
    /// first use and fsynced so that dropping its cache drops it.
    fn source(&mut self, size: u64) -> io::Result<PathBuf> {
        if let Some((_, path)) = self.sources.iter().find(|(s, _)| *s == size) {
            return Ok(path.clone());
        }
        let path = self.path(&format!("source-{size}"));
        write_source(&path, size, size ^ 0x2545_f491_4f6c_dd1d)?;
        self.sources.push((size, path.clone()));
        Ok(path)
    }

    /// The `number`th other source file of `size` bytes (1, 2, …), with
    /// bytes of its own, made on first use.
    fn numbered_source(&mut self, size: u64, number: u64) -> io::Result<PathBuf> {
        let path = self.path(&format!("source-{size}-{number}"));
        if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(size) {
            write_source(
                &path,
                size,
                size ^ number.rotate_left(32) ^ 0x2545_f491_4f6c_dd1d,
            )?;
        }
        Ok(path)
    }

    /// Puts the source in the state the cell wants and returns its
    /// residency, percent.
    fn prepare_source(
        &self,
        path: &Path,
        cache: CacheState,
        programs: &[String],
    ) -> io::Result<Option<f64>> {
        let file = File::open(path)?;
        let size = file.metadata()?.len();
        match cache {
            CacheState::Cold => {
                drop_pages(&file)?;
                if self.drop_caches {
                    // Best effort: a container may forbid it; DONTNEED did
                    // the work for our file already.
                    let _ = std::fs::write("/proc/sys/vm/drop_caches", "1\n");
                    for program in programs {
                        peers::prewarm_program(program);
                    }
                }
            }
            CacheState::Warm => {
                let resident = measure::residency(&file, 0, size).map_or(0.0, |r| r.percent());
                if resident < 100.0 {
                    io::copy(&mut &file, &mut io::sink())?;
                }
            }
            CacheState::NotApplicable => {}
        }
        Ok(measure::residency(&file, 0, size).map(|r| r.percent()))
    }
}

/// Drops `file`'s pages from the page cache: synced, then
/// `posix_fadvise(DONTNEED)`.
fn drop_pages(file: &File) -> io::Result<()> {
    rustix::fs::fsync(file)?;
    rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed)?;
    Ok(())
}

/// A file of `length` pseudo-random bytes from `seed` (no holes),
/// fsynced so that dropping its cache drops it.
fn write_source(path: &Path, length: u64, seed: u64) -> io::Result<()> {
    let mut file = File::create(path)?;
    let mut block = vec![0u8; 1 << 20];
    let (mut written, mut seed) = (0u64, seed);
    while written < length {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        fill(&mut block, seed);
        let n = (length - written).min(block.len() as u64) as usize;
        file.write_all(&block[..n])?;
        written += n as u64;
    }
    file.sync_all()
}

/// xorshift64 bytes: cheap, incompressible enough, never a hole.
fn fill(buffer: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    for chunk in buffer.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bytes = x.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// One line per cell and `auto` contender: what flexio chose and what
/// decided it (the profile range, or the built-in table). Results written
/// before the decision was recorded explain the built-in table's pick.
///
/// # Examples
/// ```
/// let results = flexio_harness::model::Results::default();
/// assert!(flexio_harness::runner::auto_choices(&results).is_empty());
/// ```
pub fn auto_choices(results: &Results) -> Vec<String> {
    let mut lines = Vec::new();
    let mut seen = BTreeSet::new();
    for run in &results.runs {
        if !run.contender.is_auto() || !seen.insert((&run.cell, run.contender.label())) {
            continue;
        }
        let Some((source, sink)) = run.cell.scenario.endpoints() else {
            continue;
        };
        let table = builtin_choice(source, sink);
        let used = run
            .mechanism_used
            .clone()
            .unwrap_or_else(|| table.to_string());
        let who = match &run.contender {
            Contender::Flexio {
                builtin_table: true,
                ..
            } => "flexio auto (built-in)",
            _ => "flexio",
        };
        let flow = crate::plan::label(&run.cell);
        let line = match &run.decided_by {
            Some(decided_by) => {
                format!("{who} chose {used} for {flow} ({source} -> {sink}) because {decided_by}")
            }
            None => {
                let mut line = format!(
                    "{who} chose {used} for {flow} ({source} -> {sink}) because the built-in table picks {table} for that pair"
                );
                if used != table.as_str() {
                    line += &format!("; the kernel refused {table}, so it fell back to {used}");
                }
                line
            }
        };
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synced_cold_run_spans_a_second_of_its_storage_in_whole_passes() {
        const MIB: u64 = 1 << 20;
        assert_eq!(storage_passes(16 * MIB, MIB), 16);
        assert_eq!(storage_passes(16 * MIB, 8 * MIB), 2);
        assert_eq!(storage_passes(16 * MIB, 24 * MIB), 1);
        assert_eq!(storage_passes(64 * MIB, 16 * MIB), 4);
        assert_eq!(storage_passes(64 * MIB, 200 * MIB), 1);
        assert_eq!(storage_passes(64 * MIB, MIB), 64);
        assert_eq!(storage_passes(1024 * MIB, MIB), 64);
        assert_eq!(storage_passes(MIB, 0), 64);
        assert_eq!(storage_passes(0, MIB), 1);
    }

    #[test]
    fn warm_up_comes_first_then_rotated_rounds() {
        let order = schedule(3, 1, 2);
        let rounds: Vec<u32> = order.iter().map(|(r, _)| *r).collect();
        assert_eq!(rounds, [0, 0, 0, 1, 1, 1, 2, 2, 2]);
        let who: Vec<usize> = order.iter().map(|(_, c)| *c).collect();
        assert_eq!(who, [0, 1, 2, 1, 0, 2, 2, 0, 1]);
    }

    #[test]
    fn neighbours_change_from_round_to_round() {
        let n = 14;
        let order = schedule(n, 0, 6);
        let mut predecessors_of_0: Vec<usize> = order
            .chunks(n)
            .filter_map(|round| {
                let at = round.iter().position(|&(_, c)| c == 0)?;
                (at > 0).then(|| round[at - 1].1)
            })
            .collect();
        predecessors_of_0.sort_unstable();
        predecessors_of_0.dedup();
        assert!(predecessors_of_0.len() >= 4, "{predecessors_of_0:?}");
        for round in order.chunks(n) {
            let mut who: Vec<usize> = round.iter().map(|&(_, c)| c).collect();
            who.sort_unstable();
            assert_eq!(who, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn over_n_rounds_everyone_opens_a_round_once() {
        for n in [1, 2, 5, 14] {
            let order = schedule(n, 0, n as u32);
            let mut first: Vec<usize> = order.chunks(n).map(|round| round[0].1).collect();
            first.sort_unstable();
            assert_eq!(first, (0..n).collect::<Vec<_>>(), "{n} contenders");
        }
    }

    #[test]
    fn fill_is_not_zero() {
        let mut buffer = vec![0u8; 4099];
        fill(&mut buffer, 7);
        assert!(buffer.iter().filter(|b| **b == 0).count() < 100);
    }
}
