//! The attributes of a copied entry: mode, owner and group, times and
//! extended attributes, set as `cp` sets them.

use std::os::fd::BorrowedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{AtFlags, Gid, Timespec, Timestamps, Uid, CWD};
use rustix::io::Errno;

use super::options::Preserve;
use crate::endpoint::NewMode;
use crate::error::{Error, Result};

/// The mode of a new copy of a source with `source_mode`: with `mode`
/// kept, all of its bits, set-user-ID and set-group-ID only when the owner
/// and group are kept too; else, as `cp`, the permission bits less the
/// umask.
pub(crate) fn new_file_mode(source_mode: u32, preserve: Preserve, umask: u32) -> u32 {
    match (preserve.mode, preserve.ownership) {
        (true, true) => source_mode & 0o7777,
        (true, false) => source_mode & 0o1777,
        (false, _) => source_mode & 0o777 & !umask,
    }
}

/// How a file of a tree gets `bits`, the umask being known: by its
/// creation alone when the umask clears none of them (no `fchmod` per
/// file), else set once it is written.
pub(crate) fn creation_mode(bits: u32, umask: u32) -> NewMode {
    match bits & (umask | 0o7000) {
        0 => NewMode::LessUmask(bits),
        _ => NewMode::Exact(bits),
    }
}

/// Gives `fd` this owner and group where the kernel lets us (root). An
/// unprivileged copy keeps its own, as `cp -p` does without a word.
pub(crate) fn keep_owner(fd: BorrowedFd<'_>, uid: u32, gid: u32) {
    let _ = rustix::fs::fchown(fd, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)));
}

/// Sets `fd`'s access and modification times to the source's, to the
/// nanosecond.
pub(crate) fn set_times(fd: BorrowedFd<'_>, source: &std::fs::Metadata, label: &str) -> Result<()> {
    rustix::fs::futimens(fd, &timestamps(source)).map_err(|e| Error::io("futimens", label, None, e))
}

/// What [`set_path_attributes`] sets the attributes of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A directory this copy made: its final mode, owner and times.
    Directory,
    /// A directory that was there: owner and times as asked, its own mode.
    ExistingDirectory,
    /// A symlink: owner and times of the link itself; links have no mode.
    Symlink,
    /// A FIFO or device node made anew.
    Special,
}

/// Sets a path's mode, owner and times after its contents are in place (a
/// directory), or owner and times without following it (a symlink).
pub(crate) fn set_path_attributes(
    path: &Path,
    source: &std::fs::Metadata,
    preserve: Preserve,
    umask: u32,
    entry: Entry,
) -> Result<()> {
    let label = path.display().to_string();
    let is_symlink = entry == Entry::Symlink;
    let flags = if is_symlink {
        AtFlags::SYMLINK_NOFOLLOW
    } else {
        AtFlags::empty()
    };
    if preserve.ownership {
        match rustix::fs::chownat(
            CWD,
            path,
            Some(Uid::from_raw(source.uid())),
            Some(Gid::from_raw(source.gid())),
            flags,
        ) {
            Ok(()) | Err(Errno::PERM) => {}
            Err(e) => return Err(Error::io("chown", &label, None, e)),
        }
    }
    if matches!(entry, Entry::Directory | Entry::Special) {
        let mode = new_file_mode(source.mode(), preserve, umask);
        rustix::fs::chmodat(
            CWD,
            path,
            rustix::fs::Mode::from_raw_mode(mode),
            AtFlags::empty(),
        )
        .map_err(|e| Error::io("chmod", &label, None, e))?;
    }
    if preserve.timestamps {
        rustix::fs::utimensat(CWD, path, &timestamps(source), flags)
            .map_err(|e| Error::io("utimensat", &label, None, e))?;
    }
    Ok(())
}

fn timestamps(source: &std::fs::Metadata) -> Timestamps {
    Timestamps {
        last_access: Timespec {
            tv_sec: source.atime(),
            tv_nsec: source.atime_nsec() as _,
        },
        last_modification: Timespec {
            tv_sec: source.mtime(),
            tv_nsec: source.mtime_nsec() as _,
        },
    }
}

/// Copies every extended attribute (ACLs are `system.posix_acl_*` ones)
/// the source has and the destination's file system takes. Attributes the
/// destination does not support, or that need privileges we lack
/// (`trusted.*`, `security.*`), are left behind, as `cp -a` does.
pub(crate) fn copy_xattrs(
    source: BorrowedFd<'_>,
    sink: BorrowedFd<'_>,
    source_label: &str,
    sink_label: &str,
) -> Result<()> {
    let size = match rustix::fs::flistxattr_query(source) {
        Ok(0) | Err(Errno::OPNOTSUPP) => return Ok(()),
        Ok(size) => size,
        Err(e) => return Err(Error::io("flistxattr", source_label, None, e)),
    };
    let mut names = vec![0u8; size];
    let len = rustix::fs::flistxattr(source, &mut names[..])
        .map_err(|e| Error::io("flistxattr", source_label, None, e))?;
    let mut value = Vec::new();
    for name in names[..len].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name);
        let wanted = rustix::fs::fgetxattr_query(source, name)
            .map_err(|e| Error::io("fgetxattr", source_label, None, e))?;
        value.resize(wanted, 0);
        let got = rustix::fs::fgetxattr(source, name, &mut value[..])
            .map_err(|e| Error::io("fgetxattr", source_label, None, e))?;
        match rustix::fs::fsetxattr(sink, name, &value[..got], rustix::fs::XattrFlags::empty()) {
            Ok(()) | Err(Errno::OPNOTSUPP) | Err(Errno::PERM) | Err(Errno::ACCESS) => {}
            Err(e) => return Err(Error::io("fsetxattr", sink_label, None, e)),
        }
    }
    Ok(())
}
