//! An io_uring with one registered, aligned buffer per request slot.
//!
//! [`Ring`] owns both the ring and the
//! buffers, lets at most one request use a slot at a time, hands out a
//! slot's bytes only while no request uses it, and waits for every request
//! in flight before it frees the buffers — so the safe methods below cannot
//! let the kernel touch freed or borrowed memory.
//!
//! Reference: <https://man7.org/linux/man-pages/man7/io_uring.7.html>

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

use io_uring::{opcode, squeue, types, IoUring};

use super::{push, queue_full};
use crate::aligned::AlignedBuffer;

/// The most slots (and so requests in flight) a ring is made with.
pub const MAX_SLOTS: usize = 4096;

/// The user data of cancel requests: no slot has it.
const CANCEL: u64 = u64::MAX;

/// A request kind, for [`Ring::push`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `IORING_OP_READ_FIXED` into the slot.
    Read,
    /// `IORING_OP_WRITE_FIXED` out of the slot.
    Write,
}

/// Why a ring could not be made.
#[derive(Debug)]
pub struct RingError {
    /// The call that failed: `io_uring_setup` or `io_uring_register`.
    pub op: &'static str,
    /// What it returned.
    pub error: io::Error,
}

/// An io_uring and `slots` registered buffers of `slot_len` bytes each.
pub struct Ring {
    // Declared before `buffers`: the ring (and its registration) goes
    // first when a `Ring` is dropped.
    ring: IoUring,
    /// `None` only after `Drop` gave up waiting for requests in flight and
    /// leaked the memory rather than free what the kernel may still write.
    buffers: Option<AlignedBuffer>,
    slot_len: usize,
    /// Whether the buffers are registered (pinned) with the ring; when the
    /// locked-memory limit refuses that, plain READ/WRITE use them instead.
    registered: bool,
    busy: Vec<bool>,
    in_flight: usize,
}

impl Ring {
    /// Makes a ring with room for `slots` requests (at most [`MAX_SLOTS`])
    /// and registers `slots` buffers of `slot_len` bytes, the first aligned
    /// to `align` (a power of two) and each one `slot_len` after the last.
    ///
    /// # Errors
    /// `io_uring_setup` when the kernel has no io_uring (ENOSYS) or forbids
    /// it (EPERM), `io_uring_register` when registering fails for a reason
    /// other than the locked-memory limit (then the buffers stay
    /// unregistered and plain READ/WRITE requests use them).
    ///
    /// Reference: <https://man7.org/linux/man-pages/man2/io_uring_register.2.html>
    pub fn new(slots: usize, slot_len: usize, align: usize) -> Result<Self, RingError> {
        let slots = slots.clamp(1, MAX_SLOTS);
        assert!(slot_len > 0 && slot_len <= u32::MAX as usize, "slot length");
        let ring = IoUring::new(slots.next_power_of_two() as u32).map_err(|error| RingError {
            op: "io_uring_setup",
            error,
        })?;
        let mut buffers = AlignedBuffer::new(slots * slot_len, align);
        let base = buffers.as_mut_ptr();
        let iovecs: Vec<libc::iovec> = (0..slots)
            .map(|slot| libc::iovec {
                // Only an address for the kernel; no reference is made.
                iov_base: base.wrapping_add(slot * slot_len).cast(),
                iov_len: slot_len,
            })
            .collect();
        // SAFETY: every iovec lies inside `buffers`, which this `Ring` owns
        // and frees only after the ring is closed (field order, and `Drop`
        // waits for requests in flight first).
        let registered = match unsafe { ring.submitter().register_buffers(&iovecs) } {
            Ok(()) => true,
            // Pinning counts against RLIMIT_MEMLOCK (8 MiB for a normal
            // user): run with unregistered buffers rather than not at all.
            Err(error) if matches!(error.raw_os_error(), Some(libc::ENOMEM | libc::EPERM)) => false,
            Err(error) => {
                return Err(RingError {
                    op: "io_uring_register",
                    error,
                })
            }
        };
        Ok(Ring {
            ring,
            buffers: Some(buffers),
            slot_len,
            registered,
            busy: vec![false; slots],
            in_flight: 0,
        })
    }

    /// How many slots (requests that may be in flight at once).
    pub fn slots(&self) -> usize {
        self.busy.len()
    }

    /// Bytes per slot.
    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    /// Requests pushed whose completion has not been taken yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether a request uses `slot`.
    pub fn is_busy(&self, slot: usize) -> bool {
        self.busy[slot]
    }

    /// Queues a read into (or a write out of) bytes `at..at + len` of
    /// `slot`, at byte `offset` of `fd` (`None`: the current position, for
    /// streams). The entry goes to the kernel at the next submit; its
    /// completion comes back from [`Ring::next_completion`] with `slot`.
    ///
    /// # Errors
    /// When the submission queue is full (it is made as large as the number
    /// of slots, so only a broken invariant gets here).
    ///
    /// # Panics
    /// When `slot` is already in use or the range lies outside it.
    pub fn push(
        &mut self,
        op: Op,
        fd: BorrowedFd<'_>,
        slot: usize,
        at: usize,
        len: usize,
        offset: Option<u64>,
    ) -> io::Result<()> {
        assert!(!self.busy[slot], "slot {slot} already has a request");
        assert!(at <= self.slot_len && len <= self.slot_len - at, "range");
        let buffers = self
            .buffers
            .as_mut()
            .expect("buffers live while the ring does");
        let address = buffers.as_mut_ptr().wrapping_add(slot * self.slot_len + at);
        let fd = types::Fd(fd.as_raw_fd());
        let index = slot as u16;
        // -1: read or write at the file position (what streams need).
        let offset = offset.unwrap_or(u64::MAX);
        let entry: squeue::Entry = match (op, self.registered) {
            (Op::Read, true) => opcode::ReadFixed::new(fd, address, len as u32, index)
                .offset(offset)
                .build(),
            (Op::Write, true) => opcode::WriteFixed::new(fd, address, len as u32, index)
                .offset(offset)
                .build(),
            (Op::Read, false) => opcode::Read::new(fd, address, len as u32)
                .offset(offset)
                .build(),
            (Op::Write, false) => opcode::Write::new(fd, address, len as u32)
                .offset(offset)
                .build(),
        }
        .user_data(slot as u64);
        // SAFETY: the entry names `len` bytes of buffer `slot` (registered
        // or not),
        // which this `Ring` owns; `busy[slot]` keeps every other request
        // and `slot_bytes` off them until the completion is taken, and
        // `Drop` waits for that completion before freeing them.
        if !unsafe { push(&mut self.ring, &entry) } {
            return Err(queue_full());
        }
        self.busy[slot] = true;
        self.in_flight += 1;
        Ok(())
    }

    /// Submits what was pushed and waits until at least `want` completions
    /// are ready: one `io_uring_enter(2)`.
    ///
    /// # Errors
    /// What `io_uring_enter` returns (EINTR included: call again).
    pub fn submit_and_wait(&mut self, want: usize) -> io::Result<usize> {
        self.ring.submit_and_wait(want)
    }

    /// Whether [`Ring::submit_and_wait_for`] works: the kernel takes a
    /// timeout with its wait (`IORING_FEAT_EXT_ARG`, Linux 5.11).
    pub fn can_time_out(&self) -> bool {
        self.ring.params().is_feature_ext_arg()
    }

    /// Submits what was pushed and waits until a completion is ready or
    /// `timeout` has passed; returns whether one is ready (it may return
    /// sooner with none, when submitting was all it did).
    ///
    /// # Errors
    /// What `io_uring_enter` returns other than `ETIME` (EINTR included:
    /// call again).
    pub fn submit_and_wait_for(&mut self, timeout: Duration) -> io::Result<bool> {
        let timespec = types::Timespec::from(timeout);
        let args = types::SubmitArgs::new().timespec(&timespec);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
            Err(e) => return Err(e),
        }
        Ok(!self.ring.completion().is_empty())
    }

    /// Asks the kernel to cancel every request in flight (a read from a
    /// peer that sends nothing would never complete). Their completions
    /// still come back through [`Ring::next_completion`] (as `-ECANCELED`
    /// or their result), so [`Ring::drain`] after this returns.
    ///
    /// # Errors
    /// What `io_uring_enter` returns.
    pub fn cancel_all(&mut self) -> io::Result<()> {
        for slot in (0..self.busy.len()).filter(|&slot| self.busy[slot]) {
            let entry = opcode::AsyncCancel::new(slot as u64)
                .build()
                .user_data(CANCEL);
            // SAFETY: a cancel request names no memory, only the user data
            // of the request to cancel.
            if !unsafe { push(&mut self.ring, &entry) } {
                self.ring.submit()?;
                // SAFETY: as above.
                if !unsafe { push(&mut self.ring, &entry) } {
                    return Err(queue_full());
                }
            }
        }
        self.ring.submit()?;
        Ok(())
    }

    /// The next completion, if one is ready: the slot it used (now free)
    /// and the kernel's result (bytes, or a negated errno).
    pub fn next_completion(&mut self) -> Option<(usize, i32)> {
        let mut entry = self.ring.completion().next()?;
        // A cancel request's own completion frees no slot.
        while entry.user_data() == CANCEL {
            entry = self.ring.completion().next()?;
        }
        let slot = entry.user_data() as usize;
        debug_assert!(self.busy[slot]);
        self.busy[slot] = false;
        self.in_flight -= 1;
        Some((slot, entry.result()))
    }

    /// The bytes of a slot no request uses.
    ///
    /// # Panics
    /// When a request uses the slot.
    pub fn slot_bytes(&self, slot: usize) -> &[u8] {
        assert!(!self.busy[slot], "slot {slot} is in use by the kernel");
        let buffers = self
            .buffers
            .as_ref()
            .expect("buffers live while the ring does");
        &buffers.as_slice()[slot * self.slot_len..(slot + 1) * self.slot_len]
    }

    /// Waits for every request in flight, discarding the results.
    ///
    /// # Errors
    /// What `io_uring_enter` returns other than EINTR.
    pub fn drain(&mut self) -> io::Result<()> {
        while self.in_flight > 0 {
            while self.next_completion().is_some() {}
            if self.in_flight == 0 {
                break;
            }
            super::submit_and_wait(&mut self.ring, 1)?;
        }
        Ok(())
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // A ring dropped after a failed flow may still wait on a peer that
        // sends nothing: cancel first, so that waiting for the
        // completions cannot hang.
        if self.in_flight > 0 && self.cancel_all().and_then(|()| self.drain()).is_err() {
            // The kernel may still write into these pages: leaking them is
            // the only safe choice left.
            std::mem::forget(self.buffers.take());
        }
    }
}
