//! A flow — source, sink, range, mechanism, parameters — and the engine
//! that runs it and reports what really happened.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use std::os::fd::AsFd;

use crate::endpoint::SinkOptions;
use crate::endpoint::{
    open_sink, open_source, EndpointKind, OpenSink, OpenSource, Sink, SinkIo, Source, SourceIo,
};
use crate::error::{Error, Result};
use crate::measure::{self, Sample};
use crate::mechanism::{
    fallback_for, implementation, Counters, MechanismName, Scratch, Stop, Transfer,
};
use crate::report::{Fallback, Report};
use crate::tune::{Decision, FlowKind, Profile};
use crate::{builtin_choice, verify};

/// Parameters of a mechanism.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Params {
    /// Bytes per read, write, map window or request (default 256 KiB).
    pub chunk: usize,
    /// io_uring requests in flight (default 32).
    pub queue_depth: u32,
    /// Pipe capacity splice asks for (default 1 MiB, clamped to
    /// `/proc/sys/fs/pipe-max-size`).
    pub pipe_size: usize,
    /// O_DIRECT on the file side(s) of io-uring.
    pub direct: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            chunk: 256 << 10,
            queue_depth: 32,
            pipe_size: 1 << 20,
            direct: false,
        }
    }
}

/// Bytes moved so far and bytes to move, shared with whoever draws a
/// progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
}

impl Progress {
    /// Bytes in the sink so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Bytes the flow will move, once known (`None` for a stream read to
    /// its end).
    pub fn total(&self) -> Option<u64> {
        match self.total.load(Ordering::Relaxed) {
            0 if self.done() == 0 => None,
            u64::MAX => None,
            total => Some(total),
        }
    }
}

/// Called with the bound address of a `*-listen://` endpoint.
type ListenCallback<'a> = Box<dyn FnMut(&str) + 'a>;

/// One flow: where from, where to, which bytes, how.
///
/// # Examples
/// ```
/// use flexio::{Flow, MechanismName, Sink, Source};
/// let data = vec![7u8; 100_000];
/// let mut out = vec![0u8; 100_000];
/// let report = Flow::new(Source::Memory(&data), Sink::Memory(&mut out))
///     .via(MechanismName::ReadWrite)
///     .run()
///     .unwrap();
/// assert_eq!(report.bytes, 100_000);
/// assert_eq!(out, data);
/// ```
pub struct Flow<'a> {
    source: Source<'a>,
    sink: Sink<'a>,
    offset: u64,
    length: Option<u64>,
    seek: u64,
    via: MechanismName,
    params: Params,
    in_place: bool,
    fsync: bool,
    strict: bool,
    verify: bool,
    progress: Arc<Progress>,
    on_listen: Option<ListenCallback<'a>>,
    profile: Option<&'a Profile>,
    params_explicit: bool,
}

impl<'a> Flow<'a> {
    /// A flow of the whole source into the sink with `auto`.
    pub fn new(source: Source<'a>, sink: Sink<'a>) -> Self {
        Flow {
            source,
            sink,
            offset: 0,
            length: None,
            seek: 0,
            via: MechanismName::Auto,
            params: Params::default(),
            in_place: false,
            fsync: false,
            strict: false,
            verify: false,
            progress: Arc::default(),
            on_listen: None,
            profile: None,
            params_explicit: false,
        }
    }

    /// Start reading the source at this byte (seekable sources only).
    pub fn offset(mut self, offset: u64) -> Self {
        self.offset = offset;
        self
    }

    /// Move exactly this many bytes; a source that ends sooner is an error.
    pub fn length(mut self, length: u64) -> Self {
        self.length = Some(length);
        self
    }

    /// Start writing the sink at this byte (block devices, memory, and
    /// existing files written in place).
    pub fn seek(mut self, seek: u64) -> Self {
        self.seek = seek;
        self
    }

    /// The mechanism to use.
    pub fn via(mut self, mechanism: MechanismName) -> Self {
        self.via = mechanism;
        self
    }

    /// Mechanism parameters. Given explicitly, they also hold when `auto`
    /// takes its mechanism from a profile.
    pub fn params(mut self, params: Params) -> Self {
        self.params = params;
        self.params_explicit = true;
        self
    }

    /// The profile `auto` consults (see [`crate::tune`]); without one, or
    /// when it has no range for the flow, `auto` uses the built-in table.
    /// Checking that the profile fits this machine is the caller's choice
    /// ([`Profile::machine_differences`]).
    pub fn profile(mut self, profile: Option<&'a Profile>) -> Self {
        self.profile = profile;
        self
    }

    /// Write into the existing sink file instead of replacing it.
    pub fn in_place(mut self, in_place: bool) -> Self {
        self.in_place = in_place;
        self
    }

    /// fsync the sink (and, for a new file, its directory) before the flow
    /// counts as done; the time is inside the timed window.
    pub fn fsync(mut self, fsync: bool) -> Self {
        self.fsync = fsync;
        self
    }

    /// Make every fallback an error.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// After the flow, hash source range and sink (BLAKE3) and fail on a
    /// mismatch; outside the timed window.
    pub fn verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    /// Share progress with a watcher (a progress bar).
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = progress;
        self
    }

    /// Called with the bound address when a `*-listen://` endpoint starts
    /// listening (useful with port 0).
    pub fn on_listen(mut self, hook: impl FnMut(&str) + 'a) -> Self {
        self.on_listen = Some(Box::new(hook));
        self
    }

    /// Runs the flow.
    ///
    /// # Errors
    /// [`Error::Usage`] and [`Error::UnsupportedPair`] for a flow described
    /// wrongly (nothing is moved); [`Error::Io`], [`Error::SourceEnded`] and
    /// [`Error::MappingFault`] when moving fails (a regular-file sink is left
    /// as it was); [`Error::StrictRefusal`] when `strict` forbids a fallback;
    /// [`Error::VerifyMismatch`] when `verify` finds a difference.
    pub fn run(mut self) -> Result<Report> {
        let mut listen_hook = self.on_listen.take();
        let mut on_listen = |address: &str| {
            if let Some(hook) = listen_hook.as_mut() {
                hook(address)
            }
        };
        self.check_pair_before_opening()?;
        let source = open_source(
            std::mem::replace(&mut self.source, Source::Memory(&[])),
            &mut on_listen,
        )?;
        let total = self.checked_length(&source)?;
        let options = SinkOptions {
            in_place: self.in_place,
            source_identity: source.identity,
            mode: source.mode,
        };
        let sink = open_sink(
            std::mem::replace(&mut self.sink, Sink::Memory(&mut [])),
            &options,
            &mut on_listen,
        )?;
        self.check_sink(&sink, total)?;
        if self.verify && !(source.kind.is_seekable() && sink.kind.is_seekable()) {
            return Err(Error::usage(format!(
                "--verify reads both sides again after the flow: it needs a file, block device or memory on each side, not {} -> {}",
                source.kind, sink.kind
            )));
        }
        let decision = self.decide(source.kind, sink.kind, total)?;
        if self.via == MechanismName::Auto && !self.params_explicit {
            self.params = decision.params.clone();
        }
        let mechanism = decision.mechanism;
        self.progress
            .total
            .store(total.unwrap_or(u64::MAX), Ordering::Relaxed);
        let mut report = Engine::new(self, source, sink, mechanism, total).run()?;
        report.decided_by = decision.decided_by;
        Ok(report)
    }

    /// What this flow would use and why, without opening sockets or moving
    /// a byte: kinds are told from the addresses, the size from `stat`
    /// (or `--length`).
    ///
    /// # Errors
    /// [`Error::Usage`] when a kind cannot be told without opening (a
    /// descriptor endpoint is fine; stdin that is a socket is not), and the
    /// errors of an unsupported pair.
    ///
    /// # Examples
    /// ```
    /// use flexio::{Flow, MechanismName, Sink, Source};
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("a"), [1u8; 4096]).unwrap();
    /// let decision = Flow::new(Source::path(dir.path().join("a")), Sink::path(dir.path().join("b")))
    ///     .plan()
    ///     .unwrap();
    /// assert_eq!(decision.size, Some(4096));
    /// assert_eq!(decision.mechanism, MechanismName::CopyFileRange);
    /// assert_eq!(decision.decided_by, "built-in table");
    /// ```
    pub fn plan(&self) -> Result<Decision> {
        let source_kind = match &self.source {
            Source::Address(address) => address.probe_kind(false),
            Source::Memory(_) => Some(EndpointKind::Memory),
            _ => None,
        }
        .ok_or_else(|| Error::usage("cannot tell the source's kind without opening it"))?;
        let sink_kind = match &self.sink {
            Sink::Address(address) => address.probe_kind(true),
            Sink::Memory(_) => Some(EndpointKind::Memory),
            _ => None,
        }
        .ok_or_else(|| Error::usage("cannot tell the sink's kind without opening it"))?;
        let size = match (&self.source, self.length) {
            (_, Some(length)) => Some(length),
            (Source::Memory(bytes), None) => Some((bytes.len() as u64).saturating_sub(self.offset)),
            (Source::Address(crate::Address::Path(path)), None) => {
                let label = path.display().to_string();
                let file =
                    std::fs::File::open(path).map_err(|e| Error::io("open", &label, None, e))?;
                let size = rustix::fs::seek(&file, rustix::fs::SeekFrom::End(0))
                    .map_err(|e| Error::io("seek", &label, None, e))?;
                Some(size.saturating_sub(self.offset))
            }
            _ => None,
        };
        self.decide(source_kind, sink_kind, size)
    }

    /// Refuses an unsupported pair before anything is opened (nothing is
    /// bound or connected) when both kinds can be told from the addresses.
    fn check_pair_before_opening(&self) -> Result<()> {
        let source = match &self.source {
            Source::Address(address) => address.probe_kind(false),
            Source::Memory(_) => Some(EndpointKind::Memory),
            _ => None,
        };
        let sink = match &self.sink {
            Sink::Address(address) => address.probe_kind(true),
            Sink::Memory(_) => Some(EndpointKind::Memory),
            _ => None,
        };
        if let (Some(source), Some(sink)) = (source, sink) {
            self.resolve(source, sink)?;
        }
        Ok(())
    }

    fn checked_length(&self, source: &OpenSource<'_>) -> Result<Option<u64>> {
        let Some(size) = source.size else {
            if self.offset > 0 {
                return Err(Error::usage(format!(
                    "{}: --offset needs a seekable source (a file, block device or memory)",
                    source.label
                )));
            }
            return Ok(self.length);
        };
        let start = source.base + self.offset;
        if start > size {
            return Err(Error::usage(format!(
                "{}: offset {start} is past the end of the source ({size} bytes)",
                source.label
            )));
        }
        match self.length {
            Some(length) if start + length > size => Err(Error::usage(format!(
                "{}: range {start}..{} runs past the end of the source ({size} bytes)",
                source.label,
                start + length
            ))),
            Some(length) => Ok(Some(length)),
            None => Ok(Some(size - start)),
        }
    }

    fn check_sink(&self, sink: &OpenSink<'_>, total: Option<u64>) -> Result<()> {
        if self.seek > 0 {
            if matches!(sink.io, SinkIo::Fresh(_)) {
                return Err(Error::usage(format!(
                    "{}: --seek on a regular file needs --in-place",
                    sink.label
                )));
            }
            if !sink.kind.is_seekable() {
                return Err(Error::usage(format!(
                    "{}: --seek needs a seekable sink, not a {}",
                    sink.label, sink.kind
                )));
            }
        }
        if let (Some(capacity), Some(total)) = (sink.capacity, total) {
            let end = sink.base + self.seek + total;
            if end > capacity {
                return Err(Error::usage(format!(
                    "{}: {total} bytes at {} do not fit in its {capacity} bytes",
                    sink.label,
                    sink.base + self.seek
                )));
            }
        }
        Ok(())
    }

    /// What `auto` (or the named mechanism) means for this flow, and why.
    fn decide(
        &self,
        source: EndpointKind,
        sink: EndpointKind,
        total: Option<u64>,
    ) -> Result<Decision> {
        let flow_kind = FlowKind::classify(source, sink, self.fsync);
        let mut decision = Decision {
            flow_kind,
            size: total,
            mechanism: self.resolve(source, sink)?,
            params: self.params.clone(),
            decided_by: if self.via == MechanismName::Auto {
                "built-in table".to_string()
            } else {
                "requested".to_string()
            },
        };
        if self.via != MechanismName::Auto {
            return Ok(decision);
        }
        let (Some(profile), Some(size)) = (self.profile, total) else {
            return Ok(decision);
        };
        let Some(range) = profile.lookup(flow_kind, size) else {
            return Ok(decision);
        };
        let place = profile.describe_range(flow_kind, range);
        if range.mechanism.supports(source, sink) {
            decision.mechanism = range.mechanism;
            decision.params = range.params();
            decision.decided_by = place;
        } else {
            decision.decided_by = format!(
                "built-in table ({place} names {}, which cannot move {source} -> {sink})",
                range.mechanism
            );
        }
        Ok(decision)
    }

    fn resolve(&self, source: EndpointKind, sink: EndpointKind) -> Result<MechanismName> {
        let chosen = match self.via {
            MechanismName::Auto => builtin_choice(source, sink),
            named => named,
        };
        if !chosen.supports(source, sink) {
            return Err(Error::UnsupportedPair {
                mechanism: chosen,
                source_kind: source,
                sink_kind: sink,
                alternatives: MechanismName::serving(source, sink),
            });
        }
        Ok(chosen)
    }
}

/// Runs one opened flow.
struct Engine<'a> {
    flow: Flow<'a>,
    source: OpenSource<'a>,
    sink: OpenSink<'a>,
    mechanism: MechanismName,
    total: Option<u64>,
}

impl<'a> Engine<'a> {
    fn new(
        flow: Flow<'a>,
        source: OpenSource<'a>,
        sink: OpenSink<'a>,
        mechanism: MechanismName,
        total: Option<u64>,
    ) -> Self {
        Engine {
            flow,
            source,
            sink,
            mechanism,
            total,
        }
    }

    fn run(mut self) -> Result<Report> {
        let source_start = self.source.base + self.flow.offset;
        let sink_start = self.sink.base + self.flow.seek;
        let residency = match (&self.source.io, self.total) {
            (SourceIo::Fd(fd), Some(total)) if self.source.kind.is_seekable() => {
                measure::residency(fd, source_start, total)
            }
            _ => None,
        };
        let segments = self.segments(source_start)?;

        let before = Sample::now();
        let mut counters = Counters::default();
        let mut scratch = Scratch::default();
        let mut fallbacks = Vec::new();
        let mut current = self.mechanism;
        let mut moved = 0u64;
        let mut holes = 0u64;
        let mut cursor = source_start;
        for (start, length) in &segments {
            holes += start - cursor;
            cursor = start + length.unwrap_or(0);
            let (source_fd, source_memory) = match &self.source.io {
                SourceIo::Fd(fd) => (Some(fd.as_fd()), None),
                SourceIo::Memory(bytes) => (None, Some(*bytes)),
            };
            let (sink_fd, sink_memory) = match &mut self.sink.io {
                SinkIo::Fd(fd) => {
                    let fd: &std::os::fd::OwnedFd = fd;
                    (Some(fd.as_fd()), None)
                }
                SinkIo::Fresh(file) => {
                    let file: &crate::endpoint::FileSink = file;
                    (Some(file.fd()), None)
                }
                SinkIo::Memory(bytes) => (None, Some(&mut **bytes)),
                SinkIo::Closed => unreachable!("the sink is closed only after the last segment"),
            };
            let mut transfer = Transfer {
                source_fd,
                source_memory,
                sink_fd,
                sink_memory,
                source_kind: self.source.kind,
                sink_kind: self.sink.kind,
                source_label: &self.source.label,
                sink_label: &self.sink.label,
                source_pos: *start,
                sink_pos: sink_start + (start - source_start),
                remaining: *length,
                expected: self.total,
                params: &self.flow.params,
                counters: &mut counters,
                scratch: &mut scratch,
                progress: &self.flow.progress.done,
            };
            loop {
                match implementation(current).run(&mut transfer) {
                    Ok(()) => break,
                    Err(Stop::Failed(error)) => return Err(error),
                    Err(Stop::Refused { op, errno }) => {
                        if self.flow.strict {
                            return Err(Error::StrictRefusal {
                                mechanism: current,
                                op,
                                reason: std::io::Error::from(errno).to_string(),
                            });
                        }
                        let Some(next) = fallback_for(current, self.source.kind, self.sink.kind)
                        else {
                            return Err(Error::io(
                                op,
                                transfer.sink_label,
                                Some(transfer.sink_pos),
                                std::io::Error::from(errno),
                            ));
                        };
                        fallbacks.push(Fallback {
                            from: current,
                            to: next,
                            operation: op.to_string(),
                            reason: std::io::Error::from(errno).to_string(),
                            at_byte: transfer.source_pos - source_start,
                        });
                        current = next;
                    }
                }
            }
            moved += transfer.source_pos - start;
        }
        if let Some(total) = self.total {
            holes += (source_start + total).saturating_sub(cursor);
        }
        let total_moved = self.total.map_or(moved, |total| total.max(moved));
        self.finish(sink_start + total_moved)?;
        let after = Sample::now();

        let mut report = Report::new(
            &before,
            &after,
            total_moved,
            self.flow.via,
            current,
            &self.flow.params,
        );
        report.fallbacks = fallbacks;
        report.syscalls = counters.syscalls;
        report.ring_entries = counters.ring_entries;
        report.source_cache = residency;
        report.sparse_hole_bytes = holes;
        report.source = self.source.label.clone();
        report.source_kind = self.source.kind;
        report.sink = self.sink.label.clone();
        report.sink_kind = self.sink.kind;
        report.mechanism_first = self.mechanism;
        if self.flow.verify {
            report.verify = Some(verify::verify(
                &self.source,
                source_start,
                sink_start,
                total_moved,
                &self.sink,
            )?);
        }
        Ok(report)
    }

    /// The pieces of the source to move: only the data segments of a file
    /// copied into a new file (holes stay holes), else the whole range.
    fn segments(&self, source_start: u64) -> Result<Vec<(u64, Option<u64>)>> {
        let fresh_file = matches!(self.sink.io, SinkIo::Fresh(_));
        match (&self.source.io, self.total) {
            (SourceIo::Fd(fd), Some(total))
                if fresh_file && self.source.kind == EndpointKind::File =>
            {
                measure::data_segments(fd, source_start, total)
                    .map(|segments| segments.into_iter().map(|(s, l)| (s, Some(l))).collect())
                    .map_err(|e| {
                        Error::io(
                            "lseek(SEEK_DATA)",
                            &self.source.label,
                            Some(source_start),
                            e,
                        )
                    })
            }
            _ => Ok(vec![(source_start, self.total)]),
        }
    }

    /// Sets a new file's length (a trailing hole), syncs, renames into
    /// place, or ends a socket's sending side.
    fn finish(&mut self, sink_end: u64) -> Result<()> {
        let fsync = self.flow.fsync;
        let label = self.sink.label.clone();
        match std::mem::replace(&mut self.sink.io, SinkIo::Closed) {
            SinkIo::Fresh(file) => {
                rustix::fs::ftruncate(file.fd(), sink_end)
                    .map_err(|e| Error::io("ftruncate", &label, Some(sink_end), e))?;
                file.finish(fsync)?;
            }
            SinkIo::Fd(fd) => {
                if fsync && self.sink.kind.is_seekable() {
                    rustix::fs::fsync(&fd).map_err(|e| Error::io("fsync", &label, None, e))?;
                }
                if self.sink.kind.is_socket() {
                    // Tell the peer the stream is complete; a peer that has
                    // already gone is not an error here.
                    let _ = rustix::net::shutdown(&fd, rustix::net::Shutdown::Write);
                }
                self.sink.io = SinkIo::Fd(fd);
            }
            other => self.sink.io = other,
        }
        Ok(())
    }
}
