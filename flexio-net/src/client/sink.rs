//! Where a fetched file goes: its name (given, inside a given directory,
//! or the URL's last name), a check that the disk has room for it, and the
//! file itself — new, leaving nothing behind on failure, or with
//! `--resume` partial with a journal kept for the next run.

use std::collections::HashSet;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use flexio::range::NewFile;

use super::connection::Url;
use super::resume::Partial;
use crate::error::{Error, Result};

/// Where the body goes: a new file that leaves nothing when dropped, or
/// with `--resume` a partial file and its journal that stay for the next
/// run.
pub(super) enum Sink {
    New(NewFile),
    Partial(Partial),
}

impl Sink {
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Sink::New(file) => file.fd(),
            Sink::Partial(partial) => partial.fd(),
        }
    }

    pub(super) fn journal(&self) -> Option<&Partial> {
        match self {
            Sink::New(_) => None,
            Sink::Partial(partial) => Some(partial),
        }
    }

    /// The pieces already whole from an earlier run.
    pub(super) fn done(&self) -> HashSet<u64> {
        match self {
            Sink::New(_) => HashSet::new(),
            Sink::Partial(partial) => partial.done.clone(),
        }
    }

    pub(super) fn commit(self, total: u64, fsync: bool) -> Result<()> {
        match self {
            Sink::New(file) => Ok(file.commit(total, fsync)?),
            Sink::Partial(partial) => partial.commit(total, fsync),
        }
    }

    /// `error`, saying what became of the bytes: none left for a new file;
    /// kept for the next run when resuming.
    pub(super) fn fail(self, error: Error, label: &str) -> Error {
        match self {
            Sink::New(_) => Error::Stopped {
                source: Box::new(error),
                what_remains: format!("nothing was written to {label}"),
            },
            Sink::Partial(partial) => Error::Stopped {
                source: Box::new(error),
                what_remains: format!(
                    "what arrived is kept in {}: the same get run again fetches only the rest",
                    partial.path().display()
                ),
            },
        }
    }
}

/// The destination: `given`, or inside it when it is a directory, or the
/// URL's last name.
pub(super) fn destination_for(url: &Url, given: Option<&Path>) -> Result<PathBuf> {
    let name = || -> Result<PathBuf> {
        let path = url.target.split('?').next().unwrap_or_default();
        let last = path.rsplit('/').next().unwrap_or_default();
        let decoded = crate::names::percent_decode(last.as_bytes()).unwrap_or_default();
        if !crate::names::is_safe_component(&decoded) {
            return Err(Error::Usage(format!(
                "{url}: the URL names no file to save as; give DEST"
            )));
        }
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&decoded)))
    };
    match given {
        Some(path) if path.is_dir() => Ok(path.join(name()?)),
        Some(path) => Ok(path.to_path_buf()),
        None => name(),
    }
}

/// Refuses a body larger than the space free where it goes, before a byte
/// is written.
pub(super) fn check_space(destination: &Path, length: u64) -> Result<()> {
    let directory = match destination.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let stat = rustix::fs::statvfs(directory)
        .map_err(|e| Error::io("statvfs", directory.display().to_string(), None, e))?;
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    if length > free {
        // Not the user's mistake but the disk's state: a failure at run
        // time (exit 1), not a usage error.
        return Err(Error::io(
            "check the free space for",
            destination.display().to_string(),
            None,
            std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                format!("the server announces {length} bytes, more than the {free} free there; not fetched"),
            ),
        ));
    }
    Ok(())
}
