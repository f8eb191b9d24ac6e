//! The range API beneath [`crate::Flow`]: move `[offset, offset + length)`
//! between descriptors the caller opened and keeps, with a mechanism and
//! its fallbacks, and get a report. Nothing is opened, closed or shut down
//! here, so one connection can carry many files and one destination can be
//! written by many ranges at once ([`NewFile`]).
//!
//! A [`Mover`] keeps a mechanism's buffers and pipe from one range to the
//! next, so a server or a tree copier allocates nothing per file; a range
//! that fails drops them all, so the next range never meets its leftovers
//! (see the crate's "State kept across flows").

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::endpoint::{classify_fd, EndpointKind, FileSink, NewMode};
use crate::engine::run_with_fallbacks;
use crate::error::{Error, Result};
use crate::kernel_pacing::KernelPacing;
use crate::mechanism::{Counters, Idle, MechanismName, Scratch, SinkSide, SourceSide, Transfer};
use crate::pace::{Pacer, Pacing, PacingReport, TokenBucket};
use crate::report::Fallback;
use crate::Params;

/// One end of a range move: a descriptor the caller keeps, its kind and a
/// label for messages.
#[derive(Debug)]
pub struct RangeEnd<'fd> {
    fd: BorrowedFd<'fd>,
    kind: EndpointKind,
    label: String,
}

impl<'fd> RangeEnd<'fd> {
    /// Classifies `fd` by `fstat` (and `getsockname` for sockets).
    ///
    /// # Errors
    /// [`Error::Io`] when `fstat` fails; [`Error::Usage`] for a directory or
    /// a socket family flexio does not move.
    ///
    /// # Examples
    /// ```
    /// use std::os::fd::AsFd;
    /// let file = tempfile::tempfile().unwrap();
    /// let end = flexio::range::RangeEnd::new(file.as_fd(), "scratch").unwrap();
    /// assert_eq!(end.kind(), flexio::EndpointKind::File);
    /// ```
    pub fn new(fd: BorrowedFd<'fd>, label: impl Into<String>) -> Result<Self> {
        let label = label.into();
        let kind = classify_fd(fd, &label)?;
        Ok(RangeEnd { fd, kind, label })
    }

    /// An end whose kind the caller already knows (from its own `fstat`),
    /// saving a system call per end.
    pub fn with_kind(fd: BorrowedFd<'fd>, kind: EndpointKind, label: impl Into<String>) -> Self {
        RangeEnd {
            fd,
            kind,
            label: label.into(),
        }
    }

    /// What the end is.
    pub fn kind(&self) -> EndpointKind {
        self.kind
    }
}

/// Which bytes to move and how.
#[derive(Clone, Debug)]
pub struct RangeRequest {
    /// First source byte (seekable sources; a stream is read from where it
    /// stands).
    pub source_offset: u64,
    /// First sink byte (seekable sinks).
    pub sink_offset: u64,
    /// Bytes to move; `None` moves until the source ends.
    pub length: Option<u64>,
    /// The mechanism; `auto` takes the built-in choice for the pair.
    pub mechanism: MechanismName,
    /// Its parameters.
    pub params: Params,
    /// Make a fallback an error.
    pub strict: bool,
    /// Give up after this long without progress. The descriptors must then
    /// be non-blocking, or sockets with `SO_RCVTIMEO`/`SO_SNDTIMEO`: the
    /// caller owns them, so they are not changed here.
    pub idle_timeout: Option<Duration>,
    /// The most bytes one kernel call moves (see [`crate::Flow::call_limit`]).
    pub call_limit: usize,
    /// Rate, burst and schedule for this range alone.
    pub pacing: Pacing,
    /// A bucket shared with other ranges (parallel streams of one
    /// download, a server's total): each call waits for it too.
    pub shared_rate: Option<Arc<TokenBucket>>,
}

impl RangeRequest {
    /// `length` bytes (or to the end) from `source_offset` to
    /// `sink_offset` with `auto`.
    pub fn new(source_offset: u64, sink_offset: u64, length: Option<u64>) -> Self {
        RangeRequest {
            source_offset,
            sink_offset,
            length,
            mechanism: MechanismName::Auto,
            params: Params::default(),
            strict: false,
            idle_timeout: None,
            call_limit: usize::MAX,
            pacing: Pacing::default(),
            shared_rate: None,
        }
    }

    /// The same request with another mechanism.
    pub fn via(mut self, mechanism: MechanismName) -> Self {
        self.mechanism = mechanism;
        self
    }
}

/// What moving one range did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RangeReport {
    /// Bytes moved.
    pub bytes: u64,
    /// The mechanism that finished the range (`None` for an empty range).
    pub mechanism_used: Option<MechanismName>,
    /// Fallbacks, with the kernel's reasons.
    pub fallbacks: Vec<Fallback>,
    /// System calls issued to move the bytes.
    pub syscalls: u64,
    /// io_uring submissions.
    pub ring_entries: u64,
    /// Wall time of the move.
    pub wall_ns: u64,
    /// What pacing did, when the request asked for it.
    #[serde(default)]
    pub pacing: Option<PacingReport>,
}

/// Reports of many ranges added up, each kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RangeTotals {
    /// Bytes over all ranges.
    pub bytes: u64,
    /// Wall time over all ranges (as moved one after another).
    pub wall_ns: u64,
    /// System calls over all ranges.
    pub syscalls: u64,
    /// Each range's report, in the order added.
    pub ranges: Vec<RangeReport>,
}

impl RangeTotals {
    /// Adds one range's report.
    pub fn add(&mut self, report: RangeReport) {
        self.bytes += report.bytes;
        self.wall_ns += report.wall_ns;
        self.syscalls += report.syscalls;
        self.ranges.push(report);
    }
}

/// Moves ranges, keeping its buffers, pipe and ring from one to the next.
#[derive(Default)]
pub struct Mover {
    scratch: Scratch,
}

impl Mover {
    /// A mover with nothing allocated yet.
    pub fn new() -> Self {
        Mover::default()
    }

    /// Moves one range from `source` to `sink`; both stay open and as they
    /// were (a socket is not shut down). Bytes are added to `progress` as
    /// they land.
    ///
    /// # Errors
    /// [`Error::UnsupportedPair`] for a mechanism that cannot move these
    /// kinds; [`Error::Io`], [`Error::SourceEnded`],
    /// [`Error::IdleTimeout`] and the others of [`crate::Flow::run`] when
    /// moving fails.
    ///
    /// # Examples
    /// ```
    /// use std::io::{Read, Seek, Write};
    /// use std::os::fd::AsFd;
    /// use flexio::range::{Mover, RangeEnd, RangeRequest};
    /// let mut from = tempfile::tempfile().unwrap();
    /// from.write_all(b"hello, world").unwrap();
    /// let mut to = tempfile::tempfile().unwrap();
    /// let mut mover = Mover::new();
    /// let source = RangeEnd::new(from.as_fd(), "from").unwrap();
    /// let sink = RangeEnd::new(to.as_fd(), "to").unwrap();
    /// let report = mover
    ///     .move_range(&source, &sink, &RangeRequest::new(7, 0, Some(5)), None)
    ///     .unwrap();
    /// assert_eq!(report.bytes, 5);
    /// let mut text = String::new();
    /// to.rewind().unwrap();
    /// to.read_to_string(&mut text).unwrap();
    /// assert_eq!(text, "world");
    /// ```
    pub fn move_range(
        &mut self,
        source: &RangeEnd<'_>,
        sink: &RangeEnd<'_>,
        request: &RangeRequest,
        progress: Option<&AtomicU64>,
    ) -> Result<RangeReport> {
        let mechanism = match request.mechanism {
            MechanismName::Auto => crate::builtin_choice(source.kind, sink.kind),
            named => named,
        };
        if !mechanism.supports(source.kind, sink.kind) {
            return Err(Error::UnsupportedPair {
                mechanism,
                source_kind: source.kind,
                sink_kind: sink.kind,
                alternatives: MechanismName::serving(source.kind, sink.kind),
            });
        }
        let unused = AtomicU64::new(0);
        let mut counters = Counters::default();
        let mut fallbacks = Vec::new();
        let started = Instant::now();
        let mut pacer = (request.pacing.is_active() || request.shared_rate.is_some()).then(|| {
            let pacer = Pacer::new(&request.pacing, started);
            match &request.shared_rate {
                Some(bucket) => pacer.with_shared(Arc::clone(bucket)),
                None => pacer,
            }
        });
        let kernel_pacing = pacer.as_mut().and_then(|pacer| {
            let engaged = KernelPacing::engage(sink.fd, sink.kind, &request.pacing)?;
            pacer.rate_kept_by_kernel();
            Some(engaged)
        });
        let mut transfer = Transfer {
            source: SourceSide::Fd(source.fd),
            sink: SinkSide::Fd(sink.fd),
            source_kind: source.kind,
            sink_kind: sink.kind,
            sink_appends: false,
            source_label: &source.label,
            sink_label: &sink.label,
            source_pos: request.source_offset,
            sink_pos: request.sink_offset,
            remaining: request.length,
            expected: request.length,
            params: &request.params,
            counters: &mut counters,
            scratch: &mut self.scratch,
            progress: progress.unwrap_or(&unused),
            call_limit: request.call_limit,
            idle: request.idle_timeout.map(Idle::new),
            pacer: pacer.as_mut(),
        };
        let used = match request.length {
            Some(0) => Ok(None),
            _ => run_with_fallbacks(
                &mut transfer,
                mechanism,
                request.strict,
                request.source_offset,
                &mut fallbacks,
            )
            .map(Some),
        };
        if let Some(engaged) = kernel_pacing {
            engaged.release(sink.fd);
        }
        let used = used?;
        let bytes = transfer.source_pos - request.source_offset;
        Ok(RangeReport {
            bytes,
            mechanism_used: used,
            fallbacks,
            syscalls: counters.syscalls,
            ring_entries: counters.ring_entries,
            wall_ns: started.elapsed().as_nanos() as u64,
            pacing: pacer.as_ref().map(Pacer::report),
        })
    }
}

/// A new file that several ranges — from several threads at once — write
/// into, and that takes its name only when [`NewFile::commit`] finds it
/// whole: an unnamed `O_TMPFILE` where the file system has one, else a
/// named temporary file beside the destination. Dropped without a commit,
/// it leaves nothing.
pub struct NewFile {
    sink: FileSink,
    destination: String,
}

impl NewFile {
    /// Starts a new file for `destination` with permission bits `mode`
    /// (the umask applied) — replacing whatever file is there once
    /// committed.
    ///
    /// # Errors
    /// [`Error::Usage`] when the directory does not exist; [`Error::Io`]
    /// when the file cannot be made.
    ///
    /// # Examples
    /// ```
    /// use flexio::range::NewFile;
    /// let dir = tempfile::tempdir().unwrap();
    /// let file = NewFile::create(&dir.path().join("out"), 0o644).unwrap();
    /// rustix::io::pwrite(file.fd(), b"abc", 0).unwrap();
    /// file.commit(3, false).unwrap();
    /// assert_eq!(std::fs::read(dir.path().join("out")).unwrap(), b"abc");
    /// ```
    pub fn create(destination: &Path, mode: u32) -> Result<Self> {
        Ok(NewFile {
            sink: FileSink::create(destination, NewMode::LessUmask(mode))?,
            destination: destination.display().to_string(),
        })
    }

    /// The descriptor to write through (shared by every writer).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.sink.fd()
    }

    /// This file as the sink end of a range move.
    ///
    /// # Errors
    /// As [`RangeEnd::new`].
    pub fn as_end(&self) -> Result<RangeEnd<'_>> {
        RangeEnd::new(self.sink.fd(), self.destination.clone())
    }

    /// Checks that the file holds exactly `length` bytes (a sparse writer
    /// sets the length itself, through [`NewFile::fd`]), makes it durable
    /// when `fsync` is set, and gives it its name.
    ///
    /// # Errors
    /// [`Error::Usage`] when the file does not hold `length` bytes (it is
    /// then removed); [`Error::Io`] when syncing or linking fails (likewise).
    pub fn commit(self, length: u64, fsync: bool) -> Result<()> {
        let stat = rustix::fs::fstat(self.sink.fd())
            .map_err(|e| Error::io("fstat", &self.destination, None, e))?;
        let size = stat.st_size as u64;
        if size != length {
            return Err(Error::usage(format!(
                "{}: holds {size} bytes, not the {length} it should; not committed",
                self.destination
            )));
        }
        self.sink.finish(fsync)
    }
}

impl AsFd for NewFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sink.fd()
    }
}
