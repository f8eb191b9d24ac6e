//! S.M.A.C.K.'s section 5 on today's machine, for the seeds' exhibits
//! `smack-table-3`, `-4` and `-6`: files of 1, 8, 16 and 24 MiB read whole
//! into memory, cold, by the original's "normal" (one 512-byte sector per
//! `O_DIRECT` request into a bounce buffer, then a CPU copy) against its
//! "DMA" (8 KiB `O_DIRECT` requests, its cluster, into memory), beside
//! buffered reads through the page cache; the same files through
//! flexio-cache's 16 MiB LRU cache of 4 KiB blocks, cold then warm, beside
//! the cache off; and 16 MiB from a raw loop device: by sectors with a
//! copy, by one request, and by `dd bs=16M` (root). The files and the raw
//! device are held to `CARD_RATE` (root; the original's SD card was
//! slow, this machine's disk is not). Busy is the process's CPU time,
//! blocked the wall time less it, copy the CPU's copying alone; each
//! figure is the median of the rounds (five, as the original averaged
//! five; three with `--quick`), and a round of a file smaller than a
//! second's worth at the card's rate the mean of as many reads of it back
//! to back ([`SlowDevice::averaged`]: the throttle holds a shorter one to
//! its rate only to within a tenth of a second).
//!
//! ```text
//! smack_bench.rs   the file tables (3, 4-5)
//!  ├ read.rs       a file or device into memory, buffered or O_DIRECT, timed
//!  └ raw.rs        Table 6: a loop device, O_DIRECT and dd
//! ```

use std::path::{Path, PathBuf};

use flexio_cache::policy::PolicyName;
use flexio_cache::{BlockCache, CacheConfig, ReadMode};

use crate::slow_device::{make_cold, mean_of, SlowDevice};
use crate::thesis_bench::{ThesisOptions, ThesisOutcome, ThesisPoint};
use flexio_bench::cache_bench::{cache_error, sequential_pass, DataFile};

pub mod raw;
mod read;

pub use raw::raw_read;
use read::Timed;

use crate::error::{Error, Result};

const MIB: u64 = 1 << 20;
/// The original's file sizes, in MB (2^20 bytes).
pub const SIZES_MB: [u64; 4] = [1, 8, 16, 24];
/// The original's buffer cache: 16 MB of 4 KB blocks.
const CACHE_BYTES: u64 = 16 * MIB;
/// The rate the SD card is stood in for at: 16 MiB/s, a fast card's
/// (the original's read at 1-4 MB/s; slower would stretch the run).
pub const CARD_RATE: u64 = 16 * MIB;
/// The original's file-system cluster, the size of its multi-block reads.
const MULTI: usize = 8 << 10;

/// Table 3's series: "normal" (single 512-byte sectors by `O_DIRECT`
/// into a bounce buffer, then a CPU copy) and "DMA" (8 KiB `O_DIRECT`
/// requests, the original's cluster, straight into memory), each with
/// its busy and blocked time, normal's copy time, and the page cache's
/// buffered 512-byte reads (read-ahead and all) beside them.
pub mod uncached_series {
    /// Single 512-byte sectors, each copied by the CPU: the original's
    /// "normal".
    pub const NORMAL: &str = "normal: 512 B sectors + CPU copy (ours)";
    /// Its process CPU time.
    pub const NORMAL_BUSY: &str = "normal, busy (ours)";
    /// Its wall time less CPU time.
    pub const NORMAL_BLOCKED: &str = "normal, blocked (ours)";
    /// The CPU's copying alone.
    pub const NORMAL_COPY: &str = "normal, copy (ours)";
    /// `O_DIRECT`, 8 KiB requests: the original's multi-block DMA.
    pub const DIRECT_MULTI: &str = "DMA: O_DIRECT 8 KiB (ours)";
    /// Its blocked time (wall less CPU).
    pub const DIRECT_MULTI_BLOCKED: &str = "DMA, blocked (ours)";
    /// Its process CPU time (the original's "system").
    pub const DIRECT_MULTI_BUSY: &str = "DMA, busy (ours)";
    /// Buffered 512-byte reads through the page cache, with read-ahead.
    pub const BUFFERED_512: &str = "page cache 512 B reads (ours)";
    /// Every series, in the order they are measured.
    pub const ALL: [&str; 8] = [
        NORMAL,
        NORMAL_BUSY,
        NORMAL_BLOCKED,
        NORMAL_COPY,
        DIRECT_MULTI,
        DIRECT_MULTI_BLOCKED,
        DIRECT_MULTI_BUSY,
        BUFFERED_512,
    ];
}

/// Tables 4-5's series: the 16 MiB cache cold and warm, single- and
/// multi-block, the multi-block's blocked time, and the cache off.
pub mod cached_series {
    /// Cold, each 4 KiB block read as eight 512-byte requests into a
    /// bounce buffer the CPU copies from: the original's "normal".
    pub const COLD_NORMAL: &str = "cold, normal: 512 B sectors, CPU copy (ours)";
    /// Warm, the same.
    pub const WARM_NORMAL: &str = "warm, normal: 512 B sectors, CPU copy (ours)";
    /// Cold, one 4 KiB request per cache block, the reader blocked while
    /// it waits, no coalescing or read-ahead: the original's "DMA".
    pub const COLD_DMA: &str = "cold, DMA: one request per block (ours)";
    /// Warm, the same.
    pub const WARM_DMA: &str = "warm, DMA: one request per block (ours)";
    /// The cold DMA pass's blocked time.
    pub const COLD_DMA_BLOCKED: &str = "cold, DMA, blocked (ours)";
    /// The warm DMA pass's blocked time.
    pub const WARM_DMA_BLOCKED: &str = "warm, DMA, blocked (ours)";
    /// No cache: 4 KiB `O_DIRECT` reads into memory.
    pub const CACHE_OFF: &str = "cache off, O_DIRECT 4 KiB (ours)";
    /// Every series, in the order they are measured.
    pub const ALL: [&str; 7] = [
        COLD_NORMAL,
        WARM_NORMAL,
        COLD_DMA,
        WARM_DMA,
        COLD_DMA_BLOCKED,
        WARM_DMA_BLOCKED,
        CACHE_OFF,
    ];
}

/// Rounds per figure: the original averaged five; the quick run three,
/// the least with a median apart from its extremes (either within
/// `--runs`, and a few more where a figure's rounds disagree: see
/// [`ThesisOptions::another_round`]).
fn own_rounds(options: &ThesisOptions) -> usize {
    if options.quick {
        3
    } else {
        5
    }
}

/// Whether the figures at `x` get another round, `ran` run.
fn another_round(options: &ThesisOptions, samples: &Samples, x: f64, ran: usize) -> bool {
    options.another_round(ran, own_rounds(options), samples.at(x))
}

/// Values by series and x, turned into medians.
#[derive(Default)]
struct Samples(Vec<(&'static str, f64, Vec<f64>)>);

impl Samples {
    fn add(&mut self, series: &'static str, x: f64, y: f64) {
        match self
            .0
            .iter_mut()
            .find(|(s, at, _)| *s == series && *at == x)
        {
            Some((_, _, values)) => values.push(y),
            None => self.0.push((series, x, vec![y])),
        }
    }

    /// Every series' values at `x`.
    fn at(&self, x: f64) -> impl Iterator<Item = &[f64]> {
        self.0
            .iter()
            .filter(move |(_, at, _)| *at == x)
            .map(|(_, _, values)| values.as_slice())
    }

    /// [`add`](Self::add)s each of `figures` to its series.
    fn add_each<const N: usize>(&mut self, series: [&'static str; N], x: f64, figures: [f64; N]) {
        for (series, y) in series.into_iter().zip(figures) {
            self.add(series, x, y);
        }
    }

    /// The medians, series by series (in the order first measured), each
    /// by x.
    fn points(mut self) -> Vec<ThesisPoint> {
        let order: Vec<&str> = self.0.iter().fold(Vec::new(), |mut seen, (s, _, _)| {
            if !seen.contains(s) {
                seen.push(s);
            }
            seen
        });
        let rank = |series: &str| order.iter().position(|s| *s == series);
        self.0
            .sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then(a.1.total_cmp(&b.1)));
        self.0
            .into_iter()
            .map(|(series, x, mut values)| ThesisPoint {
                series: series.to_string(),
                x,
                spread: flexio_bench::stats::round_spread(&values)
                    .map(|(low, high)| (low, high, values.len())),
                y: flexio_bench::stats::median(&mut values),
            })
            .collect()
    }
}

/// Where the data files go: ext4 on a throttled device (the original's
/// SD card was slow; this machine's disk runs at memory speed), or,
/// without root, `options.dir` with why not (the shortfall).
struct Place {
    /// Held so that the device outlives the files on it; primed before
    /// each timed round.
    device: Option<SlowDevice>,
    dir: PathBuf,
    setting: String,
    shortfall: Option<String>,
}

impl Place {
    /// How many passes make a round of each size, in words.
    fn passes_said(&self, sizes: &[u64]) -> String {
        let Some(device) = &self.device else {
            return "one pass a round".into();
        };
        let each: Vec<String> = sizes
            .iter()
            .map(|&mb| format!("{mb} MiB {}", device.passes(mb * MIB)))
            .collect();
        format!(
            "a round the mean of passes back to back, a second's worth at the rate (the \
             throttle holds a shorter one to it only within a tenth of a second): {}",
            each.join(", ")
        )
    }

    /// One timed round of `pass` over `bytes` of the device: primed, the
    /// mean of [`SlowDevice::passes`] of it (one pass without a device).
    fn averaged<const N: usize>(
        &self,
        bytes: u64,
        pass: impl FnMut() -> Result<[f64; N]>,
    ) -> Result<[f64; N]> {
        match &self.device {
            Some(device) => device.averaged(bytes, pass),
            None => mean_of(1, pass),
        }
    }

    fn new(options: &ThesisOptions, name: &str) -> Place {
        // The largest file (24 MiB) and ext4's own blocks.
        match SlowDevice::new(name, 96 * MIB, CARD_RATE) {
            Ok(device) => Place {
                dir: device.mount().to_path_buf(),
                setting: device.describe(),
                device: Some(device),
                shortfall: None,
            },
            Err(why) => Place {
                dir: options.dir.clone(),
                setting: format!(
                    "{} (this machine's disk, not throttled)",
                    options.dir.display()
                ),
                device: None,
                shortfall: Some(format!("no throttled device ({why})")),
            },
        }
    }
}

/// Each size's data file (on `place`) through `one`, `rounds` times,
/// sizes outer; the first failure (or a signal) ends the run and becomes
/// the shortfall.
fn by_size(
    options: &ThesisOptions,
    place: &Place,
    sizes: &[u64],
    mut one: impl FnMut(&Path, u64, &mut Samples) -> Result<()>,
) -> (Samples, Option<String>) {
    let mut samples = Samples::default();
    let failed = |why: String| match &place.shortfall {
        Some(before) => Some(format!("{before}; {why}")),
        None => Some(why),
    };
    for &mb in sizes {
        let name = format!("flexio-smack-{mb}M");
        let data = match DataFile::new(&place.dir, &name, mb * MIB) {
            Ok(data) => data,
            Err(e) => return (samples, failed(format!("writing {name}: {e}"))),
        };
        let mut ran = 0;
        while another_round(options, &samples, mb as f64, ran) {
            ran += 1;
            if options.stop.load(std::sync::atomic::Ordering::Relaxed) {
                return (samples, failed("stopped by a signal".into()));
            }
            if let Err(why) = one(&data.0, mb, &mut samples) {
                return (samples, failed(why.to_string()));
            }
        }
    }
    (samples, place.shortfall.clone())
}

/// Table 3 on files of `sizes` MiB: each read whole into memory by
/// single 512-byte sectors with a CPU copy, by 8 KiB `O_DIRECT` requests,
/// and buffered through the page cache in 512-byte reads (cold).
///
/// # Examples
/// ```no_run
/// use flexio_seeds::smack_bench::{uncached, SIZES_MB};
/// use flexio_seeds::thesis_bench::ThesisOptions;
/// let options = ThesisOptions {
///     dir: "/var/tmp".into(),
///     flexio: "flexio".into(),
///     quick: true,
///     most_rounds: 3,
///     stop: Default::default(),
/// };
/// let outcome = uncached(&options, &SIZES_MB);
/// assert!(outcome.shortfall.is_none(), "{:?}", outcome.shortfall);
/// ```
pub fn uncached(options: &ThesisOptions, sizes: &[u64]) -> ThesisOutcome {
    use uncached_series::*;
    let place = Place::new(options, "smack-uncached");
    let (samples, shortfall) = by_size(options, &place, sizes, |path, mb, samples| {
        let len = (mb * MIB) as usize;
        let x = mb as f64;
        let mut memory = read::memory(len, MULTI);
        let normal = place.averaged(len as u64, || {
            make_cold(path)?;
            let normal = read::single_sector(path, &mut memory.as_mut_slice()[..len])?;
            let timed = normal.timed;
            Ok([timed.wall_s, timed.busy_s, timed.blocked_s(), normal.copy_s])
        })?;
        samples.add_each(
            [NORMAL, NORMAL_BUSY, NORMAL_BLOCKED, NORMAL_COPY],
            x,
            normal,
        );
        let dma = place.averaged(len as u64, || {
            let dma = read::direct(path, MULTI, len, &mut memory)?;
            Ok([dma.wall_s, dma.blocked_s(), dma.busy_s])
        })?;
        samples.add_each(
            [DIRECT_MULTI, DIRECT_MULTI_BLOCKED, DIRECT_MULTI_BUSY],
            x,
            dma,
        );
        let [buffered] = place.averaged(len as u64, || {
            make_cold(path)?;
            let buffered = read::buffered(path, 512, &mut memory.as_mut_slice()[..len])?;
            Ok([buffered.wall_s])
        })?;
        samples.add(BUFFERED_512, x, buffered);
        Ok(())
    });
    ThesisOutcome {
        points: samples.points(),
        shortfall,
        setting: format!(
            "files on {}, each read whole into one buffer in memory: normal by one 512-byte \
             O_DIRECT request per sector into a bounce buffer and a memcpy, DMA by 8 KiB \
             O_DIRECT requests; cold by posix_fadvise(DONTNEED) before each; {}",
            place.setting,
            place.passes_said(sizes)
        ),
    }
}

/// One pass of `len` bytes through `cache` in 4 KiB reads, timed; and the
/// share of it the device served, in percent.
fn pass(cache: &BlockCache, path: &Path, len: u64) -> Result<(Timed, f64)> {
    let before = cache.stats().device_bytes_read;
    let timed = read::timed("a pass through the cache", len as usize, || {
        sequential_pass(cache, len)
            .map(|_| len as usize)
            .map_err(|e| Error::io("read through the cache", path, e))
    })?;
    let read = (cache.stats().device_bytes_read - before) as f64;
    Ok((timed, 100.0 * read / len as f64))
}

/// Tables 4-5 on files of `sizes` MiB: through a new, empty 16 MiB LRU
/// cache (cold), then again (warm), "normal" (each block by 512-byte
/// sectors with a CPU copy) and "DMA" (one request per block, the reader
/// blocked); beside it the cache off.
///
/// # Examples
/// ```no_run
/// use flexio_seeds::smack_bench::{cached, SIZES_MB};
/// use flexio_seeds::thesis_bench::ThesisOptions;
/// let options = ThesisOptions {
///     dir: "/var/tmp".into(),
///     flexio: "flexio".into(),
///     quick: true,
///     most_rounds: 3,
///     stop: Default::default(),
/// };
/// let outcome = cached(&options, &SIZES_MB);
/// assert!(outcome.shortfall.is_none(), "{:?}", outcome.shortfall);
/// ```
pub fn cached(options: &ThesisOptions, sizes: &[u64]) -> ThesisOutcome {
    use cached_series::*;
    let mut misses: Vec<(u64, f64)> = Vec::new();
    // Device requests per block of the cold passes: (normal, DMA).
    let mut requests = (f64::NAN, f64::NAN);
    let place = Place::new(options, "smack-cached");
    let (samples, shortfall) = by_size(options, &place, sizes, |path, mb, samples| {
        let (len, x) = (mb * MIB, mb as f64);
        for (mode, cold, warm) in [
            (ReadMode::Sectors { sector: 512 }, COLD_NORMAL, WARM_NORMAL),
            (ReadMode::SingleBlock, COLD_DMA, WARM_DMA),
        ] {
            let config = CacheConfig::new(CACHE_BYTES)
                .policy(PolicyName::Lru)
                .read_mode(mode)
                .flush_interval(None);
            let mut per_block = f64::NAN;
            let mut from_device = f64::NAN;
            // Each pass a new, empty cache read through, then read again.
            let [cold_s, cold_blocked_s, warm_s, warm_blocked_s] = place.averaged(len, || {
                let cache = BlockCache::open(path, config.clone())
                    .map_err(|e| Error::io("open a block cache on", path, cache_error(e)))?;
                let (first, _) = pass(&cache, path, len)?;
                per_block = cache.stats().device_read_requests as f64 / (len / 4096) as f64;
                let (again, again_from_device) = pass(&cache, path, len)?;
                from_device = again_from_device;
                Ok([
                    first.wall_s,
                    first.blocked_s(),
                    again.wall_s,
                    again.blocked_s(),
                ])
            })?;
            if cold == COLD_DMA {
                requests.1 = per_block;
            } else {
                requests.0 = per_block;
            }
            samples.add(cold, x, cold_s);
            samples.add(warm, x, warm_s);
            if cold == COLD_DMA {
                samples.add(COLD_DMA_BLOCKED, x, cold_blocked_s);
                samples.add(WARM_DMA_BLOCKED, x, warm_blocked_s);
                misses.retain(|(at, _)| *at != mb);
                misses.push((mb, from_device));
            }
        }
        let mut memory = read::memory(len as usize, 4096);
        let [off] = place.averaged(len, || {
            Ok([read::direct(path, 4096, len as usize, &mut memory)?.wall_s])
        })?;
        samples.add(CACHE_OFF, x, off);
        Ok(())
    });
    let misses: Vec<String> = misses
        .iter()
        .map(|(mb, percent)| format!("{mb} MiB {percent:.0}%"))
        .collect();
    ThesisOutcome {
        points: samples.points(),
        shortfall,
        setting: format!(
            "flexio-cache's BlockCache, 16 MiB of 4 KiB blocks, LRU, over O_DIRECT on {}; \
             normal reads each missing block as 512-byte requests copied from a bounce buffer \
             ({:.1} device requests per block in the last cold pass), DMA as one request per \
             block, no coalescing or read-ahead ({:.1}); share of the warm pass read from the \
             device again: {}; {}",
            place.setting,
            requests.0,
            requests.1,
            misses.join(", "),
            place.passes_said(sizes)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `why` is the file system refusing `O_DIRECT` (a tmpfs
    /// before Linux 6.6): the one reason these tests skip.
    fn refused_direct(why: &str) -> bool {
        why.contains("O_DIRECT") && why.contains("os error 22")
    }

    fn assert_every_cell(outcome: &ThesisOutcome, series: &[&str], sizes: &[u64]) {
        assert_eq!(outcome.shortfall, None);
        for name in series {
            for &mb in sizes {
                let point = outcome
                    .points
                    .iter()
                    .find(|p| p.series == *name && p.x == mb as f64);
                let point = point.unwrap_or_else(|| panic!("{name} at {mb} MiB missing"));
                assert!(point.y.is_finite() && point.y >= 0.0, "{name}: {}", point.y);
            }
        }
        assert_eq!(outcome.points.len(), series.len() * sizes.len());
    }

    #[test]
    fn a_size_gets_more_rounds_while_any_series_there_disagrees() {
        let options = ThesisOptions {
            most_rounds: 3,
            ..ThesisOptions::one_round_in(&std::env::temp_dir())
        };
        let mut samples = Samples::default();
        for (wall, busy) in [(1.0, 0.5), (1.1, 0.5), (0.9, 1.5)] {
            samples.add_each(["wall", "busy"], 1.0, [wall, busy]);
            samples.add("wall", 2.0, wall);
        }
        assert!(
            another_round(&options, &samples, 1.0, 3),
            "busy disagrees at 1"
        );
        assert!(!another_round(&options, &samples, 2.0, 3), "all agree at 2");
        for _ in 0..2 {
            samples.add_each(["wall", "busy"], 1.0, [1.0, 0.5]);
        }
        assert!(
            !another_round(&options, &samples, 1.0, 5),
            "two more at most"
        );
        let busy = samples
            .points()
            .into_iter()
            .find(|p| p.series == "busy")
            .unwrap();
        assert_eq!(busy.spread, Some((0.5, 0.5, 5)), "the odd round set aside");
    }

    #[test]
    fn table_3_has_every_series_at_every_size() {
        let dir = tempfile::tempdir().unwrap();
        let outcome = uncached(&ThesisOptions::one_round_in(dir.path()), &[1, 2]);
        if outcome.shortfall.as_deref().is_some_and(refused_direct) {
            eprintln!("skipped: {:?}", outcome.shortfall);
            return;
        }
        assert_every_cell(&outcome, &uncached_series::ALL, &[1, 2]);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn tables_4_5_have_every_series_and_a_file_over_the_cache_misses_warm() {
        let dir = tempfile::tempdir().unwrap();
        let outcome = cached(&ThesisOptions::one_round_in(dir.path()), &[1, 24]);
        if outcome.shortfall.as_deref().is_some_and(refused_direct) {
            eprintln!("skipped: {:?}", outcome.shortfall);
            return;
        }
        assert_every_cell(&outcome, &cached_series::ALL, &[1, 24]);
        // Normal reads a block by its eight sectors, DMA by one request.
        assert!(
            outcome.setting.contains("(8.0 device requests per block")
                && outcome
                    .setting
                    .contains("no coalescing or read-ahead (1.0)"),
            "{}",
            outcome.setting
        );
        // A sequential re-read through an LRU cache smaller than the file
        // misses every block; one that fits hits every block.
        assert!(
            outcome.setting.contains("1 MiB 0%") && outcome.setting.contains("24 MiB 100%"),
            "{}",
            outcome.setting
        );
    }
}
