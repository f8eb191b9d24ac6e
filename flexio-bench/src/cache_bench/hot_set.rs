//! The hot-set experiment: readers draw blocks from a zipf hot set while
//! one reader scans a region four times the cache; the hot readers' hit
//! ratio with the scan against without it, per policy.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use flexio_cache::policy::PolicyName;
use flexio_cache::trace::Generator;
use flexio_cache::{BlockCache, CacheConfig};

use super::{cache_error, CacheBenchOptions, DataFile, HotSetRow, BLOCK};

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
    pub(crate) fn of(options: &CacheBenchOptions) -> HotSetShape {
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

    pub(crate) fn file_bytes(&self) -> u64 {
        (self.hot_blocks + self.scan_blocks) * BLOCK as u64
    }

    pub(crate) fn draws(&self) -> Vec<Vec<u64>> {
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

pub(crate) fn hot_set(
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
