//! The hit path alone, for a profiler: warms a cache with half its
//! capacity, then copies out 4 KiB hits at uniformly drawn blocks in
//! `hits_copied_out`, and copies 4 KiB between two buffers at the same
//! offsets in `memcpy_alone`, each `N` times (first argument, default
//! 1 000 000) in 20 interleaved rounds; prints the fastest round of each
//! (the least disturbed on a busy machine). Instructions per hit, the
//! same on a busy machine as on a quiet one (but `rep movsb` counts one
//! per byte):
//!
//! ```text
//! cargo build --release -p flexio-cache --example hit_path
//! valgrind --tool=callgrind --toggle-collect='*hits_copied_out*' \
//!     target/release/examples/hit_path 100000
//! valgrind --tool=callgrind --toggle-collect='*memcpy_alone*' \
//!     target/release/examples/hit_path 100000
//! ```
//!
//! (the "Collected" total over 100 000 is the instructions per step). The
//! bandwidth figure the issue sets a target for is the bench's:
//! `flexio cache bench --parts hits`.

use std::hint::black_box;
use std::time::Instant;

use flexio_cache::{BlockCache, CacheConfig};

const BLOCK: usize = 4096;
const CACHE: u64 = 16 << 20;

/// A reproducible uniform draw of block numbers below `blocks`.
fn draws(blocks: u64, count: usize) -> Vec<u64> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % blocks
        })
        .collect()
}

#[inline(never)]
fn hits_copied_out(cache: &BlockCache, blocks: &[u64], steps: usize, buf: &mut [u8]) {
    for i in 0..steps {
        let block = blocks[i % blocks.len()];
        cache
            .read_at(buf, block * BLOCK as u64)
            .expect("a resident block");
        black_box(&buf);
    }
}

#[inline(never)]
fn memcpy_alone(source: &[u8], blocks: &[u64], steps: usize, buf: &mut [u8]) {
    for i in 0..steps {
        let at = blocks[i % blocks.len()] as usize * BLOCK;
        buf.copy_from_slice(black_box(&source[at..at + BLOCK]));
        black_box(&buf);
    }
}

fn main() {
    let steps: usize = std::env::args()
        .nth(1)
        .map_or(1_000_000, |n| n.parse().expect("a count"));
    let dir = tempfile::tempdir_in(".").expect("a temporary directory here");
    let path = dir.path().join("data");
    let resident = CACHE / 2;
    let source: Vec<u8> = (0..resident).map(|i| (i * 131 % 251) as u8).collect();
    std::fs::write(&path, &source).expect("write the data");
    let cache = BlockCache::open(&path, CacheConfig::new(CACHE).flush_interval(None))
        .expect("open the cache");
    let mut buf = vec![0u8; BLOCK];
    for offset in (0..resident).step_by(BLOCK) {
        cache.read_at(&mut buf, offset).expect("warm");
    }
    let blocks = draws(resident / BLOCK as u64, 1 << 16);
    let rounds = 20;
    let per_round = steps.div_ceil(rounds);
    let (mut hits, mut memcpy) = (f64::MAX, f64::MAX);
    for _ in 0..rounds {
        let start = Instant::now();
        hits_copied_out(&cache, &blocks, per_round, &mut buf);
        hits = hits.min(start.elapsed().as_secs_f64());
        let start = Instant::now();
        memcpy_alone(&source, &blocks, per_round, &mut buf);
        memcpy = memcpy.min(start.elapsed().as_secs_f64());
    }
    let ns = |seconds: f64| seconds * 1e9 / per_round as f64;
    println!(
        "4 KiB hit copied out {:.1} ns, memcpy {:.1} ns (fastest of {rounds} rounds of {per_round}): {:.2}x",
        ns(hits),
        ns(memcpy),
        memcpy / hits
    );
}
