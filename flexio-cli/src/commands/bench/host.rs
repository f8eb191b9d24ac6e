//! `flexio bench --scenario host-to-host`: `flexio serve` + `flexio get`
//! across a veth pair against the rsync daemon, `tar | nc`, curl and
//! aria2c from nginx, and iperf3; then the OS project's Fig 5 and Fig 6
//! (see [`flexio_bench::host_bench`]). A table on stdout, `host.json`,
//! `host.md` and three SVG charts in the output directory.

use std::path::Path;
use std::process::{Command, Stdio};

use flexio_bench::host_bench::{HostBench, HostBenchOptions};

use crate::error::{Error, Result};

/// How the scenario is run (from `flexio bench`'s arguments).
pub struct HostArgs<'a> {
    /// Where the data and copies go (a new directory inside is removed).
    pub dir: &'a Path,
    /// Where the outputs go.
    pub out: &'a Path,
    /// Timed rounds per contender.
    pub runs: u32,
    /// The single file's size.
    pub file_bytes: u64,
    /// Trees A and B at this fraction.
    pub tree_scale: f64,
    /// Install aria2c with apt-get when it is missing (root;
    /// `--install-peers`).
    pub install: bool,
    /// Also Fig 5 and Fig 6.
    pub figures: bool,
}

/// `apt-get install -y aria2` when aria2c is missing and we are root,
/// asked for with `--install-peers`.
fn install_aria2_if_missing() {
    let present = Command::new("aria2c")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    if present || !flexio_bench::tree_bench::running_as_root() {
        return;
    }
    eprintln!("flexio bench: aria2c is missing; apt-get install -y aria2");
    let installed = Command::new("apt-get")
        .args(["install", "-y", "-q", "aria2"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("flexio bench: apt-get install aria2 failed; aria2c is reported as not run");
    }
}

/// Runs the scenario into `args.out`.
pub fn run(args: &HostArgs<'_>) -> Result<()> {
    if args.install {
        install_aria2_if_missing();
    }
    // Absolute: nginx takes a relative path in its configuration as
    // relative to its prefix, not to the bench's directory.
    let work = args
        .dir
        .join(format!(".flexio-host-bench-{}", std::process::id()));
    let work = std::path::absolute(&work).map_err(|e| Error::io("absolute", &work, e))?;
    let runs = args.runs as usize;
    let options = HostBenchOptions {
        dir: work.clone(),
        flexio: std::env::current_exe()
            .map_err(|e| Error::io("current_exe", Path::new("flexio"), e))?,
        runs,
        figure_runs: runs.min(3),
        file_bytes: args.file_bytes,
        tree_scale: args.tree_scale,
        streams: 4,
        namespaces: true,
        figures: args.figures,
    };
    super::scenario::run::<HostBench>("host-to-host", &options, &work, args.out)
}
