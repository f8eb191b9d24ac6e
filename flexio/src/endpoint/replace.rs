//! Putting a finished temporary file in place of a destination that may
//! exist.
//!
//! `rename(2)` over an existing file on ext4 makes the kernel write the
//! new file's delayed blocks out there and then (`auto_da_alloc`, a
//! heuristic for programs that rename without fsync), so a small copy's
//! rename took a quarter of its run. flexio swaps the two names instead
//! (`renameat2(RENAME_EXCHANGE)`) and unlinks the old file, now under the
//! temporary name: the destination still changes in one step (a reader
//! sees the whole old file or the whole new one) and an interrupted or
//! failed copy still leaves the old file, at what `cp` pays for truncating
//! and rewriting it.
//!
//! After a power cut without `--fsync` the destination may hold the new
//! file with fewer bytes than were written, as `cp`'s truncated file may;
//! neither promises the new bytes then. `--fsync` syncs the file before
//! the swap and the directory after it, so both names are durable.
//!
//! Reference: <https://man7.org/linux/man-pages/man2/rename.2.html>

use std::io;
use std::path::Path;

use rustix::fs::{RenameFlags, CWD};
use rustix::io::Errno;

/// Gives `temp`'s file the name `destination`, replacing whatever file is
/// there. A directory at `destination` is left as it was (`EISDIR`).
///
/// # Errors
/// What `renameat2`, `rename` or `unlink` return.
pub(crate) fn replace(temp: &Path, destination: &Path) -> io::Result<()> {
    match rustix::fs::renameat_with(CWD, temp, CWD, destination, RenameFlags::EXCHANGE) {
        Ok(()) => {}
        // ENOENT: nothing to swap with (a new name, or the file went in the
        // meantime); EINVAL: a file system without exchange; ENOSYS: a
        // kernel before 3.15.
        Err(Errno::NOENT | Errno::INVAL | Errno::NOSYS) => {
            return rustix::fs::rename(temp, destination).map_err(Into::into)
        }
        Err(errno) => return Err(errno.into()),
    }
    match rustix::fs::unlink(temp) {
        Ok(()) => Ok(()),
        Err(errno) => {
            // A directory (EISDIR), or one we may not remove: swap back, so
            // the destination is what it was, as a failed rename leaves it.
            let _ = rustix::fs::renameat_with(CWD, temp, CWD, destination, RenameFlags::EXCHANGE);
            Err(errno.into())
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use super::*;

    /// The names in `dir`, sorted: where a temporary file would show.
    pub(crate) fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_existing_file_is_replaced_and_the_old_one_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (temp, destination) = (dir.path().join(".temp"), dir.path().join("dst"));
        std::fs::write(&destination, b"old").unwrap();
        std::fs::write(&temp, b"new").unwrap();
        replace(&temp, &destination).unwrap();
        assert_eq!(std::fs::read(&destination).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["dst"]);
    }

    #[test]
    fn a_free_name_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let (temp, destination) = (dir.path().join(".temp"), dir.path().join("dst"));
        std::fs::write(&temp, b"new").unwrap();
        replace(&temp, &destination).unwrap();
        assert_eq!(std::fs::read(&destination).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["dst"]);
    }

    #[test]
    fn a_symlink_at_the_destination_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (temp, destination) = (dir.path().join(".temp"), dir.path().join("dst"));
        let target = dir.path().join("target");
        std::fs::write(&target, b"kept").unwrap();
        std::os::unix::fs::symlink(&target, &destination).unwrap();
        std::fs::write(&temp, b"new").unwrap();
        replace(&temp, &destination).unwrap();
        assert!(!destination.is_symlink());
        assert_eq!(std::fs::read(&destination).unwrap(), b"new");
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
    }

    #[test]
    fn a_directory_at_the_destination_is_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let (temp, destination) = (dir.path().join(".temp"), dir.path().join("dst"));
        std::fs::create_dir(&destination).unwrap();
        std::fs::write(destination.join("inside"), b"x").unwrap();
        std::fs::write(&temp, b"new").unwrap();
        assert!(replace(&temp, &destination).is_err());
        assert!(destination.join("inside").is_file());
        assert_eq!(std::fs::read(&temp).unwrap(), b"new");
    }
}
