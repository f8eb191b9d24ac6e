//! `flexio get URL/dir/ DEST --shard K/N`: this process's part of a tree
//! (see [`crate::shard`]), fetched by N processes that never talk to each
//! other but through DEST.
//!
//! Into a destination every shard shares ([`Split::Ranges`]):
//!
//! - every shard makes every directory (one made meanwhile by another
//!   is taken as it is) and fetches its whole files as a plain tree get
//!   does: each into its own temporary, verified, linked in at its name;
//! - a file split between shards is written by each into one shared
//!   partial file beside it, `.NAME.flexio-shard-ID` (ID: the file's
//!   path, size, mtime and hashes, so two versions never mix), at its own
//!   offsets; each shard checks its chunks against the manifest's BLAKE3,
//!   syncs its range to the file system (on a network file system another
//!   host must see the bytes), then notes the range done in the tree's
//!   coordination directory `DEST/.flexio-shards-ID` (ID: the tree's
//!   manifest; it records the shard count, and a shard of another count
//!   is refused before it makes anything); the shard that
//!   notes the last range of a file gives it its mode and mtime and
//!   renames it to its name: so the file appears whole, verified, once;
//! - each shard notes itself done there too, and the last one makes the
//!   symlinks, sets the directories' modes (not before: a read-only
//!   directory would refuse the other shards' files) and removes the
//!   coordination directory.
//!
//! "The last" is decided under an `flock(2)` on a lock file in the
//! coordination directory (which a network file system's lock manager
//! carries between hosts; Lustre needs `-o flock`), so two shards
//! finishing at once cannot both or neither commit. A shard killed at any
//! point leaves only hidden names; run again, it skips the ranges it noted
//! and the files already whole, and the last one to finish still finishes
//! the tree.
//!
//! A shard that starts when the tree is already whole, as its manifest
//! says, and no coordination directory is there (its array finished, and
//! this one is run again or late) fetches nothing and makes nothing: it
//! does not leave a coordination directory that no other shard would
//! come to remove.
//!
//! Into destinations of their own ([`Split::WholeFiles`]) each shard
//! fetches whole files only, makes every directory and symlink of the
//! tree in its destination, and finishes it alone.

use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use flexio::range::Mover;
use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

use super::connection::{Connection, Url};
use super::pieces::receive;
use super::report::TreeReport;
use super::report::{ShardPart, ShardReport};
use super::tree::fetch_manifest;
use super::tree_dest::{
    existing, fetch_file, finish_tree, join_label, link_stays_beneath, make_directory,
    open_destination, parent_of, set_mtime, Fetched, Kind, Outcomes, Planned,
};
use super::GetOptions;
use crate::error::{Error, Result};
use crate::manifest::{hash_chunks, CHUNK_SIZE};
use crate::names::percent_encode;
use crate::ranges::parse_content_range;
use crate::shard::{plan, Shard, Split};

/// What one stream of this shard fetches at a time.
enum Job<'a> {
    Whole(&'a Planned),
    /// A range of a split file, and the first byte of every range of
    /// that file (whichever shard's), to know when it is whole.
    Range(&'a Planned, u64, u64, Vec<u64>),
}

impl Job<'_> {
    fn bytes(&self) -> u64 {
        match self {
            Job::Whole(entry) => entry.size,
            Job::Range(_, start, end, _) => end - start,
        }
    }
}

/// Fetches shard `shard` of the tree at `url` into `destination`: into a
/// destination every shard shares with [`Split::Ranges`], into one of
/// its own with [`Split::WholeFiles`] (see the module's description).
///
/// # Errors
/// Those of [`super::get_tree`]; [`Error::Protocol`] when a server
/// answers a range with other bytes; [`Error::VerifyMismatch`] when a
/// range does not match the manifest.
///
/// # Examples
/// ```no_run
/// use flexio_net::shard::{Shard, Split};
/// let report = flexio_net::client::get_tree_sharded(
///     "http://127.0.0.1:8080/data/",
///     std::path::Path::new("/shared/data"),
///     &flexio_net::client::GetOptions { streams: 4, ..Default::default() },
///     Shard { index: 0, count: 4 },
///     Split::Ranges,
/// )?;
/// println!("{} bytes were this shard's", report.shard.unwrap().bytes);
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn get_tree_sharded(
    url: &str,
    destination: &Path,
    options: &GetOptions,
    shard: Shard,
    split: Split,
) -> Result<TreeReport> {
    let options = &options.with_rate_bucket();
    let started = Instant::now();
    let url = Url::parse(url)?;
    if !url.target.ends_with('/') {
        return Err(Error::Usage(format!(
            "{url}: --shard shares a tree: give a directory URL, ending in /"
        )));
    }
    let mut connection = Connection::open(&url, options.timeout, &options.tls)?;
    let (planned, left_out) = fetch_manifest(&mut connection, &url)?;
    let label = destination.display().to_string();
    let root = open_destination(destination, &label)?;
    let coordination = match split {
        Split::Ranges => Coordination::open(&root, &planned, shard, &label)?,
        Split::WholeFiles => None,
    };
    // Ranges into a shared destination with no coordination: the tree was
    // finished before this shard came.
    let finished_before = split == Split::Ranges && coordination.is_none();
    let files: Vec<&Planned> = planned.iter().filter(|e| e.kind == Kind::File).collect();
    let list: Vec<(Vec<u8>, u64)> = files
        .iter()
        .map(|f| (f.parts.join(&b'/'), f.size))
        .collect();
    let parts = plan(&list, shard.count, split);
    let mut report = ShardReport {
        index: shard.index,
        count: shard.count,
        split_files: split == Split::Ranges,
        ..ShardReport::default()
    };
    let mut jobs = Vec::new();
    for part in parts.iter().filter(|p| p.shard == shard.index) {
        let entry = files[part.file];
        report.bytes += part.end - part.start;
        report.parts.push(ShardPart {
            path: String::from_utf8_lossy(&list[part.file].0).into_owned(),
            start: part.start,
            end: part.end,
        });
        if part.start == 0 && part.end == entry.size {
            report.whole_files += 1;
            jobs.push(Job::Whole(entry));
        } else {
            report.ranges += 1;
            let starts = parts
                .iter()
                .filter(|p| p.file == part.file)
                .map(|p| p.start)
                .collect();
            jobs.push(Job::Range(entry, part.start, part.end, starts));
        }
    }
    jobs.sort_by_key(|job| std::cmp::Reverse(job.bytes()));
    let mut tree = TreeReport::starting(&url, destination, left_out);
    for entry in planned.iter().filter(|e| e.kind == Kind::Directory) {
        make_directory(&root, entry, &label)?;
        tree.directories += 1;
    }
    if let Some(progress) = &options.progress {
        progress.expect(report.bytes, Some(jobs.len() as u64));
    }
    let streams = options.streams.max(1).min(jobs.len().max(1));
    let unchanged = if finished_before {
        jobs.len() as u64
    } else {
        run_jobs(
            &jobs,
            streams,
            connection,
            &url,
            &root,
            coordination.as_ref(),
            &label,
            options,
        )?
    };
    tree.unchanged = unchanged;
    tree.files = jobs.len() as u64 - unchanged;
    tree.bytes = report.bytes;
    tree.streams = streams;
    match &coordination {
        Some(coordination) => {
            coordination.locked(|| {
                coordination.mark(&format!("done-{}", shard.index))?;
                if (0..shard.count).all(|k| coordination.marked(&format!("done-{k}"))) {
                    tree.finish(finish_tree(&root, &planned, &label)?);
                    coordination.remove(&root);
                    report.finished_tree = true;
                }
                Ok(())
            })?;
        }
        None if finished_before => {}
        None => {
            tree.finish(finish_tree(&root, &planned, &label)?);
            report.finished_tree = true;
        }
    }
    tree.shard = Some(report);
    tree.wall_ns = started.elapsed().as_nanos() as u64;
    Ok(tree)
}

/// Runs `jobs` over `streams` connections (the first one given); the
/// count of files found unchanged, or the first error.
#[allow(clippy::too_many_arguments)]
fn run_jobs(
    jobs: &[Job<'_>],
    streams: usize,
    connection: Connection,
    url: &Url,
    root: &OwnedFd,
    coordination: Option<&Coordination>,
    label: &str,
    options: &GetOptions,
) -> Result<u64> {
    let next = AtomicUsize::new(0);
    let outcomes = Outcomes::default();
    let first = Mutex::new(Some(connection));
    std::thread::scope(|scope| {
        for _ in 0..streams {
            scope.spawn(|| {
                let mut connection = first.lock().unwrap().take();
                let mut mover = Mover::new();
                while !outcomes.failed() {
                    let Some(job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let fetched = match job {
                        Job::Whole(entry) => fetch_file(
                            &mut connection,
                            url,
                            root,
                            entry,
                            label,
                            options,
                            &mut mover,
                        ),
                        Job::Range(entry, start, end, starts) => {
                            let shared = SharedFile {
                                root,
                                entry,
                                starts,
                                coordination: coordination
                                    .expect("ranges only into a shared destination"),
                                label,
                            };
                            shared.fetch_range(
                                &mut connection,
                                url,
                                (*start, *end),
                                options,
                                &mut mover,
                            )
                        }
                    };
                    Fetched::count(&fetched, options, 1, job.bytes());
                    outcomes.record(fetched);
                }
            });
        }
    });
    outcomes.finish()
}

/// The first 16 hex digits of BLAKE3 over `fields`, each length-prefixed.
fn identity<'a>(fields: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut hasher = blake3::Hasher::new();
    for field in fields {
        hasher.update(&(field.len() as u64).to_le_bytes());
        hasher.update(field);
    }
    hasher.finalize().to_hex()[..16].to_string()
}

/// What identifies a file's version: path, size, mtime, hashes.
fn file_identity(entry: &Planned) -> String {
    let path = entry.parts.join(&b'/');
    let numbers = [
        entry.size.to_le_bytes(),
        entry.mtime.to_le_bytes(),
        u64::from(entry.mtime_nsec).to_le_bytes(),
    ];
    identity(
        [path.as_slice()]
            .into_iter()
            .chain(numbers.iter().map(|n| n.as_slice()))
            .chain(entry.blake3.iter().map(|h| h.as_bytes())),
    )
}

/// The coordination directory of one sharded get: markers of the ranges
/// and shards done, and the lock that orders who is last.
struct Coordination {
    name: String,
    directory: OwnedFd,
    lock: OwnedFd,
    /// `flock` orders processes; the threads of this one take this first
    /// (a second `flock` on the same open file would not wait).
    threads: Mutex<()>,
    label: String,
}

impl Coordination {
    /// Opens (making it if needed) the directory named after the tree's
    /// manifest, so that every get of the same tree into DEST meets there,
    /// and records the shard count in it: a shard of the same tree split
    /// another way is refused before it makes anything (two splits would
    /// write different ranges into one partial file and neither would
    /// ever be the last).
    ///
    /// `None`, making nothing, when the tree is finished: no directory is
    /// there and the destination holds the tree as its last shard leaves
    /// it, or the last shard removed the directory while this one was
    /// opening it.
    ///
    /// # Errors
    /// [`Error::Usage`] naming both splits when the directory records
    /// another count; I/O errors of making and locking it.
    fn open(
        root: &OwnedFd,
        planned: &[Planned],
        shard: Shard,
        label: &str,
    ) -> Result<Option<Self>> {
        let name = Self::name_for_tree(planned);
        if existing(root, name.as_bytes()).is_none() && tree_is_finished(root, planned, label) {
            return Ok(None);
        }
        let coordination = Self::open_named(root, name, label)?;
        let removed = coordination.locked(|| {
            if coordination.removed()? {
                return Ok(true);
            }
            coordination.record_count(shard).map(|()| false)
        })?;
        Ok((!removed).then_some(coordination))
    }

    /// Whether the directory was removed (by the last shard, under the
    /// lock: the tree is finished) since this one opened it.
    fn removed(&self) -> Result<bool> {
        let stat = rustix::fs::fstat(&self.directory)
            .map_err(|e| Error::io("fstat", self.label.as_str(), None, e))?;
        Ok(stat.st_nlink == 0)
    }

    /// The `shards-N` marker that says how this tree's get is split,
    /// written by its first shard; `Err` when another count is there.
    fn record_count(&self, shard: Shard) -> Result<()> {
        let ours = format!("shards-{}", shard.count);
        let listing = format!("/proc/self/fd/{}", self.directory.as_raw_fd());
        let entries = std::fs::read_dir(listing)
            .map_err(|e| Error::io("readdir", self.label.as_str(), None, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if let Some(count) = name.strip_prefix("shards-").filter(|_| *name != ours) {
                return Err(Error::Usage(format!(
                    "{}: this tree is being fetched here in {count} shards, and this is shard {}/{}; \
                     run the others with /{count}, or remove {} to start over split another way",
                    self.label, shard.index, shard.count, self.label
                )));
            }
        }
        self.mark(&ours)
    }

    /// The name of the coordination directory of the tree `planned`.
    fn name_for_tree(planned: &[Planned]) -> String {
        let mut fields: Vec<Vec<u8>> = Vec::new();
        for entry in planned {
            fields.push(entry.parts.join(&b'/'));
            fields.push(file_identity(entry).into_bytes());
            fields.push(entry.mode.to_le_bytes().to_vec());
            fields.push(entry.link_target.clone());
        }
        format!(
            ".flexio-shards-{}",
            identity(fields.iter().map(Vec::as_slice))
        )
    }

    /// The coordination directory `name`, made if needed.
    fn open_named(root: &OwnedFd, name: String, label: &str) -> Result<Self> {
        let label = format!("{label}/{name}");
        match rustix::fs::mkdirat(root, name.as_str(), Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(Error::io("mkdir", &label, None, e)),
        }
        let directory = rustix::fs::openat(
            root,
            name.as_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io("open", &label, None, e))?;
        let lock = rustix::fs::openat(
            &directory,
            "lock",
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| Error::io("open", format!("{label}/lock"), None, e))?;
        Ok(Coordination {
            name,
            directory,
            lock,
            threads: Mutex::new(()),
            label,
        })
    }

    /// Runs `step` while no other shard (process or thread) runs one.
    fn locked<T>(&self, step: impl FnOnce() -> Result<T>) -> Result<T> {
        let _thread = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        rustix::fs::flock(&self.lock, FlockOperation::LockExclusive)
            .map_err(|e| Error::io("flock", format!("{}/lock", self.label), None, e))?;
        let outcome = step();
        let _ = rustix::fs::flock(&self.lock, FlockOperation::Unlock);
        outcome
    }

    fn mark(&self, marker: &str) -> Result<()> {
        rustix::fs::openat(
            &self.directory,
            marker,
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map(drop)
        .map_err(|e| Error::io("create", format!("{}/{marker}", self.label), None, e))
    }

    fn marked(&self, marker: &str) -> bool {
        rustix::fs::statat(&self.directory, marker, AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// Removes the directory and its markers, once the tree is whole.
    /// Best effort: what stays is hidden and names nothing of the tree.
    fn remove(&self, root: &OwnedFd) {
        // Every name in it is one this module made: markers and the lock.
        let listing = format!("/proc/self/fd/{}", self.directory.as_raw_fd());
        if let Ok(entries) = std::fs::read_dir(listing) {
            for entry in entries.flatten() {
                let _ = rustix::fs::unlinkat(&self.directory, entry.file_name(), AtFlags::empty());
            }
        }
        let _ = rustix::fs::unlinkat(root, self.name.as_str(), AtFlags::REMOVEDIR);
    }
}

/// A file split between shards, as one of them sees it.
struct SharedFile<'a> {
    root: &'a OwnedFd,
    entry: &'a Planned,
    /// The first byte of each of its ranges.
    starts: &'a [u64],
    coordination: &'a Coordination,
    label: &'a str,
}

impl SharedFile<'_> {
    /// Fetches bytes `start..end` into the shared partial file, checks
    /// them, notes them done, and commits the file when every range is.
    fn fetch_range(
        &self,
        connection: &mut Option<Connection>,
        url: &Url,
        (start, end): (u64, u64),
        options: &GetOptions,
        mover: &mut Mover,
    ) -> Result<Fetched> {
        let entry = self.entry;
        let shown = join_label(self.label, &entry.parts);
        let (parent, name) = parent_of(self.root, &entry.parts, self.label)?;
        if let Some(fetched) = unchanged(&parent, name, entry, &shown)? {
            return Ok(fetched);
        }
        let id = file_identity(entry);
        let partial_name = partial_name(name, &id);
        let marker = format!("range-{id}-{start}");
        if !self.coordination.marked(&marker) {
            let partial = rustix::fs::openat(
                &parent,
                partial_name.as_slice(),
                OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map_err(|e| Error::io("open", &shown, None, e))?;
            let stat =
                rustix::fs::fstat(&partial).map_err(|e| Error::io("fstat", &shown, None, e))?;
            if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
                return Err(Error::Usage(format!(
                    "{shown}: its shared partial file is not a regular file; remove it"
                )));
            }
            if stat.st_size as u64 != entry.size {
                rustix::fs::ftruncate(&partial, entry.size)
                    .map_err(|e| Error::io("ftruncate", &shown, None, e))?;
            }
            self.receive(
                connection,
                url,
                &partial,
                (start, end),
                &shown,
                options,
                mover,
            )?;
            if options.verify {
                self.check(&partial, (start, end), &shown)?;
            }
            // Another host must see these bytes before the range counts.
            rustix::fs::fdatasync(&partial)
                .map_err(|e| Error::io("fdatasync", &shown, Some(start), e))?;
        }
        self.coordination.locked(|| {
            self.coordination.mark(&marker)?;
            self.commit_if_whole(&parent, name, &partial_name, &id, &shown, options)
        })?;
        Ok(Fetched::New)
    }

    /// Asks for the range and splices its body in at its offset.
    #[allow(clippy::too_many_arguments)]
    fn receive(
        &self,
        connection: &mut Option<Connection>,
        url: &Url,
        partial: &OwnedFd,
        (start, end): (u64, u64),
        shown: &str,
        options: &GetOptions,
        mover: &mut Mover,
    ) -> Result<()> {
        let entry = self.entry;
        let encoded: Vec<String> = entry.parts.iter().map(|p| percent_encode(p)).collect();
        let target = format!("{}{}", url.target, encoded.join("/"));
        let peer = url.with_target(target.clone()).to_string();
        let mut open = match connection.take() {
            Some(open) => open,
            None => Connection::open(url, options.timeout, &options.tls)?,
        };
        let last = end - 1;
        open.send_get(&target, &format!("Range: bytes={start}-{last}\r\n"))?;
        let response = open.read_response()?;
        let promised = response.content_length(&peer)?;
        let range = response
            .header("content-range")
            .and_then(parse_content_range);
        if response.status != 206
            || range != Some((Some((start, last)), Some(entry.size)))
            || promised != Some(end - start)
        {
            return Err(Error::protocol(
                peer,
                format!(
                    "asked for bytes {start}-{last} of the {} the manifest lists, got {} with Content-Range {:?}",
                    entry.size,
                    response.status,
                    response.header("content-range")
                ),
            ));
        }
        receive(
            &mut open,
            partial.as_fd(),
            shown,
            start,
            end - start,
            entry.size,
            options,
            mover,
        )?;
        if !response.closes() {
            *connection = Some(open);
        }
        Ok(())
    }

    /// Checks the manifest chunks wholly inside `start..end`; the chunk a
    /// cut falls in is checked by the shard that commits the file.
    fn check(&self, partial: &OwnedFd, (start, end): (u64, u64), shown: &str) -> Result<()> {
        let size = self.entry.size;
        let first = start.div_ceil(CHUNK_SIZE);
        let past = if end == size {
            size.div_ceil(CHUNK_SIZE)
        } else {
            end / CHUNK_SIZE
        };
        self.check_chunks(partial, first..past.max(first), shown)
    }

    /// Checks chunks `chunks` of the partial file against the manifest.
    fn check_chunks(
        &self,
        partial: &OwnedFd,
        chunks: std::ops::Range<u64>,
        shown: &str,
    ) -> Result<()> {
        let first = chunks.start;
        let hashes = hash_chunks(partial.as_fd(), self.entry.size, chunks)
            .map_err(|e| Error::io("read", shown, Some(first * CHUNK_SIZE), e))?;
        for (chunk, hash) in (first..).zip(&hashes) {
            if self.entry.blake3.get(chunk as usize) != Some(hash) {
                return Err(Error::VerifyMismatch {
                    path: shown.to_string(),
                    chunk: chunk as usize,
                    offset: chunk * CHUNK_SIZE,
                });
            }
        }
        Ok(())
    }

    /// Under the coordination lock: when every range of the file is noted
    /// done, gives the partial file its mode and mtime and its name.
    fn commit_if_whole(
        &self,
        parent: &OwnedFd,
        name: &[u8],
        partial_name: &[u8],
        id: &str,
        shown: &str,
        options: &GetOptions,
    ) -> Result<()> {
        let whole = self
            .starts
            .iter()
            .all(|start| self.coordination.marked(&format!("range-{id}-{start}")));
        if !whole {
            return Ok(());
        }
        let partial = match rustix::fs::openat(
            parent,
            partial_name,
            OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(partial) => partial,
            // Committed by an earlier run of another shard.
            Err(Errno::NOENT) if unchanged(parent, name, self.entry, shown)?.is_some() => {
                return Ok(())
            }
            Err(e) => {
                return Err(Error::io(
                    "open",
                    format!("{shown} (its shared partial file, which every range was noted in)"),
                    None,
                    e,
                ))
            }
        };
        if options.verify {
            for start in self.starts.iter().filter(|&&s| s % CHUNK_SIZE != 0) {
                let chunk = start / CHUNK_SIZE;
                if let Err(error) = self.check_chunks(&partial, chunk..chunk + 1, shown) {
                    // Ranges that do not fit together (the file changed
                    // on the server between shards): start it afresh.
                    let _ = rustix::fs::unlinkat(parent, partial_name, AtFlags::empty());
                    for start in self.starts {
                        let _ = rustix::fs::unlinkat(
                            &self.coordination.directory,
                            format!("range-{id}-{start}").as_str(),
                            AtFlags::empty(),
                        );
                    }
                    return Err(Error::Stopped {
                        source: Box::new(error),
                        what_remains: "its ranges are forgotten: run every shard again".into(),
                    });
                }
            }
        }
        if existing(parent, name) == Some(FileType::Directory) {
            return Err(Error::Usage(format!(
                "{shown}: a directory is there; not replaced with a file"
            )));
        }
        rustix::fs::fchmod(&partial, Mode::from_raw_mode(self.entry.mode & 0o777))
            .map_err(|e| Error::io("fchmod", shown, None, e))?;
        set_mtime(partial.as_fd(), self.entry, shown)?;
        if options.fsync {
            rustix::fs::fsync(&partial).map_err(|e| Error::io("fsync", shown, None, e))?;
        }
        rustix::fs::renameat(parent, partial_name, parent, name)
            .map_err(|e| Error::io("rename", shown, None, e))
    }
}

/// `Some(Unchanged)` when a regular file with the manifest's size and
/// mtime is already at `name` (fetched by an earlier run).
pub(super) fn unchanged(
    parent: &OwnedFd,
    name: &[u8],
    entry: &Planned,
    shown: &str,
) -> Result<Option<Fetched>> {
    match rustix::fs::statat(parent, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
            Err(Error::Usage(format!(
                "{shown}: a directory is there; not replaced with a file"
            )))
        }
        Ok(stat)
            if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
                && stat.st_size as u64 == entry.size
                && stat.st_mtime == entry.mtime
                && stat.st_mtime_nsec == u64::from(entry.mtime_nsec) =>
        {
            Ok(Some(Fetched::Unchanged))
        }
        _ => Ok(None),
    }
}

/// Whether `root` holds the tree `planned` as its last shard leaves it:
/// every file there with the manifest's size and mtime, every symlink
/// that [`link_stays_beneath`] lets in with its target, every directory
/// with its mode. Anything else (or an error on the way) is `false`: the
/// shard then goes the usual way, which says what is wrong.
fn tree_is_finished(root: &OwnedFd, planned: &[Planned], label: &str) -> bool {
    planned.iter().all(|entry| {
        let Ok((parent, name)) = parent_of(root, &entry.parts, label) else {
            return false;
        };
        let at = OsStr::from_bytes(name);
        match entry.kind {
            Kind::File => matches!(
                unchanged(&parent, name, entry, label),
                Ok(Some(Fetched::Unchanged))
            ),
            Kind::Directory => rustix::fs::statat(&parent, at, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|stat| {
                    FileType::from_raw_mode(stat.st_mode) == FileType::Directory
                        && stat.st_mode & 0o777 == entry.mode & 0o777
                }),
            Kind::Symlink => match link_stays_beneath(root, entry, label) {
                Ok(false) => true,
                Ok(true) => rustix::fs::readlinkat(&parent, at, Vec::new())
                    .is_ok_and(|target| target.as_bytes() == entry.link_target.as_slice()),
                Err(_) => false,
            },
        }
    })
}

/// `.NAME.flexio-shard-ID`, the shared partial file beside `name`.
fn partial_name(name: &[u8], id: &str) -> Vec<u8> {
    let base = &name[..name.len().min(200)];
    [b".", base, b".flexio-shard-", id.as_bytes()].concat()
}
