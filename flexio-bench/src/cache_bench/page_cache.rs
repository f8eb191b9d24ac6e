//! The hot-set experiment through the kernel's page cache under the same
//! memory budget: a child process (the `flexio` binary again, as
//! `flexio cache bench --page-cache-child SHAPE PATH`) is put in a cgroup-v1
//! memory group limited to the cache size plus a small allowance for its
//! own memory, then reads with plain `pread`; a read counts as a hit when
//! `mincore(2)` found its page resident just before.

use std::io::{self, BufRead, Write};
use std::num::NonZeroU64;
use std::path::Path;
use std::process::{Command, Stdio};

use super::{hot_phase, CacheBenchOptions, HotSetRow, HotSetShape, BLOCK};
use crate::memory_group::MemoryGroup;
use crate::{Error, Result};

/// The hidden flag of `flexio cache bench` that runs [`child_main`].
pub const CHILD_FLAG: &str = "--page-cache-child";

/// Memory the child needs besides the page cache: its heap (the zipf
/// draws, 1.2 MB at the default 50 000 reads per reader) and stacks. What
/// it leaves unused the page cache may take: a slight edge for the page
/// cache, said in the report.
pub(crate) const CHILD_ALLOWANCE: u64 = 2 << 20;

/// Runs the child in a fresh memory cgroup and returns its row; `Err` says
/// why the page cache was not measured (not root, no cgroup-v1 memory
/// controller, the child failed).
pub fn hot_set(options: &CacheBenchOptions, shape: &HotSetShape, path: &Path) -> Result<HotSetRow> {
    let group = MemoryGroup::new(
        "cache-bench-page-cache",
        options.cache_bytes + CHILD_ALLOWANCE,
    )?;
    run_child(shape, path, &group)
    // The child has exited (or was never moved in): the group is empty
    // when it is dropped here.
}

fn run_child(shape: &HotSetShape, path: &Path, group: &MemoryGroup) -> Result<HotSetRow> {
    let exe = std::env::current_exe().map_err(|source| Error::System {
        operation: "current_exe",
        source,
    })?;
    let shape_json = serde_json::to_string(shape).expect("json");
    let mut child = Command::new(exe)
        .args(["cache", "bench", CHILD_FLAG, &shape_json])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Error::spawn("start", "the page-cache child", e))?;
    // The child waits for "go" on stdin, so it reads nothing before it is
    // in the group.
    let moved = group.add(child.id());
    let mut stdin = child.stdin.take().expect("piped");
    if moved.is_ok() {
        let _ = stdin.write_all(b"go\n");
    }
    drop(stdin);
    let output = child
        .wait_with_output()
        .map_err(|e| Error::spawn("wait for", "the page-cache child", e))?;
    moved?;
    if !output.status.success() {
        return Err(Error::program(
            "the page-cache child",
            format!("failed: {}", output.status),
        ));
    }
    serde_json::from_slice(&output.stdout).map_err(|source| Error::Json {
        what: "the page-cache child's answer",
        source,
    })
}

/// The child: waits for "go", runs both phases with `pread` through the
/// page cache (dropping the file's pages before each), prints its row as
/// JSON.
///
/// # Errors
/// Reading stdin, the shape, or the file fails.
pub fn child_main(shape_json: &str, path: &Path) -> io::Result<()> {
    let mut line = String::new();
    io::stdin().lock().read_line(&mut line)?;
    if line.trim() != "go" {
        return Err(io::Error::other("the parent did not say go"));
    }
    let shape: HotSetShape = serde_json::from_str(shape_json).map_err(io::Error::other)?;
    let file = std::fs::File::open(path)?;
    let draws = shape.draws();
    let read = |block: u64| -> io::Result<bool> {
        let at = block * BLOCK as u64;
        let hit = flexio::measure::residency(&file, at, BLOCK as u64)
            .is_some_and(|r| r.resident_bytes == BLOCK as u64);
        let mut buf = [0u8; BLOCK];
        rustix::io::pread(&file, &mut buf, at)?;
        Ok(hit)
    };
    let mut ratio = [0.0; 2];
    let mut scanned_blocks = 0;
    for (phase, scan) in [false, true].into_iter().enumerate() {
        rustix::fs::fadvise(
            &file,
            0,
            NonZeroU64::new(shape.file_bytes()),
            rustix::fs::Advice::DontNeed,
        )?;
        let (hits, scanned) =
            hot_phase(&shape, &draws, scan, &read, &|block| read(block).map(drop))?;
        ratio[phase] = hits;
        scanned_blocks = scanned;
    }
    let row = HotSetRow {
        policy: "page-cache".into(),
        hit_percent_alone: ratio[0],
        hit_percent_with_scan: ratio[1],
        kept: ratio[1] / ratio[0].max(f64::MIN_POSITIVE),
        scanned_blocks,
    };
    println!("{}", serde_json::to_string(&row).expect("json"));
    Ok(())
}
