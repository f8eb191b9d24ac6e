//! `flexio bench --scenario cache`: the table on stdout, `cache.json` and
//! `cache.md` in the output directory (`flexio cache bench` runs the same
//! measurement with the options of [`crate::cache_bench::completed`]).

use std::path::Path;
use std::time::Duration;

use flexio_bench::cache_bench::{CacheBench, CacheBenchOptions};

use crate::cache_bench::completed;
use crate::error::Result;

/// `flexio bench --scenario cache`: `sizes` (bytes, rounded up to MiB)
/// replace the table's file sizes when given; the hot-set reads and the
/// serve comparison's windows scale with `cache_bytes` (50 000 reads per
/// reader and 2 s at the default 16 MiB).
///
/// # Errors
/// Creating the data or reading through the cache fails, or writing the
/// report files.
pub(crate) fn run(
    dir: &Path,
    out: &Path,
    runs: u32,
    sizes: &[u64],
    cache_bytes: u64,
) -> Result<()> {
    let defaults = CacheBenchOptions::default();
    let scale = cache_bytes as f64 / defaults.cache_bytes as f64;
    let hot_reads = ((defaults.hot_reads as f64 * scale) as usize).max(300);
    let serve_window = defaults
        .serve_window
        .mul_f64(scale)
        .max(Duration::from_millis(250));
    let mut options = CacheBenchOptions {
        dir: dir.join(format!(".flexio-cache-bench-{}", std::process::id())),
        runs,
        cache_bytes,
        hot_reads,
        serve_window,
        ..defaults
    };
    if !sizes.is_empty() {
        options.file_sizes_mib = sizes.iter().map(|s| s.div_ceil(1 << 20)).collect();
    }
    let options = completed(options);
    super::scenario::run::<CacheBench>("cache", &options, &options.dir, out)
}
