//! Readers and writers on many threads through a small cache: every block
//! read is one whole version of that block (never half of two), and once
//! all are done every block holds its writer's last version, in the cache
//! and on disk. A reader that loaded a block from the device while a
//! writer dirtied, flushed and evicted it must not cache the stale copy.

use std::sync::atomic::{AtomicBool, Ordering};

use flexio_cache::policy::PolicyName;
use flexio_cache::{BlockCache, CacheConfig};

const BLOCK: usize = 4096;
const BLOCKS: u64 = 64;
const WRITERS: u64 = 4;

/// Block `block` at version `version`: every 8 bytes say (block, version).
fn version_bytes(block: u64, version: u32) -> Vec<u8> {
    let word = (block << 32) | u64::from(version);
    word.to_le_bytes().repeat(BLOCK / 8)
}

fn decode(block: &[u8]) -> Option<u64> {
    let first = &block[..8];
    block
        .chunks(8)
        .all(|c| c == first)
        .then(|| u64::from_le_bytes(first.try_into().unwrap()))
}

#[test]
fn cache_single_block_hits_without_the_lock_are_never_torn_while_writers_refill_frames() {
    // Reads within one block of CLOCK, SIEVE and S3-FIFO caches are served
    // without the shard's lock (a seqlock read); writers and evictions
    // refill the frames they read from all along.
    for policy in [PolicyName::Clock, PolicyName::Sieve, PolicyName::S3Fifo] {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let path = dir.path().join("data");
        let initial: Vec<u8> = (0..BLOCKS).flat_map(|b| version_bytes(b, 0)).collect();
        std::fs::write(&path, initial).unwrap();
        let config = CacheConfig::new(16 * BLOCK as u64)
            .policy(policy)
            .flush_interval(None);
        let cache = BlockCache::open(&path, config).unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for reader in 0..3u64 {
                let (cache, done) = (&cache, &done);
                scope.spawn(move || {
                    let mut buf = vec![0u8; BLOCK];
                    let mut i = reader;
                    while !done.load(Ordering::Relaxed) {
                        i = i
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        // Mostly a hot quarter, so most reads hit.
                        let block = if i >> 62 == 0 {
                            (i >> 33) % BLOCKS
                        } else {
                            (i >> 33) % 12
                        };
                        cache.read_at(&mut buf, block * BLOCK as u64).unwrap();
                        let word = decode(&buf).expect("a torn block");
                        assert_eq!(word >> 32, block, "{policy}: wrong block");
                    }
                });
            }
            let writer = scope.spawn(|| {
                // The hot blocks rewritten in place over and over (a torn
                // copy shows as two versions in one block), and now and
                // then a cold one, whose eviction hands a frame over.
                for round in 1..=3000u32 {
                    let block = u64::from(round) % 12;
                    cache
                        .write_at(&version_bytes(block, round), block * BLOCK as u64)
                        .unwrap();
                    if round % 8 == 0 {
                        let cold = 12 + u64::from(round) % (BLOCKS - 12);
                        cache
                            .write_at(&version_bytes(cold, round), cold * BLOCK as u64)
                            .unwrap();
                    }
                }
            });
            writer.join().unwrap();
            done.store(true, Ordering::Relaxed);
        });
        assert!(cache.stats().hits > 0);
    }
}

#[test]
fn cache_concurrent_readers_and_writers_never_see_torn_or_stale_blocks() {
    for policy in [PolicyName::Lru, PolicyName::S3Fifo, PolicyName::Arc] {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let path = dir.path().join("data");
        let initial: Vec<u8> = (0..BLOCKS).flat_map(|b| version_bytes(b, 0)).collect();
        std::fs::write(&path, initial).unwrap();
        // 8 frames for 64 blocks, in shards of 1: constant eviction.
        let config = CacheConfig::new(8 * BLOCK as u64)
            .policy(policy)
            .flush_interval(Some(std::time::Duration::from_millis(5)));
        let cache = BlockCache::open(&path, config).unwrap();
        let done = AtomicBool::new(false);
        let last_versions: Vec<Vec<u32>> = std::thread::scope(|scope| {
            for reader in 0..3u64 {
                let (cache, done) = (&cache, &done);
                scope.spawn(move || {
                    let mut buf = vec![0u8; 3 * BLOCK];
                    let mut i = reader;
                    while !done.load(Ordering::Relaxed) {
                        i = i
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let block = (i >> 33) % (BLOCKS - 2);
                        cache.read_at(&mut buf, block * BLOCK as u64).unwrap();
                        for (k, chunk) in buf.chunks(BLOCK).enumerate() {
                            let word = decode(chunk).expect("a torn block");
                            assert_eq!(word >> 32, block + k as u64, "{policy}: wrong block");
                        }
                    }
                });
            }
            let writers: Vec<_> = (0..WRITERS)
                .map(|writer| {
                    let cache = &cache;
                    scope.spawn(move || {
                        // Writer w owns blocks b with b % WRITERS == w.
                        let mut versions = vec![0u32; BLOCKS as usize];
                        for round in 1..=150u32 {
                            for block in (writer..BLOCKS).step_by(WRITERS as usize * 3) {
                                let block = (block + u64::from(round) * WRITERS) % BLOCKS;
                                versions[block as usize] = round;
                                cache
                                    .write_at(&version_bytes(block, round), block * BLOCK as u64)
                                    .unwrap();
                            }
                            if round % 50 == 0 {
                                cache.flush().unwrap();
                            }
                        }
                        versions
                    })
                })
                .collect();
            let versions = writers.into_iter().map(|w| w.join().unwrap()).collect();
            done.store(true, Ordering::Relaxed);
            versions
        });
        let expected: Vec<u8> = (0..BLOCKS)
            .flat_map(|b| {
                let version = last_versions[(b % WRITERS) as usize][b as usize];
                version_bytes(b, version)
            })
            .collect();
        let mut through_cache = vec![0u8; expected.len()];
        cache.read_at(&mut through_cache, 0).unwrap();
        assert!(
            through_cache == expected,
            "{policy}: the cache holds a stale block"
        );
        drop(cache);
        assert!(
            std::fs::read(&path).unwrap() == expected,
            "{policy}: the file holds a stale block"
        );
    }
}
