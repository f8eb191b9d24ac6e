//! `flexio bench --scenario tree`: the tree copiers as processes, on the
//! trees of [`flexio_bench::tree_bench`]; a table on stdout and
//! `tree.json`, `tree.md`, `tree-files.svg` and `tree-bytes.svg` in the
//! output directory.

use std::path::Path;

use flexio_bench::tree_bench::{self, TreeBenchOptions, TreeShape};

use crate::error::{Error, Result};

/// Runs the scenario into `out`; installs xcp first only when
/// `install_peers` (`--install-peers`).
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
    if install_peers {
        if let Err(why) = tree_bench::install_xcp_if_missing() {
            eprintln!("flexio bench: {why}");
        }
    }
    let work = dir.join(format!(".flexio-tree-bench-{}", std::process::id()));
    // SIGINT or SIGTERM stops the run before its next copy, so that the
    // work directory (and the RAM disk in it) is removed below.
    let stop = crate::signals::stop_on_signals();
    let options = TreeBenchOptions {
        dir: work.clone(),
        flexio: std::env::current_exe().map_err(|e| Error::Io {
            op: "current_exe",
            endpoint: "flexio".into(),
            offset: None,
            source: e,
        })?,
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
    let result = tree_bench::run(&options);
    let _ = std::fs::remove_dir_all(&work);
    let (timings, missing) = result.map_err(|e| Error::Usage(e.to_string()))?;
    let mut text = tree_bench::table(&timings);
    if !missing.is_empty() {
        text += &format!("\nmissing peers: {}\n", missing.join(", "));
    }
    text += &format!(
        "\n{} runs per contender after a warm-up round, {}; \"flexio ×\" is the contender's median over flexio's best median (above 1: flexio is faster)\n",
        runs,
        if options.cold { "page cache dropped before each run" } else { "source read once before each run (warm)" }
    );
    crate::output::print_stdout(&text);
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "schema_version": 1,
        "scenario": "tree",
        "cold": options.cold,
        "scale": scale,
        "missing_peers": missing,
        "timings": timings,
    }))
    .expect("json");
    let write = |name: &str, bytes: &[u8]| {
        let path = out.join(name);
        flexio::write_file_replacing_regular(&path, bytes).map_err(|e| Error::Io {
            op: "write",
            endpoint: path.display().to_string(),
            offset: None,
            source: e,
        })
    };
    std::fs::create_dir_all(out).map_err(|e| Error::Io {
        op: "mkdir",
        endpoint: out.display().to_string(),
        offset: None,
        source: e,
    })?;
    write("tree.json", &json)?;
    write(
        "tree.md",
        format!("# flexio bench --scenario tree\n\n```text\n{text}```\n").as_bytes(),
    )?;
    let footer = format!(
        "{}; {} runs per contender, {}",
        std::env::args().collect::<Vec<_>>().join(" "),
        runs,
        if options.cold { "cold" } else { "warm" }
    );
    let charts = tree_bench::write_tree_charts(out, &timings, &footer).map_err(|e| Error::Io {
        op: "write chart",
        endpoint: out.display().to_string(),
        offset: None,
        source: e,
    })?;
    eprintln!(
        "wrote {}, {} and {}",
        out.join("tree.json").display(),
        out.join("tree.md").display(),
        charts
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
