//! The state of one flow as mechanisms see it: where each side stands, how
//! much is left, and the scratch space allocated once per flow.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::io::Errno;

use crate::endpoint::EndpointKind;
use crate::error::Error;
use crate::pace::Pacer;
use crate::params::Params;
use crate::sys::aligned::AlignedBuffer;
use crate::sys::uring::Ring;

/// Why a mechanism stopped before the transfer was finished.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The kernel refused this mechanism for this flow; another may work.
    /// Everything read so far has been written.
    Refused {
        /// The system call that was refused.
        op: &'static str,
        /// What it returned.
        errno: Errno,
    },
    /// The flow failed; no other mechanism would do better.
    Failed(Error),
}

impl From<Error> for Stop {
    fn from(error: Error) -> Self {
        Stop::Failed(error)
    }
}

/// System calls and ring submissions a mechanism issued.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    /// System calls issued to move data (reads, writes, splices, mmaps,
    /// `io_uring_enter`s, …).
    pub syscalls: u64,
    /// io_uring submission queue entries.
    pub ring_entries: u64,
    /// Calls (or completions) that put bytes in the sink: the chunks a
    /// schedule counts, counted the same whether one is in force or not.
    pub chunks: u64,
    /// Zero-copy send: notifications received, and how many of them said
    /// the kernel copied the bytes after all (a local receiver).
    pub zero_copy: (u64, u64),
}

/// Memory and descriptors a mechanism may keep across the segments of one
/// flow, and a range mover (`range::Mover`) across its ranges, so that nothing
/// is allocated per chunk or per file.
///
/// The rule for everything kept here: it is handed to the next run only
/// after a run that finished. A run that stopped for any reason (a failed
/// sink, a reset peer, an idle timeout, a refusal) may leave bytes in the
/// pipe, requests in the ring or a half-filled buffer, so
/// [`Scratch::discard`] drops it all and the next run builds its own
/// (`run_with_fallbacks` does this for every mechanism, in one place).
#[derive(Default)]
pub(crate) struct Scratch {
    /// A plain buffer (read-write, the slow paths of others).
    pub buffer: Vec<u8>,
    /// The pipe splice moves through: (read end, write end, capacity).
    pub pipe: Option<(OwnedFd, OwnedFd, usize)>,
    /// What the last mechanism that ran kept for itself.
    pub kept: Kept,
}

impl Scratch {
    /// Drops everything kept: after a run that did not finish, none of it
    /// is known to be empty or idle. A ring still waiting on the kernel is
    /// leaked by its own `Drop` rather than freed under it.
    pub fn discard(&mut self) {
        *self = Scratch::default();
    }
}

/// State one mechanism keeps across the segments of a flow (a sparse
/// file's data runs), named by the mechanism that keeps it, so a mechanism
/// takes back its own kind and drops any other (after a fallback) without
/// a downcast.
#[derive(Default)]
pub(crate) enum Kept {
    /// Nothing kept (no mechanism that keeps state has run yet).
    #[default]
    Nothing,
    /// `io-uring`: the ring and its registered buffers (boxed: the ring's
    /// handles are a few hundred bytes that every other flow would carry).
    Ring(Box<Ring>),
    /// `direct`: the aligned buffer.
    Aligned(AlignedBuffer),
}

/// Which side of the flow an error happened on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Source,
    Sink,
}

/// How long a flow may go without progress, and when it last made some.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Idle {
    limit: Duration,
    since: Instant,
}

impl Idle {
    /// A limit of `limit` without progress, counted from now.
    pub fn new(limit: Duration) -> Self {
        Idle {
            limit,
            since: Instant::now(),
        }
    }

    /// What is left of the limit (zero once it has passed).
    pub fn remaining(&self) -> Duration {
        self.limit.saturating_sub(self.since.elapsed())
    }
}

/// The source of a [`Transfer`]: a descriptor, or the caller's memory.
#[derive(Clone, Copy)]
pub(crate) enum SourceSide<'t> {
    Fd(BorrowedFd<'t>),
    Memory(&'t [u8]),
}

/// The sink of a [`Transfer`]: a descriptor, or the caller's memory.
pub(crate) enum SinkSide<'t> {
    Fd(BorrowedFd<'t>),
    Memory(&'t mut [u8]),
}

/// One contiguous run of bytes to move, and everything a mechanism needs to
/// move it.
pub(crate) struct Transfer<'t> {
    /// Where the bytes come from.
    pub source: SourceSide<'t>,
    /// Where the bytes go.
    pub sink: SinkSide<'t>,
    pub source_kind: EndpointKind,
    pub sink_kind: EndpointKind,
    /// The sink is a file opened with `O_APPEND`: every write lands at its
    /// end, so writes must go in order and nothing may grow it ahead.
    pub sink_appends: bool,
    pub source_label: &'t str,
    pub sink_label: &'t str,
    /// Absolute offset of the next source byte (seekable sources).
    pub source_pos: u64,
    /// Absolute offset of the next sink byte (seekable sinks).
    pub sink_pos: u64,
    /// Bytes still to move; `None` means until the source ends.
    pub remaining: Option<u64>,
    /// Bytes the whole flow is to move, for messages.
    pub expected: Option<u64>,
    pub params: &'t Params,
    pub counters: &'t mut Counters,
    pub scratch: &'t mut Scratch,
    pub progress: &'t AtomicU64,
    /// The most bytes one kernel call may move (see `Flow::call_limit`).
    pub call_limit: usize,
    /// `--idle-timeout`: stream ends are then non-blocking (or, for
    /// sockets, time out in the kernel), and every wait for one to be ready
    /// gives up once the flow has made no progress for this long.
    pub idle: Option<Idle>,
    /// `--rate`, `--burst`, `--schedule`: asked before every call how long
    /// to wait and how much to move, told after it what moved.
    pub pacer: Option<&'t mut Pacer>,
}

// The calls every mechanism makes per chunk (finished, next_len, len_cap,
// advance, progressed, pace's check) are `#[inline]`: when transfer.rs
// and the mechanisms landed in different codegen units after the reshape,
// they stopped being inlined and a 64-byte memory flow cost 216 more
// instructions (callgrind, 3972 -> 4188 per flow; 3% of its wall time in
// 20 interleaved pairs). Pacing's waits stay out of line.
impl<'t> Transfer<'t> {
    /// Whether every byte has been moved.
    #[inline]
    pub fn finished(&self) -> bool {
        self.remaining == Some(0)
    }

    /// The next piece to ask for: at most `max`, at most the flow's call
    /// limit (`Flow::call_limit`), at most a burst of the pacer (one chunk
    /// under a schedule without a burst), at most what is left. Every
    /// mechanism takes its request sizes from here, so a paced flow first
    /// waits here until its pacer lets the call go.
    #[inline]
    pub fn next_len(&mut self, max: usize) -> usize {
        // Waiting only until the bucket is out of debt (not until it holds
        // the whole call) keeps the time a sleep overruns as credit, so a
        // loaded machine's late wake-ups do not slow the flow down; the
        // price is that a stretch may see `rate × time + 2 bursts`.
        self.pace();
        self.len_cap(max)
    }

    /// What [`Transfer::next_len`] would grant, without waiting: for sizing
    /// buffers and rings once per flow.
    #[inline]
    pub fn len_cap(&self, max: usize) -> usize {
        let mut max = max.min(self.call_limit);
        if let Some(pacer) = self.pacer.as_deref() {
            max = pacer.grant(max);
            if pacer.pacing().schedule.is_some() && pacer.pacing().burst_bytes().is_none() {
                // A chunk of the schedule is one `--chunk`.
                max = max.min(self.params.chunk.max(1));
            }
        }
        match self.remaining {
            Some(left) => left.min(max as u64) as usize,
            None => max,
        }
    }

    /// Records that `bytes` more bytes are in the sink.
    #[inline]
    pub fn advance(&mut self, bytes: u64) {
        self.source_pos += bytes;
        self.sink_pos += bytes;
        if let Some(left) = self.remaining.as_mut() {
            debug_assert!(bytes <= *left);
            *left -= bytes;
        }
        self.progress.fetch_add(bytes, Ordering::Relaxed);
        self.counters.chunks += 1;
        self.progressed();
        if let Some(pacer) = self.pacer.as_deref_mut() {
            pacer.charge(bytes, Instant::now());
        }
    }

    /// Waits until the pacer lets the next call go, for mechanisms that
    /// size their requests once and then keep several in flight (io_uring,
    /// direct): their sizes came from [`Transfer::next_len`].
    #[inline]
    pub fn pace(&mut self) {
        if self.pacer.is_some() {
            self.wait_for_pacer();
        }
    }

    /// [`Transfer::pace`] for a paced flow.
    fn wait_for_pacer(&mut self) {
        let stream_sink = match self.sink {
            SinkSide::Fd(fd) if !self.sink_kind.is_seekable() => Some(fd),
            _ => None,
        };
        let Some(pacer) = self.pacer.as_deref_mut() else {
            return;
        };
        match stream_sink {
            // A pipe or socket whose reader goes away reports it to poll
            // (POLLERR, POLLHUP): the wait ends and the next call fails at
            // once instead of after the pause.
            Some(fd) => pacer.wait_unless(0, |left| {
                let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::empty())];
                let timeout = Timespec::try_from(left).ok();
                matches!(poll(&mut fds, timeout.as_ref()), Ok(n) if n > 0)
            }),
            None => pacer.wait(0),
        }
    }

    /// Records progress that is not yet in the sink (bytes read from the
    /// source): the idle clock starts again.
    #[inline]
    pub fn progressed(&mut self) {
        if let Some(idle) = self.idle.as_mut() {
            idle.since = Instant::now();
        }
    }

    /// Waits until `fd`, an end of `side` (or the flow's own pipe), is
    /// ready for `flags` — after a call on it said `EAGAIN`. Without an
    /// idle timeout it waits as long as it takes; with one, only until the
    /// flow has gone that long without progress, and then fails with
    /// [`Error::IdleTimeout`] naming `side` and its offset. `EINTR` is
    /// retried.
    pub fn wait_ready(&self, fd: BorrowedFd<'_>, flags: PollFlags, side: Side) -> Result<(), Stop> {
        let mut fds = [PollFd::from_borrowed_fd(fd, flags)];
        loop {
            // With no time left, still look (a zero timeout): an end that
            // is ready is not the one keeping the flow waiting.
            let left = self.idle.map(|idle| idle.remaining());
            let timeout = left.map(|left| {
                Timespec::try_from(left).unwrap_or(Timespec {
                    tv_sec: i64::MAX,
                    tv_nsec: 0,
                })
            });
            match poll(&mut fds, timeout.as_ref()) {
                Ok(0) if left.is_some_and(|left| left.is_zero()) => {
                    return Err(self.idle_stop(side))
                }
                // Poll may wake a little early: look again with what is left.
                Ok(0) => continue,
                Ok(_) => return Ok(()),
                Err(Errno::INTR) => continue,
                Err(errno) => return Err(self.failed("poll", side, errno)),
            }
        }
    }

    /// The flow made no progress for the idle timeout, waiting on `side`.
    pub fn idle_stop(&self, side: Side) -> Stop {
        let (label, offset) = match side {
            Side::Source => (self.source_label, self.source_pos),
            Side::Sink => (self.sink_label, self.sink_pos),
        };
        Stop::Failed(Error::IdleTimeout {
            endpoint: label.to_string(),
            offset,
            idle: self.idle.map_or(Duration::ZERO, |idle| idle.limit),
        })
    }

    /// The source gave end-of-file. Fine for an open-ended transfer; an
    /// error naming the offset when bytes were still owed.
    pub fn source_ended(&self) -> Result<(), Stop> {
        match self.remaining {
            None | Some(0) => Ok(()),
            Some(left) => Err(Stop::Failed(Error::SourceEnded {
                endpoint: self.source_label.to_string(),
                offset: self.source_pos,
                end: self.source_pos + left,
            })),
        }
    }

    /// An error that ends the flow, with the side's label and offset. A
    /// call that touches both sides (splice, sendfile, copy_file_range)
    /// names the side it was called for, unless the error can only be the
    /// sink's: a full or over-quota file system, a file too large, a reader
    /// that went away.
    pub fn failed(&self, op: &'static str, side: Side, errno: Errno) -> Stop {
        let side = if is_sink_only(errno) {
            Side::Sink
        } else {
            side
        };
        let (label, offset) = match side {
            Side::Source => (self.source_label, self.source_pos),
            Side::Sink => (self.sink_label, self.sink_pos),
        };
        Stop::Failed(Error::io(
            op,
            label,
            Some(offset),
            std::io::Error::from(errno),
        ))
    }

    /// A refusal when the kernel says this mechanism cannot do this flow
    /// (`EINVAL`, `EXDEV`, `ENOSYS`, `EOPNOTSUPP`); a failure otherwise.
    /// `EIO`, `ENOSPC`, `EPIPE` and `ECONNRESET` are never refusals.
    pub fn refused_or_failed(&self, op: &'static str, side: Side, errno: Errno) -> Stop {
        // EBADF for a sink opened with O_APPEND is how copy_file_range
        // refuses one (`flexio copy a - >> log`); the fallbacks append fine.
        if is_refusal(errno) || (errno == Errno::BADF && self.sink_appends) {
            Stop::Refused { op, errno }
        } else {
            self.failed(op, side, errno)
        }
    }

    /// The source descriptor (mechanisms that serve only descriptor
    /// sources call this).
    pub fn source_fd(&self) -> BorrowedFd<'t> {
        match self.source {
            SourceSide::Fd(fd) => fd,
            SourceSide::Memory(_) => {
                unreachable!("mechanism declared it serves descriptor sources only")
            }
        }
    }

    /// The sink descriptor (mechanisms that serve only descriptor sinks
    /// call this).
    pub fn sink_fd(&self) -> BorrowedFd<'t> {
        match self.sink {
            SinkSide::Fd(fd) => fd,
            SinkSide::Memory(_) => {
                unreachable!("mechanism declared it serves descriptor sinks only")
            }
        }
    }

    /// The source position to pass to a positional call, `None` for
    /// streams.
    pub fn source_offset(&self) -> Option<u64> {
        self.source_kind.is_seekable().then_some(self.source_pos)
    }

    /// The sink position to pass to a positional call, `None` for streams.
    pub fn sink_offset(&self) -> Option<u64> {
        self.sink_kind.is_seekable().then_some(self.sink_pos)
    }
}

/// The errors by which the kernel says "not this way" rather than "broken".
pub(crate) fn is_refusal(errno: Errno) -> bool {
    errno == Errno::INVAL
        || errno == Errno::XDEV
        || errno == Errno::NOSYS
        || errno == Errno::OPNOTSUPP
}

/// Errors that only writing can cause.
fn is_sink_only(errno: Errno) -> bool {
    errno == Errno::NOSPC || errno == Errno::DQUOT || errno == Errno::FBIG || errno == Errno::PIPE
}
