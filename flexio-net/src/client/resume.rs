//! `get --resume`: a ranged fetch that survives being stopped. The bytes go
//! to `.NAME.flexio-partial` beside the destination and every piece, once
//! wholly written, is appended to `.NAME.flexio-journal`, whose first line
//! names the URL, the length, the server's validator (a strong ETag or
//! Last-Modified) and the piece size. Run again with the same server
//! version, only the pieces not in the journal are fetched; any other
//! version starts afresh. Only a whole file is renamed to its name (after
//! the manifest check, when the server has one); a failed run keeps both
//! files for the next one.

use std::collections::HashSet;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{Mode, OFlags};

use crate::error::{Error, Result};

/// The journal format's first word.
const MAGIC: &str = "flexio-resume-1";

/// A partial file and its journal.
pub(super) struct Partial {
    file: OwnedFd,
    path: PathBuf,
    journal: Mutex<std::fs::File>,
    journal_path: PathBuf,
    destination: PathBuf,
    /// Pieces (by first byte) the journal says are whole.
    pub(super) done: HashSet<u64>,
}

fn beside(destination: &Path, suffix: &str) -> PathBuf {
    let name = destination
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    destination.with_file_name(format!(".{name}.flexio-{suffix}"))
}

impl Partial {
    /// Opens the partial file of `destination` for this `header` (URL,
    /// length, validator, piece size), keeping what a journal with the
    /// same header says is done, else starting afresh.
    pub(super) fn open(destination: &Path, header: &str) -> Result<Partial> {
        let path = beside(destination, "partial");
        let journal_path = beside(destination, "journal");
        let label = path.display().to_string();
        let header = format!("{MAGIC}\t{header}");
        // Only a regular file of sane size is a journal (a line per piece:
        // a TiB in 1 MiB pieces is about 16 MiB); anything else starts
        // afresh.
        let previous = flexio::read_regular_file_capped(&journal_path, 64 << 20)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        let mut lines = previous.lines();
        let same = lines.next() == Some(header.as_str());
        // The last line may be cut short by a kill: only whole lines count.
        let complete = previous.ends_with('\n');
        let mut done: HashSet<u64> = if same {
            lines.filter_map(|line| line.parse().ok()).collect()
        } else {
            HashSet::new()
        };
        if same && !complete {
            done.clear();
        }
        let mut flags = OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        if done.is_empty() {
            flags |= OFlags::TRUNC;
        }
        let file = rustix::fs::open(&path, flags, Mode::from_raw_mode(0o644))
            .map_err(|e| Error::io("open", &label, None, e))?;
        let stat = rustix::fs::fstat(&file).map_err(|e| Error::io("fstat", &label, None, e))?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(Error::Usage(format!(
                "{label}: not a regular file; remove it"
            )));
        }
        let journal_label = journal_path.display().to_string();
        let mut options = std::fs::OpenOptions::new();
        options
            .create(true)
            .custom_flags(OFlags::NOFOLLOW.bits() as i32)
            .mode(0o644);
        let mut journal = if done.is_empty() {
            let mut fresh = options
                .clone()
                .write(true)
                .truncate(true)
                .open(&journal_path)
                .map_err(|e| Error::io("open", &journal_label, None, e))?;
            fresh
                .write_all(format!("{header}\n").as_bytes())
                .map_err(|e| Error::io("write", &journal_label, None, e))?;
            fresh
        } else {
            options
                .append(true)
                .open(&journal_path)
                .map_err(|e| Error::io("open", &journal_label, None, e))?
        };
        journal
            .flush()
            .map_err(|e| Error::io("write", &journal_label, None, e))?;
        Ok(Partial {
            file,
            path,
            journal: Mutex::new(journal),
            journal_path,
            destination: destination.to_path_buf(),
            done,
        })
    }

    /// The descriptor the pieces are written through.
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// Notes that the piece starting at `offset` is wholly written (one
    /// appended line: a kill leaves at worst a cut last line, ignored).
    pub(super) fn record(&self, offset: u64) -> Result<()> {
        self.journal
            .lock()
            .unwrap()
            .write_all(format!("{offset}\n").as_bytes())
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
