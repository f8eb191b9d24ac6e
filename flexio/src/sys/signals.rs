//! Removing flexio's temporary files when SIGINT, SIGTERM or SIGHUP ends
//! the process, from the signal handler itself.
//!
//! A thread waiting for signals would cost every run a thread (about
//! 0.1 ms of a 1 ms copy here); the handler needs none. Paths are kept in
//! a fixed, lock-free table: a slot is claimed (`WRITING`), filled with a
//! NUL-terminated absolute path, then `ARMED` *before* the file is made.
//! The handler marks the process `DYING`, takes every armed slot
//! (`CLEANING`), unlinks its path (or removes the directory tree a tree
//! copy registered, see `signal_safe_remove`), restores the default action and raises
//! the signal again, so that the process dies of it as it would have
//! without us (a shell reports 128 + the signal, and a shell loop sees
//! that its child was interrupted).
//!
//! Why no file escapes: a slot is armed before its file exists and freed
//! only after the file was renamed away or removed, so an unlink of an
//! armed path finds either the file or nothing. A slot still being written
//! names no file yet; its owner checks `DYING` after arming and then never
//! makes the file. An owner that finds its slot taken by the handler stops
//! (the process is about to die).
//!
//! The handler uses only atomics and raw system calls (`unlink`,
//! `sigaction`, `raise`), which are async-signal-safe.
//!
//! Reference: <https://man7.org/linux/man-pages/man2/sigaction.2.html>,
//! <https://man7.org/linux/man-pages/man7/signal-safety.7.html>

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Paths that can be registered at once (a flow registers at most two).
const SLOTS: usize = 64;
/// Room for a path and its NUL: PATH_MAX, the longest path a system call
/// takes.
const PATH_CAP: usize = libc::PATH_MAX as usize;

const FREE: u8 = 0;
const WRITING: u8 = 1;
const ARMED: u8 = 2;
const CLEANING: u8 = 3;

struct Slot {
    state: AtomicU8,
    /// The path is a directory to remove with everything in it (a tree
    /// copy's staging directory), not one file. Written before `ARMED`.
    tree: AtomicBool,
    path: UnsafeCell<[u8; PATH_CAP]>,
}

// SAFETY: `path` is written only by the thread that moved `state` from
// FREE to WRITING, and read (by the handler) only after moving it from
// ARMED to CLEANING, which the writer's Release store of ARMED orders
// after its writes; a slot in CLEANING is never written again.
unsafe impl Sync for Slot {}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU8::new(FREE),
        tree: AtomicBool::new(false),
        path: UnsafeCell::new([0; PATH_CAP]),
    }
}; SLOTS];

/// Set by the handler before it looks at the table.
static DYING: AtomicBool = AtomicBool::new(false);

/// A registered path: the handler unlinks it until this is dropped.
#[derive(Debug)]
pub(crate) struct Registration {
    slot: usize,
}

/// Registers `path` for removal by the handler. Call before the file is
/// made; drop the registration after it is renamed away or removed.
/// `None` when the path cannot be registered (not absolute, a NUL inside,
/// longer than PATH_MAX, every slot taken): the file is then not removed on
/// a signal, which is all that is lost.
pub(crate) fn register(path: &Path) -> Option<Registration> {
    register_as(path, false)
}

/// Registers the directory `path` for removal, with everything in it, by
/// the handler (see [`super::signal_safe_remove`]); as [`register`]
/// otherwise.
pub(crate) fn register_tree(path: &Path) -> Option<Registration> {
    register_as(path, true)
}

fn register_as(path: &Path, tree: bool) -> Option<Registration> {
    let bytes = path.as_os_str().as_bytes();
    if !path.is_absolute() || bytes.len() >= PATH_CAP || bytes.contains(&0) {
        return None;
    }
    let slot = TABLE.iter().position(|slot| {
        slot.state
            .compare_exchange(FREE, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    })?;
    let entry = &TABLE[slot];
    // SAFETY: this thread moved the slot to WRITING, so no one else writes
    // or reads its path until it is ARMED (see `Slot`'s Sync).
    let buffer = unsafe { &mut *entry.path.get() };
    buffer[..bytes.len()].copy_from_slice(bytes);
    buffer[bytes.len()] = 0;
    entry.tree.store(tree, Ordering::Relaxed);
    entry.state.store(ARMED, Ordering::SeqCst);
    if DYING.load(Ordering::SeqCst) {
        // The handler may have passed this slot while it was being
        // written: never make the file. The process dies in a moment.
        park_until_killed();
    }
    Some(Registration { slot })
}

impl Drop for Registration {
    fn drop(&mut self) {
        let state = &TABLE[self.slot].state;
        if state
            .compare_exchange(ARMED, FREE, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            // The handler is removing it (on another thread) and the
            // process is about to die of the signal.
            park_until_killed();
        }
    }
}

fn park_until_killed() -> ! {
    loop {
        std::thread::park();
    }
}

/// Installs the handler for each of `signals` that is not set to be
/// ignored: a signal the parent ignored (`nohup` for SIGHUP) stays ignored.
/// Replaces the handlers already installed for those signals.
///
/// # Errors
/// The errno of `sigaction(2)`.
pub(crate) fn remove_registered_on(signals: &[c_int]) -> io::Result<()> {
    // SAFETY: an all-zero `sigaction` is a valid value (SIG_DFL, empty
    // mask, no flags).
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as *const () as usize;
    // SA_RESTART: an interrupted system call of the flow goes on; the
    // handler ends the process itself.
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid `sigset_t` to fill.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    for &signal in signals {
        // One handler at a time: another of these signals waits.
        // SAFETY: as above; `signal` is only an index into the set.
        unsafe { libc::sigaddset(&mut action.sa_mask, signal) };
    }
    for &signal in signals {
        // Installed and the old disposition read in one call; an ignored
        // signal is put back (a second call only under `nohup`).
        // SAFETY: zero is a valid `sigaction` for the kernel to fill in.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: `action` is fully initialised, `previous` is valid for
        // writes, and `on_signal` takes the signal number, as a handler
        // without SA_SIGINFO does.
        if unsafe { libc::sigaction(signal, &action, &mut previous) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if previous.sa_sigaction == libc::SIG_IGN {
            // SAFETY: `previous` is what the kernel returned, a valid action.
            if unsafe { libc::sigaction(signal, &previous, std::ptr::null_mut()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Whether `signal`'s disposition is `SIG_IGN`.
#[cfg(test)]
fn is_ignored(signal: c_int) -> io::Result<bool> {
    // SAFETY: zero is a valid `sigaction` for the kernel to fill in.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the disposition into `current`,
    // which is valid for writes.
    if unsafe { libc::sigaction(signal, std::ptr::null(), &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(current.sa_sigaction == libc::SIG_IGN)
}

/// The handler. Async-signal-safe: atomics and raw system calls only.
extern "C" fn on_signal(signal: c_int) {
    DYING.store(true, Ordering::SeqCst);
    for slot in &TABLE {
        if slot
            .state
            .compare_exchange(ARMED, CLEANING, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            let path = slot.path.get().cast::<libc::c_char>();
            if slot.tree.load(Ordering::Relaxed) {
                // SAFETY: as below; the path stays as it is (CLEANING).
                unsafe { super::signal_safe_remove::remove_tree(path) };
            } else {
                // SAFETY: an ARMED slot holds a NUL-terminated path, and
                // this handler now owns it (CLEANING): no one writes it
                // again.
                unsafe { libc::unlink(path) };
            }
        }
    }
    // SAFETY: zero is a valid `sigaction`: SIG_DFL, empty mask, no flags.
    let default: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `default` is initialised; sigaction and raise are
    // async-signal-safe. The raised signal is blocked until this handler
    // returns, then kills the process with the default action.
    unsafe {
        libc::sigaction(signal, &default, std::ptr::null_mut());
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relative_or_overlong_path_is_not_registered() {
        assert!(register(Path::new("relative")).is_none());
        let long = format!("/{}", "x".repeat(PATH_CAP));
        assert!(register(Path::new(&long)).is_none());
    }

    #[test]
    fn a_slot_is_reused_after_its_registration_drops() {
        // More registrations in turn than there are slots.
        for round in 0..SLOTS * 2 {
            let registration = register(Path::new(&format!("/nonexistent/{round}")));
            assert!(registration.is_some(), "round {round}");
        }
    }

    #[test]
    fn the_default_disposition_is_not_ignored() {
        assert!(!is_ignored(libc::SIGWINCH).unwrap());
    }
}
