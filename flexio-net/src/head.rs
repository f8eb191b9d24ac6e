//! Reading an HTTP head off a socket without taking a byte of what follows
//! it: bytes are peeked, the head parsed with `httparse`, and only the
//! head's own bytes are consumed. The body (or the next pipelined request)
//! stays in the socket, where `splice` or the next read finds it — so a
//! body never passes through a user buffer, even its first bytes.
//!
//! A peek that finds an incomplete head consumes what it saw (all of it is
//! head), so waiting for more never spins on the same bytes. A source that
//! holds what it read (a TLS session's plaintext, the server's plain wire)
//! peeks at its own buffer instead, with one read for a head.

use std::os::fd::BorrowedFd;
use std::time::Instant;

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::RecvFlags;

/// The most bytes a request or response head may take (status or request
/// line and headers): past it, 431 or an error.
pub const MAX_HEAD: usize = 16 * 1024;

/// The most header lines a head may have.
pub const MAX_HEADERS: usize = 64;

/// A parsed head's header lines as owned `(lowercased name, value)`
/// pairs, a value that is not UTF-8 made lossy: the form the server's
/// requests and the client's responses both keep.
pub(crate) fn owned_headers(headers: &[httparse::Header<'_>]) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect()
}

/// What one step of reading a head found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The head is whole: `head` holds exactly its bytes.
    Complete,
    /// Part of a head arrived and was consumed; more is needed.
    Partial,
    /// Nothing to read now (a non-blocking step).
    WouldBlock,
    /// The peer closed the connection (after `consumed` head bytes).
    Closed,
    /// The head is larger than [`MAX_HEAD`] or has more than
    /// [`MAX_HEADERS`] lines.
    TooLarge,
    /// The bytes are not HTTP.
    Malformed(String),
}

/// Whether `bytes` hold a whole head: `Ok(Some(len))` with its length,
/// `Ok(None)` when more is needed.
pub(crate) type Completeness = fn(&[u8]) -> Result<Option<usize>, httparse::Error>;

/// A request head is whole?
pub(crate) fn request_complete(bytes: &[u8]) -> Result<Option<usize>, httparse::Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => Ok(Some(len)),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(error) => Err(error),
    }
}

/// A response head is whole?
pub(crate) fn response_complete(bytes: &[u8]) -> Result<Option<usize>, httparse::Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => Ok(Some(len)),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Where a head is read from: bytes can be seen before they are taken.
pub(crate) trait Source {
    /// Copies what is there now into `into` without consuming it: 0 when
    /// the peer has closed, `EAGAIN` when nothing is there yet.
    fn peek_some(&mut self, into: &mut [u8]) -> Result<usize, Errno>;
    /// Appends to `head` what is there now, `room` bytes at most, without
    /// consuming it: how many (0 when the peer has closed), `EAGAIN` when
    /// nothing is there yet. A source holding what it read appends from
    /// it; a socket peeks into `head`'s zeroed tail.
    fn peek_append(&mut self, head: &mut Vec<u8>, room: usize) -> Result<usize, Errno> {
        let old = head.len();
        head.resize(old + room, 0);
        let peeked = self.peek_some(&mut head[old..]);
        head.truncate(old + *peeked.as_ref().unwrap_or(&0));
        peeked
    }
    /// Consumes the `into.len()` bytes a peek has seen (and copied to
    /// `into`, which a socket fills again).
    ///
    /// # Errors
    /// The socket fails or ends before them.
    fn consume(&mut self, into: &mut [u8]) -> std::io::Result<()>;
}

/// A socket read directly, waiting or not.
struct Socket<'a> {
    fd: BorrowedFd<'a>,
    nonblocking: bool,
}

impl Source for Socket<'_> {
    fn peek_some(&mut self, into: &mut [u8]) -> Result<usize, Errno> {
        let mut flags = RecvFlags::PEEK;
        if self.nonblocking {
            flags |= RecvFlags::DONTWAIT;
        }
        rustix::net::recv(self.fd, into, flags).map(|(n, _)| n)
    }

    fn consume(&mut self, into: &mut [u8]) -> std::io::Result<()> {
        take_peeked(self.fd, into)
    }
}

/// One step: peek what the socket holds (without waiting when
/// `nonblocking`), and consume either the rest of the head or everything
/// seen when the head is not yet whole. `head` keeps the bytes consumed so
/// far.
pub(crate) fn step(
    socket: BorrowedFd<'_>,
    head: &mut Vec<u8>,
    complete: Completeness,
    nonblocking: bool,
) -> std::io::Result<Step> {
    let mut source = Socket {
        fd: socket,
        nonblocking,
    };
    step_from(&mut source, head, complete)
}

/// [`step`] on any [`Source`] (a TLS session's plaintext).
pub(crate) fn step_from(
    source: &mut impl Source,
    head: &mut Vec<u8>,
    complete: Completeness,
) -> std::io::Result<Step> {
    let old = head.len();
    if old >= MAX_HEAD {
        return Ok(Step::TooLarge);
    }
    let peeked = loop {
        match source.peek_append(head, MAX_HEAD - old) {
            Ok(n) => break n,
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => return Ok(Step::WouldBlock),
            Err(errno) => return Err(errno.into()),
        }
    };
    if peeked == 0 {
        return Ok(Step::Closed);
    }
    let seen = old + peeked;
    let (take, step) = match complete(&head[..seen]) {
        Ok(Some(len)) => (len, Step::Complete),
        Ok(None) if seen >= MAX_HEAD => {
            head.truncate(old);
            return Ok(Step::TooLarge);
        }
        Ok(None) => (seen, Step::Partial),
        // More header lines than the cap is a head too large, not a
        // malformed one.
        Err(httparse::Error::TooManyHeaders) => {
            head.truncate(old);
            return Ok(Step::TooLarge);
        }
        Err(error) => {
            head.truncate(old);
            return Ok(Step::Malformed(error.to_string()));
        }
    };
    source.consume(&mut head[old..take])?;
    head.truncate(take);
    Ok(step)
}

/// Takes exactly `into.len()` bytes that a peek has already seen.
pub(crate) fn take_peeked(socket: BorrowedFd<'_>, into: &mut [u8]) -> std::io::Result<()> {
    let mut done = 0;
    while done < into.len() {
        match rustix::net::recv(socket, &mut into[done..], RecvFlags::DONTWAIT) {
            Ok((0, _)) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok((n, _)) => done += n,
            Err(Errno::INTR) => continue,
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

/// Reads a whole head, waiting at most until `deadline` in all.
/// Returns the final step: `Complete`, `Closed`, `TooLarge`, `Malformed`,
/// or `WouldBlock` when the deadline passed.
pub(crate) fn read_until(
    socket: BorrowedFd<'_>,
    head: &mut Vec<u8>,
    complete: Completeness,
    deadline: Instant,
) -> std::io::Result<Step> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if !wait_readable(socket, left)? {
            return Ok(Step::WouldBlock);
        }
        match step(socket, head, complete, true)? {
            Step::Partial | Step::WouldBlock => continue,
            done => return Ok(done),
        }
    }
}

/// Waits up to `left` for `socket` to be readable (or closed).
pub(crate) fn wait_readable(
    socket: BorrowedFd<'_>,
    left: std::time::Duration,
) -> std::io::Result<bool> {
    let timeout = Timespec::try_from(left).unwrap_or(Timespec {
        tv_sec: i64::MAX,
        tv_nsec: 0,
    });
    let mut fds = [PollFd::from_borrowed_fd(socket, PollFlags::IN)];
    loop {
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => return Ok(false),
            Ok(_) => return Ok(true),
            Err(Errno::INTR) => continue,
            Err(errno) => return Err(errno.into()),
        }
    }
}
