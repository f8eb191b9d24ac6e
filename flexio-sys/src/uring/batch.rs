//! Runs a batch of reads and writes through io_uring with several in
//! flight, and returns only when the kernel is done with every buffer.
//!
//! [`run`] borrows every buffer of the batch for the whole call and does not
//! return — nor unwind: an [`AbortIfInFlight`] guard turns a panic with
//! requests in flight into an abort — before it has taken the completion
//! of every entry it pushed. So the safe signature cannot let the kernel
//! touch memory the caller got back.
//!
//! One ring per thread, made on first use and kept: a ring is not tied to
//! a file (each entry names its fd), and a thread-local one needs no lock.
//!
//! Reference: <https://man7.org/linux/man-pages/man7/io_uring.7.html>

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use io_uring::{opcode, types, IoUring};

use super::{push, submit_and_wait};

/// Entries of each thread's ring: the most requests in flight at once.
pub const RING_ENTRIES: u32 = 64;

/// One request of a batch.
pub enum Request<'a> {
    /// Read `buf.len()` bytes at `offset` into `buf`.
    Read {
        /// The byte of the file to read from.
        offset: u64,
        /// Where the bytes go; its length is the request's.
        buf: &'a mut [u8],
    },
    /// Write `buf` at `offset`.
    Write {
        /// The byte of the file to write at.
        offset: u64,
        /// The bytes to write.
        buf: &'a [u8],
    },
}

thread_local! {
    static RING: RefCell<Option<Result<IoUring, String>>> = const { RefCell::new(None) };
}

fn with_ring<T>(f: impl FnOnce(&mut IoUring) -> T) -> Result<T, String> {
    RING.with(|cell| {
        let mut slot = cell.borrow_mut();
        let ring = slot.get_or_insert_with(|| {
            IoUring::new(RING_ENTRIES).map_err(|e| format!("io_uring_setup: {e}"))
        });
        match ring {
            Ok(ring) => Ok(f(ring)),
            Err(why) => Err(why.clone()),
        }
    })
}

/// Aborts the process if dropped while requests are in flight: unwinding
/// past them would hand their buffers back while the kernel may still
/// write into them.
struct AbortIfInFlight(usize);

impl Drop for AbortIfInFlight {
    fn drop(&mut self) {
        if self.0 > 0 {
            eprintln!("flexio: unwinding with io_uring requests in flight; aborting");
            std::process::abort();
        }
    }
}

/// Runs `requests` on `fd` with at most `depth` in flight, and returns each
/// one's result (bytes moved, or the error) in order.
///
/// # Errors
/// The outer `Err` when this thread has no ring (the caller then falls back
/// to `pread`/`pwrite` and says so); per-request errors are in the vector.
pub fn run(
    fd: BorrowedFd<'_>,
    requests: &mut [Request<'_>],
    depth: usize,
) -> Result<Vec<io::Result<usize>>, String> {
    with_ring(|ring| run_on(ring, fd, requests, depth))
}

fn run_on(
    ring: &mut IoUring,
    fd: BorrowedFd<'_>,
    requests: &mut [Request<'_>],
    depth: usize,
) -> Vec<io::Result<usize>> {
    let depth = depth.clamp(1, RING_ENTRIES as usize);
    let mut results: Vec<Option<io::Result<usize>>> = (0..requests.len()).map(|_| None).collect();
    let raw = types::Fd(fd.as_raw_fd());
    let mut next = 0;
    let mut in_flight = AbortIfInFlight(0);
    while next < requests.len() || in_flight.0 > 0 {
        while next < requests.len() && in_flight.0 < depth {
            let entry = match &mut requests[next] {
                Request::Read { offset, buf } => {
                    opcode::Read::new(raw, buf.as_mut_ptr(), buf.len() as u32)
                        .offset(*offset)
                        .build()
                }
                Request::Write { offset, buf } => {
                    opcode::Write::new(raw, buf.as_ptr(), buf.len() as u32)
                        .offset(*offset)
                        .build()
                }
            }
            .user_data(next as u64);
            // SAFETY: the entry names a buffer borrowed (mutably for a
            // read) by `requests` for the whole of this call, and this
            // function takes the entry's completion before it returns;
            // `in_flight` aborts rather than unwind past it.
            if !unsafe { push(ring, &entry) } {
                break; // the queue is full: submit and reap first
            }
            in_flight.0 += 1;
            next += 1;
        }
        if let Err(e) = submit_and_wait(ring, 1) {
            // io_uring_enter itself failed: requests already submitted may
            // still complete, so their buffers cannot be released.
            eprintln!("flexio: io_uring_enter failed ({e}) with requests in flight");
            std::process::abort();
        }
        for completion in ring.completion() {
            let index = completion.user_data() as usize;
            let result = completion.result();
            results[index] = Some(if result < 0 {
                Err(io::Error::from_raw_os_error(-result))
            } else {
                Ok(result as usize)
            });
            in_flight.0 -= 1;
        }
    }
    results
        .into_iter()
        .map(|r| r.expect("every request completed"))
        .collect()
}
