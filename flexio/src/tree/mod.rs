//! Trees and many files: `cp`'s grammar (`SRC DST`, `SRC... DIR`,
//! `-r DIR DST`) over a pool of workers.
//!
//! One walker goes ahead through the sources: it makes each directory
//! (writable by us until its contents are in), symlink and special file
//! itself and queues the regular files for the workers, the large ones
//! first, the small ones by directory (`queue.rs`). A worker copies a file
//! — a reflink first where the file systems share extents, else the
//! flow's mechanism over the file's data segments — and sets its
//! attributes on the open descriptor (`file_copy.rs`). When the workers
//! are done, names that were hard links in the source are linked, and
//! directories get their modes and times, deepest first.
//!
//! A copy interrupted at any point leaves only whole files at their final
//! names, in one of two ways:
//!
//! - a directory copied to a destination that does not exist yet (the
//!   common `copy -r SRC NEW`) is built in a hidden, locked staging
//!   directory beside the destination, its files made there under their
//!   own names, and renamed into place once everything is finished
//!   (`staging.rs`): one plain create per file instead of a temporary and
//!   a link. Files that failed are reported and absent from it; the rest
//!   is put in place, as `cp` leaves what it could copy;
//! - anything copied into an existing directory (merges, `-n`, `-u`, a
//!   second copy onto the first) goes file by file through the atomic
//!   sink: a new file beside its destination, linked in under its name
//!   only when whole.
//!
//! Each entry that cannot be copied is reported with its path and reason,
//! and the rest go on; [`TreeReport::succeeded`] says whether any failed.
//!
//! `cp -r` copies one file at a time; the workers overlap one file's
//! system calls with another's waits (on a 2-core VM, ext4 on a RAM-backed
//! loop image: see the bench's `tree` scenario).

mod file_copy;
mod metadata;
mod options;
mod queue;
mod report;
mod staging;
mod walk;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::error::{Error, Result};
use crate::measure::Sample;
use file_copy::Worker;
use queue::{FileJob, Queue};
use walk::Walker;

pub use options::{default_jobs, Preserve, Symlinks, TreeOptions, DEFAULT_BATCH, MAX_JOBS};
pub use report::{TreeFailure, TreeProgress, TreeReport, TREE_REPORT_SCHEMA_VERSION};
pub use staging::Staging;

/// Where each source goes, by `cp`'s rules: into `destination` when it is
/// an existing directory (as `destination/NAME`), else to `destination`
/// itself — which needs exactly one source.
///
/// # Errors
/// [`Error::Usage`] for several sources and a destination that is not a
/// directory, or a directory copied into itself.
///
/// # Examples
/// ```
/// use std::path::PathBuf;
/// let dir = tempfile::tempdir().unwrap();
/// let (a, b) = (dir.path().join("a"), dir.path().join("b"));
/// std::fs::write(&a, b"x").unwrap();
/// std::fs::write(&b, b"y").unwrap();
/// let into = dir.path().join("into");
/// std::fs::create_dir(&into).unwrap();
/// let targets = flexio::tree::targets(&[a.clone(), b], &into).unwrap();
/// assert_eq!(targets[0], (a, into.join("a")));
/// assert!(flexio::tree::targets(&[dir.path().join("a"), dir.path().join("b")], &dir.path().join("new")).is_err());
/// ```
pub fn targets(sources: &[PathBuf], destination: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    let into_directory = destination.is_dir();
    if sources.len() > 1 && !destination.exists() {
        // cp's words.
        return Err(Error::usage(format!(
            "target '{}': No such file or directory (several sources go into a directory)",
            destination.display()
        )));
    }
    if sources.len() > 1 && !into_directory {
        return Err(Error::usage(format!(
            "target '{}': Not a directory (several sources go into a directory)",
            destination.display()
        )));
    }
    let mut pairs = Vec::with_capacity(sources.len());
    for source in sources {
        let target = match (into_directory, source.file_name()) {
            // `DIR/.` (which Path reads as `DIR`) or `.`: the contents go
            // into the destination, as with cp.
            (true, _) if ends_in_dot(source) => destination.to_path_buf(),
            (true, Some(name)) => destination.join(name),
            (true, None) => destination.to_path_buf(),
            (false, _) => destination.to_path_buf(),
        };
        refuse_into_itself(source, &target)?;
        pairs.push((source.clone(), target));
    }
    Ok(pairs)
}

/// Whether a path as typed ends in a `.` component (`src/.`, `.`).
fn ends_in_dot(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    bytes == b"." || bytes.ends_with(b"/.") || bytes.ends_with(b"/./")
}

/// A directory copied somewhere below itself would never end.
fn refuse_into_itself(source: &Path, target: &Path) -> Result<()> {
    if !source.is_dir() {
        return Ok(());
    }
    let (Ok(source_real), Some(parent)) = (source.canonicalize(), target.parent()) else {
        return Ok(());
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Ok(parent_real) = parent.canonicalize() else {
        return Ok(());
    };
    let target_real = parent_real.join(target.file_name().unwrap_or_default());
    if target_real.starts_with(&source_real) && target_real != source_real {
        return Err(Error::usage(format!(
            "cannot copy a directory, {}, into itself, {}",
            source.display(),
            target.display()
        )));
    }
    Ok(())
}

/// Copies `sources` to `destination` by `cp`'s rules (see [`targets`]).
///
/// `options.jobs` workers copy the files, at least 1 and at most
/// [`MAX_JOBS`].
///
/// # Errors
/// The usage errors of [`targets`] and of bad `--exclude` patterns;
/// [`Error::Io`] (`spawn`) when the system will not make a worker's thread,
/// before anything is made. Every failure of one entry is in
/// [`TreeReport::failures`] instead.
///
/// # Examples
/// ```
/// use flexio::tree::{copy_tree, TreeOptions, TreeProgress};
/// let dir = tempfile::tempdir().unwrap();
/// let source = dir.path().join("src");
/// std::fs::create_dir_all(source.join("sub")).unwrap();
/// std::fs::write(source.join("sub/file"), b"hello").unwrap();
/// let options = TreeOptions { recursive: true, ..TreeOptions::default() };
/// let report = copy_tree(&[source], &dir.path().join("dst"), &options, &TreeProgress::default()).unwrap();
/// assert!(report.succeeded());
/// assert_eq!((report.files, report.directories), (1, 2));
/// assert_eq!(std::fs::read(dir.path().join("dst/sub/file")).unwrap(), b"hello");
/// ```
pub fn copy_tree(
    sources: &[PathBuf],
    destination: &Path,
    options: &TreeOptions,
    progress: &TreeProgress,
) -> Result<TreeReport> {
    let pairs = targets(sources, destination)?;
    let exclude = exclude_set(&options.exclude)?;
    let umask = crate::endpoint::process_umask();
    let before = Sample::now();
    let queue = Queue::default();
    let reflink_refused = AtomicBool::new(false);
    let jobs = options.jobs.clamp(1, MAX_JOBS);
    let rate = options.pacing.rate.map(|rate| {
        let burst = options.pacing.burst_bytes().unwrap_or(rate.default_burst());
        std::sync::Arc::new(crate::pace::TokenBucket::new(
            rate,
            burst,
            std::time::Instant::now(),
        ))
    });
    let mut walker = Walker::new(options, &exclude, &queue, progress, umask);
    let (mut report, stagings, staged_roots) = std::thread::scope(|scope| {
        // The workers first: a process that cannot make them has made
        // nothing yet, staging directories included.
        let workers = spawn_workers(scope, jobs, &queue, progress, || Worker {
            options,
            umask,
            mover: Default::default(),
            reflink_refused: &reflink_refused,
            progress: &progress.bytes_done,
            rate: rate.clone(),
        })?;
        let stagings = stage_new_trees(&pairs, options);
        for ((_, target), staging) in pairs.iter().zip(&stagings) {
            if let Some(staging) = staging {
                progress.stage(staging.path(), target);
            }
        }
        let mut staged_roots = vec![false; pairs.len()];
        for (index, (source, target)) in pairs.iter().enumerate() {
            match &stagings[index] {
                Some(staging) => staged_roots[index] = walker.walk_staged(source, staging.path()),
                None => walker.walk(source, target),
            }
        }
        progress.walk_finished.store(true, Ordering::Relaxed);
        queue.close();
        let mut report = std::mem::take(&mut walker.report);
        for worker in workers {
            report.absorb(worker.join().expect("a tree worker panicked"));
        }
        Ok::<_, Error>((report, stagings, staged_roots))
    })?;
    if !options.dry_run {
        link_hard_links(&walker, progress, &mut report);
        finish_directories(&walker, options, umask, &mut report);
        if options.fsync {
            sync_destinations(&pairs, &mut report);
        }
        put_staged_in_place(&pairs, stagings, &staged_roots, options.fsync, &mut report);
    }
    let delta = Sample::now().since(&before);
    report.schema_version = TREE_REPORT_SCHEMA_VERSION;
    report.jobs = jobs;
    report.batch = options.batch.max(1);
    report.wall_ns = delta.wall_ns;
    report.cpu_user_ns = delta.cpu_user_ns;
    report.cpu_sys_ns = delta.cpu_sys_ns;
    report.voluntary_switches = delta.voluntary_switches;
    report.involuntary_switches = delta.involuntary_switches;
    Ok(report)
}

/// Starts `jobs` workers on `queue`, each with its own [`Worker`] from
/// `worker`.
///
/// # Errors
/// [`Error::Io`] when the system will not make a thread (`EAGAIN`: a
/// process or cgroup limit): the queue is closed and the workers already
/// started are joined first.
fn spawn_workers<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    jobs: usize,
    queue: &'env Queue,
    progress: &'env TreeProgress,
    mut worker: impl FnMut() -> Worker<'env>,
) -> Result<Vec<std::thread::ScopedJoinHandle<'scope, TreeReport>>> {
    let mut workers = Vec::with_capacity(jobs);
    // Each worker says it has started before the next is made: a thread
    // maps its signal stack as it starts, and one that cannot (the address
    // space spent by the stacks made after it) aborts the process. Made
    // one after another, the stack that does not fit is the next
    // thread's, whose spawn fails with an error here.
    let (started, has_started) = std::sync::mpsc::channel::<()>();
    for index in 0..jobs {
        let worker = worker();
        let started = started.clone();
        let spawned = std::thread::Builder::new()
            .name("flexio-tree".into())
            .spawn_scoped(scope, move || {
                let _ = started.send(());
                work(worker, queue, progress)
            });
        match spawned {
            Ok(handle) => {
                let _ = has_started.recv();
                workers.push(handle);
            }
            Err(error) => {
                queue.close();
                for started in workers {
                    let _ = started.join();
                }
                return Err(Error::io(
                    "spawn",
                    format!("tree worker {} of {jobs}", index + 1),
                    None,
                    error,
                ));
            }
        }
    }
    Ok(workers)
}

/// A staging directory for each source that is a directory copied to a
/// target that does not exist yet (see `staging.rs`); `None` for the
/// others, which are copied file by file through temporaries.
fn stage_new_trees(pairs: &[(PathBuf, PathBuf)], options: &TreeOptions) -> Vec<Option<Staging>> {
    let mut swept = Vec::new();
    let follow_top = options.symlinks != Symlinks::Keep;
    pairs
        .iter()
        .map(|(source, target)| {
            let source_is_directory = match follow_top {
                true => source.metadata(),
                false => source.symlink_metadata(),
            }
            .is_ok_and(|meta| meta.is_dir());
            let wanted = options.recursive
                && !options.dry_run
                && source_is_directory
                && target
                    .symlink_metadata()
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
            if !wanted {
                return None;
            }
            staging::sweep_parent(target, &mut swept);
            Staging::new_unswept(target)
        })
        .collect()
}

/// Gives each staging directory its target's name. One whose source was
/// not copied as a directory after all (it vanished or changed before the
/// walk) is removed instead. Failures under a staging directory are
/// reported under the target's name, the one the user knows.
fn put_staged_in_place(
    pairs: &[(PathBuf, PathBuf)],
    stagings: Vec<Option<Staging>>,
    staged_roots: &[bool],
    fsync: bool,
    report: &mut TreeReport,
) {
    for ((index, (_, target)), staging) in pairs.iter().enumerate().zip(stagings) {
        let Some(staging) = staging else {
            continue;
        };
        let (staged, named) = (
            staging.path().display().to_string(),
            target.display().to_string(),
        );
        for failure in &mut report.failures {
            failure.path = failure.path.replace(&staged, &named);
            failure.error = failure.error.replace(&staged, &named);
        }
        if !staged_roots[index] {
            continue;
        }
        if let Err(error) = staging.put_in_place(target, fsync) {
            report.fail(target.display(), error);
        }
    }
}

/// One worker: files from the queue until it is closed and empty.
fn work(mut worker: Worker<'_>, queue: &Queue, progress: &TreeProgress) -> TreeReport {
    let mut report = TreeReport::default();
    let batch_size = worker.options.batch.max(1);
    let mut batch: Vec<FileJob> = Vec::with_capacity(batch_size);
    loop {
        batch.clear();
        queue.take(batch_size, &mut batch);
        if batch.is_empty() {
            return report;
        }
        for job in batch.drain(..) {
            match worker.copy_file(&job) {
                Ok(outcome) => {
                    progress.made(&job.source, &job.target);
                    report.record_file(outcome.method, outcome.bytes);
                    report.verified_files += u64::from(outcome.verified);
                    for fallback in outcome.fallbacks {
                        *report
                            .fallbacks
                            .entry(format!(
                                "{} -> {}: {} ({})",
                                fallback.from, fallback.to, fallback.reason, fallback.operation
                            ))
                            .or_default() += 1;
                    }
                }
                Err(error) => report.fail(job.source.display(), error),
            }
            progress.files_done.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Names that were hard links to one file in the source become hard links
/// to its copy, each told to `progress` as it is made (`cp -v` lists
/// them as copies).
fn link_hard_links(walker: &Walker<'_>, progress: &TreeProgress, report: &mut TreeReport) {
    for link in &walker.hard_links {
        let _ = std::fs::remove_file(&link.target);
        match std::fs::hard_link(&link.first_target, &link.target) {
            Ok(()) => {
                report.hard_links += 1;
                progress.made(&link.source, &link.target);
            }
            Err(error) => report.fail(
                link.source.display(),
                Error::io("link", link.target.display().to_string(), None, error),
            ),
        }
    }
}

/// Directories get their final mode and times after their contents (a
/// read-only directory could not have been filled; a directory's mtime
/// moves with every entry made in it), the deepest first.
fn finish_directories(
    walker: &Walker<'_>,
    options: &TreeOptions,
    umask: u32,
    report: &mut TreeReport,
) {
    for directory in walker.directories.iter().rev() {
        // An existing directory keeps its own mode unless the source's is
        // to be kept, as with cp.
        let kind = if directory.made || options.preserve.mode {
            metadata::Entry::Directory
        } else {
            metadata::Entry::ExistingDirectory
        };
        if let Err(error) = metadata::set_path_attributes(
            &directory.target,
            &directory.source,
            options.preserve,
            umask,
            kind,
        ) {
            report.fail(directory.target.display(), error);
        }
    }
}

/// `--fsync`: every file system written to is synced once (syncfs), after
/// the last entry, before success is reported.
fn sync_destinations(pairs: &[(PathBuf, PathBuf)], report: &mut TreeReport) {
    let mut synced = Vec::new();
    for (_, target) in pairs {
        let directory = if target.is_dir() {
            target.as_path()
        } else {
            target.parent().unwrap_or(Path::new("."))
        };
        let directory = if directory.as_os_str().is_empty() {
            Path::new(".")
        } else {
            directory
        };
        let Ok(handle) = std::fs::File::open(directory) else {
            continue;
        };
        let device = handle
            .metadata()
            .map(|m| std::os::unix::fs::MetadataExt::dev(&m));
        if let Ok(device) = device {
            if synced.contains(&device) {
                continue;
            }
            synced.push(device);
        }
        if let Err(error) = rustix::fs::syncfs(&handle) {
            report.fail(
                directory.display(),
                Error::io("syncfs", directory.display().to_string(), None, error),
            );
        }
    }
}

fn exclude_set(patterns: &[String]) -> Result<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob =
            Glob::new(pattern).map_err(|e| Error::usage(format!("exclude {pattern:?}: {e}")))?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|e| Error::usage(format!("exclude: {e}")))
}
