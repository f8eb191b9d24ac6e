//! Opening names beneath a held directory, and walking a subtree for a
//! manifest or a tar stream. Every open goes through `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, so no name and no symlink —
//! whatever a client asks or the tree holds — reaches outside the served
//! directory. A symlink is reported as one, never followed.

use std::ffi::OsStr;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};

/// The most entries one walk lists; past it the walk fails before more
/// memory is taken.
pub const MAX_ENTRIES: usize = 1_000_000;

/// The deepest a walk goes.
pub const MAX_DEPTH: usize = 256;

/// Opens `path` (components joined by `/`, empty for the directory
/// itself) beneath `root`, never following a symlink, never blocking on a
/// FIFO.
pub(crate) fn open_beneath(root: BorrowedFd<'_>, path: &[u8]) -> std::io::Result<OwnedFd> {
    let path = if path.is_empty() { b"." as &[u8] } else { path };
    Ok(rustix::fs::openat2(
        root,
        OsStr::from_bytes(path),
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )?)
}

/// What an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket or device: listed, never served.
    Other,
}

impl EntryKind {
    /// The word used in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Directory => "directory",
            EntryKind::Symlink => "symlink",
            EntryKind::Other => "other",
        }
    }

    pub(crate) fn of(stat: &Stat) -> Self {
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => EntryKind::File,
            FileType::Directory => EntryKind::Directory,
            FileType::Symlink => EntryKind::Symlink,
            _ => EntryKind::Other,
        }
    }
}

/// What identifies a version of a file: device, inode, size, mtime and
/// ctime (which a user cannot set back). The server's hash cache is keyed
/// by it.
pub(crate) type FileKey = (u64, u64, i64, i64, u64, i64, u64);

/// `stat`'s [`FileKey`].
pub(crate) fn file_key(stat: &Stat) -> FileKey {
    (
        stat.st_dev,
        stat.st_ino,
        stat.st_size,
        stat.st_mtime,
        stat.st_mtime_nsec,
        stat.st_ctime,
        stat.st_ctime_nsec,
    )
}

/// One entry of a walk.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    /// Relative to the walked directory, components joined by `/`.
    pub path: Vec<u8>,
    pub kind: EntryKind,
    pub size: u64,
    pub mode: u32,
    pub mtime: i64,
    pub mtime_nsec: u32,
    pub uid: u32,
    pub gid: u32,
    /// A symlink's target, as stored.
    pub link_target: Option<Vec<u8>>,
    /// The version walked (a manifest finds a file's hashes by it without
    /// opening the file).
    pub key: FileKey,
}

/// Walks the directory `dir` depth first, each directory before its
/// entries and entries sorted by name, so the output is the same from one
/// run to the next.
///
/// # Errors
/// An I/O error of `getdents`, `statat`, `openat2` or `readlinkat`;
/// `E2BIG` past [`MAX_ENTRIES`], `ELOOP` past [`MAX_DEPTH`].
pub(crate) fn walk(dir: BorrowedFd<'_>) -> std::io::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    walk_into(dir, &[], 0, &mut entries)?;
    Ok(entries)
}

fn walk_into(
    dir: BorrowedFd<'_>,
    prefix: &[u8],
    depth: usize,
    entries: &mut Vec<Entry>,
) -> std::io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(rustix::io::Errno::LOOP.into());
    }
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let name = entry?.file_name().to_bytes().to_vec();
        // `.` and `..` are no entries; every other name Linux holds a GET
        // can ask for (a control character percent-encoded).
        if crate::names::is_safe_component(&name) {
            names.push(name);
        }
        if entries.len() + names.len() > MAX_ENTRIES {
            return Err(rustix::io::Errno::TOOBIG.into());
        }
    }
    names.sort();
    for name in names {
        let stat = rustix::fs::statat(dir, OsStr::from_bytes(&name), AtFlags::SYMLINK_NOFOLLOW)?;
        let kind = EntryKind::of(&stat);
        let mut path = prefix.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(&name);
        let link_target = match kind {
            EntryKind::Symlink => Some(
                rustix::fs::readlinkat(dir, OsStr::from_bytes(&name), Vec::new())?.into_bytes(),
            ),
            _ => None,
        };
        entries.push(Entry {
            path: path.clone(),
            kind,
            size: if kind == EntryKind::File {
                stat.st_size as u64
            } else {
                0
            },
            mode: stat.st_mode & 0o7777,
            mtime: stat.st_mtime,
            mtime_nsec: stat.st_mtime_nsec as u32,
            uid: stat.st_uid,
            gid: stat.st_gid,
            link_target,
            key: file_key(&stat),
        });
        if kind == EntryKind::Directory {
            let child = open_beneath(dir, &name)?;
            walk_into(std::os::fd::AsFd::as_fd(&child), &path, depth + 1, entries)?;
        }
    }
    Ok(())
}
