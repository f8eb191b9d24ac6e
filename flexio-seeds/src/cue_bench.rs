//! Cue's comparison as Cue made it: two disk-bound transfers of similar
//! speed. The cells (Cue's schedules and the user-driven loop, cold) run
//! through the matrix's runner with their files on ext4 on a loop device
//! throttled to [`DISK_RATE`] ([`SlowDevice`]), so that the user-driven
//! loop waits on the disk as the DECstation's did, and every schedule,
//! whose own pace is above that rate, waits on it too. Each run starts
//! cold: the runner drops the file's pages (`fsync`, `posix_fadvise`
//! `DONTNEED`, `drop_caches` as root) before it. Root only; without root
//! nothing runs and the outcome says why.
//!
//! Table 8's clients behind a shared bottleneck are in `shared.rs`.

mod shared;

pub use shared::{shared_link, Server, SHARED_RATE};

use flexio_bench::plan::Cell;
use flexio_bench::stats::Summary;

use crate::slow_device::{SlowDevice, SLOW_RATE};
use crate::thesis_bench::{run_cells, ThesisOptions, ThesisOutcome};

/// The rate the disk-bound pair shares: 256 KiB/s, about the
/// DECstation's user-driven 0.22 MB/s (4.53 s per MB) and below the pace
/// of every schedule Cue ran (the slowest, 3 blocks of 8 KB per 70 ms,
/// allows 343 KiB/s), so that both the loop and the schedule wait on the
/// disk.
pub const DISK_RATE: u64 = 256 << 10;

/// Timed rounds per cell, the median kept (no warm-up: every round is
/// cold alike), within `--runs`.
const ROUNDS: usize = 3;

/// Runs `cells` (cold cells of Cue's exhibits) with their files on a
/// device throttled to [`DISK_RATE`]: the summaries, and the outcome's
/// setting (the device as `dd` measured it) or why it fell short.
pub fn disk_bound(options: &ThesisOptions, cells: Vec<Cell>) -> (ThesisOutcome, Vec<Summary>) {
    let short = |why: String| {
        let outcome = ThesisOutcome {
            shortfall: Some(why),
            ..ThesisOutcome::default()
        };
        (outcome, Vec::new())
    };
    // Formatted and filled at the faster rate, then slowed for the runs.
    let mut device = match SlowDevice::new("cue", 64 << 20, SLOW_RATE) {
        Ok(device) => device,
        Err(why) => return short(format!("no throttled device ({why})")),
    };
    if let Err(why) = device.set_rate(DISK_RATE) {
        return short(format!("no throttled device ({why})"));
    }
    let rounds = options.rounds_of(ROUNDS);
    let setting = format!(
        "Cue's disk-bound pair: the files on {}; each run cold (the file's pages dropped by \
         fsync, posix_fadvise DONTNEED and drop_caches), {rounds} rounds a cell",
        device.describe()
    );
    let meter = vec![
        options.flexio.clone().into_os_string(),
        "bench".into(),
        "--meter-child".into(),
    ];
    let command_line = "flexio bench (Cue's disk-bound cells)".to_string();
    let (shortfall, summaries) =
        run_cells(options, &device, cells, rounds, command_line, Some(meter));
    drop(device);
    let outcome = ThesisOutcome {
        shortfall,
        setting,
        ..ThesisOutcome::default()
    };
    (outcome, summaries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexio::profile::FlowKind;
    use flexio::MechanismName::ReadWrite;
    use flexio_bench::model::{CacheState::Cold, Scenario};
    use flexio_bench::plan::Entrant;

    #[test]
    fn a_cold_read_write_loop_on_the_device_runs_at_the_disk_rate() {
        let root = rustix::process::geteuid().is_root();
        let name = "a_cold_read_write_loop_on_the_device_runs_at_the_disk_rate";
        let cell = Cell::new(
            Scenario::Flow(FlowKind::FileToFile),
            1 << 20,
            Cold,
            vec![Entrant::flexio(ReadWrite, 8 << 10)],
        );
        let (outcome, summaries) = disk_bound(
            &ThesisOptions::one_round_in(&std::env::temp_dir()),
            vec![cell],
        );
        if !root && std::env::var("FLEXIO_TEST_PRIVILEGED").as_deref() != Ok("1") {
            let why = outcome.shortfall.unwrap_or_default();
            assert!(why.contains("needs root for the throttled device"), "{why}");
            println!("skipped: {name}: needs root for the throttled device");
            return;
        }
        assert_eq!(outcome.shortfall, None, "{}", outcome.setting);
        let row = &summaries[0];
        // `--runs 1` holds the setup to one round of its three.
        assert_eq!(row.runs, 1);
        // Cold each round, so held to the disk's 256 KiB/s (a slice of
        // the throttle's credit allowed); warm it would run at GB/s.
        assert!(
            row.median_bps < 1.5 * DISK_RATE as f64,
            "{} B/s",
            row.median_bps
        );
        assert!(
            row.median_bps > 0.5 * DISK_RATE as f64,
            "{} B/s",
            row.median_bps
        );
        assert!(
            outcome.setting.contains("256 KiB/s each way"),
            "{}",
            outcome.setting
        );
    }
}
