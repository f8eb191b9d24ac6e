//! Paths flexio creates and must not leave behind when a signal ends the
//! process: a named temporary file beside a destination, the socket file
//! of a `unix-listen://` endpoint.
//!
//! The library registers such a path as the file is made, until it is
//! renamed away or removed. A program that wants SIGINT, SIGTERM and SIGHUP
//! to remove them calls [`remove_temporaries_on_signals`] once; a thread
//! that waits for the signals (see `registry`) removes every registered
//! path and lets the process die of the signal.
//!
//! An unnamed `O_TMPFILE` sink needs no entry here: the kernel frees it
//! with the process, whatever kills it.
//!
//! A tree copy into a new destination registers its hidden staging
//! directory as a whole (`create_tree`): the watcher removes it with
//! everything in it.

mod registry;

use std::io;
use std::path::{Path, PathBuf};

pub(crate) use registry::stop_if_dying;
use registry::Registration;

/// Makes SIGINT, SIGTERM and SIGHUP remove the temporary files and socket
/// files that flows of this process have made and not yet put in place,
/// then end the process as the signal would have: the shell reports 128 +
/// the signal (130, 143, 129). Nothing else is undone: a destination
/// already replaced stays replaced, one not yet replaced keeps its old
/// content. A signal set to be ignored (`nohup`) stays ignored.
///
/// Replaces any handler the program had for those signals. The thread
/// starts with the first path registered: a flow that registers nothing
/// pays for no thread.
///
/// # Errors
/// `sigaction(2)` failing, or the pipe its handler writes to not being
/// made.
///
/// # Examples
/// ```
/// flexio::cleanup::remove_temporaries_on_signals().unwrap();
/// ```
pub fn remove_temporaries_on_signals() -> io::Result<()> {
    registry::remove_registered_on(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
}

/// A path registered for removal on a signal, removed when this is dropped
/// unless [`Tracked::settle`] moved it away first.
#[derive(Debug)]
pub(crate) struct Tracked {
    path: PathBuf,
    registration: Option<Registration>,
    settled: bool,
    /// A directory removed with everything in it, not one file.
    tree: bool,
}

/// Registers `path`, then runs `create` (which makes the file there).
///
/// # Errors
/// What `create` returns (the registration is dropped then); the error of
/// making a relative path absolute.
pub(crate) fn create<T>(
    path: &Path,
    create: impl FnOnce(&Path) -> io::Result<T>,
) -> io::Result<(T, Tracked)> {
    create_as(path, false, create)
}

/// Registers the directory `path` for removal with everything in it, then
/// runs `create` (which makes the directory).
///
/// # Errors
/// As [`create`].
pub(crate) fn create_tree<T>(
    path: &Path,
    create: impl FnOnce(&Path) -> io::Result<T>,
) -> io::Result<(T, Tracked)> {
    create_as(path, true, create)
}

fn create_as<T>(
    path: &Path,
    tree: bool,
    create: impl FnOnce(&Path) -> io::Result<T>,
) -> io::Result<(T, Tracked)> {
    // The watcher may run after a change of directory: register the path
    // it will find the file at whatever the current directory is then.
    let absolute = std::path::absolute(path)?;
    let (made, registration) = registry::register_while(&absolute, tree, || create(path))?;
    let registration = Some(registration);
    Ok((
        made,
        Tracked {
            path: path.to_path_buf(),
            registration,
            settled: false,
            tree,
        },
    ))
}

/// Removes the directory `path` with everything in it. Directories that
/// already have their final mode, read-only ones among them, are made
/// writable first where that is what stops the removal.
///
/// # Errors
/// What `remove_dir_all` returns.
pub(crate) fn remove_tree(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(error) if error.kind() == io::ErrorKind::PermissionDenied => {
            make_writable(path);
            std::fs::remove_dir_all(path)
        }
        other => other,
    }
}

/// Gives `directory` and every directory below it mode 0700 (symlinks are
/// not followed: only real directories are changed).
fn make_writable(directory: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(directory, std::fs::Permissions::from_mode(0o700));
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            make_writable(&entry.path());
        }
    }
}

impl Tracked {
    /// The registered path.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a signal would remove the path.
    #[cfg(test)]
    pub(crate) fn is_registered(&self) -> bool {
        self.registration.is_some()
    }

    /// Runs `settle` (a rename that moves the path to its final name); when
    /// it succeeds the path is no longer one to remove. When it fails the
    /// path is removed, as on drop.
    ///
    /// # Errors
    /// What `settle` returns.
    pub(crate) fn settle<T>(
        mut self,
        settle: impl FnOnce(&Path) -> io::Result<T>,
    ) -> io::Result<T> {
        let result = settle(&self.path);
        self.settled = result.is_ok();
        result
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if !self.settled {
            let _ = match self.tree {
                true => remove_tree(&self.path),
                false => std::fs::remove_file(&self.path),
            };
        }
        // Then the registration goes: the watcher never misses a file that
        // is still there.
        self.registration.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tracked_path_is_registered_until_dropped_and_then_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("temp");
        let ((), tracked) = create(&path, |p| std::fs::write(p, b"x")).unwrap();
        assert!(tracked.is_registered());
        drop(tracked);
        assert!(!path.exists());
    }

    #[test]
    fn a_relative_path_is_registered_as_absolute() {
        let ((), tracked) = create(Path::new("no/such/dir/../x"), |_| Ok(())).unwrap();
        assert!(tracked.is_registered());
    }

    #[test]
    fn a_settled_path_is_kept_where_it_went() {
        let dir = tempfile::tempdir().unwrap();
        let (path, done) = (dir.path().join("temp"), dir.path().join("done"));
        let ((), tracked) = create(&path, |p| std::fs::write(p, b"x")).unwrap();
        tracked.settle(|p| std::fs::rename(p, &done)).unwrap();
        assert_eq!(std::fs::read(&done).unwrap(), b"x");
    }

    #[test]
    fn a_failed_settle_removes_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("temp");
        let ((), tracked) = create(&path, |p| std::fs::write(p, b"x")).unwrap();
        let missing = dir.path().join("no/such/dir/done");
        assert!(tracked.settle(|p| std::fs::rename(p, &missing)).is_err());
        assert!(!path.exists());
    }

    #[test]
    fn a_tracked_tree_is_removed_whole_unless_settled() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("staging");
        let ((), tracked) = create_tree(&path, |p| {
            std::fs::create_dir_all(p.join("sub/deeper"))?;
            std::fs::write(p.join("sub/deeper/file"), b"x")?;
            std::fs::set_permissions(p.join("sub"), std::fs::Permissions::from_mode(0o555))
        })
        .unwrap();
        assert!(tracked.is_registered());
        drop(tracked);
        assert!(!path.exists());
        let done = dir.path().join("done");
        let ((), tracked) = create_tree(&path, |p| std::fs::create_dir(p)).unwrap();
        tracked.settle(|p| std::fs::rename(p, &done)).unwrap();
        assert!(done.is_dir());
    }

    #[test]
    fn a_failed_create_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/temp");
        assert!(create(&path, |p| std::fs::write(p, b"x")).is_err());
    }
}
