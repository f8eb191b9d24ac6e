//! An upload's body being read: what a PUT handler leaves once its checks
//! passed (the file made, where the bytes go), read by the connection's
//! worker without blocking — from the socket into the worker's buffer and
//! written at its offset — a share per wake-up, then finished by the
//! handler's second half (`upload::finish`, `upload_ranges::finish`).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use flexio::range::NewFile;
use rustix::io::Errno;

use super::chunked::{ChunkError, Chunked};
use super::wire::Link;

/// Where a body's bytes go, and what is done once all arrived.
pub(crate) enum Finish {
    /// A whole file, linked in under its name once complete. The file's
    /// name goes through `/proc/self/fd` of `parent`, which is held open
    /// until then.
    Whole {
        file: NewFile,
        parent: OwnedFd,
        /// Its name in `parent`.
        name: Vec<u8>,
        replaces: bool,
    },
    /// A piece of a ranged upload, recorded in the journal once written.
    Piece {
        file: OwnedFd,
        parent: OwnedFd,
        partial: String,
        journal: String,
        name: Vec<u8>,
        start: u64,
        end: u64,
        total: u64,
    },
}

/// A request body still being read.
pub(crate) struct Intake {
    pub finish: Finish,
    /// The file offset the next byte goes to.
    pub at: u64,
    /// Bytes still to read.
    pub left: u64,
    /// The body's length as announced.
    pub length: u64,
    /// The target, for messages.
    pub label: String,
    /// A chunked body's decoder (`left` and `length` are then what has
    /// arrived so far, counted by it).
    chunked: Option<Chunked>,
}

/// How far one call got.
pub(crate) enum Pumped {
    /// Every byte arrived and is written.
    Done,
    /// The socket has nothing more now.
    Blocked,
    /// The share of one wake-up is read; others go first.
    TurnOver,
}

/// Why an upload cannot be completed.
pub(crate) enum IntakeError {
    /// The client closed or failed before the whole body: nothing to
    /// answer.
    Client(String),
    /// Writing failed on this side (a full disk), or the body is
    /// malformed or too large: answered with this status.
    Write(u16, String),
}

impl From<ChunkError> for IntakeError {
    fn from(error: ChunkError) -> Self {
        match error {
            ChunkError::Malformed(why) => {
                IntakeError::Write(400, format!("malformed chunked body: {why}"))
            }
            ChunkError::TooLarge(cap) => IntakeError::Write(
                413,
                format!("the chunked body is over {cap} bytes, the free space when it began"),
            ),
        }
    }
}

impl Intake {
    /// A body of `length` bytes going to `finish`'s file from `at`.
    pub fn new(finish: Finish, at: u64, length: u64, label: String) -> Intake {
        Intake {
            finish,
            at,
            left: length,
            length,
            label,
            chunked: None,
        }
    }

    /// A chunked body of at most `cap` bytes going to `finish`'s file
    /// from 0.
    pub fn chunked(finish: Finish, cap: u64, label: String) -> Intake {
        Intake {
            chunked: Some(Chunked::new(cap)),
            ..Intake::new(finish, 0, 0, label)
        }
    }

    fn file(&self) -> BorrowedFd<'_> {
        match &self.finish {
            Finish::Whole { file, .. } => file.fd(),
            Finish::Piece { file, .. } => file.as_fd(),
        }
    }

    /// Reads what the socket holds, at most `budget` bytes, writing each
    /// read whole before the next (the buffer is empty whenever this
    /// returns).
    pub fn pump(
        &mut self,
        link: &mut Link<'_>,
        scratch: &mut [u8],
        budget: u64,
    ) -> Result<Pumped, IntakeError> {
        if self.chunked.is_some() {
            return self.pump_chunked(link, scratch, budget);
        }
        let mut taken = 0u64;
        while self.left > 0 {
            if taken >= budget {
                return Ok(Pumped::TurnOver);
            }
            let want = (self.left.min(scratch.len() as u64)) as usize;
            let got = match link.recv(&mut scratch[..want]) {
                Ok(0) => {
                    return Err(IntakeError::Client(format!(
                        "the client closed {} bytes before the end of the body",
                        self.left
                    )))
                }
                Ok(n) => n,
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => return Ok(Pumped::Blocked),
                Err(errno) => {
                    return Err(IntakeError::Client(format!(
                        "recv from the client: {errno}"
                    )))
                }
            };
            self.write_all(&scratch[..got])?;
            taken += got as u64;
            self.left -= got as u64;
        }
        Ok(Pumped::Done)
    }

    /// As [`Self::pump`] for a chunked body: never reads past its end
    /// ([`Chunked::room`]), so a request after it stays in the socket.
    fn pump_chunked(
        &mut self,
        link: &mut Link<'_>,
        scratch: &mut [u8],
        budget: u64,
    ) -> Result<Pumped, IntakeError> {
        let mut taken = 0u64;
        loop {
            let chunked = self.chunked.as_mut().expect("a chunked intake");
            if chunked.done() {
                self.length = chunked.received;
                return Ok(Pumped::Done);
            }
            if taken >= budget {
                return Ok(Pumped::TurnOver);
            }
            let want = usize::try_from(chunked.room())
                .unwrap_or(usize::MAX)
                .min(scratch.len());
            let got = match link.recv(&mut scratch[..want]) {
                Ok(0) => {
                    return Err(IntakeError::Client(format!(
                        "the client closed after {} bytes, before the end of the chunked body",
                        chunked.received
                    )))
                }
                Ok(n) => n,
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => return Ok(Pumped::Blocked),
                Err(errno) => {
                    return Err(IntakeError::Client(format!(
                        "recv from the client: {errno}"
                    )))
                }
            };
            let mut chunked = self.chunked.take().expect("a chunked intake");
            let fed = chunked.feed(&scratch[..got], |run| self.write_all(run));
            self.length = chunked.received;
            self.chunked = Some(chunked);
            fed?;
            taken += got as u64;
        }
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> Result<(), IntakeError> {
        while !bytes.is_empty() {
            match rustix::io::pwrite(self.file(), bytes, self.at) {
                Ok(n) => {
                    bytes = &bytes[n..];
                    self.at += n as u64;
                }
                Err(Errno::INTR) => {}
                Err(errno) => {
                    let status = if matches!(errno, Errno::NOSPC | Errno::DQUOT) {
                        507
                    } else {
                        500
                    };
                    return Err(IntakeError::Write(
                        status,
                        format!(
                            "writing failed: pwrite {} at {}: {errno}",
                            self.label, self.at
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
