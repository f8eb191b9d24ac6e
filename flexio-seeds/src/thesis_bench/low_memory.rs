//! The original's 128 MB machine with its slow disk: every copy runs in a
//! memory cgroup of [`MEMORY_LIMIT`] (page cache included), cold and
//! synced (`--fsync`) to ext4 on a throttled device ([`SlowDevice`] at
//! [`SLOW_RATE`]), as the thesis's disk -> disk runs. Files up to 200
//! MiB, so that, as there, the cache fills. Root only; without root
//! nothing runs and the outcome says why. A copy the OOM killer ends in
//! the group is said to have run out of memory there. The files are on
//! the device, never in `--dir`: a tmpfs `--dir` cannot charge them to
//! the group.

use std::path::Path;
use std::process::Command;

use super::process::{source, timed};
use super::{point, ThesisOptions, ThesisOutcome, ThesisPoint};
use crate::error::{Error, Result};
use crate::slow_device::make_cold;
use crate::slow_device::{SlowDevice, SLOW_RATE};
use flexio_bench::memory_group::MemoryGroup;

/// The cgroup's limit: the original machine's 128 MB.
pub const MEMORY_LIMIT: u64 = 128 << 20;

const MIB: u64 = 1 << 20;

/// The mechanisms of Figures 4.7-4.14: a user buffer, mmap, the kernel
/// buffer (splice through a 1 MiB pipe: FlexIO's FILE_KERNEL_READ_WRITE
/// read 1 MB at a time into a kernel buffer and wrote it out) and the
/// kernel's copy (FlexIO at the buffer-cache level).
const BY_SIZE: [&str; 4] = ["read-write", "mmap", "splice", "copy-file-range"];

/// The buffer sweep of Figure 4.15: a user buffer, and the kernel's copy
/// asked for the same length per call.
const BY_BUFFER: [&str; 2] = ["read-write", "copy-file-range"];

/// Disk -> disk by file size in the cgroup, 1 MiB buffers: one series per
/// mechanism, `MECHANISM, 128 MiB cgroup`.
pub fn by_size(options: &ThesisOptions) -> ThesisOutcome {
    in_group("thesis-by-size", |group, dir, points| {
        for &mb in size_sweep(options) {
            for via in BY_SIZE {
                let x = mb as f64;
                points.push(copy_point(options, dir, group, via, mb * MIB, MIB, x)?);
            }
        }
        Ok(())
    })
}

/// The smaller user buffers of Figures 4.11-4.14, in KiB (the 1 MiB one
/// is [`by_size`]'s): the thesis ran its user process "with different
/// user buffer sizes starting from 1KB till 1MB".
pub const SMALL_BUFFERS_KIB: [u64; 2] = [1, 64];

/// Disk -> disk by file size in the cgroup by read-write with each of
/// [`SMALL_BUFFERS_KIB`]: `read-write, N KiB buffer, 128 MiB cgroup`.
pub fn by_size_small_buffers(options: &ThesisOptions) -> ThesisOutcome {
    in_group("thesis-by-size-buffers", |group, dir, points| {
        for &mb in size_sweep(options) {
            for kib in SMALL_BUFFERS_KIB {
                let mut point = copy_point(
                    options,
                    dir,
                    group,
                    "read-write",
                    mb * MIB,
                    kib << 10,
                    mb as f64,
                )?;
                point.series = format!("read-write, {kib} KiB buffer, 128 MiB cgroup (ours)");
                points.push(point);
            }
        }
        Ok(())
    })
}

/// The file sizes of the by-size sweeps, in MiB.
fn size_sweep(options: &ThesisOptions) -> &'static [u64] {
    if options.quick {
        &[1, 50, 200]
    } else {
        &[1, 10, 50, 100, 200]
    }
}

/// Disk -> disk of one file (64 MiB quick, 100 MiB full) by buffer size
/// from 1 KiB to 1 MiB in the cgroup: `MECHANISM, 128 MiB cgroup`.
pub fn by_buffer(options: &ThesisOptions) -> ThesisOutcome {
    let size = if options.quick { 64 * MIB } else { 100 * MIB };
    in_group("thesis-by-buffer", |group, dir, points| {
        for kib in [1u64, 4, 16, 64, 256, 1024] {
            for via in BY_BUFFER {
                points.push(copy_point(
                    options,
                    dir,
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

/// Makes the slow device and the group, runs `sweep` in the group with
/// its files on the device, unmakes both (on every way out: they are
/// dropped here). A sweep that fails keeps what it measured and says why.
fn in_group(
    name: &str,
    sweep: impl FnOnce(&MemoryGroup, &SlowDevice, &mut Vec<ThesisPoint>) -> Result<()>,
) -> ThesisOutcome {
    // Room for a 200 MiB source, its copy and the smaller sources.
    let device = match SlowDevice::new(name, 768 << 20, SLOW_RATE) {
        Ok(device) => device,
        Err(why) => {
            return ThesisOutcome {
                shortfall: Some(format!("no throttled device ({why})")),
                ..ThesisOutcome::default()
            }
        }
    };
    let group = match MemoryGroup::new(name, MEMORY_LIMIT) {
        Ok(group) => group,
        Err(why) => {
            return ThesisOutcome {
                shortfall: Some(format!("no 128 MiB memory cgroup ({why})")),
                ..ThesisOutcome::default()
            }
        }
    };
    let setting = format!(
        "each copy in memory cgroup {} limited to 128 MiB (page cache included), cold, --fsync, \
         the throttle's credit spent before each round, a round of a copy under a second's \
         worth at the rate the mean of that many copies back to back (1 MiB: {}), its files \
         on {}",
        group.path().display(),
        device.passes(MIB),
        device.describe()
    );
    let mut points = Vec::new();
    let failed = sweep(&group, &device, &mut points)
        .err()
        .map(|why| why.to_string());
    drop(group);
    drop(device);
    ThesisOutcome {
        points,
        shortfall: failed,
        setting,
    }
}

/// One point: `via` copying `size` bytes with `chunk`-byte calls, cold,
/// synced, in the group.
fn copy_point(
    options: &ThesisOptions,
    device: &SlowDevice,
    group: &MemoryGroup,
    via: &str,
    size: u64,
    chunk: u64,
    x: f64,
) -> Result<ThesisPoint> {
    let dir = device.mount();
    let source = source(dir, size)?;
    let sink = dir.join("thesis-copy");
    let series = format!("{via}, 128 MiB cgroup (ours)");
    point(options, &series, x, size, || {
        let mean = device.averaged(size, || {
            let _ = std::fs::remove_file(&sink);
            make_cold(&source)?;
            let mut command = copy_command(&options.flexio, via, chunk, &source, &sink);
            let procs = group.procs()?;
            flexio_sys::process::join_cgroup_before_exec(&mut command, procs);
            let before = group.events();
            let name = format!("flexio copy --via {via} of {} MiB", size / MIB);
            let seconds = timed(&name, &mut command, size).map_err(|why| {
                let why = group.explain(why.to_string(), before, MEMORY_LIMIT);
                Error::program(&name, why)
            })?;
            Ok([seconds])
        });
        let _ = std::fs::remove_file(&sink);
        mean.map(|[seconds]| seconds)
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_runs_on_the_throttled_device_and_leaves_nothing_behind() {
        let name = "the_sweep_runs_on_the_throttled_device_and_leaves_nothing_behind";
        let root = rustix::process::geteuid().is_root();
        if !root && std::env::var("FLEXIO_TEST_PRIVILEGED").as_deref() != Ok("1") {
            let outcome = in_group("thesis-test-device", |_, _, _| Ok(()));
            let why = outcome.shortfall.unwrap_or_default();
            assert!(why.contains("needs root for the throttled device"), "{why}");
            println!("skipped: {name}: needs root for the throttled device");
            return;
        }
        let mut seen = None;
        let outcome = in_group("thesis-test-device", |_, device, _| {
            const EXT4_MAGIC: u64 = 0xef53;
            let dir = device.mount();
            let fs = rustix::fs::statfs(dir).map_err(|e| Error::io("statfs", dir, e.into()))?;
            seen = Some((dir.to_path_buf(), fs.f_type as u64 == EXT4_MAGIC));
            Ok(())
        });
        assert_eq!(outcome.shortfall, None);
        let (dir, ext4) = seen.expect("the sweep ran");
        assert!(ext4, "{} is not the device's ext4", dir.display());
        assert!(
            outcome.setting.contains("throttled by blkio")
                && outcome.setting.contains("dd O_DIRECT measured"),
            "{}",
            outcome.setting
        );
        assert!(!dir.exists(), "{} left mounted", dir.display());
    }
}
