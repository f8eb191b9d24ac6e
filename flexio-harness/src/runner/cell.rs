//! One cell's runs: its source file or memory buffers, the meter, the
//! command of a process contender, and the dispatch to the scenario's
//! timed run (`cell/scenarios.rs`).

use flexio::profile::FlowKind;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flexio::pace::Pacing;
use flexio::profile::Profile;
use flexio::{Flow, MechanismName, Report};

use super::streams::Net;
use super::{drop_pages, fill, other, storage_passes, BeforeRun, Bench, Workspace};
use crate::affinity;
use crate::limits::Probe;
use crate::meter::Meter;
use crate::model::{CacheState, CellSchedule};
use crate::peers::PeerSpec;
use crate::plan::{Cell, Entrant, Scenario};
use crate::window::{Measured, Window};

mod scenarios;

/// What a cell keeps between its runs.
pub(super) struct CellContext {
    scenario: Scenario,
    source: Option<PathBuf>,
    memory: Option<(Vec<u8>, Vec<u8>)>,
    reps: Vec<u64>,
    pub meter: Option<Meter>,
    pattern: Arc<Vec<u8>>,
    /// The profile `auto` consults (not its built-in twin).
    profile: Option<Profile>,
    /// The `flexio` executable of the process contenders.
    flexio_exe: Option<PathBuf>,
    /// Where a process contender's JSON report goes.
    capture: PathBuf,
    /// The cell's schedule, on its flexio flows in the engine.
    pacing: Option<Pacing>,
    /// Run after the source is prepared, before each timed run.
    before_run: Option<BeforeRun>,
    /// The other sources a run of a cold, synced copy moves after the
    /// first ([`RunOptions::storage_rate`](super::RunOptions)).
    more_sources: Vec<PathBuf>,
}

/// `flow` set up for a flexio entrant: a fixed mechanism with its
/// parameters; `auto` with the profile (unless it is the built-in twin)
/// and without parameters, so that the profile's range or the defaults
/// apply as they would for `flexio copy`; paced by the cell's schedule.
fn flexio_flow<'f>(
    flow: Flow<'f>,
    entrant: &Entrant,
    profile: Option<&'f Profile>,
    pacing: Option<Pacing>,
) -> Flow<'f> {
    let flow = match pacing {
        Some(pacing) => flow.pacing(pacing),
        None => flow,
    };
    match entrant {
        Entrant::Flexio {
            mechanism: MechanismName::Auto,
            builtin_table,
            ..
        } => flow
            .via(MechanismName::Auto)
            .profile(profile.filter(|_| !builtin_table)),
        Entrant::Flexio {
            mechanism, params, ..
        } => flow.via(*mechanism).params(params.clone()),
        _ => flow,
    }
}

/// The window's measurement with what ran and what decided it.
fn closed(window: Window, report: &Report) -> Measured {
    window.close_after(report.measured.bytes, Some(report))
}

impl CellContext {
    pub(super) fn prepare(
        bench: &mut Bench<'_>,
        scenario: Scenario,
        cell: &Cell,
        _net: &Net,
    ) -> io::Result<Self> {
        let size = cell.key.size;
        let needs_source = match scenario {
            Scenario::Flow(
                FlowKind::MemoryToMemory | FlowKind::SocketToFile | FlowKind::PipeToFile,
            )
            | Scenario::SocketPair => false,
            Scenario::Limits => cell.entrants.iter().any(|e| {
                matches!(
                    e,
                    Entrant::Limit(
                        Probe::DiskDirectRead | Probe::DiskRead | Probe::FioRead | Probe::FioCopy
                    )
                )
            }),
            _ => true,
        };
        let needs_memory = cell
            .entrants
            .iter()
            .any(|e| matches!(e, Entrant::Limit(Probe::Memcpy)))
            || scenario == Scenario::Flow(FlowKind::MemoryToMemory);
        let source = match needs_source {
            true => Some(bench.workspace.source(size)?),
            false => None,
        };
        let passes = match (scenario, cell.key.cache, bench.options.storage_rate) {
            (Scenario::Flow(FlowKind::FileToFileDurable), CacheState::Cold, Some(rate)) => {
                storage_passes(rate, size)
            }
            _ => 1,
        };
        let more_sources = (1..passes)
            .map(|number| bench.workspace.numbered_source(size, number))
            .collect::<io::Result<Vec<_>>>()?;
        let memory = needs_memory.then(|| {
            let mut from = vec![0u8; size as usize];
            fill(&mut from, size);
            // Touch the sink so that page faults stay out of the windows.
            (from, vec![1u8; size as usize])
        });
        let meter = match scenario {
            Scenario::Meter => {
                let argv = bench
                    .options
                    .meter_command
                    .as_ref()
                    .ok_or_else(|| io::Error::other("no meter co-process command"))?;
                // Started on the transfer's CPU (a child inherits the
                // pin), where it competes with the transfer; its solo rate
                // is measured there before any transfer runs.
                let _pinned = affinity::pin_contender();
                Some(Meter::start(argv, Duration::from_millis(500))?)
            }
            _ => None,
        };
        Ok(CellContext {
            scenario,
            source,
            memory,
            reps: vec![1; cell.entrants.len()],
            meter,
            pattern: Arc::clone(&bench.workspace.pattern),
            profile: bench.options.profile.clone(),
            flexio_exe: bench.options.flexio_exe.clone(),
            capture: report_capture_path(bench.workspace.path("process-report.json")),
            pacing: cell.key.schedule.map(CellSchedule::pacing),
            before_run: bench.options.before_each_run.clone(),
            more_sources,
        })
    }

    /// The command line of a peer, or of `flexio copy` as a process in
    /// this scenario: `--json` (its report tells what ran), the
    /// mechanism's flags, and the endpoints the peers of the scenario use
    /// — files, `tcp://` to the bench's receiver, `tcp-listen://` for the
    /// bench's sender, `-` for the bench's pipes.
    fn command(&self, entrant: &Entrant) -> io::Result<PeerSpec> {
        let (mechanism, params) = match entrant {
            Entrant::Peer(spec) => return Ok(spec.clone()),
            Entrant::Process { mechanism, params } => (*mechanism, params),
            _ => return Err(other("not a process")),
        };
        let exe = self
            .flexio_exe
            .as_ref()
            .ok_or_else(|| other("no flexio executable given"))?;
        let mut argv = vec![exe.display().to_string(), "copy".into(), "--json".into()];
        if self.scenario == Scenario::Flow(FlowKind::FileToFileDurable) {
            argv.push("--fsync".into());
        }
        if mechanism == MechanismName::Auto {
            if let Some(path) = self.profile.as_ref().and_then(|p| p.path.as_ref()) {
                // The bench accepted this profile (a foreign machine's
                // only when trusted): the process consults the same.
                argv.extend(["--profile".into(), path.display().to_string()]);
                argv.push("--trust-profile".into());
            }
        } else {
            argv.extend([
                "--via".into(),
                mechanism.as_str().into(),
                "--chunk".into(),
                params.chunk.to_string(),
                "--queue-depth".into(),
                params.queue_depth.to_string(),
                "--pipe-size".into(),
                params.pipe_size.to_string(),
            ]);
            if params.direct && mechanism != MechanismName::Direct {
                argv.push("--direct".into());
            }
        }
        let (source, sink, stdout_to_sink) = match self.scenario {
            Scenario::Flow(FlowKind::FileToFile | FlowKind::FileToFileDurable) => {
                ("{src}", "{dst}", false)
            }
            Scenario::Flow(FlowKind::FileToSocket) => ("{src}", "tcp://{host}:{port}", false),
            Scenario::Flow(FlowKind::SocketToFile) => {
                ("tcp-listen://{host}:{port}", "{dst}", false)
            }
            Scenario::Flow(FlowKind::FileToPipe) => ("{src}", "-", true),
            Scenario::Flow(FlowKind::PipeToFile) => ("-", "{dst}", false),
            other_scenario => {
                return Err(other(format!(
                    "flexio copy as a process does not run in {}",
                    other_scenario.name()
                )))
            }
        };
        argv.extend([source.to_string(), sink.to_string()]);
        Ok(PeerSpec {
            name: entrant.contender().label(),
            needs: vec![argv[0].clone()],
            argv,
            stdin_from_source: false,
            stdout_to_sink,
            iperf3: None,
            capture: Some(self.capture.clone()),
        })
    }

    /// What a process contender's JSON report says ran and why; nothing
    /// when it wrote none.
    fn read_capture(&self, measured: &mut Measured) {
        let text = std::fs::read_to_string(&self.capture).unwrap_or_default();
        let _ = std::fs::remove_file(&self.capture);
        // Warnings and "listening on" lines may come before the report.
        let Some(start) = text
            .find("\n{")
            .map(|at| at + 1)
            .or_else(|| text.starts_with('{').then_some(0))
        else {
            return;
        };
        let mut reports =
            serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde_json::Value>();
        if let Some(Ok(report)) = reports.next() {
            measured.mechanism_used = report["mechanism_used"].as_str().map(str::to_string);
            measured.decided_by = report["decided_by"].as_str().map(str::to_string);
        }
    }

    /// Short flows repeat within one window until it lasts at least
    /// 2 ms — tiny memory copies, and warm file-to-file copies (a 1 MiB
    /// copy takes 0.3 ms, of which the creation and rename of its file
    /// are a noisy part) — or 20 ms for a warm file to a socket, each
    /// transfer over its own connection (1 MiB over loopback takes about a
    /// millisecond, of which the connection and the receiver's wake-up
    /// are a noisy part: sendfile's rounds spread 82-117% over their
    /// median). A single one is timed with more noise than the differences
    /// between mechanisms. One untimed run per entrant finds how many
    /// times. A cold cell cannot repeat: only its first copy would be
    /// cold.
    pub(super) fn calibrate(
        &mut self,
        workspace: &mut Workspace,
        cell: &Cell,
        active: &[bool],
        net: &Net,
    ) -> io::Result<()> {
        let warm = cell.key.cache == CacheState::Warm;
        let warm_files = self.scenario == Scenario::Flow(FlowKind::FileToFile) && warm;
        let warm_socket = self.scenario == Scenario::Flow(FlowKind::FileToSocket) && warm;
        let memory = matches!(
            self.scenario,
            Scenario::Flow(FlowKind::MemoryToMemory) | Scenario::Limits
        ) && self.memory.is_some();
        let wanted_ns: u64 = match (warm_files, warm_socket, memory) {
            (true, _, _) | (_, _, true) => 2_000_000,
            (_, true, _) => 20_000_000,
            _ => return Ok(()),
        };
        let sink = workspace.path("sink");
        for (i, entrant) in cell.entrants.iter().enumerate() {
            // A process is timed one copy per run, as a user runs it: its
            // start-up is part of what is measured.
            // A socket's limit (iperf3) sizes its own transfer.
            let repeats = match entrant {
                Entrant::Peer(_) | Entrant::Process { .. } => false,
                Entrant::Flexio { .. } => true,
                _ => !warm_socket,
            };
            if !active[i] || !repeats {
                continue;
            }
            let once = if warm_files {
                workspace.prepare_source(self.source()?, cell.key.cache, &[])?;
                let once = self.file_to_file(entrant, &sink, false, 1);
                let _ = std::fs::remove_file(&sink);
                once?
            } else if warm_socket {
                workspace.prepare_source(self.source()?, cell.key.cache, &[])?;
                let _pinned = affinity::pin_contender();
                self.file_to_socket(entrant, cell.key.size, net, 1)?
            } else {
                self.memory_run(entrant, 1)?
            };
            self.reps[i] = wanted_ns
                .div_ceil(once.measurement.wall_ns.max(1))
                .clamp(1, 1 << 22);
        }
        Ok(())
    }

    /// One timed run of entrant `i`: the measurement, the source's
    /// residency, the meter's kept share.
    pub(super) fn run(
        &mut self,
        workspace: &mut Workspace,
        cell: &Cell,
        i: usize,
        net: &Net,
    ) -> io::Result<(Measured, Option<f64>, Option<f64>)> {
        let entrant = &cell.entrants[i];
        let programs = match entrant {
            Entrant::Process { .. } if self.scenario == Scenario::ServeClients => Vec::new(),
            Entrant::Peer(_) | Entrant::Process { .. } => self.command(entrant)?.needs,
            _ => Vec::new(),
        };
        for source in &self.more_sources {
            drop_pages(&File::open(source)?)?;
        }
        // The first source last: as root, its preparation drops the whole
        // page cache after its own pages.
        let resident = match &self.source {
            Some(source) => workspace.prepare_source(source, cell.key.cache, &programs)?,
            None => None,
        };
        if let Some(before_run) = &self.before_run {
            before_run.run()?;
        }
        let sink = workspace.path("sink");
        let size = cell.key.size;
        let iperf3_limit = matches!(
            entrant,
            Entrant::Limit(Probe::Iperf3Loopback | Probe::Iperf3Veth)
        );
        let network = iperf3_limit
            || matches!(
                self.scenario,
                Scenario::Flow(FlowKind::FileToSocket | FlowKind::SocketToFile) | Scenario::Meter
            )
            || (self.scenario == Scenario::Parallel && !cell.key.path.is_empty())
            || matches!(self.scenario, Scenario::ServeClients | Scenario::SocketPair);
        let pipes = matches!(
            self.scenario,
            Scenario::Flow(FlowKind::FileToPipe | FlowKind::PipeToFile)
        );
        if network {
            net.forget_tcp_metrics();
        }
        // In the meter cell the flow shares its CPU with the meter, and the
        // bench's receiver runs on the other: Cue's sender and metering
        // process on one machine, its receiver on another.
        // Parallel flows are placed by the scheduler: pinning them all to
        // one CPU would measure that CPU, not how they share the machine.
        // The two sides of a socket pair, both flexio, are a stream's two
        // ends: its receiver here, its sender on the other CPU (left to
        // the scheduler, io_uring with 4 KiB buffers took 1x or 2.5x the
        // time by where the two threads fell).
        let streams = pipes || (network && self.scenario != Scenario::Parallel);
        let _pinned = streams.then(affinity::pin_contender).flatten();
        // A socket pair prepares its own sources (its files).
        let mut pair_resident = None;
        let measured = match self.scenario {
            // A limit beside the contenders (the disk in cold cells, memcpy
            // in memory cells) runs in the same rounds as they do.
            _ if matches!(entrant, Entrant::Limit(_)) => {
                self.limit(entrant, size, &sink, self.reps[i], net)
            }
            Scenario::Flow(FlowKind::FileToFile) => {
                self.file_to_file(entrant, &sink, false, self.reps[i])
            }
            Scenario::Flow(FlowKind::FileToFileDurable) => {
                self.file_to_file(entrant, &sink, true, 1)
            }
            Scenario::Flow(FlowKind::FileToSocket) => {
                self.file_to_socket(entrant, size, net, self.reps[i])
            }
            Scenario::Meter => {
                let meter = self.meter.as_mut().expect("the meter runs in meter cells");
                meter.measure_solo(Duration::from_millis(200))?;
                let (start, at) = (meter.count()?, Instant::now());
                let measured = self.file_to_socket(entrant, size, net, 1)?;
                let meter = self.meter.as_mut().expect("the meter runs in meter cells");
                let (end, until) = (meter.count()?, Instant::now());
                let kept = meter.kept(end - start, until.duration_since(at).as_nanos() as u64);
                return Ok((measured, resident, Some(kept)));
            }
            Scenario::Flow(FlowKind::SocketToFile) => {
                self.socket_to_file(entrant, size, &sink, net)
            }
            Scenario::Flow(FlowKind::FileToPipe) => self.file_to_pipe(entrant),
            Scenario::Flow(FlowKind::PipeToFile) => self.pipe_to_file(entrant, size, &sink),
            Scenario::Flow(FlowKind::MemoryToMemory) => self.memory_run(entrant, self.reps[i]),
            Scenario::Parallel => {
                let net = (!cell.key.path.is_empty()).then_some(net);
                self.parallel(entrant, workspace, cell.key.flows, net)
            }
            Scenario::ServeClients => self.serve_clients(entrant, cell.key.flows),
            Scenario::SocketPair => crate::runner::pair::run(entrant, workspace, cell, net).map(
                |(measured, sources_resident)| {
                    pair_resident = sources_resident;
                    measured
                },
            ),
            Scenario::Limits => self.limit(entrant, size, &sink, self.reps[i], net),
            Scenario::Flow(kind) => Err(io::Error::other(format!("no cell measures {kind} flows"))),
        };
        let _ = std::fs::remove_file(&sink);
        let mut measured = measured?;
        if matches!(entrant, Entrant::Process { .. }) {
            self.read_capture(&mut measured);
        }
        let expected = match self.scenario {
            Scenario::Flow(FlowKind::MemoryToMemory | FlowKind::FileToFile) => size * self.reps[i],
            Scenario::Flow(FlowKind::FileToSocket) if !matches!(entrant, Entrant::Limit(_)) => {
                size * self.reps[i]
            }
            Scenario::Flow(FlowKind::FileToFileDurable)
                if !matches!(entrant, Entrant::Limit(_)) =>
            {
                size * (1 + self.more_sources.len() as u64)
            }
            _ if matches!(entrant, Entrant::Limit(_)) => measured.measurement.bytes,
            Scenario::Parallel | Scenario::ServeClients => size * u64::from(cell.key.flows),
            _ => size,
        };
        if measured.measurement.bytes != expected {
            return Err(io::Error::other(format!(
                "moved {} bytes, expected {expected}",
                measured.measurement.bytes
            )));
        }
        Ok((measured, resident.or(pair_resident), None))
    }

    fn source(&self) -> io::Result<&Path> {
        self.source
            .as_deref()
            .ok_or_else(|| io::Error::other("this cell has no source file"))
    }
}

/// Where `flexio copy --json` (as a process) writes its report: in memory
/// (`/dev/shm`) where there is one, not on the file system under test,
/// whose writeback and discards the peers (writing to `/dev/null`) do not
/// pay for. (Measured on this VM's ext4 the difference was within the
/// noise; on a slower disk it need not be.)
fn report_capture_path(on_disk: PathBuf) -> PathBuf {
    // Named after the bench's own workspace: unique per bench, even for
    // two benches in one process, as tests run them.
    let workspace = on_disk
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let memory = Path::new("/dev/shm");
    if memory.is_dir() {
        memory.join(format!(
            "flexio-bench-{}-{workspace}-process-report.json",
            std::process::id()
        ))
    } else {
        on_disk
    }
}
