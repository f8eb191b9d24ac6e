//! The timed run of one contender for each scenario of the matrix:
//! file to file, file to socket, socket to file, file to pipe, pipe to
//! file, memory, parallel flows and the limits.

use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use flexio::{Flow, Report, Sink, Source};

use super::{closed, flexio_flow, CellContext};
use crate::limits::{self, Probe};
use crate::peers::{self, PeerIo, PeerSpec, PeerVars};
use crate::plan::Entrant;
use crate::runner::streams::{
    accept_within, spawn_feeder, spawn_pipe_reader, spawn_receiver, spawn_sender, Net,
};
use crate::runner::{joined, other, Workspace};
use crate::window::{CpuScope, Measured, Window};

impl CellContext {
    /// `reps` copies of the source in one window, each into a new file:
    /// `sink`, then `sink.1`, `sink.2`, … (the extra ones are removed
    /// after the window), so that every copy creates its file as a single
    /// one does, rather than replacing the one before. A synced run with
    /// more sources (on throttled storage) copies each of them once
    /// instead.
    pub(super) fn file_to_file(
        &self,
        entrant: &Entrant,
        sink: &Path,
        durable: bool,
        reps: u64,
    ) -> io::Result<Measured> {
        let source = self.source()?;
        let sources: Vec<&Path> = match durable && !self.more_sources.is_empty() {
            true => std::iter::once(source)
                .chain(self.more_sources.iter().map(PathBuf::as_path))
                .collect(),
            false => vec![source; reps as usize],
        };
        let sinks: Vec<PathBuf> = (0..sources.len())
            .map(|rep| match rep {
                0 => sink.to_path_buf(),
                _ => sink.with_extension(rep.to_string()),
            })
            .collect();
        let result = self.copies(entrant, &sources, &sinks, durable);
        for extra in sinks.iter().skip(1) {
            let _ = std::fs::remove_file(extra);
        }
        result
    }

    /// One window over a copy of each of `sources` into its sink.
    pub(super) fn copies(
        &self,
        entrant: &Entrant,
        sources: &[&Path],
        sinks: &[PathBuf],
        durable: bool,
    ) -> io::Result<Measured> {
        match entrant {
            Entrant::Flexio { .. } => {
                let window = Window::open(CpuScope::Thread);
                let mut bytes = 0;
                let mut last = None;
                for (source, sink) in sources.iter().zip(sinks) {
                    let flow = Flow::new(Source::path(source), Sink::path(sink));
                    let report = flexio_flow(flow, entrant, self.profile.as_ref(), self.pacing)
                        .fsync(durable)
                        .run()
                        .map_err(other)?;
                    bytes += report.measured.bytes;
                    last = Some(report);
                }
                let report = last.ok_or_else(|| other("no copy ran"))?;
                let mut measured = closed(window, &report);
                measured.measurement.bytes = bytes;
                Ok(measured)
            }
            Entrant::Peer(_) | Entrant::Process { .. } => {
                let spec = &self.command(entrant)?;
                let window = Window::open(CpuScope::Children);
                for (source, sink) in sources.iter().zip(sinks) {
                    let vars = PeerVars {
                        src: source.to_path_buf(),
                        dst: sink.clone(),
                        ..PeerVars::default()
                    };
                    let status = peers::spawn_peer(spec, &vars, None, PeerIo::default())?.wait()?;
                    peers::check_status(&spec.name, status)?;
                }
                let mut measured = window.close(0, None);
                measured.measurement.bytes = sinks
                    .iter()
                    .map(|sink| std::fs::metadata(sink).map_or(0, |m| m.len()))
                    .sum();
                Ok(measured)
            }
            Entrant::Limit(_) | Entrant::Pair { .. } => {
                Err(not_a_contender(entrant, "file-to-file"))
            }
        }
    }

    /// One window over `reps` transfers of the source, each over its own
    /// connection to the bench's receiver (a peer or a process: one).
    pub(super) fn file_to_socket(
        &self,
        entrant: &Entrant,
        size: u64,
        net: &Net,
        reps: u64,
    ) -> io::Result<Measured> {
        let source = self.source()?;
        if let Entrant::Peer(PeerSpec {
            iperf3: Some(mode), ..
        }) = entrant
        {
            return limits::iperf3(
                size,
                *mode,
                &net.receiver_ip.to_string(),
                net.sender_ns.as_deref(),
                net.receiver_ns.as_deref(),
            );
        }
        let reps = match entrant {
            Entrant::Flexio { .. } => reps.max(1),
            _ => 1,
        };
        let listener = net.listen()?;
        let address = listener.local_addr()?;
        let receiver = spawn_receiver(listener, reps);
        let scope = match entrant {
            Entrant::Flexio { .. } => CpuScope::Thread,
            _ => CpuScope::Children,
        };
        let window = Window::open(scope);
        let mut connected = 0;
        let sent: io::Result<Option<Report>> = match entrant {
            Entrant::Flexio { .. } => (0..reps).try_fold(None, |_, _| {
                let stream = net.connect(address)?;
                connected += 1;
                let flow = Flow::new(
                    Source::path(source),
                    Sink::Fd(stream.into(), format!("tcp://{address}")),
                );
                let report = flexio_flow(flow, entrant, self.profile.as_ref(), self.pacing)
                    .run()
                    .map_err(other)?;
                Ok(Some(report))
            }),
            Entrant::Peer(_) | Entrant::Process { .. } => self.command(entrant).and_then(|spec| {
                let vars = PeerVars {
                    src: source.to_path_buf(),
                    host: address.ip().to_string(),
                    port: address.port(),
                    bytes: size,
                    ..PeerVars::default()
                };
                peers::spawn_peer(&spec, &vars, net.sender_ns.as_deref(), PeerIo::default())
                    .and_then(|child| child.wait())
                    .and_then(|status| peers::check_status(&spec.name, status))
                    .map(|()| None)
            }),
            Entrant::Limit(_) | Entrant::Pair { .. } => {
                Err(not_a_contender(entrant, "file-to-socket"))
            }
        };
        if sent.is_err() {
            // Let the receiver go: the connections that never came (a
            // peer's or a process's, unknown, counts as none).
            for _ in connected..reps {
                let _ = net.connect(address);
            }
        }
        let received = joined(receiver, "receiver");
        let measured = stream_measured(window, &received, &sent);
        sent?;
        received?;
        Ok(measured)
    }

    pub(super) fn socket_to_file(
        &self,
        entrant: &Entrant,
        size: u64,
        sink: &Path,
        net: &Net,
    ) -> io::Result<Measured> {
        match entrant {
            Entrant::Flexio { .. } => {
                let listener = net.listen()?;
                let address = listener.local_addr()?;
                let window = Window::open(CpuScope::Thread);
                let sender = spawn_sender(net, address, Arc::clone(&self.pattern), size);
                let received = accept_within(&listener).and_then(|stream| {
                    let flow = Flow::new(
                        Source::Fd(stream.into(), format!("tcp://{address}")),
                        Sink::path(sink),
                    )
                    .length(size);
                    flexio_flow(flow, entrant, self.profile.as_ref(), self.pacing)
                        .run()
                        .map_err(other)
                });
                drop(listener);
                let measured = match &received {
                    Ok(report) => closed(window, report),
                    Err(_) => window.close(0, None),
                };
                let sent = joined(sender, "sender");
                received?;
                sent?;
                Ok(measured)
            }
            Entrant::Peer(_) | Entrant::Process { .. } => {
                let spec = &self.command(entrant)?;
                let port = peers::free_port()?;
                let vars = PeerVars {
                    dst: sink.to_path_buf(),
                    host: net.receiver_ip.to_string(),
                    port,
                    bytes: size,
                    ..PeerVars::default()
                };
                let io = PeerIo {
                    stdin: None,
                    stdout: sink_as_stdout(spec, sink)?,
                };
                let window = Window::open(CpuScope::Children);
                let child = peers::spawn_peer(spec, &vars, net.receiver_ns.as_deref(), io)?;
                let sender = spawn_sender(
                    net,
                    SocketAddr::new(net.receiver_ip, port),
                    Arc::clone(&self.pattern),
                    size,
                );
                let connected = match joined(sender, "sender") {
                    Ok(at) => at,
                    Err(e) => {
                        child.kill();
                        return Err(e);
                    }
                };
                let status = child.wait()?;
                let end = Instant::now();
                let bytes = std::fs::metadata(sink).map_or(0, |m| m.len());
                let mut measured = window.close(bytes, None);
                // The peer's window starts at the connection: its start-up
                // and the sender's connection retries are outside it.
                measured.measurement.wall_ns = end.duration_since(connected).as_nanos() as u64;
                peers::check_status(&spec.name, status)?;
                Ok(measured)
            }
            Entrant::Limit(_) | Entrant::Pair { .. } => {
                Err(not_a_contender(entrant, "socket-to-file"))
            }
        }
    }

    pub(super) fn file_to_pipe(&self, entrant: &Entrant) -> io::Result<Measured> {
        let source = self.source()?;
        let (read_end, write_end) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let reader = spawn_pipe_reader(read_end);
        let scope = match entrant {
            Entrant::Flexio { .. } => CpuScope::Thread,
            _ => CpuScope::Children,
        };
        let window = Window::open(scope);
        // Every path drops `write_end` (the flow, or the spawned command),
        // so the reader always sees the end of the pipe.
        let sent: io::Result<Option<Report>> = match entrant {
            Entrant::Flexio { .. } => {
                let flow = Flow::new(Source::path(source), Sink::Fd(write_end, "pipe".into()));
                flexio_flow(flow, entrant, self.profile.as_ref(), self.pacing)
                    .run()
                    .map(Some)
                    .map_err(other)
            }
            Entrant::Peer(_) | Entrant::Process { .. } => match self.command(entrant) {
                Ok(spec) => {
                    let vars = PeerVars {
                        src: source.to_path_buf(),
                        ..PeerVars::default()
                    };
                    peers::spawn_peer(&spec, &vars, None, PeerIo::stdout(write_end))
                        .and_then(|child| child.wait())
                        .and_then(|status| peers::check_status(&spec.name, status))
                        .map(|()| None)
                }
                Err(e) => {
                    drop(write_end);
                    Err(e)
                }
            },
            Entrant::Limit(_) | Entrant::Pair { .. } => {
                drop(write_end);
                Err(not_a_contender(entrant, "file-to-pipe"))
            }
        };
        let received = joined(reader, "reader");
        let measured = stream_measured(window, &received, &sent);
        sent?;
        received?;
        Ok(measured)
    }

    /// A pipe the bench feeds from memory (as a shell pipeline would, with
    /// the kernel's default capacity) into the sink file.
    pub(super) fn pipe_to_file(
        &self,
        entrant: &Entrant,
        size: u64,
        sink: &Path,
    ) -> io::Result<Measured> {
        let (read_end, write_end) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let scope = match entrant {
            Entrant::Flexio { .. } => CpuScope::Thread,
            _ => CpuScope::Children,
        };
        let window = Window::open(scope);
        let feeder = spawn_feeder(write_end, Arc::clone(&self.pattern), size);
        // Every path gives up `read_end` (the flow, the command, or the
        // drop), so the feeder always ends.
        let measured = match entrant {
            Entrant::Flexio { .. } => {
                let flow =
                    Flow::new(Source::Fd(read_end, "pipe".into()), Sink::path(sink)).length(size);
                flexio_flow(flow, entrant, self.profile.as_ref(), self.pacing)
                    .run()
                    .map(|report| closed(window, &report))
                    .map_err(other)
            }
            Entrant::Peer(_) | Entrant::Process { .. } => {
                let spec = &match self.command(entrant) {
                    Ok(spec) => spec,
                    Err(e) => {
                        drop(read_end);
                        let _ = joined(feeder, "feeder");
                        return Err(e);
                    }
                };
                let vars = PeerVars {
                    dst: sink.to_path_buf(),
                    ..PeerVars::default()
                };
                let io = PeerIo {
                    stdin: Some(read_end),
                    stdout: sink_as_stdout(spec, sink)?,
                };
                peers::spawn_peer(spec, &vars, None, io)
                    .and_then(|child| child.wait())
                    .and_then(|status| {
                        let bytes = std::fs::metadata(sink).map_or(0, |m| m.len());
                        let measured = window.close(bytes, None);
                        peers::check_status(&spec.name, status)?;
                        Ok(measured)
                    })
            }
            Entrant::Limit(_) | Entrant::Pair { .. } => {
                drop(read_end);
                Err(not_a_contender(entrant, "pipe-to-file"))
            }
        };
        let fed = joined(feeder, "feeder");
        let measured = measured?;
        fed?;
        Ok(measured)
    }

    pub(super) fn memory_run(&mut self, entrant: &Entrant, reps: u64) -> io::Result<Measured> {
        let (from, to) = self
            .memory
            .as_mut()
            .ok_or_else(|| io::Error::other("this cell has no memory buffers"))?;
        match entrant {
            Entrant::Flexio { .. } => {
                let (profile, pacing) = (self.profile.as_ref(), self.pacing);
                let window = Window::open(CpuScope::Thread);
                let mut last = None;
                for _ in 0..reps {
                    let flow = Flow::new(Source::Memory(from), Sink::Memory(to));
                    let report = flexio_flow(flow, entrant, profile, pacing)
                        .run()
                        .map_err(other)?;
                    last = Some(report);
                }
                let mut measured = window.close(
                    from.len() as u64 * reps,
                    last.as_ref().map(|r| r.mechanism_used.as_str()),
                );
                measured.decided_by = last.map(|r| r.decided_by);
                Ok(measured)
            }
            Entrant::Limit(Probe::Memcpy) => Ok(limits::memcpy(from, to, reps)),
            other_entrant => Err(other(format!(
                "{} is not a memory contender",
                other_entrant.contender().label()
            ))),
        }
    }

    /// `flexio serve` sending the source to `clients` clients at once,
    /// under the cell's schedule if it has one (see
    /// `runner/serve_clients.rs`).
    pub(super) fn serve_clients(&self, entrant: &Entrant, clients: u32) -> io::Result<Measured> {
        let Entrant::Process { mechanism, params } = entrant else {
            return Err(other(format!(
                "{} is not a server: serve-clients runs `flexio serve` as a process",
                entrant.contender().label()
            )));
        };
        let exe = self
            .flexio_exe
            .as_ref()
            .ok_or_else(|| other("no flexio executable given"))?;
        let schedule = self.pacing.and_then(|pacing| pacing.schedule);
        crate::runner::serve_clients::run(
            exe,
            self.source()?,
            *mechanism,
            params,
            schedule,
            clients,
        )
    }

    pub(super) fn parallel(
        &self,
        entrant: &Entrant,
        workspace: &Workspace,
        flows: u32,
        net: Option<&Net>,
    ) -> io::Result<Measured> {
        let source = self.source()?;
        let (profile, pacing) = (self.profile.as_ref(), self.pacing);
        let sinks: Vec<PathBuf> = (0..flows)
            .map(|i| workspace.path(&format!("sink-{i}")))
            .collect();
        let measured = crate::runner::parallel::run(entrant, source, &sinks, net, |flow| {
            flexio_flow(flow, entrant, profile, pacing)
        });
        for sink in &sinks {
            let _ = std::fs::remove_file(sink);
        }
        measured
    }

    pub(super) fn limit(
        &mut self,
        entrant: &Entrant,
        size: u64,
        sink: &Path,
        reps: u64,
        net: &Net,
    ) -> io::Result<Measured> {
        let Entrant::Limit(probe) = entrant else {
            return Err(other("the limits scenario runs limit probes only"));
        };
        match probe {
            Probe::Memcpy => self.memory_run(entrant, reps),
            Probe::DiskDirectRead => limits::disk_direct_read(self.source()?),
            Probe::DiskRead => limits::disk_read(self.source()?),
            Probe::DiskDirectWrite => limits::disk_direct_write(sink, size),
            Probe::DiskWrite => limits::disk_write(sink, size),
            Probe::DiskWriteFsync => limits::disk_write_fsync(sink, size),
            Probe::FioRead => limits::fio(self.source()?, size, false),
            Probe::FioWrite => limits::fio(sink, size, true),
            Probe::FioCopy => limits::fio_copy(self.source()?, sink, size),
            Probe::Iperf3Loopback | Probe::Iperf3Veth => limits::network(
                size,
                &net.receiver_ip.to_string(),
                net.sender_ns.as_deref(),
                net.receiver_ns.as_deref(),
            ),
        }
    }
}

/// The sink file, created, for a peer that writes it to standard output.
fn sink_as_stdout(spec: &PeerSpec, sink: &Path) -> io::Result<Option<std::os::fd::OwnedFd>> {
    match spec.stdout_to_sink {
        true => Ok(Some(File::create(sink)?.into())),
        false => Ok(None),
    }
}

/// The measurement of a stream contender: the bytes the bench's reader
/// got, and for flexio what ran and what decided it.
fn stream_measured(
    window: Window,
    received: &io::Result<u64>,
    sent: &io::Result<Option<Report>>,
) -> Measured {
    let report = sent.as_ref().ok().and_then(Option::as_ref);
    window.close_after(*received.as_ref().unwrap_or(&0), report)
}

/// The error for a limit probe or a socket pair placed in a cell of
/// another scenario.
fn not_a_contender(entrant: &Entrant, scenario: &str) -> io::Error {
    other(format!(
        "{} is not a {scenario} contender",
        entrant.contender().label()
    ))
}
