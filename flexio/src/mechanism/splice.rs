//! `splice`: bytes move between descriptors through a pipe's pages without
//! entering user memory. When one side is a pipe it is spliced directly;
//! otherwise through a pipe of `--pipe-size` bytes made once per flow
//! (F_SETPIPE_SZ, clamped to `/proc/sys/fs/pipe-max-size`). A pipe end of
//! the caller's is grown to that size too (never shrunk).
//!
//! If the kernel refuses the sink side while bytes sit in the pipe, they are
//! drained through a user buffer before the refusal is reported, so the
//! fallback mechanism starts exactly where splice stopped.

use std::os::fd::{AsFd, BorrowedFd};

use rustix::event::PollFlags;
use rustix::io::Errno;
use rustix::pipe::{PipeFlags, SpliceFlags};

use super::io::write_sink;
use super::kernel_copy::{kernel_call, kernel_copy_loop};
use super::transfer::Side;
use super::{Descriptor, MechanismName, Reads, Stop, Transfer};
use crate::endpoint::EndpointKind;

/// What `splice` is, for the engine, the command line, the tuner and
/// the bench.
pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    name: MechanismName::Splice,
    serves,
    reads: Reads {
        pipe_size: true,
        ..Reads::NONE
    },
    fallbacks: &[MechanismName::ReadWrite],
    writes_direct: |_| false,
    run,
};

fn serves(source: EndpointKind, sink: EndpointKind) -> bool {
    source != EndpointKind::Memory && sink != EndpointKind::Memory
}

fn run(t: &mut Transfer<'_>) -> Result<(), Stop> {
    if t.source_kind == EndpointKind::Pipe || t.sink_kind == EndpointKind::Pipe {
        return direct_splice(t);
    }
    through_pipe(t)
}

/// One end is a pipe: splice straight from source to sink. The caller's
/// pipe is first grown (never shrunk) towards `--pipe-size`: with the
/// default 64 KiB, a splice drains it faster than its writer refills it
/// and the flow sleeps and wakes once per 64 KiB.
fn direct_splice(t: &mut Transfer<'_>) -> Result<(), Stop> {
    let pipe = match t.source_kind {
        EndpointKind::Pipe => t.source_fd(),
        _ => t.sink_fd(),
    };
    grow_pipe(t, pipe);
    let max = t.params.pipe_size.max(4096);
    let (source, sink) = (t.source_fd(), t.sink_fd());
    kernel_copy_loop(
        t,
        "splice",
        Side::Source,
        max,
        [
            Some((source, PollFlags::IN, Side::Source)),
            Some((sink, PollFlags::OUT, Side::Sink)),
        ],
        |t, want| {
            let (mut from_at, mut to_at) = (t.source_offset(), t.sink_offset());
            rustix::pipe::splice(
                t.source_fd(),
                from_at.as_mut(),
                t.sink_fd(),
                to_at.as_mut(),
                want,
                SpliceFlags::MOVE | SpliceFlags::MORE,
            )
        },
    )
}

/// Neither end is a pipe: source -> our pipe -> sink.
fn through_pipe(t: &mut Transfer<'_>) -> Result<(), Stop> {
    let (pipe_read, pipe_write, capacity) = take_pipe(t)?;
    let result = pump(t, pipe_read.as_fd(), pipe_write.as_fd(), capacity);
    t.scratch.pipe = Some((pipe_read, pipe_write, capacity));
    result
}

fn pump(
    t: &mut Transfer<'_>,
    pipe_read: BorrowedFd<'_>,
    pipe_write: BorrowedFd<'_>,
    capacity: usize,
) -> Result<(), Stop> {
    while !t.finished() {
        let want = t.next_len(capacity);
        // Fill: the source's position is not advanced until bytes reach the
        // sink, so pass a copy of it.
        let filled = splice_once(
            t,
            t.source_fd(),
            t.source_offset(),
            pipe_write,
            None,
            want,
            Side::Source,
        )?;
        if filled == 0 {
            return t.source_ended();
        }
        t.progressed();
        let mut in_pipe = filled;
        while in_pipe > 0 {
            match splice_once(
                t,
                pipe_read,
                None,
                t.sink_fd(),
                t.sink_offset(),
                in_pipe,
                Side::Sink,
            ) {
                Ok(0) => return Err(t.failed("splice", Side::Sink, Errno::NOSPC)),
                Ok(n) => {
                    t.advance(n as u64);
                    in_pipe -= n;
                }
                Err(refusal @ Stop::Refused { .. }) => {
                    drain(t, pipe_read, in_pipe)?;
                    return Err(refusal);
                }
                Err(failure) => return Err(failure),
            }
        }
    }
    Ok(())
}

/// Moves `left` bytes still in the pipe to the sink through a user buffer.
fn drain(t: &mut Transfer<'_>, pipe_read: BorrowedFd<'_>, mut left: usize) -> Result<(), Stop> {
    let mut buffer = std::mem::take(&mut t.scratch.buffer);
    buffer.resize(buffer.len().max(left.min(1 << 20)), 0);
    let result = (|| {
        while left > 0 {
            let want = left.min(buffer.len());
            t.counters.syscalls += 1;
            let n = match rustix::io::read(pipe_read, &mut buffer[..want]) {
                Ok(n) => n,
                Err(Errno::INTR) => continue,
                Err(errno) => return Err(t.failed("read(pipe)", Side::Sink, errno)),
            };
            write_sink(t, &buffer[..n])?;
            left -= n;
        }
        Ok(())
    })();
    t.scratch.buffer = buffer;
    result
}

/// One splice(2) with EINTR retried and EAGAIN waited out; returns the
/// bytes moved. Positions are passed by value: callers advance the
/// transfer themselves. What is spliced from is the source or the flow's
/// pipe (which has bytes then), what is spliced to the sink or the pipe
/// (empty then): only the flow's ends can keep us waiting.
fn splice_once(
    t: &mut Transfer<'_>,
    from: BorrowedFd<'_>,
    from_offset: Option<u64>,
    to: BorrowedFd<'_>,
    to_offset: Option<u64>,
    len: usize,
    side: Side,
) -> Result<usize, Stop> {
    kernel_call(
        t,
        "splice",
        side,
        [
            Some((from, PollFlags::IN, Side::Source)),
            Some((to, PollFlags::OUT, Side::Sink)),
        ],
        |_| {
            let (mut from_at, mut to_at) = (from_offset, to_offset);
            rustix::pipe::splice(
                from,
                from_at.as_mut(),
                to,
                to_at.as_mut(),
                len,
                SpliceFlags::MOVE | SpliceFlags::MORE,
            )
        },
    )
}

/// The flow's pipe, made on first use and sized to `--pipe-size`.
fn take_pipe(
    t: &mut Transfer<'_>,
) -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd, usize), Stop> {
    if let Some(pipe) = t.scratch.pipe.take() {
        return Ok(pipe);
    }
    t.counters.syscalls += 2;
    let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)
        .map_err(|e| t.failed("pipe", Side::Source, e))?;
    let wanted = t.params.pipe_size.min(pipe_max_size());
    let capacity = rustix::pipe::fcntl_setpipe_size(&write, wanted)
        .or_else(|_| rustix::pipe::fcntl_getpipe_size(&write))
        .map_err(|e| t.failed("fcntl(F_SETPIPE_SZ)", Side::Source, e))?;
    Ok((read, write, capacity))
}

/// Grows `pipe` towards `--pipe-size` (clamped to the system's maximum).
/// Best effort: a pipe that cannot grow (the user's pipe quota is spent)
/// still works at its own size, so a refusal is not an error.
fn grow_pipe(t: &mut Transfer<'_>, pipe: BorrowedFd<'_>) {
    let wanted = t.params.pipe_size.min(pipe_max_size());
    t.counters.syscalls += 1;
    if rustix::pipe::fcntl_getpipe_size(pipe).is_ok_and(|size| size < wanted) {
        t.counters.syscalls += 1;
        let _ = rustix::pipe::fcntl_setpipe_size(pipe, wanted);
    }
}

/// `/proc/sys/fs/pipe-max-size` (1 MiB by default).
pub(crate) fn pipe_max_size() -> usize {
    std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(1 << 20)
}
