//! A response body still to send, as a resumable list of segments — bytes
//! made here (a multipart part's head, tar headers and padding), ranges of
//! open files, tar members opened when reached — and the sending of one
//! turn of it: at most a given number of bytes, from where the last turn
//! stopped. So a `?tar` download or a multipart answer is sent in turns by
//! the body workers like a plain file body (see [`super::turns`]), never
//! by one worker from start to end.

use std::collections::VecDeque;
use std::net::TcpStream;
use std::os::fd::{AsFd, OwnedFd};

use flexio::range::{Mover, RangeEnd, RangeRequest};
use flexio::EndpointKind;
use rustix::net::SendFlags;

use super::Shared;
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
}

/// A body still being sent.
pub(crate) struct Body {
    /// What is left, in order.
    pub segments: VecDeque<Segment>,
    /// The file ranges are sent from, and its name for messages.
    pub file: Option<(OwnedFd, String)>,
    /// The directory tar members are opened beneath.
    pub dir: Option<OwnedFd>,
    /// Bytes left over all segments.
    pub left: u64,
    /// Whether the connection lives on once the body is sent.
    pub keep_alive: bool,
    /// The request line, for messages.
    pub request: String,
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
            keep_alive: true,
            request: String::new(),
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

    /// Sends at most `budget` bytes from where the last turn stopped
    /// (fewer only when the body ends); returns the bytes sent.
    ///
    /// # Errors
    /// Writing or sending fails, a member can no longer be opened as a
    /// regular file, or a file ends before the bytes announced for it: the
    /// response cannot be completed.
    pub fn send_turn(
        &mut self,
        shared: &Shared,
        socket: &TcpStream,
        peer: &str,
        mover: &mut Mover,
        budget: u64,
    ) -> Result<u64, String> {
        let mut sent = 0;
        while sent < budget {
            let more_after = self.segments.len() > 1;
            let Some(segment) = self.segments.front_mut() else {
                break;
            };
            let done = match segment {
                Segment::Bytes { bytes, at } => {
                    let length = (bytes.len() - *at).min((budget - sent) as usize);
                    // MSG_MORE while a file's bytes follow: a part head or a
                    // tar header goes out with them, not in a segment of its own.
                    send_all(socket, &bytes[*at..*at + length], more_after)
                        .map_err(|e| format!("send to {peer}: {e}"))?;
                    *at += length;
                    sent += length as u64;
                    *at == bytes.len()
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
                    false
                }
                Segment::Range { first, end } => {
                    let (file, label) = self.file.as_ref().expect("a body with ranges has a file");
                    let length = (*end - *first).min(budget - sent);
                    let moved =
                        send_file(shared, file, label, socket, peer, mover, *first, length)?;
                    if moved < length {
                        return Err(format!(
                            "{label} ended at byte {}, before the {end} announced",
                            *first + moved
                        ));
                    }
                    *first += moved;
                    sent += moved;
                    *first == *end
                }
            };
            if done {
                self.segments.pop_front();
            }
        }
        self.left -= sent;
        Ok(sent)
    }
}

impl Segment {
    /// Bytes left in it.
    fn len(&self) -> u64 {
        match self {
            Segment::Bytes { bytes, at } => (bytes.len() - at) as u64,
            Segment::Range { first, end } => end - first,
            Segment::Member { size, .. } => *size,
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

/// Sends `length` bytes of `file` from `first` to `socket`: through the
/// block cache with `--cache` (a file it cannot take goes the usual way),
/// else with the server's mechanism. Returns the bytes sent.
#[allow(clippy::too_many_arguments)]
fn send_file(
    shared: &Shared,
    file: &OwnedFd,
    label: &str,
    socket: &TcpStream,
    peer: &str,
    mover: &mut Mover,
    first: u64,
    length: u64,
) -> Result<u64, String> {
    if let Some(cache) = &shared.cache {
        if super::cached_body::send_range(cache, file, label, socket, first, length)
            .map_err(|e| e.to_string())?
        {
            return Ok(length);
        }
    }
    let source = RangeEnd::with_kind(file.as_fd(), EndpointKind::File, label);
    let sink = RangeEnd::with_kind(socket.as_fd(), EndpointKind::Tcp, peer);
    let mut request = RangeRequest::new(first, 0, Some(length)).via(shared.config.mechanism);
    request.idle_timeout = Some(shared.config.send_timeout);
    if let Some(chunk) = shared.config.chunk {
        request.params.chunk = chunk;
    }
    let report = mover
        .move_range(&source, &sink, &request, None)
        .map_err(|e| e.to_string())?;
    for fallback in &report.fallbacks {
        eprintln!("flexio serve: {label}: fell back: {fallback:?}");
    }
    Ok(report.bytes)
}

/// Sends all of `bytes` on the blocking socket (its write timeout bounds a
/// send that makes no progress), with `MSG_MORE` when more follows.
fn send_all(socket: &TcpStream, bytes: &[u8], more: bool) -> std::io::Result<()> {
    let flags = if more {
        SendFlags::MORE | SendFlags::NOSIGNAL
    } else {
        SendFlags::NOSIGNAL
    };
    let mut sent = 0;
    while sent < bytes.len() {
        match rustix::net::send(socket, &bytes[sent..], flags) {
            Ok(n) => sent += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}
