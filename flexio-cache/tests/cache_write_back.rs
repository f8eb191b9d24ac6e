//! When dirty blocks reach the device: the background flusher after its
//! interval, eviction, `flush()`, drop — and only whole blocks, coalesced.

use std::time::{Duration, Instant};

use flexio_cache::{BlockCache, CacheConfig};

fn temp_file(len: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, vec![0u8; len]).unwrap();
    (dir, path)
}

#[test]
fn cache_flusher_writes_dirty_blocks_back_after_its_interval() {
    let (_dir, path) = temp_file(1 << 20);
    let config = CacheConfig::new(1 << 20).flush_interval(Some(Duration::from_millis(50)));
    let cache = BlockCache::open(&path, config).unwrap();
    cache.write_at(&[9u8; 10_000], 4096).unwrap();
    assert_eq!(cache.stats().dirty_blocks, 3);
    assert_eq!(
        std::fs::read(&path).unwrap()[4096],
        0,
        "nothing written yet"
    );
    // Bounded wait: the flusher runs every 50 ms.
    let deadline = Instant::now() + Duration::from_secs(10);
    while cache.stats().dirty_blocks > 0 {
        assert!(Instant::now() < deadline, "the flusher never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    let on_disk = std::fs::read(&path).unwrap();
    assert!(on_disk[4096..14_096].iter().all(|&b| b == 9));
    let stats = cache.stats();
    assert_eq!(stats.device_bytes_written, 3 * 4096, "whole blocks only");
    assert_eq!(
        stats.device_write_requests, 1,
        "three adjacent blocks, one request"
    );
}

#[test]
fn cache_without_a_flusher_writes_back_on_eviction_flush_and_drop() {
    let (_dir, path) = temp_file(1 << 20);
    let config = CacheConfig::new(4 * 4096).flush_interval(None);
    let cache = BlockCache::open(&path, config).unwrap();
    for block in 0..6u64 {
        cache
            .write_at(&[block as u8 + 1; 4096], block * 4096)
            .unwrap();
    }
    let stats = cache.stats();
    assert_eq!(
        stats.eviction_writebacks, 2,
        "two dirty victims written back"
    );
    assert_eq!(stats.dirty_blocks, 4);
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(on_disk[0], 1);
    assert_eq!(on_disk[4096], 2);
    assert_eq!(on_disk[2 * 4096], 0, "still only in the cache");
    cache.write_at(&[7u8; 100], 3 * 4096).unwrap();
    cache.flush().unwrap();
    assert_eq!(cache.stats().dirty_blocks, 0);
    assert_eq!(std::fs::read(&path).unwrap()[3 * 4096], 7);
    cache.write_at(&[8u8; 100], 5 * 4096).unwrap();
    drop(cache);
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(on_disk[5 * 4096], 8, "drop wrote the last dirty block");
    assert_eq!(on_disk.len(), 1 << 20);
}

#[test]
fn cache_writes_past_the_end_grow_the_file_to_the_byte() {
    let (_dir, path) = temp_file(5000);
    let cache = BlockCache::open(&path, CacheConfig::new(1 << 20).flush_interval(None)).unwrap();
    cache.write_at(b"tail", 20_000).unwrap();
    assert_eq!(cache.len(), 20_004);
    cache.flush().unwrap();
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(
        on_disk.len(),
        20_004,
        "whole-block write-back cut back to the length"
    );
    assert_eq!(&on_disk[20_000..], b"tail");
    assert!(on_disk[5000..20_000].iter().all(|&b| b == 0));
}
