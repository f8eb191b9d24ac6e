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

/// The mode a new file ends with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NewMode {
    /// These bits less the process's umask: what `open(2)` gives a file
    /// it creates, and what `cp` gives a new copy. The kernel applies the
    /// umask (or the directory's default ACL instead) as the file is made,
    /// so the umask is read only for a named temporary file, made `0600`
    /// and set at the end.
    LessUmask(u32),
    /// Exactly these bits, special ones included (a replaced file's own
    /// mode, or `cp -p`'s): set at the end, since creation is subject to
    /// the umask.
    Exact(u32),
}

impl NewMode {
    /// The bits to set once the file is written, or `None` when creating
    /// it with its bits (`created_with_them`) already gave it its mode.
    fn to_set_at_finish(self, created_with_them: bool) -> Option<u32> {
        match self {
            // Creation may drop a special bit; it is set at the end.
            NewMode::LessUmask(bits) if created_with_them && bits & 0o7000 == 0 => None,
            NewMode::LessUmask(bits) => Some(bits & 0o7777 & !process_umask()),
            NewMode::Exact(bits) => Some(bits & 0o7777),
        }
    }

    /// The bits to create the file with.
    fn to_create_with(self) -> Mode {
        let (NewMode::LessUmask(bits) | NewMode::Exact(bits)) = self;
        Mode::from_raw_mode(bits & 0o777)
    }
}

/// The temporary file and the name it will take.
pub(crate) struct FileSink {
    file: OwnedFd,
    /// `None` for an unnamed `O_TMPFILE`.
    named: Option<Tracked>,
    destination: PathBuf,
    directory: PathBuf,
    /// The mode [`FileSink::finish`] sets, when creation did not give it.
    mode_at_finish: Option<u32>,
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

/// A file that cannot be made, in cp's words.
fn cannot_create(label: &str, error: std::io::Error) -> Error {
    Error::io(
        "cannot create regular file",
        format!("'{label}'"),
        None,
        error,
    )
}

impl FileSink {
    /// Creates the temporary file in the destination's directory. It is
    /// removed again if the flow fails (when this is dropped).
    pub fn create(destination: &Path, mode: NewMode) -> Result<Self> {
        Self::create_as(destination, mode, true)
    }

    /// Creates an unnamed temporary file when `try_unnamed` is set and the
    /// file system supports it, else a named one.
    fn create_as(destination: &Path, mode: NewMode, try_unnamed: bool) -> Result<Self> {
        let label = destination.display().to_string();
        let directory = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let name = destination
            .file_name()
            .ok_or_else(|| Error::usage(format!("{label}: not a file name")))?;
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
                _ => cannot_create(&label, e),
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
                let (file, tracked) =
                    create_named(directory, name).map_err(|e| cannot_create(&label, e))?;
                (file, Some(tracked))
            }
        };
        let mode_at_finish = mode.to_set_at_finish(named.is_none());
        Ok(FileSink {
            file,
            named,
            destination: destination.to_path_buf(),
            directory: directory.to_path_buf(),
            mode_at_finish,
            replacing: false,
            staged: None,
        })
    }

    /// Creates the file under its final name, which must be free, in a
    /// staging directory that this process made, holds and puts in place
    /// as a whole (see `tree::staging`): nothing outside it sees the file
    /// before the staging directory is renamed, so it needs no temporary
    /// of its own. It is removed again if the flow fails.
    pub fn create_staged(destination: &Path, mode: NewMode) -> Result<Self> {
        crate::cleanup::stop_if_dying();
        let label = destination.display().to_string();
        let directory = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let file = rustix::fs::open(
            destination,
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC,
            mode.to_create_with(),
        )
        .map_err(|e| Error::io("create", &label, None, e))?;
        Ok(FileSink {
            file,
            named: None,
            destination: destination.to_path_buf(),
            directory: directory.to_path_buf(),
            mode_at_finish: mode.to_set_at_finish(true),
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
        if let Some(mode) = self.mode_at_finish {
            rustix::fs::fchmod(self.fd(), Mode::from_raw_mode(mode))
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
fn open_unnamed(directory: &Path, mode: NewMode) -> std::io::Result<Option<OwnedFd>> {
    match rustix::fs::open(
        directory,
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        mode.to_create_with(),
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
        let sink = FileSink::create(&destination, NewMode::Exact(0o640)).unwrap();
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
        let sink = FileSink::create(&destination, NewMode::LessUmask(0o666)).unwrap();
        write(&sink, b"partial");
        drop(sink);
        assert_eq!(names(dir.path()), ["dst"]);
        assert_eq!(std::fs::read(&destination).unwrap(), b"old");
    }

    #[test]
    fn a_named_sink_is_registered_locked_and_renamed_in() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("dst");
        let sink = FileSink::create_as(&destination, NewMode::LessUmask(0o666), false).unwrap();
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
        let sink = FileSink::create_as(&destination, NewMode::LessUmask(0o666), false).unwrap();
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
        let sink = FileSink::create_as(&destination, NewMode::LessUmask(0o666), false).unwrap();
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
    fn every_way_of_making_a_file_ends_with_the_mode_asked() {
        use std::os::unix::fs::PermissionsExt;
        let umask = process_umask();
        let dir = tempfile::tempdir().unwrap();
        type Make = fn(&Path, NewMode) -> Result<FileSink>;
        let made: [(&str, Make); 3] = [
            ("unnamed", FileSink::create),
            ("named", |path, mode| FileSink::create_as(path, mode, false)),
            ("staged", FileSink::create_staged),
        ];
        for (way, make) in made {
            for (mode, expected) in [
                (NewMode::LessUmask(0o777), 0o777 & !umask),
                (NewMode::Exact(0o777), 0o777),
                (NewMode::Exact(0o600), 0o600),
            ] {
                let destination = dir.path().join(format!("{way}-{mode:?}"));
                make(&destination, mode).unwrap().finish(false).unwrap();
                let got = std::fs::metadata(&destination)
                    .unwrap()
                    .permissions()
                    .mode();
                assert_eq!(got & 0o7777, expected, "{way} {mode:?}, umask {umask:o}");
            }
        }
    }

    #[test]
    fn a_staged_sink_is_made_under_its_name_and_removed_unless_finished() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("file");
        let sink = FileSink::create_staged(&destination, NewMode::Exact(0o640)).unwrap();
        write(&sink, b"partial");
        drop(sink);
        assert!(names(dir.path()).is_empty());
        let sink = FileSink::create_staged(&destination, NewMode::Exact(0o640)).unwrap();
        write(&sink, b"whole");
        sink.finish(false).unwrap();
        assert_eq!(names(dir.path()), ["file"]);
        assert_eq!(std::fs::read(&destination).unwrap(), b"whole");
        // Never over something already there.
        assert!(FileSink::create_staged(&destination, NewMode::Exact(0o640)).is_err());
        assert_eq!(std::fs::read(&destination).unwrap(), b"whole");
    }

    #[test]
    fn a_255_byte_destination_name_gets_a_temp_name_that_fits() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("n".repeat(255));
        for temp in [true, true, false] {
            let sink = FileSink::create_as(&destination, NewMode::LessUmask(0o666), temp).unwrap();
            write(&sink, b"long");
            sink.finish(false).unwrap();
            assert_eq!(std::fs::read(&destination).unwrap(), b"long");
        }
    }
}
