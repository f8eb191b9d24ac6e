//! A new destination tree is built in a hidden staging directory beside
//! it and put in place by one rename at the end.
//!
//! Why: every file of a tree written through its own temporary (an
//! `O_TMPFILE` linked in, see `endpoint::file_sink`) costs two system
//! calls more than a plain create, about a third of a small file's CPU on
//! ext4. When the destination does not exist yet, the whole tree can be
//! the temporary instead: its files are made under their own names inside
//! `.NAME.flexio-PID-RANDOM` in the destination's parent, and
//! `rename(2)` with `RENAME_NOREPLACE` gives it the destination's name
//! once every file and directory is finished. So an interrupted copy still
//! leaves no file at a final name:
//!
//! - SIGINT, SIGTERM, SIGHUP: the staging directory is registered with
//!   [`crate::cleanup`], whose signal watcher removes it with everything in it;
//! - `kill -9`, a crash: it stays, hidden, and unlocked — the process
//!   held an `flock(2)` on it, which died with it. The next copy into the
//!   same parent sweeps staging directories whose process is gone and
//!   whose lock it can take (see `endpoint::temp_name`), never a live
//!   copy's.
//!
//! A destination that appears meanwhile is not replaced: the rename fails
//! with a clear error and the staged copy is removed. Files that failed
//! are reported and absent; the rest of the tree is put in place, as `cp`
//! leaves what it could copy.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags, RenameFlags, CWD};
use rustix::io::Errno;

use crate::cleanup::{self, Tracked};
use crate::endpoint::{sweep_stale, temp_name};
use crate::error::{Error, Result};

/// A staging directory of this process, locked and registered for removal
/// on a signal; removed when dropped unless put in place.
///
/// # Examples
/// ```
/// use flexio::tree::Staging;
/// let dir = tempfile::tempdir().unwrap();
/// let target = dir.path().join("new");
/// let staging = Staging::new(&target).expect("a writable parent");
/// std::fs::write(staging.path().join("file"), b"whole").unwrap();
/// assert!(!target.exists(), "nothing at the final name yet");
/// staging.put_in_place(&target, false).unwrap();
/// assert_eq!(std::fs::read(target.join("file")).unwrap(), b"whole");
/// ```
pub struct Staging {
    path: PathBuf,
    tracked: Tracked,
    /// Holds the `flock` that keeps sweeps of other processes away.
    lock: OwnedFd,
}

impl Staging {
    /// Makes a staging directory for `target` (which should not exist) in
    /// its parent, after sweeping from that parent the staging
    /// directories and temporaries of dead flexio processes. `None` when
    /// it cannot be made (no such parent, no
    /// permission…): the caller copies without one and meets the same
    /// error where it says more.
    pub fn new(target: &Path) -> Option<Staging> {
        let mut swept = Vec::new();
        sweep_parent(target, &mut swept);
        Self::new_unswept(target)
    }

    /// [`Staging::new`] without the sweep, for a caller that makes many
    /// staging directories in one parent and sweeps it once first with
    /// [`Staging::sweep_beside`] (a sweep reads the whole parent).
    pub fn new_unswept(target: &Path) -> Option<Staging> {
        let name = target.file_name().unwrap_or(OsStr::new("tree"));
        for _ in 0..100 {
            // `NAME`'s parent as typed: no `./` for a relative `NAME`.
            let path = match target.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent.join(temp_name(name)),
                _ => PathBuf::from(temp_name(name)),
            };
            let made = cleanup::create_tree(&path, |path| {
                rustix::fs::mkdir(path, Mode::from_raw_mode(0o700))?;
                let lock = rustix::fs::open(
                    path,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                rustix::fs::flock(&lock, FlockOperation::LockExclusive)?;
                Ok(lock)
            });
            match made {
                Ok((lock, tracked)) => {
                    return Some(Staging {
                        path,
                        tracked,
                        lock,
                    })
                }
                Err(error) if error.raw_os_error() == Some(libc::EEXIST) => continue,
                Err(_) => return None,
            }
        }
        None
    }

    /// Removes from `target`'s parent the staging directories and
    /// temporaries that dead flexio processes left there (never a live
    /// process's: each holds a lock on its own).
    pub fn sweep_beside(target: &Path) {
        sweep_parent(target, &mut Vec::new());
    }

    /// Where the tree is built.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The staging directory, held open (and locked) since it was made:
    /// files made relative to it land in it even if a name on its path is
    /// swapped meanwhile.
    pub fn directory(&self) -> BorrowedFd<'_> {
        self.lock.as_fd()
    }

    /// Gives the staging directory `target`'s name, unless something is
    /// there by now. With `fsync`, the parent directory is synced after,
    /// so that the new name survives a crash (the tree's contents must
    /// have been synced before).
    ///
    /// # Errors
    /// The destination appeared during the copy (the staged copy is
    /// removed, the destination left as it is); the rename's or the
    /// parent's fsync's error.
    pub fn put_in_place(self, target: &Path, fsync: bool) -> Result<()> {
        let label = target.display().to_string();
        self.tracked
            .settle(|staged| rename_no_replace(staged, target))
            .map_err(|error| match error.raw_os_error() {
                Some(libc::EEXIST) | Some(libc::ENOTEMPTY) => Error::usage(format!(
                    "{label} was created by something else during the copy: it is left as it is, and the copy (built beside it) is removed"
                )),
                _ => Error::io("rename", &label, None, error),
            })?;
        if fsync {
            let parent = parent_of(target);
            let parent_label = parent.display().to_string();
            let handle = rustix::fs::open(
                parent,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| Error::io("open", &parent_label, None, e))?;
            rustix::fs::fsync(&handle).map_err(|e| Error::io("fsync", &parent_label, None, e))?;
        }
        Ok(())
    }
}

/// Removes from `target`'s parent the staging directories and temporary
/// files that dead flexio processes left there (see `endpoint::temp_name`),
/// once per parent in `swept`.
pub(crate) fn sweep_parent(target: &Path, swept: &mut Vec<PathBuf>) {
    let parent = parent_of(target);
    if !swept.iter().any(|done| done == parent) {
        sweep_stale(parent);
        swept.push(parent.to_path_buf());
    }
}

fn parent_of(target: &Path) -> &Path {
    match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// `rename(2)` that never replaces `to`. Where the file system has no
/// `RENAME_NOREPLACE` (EINVAL), a plain rename after a check: a directory
/// rename can then only replace an empty directory made in between.
fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    match rustix::fs::renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL) => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(std::io::Error::from_raw_os_error(libc::EEXIST));
            }
            std::fs::rename(from, to)
        }
        other => other.map_err(Into::into),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::file_sink_test_names as names;

    #[test]
    fn a_staged_tree_is_hidden_until_put_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("dst");
        let staging = Staging::new(&target).unwrap();
        std::fs::write(staging.path().join("file"), b"x").unwrap();
        let listed = names(dir.path());
        assert!(
            listed.len() == 1 && listed[0].starts_with(".dst.flexio-"),
            "{listed:?}"
        );
        staging.put_in_place(&target, true).unwrap();
        assert_eq!(names(dir.path()), ["dst"]);
        assert_eq!(std::fs::read(target.join("file")).unwrap(), b"x");
    }

    #[test]
    fn a_destination_made_meanwhile_is_kept_and_the_staged_copy_removed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("dst");
        let staging = Staging::new(&target).unwrap();
        std::fs::write(staging.path().join("file"), b"ours").unwrap();
        std::fs::create_dir(&target).unwrap();
        let error = staging.put_in_place(&target, false).unwrap_err();
        assert!(
            error.to_string().contains("created by something else"),
            "{error}"
        );
        assert_eq!(names(dir.path()), ["dst"]);
        assert!(names(&target).is_empty());
    }

    #[test]
    fn a_staging_directory_dropped_unfinished_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let staging = Staging::new(&dir.path().join("dst")).unwrap();
        std::fs::create_dir(staging.path().join("sub")).unwrap();
        drop(staging);
        assert!(names(dir.path()).is_empty());
    }
}
