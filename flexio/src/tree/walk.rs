//! The walker: goes through each source ahead of the workers, makes the
//! directories, symlinks and special files itself (each one system call or
//! two), and queues the regular files for the workers.

use std::collections::{HashMap, HashSet};
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use globset::GlobSet;
use rustix::fs::{FileType, Mode, CWD};

use super::metadata::{set_path_attributes, Entry};
use super::options::{Symlinks, TreeOptions};
use super::queue::{FileJob, Queue};
use super::report::{TreeProgress, TreeReport};
use crate::error::{Error, Result};

/// A directory whose mode and times are set once its contents are in.
pub(crate) struct FinishDirectory {
    pub target: PathBuf,
    pub source: Metadata,
    /// Made by this copy (with mode 0700 until its contents are in), not
    /// one that was there: an existing directory keeps its own mode unless
    /// the mode is to be kept from the source, as with cp.
    pub made: bool,
}

/// A name to make as a hard link to a file copied earlier in the tree.
pub(crate) struct HardLink {
    pub source: PathBuf,
    pub first_target: PathBuf,
    pub target: PathBuf,
}

/// The walker's work, depth first: an entry to copy, or the end of a
/// directory's contents (which takes it off the current path).
// Most steps are visits: boxing them to shrink the rare `Leave` would
// allocate once per entry for nothing.
#[allow(clippy::large_enum_variant)]
enum Step {
    Visit(PathBuf, PathBuf, Metadata),
    Leave(DirectoryId),
}

/// A directory by device and inode, however it was reached.
type DirectoryId = (u64, u64);

pub(crate) struct Walker<'a> {
    pub options: &'a TreeOptions,
    pub exclude: &'a GlobSet,
    pub queue: &'a Queue,
    pub progress: &'a TreeProgress,
    pub umask: u32,
    pub report: TreeReport,
    pub directories: Vec<FinishDirectory>,
    pub hard_links: Vec<HardLink>,
    /// The first target of each multiply-linked source inode.
    first_names: HashMap<(u64, u64), PathBuf>,
    /// The staging directory the current source is walked into, made
    /// empty by this copy (see `staging.rs`).
    staging_root: Option<PathBuf>,
}

impl<'a> Walker<'a> {
    pub fn new(
        options: &'a TreeOptions,
        exclude: &'a GlobSet,
        queue: &'a Queue,
        progress: &'a TreeProgress,
        umask: u32,
    ) -> Self {
        Walker {
            options,
            exclude,
            queue,
            progress,
            umask,
            report: TreeReport::default(),
            directories: Vec::new(),
            hard_links: Vec::new(),
            first_names: HashMap::new(),
            staging_root: None,
        }
    }

    /// Walks one source into its target.
    pub fn walk(&mut self, source: &Path, target: &Path) {
        self.staging_root = None;
        self.walk_source(source, target);
    }

    /// Walks one source into `staging`, an empty directory this copy made
    /// for it: its files are made there under their own names. Returns
    /// whether the source was copied as a directory into it (not when it
    /// vanished or is no longer a directory).
    pub fn walk_staged(&mut self, source: &Path, staging: &Path) -> bool {
        let first = self.directories.len();
        self.staging_root = Some(staging.to_path_buf());
        self.walk_source(source, staging);
        self.staging_root = None;
        self.directories
            .get(first)
            .is_some_and(|directory| directory.target == staging)
    }

    fn walk_source(&mut self, source: &Path, target: &Path) {
        let follow_top = self.options.symlinks != Symlinks::Keep || !self.options.recursive;
        let meta = match stat(source, follow_top) {
            Ok(meta) => meta,
            Err(error) => return self.report.fail(source.display(), error),
        };
        if meta.is_dir() && !self.options.recursive {
            return self.report.fail(
                source.display(),
                format!(
                    "-r not specified; omitting directory '{}'",
                    source.display()
                ),
            );
        }
        if is_same_file(&meta, target) {
            return self.report.fail(
                source.display(),
                format!(
                    "'{}' and '{}' are the same file",
                    source.display(),
                    target.display()
                ),
            );
        }
        let root_device = meta.dev();
        // The directories from the source down to the entry being copied:
        // one met again below itself (`-L` through `up -> ..`, or a bind
        // mount of an ancestor) would be copied without end.
        let mut on_path = HashSet::new();
        let mut stack = vec![Step::Visit(
            source.to_path_buf(),
            target.to_path_buf(),
            meta,
        )];
        while let Some(step) = stack.pop() {
            match step {
                Step::Leave(id) => {
                    on_path.remove(&id);
                }
                Step::Visit(source, target, meta) if meta.is_dir() => {
                    let id = (meta.dev(), meta.ino());
                    if !on_path.insert(id) {
                        // cp's words, and the rest of the tree goes on.
                        self.report
                            .fail(source.display(), "cannot copy cyclic symbolic link");
                        continue;
                    }
                    stack.push(Step::Leave(id));
                    self.directory(&source, &target, meta, root_device, &mut stack);
                }
                Step::Visit(source, target, meta) => self.entry(&source, &target, &meta),
            }
        }
    }

    fn directory(
        &mut self,
        source: &Path,
        target: &Path,
        meta: Metadata,
        root_device: u64,
        stack: &mut Vec<Step>,
    ) {
        let Some(made) = self.make_directory(source, target) else {
            return;
        };
        if made && !self.options.dry_run {
            self.progress.made(source, target);
        }
        self.report.directories += 1;
        let crosses = self.options.one_file_system && meta.dev() != root_device;
        self.directories.push(FinishDirectory {
            target: target.to_path_buf(),
            source: meta,
            made,
        });
        if crosses {
            // -x: the mount point is made, what is mounted there is not copied.
            return;
        }
        let entries = match std::fs::read_dir(source) {
            Ok(entries) => entries,
            Err(error) => {
                return self.report.fail(
                    source.display(),
                    Error::io("opendir", source.display().to_string(), None, error),
                )
            }
        };
        let follow = self.options.symlinks == Symlinks::FollowAll;
        let mut children = Vec::new();
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    self.report.fail(
                        source.display(),
                        Error::io("readdir", source.display().to_string(), None, error),
                    );
                    continue;
                }
            };
            let child = entry.path();
            let name = entry.file_name();
            if self.excluded(&child, Path::new(&name)) {
                self.report.skipped += 1;
                continue;
            }
            match stat(&child, follow) {
                Ok(child_meta) => children.push((child, target.join(&name), child_meta)),
                // Vanished between readdir and stat: said, and the rest go on.
                Err(error) => self.report.fail(child.display(), error),
            }
        }
        // Regular files go to the workers in one batch; the rest, in name
        // order, to the walker's stack.
        let mut files = Vec::new();
        children.sort_by(|a, b| b.0.cmp(&a.0));
        for (child, child_target, child_meta) in children {
            if child_meta.is_file() && !self.options.dry_run {
                if let Some(job) = self.file_job(&child, child_target, &child_meta, made) {
                    files.push(job);
                }
            } else {
                stack.push(Step::Visit(child, child_target, child_meta));
            }
        }
        if !files.is_empty() {
            self.queue.push_all(files);
        }
    }

    /// Makes (or enters) a target directory, writable by us until its
    /// contents are in: `Some(true)` when made now (so empty), `Some(false)`
    /// when it was there, `None` when it cannot be.
    fn make_directory(&mut self, source: &Path, target: &Path) -> Option<bool> {
        if self.options.dry_run {
            self.report
                .planned
                .push(format!("mkdir {}", target.display()));
            return Some(true);
        }
        if self.staging_root.as_deref() == Some(target) {
            return Some(true);
        }
        crate::cleanup::stop_if_dying();
        match rustix::fs::mkdirat(CWD, target, Mode::from_raw_mode(0o700)) {
            Ok(()) => Some(true),
            Err(rustix::io::Errno::EXIST) if target.is_dir() => Some(false),
            // cp's words: the name is taken by something else.
            Err(rustix::io::Errno::EXIST) => {
                self.report.fail(
                    source.display(),
                    format!(
                        "cannot overwrite non-directory '{}' with directory '{}'",
                        target.display(),
                        source.display()
                    ),
                );
                None
            }
            Err(error) => {
                self.report.fail(
                    source.display(),
                    Error::io("mkdir", target.display().to_string(), None, error),
                );
                None
            }
        }
    }

    /// Anything but a directory.
    fn entry(&mut self, source: &Path, target: &Path, meta: &Metadata) {
        if !meta.is_file() && self.leave_alone(target, meta) {
            self.report.skipped += 1;
            return;
        }
        let file_type = meta.file_type();
        let result = if file_type.is_file() {
            if let Some(job) = self.file_job(source, target.to_path_buf(), meta, false) {
                self.queue.push_all([job]);
            }
            Ok(())
        } else if file_type.is_symlink() {
            self.symlink(source, target, meta)
        } else {
            self.special(source, target, meta)
        };
        if let Err(error) = result {
            self.report.fail(source.display(), error);
        }
    }

    /// `-n` and `-u`: whether an existing target stays as it is.
    fn leave_alone(&self, target: &Path, meta: &Metadata) -> bool {
        if !(self.options.no_clobber || self.options.update) {
            return false;
        }
        let Ok(existing) = std::fs::symlink_metadata(target) else {
            return false;
        };
        self.options.no_clobber
            || (existing.mtime(), existing.mtime_nsec()) >= (meta.mtime(), meta.mtime_nsec())
    }

    /// The job for a regular file — `None` when it is a hard link to one
    /// already queued, left alone (`-n`, `-u`), or only planned.
    fn file_job(
        &mut self,
        source: &Path,
        target: PathBuf,
        meta: &Metadata,
        in_new_directory: bool,
    ) -> Option<FileJob> {
        if !in_new_directory && self.leave_alone(&target, meta) {
            self.report.skipped += 1;
            return None;
        }
        if self.options.preserve.links && meta.nlink() > 1 {
            let key = (meta.dev(), meta.ino());
            if let Some(first) = self.first_names.get(&key) {
                self.hard_links.push(HardLink {
                    source: source.to_path_buf(),
                    first_target: first.clone(),
                    target,
                });
                return None;
            }
            self.first_names.insert(key, target.clone());
        }
        self.progress.files_found.fetch_add(1, Ordering::Relaxed);
        self.progress
            .bytes_found
            .fetch_add(meta.size(), Ordering::Relaxed);
        if self.options.dry_run {
            self.report.planned.push(format!(
                "copy {} -> {} ({} bytes)",
                source.display(),
                target.display(),
                meta.size()
            ));
            return None;
        }
        Some(FileJob {
            size: meta.size(),
            source: source.to_path_buf(),
            target,
            in_new_directory,
            // Every directory below a staging root is one this copy made.
            staged: in_new_directory && self.staging_root.is_some(),
        })
    }

    fn symlink(&mut self, source: &Path, target: &Path, meta: &Metadata) -> Result<()> {
        let label = source.display().to_string();
        let points_to =
            std::fs::read_link(source).map_err(|e| Error::io("readlink", &label, None, e))?;
        if self.options.dry_run {
            self.report.planned.push(format!(
                "symlink {} -> {}",
                target.display(),
                points_to.display()
            ));
            return Ok(());
        }
        crate::cleanup::stop_if_dying();
        replace_with(target, |at| {
            rustix::fs::symlinkat(&points_to, CWD, at).map_err(std::io::Error::from)
        })
        .map_err(|e| Error::io("symlink", target.display().to_string(), None, e))?;
        set_path_attributes(
            target,
            meta,
            self.options.preserve,
            self.umask,
            Entry::Symlink,
        )?;
        self.report.symlinks += 1;
        self.progress.made(source, target);
        Ok(())
    }

    /// FIFOs, device nodes and sockets are made anew, as `cp -r` does.
    fn special(&mut self, source: &Path, target: &Path, meta: &Metadata) -> Result<()> {
        if self.options.dry_run {
            self.report.planned.push(format!(
                "mknod {} (like {})",
                target.display(),
                source.display()
            ));
            return Ok(());
        }
        let file_type = FileType::from_raw_mode(meta.mode());
        replace_with(target, |at| {
            rustix::fs::mknodat(
                CWD,
                at,
                file_type,
                Mode::from_raw_mode(meta.mode() & 0o777),
                meta.rdev(),
            )
            .map_err(std::io::Error::from)
        })
        .map_err(|e| Error::io("mknod", target.display().to_string(), None, e))?;
        set_path_attributes(
            target,
            meta,
            self.options.preserve,
            self.umask,
            Entry::Special,
        )?;
        self.report.special_files += 1;
        self.progress.made(source, target);
        Ok(())
    }

    /// Whether `path` (the full source path) or `name` (its last part)
    /// matches an `--exclude` pattern.
    fn excluded(&self, path: &Path, name: &Path) -> bool {
        !self.exclude.is_empty() && (self.exclude.is_match(name) || self.exclude.is_match(path))
    }
}

/// `lstat`, or `stat` when following symlinks.
fn stat(path: &Path, follow: bool) -> Result<Metadata> {
    let result = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    result.map_err(|e| Error::io("cannot stat", format!("'{}'", path.display()), None, e))
}

/// Whether `target` is the source itself (`copy f dir/` run where `dir/f`
/// is `f`, or `copy -r d .` beside `d`): the name itself, or what it
/// points at. Copying would replace the source with itself, or copy a
/// directory onto itself entry by entry; cp refuses both.
fn is_same_file(source: &Metadata, target: &Path) -> bool {
    let id = (source.dev(), source.ino());
    [std::fs::symlink_metadata(target), std::fs::metadata(target)]
        .into_iter()
        .flatten()
        .any(|meta| (meta.dev(), meta.ino()) == id)
}

/// Makes `target` with `make`; an existing non-directory in its way is
/// replaced atomically: the new entry is made under a temporary name and
/// renamed over it.
fn replace_with(target: &Path, make: impl Fn(&Path) -> std::io::Result<()>) -> std::io::Result<()> {
    match make(target) {
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            if target.is_dir() && !target.is_symlink() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "cannot overwrite a directory",
                ));
            }
            let temp = target.with_file_name(crate::endpoint::temp_name(
                target.file_name().unwrap_or_default(),
            ));
            make(&temp)?;
            std::fs::rename(&temp, target).inspect_err(|_| {
                let _ = std::fs::remove_file(&temp);
            })
        }
        other => other,
    }
}
