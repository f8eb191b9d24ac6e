//! The thesis's disk -> disk cells with memory to spare, run where the
//! disk and not this machine's memory sets the pace: the matrix's cold,
//! synced cells through its runner, their files on a file system of the
//! caller's choosing (ext4, or ext2 as the thesis's) on a loop device
//! throttled to [`SLOW_RATE`], the rate the 128 MiB cgroup's copies run
//! at, so that the two settings differ in memory only. Root only; without
//! root nothing runs and the outcome says why.

use flexio_bench::model::Contender;
use flexio_bench::plan::{Cell, Plan};
use flexio_bench::runner::{self, storage_passes, BeforeRun, Observer, RunOptions};
use flexio_bench::stats::{self, Summary};

use super::{ThesisOptions, ThesisOutcome};
use crate::slow_device::{FileSystem, SlowDevice, SLOW_RATE};

/// Timed rounds per cell, the median kept (every round cold alike, so
/// no warm-up), within `--runs`.
const ROUNDS: usize = 3;

/// Room for a 200 MiB source, its copy and the smaller sources the
/// runner keeps.
const DEVICE_SIZE: u64 = 1 << 30;

/// Runs `cells` (cold, synced disk -> disk) with their files on `fs` on
/// a device throttled to [`SLOW_RATE`]: the summaries, and the outcome's
/// setting (the device as `dd` measured it) or why it fell short (no
/// device, or each cell and entrant without a result).
pub fn disk_bound(
    options: &ThesisOptions,
    name: &str,
    fs: FileSystem,
    cells: Vec<Cell>,
) -> (ThesisOutcome, Vec<Summary>) {
    let short = |why: String| {
        let outcome = ThesisOutcome {
            shortfall: Some(why),
            ..ThesisOutcome::default()
        };
        (outcome, Vec::new())
    };
    let device = match SlowDevice::with_file_system(name, DEVICE_SIZE, SLOW_RATE, fs) {
        Ok(device) => device,
        Err(why) => return short(format!("no throttled {} device ({why})", fs.name())),
    };
    let rounds = options.rounds_of(ROUNDS);
    let setting = format!(
        "the disk -> disk cells with memory to spare on {}; each run cold (the file's pages \
         dropped by fsync, posix_fadvise DONTNEED and drop_caches) and --fsync'ed, {rounds} \
         rounds a cell, the throttle's credit spent (by reading) just before each; a run of a \
         file under a second's worth at the rate copies that many cold files of its size back \
         to back (1 MiB: {}, 16 MiB: {}), as the throttle holds a shorter copy to its rate \
         only to within a tenth of a second",
        device.describe(),
        storage_passes(SLOW_RATE, 1 << 20),
        storage_passes(SLOW_RATE, 16 << 20),
    );
    let command_line = format!("flexio bench (FlexIO's disk-bound cells on {})", fs.name());
    let (shortfall, summaries) = run_cells(options, &device, cells, rounds, command_line, None);
    drop(device);
    let outcome = ThesisOutcome {
        shortfall,
        setting,
        ..ThesisOutcome::default()
    };
    (outcome, summaries)
}

/// Runs `cells` through the matrix's runner with their files on
/// `device`, `rounds` cold rounds each and no warm-up (every round is
/// cold alike), with `meter` as the meter's child command where a cell
/// has one: why the runs fell short (each cell and entrant without a
/// result, each contender that ran as another mechanism), if they did,
/// and the summaries.
pub(crate) fn run_cells(
    options: &ThesisOptions,
    device: &SlowDevice,
    cells: Vec<Cell>,
    rounds: usize,
    command_line: String,
    meter: Option<Vec<std::ffi::OsString>>,
) -> (Option<String>, Vec<Summary>) {
    let plan = Plan { cells };
    let mut run_options = RunOptions::new(device.mount());
    run_options.warmups = 0;
    run_options.rounds = rounds as u32;
    run_options.flexio_exe = Some(options.flexio.clone());
    run_options.meter_command = meter;
    run_options.command_line = command_line;
    // After the runner made the source cold: each round starts with the
    // throttle's credit spent (a 16 MiB copy's rounds otherwise split
    // between 0.25 and 0.43 s by whether a round began with it).
    let prime = device.priming();
    run_options.before_each_run = Some(BeforeRun::new(move || {
        prime().map_err(|e| std::io::Error::other(e.to_string()))
    }));
    run_options.storage_rate = Some(device.rate());
    run_options.settle_spread = Some(super::SPREAD_LIMIT);
    let mut observer = Stop(options);
    let results = match runner::run(&plan, &run_options, &mut observer) {
        Ok(results) => results,
        Err(e) => {
            let why = format!("the disk-bound cells in {}: {e}", device.mount().display());
            return (Some(why), Vec::new());
        }
    };
    let summaries = stats::summarize(&results);
    let mut missing = stats::without_results(&plan.cells, &summaries);
    missing.extend(summaries.iter().filter_map(fell_back));
    if !missing.is_empty() && !results.notes.is_empty() {
        missing.push(format!("the runner's notes: {}", results.notes.join("; ")));
    }
    ((!missing.is_empty()).then(|| missing.join("; ")), summaries)
}

/// A flexio contender whose runs used another mechanism than its own
/// (splice falling back to read-write, say), in words: its points would
/// be drawn under a mechanism that did not run.
fn fell_back(summary: &Summary) -> Option<String> {
    let Contender::Flexio { mechanism, .. } = &summary.contender else {
        return None;
    };
    let used = summary.mechanism_used.as_deref()?;
    (used != mechanism.as_str()).then(|| {
        format!(
            "{}: {} ran as {used}",
            flexio_bench::plan::label(&summary.cell),
            mechanism.as_str()
        )
    })
}

/// Stops the runner between runs once a signal set `options.stop`.
struct Stop<'a>(&'a ThesisOptions);

impl Observer for Stop<'_> {
    fn should_stop(&mut self) -> bool {
        self.0.stop.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexio::MechanismName::{ReadWrite, Splice};
    use flexio_bench::model::{CacheState::Cold, Scenario};
    use flexio_bench::plan::Entrant;

    #[test]
    fn cold_synced_copies_on_ext2_run_at_the_disk_rate_and_leave_no_device() {
        let name = "cold_synced_copies_on_ext2_run_at_the_disk_rate_and_leave_no_device";
        let size = 16u64 << 20;
        let cell = Cell::new(
            Scenario::Flow(flexio::profile::FlowKind::FileToFileDurable),
            size,
            Cold,
            vec![
                Entrant::flexio(ReadWrite, 1 << 20),
                Entrant::flexio(Splice, 1 << 20),
            ],
        );
        let (outcome, summaries) = disk_bound(
            &ThesisOptions::one_round_in(&std::env::temp_dir()),
            "thesis-test",
            FileSystem::Ext2,
            vec![cell],
        );
        let root = rustix::process::geteuid().is_root();
        if !root && std::env::var("FLEXIO_TEST_PRIVILEGED").as_deref() != Ok("1") {
            let why = outcome.shortfall.unwrap_or_default();
            assert!(why.contains("needs root for the throttled device"), "{why}");
            println!("skipped: {name}: needs root for the throttled device");
            return;
        }
        assert_eq!(outcome.shortfall, None, "{}", outcome.setting);
        assert!(
            outcome.setting.contains("ext2 on /dev/loop"),
            "{}",
            outcome.setting
        );
        assert_eq!(summaries.len(), 2);
        for row in &summaries {
            // `--runs 1` holds the setup to one round of its three.
            assert_eq!(row.runs, 1);
            // Read and written through a 64 MiB/s throttle each way: at
            // most about that (a slice of credit allowed); unthrottled the
            // tmpfs under it moves GB/s.
            assert!(
                row.median_bps < 1.5 * SLOW_RATE as f64,
                "{} B/s",
                row.median_bps
            );
        }
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        let stem = format!("flexio-slow-{}-thesis-test", std::process::id());
        assert!(!mounts.contains(&stem), "{mounts}");
    }
}
