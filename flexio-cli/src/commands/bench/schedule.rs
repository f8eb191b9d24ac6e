//! `flexio bench --scenario schedule`: Cue's (k, t) grid beside the meter
//! (see [`flexio_bench::schedule_bench`]); a table on stdout and
//! `schedule.json`, `schedule.md` and the charts in the output directory.

use std::ffi::OsString;
use std::path::Path;

use flexio_bench::schedule_bench::{ScheduleBench, ScheduleBenchOptions};

use crate::error::{Error, Result};

/// Runs the grid (`quick`: a few seconds) with `runs` counted rounds; the
/// first of `sizes`, when given, is the transfer's size.
pub fn run(dir: &Path, out: &Path, runs: u32, quick: bool, sizes: &[u64]) -> Result<()> {
    let exe =
        std::env::current_exe().map_err(|e| Error::io("current_exe", Path::new("flexio"), e))?;
    let meter = vec![
        exe.into_os_string(),
        OsString::from("bench"),
        OsString::from("--meter-child"),
    ];
    let work = dir.join(format!(".flexio-schedule-bench-{}", std::process::id()));
    let mut options = if quick {
        ScheduleBenchOptions::quick(work.clone(), meter)
    } else {
        ScheduleBenchOptions::grid(work.clone(), meter, runs as usize)
    };
    if let Some(&size) = sizes.first() {
        options.size = size;
    }
    eprintln!(
        "flexio bench --scenario schedule: {} schedules × {} mechanisms, {} round(s) after a warm-up",
        options.schedules().len(),
        options.mechanisms.len(),
        options.rounds
    );
    super::scenario::run::<ScheduleBench>("schedule", &options, &work, out)
}
