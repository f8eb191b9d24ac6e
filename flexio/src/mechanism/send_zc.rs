//! `send-zc`: zero-copy send from a file to a TCP socket. The source is
//! mapped in windows (as `mmap` maps it) and each window is sent with
//! io_uring's `SEND_ZC` in requests of `--chunk` bytes: the socket's
//! buffers point at the file's page-cache pages, and no byte is copied on
//! the way out — where `read-write` copies twice and `sendfile` hands the
//! pages over inside the kernel without the notification round trip.
//!
//! The kernel keeps a window's pages until its zero-copy notification says
//! it let go of them (for TCP: the peer acknowledged the bytes). The
//! window's mapping belongs to the `ZcSender` of flexio-sys until then, so
//! nothing here can unmap or reuse it early; a flow ends only after every
//! notification has arrived (with `--idle-timeout`, or fails after that
//! long without one).
//!
//! - A request carries at least a page, whatever `--chunk` says: smaller
//!   ones pin the same page and wait for a notification each.
//! - Only TCP: Unix sockets have no zero-copy (`EOPNOTSUPP`), and a kernel
//!   without `SEND_ZC` (before 6.0) refuses the mechanism; both fall back
//!   to `sendfile`.
//! - Over loopback, and over a veth pair into another namespace of the
//!   same host, the receiving side copies the bytes anyway (the kernel
//!   cannot hand user pages to a local receiver); the notifications say so
//!   and the bench reports it.
//! - A source truncated under the send: the kernel cannot pin pages past
//!   the new end and the request fails with `EFAULT`; the source is also
//!   `fstat`ed after every window. Either way the flow fails with
//!   [`crate::Error::SourceEnded`] naming where the sink stands — never a
//!   crash, never a short success.

use std::sync::OnceLock;
use std::time::Duration;

use rustix::io::Errno;

use super::mmap::{map, next_window, source_ended, source_size_now};
use super::transfer::Side;
use super::{Descriptor, MechanismName, Reads, Stop, Transfer};
use crate::endpoint::EndpointKind;
use crate::sys::uring::{Held, Sent, ZcSender};

/// What `send-zc` is, for the engine, the command line, the tuner and the
/// bench.
pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    name: MechanismName::SendZc,
    serves,
    reads: Reads {
        chunk: true,
        ..Reads::NONE
    },
    fallbacks: &[
        MechanismName::Sendfile,
        MechanismName::Splice,
        MechanismName::ReadWrite,
    ],
    writes_direct: |_| false,
    run,
};

/// Bytes of the source mapped at once (at least a chunk): large enough
/// that mapping costs little per byte, small enough that the windows a
/// sender keeps until their notifications stay a few tens of MiB.
const WINDOW: usize = 8 << 20;

/// Whether this kernel has `SEND_ZC` for this process (probed once).
pub(super) fn probe() -> Result<(), String> {
    static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
    PROBED
        .get_or_init(|| {
            ZcSender::new()
                .map(drop)
                .map_err(|e| format!("no io_uring SEND_ZC here ({e})"))
        })
        .clone()
}

fn serves(source: EndpointKind, sink: EndpointKind) -> bool {
    use EndpointKind::*;
    matches!(source, File | BlockDevice) && sink == Tcp
}

fn run(t: &mut Transfer<'_>) -> Result<(), Stop> {
    if t.finished() {
        return Ok(());
    }
    let mut sender = ZcSender::new().map_err(|e| Stop::Refused {
        op: "io_uring SEND_ZC",
        errno: Errno::from_io_error(&e).unwrap_or(Errno::NOSYS),
    })?;
    let result = send_all(t, &mut sender);
    if let Err(Stop::Failed(crate::Error::IdleTimeout { .. })) = &result {
        // The peer took nothing for the whole idle timeout: its pages stay
        // in the socket's queue, and waiting for them again would double
        // the timeout (other mechanisms give up once).
        sender.set_drop_patience(Duration::ZERO);
    }
    let (notifications, copied) = sender.notifications();
    t.counters.zero_copy.0 += notifications;
    t.counters.zero_copy.1 += copied;
    result
}

/// Sends the whole transfer, then waits for the kernel to let go of the
/// last pages.
fn send_all(t: &mut Transfer<'_>, sender: &mut ZcSender) -> Result<(), Stop> {
    let page = rustix::param::page_size();
    // At least a page a request: a zero-copy send pins whole pages and
    // waits for a notification however few bytes it carries, so a 1-byte
    // chunk took a round trip per byte (a 1 MiB file 4 s, a large one
    // "hung").
    let piece = t.params.chunk.max(page);
    let window = piece.max(WINDOW).next_multiple_of(page);
    while !t.finished() {
        let (head, want) = next_window(t, window, page)?;
        if want == 0 {
            return Ok(());
        }
        send_window(t, sender, head, want, piece)?;
    }
    push_held_segment(t);
    let patience = patience(t);
    t.counters.syscalls += 1;
    sender
        .flush(patience)
        .map_err(|e| sink_error(t, e, "io_uring_enter(notification)"))
}

/// Sends the segment Nagle's algorithm holds back: a last partial segment
/// waits until the bytes before it are acknowledged, and a peer that
/// delays its acknowledgement (40 ms and more) then held the flow's last
/// notification that long (1 MiB over loopback, a peer reading as fast as
/// it can: one flow in fifty took 43-48 ms instead of one or two). Turning
/// `TCP_NODELAY` on pushes the queue out at once; the socket's own setting
/// is put back.
fn push_held_segment(t: &mut Transfer<'_>) {
    use rustix::net::sockopt::{set_tcp_nodelay, tcp_nodelay};
    let socket = t.sink_fd();
    if let Ok(false) = tcp_nodelay(socket) {
        t.counters.syscalls += 2;
        if set_tcp_nodelay(socket, true).is_ok() {
            let _ = set_tcp_nodelay(socket, false);
        }
    }
}

/// Maps `head + len` bytes of the source (from the page before the
/// position) and sends the `len` after the head.
fn send_window(
    t: &mut Transfer<'_>,
    sender: &mut ZcSender,
    head: usize,
    len: usize,
    piece: usize,
) -> Result<(), Stop> {
    let start = t.source_pos;
    let guard = map(t, Side::Source, start - head as u64, head + len)?;
    let patience = patience(t);
    let requests = len.div_ceil(piece) as u64;
    t.counters.syscalls += requests;
    t.counters.ring_entries += requests;
    let Sent { bytes, error } = sender.send(
        t.sink_fd(),
        Held::Mapped(guard),
        head..head + len,
        piece,
        patience,
    );
    t.advance(bytes as u64);
    if let Some(error) = error {
        return Err(match Errno::from_io_error(&error) {
            // The kernel could not pin the pages: the file shrank.
            Some(Errno::FAULT) => source_ended(t, t.source_pos),
            Some(errno) if bytes == 0 || super::transfer::is_refusal(errno) => {
                t.refused_or_failed("io_uring SEND_ZC", Side::Sink, errno)
            }
            _ => sink_error(t, error, "io_uring SEND_ZC"),
        });
    }
    // The whole window went out (a partial last page past a shrunken end
    // as zeros) before a shrink could be seen: name where the sink stands,
    // so that whoever resumes neither skips nor repeats bytes.
    match source_size_now(t)? {
        Some(size) if size < start + len as u64 => Err(source_ended(t, t.source_pos)),
        _ => Ok(()),
    }
}

/// How long one wait for the kernel may take: the idle timeout's rest.
fn patience(t: &Transfer<'_>) -> Option<Duration> {
    t.idle.map(|idle| idle.remaining())
}

fn sink_error(t: &Transfer<'_>, error: std::io::Error, op: &'static str) -> Stop {
    if error.kind() == std::io::ErrorKind::TimedOut {
        return t.idle_stop(Side::Sink);
    }
    let errno = Errno::from_io_error(&error).unwrap_or(Errno::IO);
    t.failed(op, Side::Sink, errno)
}
