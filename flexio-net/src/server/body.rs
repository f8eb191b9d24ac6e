//! A response body still to send, as a resumable list of segments — bytes
//! made here (a multipart part's head, tar headers and padding), ranges of
//! open files, tar members opened when reached — and the sending of one
//! share of it without blocking: at most a given number of bytes, from
//! where the last call stopped, until the socket takes no more (`EAGAIN`:
//! the worker then waits for `EPOLLOUT`). So a `?tar` download or a
//! multipart answer is sent like a plain file body, a share per wake-up.

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use flexio::MechanismName;
use rustix::io::Errno;

use super::growing::Waiter;
use super::shared::Shared;
use super::staged::{Staged, DEFAULT_WINDOW};
use super::wire::Link;
use crate::walk::open_beneath;

/// One piece of a body.
pub(crate) enum Segment {
    /// Bytes made by the server, sent from `at` on.
    Bytes { bytes: Vec<u8>, at: usize },
    /// Bytes `first..end` of the body's current file.
    Range { first: u64, end: u64 },
    /// The first `size` bytes of the file at `path` beneath the body's
    /// directory (a tar member): opened only when its turn comes, as the
    /// body's current file, so a tree of many files holds one descriptor
    /// at a time.
    Member { path: Vec<u8>, size: u64 },
    /// Bytes of the body's current file that is still arriving (a chain
    /// link's): each sent once its piece is there, the connection waiting
    /// for the next one ([`super::growing`]).
    Growing(super::growing::Stretch),
}

/// A body still being sent.
pub(crate) struct Body {
    /// What is left, in order.
    pub segments: VecDeque<Segment>,
    /// The file ranges are sent from, and its name for messages.
    pub file: Option<(OwnedFd, String)>,
    /// The directory tar members are opened beneath.
    pub dir: Option<OwnedFd>,
    /// Bytes left to reach the socket, over all segments and what is
    /// staged or in the pipe.
    pub left: u64,
    /// File bytes read or mapped and not yet sent.
    staged: Staged,
    /// splice's pipe, made for this body, and the bytes in it not yet
    /// sent: dropped with the body, so no byte outlives its response.
    pipe: Option<(OwnedFd, OwnedFd)>,
    in_pipe: usize,
}

/// Where one call to [`Body::send_turn`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    /// The whole body is sent.
    Done,
    /// The socket takes no more now: wait for `EPOLLOUT`.
    Blocked,
    /// The share is sent; other connections go first.
    Over,
}

impl Body {
    /// A body of segments: `file` is where its ranges come from, `dir`
    /// where its members are opened beneath.
    pub fn new(
        segments: VecDeque<Segment>,
        file: Option<(OwnedFd, String)>,
        dir: Option<OwnedFd>,
    ) -> Body {
        let left = segments.iter().map(Segment::len).sum();
        Body {
            segments,
            file,
            dir,
            left,
            staged: Staged::default(),
            pipe: None,
            in_pipe: 0,
        }
    }

    /// `length` bytes of `file` from `first`.
    pub fn file(file: OwnedFd, label: String, first: u64, length: u64) -> Body {
        let range = Segment::Range {
            first,
            end: first + length,
        };
        Body::new(VecDeque::from([range]), Some((file, label)), None)
    }

    /// Sends at most about `budget` bytes from where the last call
    /// stopped, until the body ends or the socket is full; returns the
    /// bytes sent and where it stopped.
    ///
    /// # Errors
    /// Sending fails, a member can no longer be opened as a regular file,
    /// or a file ends before the bytes announced for it: the response
    /// cannot be completed.
    pub fn send_turn(
        &mut self,
        shared: &Shared,
        link: &mut Link<'_>,
        peer: &str,
        budget: u64,
        waiter: Option<Waiter<'_>>,
    ) -> Result<(u64, Turn), String> {
        let mut sent = 0u64;
        let turn = loop {
            match self
                .flush(link)
                .map_err(|e| format!("send to {peer}: {e}"))?
            {
                Some(0) => {}
                Some(n) => {
                    sent += n as u64;
                    // Kept exact as bytes leave: whether more follows
                    // (MSG_MORE) is read from it.
                    self.left -= n as u64;
                    continue;
                }
                None => break Turn::Blocked,
            }
            if self.segments.is_empty() {
                break Turn::Done;
            }
            if sent >= budget {
                break Turn::Over;
            }
            match self.step(shared, link, peer, budget - sent, waiter)? {
                Some(n) => {
                    sent += n;
                    self.left -= n;
                }
                None => break Turn::Blocked,
            }
        };
        Ok((sent, turn))
    }

    /// Sends what is staged or in the pipe: `Some(bytes sent)` (0 when
    /// nothing waits there), `None` when the socket is full.
    fn flush(&mut self, link: &mut Link<'_>) -> std::io::Result<Option<usize>> {
        if self.staged.len() > 0 {
            let more = self.left > self.staged.len() as u64;
            let sent = send_some(link, self.staged.pending(), more)?;
            if let Some(n) = sent {
                self.staged.advance(n);
            }
            return Ok(sent);
        }
        if self.in_pipe > 0 {
            let (reader, _) = self.pipe.as_ref().expect("bytes in the pipe have one");
            // SPLICE_F_MORE on a body's last bytes would hold them back
            // as MSG_MORE does, until TCP's 200 ms corking timer.
            let mut flags = rustix::pipe::SpliceFlags::NONBLOCK;
            if self.left > self.in_pipe as u64 {
                flags |= rustix::pipe::SpliceFlags::MORE;
            }
            return match rustix::pipe::splice(reader, None, link.fd(), None, self.in_pipe, flags) {
                Ok(n) => {
                    self.in_pipe -= n;
                    Ok(Some(n))
                }
                Err(Errno::AGAIN) => Ok(None),
                Err(Errno::INTR) => Ok(Some(0)),
                Err(errno) => Err(errno.into()),
            };
        }
        Ok(Some(0))
    }

    /// Moves on with the first segment, at most `room` bytes: `Some(bytes
    /// sent)` (bytes staged or piped count when they leave), `None` when
    /// the socket is full.
    fn step(
        &mut self,
        shared: &Shared,
        link: &mut Link<'_>,
        peer: &str,
        room: u64,
        waiter: Option<Waiter<'_>>,
    ) -> Result<Option<u64>, String> {
        let more_after = self.segments.len() > 1;
        let segment = self.segments.front_mut().expect("a segment is left");
        let (sent, done) = match segment {
            Segment::Bytes { bytes, at } => {
                let length = (bytes.len() - *at).min(room as usize);
                // MSG_MORE while a file's bytes follow: a part head or a
                // tar header goes out with them, not in a segment of its own.
                let Some(n) = send_some(link, &bytes[*at..*at + length], more_after)
                    .map_err(|e| format!("send to {peer}: {e}"))?
                else {
                    return Ok(None);
                };
                *at += n;
                (n as u64, *at == bytes.len())
            }
            Segment::Member { path, size } => {
                let dir = self
                    .dir
                    .as_ref()
                    .expect("a body with members has a directory");
                let file = open_member(dir, path)?;
                self.file = Some((file, String::from_utf8_lossy(path).into_owned()));
                *segment = Segment::Range {
                    first: 0,
                    end: *size,
                };
                (0, false)
            }
            Segment::Range { first, end } => {
                let (file, label) = self.file.as_ref().expect("a body with ranges has a file");
                let length = (*end - *first).min(room);
                let out = Out {
                    socket: link.fd(),
                    tls: link.wire.is_tls(),
                    peer,
                    staged: &mut self.staged,
                    pipe: &mut self.pipe,
                    in_pipe: &mut self.in_pipe,
                };
                let Some(sent) = send_range(shared, file, label, out, first, length)? else {
                    return Ok(None);
                };
                (sent, *first == *end)
            }
            Segment::Growing(stretch) => {
                // Waiting for the next piece reads as a full socket: the
                // connection waits, bounded by the send timeout, until
                // the fetcher wakes it.
                let Some(upto) = stretch.ready(link.fd(), waiter)? else {
                    if link.wire.is_tls() {
                        let _ = link.flush();
                    }
                    return Ok(None);
                };
                let (file, label) = self.file.as_ref().expect("a growing body has its file");
                let out = Out {
                    socket: link.fd(),
                    tls: link.wire.is_tls(),
                    peer,
                    staged: &mut self.staged,
                    pipe: &mut self.pipe,
                    in_pipe: &mut self.in_pipe,
                };
                let length = (upto - stretch.first).min(room);
                let Some(sent) = send_range(shared, file, label, out, &mut stretch.first, length)?
                else {
                    return Ok(None);
                };
                (sent, stretch.first == stretch.end)
            }
        };
        if done {
            self.segments.pop_front();
        }
        Ok(Some(sent))
    }
}

/// Where a range's bytes go: the socket, or the body's staging buffer or
/// pipe on their way to it.
struct Out<'a> {
    socket: BorrowedFd<'a>,
    /// Over TLS the bytes are read into the staging buffer and written
    /// into the session, whatever the mechanism.
    tls: bool,
    peer: &'a str,
    staged: &'a mut Staged,
    pipe: &'a mut Option<(OwnedFd, OwnedFd)>,
    in_pipe: &'a mut usize,
}

/// Bytes per read of the read-write mechanism when `--chunk` is not
/// given, and per splice into the pipe (a pipe's default capacity).
pub(crate) const DEFAULT_READ: usize = 64 << 10;

/// Moves up to `length` bytes of `file` from `*first` on (advancing it):
/// through the block cache with `--cache` (a file it cannot take goes the
/// usual way), else with the server's mechanism — sendfile (`auto`) and
/// splice until the socket is full; read-write, direct (`O_DIRECT` reads)
/// and mmap (a mapped window) stage the bytes and send them from there.
/// No mechanism waits for the socket here. `Some(bytes sent)`, `None`
/// when the socket is full.
fn send_range(
    shared: &Shared,
    file: &OwnedFd,
    label: &str,
    out: Out<'_>,
    first: &mut u64,
    length: u64,
) -> Result<Option<u64>, String> {
    let ended = |at: u64| format!("{label} ended at byte {at}, before the bytes announced");
    if let Some(cache) = &shared.cache {
        let want = length.min(super::cached_body::PIECE as u64) as usize;
        let buffer = out.staged.buffer(want);
        match super::cached_body::read_range(cache, file, label, *first, buffer)
            .map_err(|e| e.to_string())?
        {
            Some(got) => {
                out.staged.filled(0, got);
                *first += got as u64;
                return Ok(Some(0));
            }
            None => out.staged.filled(0, 0),
        }
    }
    let mechanism = if out.tls {
        MechanismName::ReadWrite
    } else {
        shared.config.mechanism
    };
    let staged = |got: Result<usize, Errno>, op: &str, first: &mut u64| match got {
        Ok(0) => Err(ended(*first)),
        Ok(n) => {
            *first += n as u64;
            Ok(Some(0))
        }
        Err(Errno::INTR) => Ok(Some(0)),
        Err(errno) => Err(format!("{op} {label} at {first}: {errno}")),
    };
    let window = shared.config.chunk.unwrap_or(DEFAULT_WINDOW);
    match mechanism {
        MechanismName::Auto | MechanismName::Sendfile => {
            match rustix::fs::sendfile(out.socket, file, Some(first), length as usize) {
                Ok(0) => Err(ended(*first)),
                Ok(n) => Ok(Some(n as u64)),
                Err(Errno::AGAIN) => Ok(None),
                Err(Errno::INTR) => Ok(Some(0)),
                Err(errno) => Err(format!("sendfile {label} to {}: {errno}", out.peer)),
            }
        }
        MechanismName::Splice => {
            if out.pipe.is_none() {
                let pipe = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                    .map_err(|e| format!("pipe: {e}"))?;
                *out.pipe = Some(pipe);
            }
            let (_, writer) = out.pipe.as_ref().expect("made above");
            let want = (length as usize).min(DEFAULT_READ);
            let flags = rustix::pipe::SpliceFlags::empty();
            match rustix::pipe::splice(file, Some(first), writer, None, want, flags) {
                Ok(0) => Err(ended(*first)),
                Ok(n) => {
                    *out.in_pipe = n;
                    Ok(Some(0))
                }
                Err(Errno::INTR) => Ok(Some(0)),
                Err(errno) => Err(format!("splice {label}: {errno}")),
            }
        }
        MechanismName::Direct => {
            let got = out.staged.read_direct(file, *first, length, window);
            staged(got, "read (O_DIRECT)", first)
        }
        MechanismName::Mmap => staged(out.staged.map(file, *first, length, window), "mmap", first),
        MechanismName::ReadWrite => {
            let want = (length as usize).min(shared.config.chunk.unwrap_or(DEFAULT_READ));
            let got = loop {
                match rustix::io::pread(file, out.staged.buffer(want), *first) {
                    Err(Errno::INTR) => {}
                    got => break got,
                }
            };
            if let Ok(n) = got {
                out.staged.filled(0, n);
            }
            staged(got, "read", first)
        }
        // Refused when the server is bound (when the server is bound).
        _ => Err(format!("--via {mechanism} cannot send a body")),
    }
}

impl Segment {
    /// Bytes left in it.
    fn len(&self) -> u64 {
        match self {
            Segment::Bytes { bytes, at } => (bytes.len() - at) as u64,
            Segment::Range { first, end } => end - first,
            Segment::Member { size, .. } => *size,
            Segment::Growing(stretch) => stretch.len(),
        }
    }
}

/// A tar member opened again beneath the directory: a file replaced by a
/// symlink since the walk is refused, never followed; one that shrank ends
/// the transfer with an error (and a cut connection), one that grew is
/// sent as it was when walked.
fn open_member(dir: &OwnedFd, path: &[u8]) -> Result<OwnedFd, String> {
    let shown = String::from_utf8_lossy(path);
    let file = open_beneath(dir.as_fd(), path).map_err(|e| format!("open {shown}: {e}"))?;
    let stat = rustix::fs::fstat(&file).map_err(|e| format!("fstat {shown}: {e}"))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(format!("{shown} is no longer a regular file"));
    }
    Ok(file)
}

/// Sends what the link takes of `bytes` now, with `MSG_MORE` when more
/// follows: `Some(bytes sent)`, `None` when it takes nothing.
fn send_some(link: &mut Link<'_>, bytes: &[u8], more: bool) -> std::io::Result<Option<usize>> {
    match link.send(bytes, more) {
        Ok(n) => Ok(Some(n)),
        Err(Errno::AGAIN) => Ok(None),
        Err(errno) => Err(errno.into()),
    }
}
