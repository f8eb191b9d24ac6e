//! Paths flexio created and must not leave behind when the process is
//! interrupted: a named temporary file beside a destination, the socket
//! file of a `unix-listen://` endpoint.
//!
//! The library registers such a path while it exists; a program that
//! catches SIGINT, SIGTERM or SIGHUP calls [`exit_removing_temporaries`]
//! from a thread of its own (never from an asynchronous signal handler: it
//! takes a lock). Creating, renaming and removing a registered path all
//! happen under the same lock, so the handler sees each path either before
//! it exists or after it is settled, never half-way: a temporary file is
//! either removed or already renamed over its destination.
//!
//! An unnamed `O_TMPFILE` sink needs no entry here: the kernel frees it
//! with the process, whatever kills it.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The registered paths, each with the id of the [`Tracked`] that owns it.
static REGISTRY: Mutex<Vec<(u64, PathBuf)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn registry() -> MutexGuard<'static, Vec<(u64, PathBuf)>> {
    // A panic while the lock was held leaves a list that is still a list.
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes every registered path and exits the process with `status`,
/// still holding the registry's lock, so that no thread of the flow can
/// create or rename a registered path in between.
///
/// Meant for the thread that waits for SIGINT, SIGTERM and SIGHUP (exit
/// status 128 + the signal's number, as a shell reports a process killed
/// by it). Restores nothing else: a destination replaced before the signal
/// stays replaced, one not yet replaced keeps its old content.
///
/// # Examples
/// ```no_run
/// // In the thread that received SIGTERM (15):
/// flexio::cleanup::exit_removing_temporaries(128 + 15);
/// ```
pub fn exit_removing_temporaries(status: i32) -> ! {
    let paths = registry();
    for (_, path) in paths.iter() {
        let _ = std::fs::remove_file(path);
    }
    std::process::exit(status)
}

/// Whether `signal` is set to be ignored in this process, as `nohup` sets
/// SIGHUP: a program then leaves it ignored rather than catch it.
///
/// # Examples
/// ```
/// // SIGWINCH (28) is not ignored unless someone asked for it.
/// assert!(!flexio::cleanup::signal_is_ignored(28));
/// ```
pub fn signal_is_ignored(signal: i32) -> bool {
    crate::sys::signals::is_ignored(signal)
}

/// A registered path: removed when this is dropped, unless
/// [`Tracked::settle`] moved it away first.
#[derive(Debug)]
pub(crate) struct Tracked {
    id: u64,
    path: PathBuf,
    settled: bool,
}

/// Runs `create` (which makes the file at `path`) under the registry's
/// lock and registers `path` when it succeeds.
///
/// # Errors
/// What `create` returns; nothing is registered then.
pub(crate) fn create<T>(
    path: &Path,
    create: impl FnOnce(&Path) -> io::Result<T>,
) -> io::Result<(T, Tracked)> {
    let mut paths = registry();
    let made = create(path)?;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    paths.push((id, path.to_path_buf()));
    Ok((
        made,
        Tracked {
            id,
            path: path.to_path_buf(),
            settled: false,
        },
    ))
}

impl Tracked {
    /// The registered path.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `settle` (a rename that moves the path to its final name) under
    /// the registry's lock; when it succeeds the path is no longer one to
    /// remove. When it fails the path is removed, as on drop.
    ///
    /// # Errors
    /// What `settle` returns.
    pub(crate) fn settle<T>(
        mut self,
        settle: impl FnOnce(&Path) -> io::Result<T>,
    ) -> io::Result<T> {
        let result = {
            let mut paths = registry();
            let result = settle(&self.path);
            if result.is_ok() {
                paths.retain(|(id, _)| *id != self.id);
            }
            result
        };
        self.settled = result.is_ok();
        result
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let mut paths = registry();
        let _ = std::fs::remove_file(&self.path);
        paths.retain(|(id, _)| *id != self.id);
    }
}

/// Whether `path` is registered (for tests).
#[cfg(test)]
pub(crate) fn is_registered(path: &Path) -> bool {
    registry().iter().any(|(_, registered)| registered == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tracked_path_is_registered_until_dropped_and_then_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("temp");
        let ((), tracked) = create(&path, |p| std::fs::write(p, b"x")).unwrap();
        assert!(is_registered(&path));
        drop(tracked);
        assert!(!is_registered(&path));
        assert!(!path.exists());
    }

    #[test]
    fn a_settled_path_is_forgotten_and_kept_where_it_went() {
        let dir = tempfile::tempdir().unwrap();
        let (path, done) = (dir.path().join("temp"), dir.path().join("done"));
        let ((), tracked) = create(&path, |p| std::fs::write(p, b"x")).unwrap();
        tracked.settle(|p| std::fs::rename(p, &done)).unwrap();
        assert!(!is_registered(&path));
        assert_eq!(std::fs::read(&done).unwrap(), b"x");
    }

    #[test]
    fn a_failed_settle_removes_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("temp");
        let ((), tracked) = create(&path, |p| std::fs::write(p, b"x")).unwrap();
        let missing = dir.path().join("no/such/dir/done");
        assert!(tracked.settle(|p| std::fs::rename(p, &missing)).is_err());
        assert!(!is_registered(&path));
        assert!(!path.exists());
    }

    #[test]
    fn a_failed_create_registers_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/temp");
        assert!(create(&path, |p| std::fs::write(p, b"x")).is_err());
        assert!(!is_registered(&path));
    }
}
