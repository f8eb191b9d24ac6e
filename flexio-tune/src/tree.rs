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

use crate::select::MAX_NOISE_BAND;
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
}

impl TreeTunePlan {
    /// `flexio tune`: 2 000 files, 3 rounds.
    pub fn quick() -> Self {
        TreeTunePlan {
            scale: 0.1,
            rounds: 3,
            jobs: worker_counts(),
            batches: vec![1, 16, 64, DEFAULT_BATCH, 512],
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

/// The error of a tune stopped on request (Ctrl-C) between two copies;
/// the scratch directory is removed all the same.
pub const STOPPED: &str = "stopped on request";

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

    /// (slowest − fastest) / median, as files per second.
    fn spread(&self) -> f64 {
        let mut sorted = self.seconds.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        (sorted[sorted.len() - 1] - sorted[0]) / median
    }
}

/// Measures the plan in a scratch directory under `dir` (removed after)
/// and returns the settings chosen for `filesystem`. `say` receives one
/// line per step; `stop` is asked before every copy, and a `true` ends
/// the tune with [`STOPPED`].
///
/// # Errors
/// The scratch tree cannot be made, a copy fails, or [`STOPPED`].
///
/// # Example
/// ```no_run
/// use flexio_tune::tree::{tune_tree, TreeTunePlan};
/// let tree = tune_tree(
///     std::path::Path::new("/tmp"), "ext4", &TreeTunePlan::quick(),
///     &mut |line| eprintln!("{line}"), &mut || false,
/// ).unwrap();
/// assert!(tree.jobs >= 1);
/// ```
pub fn tune_tree(
    dir: &Path,
    filesystem: &str,
    plan: &TreeTunePlan,
    say: &mut dyn FnMut(&str),
    stop: &mut dyn FnMut() -> bool,
) -> Result<TreeProfile, String> {
    let scratch = tempfile::Builder::new()
        .prefix(".flexio-tune-tree-")
        .tempdir_in(dir)
        .map_err(|e| format!("make a scratch directory in {}: {e}", dir.display()))?;
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
    let jobs = choose(&by_jobs, files, |s| s.jobs == default_jobs()).jobs;

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
    let batch = choose(&by_batch, files, |s| s.batch == DEFAULT_BATCH).batch;

    let points = by_jobs
        .iter()
        .chain(&by_batch)
        .map(|setting| setting.point(files))
        .collect();
    Ok(TreeProfile {
        filesystem: filesystem.to_string(),
        jobs,
        batch,
        files: files as usize,
        file_bytes,
        points,
    })
}

/// Every setting once per round, in turn, unless stopped.
fn measure(
    settings: &mut [Setting],
    rounds: usize,
    copy: &dyn Fn(usize, usize) -> Result<f64, String>,
    stop: &mut dyn FnMut() -> bool,
) -> Result<(), String> {
    for _ in 0..rounds.max(1) {
        for setting in settings.iter_mut() {
            if stop() {
                return Err(STOPPED.into());
            }
            setting.seconds.push(copy(setting.jobs, setting.batch)?);
        }
    }
    Ok(())
}

/// The fastest setting by median, unless the preferred one (the default)
/// is within the leader's noise (half its spread, at most
/// [`MAX_NOISE_BAND`], at least 3%): a lead smaller than the runs'
/// disagreement does not move a default.
fn choose(settings: &[Setting], files: u64, preferred: impl Fn(&Setting) -> bool) -> &Setting {
    let rate = |s: &Setting| s.point(files).files_per_second;
    let leader = settings
        .iter()
        .max_by(|a, b| rate(a).total_cmp(&rate(b)))
        .expect("at least one setting");
    let band = (leader.spread() / 2.0).clamp(0.03, MAX_NOISE_BAND.max(0.03));
    settings
        .iter()
        .find(|s| preferred(s) && rate(s) >= rate(leader) * (1.0 - band))
        .unwrap_or(leader)
}

/// Copies `source` to a fresh `destination` with these settings; returns
/// the copy's seconds (the removal after is not timed).
fn copy_once(
    source: &Path,
    destination: &PathBuf,
    jobs: usize,
    batch: usize,
) -> Result<f64, String> {
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
    .map_err(|e| format!("tree copy with {jobs} workers: {e}"))?;
    let seconds = started.elapsed().as_secs_f64();
    if let Some(failure) = report.failures.first() {
        return Err(format!(
            "tree copy with {jobs} workers: {}: {}",
            failure.path, failure.error
        ));
    }
    std::fs::remove_dir_all(destination)
        .map_err(|e| format!("remove {}: {e}", destination.display()))?;
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
        assert_eq!(choose(&settings, 1000, |s| s.jobs == 4).jobs, 4);
        // 4 workers are 1% slower than 2: the default stays.
        let settings = [
            setting(2, &[0.99, 0.99, 0.99]),
            setting(4, &[1.0, 1.0, 1.0]),
        ];
        assert_eq!(choose(&settings, 1000, |s| s.jobs == 4).jobs, 4);
    }

    #[test]
    fn a_clear_lead_moves_the_default() {
        let settings = [
            setting(2, &[0.70, 0.71, 0.72]),
            setting(4, &[1.0, 1.0, 1.01]),
        ];
        assert_eq!(choose(&settings, 1000, |s| s.jobs == 4).jobs, 2);
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
        };
        let mut lines = Vec::new();
        let mut say = |l: &str| lines.push(l.to_string());
        let tree = tune_tree(dir.path(), "testfs", &plan, &mut say, &mut || false).unwrap();
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
        };
        let mut asked = 0;
        let result = tune_tree(dir.path(), "testfs", &plan, &mut |_| {}, &mut || {
            asked += 1;
            asked > 2
        });
        assert_eq!(result.unwrap_err(), STOPPED);
        assert_eq!(asked, 3);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
