//! Removing a whole directory tree from a signal handler: raw system calls
//! only (`open`, `openat`, `getdents64`, `unlinkat`, `fchmod`, `lseek`,
//! `close`, `rmdir`, all async-signal-safe), no allocation, a fixed stack
//! buffer, bounded depth and work.
//!
//! Used for a tree copy's hidden staging directory (see `tree::staging`):
//! SIGINT must not leave it behind. Other threads of the copy may still be
//! making entries in it while the handler runs, so a directory that is not
//! empty when its turn to go comes is entered again (its parent is read
//! from the start after each child), and the whole removal is tried a few
//! times. What it cannot remove stays hidden under the staging name, for
//! the next copy into that directory to sweep.
//!
//! Reference: <https://man7.org/linux/man-pages/man2/getdents64.2.html>,
//! <https://man7.org/linux/man-pages/man7/signal-safety.7.html>

use std::ffi::c_char;

/// Deepest directory entered; deeper ones are left for the sweep.
const MAX_DEPTH: usize = 128;
/// Directories entered in one pass at most: bounds the work of a handler
/// that keeps meeting a directory it cannot empty.
const MAX_ENTERED: u32 = 1 << 16;
/// Passes over the whole tree while other threads still add to it.
const PASSES: usize = 4;

/// `struct linux_dirent64`'s fixed part: ino (8), off (8), reclen (2),
/// type (1), then the NUL-terminated name.
const RECLEN_AT: usize = 16;
const TYPE_AT: usize = 18;
const NAME_AT: usize = 19;

/// Removes the directory `path` (NUL-terminated, absolute) and everything
/// in it, as far as it can.
///
/// # Safety
/// `path` must point to a NUL-terminated string that stays valid and
/// unchanged during the call.
pub(crate) unsafe fn remove_tree(path: *const c_char) {
    for _ in 0..PASSES {
        // SAFETY: `path` is NUL-terminated and valid (the caller's promise).
        let root = unsafe {
            libc::open(
                path,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if root < 0 {
            return;
        }
        remove_contents(root);
        // SAFETY: as above; `rmdir` only reads the path.
        if unsafe { libc::rmdir(path) } == 0 {
            return;
        }
    }
}

/// Empties the directory open at `root` and closes it.
fn remove_contents(root: libc::c_int) {
    let mut open = [-1 as libc::c_int; MAX_DEPTH];
    open[0] = root;
    let mut depth = 0;
    let mut entered = 0u32;
    // u64s, for the alignment of `linux_dirent64`.
    let mut buffer = [0u64; 512];
    let buffer_bytes = std::mem::size_of_val(&buffer);
    // Ours to remove: a directory left read-only by its final mode is made
    // writable again.
    // SAFETY: fchmod on a descriptor we opened; no memory is passed.
    unsafe { libc::fchmod(root, 0o700) };
    loop {
        let directory = open[depth];
        // SAFETY: `buffer` is valid for `buffer_bytes` bytes of writes.
        let read = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                directory,
                buffer.as_mut_ptr().cast::<u8>(),
                buffer_bytes,
            )
        };
        if read <= 0 {
            // SAFETY: closing a descriptor we opened.
            unsafe { libc::close(directory) };
            if depth == 0 {
                return;
            }
            depth -= 1;
            // The parent again from its start: the child just emptied is
            // removed on this reading.
            // SAFETY: lseek on a descriptor we opened.
            unsafe { libc::lseek(open[depth], 0, libc::SEEK_SET) };
            continue;
        }
        let bytes = buffer.as_ptr().cast::<u8>();
        let mut offset = 0usize;
        while offset < read as usize {
            // SAFETY: the kernel wrote whole records up to `read`; each
            // has its length at RECLEN_AT, its type at TYPE_AT and a
            // NUL-terminated name from NAME_AT.
            let (length, kind, name) = unsafe {
                let record = bytes.add(offset);
                (
                    std::ptr::read_unaligned(record.add(RECLEN_AT).cast::<u16>()) as usize,
                    *record.add(TYPE_AT),
                    record.add(NAME_AT).cast::<c_char>(),
                )
            };
            offset += length.max(1);
            // SAFETY: `name` is NUL-terminated (above).
            if unsafe { is_dot_or_dot_dot(name) } {
                continue;
            }
            if kind != libc::DT_DIR
                // SAFETY: unlinkat on our descriptor and a NUL-terminated name.
                && unsafe { libc::unlinkat(directory, name, 0) } == 0
            {
                continue;
            }
            if kind != libc::DT_DIR && kind != libc::DT_UNKNOWN {
                continue;
            }
            // SAFETY: as above.
            if unsafe { libc::unlinkat(directory, name, libc::AT_REMOVEDIR) } == 0 {
                continue;
            }
            if depth + 1 == MAX_DEPTH || entered == MAX_ENTERED {
                continue;
            }
            // SAFETY: openat on our descriptor and a NUL-terminated name.
            let child = unsafe {
                libc::openat(
                    directory,
                    name,
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            if child < 0 {
                continue;
            }
            // SAFETY: fchmod on the descriptor just opened.
            unsafe { libc::fchmod(child, 0o700) };
            entered += 1;
            depth += 1;
            open[depth] = child;
            // The rest of this buffer is read again after the child.
            break;
        }
    }
}

/// Whether the NUL-terminated `name` is `.` or `..`.
///
/// # Safety
/// `name` must be NUL-terminated.
unsafe fn is_dot_or_dot_dot(name: *const c_char) -> bool {
    // SAFETY: reading at most up to the NUL (a byte is read only after
    // the one before it was not NUL).
    unsafe {
        *name == b'.' as c_char
            && (*name.add(1) == 0 || (*name.add(1) == b'.' as c_char && *name.add(2) == 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_deep_wide_tree_with_read_only_directories_is_removed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tree");
        for d in 0..30 {
            let sub = root.join(format!("d{d}/inner/deeper"));
            std::fs::create_dir_all(&sub).unwrap();
            for f in 0..150 {
                std::fs::write(sub.join(format!("file-with-a-longish-name-{f}")), b"x").unwrap();
            }
            std::os::unix::fs::symlink("nowhere", root.join(format!("d{d}/link"))).unwrap();
            std::fs::set_permissions(
                root.join(format!("d{d}/inner")),
                std::fs::Permissions::from_mode(0o555),
            )
            .unwrap();
        }
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o500)).unwrap();
        let mut path = root.as_os_str().as_bytes().to_vec();
        path.push(0);
        // SAFETY: a NUL-terminated path that outlives the call.
        unsafe { remove_tree(path.as_ptr().cast()) };
        assert!(!root.exists());
    }
}
