//! `flexio tune`'s tree part: the workers (`--jobs`) and the small-file
//! batch that copy a tree of small files fastest on the tuned directory's
//! file system, measured with the library's own tree copy (issue 14
//! item 6).
//!
//! The tree is tree A of the `tree` scenario, scaled down (4 KiB files in
//! directories of 100). Every setting copies it into a fresh destination,
//! the rounds interleaved so that a drifting machine (the virtual disk's
//! writeback, another process) weighs on every setting alike; the
//! destination is removed between runs, untimed. Settings are compared
//! with each other inside one process, which is fair here: the start-up
//! every `flexio copy -r` pays is the same whatever the settings.

use std::path::{Path, PathBuf};
use std::time::Instant;

use flexio::profile::{TreePoint, TreeProfile};
use flexio::tree::{copy_tree, default_jobs, TreeOptions, TreeProgress, DEFAULT_BATCH};

use flexio::profile::FlowKind;
use flexio::{MechanismName, Params};

use crate::error::{Error, Result};
use crate::select::{separation, Candidate, Measurement};
use crate::sweep::TIE_TOLERANCE;
use flexio_harness::{make_tree, TreeShape};

/// How much to measure.
#[derive(Clone, Debug)]
pub struct TreeTunePlan {
    /// Tree A's scale: 0.1 is 2 000 files of 4 KiB.
    pub scale: f64,
    /// Timed rounds per setting (after one warm-up copy).
    pub rounds: usize,
    /// Worker counts tried (with the default batch).
    pub jobs: Vec<usize>,
    /// Batches tried (with the best worker count).
    pub batches: Vec<usize>,
    /// Others kept the machine busy (see [`crate::load`]): the workers
    /// stay at the default, whatever was measured. How many workers copy
    /// fastest depends on the CPUs free, and a busy machine's are taken by
    /// others for a while, not for good: a tune under a load of builds
    /// chose 1 worker, and `copy -a` ran 1.28× the default's time after.
    pub busy: bool,
}

impl TreeTunePlan {
    /// `flexio tune`: 2 000 files, 3 rounds.
    pub fn quick() -> Self {
        TreeTunePlan {
            scale: 0.1,
            rounds: 3,
            jobs: worker_counts(),
            batches: vec![1, 16, 64, DEFAULT_BATCH, 512],
            busy: false,
        }
    }

    /// `flexio tune --full`: 5 000 files, 5 rounds.
    pub fn full() -> Self {
        TreeTunePlan {
            scale: 0.25,
            rounds: 5,
            ..Self::quick()
        }
    }
}

/// 1, 2, 4, … up to four per CPU (at most 32), and the default.
fn worker_counts() -> Vec<usize> {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let most = (cpus * 4).min(32);
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
        .take_while(|n| *n <= most)
        .collect();
    counts.push(default_jobs());
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// What [`tune_tree`] chose, and why where it kept a default.
#[derive(Clone, Debug)]
pub struct TreeTuned {
    /// The settings for the profile.
    pub profile: TreeProfile,
    /// One line per default kept on noise or on a busy machine, for the
    /// profile's notes.
    pub notes: Vec<String>,
}

/// One setting's runs.
struct Setting {
    jobs: usize,
    batch: usize,
    seconds: Vec<f64>,
}

impl Setting {
    fn point(&self, files: u64) -> TreePoint {
        let mut sorted = self.seconds.clone();
        sorted.sort_by(f64::total_cmp);
        TreePoint {
            jobs: self.jobs,
            batch: self.batch,
            files_per_second: files as f64 / sorted[sorted.len() / 2],
        }
    }

    /// As a [`Measurement`] of files per second (median, slowest,
    /// fastest), for the noise rule.
    fn measurement(&self, files: u64) -> Measurement {
        let rate = |seconds: f64| files as f64 / seconds.max(f64::MIN_POSITIVE);
        let median = self.point(files).files_per_second;
        let slowest = self.seconds.iter().copied().fold(0.0, f64::max);
        let fastest = self.seconds.iter().copied().fold(f64::INFINITY, f64::min);
        Measurement {
            kind: FlowKind::Other,
            size: files,
            candidate: Candidate {
                mechanism: MechanismName::Auto,
                params: Params::default(),
            },
            median_bps: median,
            min_bps: rate(slowest),
            max_bps: rate(fastest),
            cpu_ns_per_byte: 0.0,
        }
    }
}

/// Measures the plan in a scratch directory under `dir` (removed after)
/// and returns the settings chosen for `filesystem`. `say` receives one
/// line per step; `stop` is asked before every copy, and a `true` ends
/// the tune with [`Error::Stopped`] (the scratch directory is removed all
/// the same).
///
/// # Errors
/// The scratch tree cannot be made ([`Error::Io`], [`Error::Harness`]), a
/// copy fails ([`Error::TreeCopy`], [`Error::TreeFile`]), or
/// [`Error::Stopped`].
///
/// # Example
/// ```no_run
/// use flexio_tune::tree::{tune_tree, TreeTunePlan};
/// let tree = tune_tree(
///     std::path::Path::new("/tmp"), "ext4", &TreeTunePlan::quick(),
///     &mut |line| eprintln!("{line}"), &mut || false,
/// ).unwrap();
/// assert!(tree.profile.jobs >= 1);
/// ```
pub fn tune_tree(
    dir: &Path,
    filesystem: &str,
    plan: &TreeTunePlan,
    say: &mut dyn FnMut(&str),
    stop: &mut dyn FnMut() -> bool,
) -> Result<TreeTuned> {
    let scratch = tempfile::Builder::new()
        .prefix(".flexio-tune-tree-")
        .tempdir_in(dir)
        .map_err(|e| Error::io("make a scratch directory in", dir, e))?;
    let source = scratch.path().join("source");
    let (files, bytes) = make_tree(&source, TreeShape::A, plan.scale)?;
    let file_bytes = bytes / files.max(1);
    let destination = scratch.path().join("copy");
    let copy = |jobs: usize, batch: usize| copy_once(&source, &destination, jobs, batch);

    say(&format!(
        "tree settings on {filesystem}: {files} files of {file_bytes} bytes, {} rounds; workers {:?}",
        plan.rounds, plan.jobs
    ));
    let mut by_jobs: Vec<Setting> = plan
        .jobs
        .iter()
        .map(|&jobs| Setting {
            jobs,
            batch: DEFAULT_BATCH,
            seconds: Vec::new(),
        })
        .collect();
    copy(default_jobs(), DEFAULT_BATCH)?; // warm-up: caches, allocator, directories
    measure(&mut by_jobs, plan.rounds, &copy, stop)?;
    let mut notes = Vec::new();
    let (fastest, kept) = choose(&by_jobs, files, |s| s.jobs == default_jobs());
    let jobs = match (plan.busy, kept) {
        (_, Some((gap, noise))) => {
            notes.push(format!(
                "tree on {filesystem}: the fastest worker count led the default {} by {:.1}%, \
                 inside the noise ({:.1}%): kept the default",
                fastest.jobs,
                gap * 100.0,
                noise * 100.0
            ));
            fastest.jobs
        }
        (true, None) if fastest.jobs != default_jobs() => {
            notes.push(format!(
                "tree on {filesystem}: {} workers measured fastest, but others kept the machine \
                 busy: kept the default {}",
                fastest.jobs,
                default_jobs()
            ));
            default_jobs()
        }
        (_, None) => fastest.jobs,
    };

    say(&format!(
        "tree settings on {filesystem}: {jobs} workers; batches {:?}",
        plan.batches
    ));
    let mut by_batch: Vec<Setting> = plan
        .batches
        .iter()
        .map(|&batch| Setting {
            jobs,
            batch,
            seconds: Vec::new(),
        })
        .collect();
    measure(&mut by_batch, plan.rounds, &copy, stop)?;
    let (fastest, kept) = choose(&by_batch, files, |s| s.batch == DEFAULT_BATCH);
    let batch = fastest.batch;
    if let Some((gap, noise)) = kept {
        notes.push(format!(
            "tree on {filesystem}: the fastest batch led the default {batch} by {:.1}%, \
             inside the noise ({:.1}%): kept the default",
            gap * 100.0,
            noise * 100.0
        ));
    }

    let points = by_jobs
        .iter()
        .chain(&by_batch)
        .map(|setting| setting.point(files))
        .collect();
    Ok(TreeTuned {
        profile: TreeProfile {
            filesystem: filesystem.to_string(),
            jobs,
            batch,
            files: files as usize,
            file_bytes,
            points,
        },
        notes,
    })
}

/// Every setting once per round, in turn, unless stopped.
fn measure(
    settings: &mut [Setting],
    rounds: usize,
    copy: &dyn Fn(usize, usize) -> Result<f64>,
    stop: &mut dyn FnMut() -> bool,
) -> Result<()> {
    for _ in 0..rounds.max(1) {
        for setting in settings.iter_mut() {
            if stop() {
                return Err(Error::Stopped);
            }
            setting.seconds.push(copy(setting.jobs, setting.batch)?);
        }
    }
    Ok(())
}

/// The fastest setting by median, unless the preferred one (the default)
/// is within the noise of it: the rule of the mechanisms
/// ([`separation`]), a lead of more than 3% and beyond the leader's runs
/// below its median plus the default's above its own, so that the
/// leader's slowest copy beat the default's fastest. With the reason when
/// the default was kept over a faster median.
fn choose(
    settings: &[Setting],
    files: u64,
    preferred: impl Fn(&Setting) -> bool,
) -> (&Setting, Option<(f64, f64)>) {
    let rate = |s: &Setting| s.point(files).files_per_second;
    let leader = settings
        .iter()
        .max_by(|a, b| rate(a).total_cmp(&rate(b)))
        .expect("at least one setting");
    let Some(default) = settings.iter().find(|s| preferred(s)) else {
        return (leader, None);
    };
    if std::ptr::eq(default, leader) {
        return (leader, None);
    }
    let (gap, noise) = separation(
        &leader.measurement(files),
        &default.measurement(files),
        TIE_TOLERANCE,
    );
    match gap > noise {
        true => (leader, None),
        false => (default, Some((gap, noise))),
    }
}

/// Copies `source` to a fresh `destination` with these settings; returns
/// the copy's seconds (the removal after is not timed).
fn copy_once(source: &Path, destination: &PathBuf, jobs: usize, batch: usize) -> Result<f64> {
    let _ = std::fs::remove_dir_all(destination);
    let options = TreeOptions {
        recursive: true,
        jobs,
        batch,
        ..TreeOptions::default()
    };
    let started = Instant::now();
    let report = copy_tree(
        &[source.to_path_buf()],
        destination,
        &options,
        &TreeProgress::default(),
    )
    .map_err(|source| Error::TreeCopy { jobs, source })?;
    let seconds = started.elapsed().as_secs_f64();
    if let Some(failure) = report.failures.first() {
        return Err(Error::TreeFile {
            jobs,
            path: failure.path.clone(),
            why: failure.error.clone(),
        });
    }
    std::fs::remove_dir_all(destination).map_err(|e| Error::io("remove", destination, e))?;
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(jobs: usize, seconds: &[f64]) -> Setting {
        Setting {
            jobs,
            batch: DEFAULT_BATCH,
            seconds: seconds.to_vec(),
        }
    }

    #[test]
    fn a_lead_within_the_noise_keeps_the_default() {
        let settings = [
            setting(2, &[1.00, 1.01, 1.02]),
            setting(4, &[0.99, 1.00, 1.01]),
        ];
        assert_eq!(choose(&settings, 1000, |s| s.jobs == 4).0.jobs, 4);
        // 4 workers are 1% slower than 2: the default stays.
        let settings = [
            setting(2, &[0.99, 0.99, 0.99]),
            setting(4, &[1.0, 1.0, 1.0]),
        ];
        assert_eq!(choose(&settings, 1000, |s| s.jobs == 4).0.jobs, 4);
    }

    #[test]
    fn overlapping_runs_keep_the_default_however_far_apart_the_medians() {
        // A busy machine: 2 workers' median is 15% ahead, but its slowest
        // copy was slower than the default's fastest.
        let settings = [
            setting(2, &[0.80, 0.85, 1.10]),
            setting(4, &[0.90, 1.00, 1.20]),
        ];
        let (chosen, kept) = choose(&settings, 1000, |s| s.jobs == 4);
        assert_eq!(chosen.jobs, 4);
        let (gap, noise) = kept.unwrap();
        assert!(gap > 0.1 && noise > gap, "{gap} {noise}");
        // No default among them: the fastest.
        assert_eq!(choose(&settings, 1000, |s| s.jobs == 8).0.jobs, 2);
    }

    #[test]
    fn a_busy_machine_keeps_the_default_workers_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let plan = TreeTunePlan {
            scale: 0.005,
            rounds: 1,
            // One worker only: it is the fastest measured, whatever the
            // copies took, and yet the default stays.
            jobs: vec![1],
            batches: vec![DEFAULT_BATCH],
            busy: true,
        };
        let tree = tune_tree(dir.path(), "testfs", &plan, &mut |_| {}, &mut || false).unwrap();
        assert_eq!(tree.profile.jobs, default_jobs());
        if default_jobs() != 1 {
            assert!(
                tree.notes
                    .iter()
                    .any(|n| n.contains("busy: kept the default")),
                "{:?}",
                tree.notes
            );
        }
    }

    #[test]
    fn a_clear_lead_moves_the_default() {
        let settings = [
            setting(2, &[0.70, 0.71, 0.72]),
            setting(4, &[1.0, 1.0, 1.01]),
        ];
        assert_eq!(choose(&settings, 1000, |s| s.jobs == 4).0.jobs, 2);
    }

    #[test]
    fn worker_counts_include_one_and_the_default() {
        let counts = worker_counts();
        assert_eq!(counts[0], 1);
        assert!(counts.contains(&default_jobs()));
        assert!(counts.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn tuning_a_small_tree_measures_every_setting_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let plan = TreeTunePlan {
            scale: 0.005, // 100 files
            rounds: 1,
            jobs: vec![1, 2],
            batches: vec![1, 16],
            busy: false,
        };
        let mut lines = Vec::new();
        let mut say = |l: &str| lines.push(l.to_string());
        let tree = tune_tree(dir.path(), "testfs", &plan, &mut say, &mut || false)
            .unwrap()
            .profile;
        assert_eq!(tree.filesystem, "testfs");
        assert_eq!((tree.files, tree.file_bytes), (100, 4096));
        assert!([1, 2].contains(&tree.jobs));
        assert!([1, 16].contains(&tree.batch));
        assert_eq!(tree.points.len(), 4);
        assert!(tree.points.iter().all(|p| p.files_per_second > 0.0));
        assert!(tree.validate().is_ok());
        assert_eq!(lines.len(), 2);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_tune_stopped_on_request_ends_between_copies_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let plan = TreeTunePlan {
            scale: 0.005,
            rounds: 3,
            jobs: vec![1, 2],
            batches: vec![1, 16],
            busy: false,
        };
        let mut asked = 0;
        let result = tune_tree(dir.path(), "testfs", &plan, &mut |_| {}, &mut || {
            asked += 1;
            asked > 2
        });
        assert!(matches!(result, Err(Error::Stopped)), "{result:?}");
        assert_eq!(asked, 3);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
