//! flexio's one io_uring wrapper, in two shapes over the same rule.
//!
//! The io-uring crate leaves registering buffers and pushing an entry
//! `unsafe`, because the kernel reads or writes the memory an entry names
//! until its completion arrives. Both shapes keep that memory alive and
//! unborrowed until the completion is taken, so their safe signatures
//! cannot let the kernel touch freed or borrowed memory:
//!
//! * [`Ring`] (the engine's): owns registered, aligned buffers, one slot
//!   per request in flight, and waits for (or cancels) every request before
//!   it frees them;
//! * [`run`] (the block cache's): borrows the caller's buffers for one
//!   batch and returns only when the kernel is done with all of them;
//! * [`ZcSender`] (the `send-zc` mechanism's): owns the memory it sends
//!   until the kernel's zero-copy notification for it arrives.
//!
//! Reference: <https://man7.org/linux/man-pages/man7/io_uring.7.html>

mod batch;
mod send_zc;
mod slots;

use std::io;

use io_uring::{squeue, IoUring};

pub use batch::{run, Request, RING_ENTRIES};
pub use send_zc::{Held, Sent, ZcSender};
pub use slots::{Op, Ring, RingError, MAX_SLOTS};

/// Queues `entry`; `false` when the submission queue is full (submit and
/// reap, then try again).
///
/// # Safety
/// Whatever memory `entry` names stays valid, and is neither read nor
/// written by anything else, until the entry's completion is taken from
/// `ring`.
unsafe fn push(ring: &mut IoUring, entry: &squeue::Entry) -> bool {
    // SAFETY: the caller's contract.
    unsafe { ring.submission().push(entry) }.is_ok()
}

/// The error for a full submission queue where the caller sized the queue
/// so that it cannot be (a broken invariant, reported rather than hidden).
fn queue_full() -> io::Error {
    io::Error::other("io_uring submission queue full")
}

/// Submits what was pushed and waits for `want` completions, retrying when
/// a signal interrupts the wait (`EINTR`) or the completion queue is full
/// for now (`EBUSY`: reaping makes room).
fn submit_and_wait(ring: &mut IoUring, want: usize) -> io::Result<()> {
    match ring.submit_and_wait(want) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(()),
        Err(e) => Err(e),
    }
}
