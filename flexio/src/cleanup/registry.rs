//! The paths to remove when SIGINT, SIGTERM or SIGHUP ends the process,
//! and the thread that removes them.
//!
//! The signals are caught by `signal-hook`, whose handler only writes to a
//! pipe; a watcher thread reads it, removes every registered path with
//! ordinary file-system calls (a tree copy's staging directory with
//! everything in it), and then lets the process die of the signal, so that
//! a shell reports 128 + its number and a shell loop sees its child was
//! interrupted.
//!
//! The signals are caught, and the thread started, with the first
//! registration: a flow that registers nothing (a copy into a new file,
//! made unnamed with `O_TMPFILE`) pays for neither, and a signal before
//! then ends the process by its default action, with nothing to remove.
//!
//! Why no file escapes: a path is registered and its file made under the
//! registry's lock, and the watcher marks the process dying, then takes
//! the lock and every path before it removes them. So the watcher finds
//! each registered file made, and a thread that comes to register or
//! unregister after it parks until the process dies, never making a file
//! the watcher did not see.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use signal_hook::iterator::Signals;

/// What the watcher removes.
#[derive(Debug, Default)]
struct Registry {
    next_id: u64,
    entries: Vec<Entry>,
    /// The signals to catch once a path is registered (none until
    /// [`remove_registered_on`]; taken when the watcher starts).
    wanted: Vec<libc::c_int>,
}

#[derive(Debug)]
struct Entry {
    id: u64,
    path: PathBuf,
    /// A directory to remove with everything in it, not one file.
    tree: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next_id: 0,
    entries: Vec::new(),
    wanted: Vec::new(),
});

/// A signal came: set by the watcher before it takes the registered paths.
static DYING: AtomicBool = AtomicBool::new(false);

/// A registered path: the watcher removes it until this is dropped.
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
}

fn registry() -> MutexGuard<'static, Registry> {
    // A thread that panicked while holding the lock left a consistent
    // list: every change to it is one push or one removal.
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Has each of `signals` that is not set to be ignored (a signal the
/// parent ignored, as `nohup` does SIGHUP, stays ignored) caught from the
/// first registration on; see the module documentation.
///
/// # Errors
/// `sigaction(2)` failing to read a disposition.
pub(crate) fn remove_registered_on(signals: &[libc::c_int]) -> io::Result<()> {
    let mut caught = Vec::with_capacity(signals.len());
    for &signal in signals {
        if !flexio_sys::signal::is_ignored(signal)? {
            caught.push(signal);
        }
    }
    registry().wanted = caught;
    Ok(())
}

/// Registers `path` (absolute) for removal, a whole directory when `tree`,
/// and runs `create`, which makes it, both under the lock; the
/// registration is dropped when `create` fails.
///
/// # Errors
/// What `create` returns.
pub(crate) fn register_while<T>(
    path: &Path,
    tree: bool,
    create: impl FnOnce() -> io::Result<T>,
) -> io::Result<(T, Registration)> {
    let mut registry = registry();
    if DYING.load(Ordering::SeqCst) {
        park_until_killed(registry);
    }
    if !registry.wanted.is_empty() {
        start_watcher(&std::mem::take(&mut registry.wanted));
    }
    let made = create()?;
    let id = registry.next_id;
    registry.next_id += 1;
    registry.entries.push(Entry {
        id,
        path: path.to_path_buf(),
        tree,
    });
    Ok((made, Registration { id }))
}

/// Catches `signals` and starts the thread that waits for them. Where
/// they cannot be caught (no pipe) or no thread can be started, they end
/// the process by their default action, which only leaves the temporary
/// files a signal would have removed.
fn start_watcher(signals: &[libc::c_int]) {
    let Ok(mut caught) = Signals::new(signals) else {
        return;
    };
    let started = std::thread::Builder::new()
        .name("flexio-signals".into())
        .spawn(move || {
            if let Some(signal) = caught.forever().next() {
                die_of(signal);
            }
        });
    if started.is_err() {
        // The iterator, dropped with the closure, no longer catches them,
        // but the handler stays installed: have it run the default action.
        let always = Arc::new(AtomicBool::new(true));
        for &signal in signals {
            let _ = signal_hook::flag::register_conditional_default(signal, Arc::clone(&always));
        }
    }
}

/// Parks the calling thread for good once a signal is ending the process.
/// Called before making an entry that no registration covers (a file or
/// directory inside a registered staging directory): each thread then
/// makes at most one entry after the watcher started, which its next pass
/// over the tree removes.
pub(crate) fn stop_if_dying() {
    if DYING.load(Ordering::SeqCst) {
        park_until_killed(registry());
    }
}

/// Removes every registered path, then ends the process as `signal`'s
/// default action does.
fn die_of(signal: libc::c_int) -> ! {
    DYING.store(true, Ordering::SeqCst);
    let entries = std::mem::take(&mut registry().entries);
    remove_all(&entries);
    let _ = signal_hook::low_level::emulate_default_handler(signal);
    // Not reached for the signals caught here, whose default action ends
    // the process; exit as the shell would report it otherwise.
    std::process::exit(128 + signal);
}

/// Passes over a tree while the flow's other threads may still be making
/// files in it (a tree copy's workers write inside its staging directory
/// without registering each file): a pass that meets a directory they
/// filled after it was listed fails with `ENOTEMPTY`, the next one takes
/// what is there then (see [`stop_if_dying`]).
const TREE_PASSES: usize = 8;

fn remove_all(entries: &[Entry]) {
    for entry in entries {
        if !entry.tree {
            let _ = std::fs::remove_file(&entry.path);
            continue;
        }
        for _ in 0..TREE_PASSES {
            match super::remove_tree(&entry.path) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => continue,
                _ => break,
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut registry = registry();
        if DYING.load(Ordering::SeqCst) {
            // The watcher took the path and the process is about to die
            // of the signal: going on could end it otherwise.
            park_until_killed(registry);
        }
        registry.entries.retain(|entry| entry.id != self.id);
    }
}

fn park_until_killed(registry: MutexGuard<'_, Registry>) -> ! {
    drop(registry);
    loop {
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_registered(path: &Path) -> bool {
        registry().entries.iter().any(|entry| entry.path == path)
    }

    #[test]
    fn a_path_is_registered_until_its_registration_drops() {
        let path = Path::new("/nonexistent/registered");
        let ((), registration) = register_while(path, false, || Ok(())).unwrap();
        assert!(is_registered(path));
        drop(registration);
        assert!(!is_registered(path));
    }

    #[test]
    fn a_failed_create_registers_nothing() {
        let path = Path::new("/nonexistent/failed");
        let result = register_while(path, false, || Err::<(), _>(io::Error::other("no")));
        assert!(result.is_err());
        assert!(!is_registered(path));
    }

    #[test]
    fn what_the_watcher_removes_is_every_file_and_tree() {
        let dir = tempfile::tempdir().unwrap();
        let (file, tree) = (dir.path().join("temp"), dir.path().join("staging"));
        std::fs::write(&file, b"x").unwrap();
        std::fs::create_dir_all(tree.join("sub")).unwrap();
        std::fs::write(tree.join("sub/file"), b"x").unwrap();
        let entries = [
            Entry {
                id: 0,
                path: file.clone(),
                tree: false,
            },
            Entry {
                id: 1,
                path: tree.clone(),
                tree: true,
            },
        ];
        remove_all(&entries);
        assert!(!file.exists() && !tree.exists());
    }
}
