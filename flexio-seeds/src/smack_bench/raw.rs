//! Table 6: 16 MiB read raw, from a loop block device over a file (root),
//! throttled to `CARD_RATE`: by CPU copies (the original's "normal": one
//! 512-byte `O_DIRECT` request per sector into a bounce buffer, then a
//! copy, timed alone), by one 16 MiB `O_DIRECT` request into an aligned buffer,
//! and by `dd bs=16M count=1 iflag=direct` as a process. The device is
//! detached and its file removed on every way out (drops, in reverse
//! order of making).

use std::process::{Command, Stdio};
use std::time::Instant;

use flexio_sys::loop_device::LoopDevice;
use flexio_sys::rusage::children_rusage;

use super::CARD_RATE;
use super::{another_round, read, Samples, MIB};
use crate::slow_device::Throttle;
use crate::thesis_bench::{ThesisOptions, ThesisOutcome};
use flexio_bench::cache_bench::DataFile;

use crate::error::{Error, Result};

/// Wall seconds at x = 0 (CPU copies), 1 (one `O_DIRECT` request), 2 (dd).
pub const WALL: &str = "ours";
/// Process CPU seconds at the same x.
pub const BUSY: &str = "ours, busy";
/// Wall less CPU at the same x.
pub const BLOCKED: &str = "ours, blocked";
/// The CPU's copying alone, at x = 0 (the other two copy nothing: the
/// device writes the buffer, and dd's `/dev/null` takes no bytes).
pub const COPY: &str = "ours, copy";
const LEN: usize = 16 << 20;

/// Table 6 on a loop device; without root, a shortfall saying so.
///
/// # Examples
/// ```no_run
/// use flexio_seeds::smack_bench::raw_read;
/// use flexio_seeds::thesis_bench::ThesisOptions;
/// let options = ThesisOptions {
///     dir: "/var/tmp".into(),
///     flexio: "flexio".into(),
///     quick: true,
///     most_rounds: 3,
///     stop: Default::default(),
/// };
/// let outcome = raw_read(&options);
/// // Wall, busy and blocked at 0 (CPU copies), 1 (O_DIRECT) and 2 (dd),
/// // and the copy at 0.
/// assert_eq!(outcome.points.len(), 10);
/// ```
pub fn raw_read(options: &ThesisOptions) -> ThesisOutcome {
    raw_read_with(options, "dd")
}

fn raw_read_with(options: &ThesisOptions, dd: &str) -> ThesisOutcome {
    if !rustix::process::geteuid().is_root() {
        return ThesisOutcome {
            shortfall: Some("not root: a loop device (the raw read) needs root".into()),
            ..ThesisOutcome::default()
        };
    }
    let mut samples = Samples::default();
    let mut setting = String::new();
    let shortfall = measure(options, dd, &mut samples, &mut setting)
        .err()
        .map(|why| why.to_string());
    ThesisOutcome {
        points: samples.points(),
        shortfall,
        setting,
    }
}

fn measure(
    options: &ThesisOptions,
    dd: &str,
    samples: &mut Samples,
    setting: &mut String,
) -> Result<()> {
    let name = "flexio-smack-raw";
    let backing = DataFile::new(&options.dir, name, 16 * MIB).map_err(|e| {
        Error::io(
            "write the loop device's backing file",
            options.dir.join(name),
            e,
        )
    })?;
    // Without --direct-io the file's pages stay cached under the device,
    // so the throttle, not the disk beneath (noisy at 512-byte requests),
    // sets the pace.
    let device = LoopDevice::attach(&backing.0, false).map_err(Error::LoopDevice)?;
    let path = device.path();
    // The card was slow; this machine's disk is not. Cleared (dropped)
    // before the device is detached.
    let throttle = Throttle::new(path, CARD_RATE)?;
    *setting = format!(
        "{} over a 16 MiB file on {} (its pages cached), throttled by blkio to {} MiB/s, the \
         throttle's credit spent before each timed read",
        path.display(),
        options.dir.display(),
        CARD_RATE >> 20
    );
    let mut memory = read::memory(LEN, LEN);
    let mut ran = 0;
    while [0.0, 1.0, 2.0]
        .into_iter()
        .any(|x| another_round(options, samples, x, ran))
    {
        ran += 1;
        if options.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::Stopped);
        }
        crate::slow_device::make_cold(path)?;
        throttle.prime(path)?;
        let normal = read::single_sector(path, &mut memory.as_mut_slice()[..LEN])?;
        samples.add(COPY, 0.0, normal.copy_s);
        let copies = normal.timed;
        throttle.prime(path)?;
        let dma = read::direct(path, LEN, LEN, &mut memory)?;
        throttle.prime(path)?;
        let process = run_dd(dd, path)?;
        for (x, timed) in [(0.0, copies), (1.0, dma), (2.0, process)] {
            samples.add(WALL, x, timed.wall_s);
            samples.add(BUSY, x, timed.busy_s);
            samples.add(BLOCKED, x, timed.blocked_s());
        }
    }
    // `device` is detached before `backing` is removed, here and on every
    // `?` above: locals drop in reverse order.
    Ok(())
}

/// `dd if=DEVICE of=/dev/null bs=16M count=1 iflag=direct`, timed as a
/// process: wall from start to exit, busy from its rusage.
fn run_dd(dd: &str, device: &std::path::Path) -> Result<read::Timed> {
    let cpu = children_rusage();
    let start = Instant::now();
    let output = Command::new(dd)
        .arg(format!("if={}", device.display()))
        .args(["of=/dev/null", "bs=16M", "count=1", "iflag=direct"])
        .stdin(Stdio::null())
        .output()
        .map_err(|source| Error::Spawn {
            operation: "start",
            program: dd.to_string(),
            source,
        })?;
    let wall_s = start.elapsed().as_secs_f64();
    let busy_s = children_rusage().since(&cpu).cpu_ns as f64 / 1e9;
    let said = String::from_utf8_lossy(&output.stderr);
    // dd prints "16777216 bytes (17 MB, 16 MiB) copied": a short read is
    // no figure for 16 MiB.
    if !output.status.success() || !said.contains(&format!("{LEN} bytes")) {
        return Err(Error::program(
            format!("{dd} if={}", device.display()),
            format!("failed: {}", said.trim()),
        ));
    }
    Ok(read::Timed { wall_s, busy_s })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The loop devices whose backing file lies under `dir`.
    fn loops_over(dir: &Path) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/sys/block").unwrap().flatten() {
            let backing = entry.path().join("loop/backing_file");
            if let Ok(file) = std::fs::read_to_string(backing)
                && file.starts_with(&*dir.to_string_lossy())
            {
                found.push(format!("{:?}: {}", entry.file_name(), file.trim()));
            }
        }
        found
    }

    /// The loop-device tests one at a time: two attaching and detaching at
    /// once were seen to leave one attached past its detach (the bench
    /// runs one setup at a time).
    static ONE_LOOP_DEVICE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn table_6_reads_raw_and_leaves_no_loop_device() {
        let _one = ONE_LOOP_DEVICE.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let outcome = raw_read(&ThesisOptions::one_round_in(dir.path()));
        if !rustix::process::geteuid().is_root() {
            assert!(outcome.shortfall.unwrap().contains("root"));
            eprintln!("skipped: a loop device needs root");
            return;
        }
        assert_eq!(outcome.shortfall, None);
        assert!(outcome.setting.contains("throttled"), "{}", outcome.setting);
        let copy = outcome
            .points
            .iter()
            .find(|p| p.series == COPY && p.x == 0.0);
        let wall = outcome
            .points
            .iter()
            .find(|p| p.series == WALL && p.x == 0.0);
        assert!(copy.unwrap().y > 0.0 && copy.unwrap().y < wall.unwrap().y);
        for series in [WALL, BUSY, BLOCKED] {
            for x in [0.0, 1.0, 2.0] {
                assert!(
                    outcome
                        .points
                        .iter()
                        .any(|p| p.series == series && p.x == x),
                    "{series} at {x}: {:?}",
                    outcome.points
                );
            }
        }
        assert_eq!(loops_over(dir.path()), Vec::<String>::new());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_failure_after_attaching_still_detaches_the_loop_device() {
        let _one = ONE_LOOP_DEVICE.lock().unwrap_or_else(|e| e.into_inner());
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: a loop device needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let outcome = raw_read_with(&ThesisOptions::one_round_in(dir.path()), "/nonexistent/dd");
        let why = outcome.shortfall.unwrap();
        assert!(why.contains("/nonexistent/dd"), "{why}");
        assert!(outcome.setting.contains("/dev/loop"), "{}", outcome.setting);
        assert_eq!(loops_over(dir.path()), Vec::<String>::new());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
