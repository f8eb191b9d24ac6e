//! What a tree get makes beneath its destination, whatever the tree came
//! from (a manifest, a tar stream, a listing, a shard): the checked
//! entries, directories made beneath the destination without following a
//! symlink, files fetched whole into a [`NewFile`] and checked before they
//! take their names, their mtimes, and the last steps (symlinks, modes).

use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use flexio::range::{Mover, NewFile};
use rustix::fs::{AtFlags, FileType, Mode};

use super::connection::{Connection, Url};
use super::pieces::receive;
use super::report::Finished;
use super::GetOptions;
use crate::error::{Error, Result};
use crate::manifest::{chunk_hashes, CHUNK_SIZE};
use crate::names::percent_encode;
use crate::walk::open_beneath;

/// One checked entry.
pub(super) struct Planned {
    /// Components, each safe.
    pub parts: Vec<Vec<u8>>,
    pub kind: Kind,
    pub size: u64,
    pub mode: u32,
    pub mtime: i64,
    pub mtime_nsec: u32,
    /// Whether `mtime` is the server's (a listing in HTML gives none).
    pub dated: bool,
    pub blake3: Vec<String>,
    pub link_target: Vec<u8>,
}

/// What a manifest entry is.
#[derive(PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Directory,
    Symlink,
}

/// The destination directory, made if missing (or made meanwhile by
/// another get into it), opened.
pub(super) fn open_destination(destination: &Path, label: &str) -> Result<OwnedFd> {
    match std::fs::create_dir(destination) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && destination.is_dir() => {}
        Err(e) => return Err(Error::io("mkdir", label, None, e)),
    }
    rustix::fs::open(
        destination,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io("open", label, None, e))
}

pub(super) fn join_label(label: &str, parts: &[Vec<u8>]) -> String {
    format!("{label}/{}", crate::names::printable(&parts.join(&b'/')))
}

/// The directory holding `parts`' last component, opened beneath the
/// destination without following a symlink, and that component.
pub(super) fn parent_of<'p>(
    root: &OwnedFd,
    parts: &'p [Vec<u8>],
    label: &str,
) -> Result<(OwnedFd, &'p [u8])> {
    let (name, parents) = parts.split_last().expect("a checked path has a component");
    let parent = open_beneath(root.as_fd(), &parents.join(&b'/'))
        .map_err(|e| Error::io("open", join_label(label, parents), None, e))?;
    Ok((parent, name))
}

/// What is at `name` in `parent` now, if anything.
pub(super) fn existing(parent: &OwnedFd, name: &[u8]) -> Option<FileType> {
    rustix::fs::statat(parent, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|stat| FileType::from_raw_mode(stat.st_mode))
}

/// Makes the directory `entry` unless it is there.
pub(super) fn make_directory(root: &OwnedFd, entry: &Planned, label: &str) -> Result<()> {
    make_directory_in(root.as_fd(), &entry.parts, &join_label(label, &entry.parts))
}

/// Makes the directory at `parts` beneath `root` unless it is there;
/// `shown` names it in errors.
pub(super) fn make_directory_in(
    root: BorrowedFd<'_>,
    parts: &[Vec<u8>],
    shown: &str,
) -> Result<()> {
    let (name, parents) = parts.split_last().expect("a checked path has a component");
    let parent =
        open_beneath(root, &parents.join(&b'/')).map_err(|e| Error::io("open", shown, None, e))?;
    match existing(&parent, name) {
        Some(FileType::Directory) => Ok(()),
        Some(_) => Err(Error::Usage(format!(
            "{shown}: a file is there; a tree get does not replace a file with a directory"
        ))),
        None => {
            match rustix::fs::mkdirat(&parent, OsStr::from_bytes(name), Mode::from_raw_mode(0o700))
            {
                // Made meanwhile by another get into the same tree (a shard).
                Err(rustix::io::Errno::EXIST)
                    if existing(&parent, name) == Some(FileType::Directory) =>
                {
                    Ok(())
                }
                made => made.map_err(|e| Error::io("mkdir", shown, None, e)),
            }
        }
    }
}

/// The last steps of a tree, once every file is in: its symlinks, then
/// each directory's mode and (where the server gave one) mtime, deepest
/// first — only now, since a directory without write permission could
/// take no file, and since every entry made in a directory moves its
/// mtime. A symlink is made only where [`link_stays_beneath`] holds; the
/// others are left out and named.
pub(super) fn finish_tree(root: &OwnedFd, planned: &[Planned], label: &str) -> Result<Finished> {
    let mut finished = Finished::default();
    for entry in planned.iter().filter(|e| e.kind == Kind::Symlink) {
        if link_stays_beneath(root, entry, label)? {
            make_symlink(root, entry, label)?;
            finished.symlinks += 1;
        } else {
            finished
                .escaping_links
                .push(String::from_utf8_lossy(&entry.parts.join(&b'/')).into_owned());
        }
    }
    let mut directories: Vec<&Planned> = planned
        .iter()
        .filter(|e| e.kind == Kind::Directory)
        .collect();
    directories.sort_by_key(|e| std::cmp::Reverse(e.parts.len()));
    for entry in directories {
        let (parent, name) = parent_of(root, &entry.parts, label)?;
        let name = OsStr::from_bytes(name);
        let shown = || join_label(label, &entry.parts);
        rustix::fs::chmodat(
            &parent,
            name,
            Mode::from_raw_mode(entry.mode & 0o777),
            AtFlags::empty(),
        )
        .map_err(|e| Error::io("chmod", shown(), None, e))?;
        if entry.dated {
            let mtime = timespec(entry.mtime, entry.mtime_nsec);
            let times = rustix::fs::Timestamps {
                last_access: mtime,
                last_modification: mtime,
            };
            rustix::fs::utimensat(&parent, name, &times, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| Error::io("utimensat", shown(), None, e))?;
        }
    }
    Ok(finished)
}

/// Whether the symlink `entry` stays beneath the destination however the
/// links beside it resolve — those made already, those still to come in
/// this get, and those a later get into the same destination replaces.
///
/// Its target is walked from the link's directory through the real
/// directories that are there now (`lstat`, no link followed), with each
/// `..` counted against the depth: climbing above the destination is out.
/// At the first component that is not a real directory — a symlink, or a
/// name not there yet — the walk stops, and the rest of the target may
/// only descend (no `..`): every link this rule lets in then resolves
/// inside the destination, since a link component leads to a place inside
/// (the same rule held for it) and names beneath a place inside stay
/// inside. `s -> .` is kept; `t -> s/..` and `d/v -> ../s/..` are not,
/// whatever `s` is, since `s` may be (or become) a link to anywhere
/// inside. An absolute target, an empty one, or one with a NUL is out.
///
/// # Errors
/// Those of opening a directory beneath the destination.
pub(super) fn link_stays_beneath(root: &OwnedFd, entry: &Planned, label: &str) -> Result<bool> {
    let target = &entry.link_target;
    if target.is_empty() || target.starts_with(b"/") || target.contains(&0) {
        return Ok(false);
    }
    // The real directories from the destination to where the walk is.
    let mut at: Vec<&[u8]> = entry.parts[..entry.parts.len() - 1]
        .iter()
        .map(Vec::as_slice)
        .collect();
    let mut parts = target.split(|&b| b == b'/');
    for part in parts.by_ref() {
        match part {
            b"" | b"." => continue,
            b".." => {
                if at.pop().is_none() {
                    return Ok(false);
                }
                continue;
            }
            name => {
                let directory = open_beneath(root.as_fd(), &at.join(&b'/'))
                    .map_err(|e| Error::io("open", join_label(label, &entry.parts), None, e))?;
                if existing(&directory, name) != Some(FileType::Directory) {
                    break;
                }
                at.push(name);
            }
        }
    }
    Ok(parts.all(|part| part != b".."))
}

fn make_symlink(root: &OwnedFd, entry: &Planned, label: &str) -> Result<()> {
    let (parent, name) = parent_of(root, &entry.parts, label)?;
    let shown = join_label(label, &entry.parts);
    match existing(&parent, name) {
        None => {}
        Some(FileType::Symlink) => {
            rustix::fs::unlinkat(&parent, OsStr::from_bytes(name), AtFlags::empty())
                .map_err(|e| Error::io("unlink", &shown, None, e))?
        }
        Some(_) => {
            return Err(Error::Usage(format!(
                "{shown}: something else is there; not replaced with a symlink"
            )))
        }
    }
    rustix::fs::symlinkat(
        OsStr::from_bytes(&entry.link_target),
        &parent,
        OsStr::from_bytes(name),
    )
    .map_err(|e| Error::io("symlink", &shown, None, e))
}

/// Whether a file was fetched.
pub(super) enum Fetched {
    New,
    Unchanged,
}

impl Fetched {
    /// Counts a job of `files` files and `bytes` bytes done: the bytes of
    /// one fetched were counted as they arrived, those of one unchanged
    /// only now.
    pub(super) fn count(fetched: &Result<Fetched>, options: &GetOptions, files: u64, bytes: u64) {
        let Some(progress) = &options.progress else {
            return;
        };
        match fetched {
            Ok(Fetched::New) => progress.files_done(files, 0),
            Ok(Fetched::Unchanged) => progress.files_done(files, bytes),
            Err(_) => {}
        }
    }
}

/// What the workers of a tree get found, together: how many files were
/// there already, and the first error (after which the others stop).
#[derive(Default)]
pub(super) struct Outcomes {
    unchanged: AtomicUsize,
    failed: AtomicBool,
    errors: Mutex<Vec<Error>>,
}

impl Outcomes {
    /// Counts one file's outcome.
    pub(super) fn record(&self, fetched: Result<Fetched>) {
        match fetched {
            Ok(Fetched::Unchanged) => {
                self.unchanged.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Fetched::New) => {}
            Err(error) => {
                self.failed.store(true, Ordering::Relaxed);
                self.errors.lock().unwrap().push(error);
            }
        }
    }

    /// Whether a worker failed: the others take no new file.
    pub(super) fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// The files found unchanged, or the first error.
    pub(super) fn finish(self) -> Result<u64> {
        match self.errors.into_inner().unwrap().into_iter().next() {
            Some(error) => Err(error),
            None => Ok(self.unchanged.into_inner() as u64),
        }
    }
}

/// Where a tree entry's file goes: its name as shown, its directory
/// opened beneath the destination, its last component, and what is there
/// now (`lstat`).
pub(super) struct Slot<'p> {
    pub shown: String,
    pub parent: OwnedFd,
    pub name: &'p [u8],
    pub here: Option<rustix::fs::Stat>,
}

impl<'p> Slot<'p> {
    /// `entry`'s slot beneath `root`.
    ///
    /// # Errors
    /// [`Error::Usage`] where a directory is in the file's place; the
    /// errors of opening its directory.
    pub(super) fn of(root: &OwnedFd, entry: &'p Planned, label: &str) -> Result<Slot<'p>> {
        let shown = join_label(label, &entry.parts);
        let (parent, name) = parent_of(root, &entry.parts, label)?;
        let here =
            rustix::fs::statat(&parent, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW).ok();
        if here.is_some_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory) {
            return Err(Error::Usage(format!(
                "{shown}: a directory is there; not replaced with a file"
            )));
        }
        Ok(Slot {
            shown,
            parent,
            name,
            here,
        })
    }

    /// The regular file there now, if any.
    pub(super) fn regular_file(&self) -> Option<rustix::fs::Stat> {
        self.here
            .filter(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile)
    }

    /// A new file for the slot (named through `/proc/self/fd`, so no
    /// component can be swapped for a symlink meanwhile), taking its name
    /// only on commit.
    pub(super) fn new_file(&self, mode: u32) -> Result<NewFile> {
        let destination = PathBuf::from(format!("/proc/self/fd/{}", self.parent.as_raw_fd()))
            .join(OsStr::from_bytes(self.name));
        Ok(NewFile::create(&destination, mode & 0o777)?)
    }
}

/// The request target for `entry` under the directory `url`, and its URL
/// as shown.
pub(super) fn entry_target(url: &Url, entry: &Planned) -> (String, String) {
    let encoded: Vec<String> = entry.parts.iter().map(|p| percent_encode(p)).collect();
    let target = format!("{}{}", url.target, encoded.join("/"));
    let peer = url.with_target(target.clone()).to_string();
    (target, peer)
}

/// Fetches one file whole over `connection` (opening one when it has
/// none), checks it, and links it in — unless a regular file with its
/// size and mtime is already there.
pub(super) fn fetch_file(
    connection: &mut Option<Connection>,
    url: &Url,
    root: &OwnedFd,
    entry: &Planned,
    label: &str,
    options: &GetOptions,
    mover: &mut Mover,
) -> Result<Fetched> {
    let slot = Slot::of(root, entry, label)?;
    if slot.regular_file().is_some_and(|stat| {
        stat.st_size as u64 == entry.size
            && stat.st_mtime == entry.mtime
            && stat.st_mtime_nsec == u64::from(entry.mtime_nsec)
    }) {
        return Ok(Fetched::Unchanged);
    }
    let file = slot.new_file(entry.mode)?;
    let (target, peer) = entry_target(url, entry);
    let mut open = match connection.take() {
        Some(open) => open,
        None => Connection::open(url, options.timeout, &options.tls)?,
    };
    open.send_get(&target, "")?;
    let response = open.read_response()?;
    if response.status != 200 {
        return Err(Error::Status {
            peer,
            status: response.status,
            reason: response.reason,
        });
    }
    if response.header("transfer-encoding").is_some()
        || response.content_length(&peer)? != Some(entry.size)
    {
        return Err(Error::protocol(
            &peer,
            format!(
                "not the {} bytes the manifest lists (changed since?)",
                entry.size
            ),
        ));
    }
    if entry.size > 0 {
        receive(
            &mut open,
            file.fd(),
            &slot.shown,
            0,
            entry.size,
            entry.size,
            options,
            mover,
        )?;
    }
    if !response.closes() {
        *connection = Some(open);
    }
    finish(file, entry, slot.shown, options, None)?;
    Ok(Fetched::New)
}

/// Checks a received file against the manifest (unless `--no-verify`),
/// gives it the manifest's mtime and links it in. `hashes` are its chunk
/// hashes when the caller took them from the bytes it wrote; otherwise the
/// file is read back and hashed.
pub(super) fn finish(
    file: NewFile,
    entry: &Planned,
    shown: String,
    options: &GetOptions,
    hashes: Option<Vec<String>>,
) -> Result<()> {
    if options.verify {
        let hashes = match hashes {
            Some(hashes) => hashes,
            None => chunk_hashes(file.fd(), entry.size)
                .map_err(|e| Error::io("read", &shown, None, e))?,
        };
        check_hashes(entry, &hashes, &shown, options)?;
    }
    set_mtime(file.fd(), entry, &shown)?;
    file.commit(entry.size, options.fsync)?;
    Ok(())
}

/// Whether a file's chunk `hashes` are the manifest's (always, with
/// `--no-verify`).
///
/// # Errors
/// [`Error::VerifyMismatch`] naming the first chunk that differs.
pub(super) fn check_hashes(
    entry: &Planned,
    hashes: &[String],
    shown: &str,
    options: &GetOptions,
) -> Result<()> {
    if !options.verify {
        return Ok(());
    }
    match (0..hashes.len().max(entry.blake3.len())).find(|&i| hashes.get(i) != entry.blake3.get(i))
    {
        Some(chunk) => Err(Error::VerifyMismatch {
            path: shown.to_string(),
            chunk,
            offset: chunk as u64 * CHUNK_SIZE,
        }),
        None => Ok(()),
    }
}

/// Gives the open file the manifest's mtime (and it as atime).
pub(super) fn set_mtime(file: BorrowedFd<'_>, entry: &Planned, shown: &str) -> Result<()> {
    set_times(file, entry.mtime, entry.mtime_nsec, shown)
}

/// Gives the open file `seconds` and `nanoseconds` as mtime and atime.
pub(super) fn set_times(
    file: BorrowedFd<'_>,
    seconds: i64,
    nanoseconds: u32,
    shown: &str,
) -> Result<()> {
    let mtime = timespec(seconds, nanoseconds);
    rustix::fs::futimens(
        file,
        &rustix::fs::Timestamps {
            last_access: mtime,
            last_modification: mtime,
        },
    )
    .map_err(|e| Error::io("futimens", shown, None, e))
}

/// `seconds` and `nanoseconds` as a time to set.
fn timespec(seconds: i64, nanoseconds: u32) -> rustix::fs::Timespec {
    rustix::fs::Timespec {
        tv_sec: seconds,
        tv_nsec: i64::from(nanoseconds.min(999_999_999)),
    }
}
