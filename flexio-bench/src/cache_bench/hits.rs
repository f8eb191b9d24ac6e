//! Hit costs on one thread: 4 KiB hits copied out against `memcpy` of
//! 4 KiB from the same offsets of an equal buffer, and lookups per second
//! when a hit returns a reference instead of a copy.
//!
//! Both copies read from page-aligned blocks (the cache's frames are, for
//! O_DIRECT; the yardstick's source is a vector of [`Page`]s) into one
//! page-aligned destination. With heap buffers the yardstick's alignment
//! changed from run to run with the allocator, and its speed with it (up
//! to 8% on this machine), so the ratio measured the heap as much as the
//! cache.

use std::fs::File;
use std::hint::black_box;
use std::io::{self, Read};
use std::time::{Duration, Instant};

use flexio_cache::trace::Generator;
use flexio_cache::{BlockCache, CacheConfig};

use super::{
    cache_error, sequential_pass, CacheBenchOptions, DataFile, HitFigures, Spread, BLOCK, MIB,
};

/// How long each timed hit loop runs.
const HIT_WINDOW: Duration = Duration::from_millis(300);

/// Copy-out and memcpy alternate in this many short windows per round, and
/// each keeps its fastest: a copy of 4 KiB takes about 100 ns, so on a
/// machine shared with other work one long window measures the others as
/// much as the copy, while the fastest of several short ones, taken side
/// by side, compares the two copies undisturbed.
const PAIRED_WINDOWS: usize = 10;

/// One short window of the pairs.
const PAIRED_WINDOW: Duration = Duration::from_millis(30);

/// One block on a page boundary, as the cache's frames are.
#[derive(Clone)]
#[repr(C, align(4096))]
struct Page([u8; BLOCK]);

/// Reads `blocks` blocks of `path` into page-aligned memory.
fn read_pages(path: &std::path::Path, blocks: u64) -> io::Result<Vec<Page>> {
    let mut file = File::open(path)?;
    let mut pages = vec![Page([0; BLOCK]); blocks as usize];
    for page in &mut pages {
        file.read_exact(&mut page.0)?;
    }
    Ok(pages)
}

pub(crate) fn hit_figures(options: &CacheBenchOptions, runs: u32) -> io::Result<HitFigures> {
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
    let source = read_pages(&data.0, blocks)?;
    let mut page = Box::new(Page([0; BLOCK]));
    let buf = &mut page.0;
    let (mut copy_out, mut memcpy, mut lookups) = (Vec::new(), Vec::new(), Vec::new());
    let mut ratios = Vec::new();
    for _ in 0..=runs {
        let (mut best_copy_out, mut best_memcpy) = (0.0f64, 0.0f64);
        for _ in 0..PAIRED_WINDOWS {
            let rate = timed_for(PAIRED_WINDOW, |i| {
                let block = offsets[i % offsets.len()];
                cache
                    .read_at(buf, block * BLOCK as u64)
                    .expect("a resident block");
                black_box(&*buf);
            });
            best_copy_out = best_copy_out.max(rate * BLOCK as f64 / MIB as f64);
            let rate = timed_for(PAIRED_WINDOW, |i| {
                let block = offsets[i % offsets.len()] as usize;
                buf.copy_from_slice(black_box(&source[block].0));
                black_box(&*buf);
            });
            best_memcpy = best_memcpy.max(rate * BLOCK as f64 / MIB as f64);
        }
        copy_out.push(best_copy_out);
        memcpy.push(best_memcpy);
        ratios.push(best_copy_out / best_memcpy);
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
        copy_out_over_memcpy: Spread::of(&ratios[1..]),
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
fn timed(step: impl FnMut(usize)) -> f64 {
    timed_for(HIT_WINDOW, step)
}

/// Runs `step(i)` for i = 0, 1, … for about `window`; returns steps per
/// second.
fn timed_for(window: Duration, mut step: impl FnMut(usize)) -> f64 {
    let start = Instant::now();
    let mut done = 0usize;
    loop {
        for _ in 0..4096 {
            step(done);
            done += 1;
        }
        let elapsed = start.elapsed();
        if elapsed >= window {
            return done as f64 / elapsed.as_secs_f64();
        }
    }
}
