//! `flexio bench --scenario tree`: the tree copiers as processes, on the
//! trees of [`flexio_bench::tree_bench`]; a table on stdout and
//! `tree.json`, `tree.md`, `tree-files.svg` and `tree-bytes.svg` in the
//! output directory.

use std::path::Path;

use flexio_bench::tree_bench::{self, TreeBench, TreeBenchOptions, TreeShape};

use crate::error::{Error, Result};

/// Runs the scenario into `out`; installs xcp first only when
/// `install_peers` (`--install-peers`).
///
/// # Errors
/// An unknown tree, the scenario failed or was stopped, or the outputs
/// cannot be written.
pub fn run(
    dir: &Path,
    out: &Path,
    runs: u32,
    scale: f64,
    cold: bool,
    trees: &[String],
    install_peers: bool,
) -> Result<()> {
    let shapes = if trees.is_empty() {
        TreeShape::ALL.to_vec()
    } else {
        trees
            .iter()
            .map(|name| {
                TreeShape::from_name(name).ok_or_else(|| {
                    let known: Vec<_> = TreeShape::ALL.iter().map(|s| s.name()).collect();
                    Error::Usage(format!(
                        "--trees: unknown tree {name:?}; known: {}",
                        known.join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?
    };
    let root = tree_bench::running_as_root();
    if install_peers && let Err(why) = tree_bench::install_xcp_if_missing() {
        eprintln!("flexio bench: {why}");
    }
    let work = dir.join(format!(".flexio-tree-bench-{}", std::process::id()));
    // SIGINT or SIGTERM stops the run before its next copy, so that the
    // work directory (and the RAM disk in it) is removed after it.
    let stop = crate::signals::stop_on_signals();
    let options = TreeBenchOptions {
        dir: work.clone(),
        flexio: std::env::current_exe()
            .map_err(|e| Error::io("current_exe", Path::new("flexio"), e))?,
        runs: runs as usize,
        scale,
        ram_disk: root,
        cold: cold && root,
        shapes,
        stop: Some(stop),
    };
    if !root {
        eprintln!("flexio bench: not root, so no RAM-backed ext4 and no cold runs: the trees are copied on {} only", dir.display());
    }
    super::scenario::run::<TreeBench>("tree", &options, &work, out)
}
