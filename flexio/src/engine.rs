//! The engine: runs one opened flow — measures the source's cache state,
//! takes the timed window, drives the mechanism segment by segment, falls
//! back when the kernel refuses and records why, finishes the sink (length,
//! fsync, rename, shutdown) and builds the report.

use std::os::fd::AsFd;

use crate::endpoint::{EndpointKind, IdleEnds, OpenSink, OpenSource, SinkIo, SourceIo};
use crate::error::{Error, Result};
use crate::kernel_pacing::KernelPacing;
use crate::measure::{self, Sample};
use crate::mechanism::{
    fallback_for, Counters, Idle, MechanismName, Scratch, SinkSide, SourceSide, Stop, Transfer,
};
use crate::pace::Pacer;
use crate::report::{Fallback, Report};
use crate::verify;
use crate::writeback::{slices, Writeback};

/// Moves the bytes of `transfer` with `mechanism`, and when the kernel
/// refuses it, with the next in its fallback order from where it stopped,
/// recording each fallback (`at_byte` counted from `flow_start`). Returns
/// the mechanism that finished. With `strict`, a refusal is an error.
pub(crate) fn run_with_fallbacks(
    transfer: &mut Transfer<'_>,
    mechanism: MechanismName,
    strict: bool,
    flow_start: u64,
    fallbacks: &mut Vec<Fallback>,
) -> Result<MechanismName> {
    let mut current = mechanism;
    loop {
        let descriptor = current
            .descriptor()
            .expect("auto is resolved before a range moves");
        let outcome = (descriptor.run)(transfer);
        if outcome.is_err() {
            // Whatever the stopped run kept (a pipe with bytes in it, a
            // ring with requests) must not reach the next run: see
            // `Scratch`.
            transfer.scratch.discard();
        }
        match outcome {
            Ok(()) => return Ok(current),
            Err(Stop::Failed(error)) => return Err(error),
            Err(Stop::Refused { op, errno }) => {
                if strict {
                    return Err(Error::StrictRefusal {
                        mechanism: current,
                        op,
                        reason: std::io::Error::from(errno).to_string(),
                    });
                }
                let Some(next) = fallback_for(current, transfer.source_kind, transfer.sink_kind)
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
                    at_byte: transfer.source_pos - flow_start,
                });
                current = next;
            }
        }
    }
}

/// What the engine is to do with an opened flow: the flow's settings, as
/// [`crate::Flow`] collected them (the engine knows nothing of the
/// builder).
pub(crate) struct RunSettings {
    /// First source byte, past the source's base.
    pub offset: u64,
    /// First sink byte, past the sink's base.
    pub seek: u64,
    /// The mechanism asked for (`auto` included), for the report.
    pub via: MechanismName,
    pub params: crate::params::Params,
    pub fsync: bool,
    pub strict: bool,
    pub verify: bool,
    /// Read CPU, fault and cache counters for the report ([`crate::Flow::measure`]).
    pub measure: bool,
    /// Bytes in the sink so far, for a watcher.
    pub progress: std::sync::Arc<crate::progress::Progress>,
    pub call_limit: usize,
    pub idle_timeout: Option<std::time::Duration>,
    /// `--rate`, `--burst`, `--schedule`.
    pub pacing: crate::pace::Pacing,
    /// Shut down a socket sink's sending side at the end.
    pub end_stream: bool,
}

/// Runs one opened flow.
pub(crate) struct Engine<'a> {
    flow: RunSettings,
    source: OpenSource<'a>,
    sink: OpenSink<'a>,
    mechanism: MechanismName,
    total: Option<u64>,
}

impl<'a> Engine<'a> {
    pub(crate) fn new(
        flow: RunSettings,
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

    pub(crate) fn run(mut self) -> Result<Report> {
        let source_start = self.source.base + self.flow.offset;
        let sink_start = self.sink.base + self.flow.seek;
        let residency = match (&self.source.io, self.total) {
            (SourceIo::Fd(fd), Some(total))
                if self.flow.measure && self.source.kind.is_seekable() =>
            {
                measure::residency(fd, source_start, total)
            }
            _ => None,
        };
        let segments = self.segments(source_start)?;
        let idle_ends = match self.flow.idle_timeout {
            Some(limit) => Some(IdleEnds::prepare(&self.source, &self.sink, limit)?),
            None => None,
        };

        let sample = match self.flow.measure {
            true => Sample::now,
            false => Sample::wall_clock_only,
        };
        let before = sample();
        let mut pacer = self
            .flow
            .pacing
            .is_active()
            .then(|| Pacer::new(&self.flow.pacing, std::time::Instant::now()));
        let kernel_pacing = self.engage_kernel_pacing(pacer.as_mut());
        let moved = self.move_segments(
            &segments,
            (source_start, sink_start),
            idle_ends.as_ref(),
            pacer.as_mut(),
        );
        // Given back whether the flow moved everything or stopped.
        self.release_kernel_pacing(kernel_pacing);
        let moved = moved?;
        let total_moved = self
            .total
            .map_or(moved.bytes, |total| total.max(moved.bytes));
        self.finish(sink_start + total_moved)?;
        let after = sample();

        let mut report = Report::new(
            &before,
            &after,
            total_moved,
            self.flow.via,
            moved.mechanism,
            &self.flow.params,
        );
        report.fallbacks = moved.fallbacks;
        report.syscalls = moved.counters.syscalls;
        report.ring_entries = moved.counters.ring_entries;
        report.chunks = moved.counters.chunks;
        let (notifications, copied) = moved.counters.zero_copy;
        report.zero_copy = (notifications > 0).then_some(crate::ZeroCopy {
            notifications,
            copied,
        });
        report.source_cache = residency;
        report.sparse_hole_bytes = moved.holes;
        report.pacing = pacer.as_ref().map(Pacer::report);
        self.label_report(&mut report);
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

    /// The endpoints and the first mechanism, as the report names them.
    fn label_report(&self, report: &mut Report) {
        report.source = self.source.label.clone();
        report.source_kind = self.source.kind;
        report.sink = self.sink.label.clone();
        report.sink_kind = self.sink.kind;
        report.mechanism_first = self.mechanism;
    }

    /// Moves every segment (`(start, length)` of the source; `starts` is
    /// where the flow begins in the source and in the sink), each cut into
    /// write-back slices for a durable flow, falling back from mechanism
    /// to mechanism as the kernel refuses.
    fn move_segments(
        &mut self,
        segments: &[(u64, Option<u64>)],
        (source_start, sink_start): (u64, u64),
        idle_ends: Option<&IdleEnds>,
        mut pacer: Option<&mut Pacer>,
    ) -> Result<Moved> {
        let mut moved = Moved {
            bytes: 0,
            holes: 0,
            mechanism: self.mechanism,
            fallbacks: Vec::new(),
            counters: Counters::default(),
        };
        let mut scratch = Scratch::default();
        let mut writeback = self.writeback();
        let mut cursor = source_start;
        for &(start, length) in segments {
            moved.holes += start - cursor;
            cursor = start + length.unwrap_or(0);
            for (piece_start, piece_length) in
                slices(start, length, writeback.as_ref().map(|w| w.slice))
            {
                let sink_pos = sink_start + (piece_start - source_start);
                let source = source_side(&self.source.io, idle_ends);
                let sink = sink_side(&mut self.sink.io, idle_ends);
                // Kept for the write-back after the transfer lets go of it.
                let sink_fd = match sink {
                    SinkSide::Fd(fd) => Some(fd),
                    SinkSide::Memory(_) => None,
                };
                let mut transfer = Transfer {
                    source,
                    sink,
                    source_kind: self.source.kind,
                    sink_kind: self.sink.kind,
                    sink_appends: self.sink.appends,
                    source_label: &self.source.label,
                    sink_label: &self.sink.label,
                    source_pos: piece_start,
                    sink_pos,
                    remaining: piece_length,
                    expected: self.total,
                    params: &self.flow.params,
                    counters: &mut moved.counters,
                    scratch: &mut scratch,
                    progress: &self.flow.progress.done,
                    call_limit: self.flow.call_limit,
                    idle: self.flow.idle_timeout.map(Idle::new),
                    pacer: pacer.as_deref_mut(),
                };
                moved.mechanism = run_with_fallbacks(
                    &mut transfer,
                    moved.mechanism,
                    self.flow.strict,
                    source_start,
                    &mut moved.fallbacks,
                )?;
                let piece_moved = transfer.source_pos - piece_start;
                moved.bytes += piece_moved;
                if let (Some(writeback), Some(fd)) = (writeback.as_mut(), sink_fd) {
                    let label = &self.sink.label;
                    writeback.written(fd, sink_pos, piece_moved, &mut moved.counters, label)?;
                }
            }
        }
        if let Some(total) = self.total {
            moved.holes += (source_start + total).saturating_sub(cursor);
        }
        Ok(moved)
    }

    /// Hands the rate to the kernel when the pacing asks for it and the
    /// sink is a TCP socket; the pacer's own bucket then stands down (its
    /// burst and schedule still hold).
    fn engage_kernel_pacing(&self, pacer: Option<&mut Pacer>) -> Option<KernelPacing> {
        let pacer = pacer?;
        let SinkIo::Fd(fd) = &self.sink.io else {
            return None;
        };
        let engaged = KernelPacing::engage(fd.as_fd(), self.sink.kind, pacer.pacing())?;
        pacer.rate_kept_by_kernel();
        Some(engaged)
    }

    /// Gives the socket back its own pacing options.
    fn release_kernel_pacing(&self, engaged: Option<KernelPacing>) {
        if let (Some(engaged), SinkIo::Fd(fd)) = (engaged, &self.sink.io) {
            engaged.release(fd.as_fd());
        }
    }

    /// Early writeback for a durable flow into a seekable file or device:
    /// the fsync at the end then finds the data already on its way. Not
    /// for a mechanism that writes the sink with `O_DIRECT`: its bytes are
    /// on the device when each write returns, and cutting its flow into
    /// slices would only drain its queue of requests at every slice.
    fn writeback(&self) -> Option<Writeback> {
        let fits = self.flow.fsync
            && self.sink.kind.is_seekable()
            && self.sink.kind != EndpointKind::Memory
            && self.total.is_some()
            && !self.mechanism.writes_direct(&self.flow.params);
        fits.then(Writeback::new)
    }

    /// The pieces of the source to move: only the data segments of a file
    /// copied into a new file (holes stay holes), else the whole range.
    fn segments(&self, source_start: u64) -> Result<Vec<(u64, Option<u64>)>> {
        let fresh_file = matches!(self.sink.io, SinkIo::Fresh(_));
        match (&self.source.io, self.total) {
            (SourceIo::Fd(fd), Some(total)) if fresh_file && self.source.maybe_sparse => {
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
                if self.sink.kind.is_socket() && self.flow.end_stream {
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

/// What [`Engine::move_segments`] moved, and how.
struct Moved {
    /// Bytes moved.
    bytes: u64,
    /// Bytes of holes skipped (a sparse source into a new file).
    holes: u64,
    /// The mechanism that finished (after any fallbacks).
    mechanism: MechanismName,
    fallbacks: Vec<Fallback>,
    counters: Counters,
}

/// The source as a mechanism sees it: its descriptor (or the idle-watching
/// stand-in for it), or its bytes in memory.
fn source_side<'s>(io: &'s SourceIo, idle_ends: Option<&'s IdleEnds>) -> SourceSide<'s> {
    match io {
        SourceIo::Fd(fd) => SourceSide::Fd(
            idle_ends
                .and_then(IdleEnds::source_fd)
                .unwrap_or(fd.as_fd()),
        ),
        SourceIo::Memory(bytes) => SourceSide::Memory(bytes),
    }
}

/// The sink as a mechanism sees it: a descriptor (the idle-watching
/// stand-in, an open file, a new file being written) or memory.
fn sink_side<'s>(io: &'s mut SinkIo, idle_ends: Option<&'s IdleEnds>) -> SinkSide<'s> {
    match io {
        SinkIo::Fd(fd) => {
            let fd: &std::os::fd::OwnedFd = fd;
            SinkSide::Fd(idle_ends.and_then(IdleEnds::sink_fd).unwrap_or(fd.as_fd()))
        }
        SinkIo::Fresh(file) => {
            let file: &crate::endpoint::FileSink = file;
            SinkSide::Fd(file.fd())
        }
        SinkIo::Memory(bytes) => SinkSide::Memory(bytes),
        SinkIo::Closed => unreachable!("the sink is closed only after the last segment"),
    }
}
