//! The stream ends of a flow with an idle timeout, made so that no call on
//! them blocks for longer than the timeout: the engine then waits for them
//! with `poll(2)` and a deadline (see `Transfer::wait_ready`).
//!
//! - A pipe, FIFO or character device is opened again through
//!   `/proc/self/fd/N` with `O_NONBLOCK`: a new open file description of
//!   the same pipe or device, so the descriptor the caller or the shell
//!   shares with others (a terminal, `|`) is left blocking.
//! - A socket cannot be opened again; it gets `SO_RCVTIMEO` (source) or
//!   `SO_SNDTIMEO` (sink), which bound every blocking receive, send,
//!   `splice` and `sendfile` on it, and gets its old timeouts back when
//!   the flow ends. The timeout is a tenth of the limit, not all of it: a
//!   `sendfile` into a socket waits for room several times within one
//!   call, each wait bounded by the timeout (a 2 s limit fired after 6 s),
//!   so only short waits in the kernel leave the deadline to `poll(2)`.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use rustix::fs::{Mode, OFlags};
use rustix::net::sockopt::{self, Timeout};

use super::{EndpointKind, OpenSink, OpenSource, SinkIo, SourceIo};
use crate::error::{Error, Result};

/// What one wait in the kernel may take under an idle `limit`: a tenth of
/// it, between 10 ms and 1 s (never more than the limit).
fn kernel_wait_slice(limit: Duration) -> Duration {
    (limit / 10)
        .clamp(Duration::from_millis(10), Duration::from_secs(1))
        .min(limit)
        .max(Duration::from_millis(1))
}

/// Non-blocking stand-ins for the flow's pipe and device ends, and the
/// socket timeouts to restore.
pub(crate) struct IdleEnds {
    source: Option<OwnedFd>,
    sink: Option<OwnedFd>,
    /// A duplicate of each socket whose timeout was set, with the timeout
    /// it had.
    restore: Vec<(OwnedFd, Timeout, Option<Duration>)>,
}

impl IdleEnds {
    /// Prepares both ends for an idle timeout of `limit`.
    ///
    /// # Errors
    /// When a pipe or device cannot be opened again (no `/proc`), or a
    /// socket's timeout cannot be set.
    pub fn prepare(source: &OpenSource<'_>, sink: &OpenSink<'_>, limit: Duration) -> Result<Self> {
        let mut ends = IdleEnds {
            source: None,
            sink: None,
            restore: Vec::new(),
        };
        if let SourceIo::Fd(fd) = &source.io {
            ends.source = ends.prepare_end(fd.as_fd(), source.kind, &source.label, true, limit)?;
        }
        let sink_fd = match &sink.io {
            SinkIo::Fd(fd) => Some(fd.as_fd()),
            _ => None,
        };
        if let Some(fd) = sink_fd {
            ends.sink = ends.prepare_end(fd, sink.kind, &sink.label, false, limit)?;
        }
        Ok(ends)
    }

    fn prepare_end(
        &mut self,
        fd: BorrowedFd<'_>,
        kind: EndpointKind,
        label: &str,
        reading: bool,
        limit: Duration,
    ) -> Result<Option<OwnedFd>> {
        match kind {
            EndpointKind::Pipe | EndpointKind::CharDevice => {
                let access = if reading {
                    OFlags::RDONLY
                } else {
                    OFlags::WRONLY
                };
                let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
                rustix::fs::open(
                    path.as_str(),
                    access | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map(Some)
                .map_err(|e| Error::io("reopen non-blocking for the idle timeout", label, None, e))
            }
            EndpointKind::Tcp | EndpointKind::Unix => {
                let which = if reading {
                    Timeout::Recv
                } else {
                    Timeout::Send
                };
                let old = sockopt::socket_timeout(fd, which)
                    .map_err(|e| Error::io("getsockopt", label, None, e))?;
                let keep = rustix::io::fcntl_dupfd_cloexec(fd, 3)
                    .map_err(|e| Error::io("dup", label, None, e))?;
                sockopt::set_socket_timeout(fd, which, Some(kernel_wait_slice(limit)))
                    .map_err(|e| Error::io("setsockopt", label, None, e))?;
                self.restore.push((keep, which, old));
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// The non-blocking stand-in for the source, if it has one.
    pub fn source_fd(&self) -> Option<BorrowedFd<'_>> {
        self.source.as_ref().map(AsFd::as_fd)
    }

    /// The non-blocking stand-in for the sink, if it has one.
    pub fn sink_fd(&self) -> Option<BorrowedFd<'_>> {
        self.sink.as_ref().map(AsFd::as_fd)
    }
}

impl Drop for IdleEnds {
    fn drop(&mut self) {
        for (socket, which, old) in &self.restore {
            // The socket may be shared (stdin from inetd): give it back as
            // it was; a socket already closed by its peer does not mind.
            let _ = sockopt::set_socket_timeout(socket, *which, *old);
        }
    }
}
