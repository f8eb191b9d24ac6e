//! The `cache` scenario: S.M.A.C.K.'s buffer-cache tables on today's
//! machine, through `flexio-cache`'s [`BlockCache`] over `O_DIRECT`.
//!
//! 1. Files of 1, 8, 16 and 24 MiB read sequentially in 4 KiB reads: cold
//!    with single-block reads (one 4 KiB request at a time, S.M.A.C.K.'s
//!    "single block"), cold with multi-block reads (coalesced, read ahead,
//!    several requests in flight), then warm — a second pass through the
//!    same 16 MiB cache, which thrashes once the file outgrows it.
//! 2. Hits: 4 KiB hits copied out against `memcpy` of 4 KiB from the same
//!    offsets of an equal buffer, on one thread; and lookups per second
//!    per thread when a hit returns a reference ([`BlockCache::block`]).
//! 3. Hot set and scan, per policy: readers draw blocks from a zipf hot set
//!    while one reader scans a region four times the cache; the hot
//!    readers' hit ratio with the scan against without it.
//!
//! Rounds interleave the contenders (single, multi, single, multi …) and
//! each figure is the median of the rounds with min and max beside it.
//! Cold needs no cache dropping: `O_DIRECT` bypasses the page cache and
//! each cold run starts with a new, empty cache.

use std::hint::black_box;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flexio_cache::policy::PolicyName;
use flexio_cache::trace::Generator;
use flexio_cache::{BlockCache, CacheConfig, ReadMode};

pub mod page_cache;

const MIB: u64 = 1 << 20;
const BLOCK: usize = 4096;

/// What to run.
#[derive(Clone, Debug)]
pub struct CacheBenchOptions {
    /// Where the data files go (its file system is the one measured).
    pub dir: PathBuf,
    /// Counted rounds per figure.
    pub runs: u32,
    /// File sizes of the S.M.A.C.K. table, in MiB.
    pub file_sizes_mib: Vec<u64>,
    /// The cache size of the tables and the hot-set experiment.
    pub cache_bytes: u64,
    /// Hot-set readers beside the scanner.
    pub hot_readers: usize,
    /// Reads per hot reader and phase (half of them again to warm up).
    pub hot_reads: usize,
}

impl Default for CacheBenchOptions {
    fn default() -> Self {
        CacheBenchOptions {
            dir: PathBuf::from("."),
            runs: 5,
            file_sizes_mib: vec![1, 8, 16, 24],
            cache_bytes: 16 * MIB,
            hot_readers: 2,
            hot_reads: 50_000,
        }
    }
}

/// A median with the smallest and largest value it came from.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Spread {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Spread {
            median,
            min: sorted[0],
            max: sorted[n - 1],
        }
    }
}

/// One row of the S.M.A.C.K. table: MiB/s of sequential 4 KiB reads.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FileRow {
    /// The file size in MiB.
    pub file_mib: u64,
    /// Cold, one 4 KiB request at a time.
    pub cold_single_block_mib_s: Spread,
    /// Cold, coalesced multi-block requests with read-ahead.
    pub cold_multi_block_mib_s: Spread,
    /// Second pass through the same cache.
    pub warm_mib_s: Spread,
    /// Share of the second pass served without reading the device, in
    /// percent (read-ahead hits do not count: their blocks were read).
    pub warm_from_cache_percent: f64,
    /// Median multi-block over median single-block.
    pub multi_over_single: f64,
}

/// Hit costs on one thread.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HitFigures {
    /// 4 KiB hits copied out with `read_at`, MiB/s.
    pub copy_out_mib_s: Spread,
    /// 4 KiB `copy_from_slice` from the same offsets of a buffer as large
    /// as the resident data, MiB/s.
    pub memcpy_mib_s: Spread,
    /// Median copy-out over median memcpy.
    pub copy_out_over_memcpy: f64,
    /// The machine's memcpy bandwidth: one `copy_from_slice` of 64 MiB,
    /// MiB/s (the physical limit the design compares against).
    pub memcpy_64mib_mib_s: Spread,
    /// Median copy-out over the median 64 MiB memcpy.
    pub copy_out_over_memcpy_64mib: f64,
    /// `block()` lookups returning a reference, per second, one thread.
    pub reference_lookups_per_s: Spread,
    /// The same with one thread per core, per thread.
    pub reference_lookups_per_s_per_thread_all_cores: Spread,
    /// Threads in the all-cores figure.
    pub threads: usize,
}

/// The hot-set experiment for one contender.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct HotSetRow {
    /// The policy, or `page-cache` for buffered reads in a memory cgroup
    /// of the same budget.
    pub policy: String,
    /// The hot readers' hit ratio without a scan, in percent.
    pub hit_percent_alone: f64,
    /// The same while one reader scans, in percent.
    pub hit_percent_with_scan: f64,
    /// With over alone.
    pub kept: f64,
    /// Blocks the scanner read meanwhile (paced to one per hot read).
    pub scanned_blocks: u64,
}

/// Everything the scenario measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CacheBenchReport {
    /// The JSON schema version.
    pub schema_version: u32,
    /// The cache size in bytes.
    pub cache_bytes: u64,
    /// Counted rounds per figure.
    pub runs: u32,
    /// The S.M.A.C.K. table.
    pub files: Vec<FileRow>,
    /// Hit costs.
    pub hits: HitFigures,
    /// The hot-set experiment, per policy.
    pub hot_set: Vec<HotSetRow>,
    /// Zipf skew and sizes of the hot-set experiment, in words.
    pub hot_set_setup: String,
    /// How the page-cache row was measured, or why it is missing.
    pub page_cache_note: Option<String>,
}

/// A data file for the run, removed on drop.
pub(crate) struct DataFile(pub(crate) PathBuf);

impl DataFile {
    fn new(dir: &Path, name: &str, bytes: u64) -> io::Result<DataFile> {
        let path = dir.join(name);
        let chunk: Vec<u8> = (0..MIB).map(|i| (i * 131 % 251) as u8).collect();
        let mut file = std::fs::File::create(&path)?;
        let mut left = bytes;
        while left > 0 {
            let n = left.min(MIB);
            io::Write::write_all(&mut file, &chunk[..n as usize])?;
            left -= n;
        }
        file.sync_all()?;
        Ok(DataFile(path))
    }
}

impl Drop for DataFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn cache_error(error: flexio_cache::Error) -> io::Error {
    io::Error::other(error.to_string())
}

/// Reads `len` bytes sequentially in 4 KiB reads; returns MiB/s.
fn sequential_pass(cache: &BlockCache, len: u64) -> io::Result<f64> {
    let mut buf = vec![0u8; BLOCK];
    let start = Instant::now();
    let mut offset = 0;
    while offset < len {
        cache.read_at(&mut buf, offset).map_err(cache_error)?;
        offset += BLOCK as u64;
    }
    Ok(len as f64 / MIB as f64 / start.elapsed().as_secs_f64())
}

/// Runs the whole scenario; `progress` hears a line per step.
///
/// # Errors
/// Creating the data files or reading through the cache fails.
pub fn run(
    options: &CacheBenchOptions,
    progress: &mut dyn FnMut(&str),
) -> io::Result<CacheBenchReport> {
    std::fs::create_dir_all(&options.dir)?;
    let runs = options.runs.max(1);
    let config = |mode| {
        CacheConfig::new(options.cache_bytes)
            .read_mode(mode)
            .flush_interval(None)
    };
    let single = ReadMode::SingleBlock;
    let multi = ReadMode::MultiBlock { max_blocks: 64 };

    let mut files = Vec::new();
    for &mib in &options.file_sizes_mib {
        progress(&format!(
            "cache: {mib} MiB file, cold single vs multi-block, warm"
        ));
        let data = DataFile::new(
            &options.dir,
            &format!("flexio-cache-bench-{mib}M"),
            mib * MIB,
        )?;
        let len = mib * MIB;
        let (mut cold_single, mut cold_multi, mut warm) = (Vec::new(), Vec::new(), Vec::new());
        let mut warm_from_cache = 0.0;
        // One warm-up round, then the counted ones, interleaved.
        for round in 0..=runs {
            let cache = BlockCache::open(&data.0, config(single)).map_err(cache_error)?;
            let single_rate = sequential_pass(&cache, len)?;
            drop(cache);
            let cache = BlockCache::open(&data.0, config(multi)).map_err(cache_error)?;
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
        files.push(FileRow {
            file_mib: mib,
            multi_over_single: cold_multi.median / cold_single.median,
            cold_single_block_mib_s: cold_single,
            cold_multi_block_mib_s: cold_multi,
            warm_mib_s: Spread::of(&warm),
            warm_from_cache_percent: warm_from_cache,
        });
    }

    progress("cache: hit costs");
    let hits = hit_figures(options, runs)?;
    progress("cache: hot set with and without a scan, per policy");
    let (mut hot_set, hot_set_setup, hot_data) = hot_set(options, progress)?;
    progress("cache: hot set through the page cache in a memory cgroup");
    let page_cache_note = match page_cache::hot_set(options, &HotSetShape::of(options), &hot_data.0)
    {
        Ok(row) => {
            hot_set.push(row);
            Some(format!(
                "buffered pread in a cgroup-v1 memory group limited to the cache size + {} MiB for the reader process",
                page_cache::CHILD_ALLOWANCE >> 20
            ))
        }
        Err(why) => Some(why),
    };
    Ok(CacheBenchReport {
        schema_version: 1,
        cache_bytes: options.cache_bytes,
        runs,
        files,
        hits,
        hot_set,
        hot_set_setup,
        page_cache_note,
    })
}

/// How long each timed hit loop runs.
const HIT_WINDOW: Duration = Duration::from_millis(300);

fn hit_figures(options: &CacheBenchOptions, runs: u32) -> io::Result<HitFigures> {
    // Resident data: half the cache, read once to warm it.
    let resident = options.cache_bytes / 2;
    let data = DataFile::new(&options.dir, "flexio-cache-bench-hits", resident)?;
    let cache = BlockCache::open(
        &data.0,
        CacheConfig::new(options.cache_bytes).flush_interval(None),
    )
    .map_err(cache_error)?;
    sequential_pass(&cache, resident)?;
    let blocks = resident / BLOCK as u64;
    let offsets: Vec<u64> = Generator::Zipf {
        blocks,
        alpha: 0.0, // uniform
        len: 1 << 16,
        seed: 7,
    }
    .generate();
    let source: Vec<u8> = std::fs::read(&data.0)?;
    let mut buf = vec![0u8; BLOCK];
    let (mut copy_out, mut memcpy, mut lookups) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..=runs {
        copy_out.push(
            timed(|i| {
                let block = offsets[i % offsets.len()];
                cache
                    .read_at(&mut buf, block * BLOCK as u64)
                    .expect("a resident block");
                black_box(&buf);
            }) * BLOCK as f64
                / MIB as f64,
        );
        memcpy.push(
            timed(|i| {
                let at = offsets[i % offsets.len()] as usize * BLOCK;
                buf.copy_from_slice(black_box(&source[at..at + BLOCK]));
                black_box(&buf);
            }) * BLOCK as f64
                / MIB as f64,
        );
        lookups.push(timed(|i| {
            let block = cache
                .block(offsets[i % offsets.len()])
                .expect("a resident block");
            black_box(block[0]);
        }));
    }
    let mut large = Vec::new();
    {
        let from = vec![1u8; 64 << 20];
        let mut to = vec![0u8; 64 << 20];
        for _ in 0..=runs {
            let start = Instant::now();
            to.copy_from_slice(black_box(&from));
            black_box(&to);
            large.push(64.0 / start.elapsed().as_secs_f64());
        }
    }
    let large = Spread::of(&large[1..]);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut per_thread = Vec::new();
    for _ in 0..runs {
        let rates: Vec<f64> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (cache, offsets) = (&cache, &offsets);
                    scope.spawn(move || {
                        timed(|i| {
                            let block = offsets[(i + t * 7919) % offsets.len()];
                            black_box(cache.block(block).expect("resident")[0]);
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        });
        per_thread.push(rates.iter().sum::<f64>() / threads as f64);
    }
    // Drop the warm-up round.
    let (copy_out, memcpy) = (Spread::of(&copy_out[1..]), Spread::of(&memcpy[1..]));
    Ok(HitFigures {
        copy_out_over_memcpy: copy_out.median / memcpy.median,
        copy_out_over_memcpy_64mib: copy_out.median / large.median,
        memcpy_64mib_mib_s: large,
        copy_out_mib_s: copy_out,
        memcpy_mib_s: memcpy,
        reference_lookups_per_s: Spread::of(&lookups[1..]),
        reference_lookups_per_s_per_thread_all_cores: Spread::of(&per_thread),
        threads,
    })
}

/// Runs `step(i)` for i = 0, 1, … for about [`HIT_WINDOW`]; returns steps
/// per second.
fn timed(mut step: impl FnMut(usize)) -> f64 {
    let start = Instant::now();
    let mut done = 0usize;
    loop {
        for _ in 0..4096 {
            step(done);
            done += 1;
        }
        let elapsed = start.elapsed();
        if elapsed >= HIT_WINDOW {
            return done as f64 / elapsed.as_secs_f64();
        }
    }
}

/// The shape of the hot-set experiment, derived from the options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HotSetShape {
    /// Blocks of the zipf hot region (the file's first blocks).
    pub hot_blocks: u64,
    /// Blocks of the scan region after it.
    pub scan_blocks: u64,
    /// Hot readers.
    pub readers: usize,
    /// Counted reads per reader and phase.
    pub reads: usize,
}

impl HotSetShape {
    fn of(options: &CacheBenchOptions) -> HotSetShape {
        let cache_blocks = options.cache_bytes / BLOCK as u64;
        // A hot region twice the cache with zipf 1.0 (its head fits), then
        // a scan region four times the cache.
        HotSetShape {
            hot_blocks: 2 * cache_blocks,
            scan_blocks: 4 * cache_blocks,
            readers: options.hot_readers.max(1),
            reads: options.hot_reads.max(1),
        }
    }

    fn file_bytes(&self) -> u64 {
        (self.hot_blocks + self.scan_blocks) * BLOCK as u64
    }

    fn draws(&self) -> Vec<Vec<u64>> {
        (0..self.readers)
            .map(|reader| {
                Generator::Zipf {
                    blocks: self.hot_blocks,
                    alpha: 1.0,
                    len: self.reads + self.reads / 2,
                    seed: 11 + reader as u64,
                }
                .generate()
            })
            .collect()
    }
}

/// One phase of the hot-set experiment: every reader reads its draws (the
/// first half-`reads` to warm up, uncounted) with `read_hot`, which says
/// whether the block was resident; with `scan`, one more thread reads the
/// scan region in order with `read_scan`, paced to one block per hot read
/// so that every contender sees the same scan however fast it serves it.
/// Returns the counted hit ratio in percent and the blocks scanned.
pub(crate) fn hot_phase(
    shape: &HotSetShape,
    draws: &[Vec<u64>],
    scan: bool,
    read_hot: &(dyn Fn(u64) -> io::Result<bool> + Sync),
    read_scan: &(dyn Fn(u64) -> io::Result<()> + Sync),
) -> io::Result<(f64, u64)> {
    let warm = shape.reads / 2;
    let hits = AtomicU64::new(0);
    let hot_done = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let scanned = AtomicU64::new(0);
    std::thread::scope(|scope| -> io::Result<()> {
        let readers: Vec<_> = draws
            .iter()
            .map(|draw| {
                let (hits, hot_done) = (&hits, &hot_done);
                scope.spawn(move || -> io::Result<()> {
                    for (i, &block) in draw.iter().enumerate() {
                        let hit = read_hot(block)?;
                        hot_done.fetch_add(1, Ordering::Relaxed);
                        if i >= warm && hit {
                            hits.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        let scanner = scan.then(|| {
            let (done, scanned, hot_done) = (&done, &scanned, &hot_done);
            scope.spawn(move || -> io::Result<()> {
                // Bounded: at most 1000 passes.
                for _pass in 0..1000u64 {
                    for block in shape.hot_blocks..shape.hot_blocks + shape.scan_blocks {
                        while scanned.load(Ordering::Relaxed) >= hot_done.load(Ordering::Relaxed) {
                            if done.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                            std::thread::yield_now();
                        }
                        read_scan(block)?;
                        scanned.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok(())
            })
        });
        for reader in readers {
            reader.join().expect("no panic")?;
        }
        done.store(true, Ordering::Relaxed);
        if let Some(scanner) = scanner {
            scanner.join().expect("no panic")?;
        }
        Ok(())
    })?;
    let counted = (shape.reads * shape.readers) as f64;
    let ratio = 100.0 * hits.load(Ordering::Relaxed) as f64 / counted;
    Ok((ratio, scanned.load(Ordering::Relaxed)))
}

fn hot_set(
    options: &CacheBenchOptions,
    progress: &mut dyn FnMut(&str),
) -> io::Result<(Vec<HotSetRow>, String, DataFile)> {
    let shape = HotSetShape::of(options);
    let setup = format!(
        "{} hot readers, zipf alpha 1.0 over {} blocks of 4 KiB, {} reads each after {} to warm up; one scanner over {} blocks (4x the cache of {} blocks) in 4 KiB reads, one scanned block per hot read",
        shape.readers,
        shape.hot_blocks,
        shape.reads,
        shape.reads / 2,
        shape.scan_blocks,
        shape.scan_blocks / 4
    );
    let data = DataFile::new(
        &options.dir,
        "flexio-cache-bench-hotset",
        shape.file_bytes(),
    )?;
    let draws = shape.draws();
    let mut rows = Vec::new();
    for policy in PolicyName::ALL {
        progress(&format!("cache: hot set, {policy}"));
        let mut ratio = [0.0; 2];
        let mut scanned_blocks = 0;
        for (phase, scan) in [false, true].into_iter().enumerate() {
            let config = CacheConfig::new(options.cache_bytes)
                .policy(policy)
                .flush_interval(None);
            let cache = BlockCache::open(&data.0, config).map_err(cache_error)?;
            let read = |block: u64| -> io::Result<bool> {
                let mut buf = [0u8; BLOCK];
                let hit = cache.is_resident(block);
                cache
                    .read_at(&mut buf, block * BLOCK as u64)
                    .map_err(cache_error)?;
                Ok(hit)
            };
            let (hit_ratio, scanned) =
                hot_phase(&shape, &draws, scan, &read, &|block| read(block).map(drop))?;
            ratio[phase] = hit_ratio;
            if scan {
                scanned_blocks = scanned;
            }
        }
        rows.push(HotSetRow {
            policy: policy.as_str().to_string(),
            hit_percent_alone: ratio[0],
            hit_percent_with_scan: ratio[1],
            kept: ratio[1] / ratio[0].max(f64::MIN_POSITIVE),
            scanned_blocks,
        });
    }
    Ok((rows, setup, data))
}

/// The report as terminal tables.
pub fn render(report: &CacheBenchReport) -> String {
    let fmt = |s: &Spread| format!("{:.0} ({:.0}-{:.0})", s.median, s.min, s.max);
    let mut text = format!(
        "S.M.A.C.K.'s table: sequential 4 KiB reads through a {} MiB cache, MiB/s, median (min-max) of {} rounds\n",
        report.cache_bytes / MIB,
        report.runs
    );
    text += &format!(
        "{:>6}  {:>20}  {:>20}  {:>7}  {:>20}  {:>9}\n",
        "file", "cold single-block", "cold multi-block", "multi/1", "warm", "from cache"
    );
    for row in &report.files {
        text += &format!(
            "{:>3}MiB  {:>20}  {:>20}  {:>6.1}x  {:>20}  {:>8.1}%\n",
            row.file_mib,
            fmt(&row.cold_single_block_mib_s),
            fmt(&row.cold_multi_block_mib_s),
            row.multi_over_single,
            fmt(&row.warm_mib_s),
            row.warm_from_cache_percent
        );
    }
    let hits = &report.hits;
    text += &format!(
        "\nhits, one thread: 4 KiB copied out {} MiB/s vs memcpy of 4 KiB {} MiB/s: {:.2}x\n",
        fmt(&hits.copy_out_mib_s),
        fmt(&hits.memcpy_mib_s),
        hits.copy_out_over_memcpy
    );
    let per_s = |s: &Spread| {
        format!(
            "{:.1} M/s ({:.1}-{:.1})",
            s.median / 1e6,
            s.min / 1e6,
            s.max / 1e6
        )
    };
    text += &format!(
        "machine memcpy bandwidth (64 MiB): {} MiB/s; 4 KiB copy-out over it: {:.2}x\n",
        fmt(&hits.memcpy_64mib_mib_s),
        hits.copy_out_over_memcpy_64mib
    );
    text += &format!(
        "hit lookups returning a reference: {} on one thread, {} per thread on {} threads\n",
        per_s(&hits.reference_lookups_per_s),
        per_s(&hits.reference_lookups_per_s_per_thread_all_cores),
        hits.threads
    );
    text += &format!("\nhot set and scan: {}\n", report.hot_set_setup);
    text += &format!(
        "{:>10}  {:>10}  {:>10}  {:>6}  {:>14}\n",
        "policy", "hits alone", "with scan", "kept", "scanned blocks"
    );
    if let Some(note) = &report.page_cache_note {
        text += &format!("page cache: {note}\n");
    }
    for row in &report.hot_set {
        text += &format!(
            "{:>10}  {:>9.1}%  {:>9.1}%  {:>5.2}x  {:>14}\n",
            row.policy,
            row.hit_percent_alone,
            row.hit_percent_with_scan,
            row.kept,
            row.scanned_blocks
        );
    }
    text
}
