//! The `tree` scenario: many files, copied by `flexio copy -r` and by the
//! tools people use for it — `cp -r`, `cp -a`, `rsync -a`, `tar | tar`,
//! `xcp` — each run as a process, interleaved round by round, on the trees
//! of issue 14 (A: 20 000 files of 4 KiB in 200 directories; B: 1 000 of
//! 1 MiB; C: 4 of 256 MiB and 2 000 of 16 KiB; D: A with symlinks, hard
//! links and two sparse 1 GiB files), on the OS project's Fig 5 (its
//! 1000 MB in 1, 5 and 10 files, scaled to 100 MiB: `os-fig5-*`) and on
//! the same 100 MiB as 10 000 files (`files-10000`).
//!
//! As root the trees live on ext4 in a RAM-backed loop image as well as in
//! the directory given: the virtual disk's writeback of 20 000 small files
//! swings timings 20× from run to run, and a file system in memory isolates
//! what the copier itself costs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::stats::median;
use crate::{Error, Report, Result, Scenario};

mod chart;
mod ram_disk;

pub use chart::write_tree_charts;
pub use flexio_harness::trees::{make_tree, TreeShape};
pub use ram_disk::RamDisk;

/// What to run.
#[derive(Clone, Debug)]
pub struct TreeBenchOptions {
    /// Where the trees are made (a directory on the disk under test).
    pub dir: PathBuf,
    /// The `flexio` binary to time.
    pub flexio: PathBuf,
    /// Timed rounds per contender (after one warm-up round).
    pub runs: usize,
    /// The trees, scaled: 1.0 is the issue's size.
    pub scale: f64,
    /// Also on ext4 in a RAM-backed loop image (root only).
    pub ram_disk: bool,
    /// Drop the page cache before each run (root only): a cold copy.
    pub cold: bool,
    /// Only these trees (all when empty).
    pub shapes: Vec<TreeShape>,
    /// Set (by SIGINT or SIGTERM) to stop before the next copy: the run
    /// then ends with [`STOPPED`], and the caller removes its directory.
    pub stop: Option<Arc<AtomicBool>>,
}

/// The error of a run stopped on request.
pub const STOPPED: &str = "the tree scenario was stopped on request";

/// One contender's timings on one tree and file system.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TreeTiming {
    /// `A`, `B`, `C`, `D`, `os-fig5-1`, ...
    pub tree: String,
    /// `disk` or `ram-ext4`.
    pub file_system: String,
    /// `flexio copy -r`, `cp -r`, ...
    pub contender: String,
    /// Files in the tree.
    pub files: u64,
    /// Bytes in the tree.
    pub bytes: u64,
    /// Wall seconds of each timed run.
    pub seconds: Vec<f64>,
    /// Whether every run's copy matched the source.
    pub verified: bool,
}

impl TreeTiming {
    /// The median wall time.
    pub fn median(&self) -> f64 {
        median(&mut self.seconds.clone())
    }
}

/// A contender: how to copy `source` to a new `target`.
struct Contender {
    name: &'static str,
    /// For tree D only the contenders that keep links and holes count.
    archive: bool,
    command: fn(&Path, &Path, &Path) -> Command,
}

fn contenders() -> Vec<Contender> {
    vec![
        Contender {
            name: "flexio copy -r",
            archive: false,
            command: |flexio, s, t| {
                let mut c = Command::new(flexio);
                c.args(["copy", "-r", "-q"]).arg(s).arg(t);
                c
            },
        },
        Contender {
            name: "flexio copy -a",
            archive: true,
            command: |flexio, s, t| {
                let mut c = Command::new(flexio);
                c.args(["copy", "-a", "-q"]).arg(s).arg(t);
                c
            },
        },
        Contender {
            name: "cp -r",
            archive: false,
            command: |_, s, t| {
                let mut c = Command::new("cp");
                c.arg("-r").arg(s).arg(t);
                c
            },
        },
        Contender {
            name: "cp -a",
            archive: true,
            command: |_, s, t| {
                let mut c = Command::new("cp");
                c.arg("-a").arg(s).arg(t);
                c
            },
        },
        Contender {
            name: "rsync -a",
            archive: true,
            command: |_, s, t| {
                let mut c = Command::new("rsync");
                c.arg("-aH").arg(format!("{}/", s.display())).arg(t);
                c
            },
        },
        Contender {
            name: "tar | tar",
            archive: true,
            command: |_, s, t| {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg("mkdir -p \"$2\" && tar -C \"$1\" -cf - . | tar -C \"$2\" -xf -")
                    .arg("sh")
                    .arg(s)
                    .arg(t);
                c
            },
        },
        Contender {
            name: "xcp -r",
            archive: false,
            command: |_, s, t| {
                let mut c = Command::new("xcp");
                c.arg("-r").arg(s).arg(t);
                c
            },
        },
    ]
}

/// Whether the bench runs as root (a RAM disk and dropped caches need it).
pub fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether `program` can be run.
fn available(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// `cargo install xcp` when xcp is missing (`flexio bench
/// --install-peers`); reported as missing if that fails.
pub fn install_xcp_if_missing() -> Result<()> {
    if available("xcp") {
        return Ok(());
    }
    let status = Command::new("cargo")
        .args(["install", "--quiet", "xcp"])
        .status()
        .map_err(|e| Error::spawn("start", "cargo install xcp", e))?;
    if status.success() && available("xcp") {
        Ok(())
    } else {
        Err(Error::program(
            "cargo install xcp",
            format!("{status}; xcp is reported as missing"),
        ))
    }
}

/// What a run of the tree scenario gives (`tree.json`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TreeResults {
    /// Every contender's timings on every tree and file system.
    pub timings: Vec<TreeTiming>,
    /// The contenders that are not installed here.
    pub missing_peers: Vec<String>,
}

/// One group of interleaved runs: one tree on one file system, every
/// contender that copies it (for tree D only those that keep links and
/// holes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeCell {
    /// `disk` (the directory given) or `ram-ext4`.
    pub file_system: &'static str,
    /// The tree.
    pub tree: TreeShape,
}

/// The tree scenario behind [`Scenario`].
///
/// # Examples
/// ```
/// use flexio_bench::tree_bench::{TreeBench, TreeBenchOptions, TreeShape};
/// use flexio_bench::Scenario;
/// let options = TreeBenchOptions {
///     dir: std::env::temp_dir(),
///     flexio: "flexio".into(),
///     runs: 1,
///     scale: 0.01,
///     ram_disk: true,
///     cold: false,
///     shapes: vec![TreeShape::A, TreeShape::B],
///     stop: None,
/// };
/// // Each tree on the disk, then each on the RAM disk.
/// let cells = TreeBench::cells(&options).unwrap();
/// let names: Vec<_> = cells.iter().map(|c| (c.file_system, c.tree.name())).collect();
/// assert_eq!(names, [("disk", "A"), ("disk", "B"), ("ram-ext4", "A"), ("ram-ext4", "B")]);
/// ```
pub struct TreeBench;

impl Scenario for TreeBench {
    type Options = TreeBenchOptions;
    type Cell = TreeCell;
    type Results = TreeResults;
    const NAME: &'static str = "tree";

    /// Every tree asked for (all when none is), on the disk and then, when
    /// asked for, on the RAM disk.
    fn cells(options: &TreeBenchOptions) -> Result<Vec<TreeCell>> {
        let shapes = if options.shapes.is_empty() {
            TreeShape::ALL.to_vec()
        } else {
            options.shapes.clone()
        };
        let file_systems: &[&'static str] = if options.ram_disk {
            &["disk", "ram-ext4"]
        } else {
            &["disk"]
        };
        Ok(file_systems
            .iter()
            .flat_map(|&file_system| {
                shapes
                    .iter()
                    .map(move |&tree| TreeCell { file_system, tree })
            })
            .collect())
    }

    fn run(options: &TreeBenchOptions) -> Result<TreeResults> {
        run(options)
    }

    /// The table with the missing peers and how it ran; the charts carry
    /// `command`, the rounds and whether the cache was cold.
    fn report(
        options: &TreeBenchOptions,
        results: &TreeResults,
        out: &Path,
        command: &str,
    ) -> Result<Report> {
        let mut text = table(&results.timings);
        if !results.missing_peers.is_empty() {
            text += &format!("\nmissing peers: {}\n", results.missing_peers.join(", "));
        }
        text += &format!(
            "\n{} runs per contender after a warm-up round, {}; \"flexio ×\" is the contender's median over flexio's best median (above 1: flexio is faster)\n",
            options.runs,
            if options.cold { "page cache dropped before each run" } else { "source read once before each run (warm)" }
        );
        let footer = format!(
            "{command}; {} runs per contender, {}",
            options.runs,
            if options.cold { "cold" } else { "warm" }
        );
        let charts = write_tree_charts(out, &results.timings, &footer)
            .map_err(|e| Error::io("write the tree charts into", out, e))?;
        Ok(Report {
            table: text,
            charts,
        })
    }

    /// The timings and missing peers beside whether the cache was cold and
    /// the trees' scale.
    fn document(
        options: &TreeBenchOptions,
        results: &TreeResults,
        _command: &str,
    ) -> Result<serde_json::Value> {
        Ok(serde_json::json!({
            "schema_version": 1,
            "scenario": Self::NAME,
            "cold": options.cold,
            "scale": options.scale,
            "missing_peers": results.missing_peers,
            "timings": crate::to_json(&results.timings)?,
        }))
    }
}

/// Runs the scenario: every cell of [`TreeBench::cells`], every
/// contender, interleaved round by round. Missing peers are listed in
/// the results.
///
/// # Errors
/// A tree that cannot be made, or a RAM disk that cannot be set up when
/// asked for.
pub fn run(options: &TreeBenchOptions) -> Result<TreeResults> {
    let cells = TreeBench::cells(options)?;
    let mut missing = Vec::new();
    let mut ready: Vec<Contender> = Vec::new();
    for contender in contenders() {
        let program = contender.name.split_whitespace().next().unwrap_or("");
        let program = if program == "flexio" { "true" } else { program };
        if program == "tar" || available(program) {
            ready.push(contender);
        } else {
            missing.push(contender.name.to_string());
        }
    }
    let mut places = vec![("disk", options.dir.clone(), None)];
    if options.ram_disk {
        let disk = RamDisk::mount(&options.dir.join("ram"), 4 << 30)?;
        places.push(("ram-ext4", disk.path().to_path_buf(), Some(disk)));
    }
    let mut timings = Vec::new();
    for cell in &cells {
        let Some((file_system, root, _disk)) =
            places.iter().find(|(name, ..)| *name == cell.file_system)
        else {
            continue;
        };
        let shape = &cell.tree;
        if options
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
        {
            return Err(Error::Stopped(STOPPED));
        }
        let source = root.join(format!("tree-{}", shape.name()));
        let (files, bytes) = make_tree(&source, *shape, options.scale)?;
        let eligible: Vec<&Contender> = ready
            .iter()
            .filter(|c| !shape.needs_archive() || c.archive)
            .collect();
        let mut rows: Vec<TreeTiming> = eligible
            .iter()
            .map(|c| TreeTiming {
                tree: shape.name().to_string(),
                file_system: file_system.to_string(),
                contender: c.name.to_string(),
                files,
                bytes,
                seconds: Vec::new(),
                verified: true,
            })
            .collect();
        for round in 0..=options.runs {
            for (index, contender) in eligible.iter().enumerate() {
                if options
                    .stop
                    .as_ref()
                    .is_some_and(|s| s.load(Ordering::Relaxed))
                {
                    return Err(Error::Stopped(STOPPED));
                }
                let target = root.join("copy");
                remove_tree(&target)?;
                prepare_cache(&source, options.cold)?;
                let mut command = (contender.command)(&options.flexio, &source, &target);
                let started = Instant::now();
                let status = command
                    .status()
                    .map_err(|e| Error::spawn("start", contender.name, e))?;
                let seconds = started.elapsed().as_secs_f64();
                if !status.success() {
                    return Err(Error::program(
                        contender.name,
                        format!("on tree {} failed: {status}", shape.name()),
                    ));
                }
                if round == 0 {
                    // The warm-up round checks the copy instead.
                    rows[index].verified = same_tree(&source, &target);
                    continue;
                }
                rows[index].seconds.push(seconds);
            }
        }
        remove_tree(&root.join("copy"))?;
        remove_tree(&source)?;
        timings.extend(rows);
    }
    Ok(TreeResults {
        timings,
        missing_peers: missing,
    })
}

fn remove_tree(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io("remove", path, e)),
    }
}

/// Cold: write back and drop the page cache (root). Warm: read every file
/// of the source once, so it is cached.
fn prepare_cache(source: &Path, cold: bool) -> Result<()> {
    if cold {
        let _ = Command::new("sync").status();
        let drop_caches = "/proc/sys/vm/drop_caches";
        return std::fs::write(drop_caches, "3")
            .map_err(|e| Error::io("drop the page cache (needs root): write", drop_caches, e));
    }
    let _ = Command::new("sync").status();
    let _ = Command::new("sh")
        .arg("-c")
        .arg("find \"$1\" -type f -exec cat {} + > /dev/null")
        .arg("sh")
        .arg(source)
        .status();
    Ok(())
}

/// Whether `copy` holds the same entries and bytes as `source` (diff -r,
/// which compares symlinks as links).
fn same_tree(source: &Path, copy: &Path) -> bool {
    Command::new("diff")
        .args(["-r", "--no-dereference", "-q"])
        .arg(source)
        .arg(copy)
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The table: per tree and file system, each contender's median, min and
/// max, files/s and bytes/s, and flexio's ratio against it.
pub fn table(timings: &[TreeTiming]) -> String {
    let mut text = String::new();
    let mut groups: Vec<(String, String)> = timings
        .iter()
        .map(|t| (t.tree.clone(), t.file_system.clone()))
        .collect();
    groups.dedup();
    for (tree, file_system) in groups {
        let rows: Vec<&TreeTiming> = timings
            .iter()
            .filter(|t| t.tree == tree && t.file_system == file_system)
            .collect();
        let Some(first) = rows.first() else { continue };
        text += &format!(
            "\ntree {tree} on {file_system}: {} files, {}\n",
            first.files,
            flexio::format_bytes(first.bytes)
        );
        let flexio_time = rows
            .iter()
            .filter(|t| t.contender.starts_with("flexio"))
            .map(|t| t.median())
            .fold(f64::INFINITY, f64::min);
        text += &format!(
            "  {:<16} {:>9} {:>9} {:>9} {:>10} {:>11} {:>10}  {}\n",
            "contender", "median s", "min s", "max s", "files/s", "MiB/s", "flexio ×", "copy"
        );
        for row in rows {
            let median = row.median();
            let min = row.seconds.iter().copied().fold(f64::INFINITY, f64::min);
            let max = row.seconds.iter().copied().fold(0.0, f64::max);
            text += &format!(
                "  {:<16} {:>9.3} {:>9.3} {:>9.3} {:>10.0} {:>11.1} {:>10.2}  {}\n",
                row.contender,
                median,
                min,
                max,
                row.files as f64 / median,
                row.bytes as f64 / median / (1 << 20) as f64,
                median / flexio_time,
                if row.verified { "same" } else { "DIFFERS" }
            );
        }
    }
    text
}
