//! `flexio bench --scenario server`: `flexio serve` against nginx under
//! wrk (see [`flexio_bench::server_bench`]); a table on stdout and
//! `server.json`, `server.md` and the charts in the output directory.

use std::path::Path;

use flexio_bench::server_bench::{ServerBench, ServerBenchOptions};

use crate::error::{Error, Result};

/// What the command line asked of the scenario.
pub struct ServerArgs<'a> {
    /// Where the scratch directory goes.
    pub dir: &'a Path,
    /// Where the outputs go.
    pub out: &'a Path,
    /// Counted rounds.
    pub runs: u32,
    /// `--quick` given: a run of a few seconds.
    pub quick: bool,
    /// `--clients`, when given.
    pub clients: &'a [u32],
    /// `--sizes`, when given.
    pub sizes: &'a [u64],
    /// `--large`, when given: the load and fairness file.
    pub large: Option<u64>,
    /// `--with-tls`: the TLS phase in a quick run too.
    pub with_tls: bool,
}

/// Runs the scenario into `out`.
pub fn run(args: &ServerArgs<'_>) -> Result<()> {
    // Absolute: nginx takes a relative path in its configuration as
    // relative to its prefix, not to the bench's directory.
    let work = args
        .dir
        .join(format!(".flexio-server-bench-{}", std::process::id()));
    let work = std::path::absolute(&work).map_err(|e| Error::io("absolute", &work, e))?;
    let flexio =
        std::env::current_exe().map_err(|e| Error::io("current_exe", Path::new("flexio"), e))?;
    let mut options = if args.quick {
        ServerBenchOptions::quick(work.clone(), flexio)
    } else {
        ServerBenchOptions::issue(work.clone(), flexio, args.runs as usize)
    };
    if !args.clients.is_empty() {
        options.clients = args.clients.to_vec();
    }
    if !args.sizes.is_empty() {
        options.sizes = args.sizes.to_vec();
    }
    if let Some(large) = args.large {
        options.large_size = large;
    }
    options.tls |= args.with_tls;
    eprintln!(
        "flexio bench --scenario server: clients {:?}, sizes {:?}, {} round(s) of {} s runs{}, about {} s",
        options.clients,
        options.sizes,
        options.rounds,
        options.seconds,
        if options.tls { ", then over TLS" } else { "" },
        options.estimate_seconds()
    );
    super::scenario::run::<ServerBench>("server", &options, &work, args.out)
}
