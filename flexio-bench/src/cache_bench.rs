//! The `cache` scenario: S.M.A.C.K.'s buffer-cache tables on today's
//! machine, through `flexio-cache`'s [`BlockCache`] over `O_DIRECT`.
//!
//! 1. Files of 1, 8, 16 and 24 MiB read sequentially in 4 KiB reads: cold
//!    with single-block reads (one 4 KiB request at a time, S.M.A.C.K.'s
//!    "single block"), cold with multi-block reads (coalesced, read ahead,
//!    several requests in flight), then warm — a second pass through the
//!    same 16 MiB cache, which thrashes once the file outgrows it. The
//!    same again from a loop block device over a file (root only), as a
//!    raw source beside the file.
//! 2. Hits: 4 KiB hits copied out against `memcpy` of 4 KiB from the same
//!    offsets of an equal buffer, on one thread; and lookups per second
//!    per thread when a hit returns a reference ([`BlockCache::block`]).
//! 3. Hot set and scan, per policy: readers draw blocks from a zipf hot set
//!    while one reader scans a region four times the cache; the hot
//!    readers' hit ratio with the scan against without it.
//! 4. `flexio serve --cache` against `flexio serve` (sendfile, the page
//!    cache) under the same memory: the hot set's requests per second
//!    alone and during a scan.
//!
//! Run by `flexio bench --scenario cache` and its alias `flexio cache
//! bench`. Part 1 is a paper reproduction: its rows come from the caller
//! ([`CacheBenchOptions::smack_rows`], the `flexio-seeds` crate's).
//!
//! ```text
//! hits.rs         hit costs against memcpy
//! hot_set.rs      hot set through a scan, per policy
//! page_cache.rs   the same through the page cache in a memory cgroup
//! scenario.rs     the scenario behind the Scenario trait: parts as cells
//! serve.rs        serve --cache against serve, hot set during a scan
//! ```
//!
//! Rounds interleave the contenders (single, multi, single, multi …) and
//! each figure is the median of the rounds with min and max beside it.
//! Cold needs no cache dropping: `O_DIRECT` bypasses the page cache and
//! each cold run starts with a new, empty cache.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flexio_cache::BlockCache;

mod hits;
mod hot_set;
pub mod page_cache;
mod scenario;
mod serve;

pub use scenario::{CacheBench, CacheCell};
pub use serve::{ServeFigures, ServeRow};

pub(crate) use hot_set::hot_phase;
pub use hot_set::HotSetShape;

/// Bytes in a MiB.
pub const MIB: u64 = 1 << 20;
/// The cache's block and the size of each read.
pub const BLOCK: usize = 4096;

/// S.M.A.C.K.'s cold/warm rows (part 1) for `options` over `runs` counted
/// rounds, `progress` hearing a line per step: the rows, and why the loop
/// device's are missing when they are.
pub type SmackRows =
    fn(&CacheBenchOptions, u32, &mut dyn FnMut(&str)) -> io::Result<(Vec<FileRow>, Option<String>)>;

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
    /// The `flexio` executable, for the `serve --cache` comparison (which
    /// runs it as a server); `None` leaves that part out.
    pub flexio_exe: Option<PathBuf>,
    /// Each timed window of the `serve --cache` comparison.
    pub serve_window: Duration,
    /// Which parts to run.
    pub parts: Parts,
    /// What measures part 1, S.M.A.C.K.'s table (a paper reproduction, in
    /// the crate above this one); `None` leaves the table empty and says
    /// why.
    pub smack_rows: Option<SmackRows>,
}

/// The scenario's parts, each on or off (all on by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Parts {
    /// S.M.A.C.K.'s cold/warm table (file and loop device).
    pub smack: bool,
    /// Hit costs against memcpy.
    pub hits: bool,
    /// The hot set through a scan, per policy and the page cache.
    pub hot_set: bool,
    /// `serve --cache` against `serve`.
    pub serve: bool,
}

impl Parts {
    /// The names [`Parts::parse`] takes.
    pub const NAMES: [&'static str; 4] = ["smack", "hits", "hot-set", "serve"];

    /// Every part.
    pub const ALL: Parts = Parts {
        smack: true,
        hits: true,
        hot_set: true,
        serve: true,
    };

    /// Parts from comma-separated names (see [`Parts::NAMES`]).
    ///
    /// # Errors
    /// An unknown name, in words.
    ///
    /// # Examples
    /// ```
    /// use flexio_bench::cache_bench::Parts;
    /// let parts = Parts::parse("hits,serve").unwrap();
    /// assert!(parts.hits && parts.serve && !parts.smack && !parts.hot_set);
    /// assert!(Parts::parse("warp").is_err());
    /// ```
    pub fn parse(text: &str) -> crate::Result<Parts> {
        let mut parts = Parts {
            smack: false,
            hits: false,
            hot_set: false,
            serve: false,
        };
        for name in text.split(',').map(str::trim) {
            match name {
                "smack" => parts.smack = true,
                "hits" => parts.hits = true,
                "hot-set" => parts.hot_set = true,
                "serve" => parts.serve = true,
                other => {
                    return Err(crate::Error::Usage(format!(
                        "unknown part {other:?}; known: {}",
                        Parts::NAMES.join(", ")
                    )))
                }
            }
        }
        Ok(parts)
    }
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
            flexio_exe: None,
            serve_window: Duration::from_secs(2),
            parts: Parts::ALL,
            smack_rows: None,
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
    /// The median, min and max of `values` (at least one).
    ///
    /// # Examples
    /// ```
    /// let spread = flexio_bench::cache_bench::Spread::of(&[3.0, 1.0, 2.0]);
    /// assert_eq!((spread.median, spread.min, spread.max), (2.0, 1.0, 3.0));
    /// ```
    pub fn of(values: &[f64]) -> Spread {
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
    /// What was read: `file`, or `loop /dev/loopN` (a loop block device
    /// over a file, read from its start).
    pub source: String,
    /// The file size (or the length read from the device) in MiB.
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
    /// 4 KiB hits copied out with `read_at`, MiB/s (per round the fastest
    /// of ten 30 ms windows, alternating with memcpy's).
    pub copy_out_mib_s: Spread,
    /// 4 KiB `copy_from_slice` from the same offsets of a buffer as large
    /// as the resident data, MiB/s (as `copy_out_mib_s`).
    pub memcpy_mib_s: Spread,
    /// Copy-out over memcpy, per round (each the fastest of ten 30 ms
    /// windows, the two alternating).
    pub copy_out_over_memcpy: Spread,
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
    /// The S.M.A.C.K. table: the file rows, then the loop device's.
    pub files: Vec<FileRow>,
    /// Why the loop device rows are missing, if they are.
    pub loop_device_note: Option<String>,
    /// Hit costs (when that part ran).
    pub hits: Option<HitFigures>,
    /// The hot-set experiment, per policy.
    pub hot_set: Vec<HotSetRow>,
    /// Zipf skew and sizes of the hot-set experiment, in words.
    pub hot_set_setup: String,
    /// How the page-cache row was measured, or why it is missing.
    pub page_cache_note: Option<String>,
    /// `serve --cache` against `serve` for the hot set during a scan.
    pub serve: Option<ServeFigures>,
    /// Why `serve` is missing, if it is.
    pub serve_note: Option<String>,
}

/// A data file for the run (its path), removed on drop.
pub struct DataFile(pub PathBuf);

impl DataFile {
    /// Writes `bytes` of a repeating pattern to `dir/name` and syncs it.
    ///
    /// # Errors
    /// Creating, writing or syncing the file fails.
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let file = flexio_bench::cache_bench::DataFile::new(dir.path(), "data", 5000).unwrap();
    /// assert_eq!(std::fs::metadata(&file.0).unwrap().len(), 5000);
    /// ```
    pub fn new(dir: &Path, name: &str, bytes: u64) -> io::Result<DataFile> {
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

/// A cache error as an `io::Error`, its message kept.
///
/// # Examples
/// ```
/// use flexio_bench::cache_bench::cache_error;
/// let cache = flexio_cache::BlockCache::open("/nonexistent/file".as_ref(), flexio_cache::CacheConfig::new(1 << 20));
/// assert!(cache_error(cache.err().unwrap()).to_string().contains("/nonexistent/file"));
/// ```
pub fn cache_error(error: flexio_cache::Error) -> io::Error {
    io::Error::other(error.to_string())
}

/// Reads `len` bytes sequentially in 4 KiB reads; returns MiB/s.
///
/// # Errors
/// A read through the cache fails.
///
/// # Examples
/// ```
/// use flexio_bench::cache_bench::{sequential_pass, DataFile};
/// let dir = tempfile::tempdir().unwrap();
/// let file = DataFile::new(dir.path(), "data", 1 << 20).unwrap();
/// let cache = flexio_cache::BlockCache::open(&file.0, flexio_cache::CacheConfig::new(1 << 20)).unwrap();
/// assert!(sequential_pass(&cache, 1 << 20).unwrap() > 0.0);
/// ```
pub fn sequential_pass(cache: &BlockCache, len: u64) -> io::Result<f64> {
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
    let parts = &options.parts;
    let mut files = Vec::new();
    let mut loop_device_note = None;
    if parts.smack {
        match options.smack_rows {
            Some(rows) => (files, loop_device_note) = rows(options, runs, progress)?,
            None => {
                let why = "no S.M.A.C.K. rows: nothing measures them in this build".to_string();
                progress(&format!("cache: {why}"));
                loop_device_note = Some(why);
            }
        }
    }
    let hits = if parts.hits {
        progress("cache: hit costs");
        Some(hits::hit_figures(options, runs)?)
    } else {
        None
    };
    let (mut hot_set, mut hot_set_setup, mut page_cache_note) = (Vec::new(), String::new(), None);
    if parts.hot_set {
        progress("cache: hot set with and without a scan, per policy");
        let hot_data;
        (hot_set, hot_set_setup, hot_data) = hot_set::hot_set(options, progress)?;
        progress("cache: hot set through the page cache in a memory cgroup");
        page_cache_note = match page_cache::hot_set(options, &HotSetShape::of(options), &hot_data.0)
        {
            Ok(row) => {
                hot_set.push(row);
                Some(format!(
                        "buffered pread in a cgroup-v1 memory group limited to the cache size + {} MiB for the reader process",
                        page_cache::CHILD_ALLOWANCE >> 20
                    ))
            }
            Err(why) => Some(why.to_string()),
        };
    }
    let (mut serve, mut serve_note) = (None, None);
    if parts.serve {
        progress("cache: serve --cache against serve, hot set during a scan");
        match serve::compare(options, runs, progress) {
            Ok(figures) => serve = Some(figures),
            Err(why) => {
                progress(&format!("cache: no serve comparison: {why}"));
                serve_note = Some(why.to_string());
            }
        }
    }
    Ok(CacheBenchReport {
        schema_version: 1,
        cache_bytes: options.cache_bytes,
        runs,
        files,
        loop_device_note,
        hits,
        hot_set,
        hot_set_setup,
        page_cache_note,
        serve,
        serve_note,
    })
}

/// The report as terminal tables.
pub fn render(report: &CacheBenchReport) -> String {
    let mut text = String::new();
    if !report.files.is_empty() || report.loop_device_note.is_some() {
        text += &render_smack(report);
    }
    if let Some(hits) = &report.hits {
        text += &render_hits(hits);
    }
    if !report.hot_set.is_empty() {
        text += &render_hot_set(report);
    }
    match (&report.serve, &report.serve_note) {
        (Some(serve), _) => text += &render_serve(serve),
        (None, Some(note)) => text += &format!("\nserve: {note}\n"),
        (None, None) => {}
    }
    text
}

fn render_smack(report: &CacheBenchReport) -> String {
    let mut text = format!(
        "S.M.A.C.K.'s table: sequential 4 KiB reads through a {} MiB cache, MiB/s, median (min-max) of {} rounds\n",
        report.cache_bytes / MIB,
        report.runs
    );
    text += &format!(
        "{:>16}  {:>6}  {:>20}  {:>20}  {:>7}  {:>20}  {:>9}\n",
        "source", "size", "cold single-block", "cold multi-block", "multi/1", "warm", "from cache"
    );
    for row in &report.files {
        text += &format!(
            "{:>16}  {:>3}MiB  {:>20}  {:>20}  {:>6.1}x  {:>20}  {:>8.1}%\n",
            row.source,
            row.file_mib,
            fmt(&row.cold_single_block_mib_s),
            fmt(&row.cold_multi_block_mib_s),
            row.multi_over_single,
            fmt(&row.warm_mib_s),
            row.warm_from_cache_percent
        );
    }
    if let Some(note) = &report.loop_device_note {
        text += &format!("loop device: {note}\n");
    }
    text
}

fn fmt(s: &Spread) -> String {
    format!("{:.0} ({:.0}-{:.0})", s.median, s.min, s.max)
}

fn render_hits(hits: &HitFigures) -> String {
    let mut text = format!(
        "\nhits, one thread: 4 KiB copied out {} MiB/s vs memcpy of 4 KiB {} MiB/s: {:.2}x ({:.2}-{:.2}) (fastest of 10 alternating 30 ms windows per round)\n",
        fmt(&hits.copy_out_mib_s),
        fmt(&hits.memcpy_mib_s),
        hits.copy_out_over_memcpy.median,
        hits.copy_out_over_memcpy.min,
        hits.copy_out_over_memcpy.max
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
    text
}

fn render_hot_set(report: &CacheBenchReport) -> String {
    let mut text = format!("\nhot set and scan: {}\n", report.hot_set_setup);
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

fn render_serve(serve: &ServeFigures) -> String {
    let mut text = format!("\nserve, hot set during a scan: {}\n", serve.setup);
    text += &format!(
        "{:>20}  {:>22}  {:>22}  {:>6}  {:>18}\n",
        "server", "hot req/s alone", "hot req/s with scan", "kept", "scan MiB/s"
    );
    for row in &serve.rows {
        text += &format!(
            "{:>20}  {:>22}  {:>22}  {:>5.2}x  {:>18}\n",
            row.server,
            fmt(&row.hot_alone_requests_per_s),
            fmt(&row.hot_with_scan_requests_per_s),
            row.kept,
            fmt(&row.scan_mib_s)
        );
    }
    text += &format!(
        "serve --cache over serve, hot requests during the scan: {:.2}x\n",
        serve.cache_over_plain_with_scan
    );
    text
}
