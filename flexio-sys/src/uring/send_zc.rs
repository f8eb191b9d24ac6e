//! Zero-copy send through io_uring (`IORING_OP_SEND_ZC`, Linux 6.0).
//!
//! The kernel does not copy the bytes of a zero-copy send: the socket's
//! buffers point at the caller's pages until the data has left (for TCP:
//! until it is acknowledged). Each request therefore completes twice — once
//! when its bytes are queued on the socket (the send may be retried or
//! followed by the next one), and once more, with `IORING_CQE_F_NOTIF`,
//! when the kernel has let go of the pages. Only then may the memory be
//! changed, unmapped or freed; changed earlier, the peer receives the new
//! bytes instead of the ones that were sent.
//!
//! [`ZcSender::send`] takes the memory by value ([`Held`]) and parks it
//! until every notification for it has arrived, so no safe caller can
//! reuse or unmap it early. A sender dropped while notifications are still
//! owed (a peer that stopped reading keeps the pages in its send queue)
//! cancels its requests in flight; then a file mapping goes at once (the
//! socket holds its own references to the page-cache pages, whose bytes
//! unmapping does not change), while heap memory waits for its
//! notifications a bounded time and is leaked rather than freed under
//! the kernel.
//!
//! Requests on one socket go one at a time: two in flight could be issued
//! out of order when the socket's buffer fills, and a stream must not
//! reorder. What overlaps is the kernel's transmission with the next
//! request, which is where zero-copy saves its time.
//!
//! References: <https://man7.org/linux/man-pages/man3/io_uring_prep_send_zc.3.html>,
//! <https://docs.kernel.org/networking/msg_zerocopy.html>

use std::collections::VecDeque;
use std::io;
use std::ops::Range;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, types, IoUring, Probe};

use super::push;
use crate::sigbus::Guard;

/// `IORING_SEND_ZC_REPORT_USAGE` (Linux 6.2): the notification says whether
/// the kernel had to copy after all (not in the io-uring crate's constants).
const SEND_ZC_REPORT_USAGE: u16 = 1 << 3;
/// `IORING_NOTIF_USAGE_ZC_COPIED`: set in a notification's result when the
/// bytes were copied (loopback and local delivery copy on receive).
const NOTIF_USAGE_ZC_COPIED: i32 = 1 << 31;
/// The user data of cancel requests: no send has it (ids count from 0).
const CANCEL: u64 = u64::MAX;
/// Memory parked at once awaiting notifications before a send waits for
/// the oldest: bounds what one flow keeps pinned (and, for mappings, the
/// SIGBUS guard slots it holds).
const MAX_PARKED: usize = 8;
/// How long a dropped sender waits for notifications still owed before it
/// leaks their memory.
const DROP_PATIENCE: Duration = Duration::from_secs(2);

/// Memory a zero-copy send reads, owned by the sender until the kernel has
/// let go of it.
pub enum Held {
    /// A guarded file mapping (the source file's pages, sent as they are).
    Mapped(Guard),
    /// Heap memory.
    Heap(Box<[u8]>),
}

impl Held {
    /// The bytes. A mapping of a file truncated under it reads zeros past
    /// the end (the guard's SIGBUS recovery) from user space; the kernel's
    /// own reads of such pages fail the send with `EFAULT`.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Held::Mapped(guard) => guard.mapping().as_slice(),
            Held::Heap(bytes) => bytes,
        }
    }
}

/// What [`ZcSender::send`] did.
#[derive(Debug)]
pub struct Sent {
    /// Bytes queued on the socket, from the start of the range.
    pub bytes: usize,
    /// Why it stopped short, if it did: the errno of the request
    /// (`EFAULT`: the pages could not be read; `EOPNOTSUPP`: the socket
    /// has no zero-copy, as Unix sockets; `EPIPE`, `ECONNRESET`), or
    /// `TimedOut` after `patience` without a completion.
    pub error: Option<io::Error>,
}

/// What one request queued on the socket.
enum Queued {
    /// Its bytes (all it asked, or what the socket took before it closed).
    All(usize),
    /// These bytes, then nothing for the whole patience: cancelled.
    Stalled(usize),
}

struct Parked {
    id: u64,
    held: Held,
    /// Requests pushed whose first completion has not been taken: the
    /// kernel may still read the memory, and may yet announce a
    /// notification.
    unanswered: usize,
    /// Notifications announced (`IORING_CQE_F_MORE`) and not yet taken.
    owed: i64,
    /// Whether a request may still be issued on it (the current send).
    sending: bool,
}

/// An io_uring that sends memory with `SEND_ZC`, one request at a time,
/// and keeps each piece of memory until the kernel is done with it.
pub struct ZcSender {
    ring: IoUring,
    parked: VecDeque<Parked>,
    next_id: u64,
    notifications: u64,
    copied: u64,
    /// Memory the kernel is done with, kept for [`ZcSender::reclaim`]
    /// when the caller recycles its buffers (`None`: freed at once).
    released: Option<Vec<Held>>,
    /// How long `Drop` waits for notifications still owed.
    drop_patience: Duration,
}

impl ZcSender {
    /// Makes the ring and checks that the kernel has `SEND_ZC`.
    ///
    /// # Errors
    /// `io_uring_setup`'s errno (`ENOSYS`, `EPERM`); `Unsupported` when the
    /// kernel's probe lacks `IORING_OP_SEND_ZC` (before Linux 6.0).
    ///
    /// # Examples
    /// ```
    /// // Kernels before 6.0, or io_uring forbidden: an error, not a crash.
    /// let _ = flexio_sys::uring::ZcSender::new();
    /// ```
    pub fn new() -> io::Result<Self> {
        let ring = IoUring::new(8)?;
        let mut probe = Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        if !probe.is_supported(opcode::SendZc::CODE) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel has no IORING_OP_SEND_ZC (Linux 6.0)",
            ));
        }
        if !ring.params().is_feature_ext_arg() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel's io_uring cannot wait with a timeout (Linux 5.11)",
            ));
        }
        Ok(ZcSender {
            ring,
            parked: VecDeque::new(),
            next_id: 0,
            notifications: 0,
            copied: 0,
            released: None,
            drop_patience: DROP_PATIENCE,
        })
    }

    /// Notifications received so far, and how many of them said the kernel
    /// copied the bytes anyway (loopback and veth to a local namespace do).
    pub fn notifications(&self) -> (u64, u64) {
        (self.notifications, self.copied)
    }

    /// Keeps memory the kernel is done with for [`ZcSender::reclaim`]
    /// instead of freeing it (for callers that recycle buffers).
    pub fn keep_released(&mut self) {
        self.released.get_or_insert_with(Vec::new);
    }

    /// The memory the kernel has let go of since the last call (only with
    /// [`ZcSender::keep_released`]): safe to change or reuse now.
    pub fn reclaim(&mut self) -> Vec<Held> {
        self.release_done();
        self.released
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// How long dropping this sender waits for the notifications still
    /// owed before it leaks their memory (2 s unless set): a caller whose
    /// peer has just been idle for its whole timeout sets zero rather than
    /// wait on it again.
    pub fn set_drop_patience(&mut self, patience: Duration) {
        self.drop_patience = patience;
    }

    /// Pieces of memory still waiting for a notification.
    pub fn parked(&self) -> usize {
        self.parked.len()
    }

    /// Sends `held.bytes()[range]` on the stream socket `fd`, requests of
    /// at most `piece` bytes one after another, and parks `held` until the
    /// kernel has let go of its pages. Returns when every byte is queued on
    /// the socket or a request failed; `patience` bounds each wait for a
    /// completion (then the request is cancelled).
    ///
    /// # Panics
    /// When `range` lies outside the bytes or `piece` is 0.
    pub fn send(
        &mut self,
        fd: BorrowedFd<'_>,
        held: Held,
        range: Range<usize>,
        piece: usize,
        patience: Option<Duration>,
    ) -> Sent {
        assert!(range.start <= range.end && range.end <= held.bytes().len());
        assert!(piece > 0, "piece");
        let id = self.next_id;
        self.next_id += 1;
        let base = held.bytes().as_ptr();
        self.parked.push_back(Parked {
            id,
            held,
            unanswered: 0,
            owed: 0,
            sending: true,
        });
        let mut pos = range.start;
        let mut error = None;
        while pos < range.end && error.is_none() {
            let len = piece.min(range.end - pos).min(1 << 30);
            match self.send_one(fd, id, base.wrapping_add(pos), len, patience) {
                Ok(Queued::Stalled(n)) => {
                    // What it queued counts; the wait it stalled is spent,
                    // and a next request would start the patience anew.
                    pos += n;
                    error = Some(io::Error::from(io::ErrorKind::TimedOut));
                }
                Ok(Queued::All(0)) => error = Some(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(Queued::All(n)) => pos += n,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    if let Err(e) = wait_writable(fd, patience) {
                        error = Some(e);
                    }
                }
                Err(e) => error = Some(e),
            }
        }
        if let Some(parked) = self.parked.iter_mut().find(|p| p.id == id) {
            parked.sending = false;
        }
        self.release_done();
        if error.is_none() {
            while self.parked.len() > MAX_PARKED {
                if let Err(e) = self.wait_one(patience) {
                    error = Some(e);
                    break;
                }
            }
        }
        Sent {
            bytes: pos - range.start,
            error,
        }
    }

    /// Waits until the kernel has let go of every piece of memory sent.
    ///
    /// # Errors
    /// `TimedOut` after `patience` without a notification; what
    /// `io_uring_enter` returns.
    pub fn flush(&mut self, patience: Option<Duration>) -> io::Result<()> {
        self.release_done();
        while !self.parked.is_empty() {
            self.wait_one(patience)?;
        }
        Ok(())
    }

    /// Issues one request and waits for its first completion: the bytes it
    /// queued, or its errno.
    fn send_one(
        &mut self,
        fd: BorrowedFd<'_>,
        id: u64,
        address: *const u8,
        len: usize,
        patience: Option<Duration>,
    ) -> io::Result<Queued> {
        let entry = opcode::SendZc::new(types::Fd(fd.as_raw_fd()), address, len as u32)
            .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
            .zc_flags(SEND_ZC_REPORT_USAGE)
            .build()
            .user_data(id);
        // SAFETY: the entry names `len` bytes inside the memory of parked
        // entry `id` (checked by `send`), which this sender owns and frees
        // only after taking the request's completion and every
        // notification it announced; `Drop` leaks it when they do not come.
        if !unsafe { push(&mut self.ring, &entry) } {
            return Err(super::queue_full());
        }
        if let Some(parked) = self.parked.iter_mut().find(|p| p.id == id) {
            parked.unanswered += 1;
        }
        let started = Instant::now();
        let mut cancelled = false;
        loop {
            let mut first = None;
            for (user_data, result, flags) in self.take_completions() {
                if self.note(user_data, result, flags) && user_data == id {
                    first = Some(result);
                }
            }
            match first {
                // Cancelled after `patience` with part of it queued (a
                // `MSG_WAITALL` send answers what it had sent).
                Some(r) if r >= 0 && cancelled => return Ok(Queued::Stalled(r as usize)),
                Some(r) if r >= 0 => return Ok(Queued::All(r as usize)),
                Some(r) if cancelled && -r == libc::ECANCELED => {
                    return Err(io::Error::from(io::ErrorKind::TimedOut))
                }
                Some(r) => return Err(io::Error::from_raw_os_error(-r)),
                None => {}
            }
            let left = patience.map(|p| p.saturating_sub(started.elapsed()));
            if left.is_some_and(|left| left.is_zero()) && !cancelled {
                // The peer took nothing for `patience`: the cancelled
                // request still completes, and only then is it done.
                self.cancel(id)?;
                cancelled = true;
            }
            if cancelled && patience.is_some_and(|p| started.elapsed() > 2 * p) {
                // Not even the cancellation completed: the request stays
                // unanswered, so its memory stays parked (leaked on drop
                // rather than freed under the kernel).
                return Err(io::Error::from(io::ErrorKind::TimedOut));
            }
            self.wait(if cancelled { patience } else { left })?;
        }
    }

    /// Waits for the next completion (a notification, or the first
    /// completion of a request left in flight) and releases what it
    /// completes.
    fn wait_one(&mut self, patience: Option<Duration>) -> io::Result<()> {
        let started = Instant::now();
        loop {
            let taken = self.take_completions();
            let any = !taken.is_empty();
            for (user_data, result, flags) in taken {
                self.note(user_data, result, flags);
            }
            if any {
                break;
            }
            let left = patience.map(|p| p.saturating_sub(started.elapsed()));
            if left.is_some_and(|left| left.is_zero()) {
                return Err(io::Error::from(io::ErrorKind::TimedOut));
            }
            self.wait(left)?;
        }
        self.release_done();
        Ok(())
    }

    /// Submits what was pushed and waits for a completion, at most
    /// `patience` (it may return sooner with none: a signal).
    fn wait(&mut self, patience: Option<Duration>) -> io::Result<()> {
        if !self.ring.completion().is_empty() {
            return Ok(());
        }
        let result = match patience {
            None => self.ring.submit_and_wait(1).map(drop),
            Some(patience) => {
                let timespec = types::Timespec::from(patience);
                let args = types::SubmitArgs::new().timespec(&timespec);
                self.ring.submitter().submit_with_args(1, &args).map(drop)
            }
        };
        match result {
            Ok(()) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn cancel(&mut self, id: u64) -> io::Result<()> {
        let entry = opcode::AsyncCancel::new(id).build().user_data(CANCEL);
        // SAFETY: a cancel request names no memory, only the user data of
        // the request to cancel.
        if !unsafe { push(&mut self.ring, &entry) } {
            return Err(super::queue_full());
        }
        self.ring.submit()?;
        Ok(())
    }

    fn take_completions(&mut self) -> Vec<(u64, i32, u32)> {
        self.ring
            .completion()
            .filter(|c| c.user_data() != CANCEL)
            .map(|c| (c.user_data(), c.result(), c.flags()))
            .collect()
    }

    /// Counts one completion against its memory; `true` for a request's
    /// first completion (its result), `false` for a notification.
    fn note(&mut self, id: u64, result: i32, flags: u32) -> bool {
        let parked = self.parked.iter_mut().find(|p| p.id == id);
        if cqueue::notif(flags) {
            self.notifications += 1;
            if result & NOTIF_USAGE_ZC_COPIED != 0 {
                self.copied += 1;
            }
            if let Some(parked) = parked {
                // Signed: io_uring may post a request's notification
                // before that request's completion (the one that says a
                // notification will come). Saturating at zero there left
                // the count at one for ever, and `flush` waiting for it.
                parked.owed -= 1;
            }
            return false;
        }
        if let Some(parked) = parked {
            parked.unanswered = parked.unanswered.saturating_sub(1);
            if cqueue::more(flags) {
                parked.owed += 1;
            }
        }
        true
    }

    /// Frees the memory no request and no notification needs any more.
    fn release_done(&mut self) {
        let (keep, done): (VecDeque<Parked>, VecDeque<Parked>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(|p| p.sending || p.unanswered > 0 || p.owed != 0);
        self.parked = keep;
        if let Some(released) = self.released.as_mut() {
            released.extend(done.into_iter().map(|p| p.held));
        }
    }
}

impl Drop for ZcSender {
    /// A sender dropped with notifications owed is a flow that failed: a
    /// peer that stopped reading, a connection cut. Its mappings are
    /// released as soon as no request can read them again — the socket
    /// holds its own references to the file's pages, and unmapping changes
    /// none of their bytes — so cut connections cannot keep the process's
    /// guard slots and mappings (256 of them left `send-zc` refused, and
    /// falling back to `sendfile`, for good). Heap memory could be reused
    /// and changed under the kernel: it waits for its notifications a
    /// bounded time, then is leaked.
    fn drop(&mut self) {
        for parked in &mut self.parked {
            parked.sending = false;
        }
        self.settle_requests(self.drop_patience);
        self.release_done();
        let (heap, gone): (VecDeque<Parked>, VecDeque<Parked>) = std::mem::take(&mut self.parked)
            .into_iter()
            .partition(|p| p.unanswered > 0 || matches!(p.held, Held::Heap(_)));
        drop(gone);
        self.parked = heap;
        if self.flush(Some(self.drop_patience)).is_err() {
            // A request that never answered may still read its memory, and
            // the kernel may still transmit heap pages: leaking them is
            // the only safe choice left.
            for parked in std::mem::take(&mut self.parked) {
                std::mem::forget(parked.held);
            }
        }
    }
}

impl ZcSender {
    /// Cancels the requests still in flight and waits, at most
    /// `patience`, for their first completions: until then the kernel may
    /// read their memory again when the socket takes more.
    fn settle_requests(&mut self, patience: Duration) {
        let in_flight: Vec<u64> = self
            .parked
            .iter()
            .filter(|p| p.unanswered > 0)
            .map(|p| p.id)
            .collect();
        if in_flight.is_empty() {
            return;
        }
        for id in in_flight {
            if self.cancel(id).is_err() {
                return;
            }
        }
        let started = Instant::now();
        while self.parked.iter().any(|p| p.unanswered > 0) {
            let left = patience.saturating_sub(started.elapsed());
            if left.is_zero() || self.wait_one(Some(left)).is_err() {
                return;
            }
        }
    }
}

/// Waits until `fd` can take more bytes (after a send said `EAGAIN`).
fn wait_writable(fd: BorrowedFd<'_>, patience: Option<Duration>) -> io::Result<()> {
    let mut fds = [rustix::event::PollFd::new(
        &fd,
        rustix::event::PollFlags::OUT,
    )];
    let timeout = patience.and_then(|p| rustix::event::Timespec::try_from(p).ok());
    match rustix::event::poll(&mut fds, timeout.as_ref()) {
        Ok(0) => Err(io::Error::from(io::ErrorKind::TimedOut)),
        Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;
    use std::thread;

    use super::*;

    /// A bound on every wait of these tests: a lost completion fails the
    /// test instead of hanging the suite.
    const BOUND: Duration = Duration::from_secs(60);

    fn sender() -> Option<ZcSender> {
        match ZcSender::new() {
            Ok(sender) => Some(sender),
            Err(e) => {
                eprintln!("skipped: no io_uring SEND_ZC here: {e}");
                None
            }
        }
    }

    /// The two completions of one request in either order: its result
    /// announcing a notification (`IORING_CQE_F_MORE`, 1 << 1) and the
    /// notification itself (`IORING_CQE_F_NOTIF`, 1 << 3). Either way the
    /// memory is released once both are taken, and not before.
    #[test]
    fn a_notification_taken_before_its_request_result_still_releases_the_memory() {
        const MORE: u32 = 1 << 1;
        const NOTIF: u32 = 1 << 3;
        for notification_first in [false, true] {
            let Some(mut zc) = sender() else { return };
            zc.parked.push_back(Parked {
                id: 7,
                held: Held::Heap(pattern(16)),
                unanswered: 1,
                owed: 0,
                sending: false,
            });
            let (first, second) = match notification_first {
                true => ((0, NOTIF), (16, MORE)),
                false => ((16, MORE), (0, NOTIF)),
            };
            zc.note(7, first.0, first.1);
            zc.release_done();
            assert_eq!(zc.parked(), 1, "released after one of two completions");
            zc.note(7, second.0, second.1);
            zc.release_done();
            assert_eq!(zc.parked(), 0, "notification first: {notification_first}");
        }
    }

    /// A loopback pair with the kernel's buffer sizing.
    fn plain_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (receiver, _) = listener.accept().unwrap();
        (sender, receiver)
    }

    /// A loopback pair whose receiving side has a small receive buffer
    /// (64 KiB against the sender's 2 MiB), so that a sent message mostly
    /// waits in the sender's queue (pages still referenced) until the
    /// receiver reads. Not the smallest: with a 4 KiB buffer a window that
    /// closed while the machine was busy reopened by less than a segment,
    /// unannounced, and the sender waited on its persist timer's backoff
    /// (53 s each time the copy kernels' tests ran beside this one).
    fn narrow_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        rustix::net::sockopt::set_socket_recv_buffer_size(&listener, 64 << 10).unwrap();
        let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        rustix::net::sockopt::set_socket_send_buffer_size(&sender, 2 << 20).unwrap();
        let (receiver, _) = listener.accept().unwrap();
        (sender, receiver)
    }

    fn pattern(len: usize) -> Box<[u8]> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn sends_every_byte_and_every_request_is_notified() {
        let Some(mut zc) = sender() else { return };
        // Default buffers: a 4 KiB receive window on loopback can stall in
        // TCP's persist timer for minutes on a busy machine.
        let (tx, mut rx) = plain_pair();
        let bytes = pattern(3 << 20);
        let expected = bytes.clone();
        let reader = thread::spawn(move || {
            let mut got = Vec::new();
            rx.read_to_end(&mut got).unwrap();
            got
        });
        let sent = zc.send(
            tx.as_fd(),
            Held::Heap(bytes),
            100..(3 << 20),
            256 << 10,
            Some(BOUND),
        );
        assert!(sent.error.is_none(), "{:?}", sent.error);
        assert_eq!(sent.bytes, (3 << 20) - 100);
        zc.flush(Some(BOUND)).unwrap();
        assert_eq!(zc.parked(), 0);
        drop(tx);
        let got = reader.join().unwrap();
        assert!(got == expected[100..], "received bytes differ");
        let (notifications, copied) = zc.notifications();
        assert!(notifications >= 12, "{notifications} notifications");
        // Loopback delivers locally: the kernel copies on receive.
        assert!(copied <= notifications);
    }

    /// The whole point of zero-copy: the memory is the socket's until the
    /// notification. Overwriting whatever `reclaim` hands back at once
    /// must never change what the peer receives.
    #[test]
    fn memory_comes_back_only_after_the_kernel_let_go_of_it() {
        let Some(mut zc) = sender() else { return };
        zc.keep_released();
        let (tx, mut rx) = narrow_pair();
        let bytes = pattern(512 << 10);
        let expected = bytes.clone();
        let reader = thread::spawn(move || {
            // Not reading for a while: most bytes wait in the sender's
            // queue, their pages referenced by the socket.
            thread::sleep(Duration::from_millis(300));
            let mut got = Vec::new();
            rx.read_to_end(&mut got).unwrap();
            got
        });
        let sent = zc.send(
            tx.as_fd(),
            Held::Heap(bytes),
            0..512 << 10,
            64 << 10,
            Some(BOUND),
        );
        assert!(sent.error.is_none(), "{:?}", sent.error);
        let mut reclaimed = 0;
        for mut held in zc.reclaim() {
            if let Held::Heap(bytes) = &mut held {
                bytes.fill(0xff);
            }
            reclaimed += 1;
        }
        zc.flush(Some(BOUND)).unwrap();
        for mut held in zc.reclaim() {
            if let Held::Heap(bytes) = &mut held {
                bytes.fill(0xff);
            }
            reclaimed += 1;
        }
        assert_eq!(reclaimed, 1);
        drop(tx);
        let got = reader.join().unwrap();
        let first_bad = got.iter().zip(expected.iter()).position(|(a, b)| a != b);
        assert_eq!(first_bad, None, "the peer received overwritten bytes");
        assert_eq!(got.len(), expected.len());
    }

    #[test]
    fn a_peer_that_reads_nothing_times_out_and_the_memory_is_kept() {
        let Some(mut zc) = sender() else { return };
        let (tx, rx) = narrow_pair();
        let sent = zc.send(
            tx.as_fd(),
            Held::Heap(pattern(16 << 20)),
            0..16 << 20,
            1 << 20,
            Some(Duration::from_millis(200)),
        );
        let error = sent.error.expect("a peer that reads nothing");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        assert!(sent.bytes < 16 << 20);
        // Its pages are still queued on the socket: not released.
        assert_eq!(zc.parked(), 1);
        assert_eq!(
            zc.flush(Some(Duration::from_millis(50)))
                .unwrap_err()
                .kind(),
            io::ErrorKind::TimedOut
        );
        // The peer going away frees the queue, and with it the pages.
        drop(rx);
        drop(tx);
        zc.flush(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(zc.parked(), 0);
    }

    #[test]
    fn a_unix_socket_is_refused_not_crashed() {
        let Some(mut zc) = sender() else { return };
        let (tx, _rx) = std::os::unix::net::UnixStream::pair().unwrap();
        let sent = zc.send(tx.as_fd(), Held::Heap(pattern(4096)), 0..4096, 4096, None);
        assert_eq!(sent.bytes, 0);
        let errno = sent.error.and_then(|e| e.raw_os_error());
        assert_eq!(errno, Some(libc::EOPNOTSUPP));
        zc.flush(Some(Duration::from_secs(5))).unwrap();
    }
}
