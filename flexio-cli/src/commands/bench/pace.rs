//! `flexio bench --scenario pace`: `flexio copy --rate` over loopback at
//! each rate (see [`flexio_bench::pace_bench`]); a table on stdout and
//! `pace.json`, `pace.md` and `pace.svg` in the output directory.

use std::path::Path;
use std::time::Duration;

use flexio::pace::Rate;
use flexio_bench::pace_bench::{PaceBench, PaceBenchOptions};

use crate::error::{Error, Result};

/// Runs the scenario into `out`.
pub fn run(dir: &Path, out: &Path, rates: &[Rate], seconds: f64) -> Result<()> {
    let work = dir.join(format!(".flexio-pace-bench-{}", std::process::id()));
    let options = PaceBenchOptions {
        dir: work.clone(),
        flexio: std::env::current_exe()
            .map_err(|e| Error::io("current_exe", Path::new("flexio"), e))?,
        rates: rates.iter().map(|rate| rate.bytes_per_second()).collect(),
        duration: Duration::from_secs_f64(seconds),
    };
    super::scenario::run::<PaceBench>("pace", &options, &work, out)
}
