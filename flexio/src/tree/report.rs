//! What a tree copy did: counts, bytes per way of copying, failures with
//! their reasons, and the process's CPU and context switches.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::size::{format_bytes, format_rate};

/// The version of [`TreeReport`]'s JSON form.
pub const TREE_REPORT_SCHEMA_VERSION: u32 = 2;

/// Files and bytes done so far and, as the walker finds them, to do;
/// shared with whoever draws a progress bar.
#[derive(Debug, Default)]
pub struct TreeProgress {
    pub(crate) files_done: AtomicU64,
    pub(crate) bytes_done: AtomicU64,
    pub(crate) files_found: AtomicU64,
    pub(crate) bytes_found: AtomicU64,
    pub(crate) walk_finished: AtomicBool,
    listener: Listener,
    /// Staging directories and the names they will take, so the listener
    /// hears the names the user knows.
    staged: Mutex<Vec<(PathBuf, PathBuf)>>,
}

/// Hears `(source, target)` of an entry made.
type Each = Box<dyn Fn(&Path, &Path) + Send + Sync>;

/// Who hears of each entry made, as `cp -v` lists them.
#[derive(Default)]
struct Listener(Option<Each>);

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

impl TreeProgress {
    /// Progress whose `each` hears `(source, target)` for every file,
    /// directory, symlink and special file made, as it is made, under the
    /// target's final name (`cp -v`).
    ///
    /// # Examples
    /// ```
    /// use flexio::tree::{copy_tree, TreeOptions, TreeProgress};
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::create_dir(dir.path().join("src")).unwrap();
    /// std::fs::write(dir.path().join("src/file"), b"hello").unwrap();
    /// let made = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    /// let heard = std::sync::Arc::clone(&made);
    /// let progress = TreeProgress::listing(move |_, target| heard.lock().unwrap().push(target.to_path_buf()));
    /// let options = TreeOptions { recursive: true, ..TreeOptions::default() };
    /// copy_tree(&[dir.path().join("src")], &dir.path().join("dst"), &options, &progress).unwrap();
    /// assert_eq!(made.lock().unwrap().len(), 2);
    /// ```
    pub fn listing(each: impl Fn(&Path, &Path) + Send + Sync + 'static) -> TreeProgress {
        TreeProgress {
            listener: Listener(Some(Box::new(each))),
            ..TreeProgress::default()
        }
    }

    /// Tells the listener of an entry made at `target` (perhaps inside a
    /// staging directory) from `source`.
    pub(crate) fn made(&self, source: &Path, target: &Path) {
        let Some(each) = &self.listener.0 else {
            return;
        };
        let staged = self.staged.lock().unwrap_or_else(|e| e.into_inner());
        let named = staged.iter().find_map(|(staging, name)| {
            target
                .strip_prefix(staging)
                .ok()
                .map(|rest| match rest.as_os_str().is_empty() {
                    true => name.clone(),
                    false => name.join(rest),
                })
        });
        drop(staged);
        each(source, named.as_deref().unwrap_or(target));
    }

    /// Records that what is made under `staging` will be named `name`.
    pub(crate) fn stage(&self, staging: &Path, name: &Path) {
        self.staged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((staging.to_path_buf(), name.to_path_buf()));
    }

    /// Files copied (or skipped, or failed) so far.
    pub fn files_done(&self) -> u64 {
        self.files_done.load(Ordering::Relaxed)
    }

    /// Bytes in destination files so far.
    pub fn bytes_done(&self) -> u64 {
        self.bytes_done.load(Ordering::Relaxed)
    }

    /// Files and bytes found so far, and whether that is all of them (the
    /// walker has finished) or only "at least".
    pub fn found(&self) -> (u64, u64, bool) {
        (
            self.files_found.load(Ordering::Relaxed),
            self.bytes_found.load(Ordering::Relaxed),
            self.walk_finished.load(Ordering::Relaxed),
        )
    }
}

/// One entry that could not be copied, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeFailure {
    /// The source path.
    pub path: String,
    /// The error, one line.
    pub error: String,
}

/// What a tree copy did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TreeReport {
    /// [`TREE_REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Regular files whose bytes were copied.
    pub files: u64,
    /// Directories created or entered.
    pub directories: u64,
    /// Symbolic links copied as links.
    pub symlinks: u64,
    /// Names made as hard links to a file already copied.
    pub hard_links: u64,
    /// FIFOs and device nodes made.
    pub special_files: u64,
    /// Entries left alone: excluded, `-n` or `-u`.
    pub skipped: u64,
    /// Bytes in the copied files (holes of sparse files not counted).
    pub bytes: u64,
    /// Bytes per way the data moved: `reflink`, `copy-file-range`, ...
    pub bytes_by_mechanism: BTreeMap<String, u64>,
    /// Files per way the data moved.
    pub files_by_mechanism: BTreeMap<String, u64>,
    /// Fallbacks from one mechanism to another, with the kernel's reason
    /// (`from -> to: reason`) and how many files met each.
    pub fallbacks: BTreeMap<String, u64>,
    /// What could not be copied.
    pub failures: Vec<TreeFailure>,
    /// What a dry run would do, one line each.
    pub planned: Vec<String>,
    /// Files compared by hash afterwards (`--verify`).
    pub verified_files: u64,
    /// Workers that copied files.
    pub jobs: usize,
    /// Small files a worker took from the queue at once.
    #[serde(default)]
    pub batch: usize,
    /// Where the workers and batch came from: `--jobs`, `profile PATH
    /// (ext4)` or `default`.
    #[serde(default)]
    pub settings_from: String,
    /// Wall time of the whole copy.
    pub wall_ns: u64,
    /// Process user CPU.
    pub cpu_user_ns: u64,
    /// Process system CPU.
    pub cpu_sys_ns: u64,
    /// Voluntary context switches (named as a single flow's report names
    /// them since schema version 2).
    #[serde(rename = "context_switches_voluntary")]
    pub voluntary_switches: u64,
    /// Involuntary context switches.
    #[serde(rename = "context_switches_involuntary")]
    pub involuntary_switches: u64,
}

impl TreeReport {
    /// Whether every entry was copied (or deliberately skipped).
    pub fn succeeded(&self) -> bool {
        self.failures.is_empty()
    }

    pub(crate) fn record_file(&mut self, method: &str, bytes: u64) {
        self.files += 1;
        self.bytes += bytes;
        *self
            .bytes_by_mechanism
            .entry(method.to_string())
            .or_default() += bytes;
        *self
            .files_by_mechanism
            .entry(method.to_string())
            .or_default() += 1;
    }

    pub(crate) fn fail(&mut self, path: impl fmt::Display, error: impl fmt::Display) {
        self.failures.push(TreeFailure {
            path: path.to_string(),
            error: error.to_string(),
        });
    }

    /// Adds another worker's counts into this report.
    pub(crate) fn absorb(&mut self, other: TreeReport) {
        self.files += other.files;
        self.directories += other.directories;
        self.symlinks += other.symlinks;
        self.hard_links += other.hard_links;
        self.special_files += other.special_files;
        self.skipped += other.skipped;
        self.bytes += other.bytes;
        self.verified_files += other.verified_files;
        for (name, bytes) in other.bytes_by_mechanism {
            *self.bytes_by_mechanism.entry(name).or_default() += bytes;
        }
        for (name, files) in other.files_by_mechanism {
            *self.files_by_mechanism.entry(name).or_default() += files;
        }
        for (name, count) in other.fallbacks {
            *self.fallbacks.entry(name).or_default() += count;
        }
        self.failures.extend(other.failures);
        self.planned.extend(other.planned);
    }
}

impl fmt::Display for TreeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.wall_ns as f64 / 1e9;
        writeln!(
            f,
            "{} files, {} directories, {} symlinks, {} hard links, {} special; {} in {:.3} s ({}, {:.0} files/s) with {} workers",
            self.files,
            self.directories,
            self.symlinks,
            self.hard_links,
            self.special_files,
            format_bytes(self.bytes),
            seconds,
            format_rate(self.bytes as f64 / seconds.max(1e-9)),
            self.files as f64 / seconds.max(1e-9),
            self.jobs,
        )?;
        if !self.settings_from.is_empty() {
            writeln!(
                f,
                "  workers    {} jobs, batches of {} small files ({})",
                self.jobs, self.batch, self.settings_from
            )?;
        }
        if !self.bytes_by_mechanism.is_empty() {
            let ways: Vec<String> = self
                .bytes_by_mechanism
                .iter()
                .map(|(name, bytes)| {
                    let files = self.files_by_mechanism.get(name).copied().unwrap_or(0);
                    format!("{name} {files} files ({})", format_bytes(*bytes))
                })
                .collect();
            writeln!(f, "  mechanism  {}", ways.join(", "))?;
        }
        for (fallback, count) in &self.fallbacks {
            writeln!(f, "  fallback   {fallback} ({count} files)")?;
        }
        writeln!(
            f,
            "  cpu        user {:.3} s, sys {:.3} s; {} voluntary + {} involuntary context switches",
            self.cpu_user_ns as f64 / 1e9,
            self.cpu_sys_ns as f64 / 1e9,
            self.voluntary_switches,
            self.involuntary_switches
        )?;
        if self.skipped > 0 {
            writeln!(f, "  skipped    {}", self.skipped)?;
        }
        if self.verified_files > 0 {
            writeln!(f, "  verified   {} files (blake3)", self.verified_files)?;
        }
        if !self.failures.is_empty() {
            writeln!(f, "  failed     {}", self.failures.len())?;
        }
        Ok(())
    }
}
