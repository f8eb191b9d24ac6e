//! A new regular file written beside its destination and renamed over it
//! only after the last byte, so that a failed flow never leaves a partial
//! file under the final name nor destroys what was there.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use rustix::fs::Mode;
use tempfile::NamedTempFile;

use super::open::process_umask;
use crate::error::{Error, Result};

/// The temporary file and the name it will take.
pub(crate) struct FileSink {
    temp: NamedTempFile,
    destination: PathBuf,
    mode: u32,
}

impl FileSink {
    /// Creates `.NAME.flexio-XXXXXX` in the destination's directory. The
    /// file is removed again if the flow fails (when this is dropped).
    pub fn create(destination: &Path, mode: Option<u32>) -> Result<Self> {
        let label = destination.display().to_string();
        let directory = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        if !directory.is_dir() {
            return Err(Error::usage(format!(
                "{label}: directory {} does not exist",
                directory.display()
            )));
        }
        let name = destination
            .file_name()
            .ok_or_else(|| Error::usage(format!("{label}: not a file name")))?;
        let prefix = format!(".{}.flexio-", name.to_string_lossy());
        let temp = tempfile::Builder::new()
            .prefix(&prefix)
            .tempfile_in(directory)
            .map_err(|e| Error::io("create", &label, None, e))?;
        Ok(FileSink {
            temp,
            destination: destination.to_path_buf(),
            mode: mode.unwrap_or_else(|| 0o666 & !process_umask()),
        })
    }

    /// The descriptor to write through.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.temp.as_file().as_fd()
    }

    /// Gives the file its final mode, optionally makes it durable, and
    /// renames it over the destination (then syncs the directory when
    /// `fsync` is set, so that the rename itself survives a crash).
    pub fn finish(self, fsync: bool) -> Result<()> {
        let label = self.destination.display().to_string();
        rustix::fs::fchmod(self.fd(), Mode::from_raw_mode(self.mode))
            .map_err(|e| Error::io("fchmod", &label, None, e))?;
        if fsync {
            rustix::fs::fsync(self.fd()).map_err(|e| Error::io("fsync", &label, None, e))?;
        }
        self.temp
            .persist(&self.destination)
            .map_err(|e| Error::io("rename", &label, None, e.error))?;
        if fsync {
            let directory = match self.destination.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            };
            let handle = File::open(directory)
                .map_err(|e| Error::io("open", directory.display().to_string(), None, e))?;
            rustix::fs::fsync(&handle)
                .map_err(|e| Error::io("fsync", directory.display().to_string(), None, e))?;
        }
        Ok(())
    }
}
