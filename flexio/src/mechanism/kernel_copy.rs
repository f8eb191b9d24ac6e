//! The loop every in-kernel mechanism runs — copy_file_range, sendfile,
//! splice: ask for the next piece, call, 0 means the source ended, retry
//! `EINTR`, wait out `EAGAIN` on the ends that can keep the flow waiting,
//! and tell a refusal from a failure. Written once here so that each
//! mechanism's file holds only its call.

use std::os::fd::BorrowedFd;

use rustix::event::PollFlags;
use rustix::io::Errno;

use super::transfer::Side;
use super::{Stop, Transfer};

/// What to wait for when a call says `EAGAIN`: the descriptors that may be
/// the one not ready, with the readiness each needs and the side it
/// belongs to (named in an idle-timeout error).
pub(crate) type Waits<'fd> = [Option<(BorrowedFd<'fd>, PollFlags, Side)>; 2];

/// One kernel call, retried on `EINTR` and after waiting out `EAGAIN`;
/// returns the bytes it moved (0: the source ended). An error is a refusal
/// or a failure named after `op` and `side` ([`Transfer::refused_or_failed`]).
pub(crate) fn kernel_call(
    t: &mut Transfer<'_>,
    op: &'static str,
    side: Side,
    waits: Waits<'_>,
    mut call: impl FnMut(&mut Transfer<'_>) -> rustix::io::Result<usize>,
) -> Result<usize, Stop> {
    loop {
        t.counters.syscalls += 1;
        match call(t) {
            Ok(n) => return Ok(n),
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => {
                for (fd, flags, side) in waits.iter().flatten() {
                    t.wait_ready(*fd, *flags, *side)?;
                }
            }
            Err(errno) => return Err(t.refused_or_failed(op, side, errno)),
        }
    }
}

/// Moves the whole transfer with `call`, which moves up to the given number
/// of bytes from the transfer's positions and returns how many it moved.
/// Each request is at most `max_per_call` (and whatever else
/// [`Transfer::next_len`] caps it at).
pub(crate) fn kernel_copy_loop(
    t: &mut Transfer<'_>,
    op: &'static str,
    side: Side,
    max_per_call: usize,
    waits: Waits<'_>,
    mut call: impl FnMut(&mut Transfer<'_>, usize) -> rustix::io::Result<usize>,
) -> Result<(), Stop> {
    while !t.finished() {
        let want = t.next_len(max_per_call);
        match kernel_call(t, op, side, waits, |t| call(t, want))? {
            0 => return t.source_ended(),
            n => t.advance(n as u64),
        }
    }
    Ok(())
}
