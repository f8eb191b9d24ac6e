//! The `cache` bench scenario's options as the command line completes
//! them, behind two commands: `flexio bench --scenario cache` (table on
//! stdout, report files in the output directory) and its alias `flexio
//! cache bench` (table or JSON on stdout), which measures with
//! [`measure`]. See [`flexio_bench::cache_bench`].

use flexio_bench::cache_bench::{self, CacheBenchOptions, CacheBenchReport};

use crate::error::{Error, Result};

/// Runs the scenario with `options` (the `flexio` executable filled in for
/// the parts that run it as a server), reporting progress on stderr.
///
/// # Errors
/// Creating the data or reading through the cache fails.
pub(crate) fn measure(options: CacheBenchOptions) -> Result<CacheBenchReport> {
    let options = completed(options);
    cache_bench::run(&options, &mut |line| eprintln!("{line}"))
        .map_err(|source| Error::io("cache bench", &options.dir, source))
}

/// `options` with what only the command line can give filled in where
/// unset: this executable as the server `flexio`, and S.M.A.C.K.'s rows
/// from `flexio-seeds`.
pub(crate) fn completed(mut options: CacheBenchOptions) -> CacheBenchOptions {
    if options.flexio_exe.is_none() {
        options.flexio_exe = std::env::current_exe().ok();
    }
    if options.smack_rows.is_none() {
        options.smack_rows = Some(flexio_seeds::smack_cache::rows);
    }
    options
}
