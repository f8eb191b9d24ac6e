//! `flexio bench --scenario hosts`: shards, mirrors and a chain across N
//! network namespaces (see [`flexio_bench::hosts_bench`]). A table on
//! stdout, `hosts.json`, `hosts.md` and `hosts.svg` in the output
//! directory. SIGINT/SIGTERM stop it after the current group; the
//! namespaces, servers and data are removed either way.

use std::path::Path;

use flexio_bench::hosts_bench::{HostsBench, HostsOptions};

use crate::error::{Error, Result};

/// How the scenario is run (from `flexio bench`'s arguments).
pub struct HostsArgs<'a> {
    /// Where the data and copies go (a new directory inside is removed).
    pub dir: &'a Path,
    /// Where the outputs go.
    pub out: &'a Path,
    /// Timed rounds per contender.
    pub runs: u32,
    /// The quick size: N = 2 and 4, 4 MiB at 8 MiB/s, 2 rounds.
    pub quick: bool,
    /// Bytes per transfer (the first of --sizes), instead of the size's own.
    pub bytes: Option<u64>,
    /// Host counts, instead of the size's own.
    pub counts: &'a [u32],
    /// Every link's rate, instead of the size's own.
    pub rate: Option<u64>,
}

/// Runs the scenario into `args.out`.
///
/// # Errors
/// Not root, the namespaces or servers cannot be made, a signal stopped
/// it, or the outputs cannot be written.
pub fn run(args: &HostsArgs<'_>) -> Result<()> {
    let stop = crate::signals::stop_on_signals();
    let (counts, bytes, rate, runs) = if args.quick {
        (vec![2, 4], 4 << 20, 8 << 20, args.runs.min(2))
    } else {
        (vec![2, 4, 8], 1 << 30, 64 << 20, args.runs)
    };
    let counts = if args.counts.is_empty() {
        counts
    } else {
        args.counts.iter().map(|&n| n as usize).collect()
    };
    let work = args
        .dir
        .join(format!(".flexio-hosts-bench-{}", std::process::id()));
    let work = std::path::absolute(&work).map_err(|e| Error::io("absolute", &work, e))?;
    let options = HostsOptions {
        dir: work.clone(),
        flexio: std::env::current_exe()
            .map_err(|e| Error::io("current_exe", Path::new("flexio"), e))?,
        counts,
        bytes: args.bytes.unwrap_or(bytes),
        rate: args.rate.unwrap_or(rate),
        runs: runs as usize,
        stop,
    };
    super::scenario::run::<HostsBench>("hosts", &options, &work, args.out)
}
