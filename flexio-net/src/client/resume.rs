//! `get --resume`: a ranged fetch that survives being stopped. The bytes go
//! to `.NAME.flexio-partial` beside the destination and every piece, once
//! wholly written, is appended to `.NAME.flexio-journal` with its length
//! and the BLAKE3 of its bytes as read back from the file; the journal's
//! first line names the URL, the length, the server's validator (a strong
//! ETag or Last-Modified) and the piece size. Run again with the same
//! server version, each journaled piece is read back and hashed: one that
//! matches is kept, one that does not — never written (a journal edited by
//! hand), cut off (a shorter file), or lost in a power cut (zeros) — is
//! fetched again, so a rerun heals instead of failing on the same piece
//! each time. Any other version starts afresh. Only a whole file is
//! renamed to its name (after the manifest check, when the server has
//! one); a failed run keeps both files for the next one.

use std::collections::HashSet;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{FileType, Mode, OFlags};

use crate::error::{Error, Result};

/// The journal format's first word (1: offsets alone, not read any more:
/// such a journal starts afresh).
const MAGIC: &str = "flexio-resume-2";

/// The most a journal may hold: a line per piece (about 100 bytes), so a
/// TiB in 1 MiB pieces is about 100 MiB. A larger one starts afresh.
const MAX_JOURNAL_BYTES: u64 = 128 << 20;

/// A partial file and its journal.
pub(super) struct Partial {
    file: OwnedFd,
    path: PathBuf,
    journal: Mutex<std::fs::File>,
    journal_path: PathBuf,
    destination: PathBuf,
    /// Pieces (by first byte) the journal says are whole and whose bytes
    /// in the file still hash as journaled.
    pub(super) done: HashSet<u64>,
    /// Journaled pieces whose bytes did not (fetched again).
    pub(super) healed: u64,
}

fn beside(destination: &Path, suffix: &str) -> PathBuf {
    let name = destination
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    destination.with_file_name(format!(".{name}.flexio-{suffix}"))
}

/// One journal line: a piece wholly written, by its first byte, length
/// and the BLAKE3 (hex) of its bytes.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Journaled {
    pub offset: u64,
    pub length: u64,
    pub blake3: String,
}

/// The pieces a journal's bytes claim, for a file of `total` bytes in
/// pieces of `piece` on the grid `0, piece, 2·piece, …`: none unless its
/// first line is `header`; only whole lines (a kill may cut the last),
/// each on the grid with the length a piece there has, once. Every number
/// is checked before use, so no journal — edited, cut or hostile — is a
/// panic or an allocation of its choosing.
pub(super) fn journaled(bytes: &[u8], header: &str, total: u64, piece: u64) -> Vec<Journaled> {
    let whole = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(end) => &bytes[..end],
        None => return Vec::new(),
    };
    let mut lines = whole.split(|&b| b == b'\n');
    if lines.next() != Some(header.as_bytes()) || piece == 0 {
        return Vec::new();
    }
    let mut seen = HashSet::new();
    lines
        .filter_map(|line| {
            let line = std::str::from_utf8(line).ok()?;
            let mut fields = line.split('\t');
            let offset: u64 = fields.next()?.parse().ok()?;
            let length: u64 = fields.next()?.parse().ok()?;
            let blake3 = fields.next()?;
            let expected = total.checked_sub(offset)?.min(piece);
            (fields.next().is_none()
                && offset < total
                && offset.is_multiple_of(piece)
                && length == expected
                && blake3.len() == 64
                && blake3.bytes().all(|b| b.is_ascii_hexdigit())
                && seen.insert(offset))
            .then(|| Journaled {
                offset,
                length,
                blake3: blake3.to_ascii_lowercase(),
            })
        })
        .collect()
}

/// BLAKE3 (hex) of `length` bytes of `file` at `offset`; `None` when the
/// file ends before them.
fn hash_of(file: BorrowedFd<'_>, offset: u64, length: u64) -> std::io::Result<Option<String>> {
    let mut hasher = blake3::Hasher::new();
    let mut buffer = vec![0u8; length.min(1 << 20) as usize];
    let mut done = 0u64;
    while done < length {
        let want = (length - done).min(buffer.len() as u64) as usize;
        let got = rustix::io::pread(file, &mut buffer[..want], offset + done)?;
        if got == 0 {
            return Ok(None);
        }
        hasher.update(&buffer[..got]);
        done += got as u64;
    }
    Ok(Some(hasher.finalize().to_hex().to_string()))
}

/// Opens `path` for the resume files without following a symlink and
/// without waiting on a FIFO's other end; refuses anything but a regular
/// file, naming it.
fn open_regular(path: &Path, flags: OFlags) -> Result<OwnedFd> {
    let label = path.display().to_string();
    let fd = rustix::fs::open(
        path,
        flags | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| Error::io("open", &label, None, e))?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| Error::io("fstat", &label, None, e))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(Error::Usage(format!(
            "{label}: not a regular file; remove it"
        )));
    }
    Ok(fd)
}

impl Partial {
    /// Opens the partial file of `destination` for this `header` (URL,
    /// length, validator, piece size) of a file of `total` bytes in pieces
    /// of `piece`, keeping each piece a journal with the same header names
    /// whose bytes still hash as journaled, else starting afresh.
    ///
    /// # Errors
    /// [`Error::Usage`] where the partial file or the journal is not a
    /// regular file (a FIFO, a device: never waited on); the errors of
    /// opening, reading and writing them.
    pub(super) fn open(
        destination: &Path,
        header: &str,
        total: u64,
        piece: u64,
    ) -> Result<Partial> {
        let path = beside(destination, "partial");
        let journal_path = beside(destination, "journal");
        let label = path.display().to_string();
        let journal_label = journal_path.display().to_string();
        let header = format!("{MAGIC}\t{header}");
        // Opened (made if missing) before it is read, so a FIFO or a
        // device there is refused at once, never waited on.
        let journal_fd = open_regular(&journal_path, OFlags::RDWR | OFlags::CREATE)?;
        let claimed = read_capped(journal_fd.as_fd(), MAX_JOURNAL_BYTES)
            .map(|bytes| journaled(&bytes, &header, total, piece))
            .unwrap_or_default();
        let file = open_regular(&path, OFlags::RDWR | OFlags::CREATE)?;
        let mut done = HashSet::new();
        let mut healed = 0;
        for piece in &claimed {
            let hash = hash_of(file.as_fd(), piece.offset, piece.length)
                .map_err(|e| Error::io("read", &label, Some(piece.offset), e))?;
            if hash.as_deref() == Some(piece.blake3.as_str()) {
                done.insert(piece.offset);
            } else {
                healed += 1;
            }
        }
        if done.is_empty() {
            rustix::fs::ftruncate(&file, 0).map_err(|e| Error::io("truncate", &label, None, e))?;
        }
        // The journal written anew: its header and the pieces that held.
        let mut journal = std::fs::File::from(journal_fd);
        let kept: String = claimed
            .iter()
            .filter(|p| done.contains(&p.offset))
            .map(|p| format!("{}\t{}\t{}\n", p.offset, p.length, p.blake3))
            .collect();
        rustix::fs::ftruncate(&journal, 0)
            .map_err(|e| Error::io("truncate", &journal_label, None, e))?;
        journal
            .write_all(format!("{header}\n{kept}").as_bytes())
            .and_then(|()| journal.flush())
            .map_err(|e| Error::io("write", &journal_label, None, e))?;
        Ok(Partial {
            file,
            path,
            journal: Mutex::new(journal),
            journal_path,
            destination: destination.to_path_buf(),
            done,
            healed,
        })
    }

    /// The descriptor the pieces are written through.
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// Notes that the `length` bytes at `offset` are wholly written: one
    /// appended line with the BLAKE3 of the bytes read back from the file
    /// (a kill leaves at worst a cut last line, ignored; bytes a power cut
    /// lost no longer hash so on the next run, which fetches them again).
    pub(super) fn record(&self, offset: u64, length: u64) -> Result<()> {
        let label = self.path.display().to_string();
        let hash = hash_of(self.file.as_fd(), offset, length)
            .map_err(|e| Error::io("read", &label, Some(offset), e))?
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{label}: ends before the piece at {offset} just written; kept for the next run"
                ))
            })?;
        self.journal
            .lock()
            .unwrap()
            .write_all(format!("{offset}\t{length}\t{hash}\n").as_bytes())
            .map_err(|e| Error::io("write", self.journal_path.display().to_string(), None, e))
    }

    /// Gives the whole file its name and removes the journal.
    pub(super) fn commit(self, total: u64, fsync: bool) -> Result<()> {
        let label = self.path.display().to_string();
        let stat =
            rustix::fs::fstat(&self.file).map_err(|e| Error::io("fstat", &label, None, e))?;
        if stat.st_size as u64 != total {
            return Err(Error::Usage(format!(
                "{label}: holds {} bytes, not {total}; kept for the next run",
                stat.st_size
            )));
        }
        if fsync {
            rustix::fs::fsync(&self.file).map_err(|e| Error::io("fsync", &label, None, e))?;
        }
        std::fs::rename(&self.path, &self.destination)
            .map_err(|e| Error::io("rename", &label, None, e))?;
        let _ = std::fs::remove_file(&self.journal_path);
        Ok(())
    }

    /// The partial file's path, for messages.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

/// At most `cap` bytes of the regular file `file` (already checked to be
/// one); `None` when it holds more.
fn read_capped(file: BorrowedFd<'_>, cap: u64) -> Option<Vec<u8>> {
    let size = rustix::fs::fstat(file).ok()?.st_size as u64;
    if size > cap {
        return None;
    }
    let mut bytes = vec![0u8; size as usize];
    let mut done = 0;
    while done < bytes.len() {
        match rustix::io::pread(file, &mut bytes[done..], done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(_) => return None,
        }
    }
    bytes.truncate(done);
    Some(bytes)
}
