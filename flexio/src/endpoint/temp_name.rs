//! Names of temporary files beside a destination, and the sweep of those
//! left by flexio processes that died (`kill -9`, a crash, power loss)
//! where the file system has no unnamed `O_TMPFILE`. A tree copy's staging
//! directory has a name of the same form and is swept the same way.
//!
//! A name is `.BASE.flexio-PID-RANDOM`: BASE is the destination's name cut
//! to at most [`MAX_BASE`] bytes, so that a destination of up to 255 bytes
//! still has a temporary name that fits NAME_MAX. A temporary file is held
//! under an exclusive `flock(2)` by the process writing it. The sweep
//! removes one only when its process is gone *and* the lock is free: a
//! live flexio's file is never touched, even one in another PID namespace
//! (its PID means nothing here, its lock does) or whose PID was reused.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::process::{getpid, Pid};

/// The marker between the destination's name and the process id.
const MARKER: &[u8] = b".flexio-";

/// The longest part of the destination's name kept in a temporary name:
/// 255 (NAME_MAX) less the dot, the marker, a PID of up to 10 digits, a
/// dash and the random part, with room to spare.
pub(crate) const MAX_BASE: usize = 255 - 1 - 8 - 10 - 1 - RANDOM_LEN - 16;

const RANDOM_LEN: usize = 8;

/// A fresh temporary name for `destination_name`, unique with high
/// probability (the caller creates it exclusively and retries on EEXIST).
pub(crate) fn temp_name(destination_name: &OsStr) -> OsString {
    let base = truncate(destination_name.as_bytes(), MAX_BASE);
    let pid = getpid().as_raw_nonzero().get();
    let mut name = Vec::with_capacity(base.len() + 40);
    name.push(b'.');
    name.extend_from_slice(base);
    name.extend_from_slice(MARKER);
    name.extend_from_slice(pid.to_string().as_bytes());
    name.push(b'-');
    name.extend_from_slice(random_suffix(pid).as_bytes());
    OsString::from_vec(name)
}

/// At most `max` bytes of `name`, cut at a character boundary when the
/// name is UTF-8 (a cut character would make the name unreadable).
fn truncate(name: &[u8], max: usize) -> &[u8] {
    if name.len() <= max {
        return name;
    }
    let mut end = max;
    if std::str::from_utf8(name).is_ok() {
        while end > 0 && (name[end] & 0b1100_0000) == 0b1000_0000 {
            end -= 1;
        }
    }
    &name[..end]
}

/// Eight letters and digits from the clock, a counter and the PID:
/// different per call in this process, and unlikely to match another's.
fn random_suffix(pid: i32) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut state = nanos
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ ((pid as u64) << 40);
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..RANDOM_LEN)
        .map(|_| {
            // splitmix64: cheap, and every bit of the state counts.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ALPHABET[(z % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

/// The PID in a temporary name of ours, if `name` is one.
pub(crate) fn owner_pid(name: &OsStr) -> Option<i32> {
    let bytes = name.as_bytes();
    if !bytes.starts_with(b".") {
        return None;
    }
    let at = bytes
        .windows(MARKER.len())
        .rposition(|window| window == MARKER)?;
    let rest = &bytes[at + MARKER.len()..];
    let dash = rest.iter().position(|&b| b == b'-')?;
    let (pid, random) = (&rest[..dash], &rest[dash + 1..]);
    if random.len() != RANDOM_LEN || !random.iter().all(u8::is_ascii_alphanumeric) {
        return None;
    }
    std::str::from_utf8(pid).ok()?.parse().ok()
}

/// Removes from `directory` the temporary files of flexio processes that
/// are gone, and their staging directories (a tree copy's, see
/// `tree::staging`, locked the same way) with everything in them; returns
/// how many. Best effort: a file that cannot be opened,
/// locked or removed is left, and an unreadable directory sweeps nothing.
pub(crate) fn sweep_stale(directory: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if process_lives(pid) {
            continue;
        }
        let path = entry.path();
        // NOFOLLOW: a symlink under our name is not ours to judge.
        let Ok(file) = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        ) else {
            continue;
        };
        let kind = rustix::fs::fstat(&file)
            .map(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode))
            .ok();
        // A writer that still runs (in another PID namespace, say) holds
        // the lock; a dead one released it with its last descriptor.
        let free = || rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok();
        let gone = match kind {
            Some(rustix::fs::FileType::RegularFile) => {
                free() && std::fs::remove_file(&path).is_ok()
            }
            Some(rustix::fs::FileType::Directory) => {
                free() && crate::cleanup::remove_tree(&path).is_ok()
            }
            _ => false,
        };
        removed += usize::from(gone);
    }
    removed
}

/// Whether a process with this PID exists here (EPERM: it does, and is
/// someone else's).
fn process_lives(pid: i32) -> bool {
    let Some(pid) = Pid::from_raw(pid) else {
        return true;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(errno) => errno != rustix::io::Errno::SRCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temp_name_fits_name_max_for_a_255_byte_destination() {
        let long = OsString::from("x".repeat(255));
        let name = temp_name(&long);
        assert!(name.len() <= 255, "{} bytes", name.len());
        assert_eq!(
            owner_pid(&name),
            Some(getpid().as_raw_nonzero().get()),
            "{name:?}"
        );
    }

    #[test]
    fn a_long_utf8_name_is_cut_between_characters() {
        let long = OsString::from("é".repeat(127));
        let name = temp_name(&long);
        assert!(name.len() <= 255);
        assert!(name.to_str().is_some(), "{name:?}");
    }

    #[test]
    fn names_are_unique_and_only_ours_parse() {
        let a = temp_name(OsStr::new("dst"));
        let b = temp_name(OsStr::new("dst"));
        assert_ne!(a, b);
        assert!(a.to_str().unwrap().starts_with(".dst.flexio-"));
        assert_eq!(owner_pid(OsStr::new(".dst.flexio-aB3xYz")), None);
        assert_eq!(owner_pid(OsStr::new("dst.flexio-12-abcdefgh")), None);
        assert_eq!(owner_pid(OsStr::new(".d.flexio-12-abcdefgh")), Some(12));
    }
}
