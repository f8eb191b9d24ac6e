//! A new regular file written beside its destination and put in its place
//! only after the last byte, so that a failed or interrupted flow never
//! leaves a partial file under the final name nor destroys what was there.
//!
//! Where the file system supports it (ext4, xfs, btrfs, tmpfs) the file is
//! an unnamed `O_TMPFILE` in the destination's directory: nothing is
//! visible until the end, so not even `kill -9` or a power cut leaves a
//! trace. At the end it is linked in: straight under the destination's name
//! when that is free, else under a temporary name that then takes the
//! destination's place in one step (see [`super::replace`]; a link cannot
//! replace).
//!
//! Inside a tree copy's hidden staging directory (see `tree::staging`)
//! the file is made under its own name at once ([`FileSink::create_staged`]):
//! the whole staging directory is the temporary, put in place by one
//! rename at the end, so one `open(O_CREAT | O_EXCL)` replaces the
//! `O_TMPFILE` and the `linkat` of each file (about a third of a small
//! file's CPU on ext4). A file that fails is removed from there.
//!
//! Elsewhere it is a named `.NAME.flexio-PID-RANDOM` (see
//! [`super::temp_name`]), registered with [`crate::cleanup`] so that a
//! signal's watcher removes it, locked so that no sweep takes it for a dead
//! process's, and put in place the same way at the end. Creating one first sweeps the
//! directory of temporary files whose flexio process died.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags, CWD};
use rustix::io::Errno;

use super::open::process_umask;
use super::replace::replace;
use super::temp_name::{sweep_stale, temp_name};
use crate::cleanup::{self, Tracked};
use crate::error::{Error, Result};

/// The temporary file and the name it will take.
pub(crate) struct FileSink {
    file: OwnedFd,
    /// `None` for an unnamed `O_TMPFILE`.
    named: Option<Tracked>,
    destination: PathBuf,
    directory: PathBuf,
    mode: u32,
    /// Whether [`FileSink::finish`] must set the mode.
    chmod_at_finish: bool,
    /// A file is known to be at the destination: an unnamed file goes in
    /// through a temporary name and a rename, without first trying a link
    /// that would fail with `EEXIST`.
    replacing: bool,
    /// Made under its final name inside a staging directory: removed
    /// unless finished.
    staged: Option<Unfinished>,
}

/// A file made under its final name in a staging directory, removed when
/// dropped unless [`Unfinished::keep`] was called: a failed file of a
/// staged tree leaves nothing.
struct Unfinished {
    path: PathBuf,
    kept: bool,
}

impl Unfinished {
    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl FileSink {
    /// Creates the temporary file in the destination's directory. It is
    /// removed again if the flow fails (when this is dropped).
    pub fn create(destination: &Path, mode: Option<u32>) -> Result<Self> {
        Self::create_as(destination, mode, true)
    }

    /// Creates an unnamed temporary file when `try_unnamed` is set and the
    /// file system supports it, else a named one.
    fn create_as(destination: &Path, mode: Option<u32>, try_unnamed: bool) -> Result<Self> {
        let label = destination.display().to_string();
        let directory = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let name = destination
            .file_name()
            .ok_or_else(|| Error::usage(format!("{label}: not a file name")))?;
        let mode = mode.unwrap_or_else(|| 0o666 & !process_umask());
        let missing_directory = || {
            Error::usage(format!(
                "{label}: directory {} does not exist",
                directory.display()
            ))
        };
        let unnamed = match try_unnamed {
            true => open_unnamed(directory, mode).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
                    missing_directory()
                }
                _ => Error::io("create", &label, None, e),
            })?,
            false => None,
        };
        if unnamed.is_none() && !directory.is_dir() {
            return Err(missing_directory());
        }
        let (file, named) = match unnamed {
            Some(file) => (file, None),
            None => {
                sweep_stale(directory);
                let (file, tracked) = create_named(directory, name)
                    .map_err(|e| Error::io("create", &label, None, e))?;
                (file, Some(tracked))
            }
        };
        // An unnamed file was made with its final mode, which the umask
        // cannot have changed when it has no bit the umask clears (nor a
        // special bit, which creation may drop): no fchmod then, a system
        // call saved per file of a tree.
        let chmod_at_finish = named.is_some() || mode & (process_umask() | 0o7000) != 0;
        Ok(FileSink {
            file,
            named,
            destination: destination.to_path_buf(),
            directory: directory.to_path_buf(),
            mode,
            chmod_at_finish,
            replacing: false,
            staged: None,
        })
    }

    /// Creates the file under its final name, which must be free, in a
    /// staging directory that this process made, holds and puts in place
    /// as a whole (see `tree::staging`): nothing outside it sees the file
    /// before the staging directory is renamed, so it needs no temporary
    /// of its own. It is removed again if the flow fails.
    pub fn create_staged(destination: &Path, mode: u32) -> Result<Self> {
        crate::cleanup::stop_if_dying();
        let label = destination.display().to_string();
        let directory = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let file = rustix::fs::open(
            destination,
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode & 0o777),
        )
        .map_err(|e| Error::io("create", &label, None, e))?;
        Ok(FileSink {
            file,
            named: None,
            destination: destination.to_path_buf(),
            directory: directory.to_path_buf(),
            mode,
            // As for an unnamed file: the creation gave the final mode
            // unless the umask or a special bit was in the way.
            chmod_at_finish: mode & (process_umask() | 0o7000) != 0,
            replacing: false,
            staged: Some(Unfinished {
                path: destination.to_path_buf(),
                kept: false,
            }),
        })
    }

    /// Says a file is at the destination, to be replaced.
    pub fn replacing(mut self) -> Self {
        self.replacing = true;
        self
    }

    /// The descriptor to write through.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// Gives the file its final mode, optionally makes it durable, and puts
    /// it in place of the destination (then syncs the directory when
    /// `fsync` is set, so that the new name itself survives a crash).
    pub fn finish(self, fsync: bool) -> Result<()> {
        let label = self.destination.display().to_string();
        if self.chmod_at_finish {
            rustix::fs::fchmod(self.fd(), Mode::from_raw_mode(self.mode))
                .map_err(|e| Error::io("fchmod", &label, None, e))?;
        }
        if fsync {
            rustix::fs::fsync(self.fd()).map_err(|e| Error::io("fsync", &label, None, e))?;
        }
        if let Some(staged) = self.staged {
            // Already under its name; the staging directory goes in place
            // (and is synced) as a whole.
            staged.keep();
            return Ok(());
        }
        match self.named {
            Some(tracked) => tracked
                .settle(|temp| replace(temp, &self.destination))
                .map_err(|e| Error::io("rename", &label, None, e))?,
            None => link_in(
                self.file.as_fd(),
                &self.directory,
                &self.destination,
                self.replacing,
            )
            .map_err(|e| Error::io("link", &label, None, e))?,
        }
        if fsync {
            let handle = File::open(&self.directory)
                .map_err(|e| Error::io("open", self.directory.display().to_string(), None, e))?;
            rustix::fs::fsync(&handle)
                .map_err(|e| Error::io("fsync", self.directory.display().to_string(), None, e))?;
        }
        Ok(())
    }
}

/// An unnamed file in `directory`, made with `mode` (no one can open it
/// by name before it is linked in), or `None` where the file system (or
/// the kernel) has no `O_TMPFILE`.
fn open_unnamed(directory: &Path, mode: u32) -> std::io::Result<Option<OwnedFd>> {
    match rustix::fs::open(
        directory,
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode & 0o777),
    ) {
        Ok(file) => Ok(Some(file)),
        // EOPNOTSUPP: this file system; EISDIR: a kernel before 3.11;
        // EINVAL: a file system that rejects the flags.
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => Ok(None),
        Err(errno) => Err(errno.into()),
    }
}

/// A new named temporary file beside the destination, registered for
/// removal and locked (see [`super::temp_name`]).
fn create_named(directory: &Path, name: &OsStr) -> std::io::Result<(OwnedFd, Tracked)> {
    let mut tries = 0;
    loop {
        let path = directory.join(temp_name(name));
        let created = cleanup::create(&path, |path| {
            let file = rustix::fs::open(
                path,
                OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            rustix::fs::flock(&file, FlockOperation::LockExclusive)?;
            Ok(file)
        });
        match created {
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) && tries < 100 => tries += 1,
            other => return other,
        }
    }
}

/// Gives the unnamed `file` the destination's name: a link where the name
/// is free, else a link under a temporary name renamed over it.
fn link_in(
    file: BorrowedFd<'_>,
    directory: &Path,
    destination: &Path,
    replacing: bool,
) -> std::io::Result<()> {
    if !replacing {
        match link_unnamed(file, destination) {
            Err(Errno::EXIST) => {}
            other => return other.map_err(Into::into),
        }
    }
    let name = destination.file_name().unwrap_or(OsStr::new("file"));
    let mut tries = 0;
    let (_, tracked) = loop {
        let temp = directory.join(temp_name(name));
        match cleanup::create(&temp, |temp| link_unnamed(file, temp).map_err(Into::into)) {
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) && tries < 100 => tries += 1,
            other => break other?,
        }
    };
    tracked.settle(|temp| replace(temp, destination))
}

/// `linkat(2)` of an `O_TMPFILE` descriptor: with `AT_EMPTY_PATH` where
/// we may (it needs CAP_DAC_READ_SEARCH, which root has; no path lookup in
/// `/proc`, a few microseconds per file of a tree), else through
/// `/proc/self/fd` (any user).
fn link_unnamed(file: BorrowedFd<'_>, to: &Path) -> rustix::io::Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static EMPTY_PATH_REFUSED: AtomicBool = AtomicBool::new(false);
    if !EMPTY_PATH_REFUSED.load(Ordering::Relaxed) {
        match rustix::fs::linkat(file, "", CWD, to, AtFlags::EMPTY_PATH) {
            Err(Errno::NOENT)
                if to
                    .parent()
                    .is_none_or(|p| p.as_os_str().is_empty() || p.is_dir()) =>
            {
                EMPTY_PATH_REFUSED.store(true, Ordering::Relaxed);
            }
            other => return other,
        }
    }
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    rustix::fs::linkat(CWD, proc_path.as_str(), CWD, to, AtFlags::SYMLINK_FOLLOW)
}

#[cfg(test)]
mod tests {
    use super::super::replace::tests::names;
    use super::*;
    use std::io::Write;

    fn write(sink: &FileSink, bytes: &[u8]) {
        let mut file = File::from(sink.file.try_clone().unwrap());
        file.write_all(bytes).unwrap();
    }

    #[test]
    fn an_unnamed_sink_shows_nothing_until_finished_then_replaces_the_destination() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("dst");
        std::fs::write(&destination, b"old").unwrap();
        let sink = FileSink::create(&destination, Some(0o640)).unwrap();
        if sink.named.is_some() {
            eprintln!("skipped: {} has no O_TMPFILE", dir.path().display());
            return;
        }
        write(&sink, b"new");
        assert_eq!(names(dir.path()), ["dst"]);
        sink.finish(true).unwrap();
        assert_eq!(names(dir.path()), ["dst"]);
        assert_eq!(std::fs::read(&destination).unwrap(), b"new");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&destination)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o640);
    }

    #[test]
    fn an_unnamed_sink_dropped_unfinished_leaves_the_old_content() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("dst");
        std::fs::write(&destination, b"old").unwrap();
        let sink = FileSink::create(&destination, None).unwrap();
        write(&sink, b"partial");
        drop(sink);
        assert_eq!(names(dir.path()), ["dst"]);
        assert_eq!(std::fs::read(&destination).unwrap(), b"old");
    }

    #[test]
    fn a_named_sink_is_registered_locked_and_renamed_in() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("dst");
        let sink = FileSink::create_as(&destination, None, false).unwrap();
        let temp = sink.named.as_ref().unwrap().path().to_path_buf();
        assert!(sink.named.as_ref().unwrap().is_registered());
        // Another open file description cannot take the lock: a sweep in
        // another process would leave this file alone.
        let other = File::open(&temp).unwrap();
        assert_eq!(
            rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive),
            Err(Errno::WOULDBLOCK)
        );
        write(&sink, b"bytes");
        sink.finish(false).unwrap();
        assert!(!temp.exists());
        assert_eq!(names(dir.path()), ["dst"]);
        assert_eq!(std::fs::read(&destination).unwrap(), b"bytes");
    }

    #[test]
    fn a_named_sink_dropped_unfinished_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("dst");
        let sink = FileSink::create_as(&destination, None, false).unwrap();
        let temp = sink.named.as_ref().unwrap().path().to_path_buf();
        drop(sink);
        assert!(!temp.exists());
        assert!(names(dir.path()).is_empty());
    }

    /// A PID no process has: a child's, after it was reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn stale_temp_of_a_dead_flexio_is_swept_when_writing_into_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir
            .path()
            .join(format!(".dst.flexio-{}-abcd1234", dead_pid()));
        std::fs::write(&stale, vec![0u8; 4096]).unwrap();
        // A live process's temp (ours) and one whose lock is held (a flexio
        // in another PID namespace) stay.
        let ours = dir
            .path()
            .join(format!(".other.flexio-{}-abcd1234", std::process::id()));
        std::fs::write(&ours, b"live").unwrap();
        let locked = dir
            .path()
            .join(format!(".x.flexio-{}-zzzz9999", dead_pid()));
        std::fs::write(&locked, b"held").unwrap();
        let holder = File::open(&locked).unwrap();
        rustix::fs::flock(&holder, FlockOperation::LockExclusive).unwrap();
        // Not ours at all.
        let foreign = dir.path().join(".dst.flexio-aB3xYz");
        std::fs::write(&foreign, b"old style").unwrap();

        let destination = dir.path().join("dst");
        let sink = FileSink::create_as(&destination, None, false).unwrap();
        sink.finish(false).unwrap();
        let left = names(dir.path());
        assert!(!stale.exists(), "{left:?}");
        assert!(
            ours.exists() && locked.exists() && foreign.exists(),
            "{left:?}"
        );
        assert_eq!(left.len(), 4, "{left:?}");
    }

    #[test]
    fn a_staged_sink_is_made_under_its_name_and_removed_unless_finished() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("file");
        let sink = FileSink::create_staged(&destination, 0o640).unwrap();
        write(&sink, b"partial");
        drop(sink);
        assert!(names(dir.path()).is_empty());
        let sink = FileSink::create_staged(&destination, 0o640).unwrap();
        write(&sink, b"whole");
        sink.finish(false).unwrap();
        assert_eq!(names(dir.path()), ["file"]);
        assert_eq!(std::fs::read(&destination).unwrap(), b"whole");
        // Never over something already there.
        assert!(FileSink::create_staged(&destination, 0o640).is_err());
        assert_eq!(std::fs::read(&destination).unwrap(), b"whole");
    }

    #[test]
    fn a_255_byte_destination_name_gets_a_temp_name_that_fits() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("n".repeat(255));
        for temp in [true, true, false] {
            let sink = FileSink::create_as(&destination, None, temp).unwrap();
            write(&sink, b"long");
            sink.finish(false).unwrap();
            assert_eq!(std::fs::read(&destination).unwrap(), b"long");
        }
    }
}
