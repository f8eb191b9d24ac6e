//! S.M.A.C.K.'s table: files read sequentially in 4 KiB reads, cold with
//! single-block reads (one 4 KiB request at a time), cold with multi-block
//! reads (coalesced, read ahead, several requests in flight), then warm —
//! a second pass through the same cache, which thrashes once the file
//! outgrows it. The same on a loop block device as a raw source (root).
//! The `cache` scenario of flexio-bench runs these rows through
//! [`CacheBenchOptions::smack_rows`], which the CLI fills with [`rows`].

use std::io;
use std::path::Path;

use flexio_cache::{BlockCache, CacheConfig, ReadMode};

use flexio_bench::cache_bench::{
    cache_error, sequential_pass, CacheBenchOptions, DataFile, FileRow, Spread, MIB,
};
use flexio_sys::loop_device::LoopDevice;

use crate::error::{Error, Result};

/// S.M.A.C.K.'s table for the `cache` scenario: the rows of a file on
/// `options.dir` for every file size, then those of a loop block device,
/// with why the device's rows are missing when they are (a skip, in
/// words); `runs` counted rounds each, `progress` hears a line per step.
///
/// # Errors
/// Creating the data files or reading the files through the cache fails
/// (the loop device's failures are the note, not an error).
///
/// # Examples
/// ```no_run
/// use flexio_bench::cache_bench::CacheBenchOptions;
/// let options = CacheBenchOptions { file_sizes_mib: vec![1], ..Default::default() };
/// let (rows, note) = flexio_seeds::smack_cache::rows(&options, 1, &mut |_| {}).unwrap();
/// assert!(!rows.is_empty() || note.is_some());
/// ```
pub fn rows(
    options: &CacheBenchOptions,
    runs: u32,
    progress: &mut dyn FnMut(&str),
) -> io::Result<(Vec<FileRow>, Option<String>)> {
    let mut files = file_rows(options, runs, progress)?;
    let mut note = None;
    match loop_device_rows(options, runs, progress) {
        Ok(rows) => files.extend(rows),
        Err(why) => {
            progress(&format!("cache: no loop device rows: {why}"));
            note = Some(why.to_string());
        }
    }
    Ok((files, note))
}

/// The rows for every file size, read from a file on `options.dir`.
fn file_rows(
    options: &CacheBenchOptions,
    runs: u32,
    progress: &mut dyn FnMut(&str),
) -> io::Result<Vec<FileRow>> {
    let mut rows = Vec::new();
    for &mib in &options.file_sizes_mib {
        progress(&format!(
            "cache: {mib} MiB file, cold single vs multi-block, warm"
        ));
        let data = DataFile::new(
            &options.dir,
            &format!("flexio-cache-bench-{mib}M"),
            mib * MIB,
        )?;
        rows.push(row(&data.0, "file", mib, options.cache_bytes, runs)?);
    }
    Ok(rows)
}

/// The rows for every file size, read from the start of a loop block
/// device over a file as large as the largest; `Err` says why there are
/// none (a skip, in words).
fn loop_device_rows(
    options: &CacheBenchOptions,
    runs: u32,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<FileRow>> {
    let largest = options.file_sizes_mib.iter().copied().max().unwrap_or(0);
    if largest == 0 {
        return Ok(Vec::new());
    }
    let name = "flexio-cache-bench-loop-backing";
    let backing = DataFile::new(&options.dir, name, largest * MIB).map_err(|e| {
        Error::io(
            "write the loop device's backing file",
            options.dir.join(name),
            e,
        )
    })?;
    if !rustix::process::geteuid().is_root() {
        return Err(Error::Unavailable(
            "skipped: attaching a loop device needs root".into(),
        ));
    }
    let device = LoopDevice::attach(&backing.0, true)
        .map_err(|why| Error::Unavailable(format!("skipped: {why}")))?;
    let source = format!("loop {}", device.path().display());
    let mut rows = Vec::new();
    for &mib in &options.file_sizes_mib {
        progress(&format!(
            "cache: first {mib} MiB of {}, cold single vs multi-block, warm",
            device.path().display()
        ));
        let row = row(device.path(), &source, mib, options.cache_bytes, runs)
            .map_err(|e| Error::io("read", device.path(), e))?;
        rows.push(row);
    }
    // `device` is detached here, before its backing file is removed; on
    // an error above too.
    drop(device);
    Ok(rows)
}

/// One row: the first `mib` MiB of `path`, cold single, cold multi and
/// warm, interleaved over one warm-up round and `runs` counted ones.
fn row(path: &Path, source: &str, mib: u64, cache_bytes: u64, runs: u32) -> io::Result<FileRow> {
    let config = |mode| {
        CacheConfig::new(cache_bytes)
            .read_mode(mode)
            .flush_interval(None)
    };
    let single = ReadMode::SingleBlock;
    let multi = ReadMode::MultiBlock { max_blocks: 64 };
    let len = mib * MIB;
    let (mut cold_single, mut cold_multi, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    let mut warm_from_cache = 0.0;
    for round in 0..=runs {
        let cache = BlockCache::open(path, config(single)).map_err(cache_error)?;
        let single_rate = sequential_pass(&cache, len)?;
        drop(cache);
        let cache = BlockCache::open(path, config(multi)).map_err(cache_error)?;
        let multi_rate = sequential_pass(&cache, len)?;
        let before = cache.stats();
        let warm_rate = sequential_pass(&cache, len)?;
        let after = cache.stats();
        if round > 0 {
            cold_single.push(single_rate);
            cold_multi.push(multi_rate);
            warm.push(warm_rate);
            let read = (after.device_bytes_read - before.device_bytes_read) as f64;
            warm_from_cache = 100.0 * (1.0 - read / len as f64).max(0.0);
        }
    }
    let (cold_single, cold_multi) = (Spread::of(&cold_single), Spread::of(&cold_multi));
    Ok(FileRow {
        source: source.to_string(),
        file_mib: mib,
        multi_over_single: cold_multi.median / cold_single.median,
        cold_single_block_mib_s: cold_single,
        cold_multi_block_mib_s: cold_multi,
        warm_mib_s: Spread::of(&warm),
        warm_from_cache_percent: warm_from_cache,
    })
}
