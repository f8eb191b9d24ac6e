//! Fetching pieces: each stream keeps one connection and one [`Mover`],
//! takes the next piece nobody took, asks for it by `Range` (with
//! `If-Range`, so a changed file fails the get), checks the answer is
//! exactly that piece, and splices its body into the shared file at its
//! offset.

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use flexio::range::{Mover, RangeEnd, RangeRequest, RangeTotals};
use flexio::{EndpointKind, MechanismName};

use super::connection::{Connection, Url};
use super::resume::Partial;
use super::GetOptions;
use crate::error::{Error, Result};
use crate::manifest::{chunk_hash, hash_chunks, CHUNK_SIZE};
use crate::ranges::parse_content_range;

/// Moves `length` body bytes of piece `[offset, offset + length)` from the
/// connection into the file: spliced from a plain socket, or decrypted
/// through user space from a TLS session.
#[allow(clippy::too_many_arguments)]
pub(super) fn receive(
    connection: &mut Connection,
    file: BorrowedFd<'_>,
    label: &str,
    offset: u64,
    length: u64,
    total: u64,
    options: &GetOptions,
    mover: &mut Mover,
) -> Result<flexio::range::RangeReport> {
    let piece = Piece {
        file,
        label,
        offset,
        length,
        total,
    };
    receive_hashed(connection, &piece, options, mover, None)
}

/// Where one body goes: `length` bytes at `offset` of a file of `total`.
pub(super) struct Piece<'a> {
    pub(super) file: BorrowedFd<'a>,
    pub(super) label: &'a str,
    pub(super) offset: u64,
    pub(super) length: u64,
    pub(super) total: u64,
}

/// [`receive`], and the piece's chunks hashed into `early`: a spliced body
/// is read back from the file (its bytes never pass through this process),
/// a decrypted one is hashed as it passes.
pub(super) fn receive_hashed(
    connection: &mut Connection,
    piece: &Piece<'_>,
    options: &GetOptions,
    mover: &mut Mover,
    early: Option<&EarlyHashes>,
) -> Result<flexio::range::RangeReport> {
    let Piece {
        file,
        label,
        offset,
        length,
        total,
    } = *piece;
    let ended = |endpoint: String, at: u64| {
        Error::protocol(
            endpoint,
            format!(
                "the server closed the connection at byte {at} of {total} (in the body of bytes {offset}..{})",
                offset + length
            ),
        )
    };
    let Some(socket) = connection.stream.plain_fd() else {
        return receive_decrypted(connection, piece, options, early).map_err(|error| match error {
            Error::Move(flexio::Error::SourceEnded {
                endpoint,
                offset: at,
                ..
            }) => ended(endpoint, at),
            other => other,
        });
    };
    let source = RangeEnd::with_kind(socket, EndpointKind::Tcp, connection.url.to_string());
    let sink = RangeEnd::with_kind(file, EndpointKind::File, label);
    let mut request = RangeRequest::new(offset, offset, Some(length)).via(options.mechanism);
    request.idle_timeout = Some(options.timeout);
    request.shared_rate = options.rate_bucket.clone();
    let report = mover
        .move_range(
            &source,
            &sink,
            &request,
            options.progress.as_deref().map(|p| p.counter()),
        )
        .map_err(|error| match error {
            flexio::Error::SourceEnded {
                endpoint,
                offset: at,
                ..
            } => ended(endpoint, at),
            other => Error::Move(other),
        })?;
    if let Some(early) = early {
        early.add(file, offset, length, label)?;
    }
    Ok(report)
}

/// The bytes of a body a TLS session decrypts, gathered a chunk at a time
/// (one write per chunk, not per 16 KiB record), hashed into `early` while
/// in hand, and written at their offsets, within the shared rate; the
/// socket's timeout bounds each wait.
fn receive_decrypted(
    connection: &mut Connection,
    piece: &Piece<'_>,
    options: &GetOptions,
    early: Option<&EarlyHashes>,
) -> Result<flexio::range::RangeReport> {
    let Piece {
        file,
        label,
        offset,
        length,
        ..
    } = *piece;
    let started = std::time::Instant::now();
    let peer = connection.url.to_string();
    let mut buffer = vec![0u8; (CHUNK_SIZE as usize).min(length.max(1) as usize)];
    let mut done = 0u64;
    let mut syscalls = 0;
    while done < length {
        let room = buffer.len().min((length - done) as usize);
        let mut filled = 0;
        while filled < room {
            let read = std::io::Read::read(&mut connection.stream, &mut buffer[filled..room])
                .map_err(|e| Error::io("recv (TLS) from", &peer, Some(offset + done), e))?;
            if read == 0 {
                return Err(Error::Move(flexio::Error::SourceEnded {
                    endpoint: peer,
                    offset: offset + done + filled as u64,
                    end: offset + length,
                }));
            }
            if let Some(bucket) = &options.rate_bucket {
                std::thread::sleep(bucket.delay_for(std::time::Instant::now(), read as u64));
                bucket.charge(read as u64, std::time::Instant::now());
            }
            filled += read;
            syscalls += 1;
        }
        if let Some(early) = early {
            early.add_bytes(offset + done, &buffer[..filled]);
        }
        let mut written = 0;
        while written < filled {
            let at = offset + done + written as u64;
            written += rustix::io::pwrite(file, &buffer[written..filled], at)
                .map_err(|e| Error::io("pwrite", label, Some(at), e))?;
            syscalls += 1;
        }
        if let Some(progress) = &options.progress {
            progress.add(filled as u64);
        }
        done += filled as u64;
    }
    Ok(flexio::range::RangeReport {
        bytes: length,
        mechanism_used: Some(MechanismName::ReadWrite),
        syscalls,
        wall_ns: started.elapsed().as_nanos() as u64,
        ..Default::default()
    })
}

/// What the streams fetching pieces share.
pub(super) struct Pieces<'a> {
    pub(super) url: &'a Url,
    pub(super) file: BorrowedFd<'a>,
    pub(super) label: &'a str,
    pub(super) total: u64,
    pub(super) piece: u64,
    /// The first byte of every piece to fetch, in order.
    pub(super) pending: Vec<u64>,
    /// The index in `pending` of the next piece nobody took yet.
    pub(super) next: AtomicUsize,
    /// Where whole pieces are noted, with `--resume`.
    pub(super) journal: Option<&'a Partial>,
    /// Set by a stream that failed: the others stop.
    pub(super) failed: AtomicBool,
    pub(super) options: &'a GetOptions,
    /// The `If-Range` line (or nothing) every piece request carries.
    pub(super) if_range: String,
    /// Chunk hashes taken as pieces arrive, for the manifest check.
    pub(super) early: Option<&'a EarlyHashes>,
}

/// BLAKE3 of every chunk, taken by each stream right after its piece
/// arrived (while the other streams still receive), so that checking the
/// manifest at the end does not read the whole file again.
pub(super) struct EarlyHashes {
    hashes: Mutex<Vec<Option<String>>>,
    total: u64,
}

impl EarlyHashes {
    /// For a file of `total` bytes fetched in pieces of `piece` bytes; none
    /// when pieces do not start on chunk boundaries.
    pub(super) fn new(total: u64, piece: u64) -> Option<Self> {
        piece.is_multiple_of(CHUNK_SIZE).then(|| EarlyHashes {
            hashes: Mutex::new(vec![None; total.div_ceil(CHUNK_SIZE) as usize]),
            total,
        })
    }

    /// Hashes the chunks of `length` bytes at `offset` (a chunk boundary).
    pub(super) fn add(
        &self,
        file: BorrowedFd<'_>,
        offset: u64,
        length: u64,
        label: &str,
    ) -> Result<()> {
        let first = offset / CHUNK_SIZE;
        let end = (offset + length).min(self.total).div_ceil(CHUNK_SIZE);
        let hashes = hash_chunks(file, self.total, first..end)
            .map_err(|e| Error::io("read", label, Some(offset), e))?;
        let mut all = self.hashes.lock().unwrap();
        for (index, hash) in (first..end).zip(hashes) {
            all[index as usize] = Some(hash);
        }
        Ok(())
    }

    /// Hashes `bytes`, which start at `offset`: whole chunks (and the
    /// file's last, short one) are recorded; a part of a chunk is not, and
    /// leaves that chunk to be found missing by [`EarlyHashes::all`].
    pub(super) fn add_bytes(&self, offset: u64, bytes: &[u8]) {
        if !offset.is_multiple_of(CHUNK_SIZE) {
            return;
        }
        let mut hashed = Vec::new();
        for (i, chunk) in bytes.chunks(CHUNK_SIZE as usize).enumerate() {
            let start = offset + (i as u64) * CHUNK_SIZE;
            let whole =
                chunk.len() as u64 == CHUNK_SIZE || start + chunk.len() as u64 == self.total;
            if whole {
                hashed.push((start / CHUNK_SIZE, chunk_hash(chunk)));
            }
        }
        let mut all = self.hashes.lock().unwrap();
        for (index, hash) in hashed {
            all[index as usize] = Some(hash);
        }
    }

    /// Every chunk's hash, when every chunk was hashed.
    pub(super) fn all(self) -> Option<Vec<String>> {
        self.hashes.into_inner().unwrap().into_iter().collect()
    }
}

impl Pieces<'_> {
    /// One stream's loop: take the next piece, ask for it, splice it in;
    /// until no piece is left or another stream failed. Returns its
    /// reports and its connection, when still open.
    pub(super) fn fetch(
        &self,
        connection: Option<Connection>,
    ) -> Result<(RangeTotals, Option<Connection>)> {
        let mut connection = connection;
        let mut totals = RangeTotals::default();
        let mut mover = Mover::new();
        let outcome = self.fetch_into(&mut connection, &mut totals, &mut mover);
        if outcome.is_err() {
            self.failed.store(true, Ordering::Relaxed);
        }
        outcome.map(|()| (totals, connection))
    }

    fn fetch_into(
        &self,
        connection: &mut Option<Connection>,
        totals: &mut RangeTotals,
        mover: &mut Mover,
    ) -> Result<()> {
        let (url, total, options) = (self.url, self.total, self.options);
        loop {
            if self.failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            let Some(&offset) = self.pending.get(self.next.fetch_add(1, Ordering::Relaxed)) else {
                return Ok(());
            };
            let last = (offset + self.piece).min(total) - 1;
            let mut open = match connection.take() {
                Some(open) => open,
                None => Connection::open(url, options.timeout, &options.tls)?,
            };
            open.send_get(
                &url.target,
                &format!("Range: bytes={offset}-{last}\r\n{}", self.if_range),
            )?;
            let response = open.read_response()?;
            let peer = url.to_string();
            let promised = response.content_length(&peer)?;
            let range = response
                .header("content-range")
                .and_then(parse_content_range);
            if response.status != 206
                || range != Some((Some((offset, last)), Some(total)))
                || promised != Some(last - offset + 1)
            {
                return Err(Error::protocol(
                    peer,
                    format!(
                        "asked for bytes {offset}-{last} of {total}, got {} with Content-Range {:?} and Content-Length {promised:?}",
                        response.status,
                        response.header("content-range")
                    ),
                ));
            }
            let piece = Piece {
                file: self.file,
                label: self.label,
                offset,
                length: last - offset + 1,
                total,
            };
            totals.add(receive_hashed(
                &mut open, &piece, options, mover, self.early,
            )?);
            if let Some(journal) = self.journal {
                journal.record(offset, last - offset + 1)?;
            }
            if !response.closes() {
                *connection = Some(open);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(length: usize) -> Vec<u8> {
        (0..length).map(|i| (i * 7 + i / 4099) as u8).collect()
    }

    #[test]
    fn bytes_in_hand_give_the_hash_of_each_whole_chunk_and_of_the_short_last() {
        let total = 2 * CHUNK_SIZE + 100;
        let data = bytes(total as usize);
        let early = EarlyHashes::new(total, CHUNK_SIZE).unwrap();
        early.add_bytes(0, &data[..CHUNK_SIZE as usize]);
        early.add_bytes(CHUNK_SIZE, &data[CHUNK_SIZE as usize..]);
        let expected: Vec<String> = data.chunks(CHUNK_SIZE as usize).map(chunk_hash).collect();
        assert_eq!(early.all(), Some(expected));
    }

    #[test]
    fn part_of_a_chunk_is_not_taken_for_the_whole() {
        let total = 2 * CHUNK_SIZE;
        let data = bytes(total as usize);
        let early = EarlyHashes::new(total, CHUNK_SIZE).unwrap();
        // The first chunk cut short, the second given from its middle.
        early.add_bytes(0, &data[..CHUNK_SIZE as usize - 1]);
        early.add_bytes(CHUNK_SIZE + 1, &data[CHUNK_SIZE as usize + 1..]);
        assert_eq!(early.all(), None);
    }
}
