//! The cache's read path over a real file with O_DIRECT: hits, misses,
//! coalesced multi-block reads with read-ahead against single-block reads,
//! borrowed blocks, the end of the file.

use std::path::{Path, PathBuf};

use flexio_cache::policy::PolicyName;
use flexio_cache::{BlockCache, CacheConfig, ReadMode};

/// A file of `len` bytes where byte `i` is `(i * 7 + i / 4096) % 251`.
fn pattern_file(dir: &Path, len: usize) -> (PathBuf, Vec<u8>) {
    let bytes: Vec<u8> = (0..len).map(|i| ((i * 7 + i / 4096) % 251) as u8).collect();
    let path = dir.join("data");
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

fn temp_dir() -> tempfile::TempDir {
    // On the target's file system (O_DIRECT works there), not /tmp, which
    // may be a tmpfs.
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[test]
fn cache_reads_return_the_files_bytes_at_any_offset_and_length() {
    let dir = temp_dir();
    let (path, bytes) = pattern_file(dir.path(), 300_000);
    let cache = BlockCache::open(&path, CacheConfig::new(64 << 10).flush_interval(None)).unwrap();
    for (offset, len) in [
        (0, 1),
        (4095, 2),
        (10_000, 50_000),
        (299_990, 100),
        (0, 300_000),
    ] {
        let mut buf = vec![0u8; len];
        let n = cache.read_at(&mut buf, offset as u64).unwrap();
        let expected = &bytes[offset..(offset + len).min(bytes.len())];
        assert_eq!(n, expected.len());
        assert_eq!(&buf[..n], expected, "at {offset}");
    }
    assert_eq!(cache.read_at(&mut [0u8; 10], 300_000).unwrap(), 0);
    let stats = cache.stats();
    assert!(
        stats.evictions > 0,
        "a 300 kB file through a 64 KiB cache evicts"
    );
}

#[test]
fn cache_second_read_hits_without_touching_the_device() {
    let dir = temp_dir();
    let (path, bytes) = pattern_file(dir.path(), 1 << 20);
    let cache = BlockCache::open(&path, CacheConfig::new(2 << 20).flush_interval(None)).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    cache.read_at(&mut buf, 0).unwrap();
    let cold = cache.stats();
    assert_eq!(cold.misses + cold.hits, 256 + cold.hits);
    buf.fill(0);
    cache.read_at(&mut buf, 0).unwrap();
    assert_eq!(buf, bytes);
    let warm = cache.stats();
    assert_eq!(warm.device_read_requests, cold.device_read_requests);
    assert_eq!(warm.hits - cold.hits, 256);
    let block = cache.block(3).unwrap();
    assert_eq!(&block[..], &bytes[3 * 4096..4 * 4096]);
}

#[test]
fn cache_multi_block_coalesces_and_reads_ahead_where_single_block_does_not() {
    let dir = temp_dir();
    let (path, bytes) = pattern_file(dir.path(), 4 << 20);
    let read_sequentially = |cache: &BlockCache| {
        let mut buf = [0u8; 4096];
        for block in 0..1024u64 {
            cache.read_at(&mut buf, block * 4096).unwrap();
            assert_eq!(&buf[..], &bytes[block as usize * 4096..][..4096]);
        }
        cache.stats()
    };
    let single = BlockCache::open(
        &path,
        CacheConfig::new(8 << 20)
            .read_mode(ReadMode::SingleBlock)
            .flush_interval(None),
    )
    .unwrap();
    let single = read_sequentially(&single);
    assert_eq!(single.device_read_requests, 1024, "one request per block");
    assert_eq!(single.readahead_blocks, 0);

    let multi = BlockCache::open(
        &path,
        CacheConfig::new(8 << 20)
            .read_mode(ReadMode::MultiBlock { max_blocks: 64 })
            .readahead_blocks(256)
            .flush_interval(None),
    )
    .unwrap();
    let multi = read_sequentially(&multi);
    assert_eq!(multi.device_bytes_read, 4 << 20, "every block read once");
    assert!(multi.readahead_blocks > 900, "{multi:?}");
    assert!(
        multi.device_read_requests <= 1024 / 64 + 8,
        "coalesced into requests of up to 64 blocks: {multi:?}"
    );
    // A single read of many missing blocks is coalesced too.
    let cache = BlockCache::open(&path, CacheConfig::new(8 << 20).flush_interval(None)).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    cache.read_at(&mut buf, 0).unwrap();
    assert_eq!(cache.stats().device_read_requests, 4);
    assert_eq!(
        cache.stats().io_uring_refused,
        None,
        "io_uring ran the batch"
    );
}

#[test]
fn cache_sector_reads_fill_each_block_by_sector_requests_without_read_ahead() {
    let dir = temp_dir();
    // Not a whole number of blocks: the last block is short, its tail
    // zeros, its last sector short too.
    let len = (64 << 10) + 700;
    let (path, bytes) = pattern_file(dir.path(), len);
    let config = CacheConfig::new(1 << 20)
        .read_mode(ReadMode::Sectors { sector: 512 })
        .readahead_blocks(256)
        .flush_interval(None);
    let cache = BlockCache::open(&path, config.clone()).unwrap();
    let mut buf = vec![0u8; 4096];
    for block in 0..17u64 {
        let n = cache.read_at(&mut buf, block * 4096).unwrap();
        let want = &bytes[block as usize * 4096..][..n];
        assert_eq!(&buf[..n], want, "block {block}");
    }
    let stats = cache.stats();
    // Sixteen whole blocks of eight sectors, then 700 bytes: two requests.
    assert_eq!(stats.device_read_requests, 16 * 8 + 2, "{stats:?}");
    assert_eq!(stats.device_bytes_read, len as u64);
    assert_eq!(stats.readahead_blocks, 0);
    // One read spanning blocks reads each missing block by its sectors.
    let cache = BlockCache::open(&path, config).unwrap();
    let mut whole = vec![0u8; len];
    assert_eq!(cache.read_at(&mut whole, 0).unwrap(), len);
    assert_eq!(whole, bytes);
    assert_eq!(cache.stats().device_read_requests, 16 * 8 + 2);
}

#[test]
fn cache_refuses_a_sector_that_is_not_a_power_of_two_within_the_block() {
    let dir = temp_dir();
    let (path, _) = pattern_file(dir.path(), 8192);
    for sector in [0, 256, 1000, 8192] {
        let config = CacheConfig::new(1 << 20).read_mode(ReadMode::Sectors { sector });
        let refused = BlockCache::open(&path, config).err().map(|e| e.to_string());
        assert!(refused.is_some_and(|m| m.contains("sector")), "{sector}");
    }
}

#[test]
fn cache_block_ref_at_the_end_of_the_file_is_short_and_past_it_an_error() {
    let dir = temp_dir();
    let (path, bytes) = pattern_file(dir.path(), 10_000);
    for policy in PolicyName::ALL {
        let config = CacheConfig::new(1 << 20)
            .policy(policy)
            .flush_interval(None);
        let cache = BlockCache::open(&path, config).unwrap();
        assert_eq!(&cache.block(2).unwrap()[..], &bytes[8192..]);
        assert!(cache.block(3).is_err());
    }
}

#[test]
fn cache_refuses_bad_block_sizes_and_empty_capacities() {
    let dir = temp_dir();
    let (path, _) = pattern_file(dir.path(), 100);
    assert!(BlockCache::open(&path, CacheConfig::new(1 << 20).block_size(1000)).is_err());
    assert!(BlockCache::open(&path, CacheConfig::new(100)).is_err());
    let missing = BlockCache::open(&dir.path().join("nope"), CacheConfig::new(1 << 20));
    let message = missing.err().unwrap().to_string();
    assert!(message.contains("nope"), "{message}");
}

#[test]
fn cache_read_ahead_does_not_make_a_scan_look_popular() {
    // Regression: a read-ahead block counted its insertion as one access and
    // the scanner's read as a second, so ARC moved every scanned block to
    // its frequency list (and SIEVE marked it visited) and the scan flushed
    // the hot set after all.
    let dir = temp_dir();
    let (path, _) = pattern_file(dir.path(), 2 << 20);
    for policy in [PolicyName::Arc, PolicyName::Sieve, PolicyName::S3Fifo] {
        let config = CacheConfig::new(64 * 4096)
            .policy(policy)
            .flush_interval(None);
        let cache = BlockCache::open(&path, config).unwrap();
        let mut buf = [0u8; 4096];
        for _ in 0..3 {
            for block in 0..8u64 {
                cache.read_at(&mut buf, block * 4096).unwrap();
            }
        }
        for block in 100..400u64 {
            cache.read_at(&mut buf, block * 4096).unwrap();
        }
        assert!(
            cache.stats().readahead_blocks > 200,
            "{policy}: the scan was read ahead"
        );
        let kept = (0..8u64).filter(|&b| cache.is_resident(b)).count();
        assert_eq!(kept, 8, "{policy}: the scan evicted the hot set");
    }
}
