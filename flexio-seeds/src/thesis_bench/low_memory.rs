//! The original's 128 MB machine: every copy runs in a memory cgroup of
//! [`MEMORY_LIMIT`] (page cache included), cold and synced to the disk
//! (`--fsync`), as the thesis's disk -> disk runs. Files up to 200 MiB,
//! so that, as there, the cache fills. Root only; without root nothing
//! runs and the outcome says why. A copy the OOM killer ends in the group
//! is said to have run out of memory there; a `--dir` on tmpfs, where the
//! copies' files are memory charged to the group, is warned of (in the
//! run's output and in the exhibit).

use std::path::Path;
use std::process::Command;

use super::process::{make_cold, source, timed};
use super::{point, ThesisOptions, ThesisOutcome, ThesisPoint};
use flexio_bench::memory_group::MemoryGroup;

/// The cgroup's limit: the original machine's 128 MB.
pub const MEMORY_LIMIT: u64 = 128 << 20;

const MIB: u64 = 1 << 20;

/// The mechanisms of Figures 4.7-4.14: a user buffer, mmap, and the
/// kernel's copy (FlexIO at the buffer-cache level).
const BY_SIZE: [&str; 3] = ["read-write", "mmap", "copy-file-range"];

/// The buffer sweep of Figure 4.15: a user buffer, and the kernel's copy
/// asked for the same length per call.
const BY_BUFFER: [&str; 2] = ["read-write", "copy-file-range"];

/// Disk -> disk by file size in the cgroup, 1 MiB buffers: one series per
/// mechanism, `MECHANISM, 128 MiB cgroup`.
pub fn by_size(options: &ThesisOptions) -> ThesisOutcome {
    let sizes: &[u64] = if options.quick {
        &[1, 50, 200]
    } else {
        &[1, 10, 50, 100, 200]
    };
    in_group("thesis-by-size", &options.dir, |group, points| {
        for &mb in sizes {
            for via in BY_SIZE {
                points.push(copy_point(options, group, via, mb * MIB, MIB, mb as f64)?);
            }
        }
        Ok(())
    })
}

/// Disk -> disk of one file (64 MiB quick, 100 MiB full) by buffer size
/// from 1 KiB to 1 MiB in the cgroup: `MECHANISM, 128 MiB cgroup`.
pub fn by_buffer(options: &ThesisOptions) -> ThesisOutcome {
    let size = if options.quick { 64 * MIB } else { 100 * MIB };
    in_group("thesis-by-buffer", &options.dir, |group, points| {
        for kib in [1u64, 4, 16, 64, 256, 1024] {
            for via in BY_BUFFER {
                points.push(copy_point(
                    options,
                    group,
                    via,
                    size,
                    kib << 10,
                    kib as f64,
                )?);
            }
        }
        Ok(())
    })
}

/// Makes the group, runs `sweep` in it, removes it (on every way out:
/// the group is dropped here). A sweep that fails keeps what it measured
/// and says why.
fn in_group(
    name: &str,
    dir: &Path,
    sweep: impl FnOnce(&MemoryGroup, &mut Vec<ThesisPoint>) -> Result<(), String>,
) -> ThesisOutcome {
    let group = match MemoryGroup::new(name, MEMORY_LIMIT) {
        Ok(group) => group,
        Err(why) => {
            return ThesisOutcome {
                shortfall: Some(format!("no 128 MiB memory cgroup ({why})")),
                ..ThesisOutcome::default()
            }
        }
    };
    let mut setting = format!(
        "each copy in memory cgroup {} limited to 128 MiB (page cache included), cold, --fsync",
        group.path().display()
    );
    let tmpfs = on_tmpfs(dir).then(|| tmpfs_warning(dir));
    if let Some(warning) = &tmpfs {
        eprintln!("flexio bench: warning: {warning}");
        setting += &format!(". Warning: {warning}");
    }
    let mut points = Vec::new();
    let failed = sweep(&group, &mut points).err();
    drop(group);
    // On tmpfs the setting is not the one designed, whatever was measured.
    let shortfall = match (tmpfs, failed) {
        (Some(warning), Some(why)) => Some(format!("{why}; {warning}")),
        (tmpfs, failed) => failed.or(tmpfs),
    };
    ThesisOutcome {
        points,
        shortfall,
        setting,
    }
}

/// One point: `via` copying `size` bytes with `chunk`-byte calls, cold,
/// synced, in the group.
fn copy_point(
    options: &ThesisOptions,
    group: &MemoryGroup,
    via: &str,
    size: u64,
    chunk: u64,
    x: f64,
) -> Result<ThesisPoint, String> {
    let source = source(&options.dir, size)?;
    let sink = options.dir.join("thesis-copy");
    let series = format!("{via}, 128 MiB cgroup (ours)");
    point(options, &series, x, size, || {
        let _ = std::fs::remove_file(&sink);
        make_cold(&source)?;
        let mut command = copy_command(&options.flexio, via, chunk, &source, &sink);
        let procs = group.procs()?;
        flexio_sys::process::join_cgroup_before_exec(&mut command, procs);
        let before = group.events();
        let name = format!("flexio copy --via {via} of {} MiB", size / MIB);
        let seconds = timed(&name, &mut command, size)
            .map_err(|why| format!("{name}: {}", group.explain(why, before, MEMORY_LIMIT)));
        let _ = std::fs::remove_file(&sink);
        seconds
    })
}

/// Whether `dir` is on tmpfs (or ramfs): files written there are memory,
/// charged to the group of the process that writes them.
fn on_tmpfs(dir: &Path) -> bool {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const RAMFS_MAGIC: u64 = 0x8584_58f6;
    rustix::fs::statfs(dir).is_ok_and(|fs| {
        let kind = fs.f_type as u64;
        kind == TMPFS_MAGIC || kind == RAMFS_MAGIC
    })
}

fn tmpfs_warning(dir: &Path) -> String {
    format!(
        "--dir {} is on tmpfs: the files the copies write there are memory charged to the \
         128 MiB group, which defeats the low-memory setting (a copy over about 128 MiB is \
         killed for want of memory); give --dir a directory on a disk",
        dir.display()
    )
}

fn copy_command(flexio: &Path, via: &str, chunk: u64, source: &Path, sink: &Path) -> Command {
    let mut command = Command::new(flexio);
    command
        .args(["copy", "--via", via, "--chunk", &chunk.to_string()])
        .args(["--fsync", "--json", "--no-progress"])
        .arg(source)
        .arg(sink);
    command
}
