//! `FileCache`: one cache in front of many files, as `flexio serve --cache`
//! uses it. Bytes are exactly the files' at any offset and length; a file
//! that changes is not served from its old blocks; a scan of a large file
//! does not evict a small hot file's blocks.

use std::fs::File;
use std::path::Path;

use flexio_cache::policy::PolicyName;
use flexio_cache::{CacheConfig, FileCache};

fn temp_dir() -> tempfile::TempDir {
    // On the target's file system (O_DIRECT works there), not /tmp, which
    // may be a tmpfs.
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Writes `len` bytes where byte `i` is `(i * step + i / 4096) % 251`.
fn pattern(dir: &Path, name: &str, len: usize, step: usize) -> (File, Vec<u8>) {
    let bytes: Vec<u8> = (0..len)
        .map(|i| ((i * step + i / 4096) % 251) as u8)
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, &bytes).unwrap();
    (File::open(&path).unwrap(), bytes)
}

#[test]
fn file_cache_reads_two_files_exactly_at_any_offset_and_length() {
    let dir = temp_dir();
    let (a, a_bytes) = pattern(dir.path(), "a", 300_001, 7);
    let (b, b_bytes) = pattern(dir.path(), "b", 70_000, 13);
    let cache = FileCache::new(CacheConfig::new(128 << 10)).unwrap();
    let (ca, cb) = (cache.open(&a, "a").unwrap(), cache.open(&b, "b").unwrap());
    assert_eq!((ca.len(), cb.len()), (300_001, 70_000));
    for round in 0..2 {
        for (offset, len) in [
            (0, 1),
            (4095, 2),
            (4096, 4096),
            (10_000, 50_000),
            (299_990, 100),
            (0, 300_001),
            (65_536, 4_096),
        ] {
            let mut buf = vec![0u8; len];
            let n = ca.read_at(&mut buf, offset as u64).unwrap();
            let expected = &a_bytes[offset..(offset + len).min(a_bytes.len())];
            assert_eq!(&buf[..n], expected, "a at {offset}+{len}, round {round}");
            let n = cb.read_at(&mut buf, offset as u64).unwrap();
            let end = (offset + len).min(b_bytes.len());
            let expected = b_bytes.get(offset..end).unwrap_or_default();
            assert_eq!(&buf[..n], expected, "b at {offset}+{len}, round {round}");
        }
    }
    assert_eq!(ca.read_at(&mut [0u8; 10], 300_001).unwrap(), 0);
    let stats = cache.stats();
    assert!(stats.hits > 0 && stats.misses > 0, "{stats:?}");
}

#[test]
fn file_cache_does_not_serve_a_changed_file_from_its_old_blocks() {
    let dir = temp_dir();
    let (file, _) = pattern(dir.path(), "f", 8192, 3);
    let cache = FileCache::new(CacheConfig::new(1 << 20)).unwrap();
    let mut buf = [0u8; 8192];
    cache
        .open(&file, "f")
        .unwrap()
        .read_at(&mut buf, 0)
        .unwrap();
    // Same length, new bytes, a later modification time.
    std::fs::write(dir.path().join("f"), [9u8; 8192]).unwrap();
    let times = std::fs::FileTimes::new()
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5));
    File::options()
        .write(true)
        .open(dir.path().join("f"))
        .unwrap()
        .set_times(times)
        .unwrap();
    let cached = cache.open(&file, "f").unwrap();
    cached.read_at(&mut buf, 0).unwrap();
    assert_eq!(buf, [9u8; 8192]);
}

#[test]
fn file_cache_keeps_a_hot_files_blocks_through_a_scan_of_a_large_file() {
    let dir = temp_dir();
    // A 64 KiB hot file and a scanned file 8 times a 1 MiB cache.
    let (hot, hot_bytes) = pattern(dir.path(), "hot", 64 << 10, 5);
    let (big, _) = pattern(dir.path(), "big", 8 << 20, 11);
    let cache = FileCache::new(CacheConfig::new(1 << 20).policy(PolicyName::S3Fifo)).unwrap();
    let hot = cache.open(&hot, "hot").unwrap();
    let big = cache.open(&big, "big").unwrap();
    let mut block = [0u8; 4096];
    // The hot set is read a few times first, as a server's popular file is.
    for _ in 0..3 {
        for offset in (0..64 << 10).step_by(4096) {
            hot.read_at(&mut block, offset).unwrap();
        }
    }
    let mut chunk = vec![0u8; 256 << 10];
    for (i, offset) in (0..8u64 << 20).step_by(256 << 10).enumerate() {
        big.read_at(&mut chunk, offset).unwrap();
        // Hot reads go on meanwhile.
        let at = (i as u64 * 4096) % (64 << 10);
        hot.read_at(&mut block, at).unwrap();
        assert_eq!(block[..], hot_bytes[at as usize..at as usize + 4096]);
    }
    let before = cache.stats();
    for offset in (0..64 << 10).step_by(4096) {
        hot.read_at(&mut block, offset).unwrap();
    }
    let after = cache.stats();
    assert_eq!(
        after.misses, before.misses,
        "after the scan every hot block still hits: {after:?}"
    );
    assert_eq!(after.hits - before.hits, 16);
    assert!(after.evictions > 0, "the scan did fill the cache");
}

/// `cp -p backup f` over a cached file: same inode, same size, and the
/// modification time put back; only the change time moves. The cache
/// must see it and read the new bytes.
#[test]
fn file_cache_sees_a_rewrite_in_place_that_puts_the_mtime_back() {
    use std::io::{Seek, SeekFrom, Write};
    let dir = temp_dir();
    let (file, old) = pattern(dir.path(), "f", 64 << 10, 7);
    let cache = FileCache::new(CacheConfig::new(1 << 20)).unwrap();
    let mut buf = vec![0u8; old.len()];
    cache
        .open(&file, "f")
        .unwrap()
        .read_at(&mut buf, 0)
        .unwrap();
    assert_eq!(buf, old);
    let path = dir.path().join("f");
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let new: Vec<u8> = old.iter().map(|b| b ^ 0x5a).collect();
    let mut writer = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    writer.seek(SeekFrom::Start(0)).unwrap();
    writer.write_all(&new).unwrap();
    writer
        .set_times(std::fs::FileTimes::new().set_modified(modified))
        .unwrap();
    drop(writer);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
    let file = File::open(&path).unwrap();
    cache
        .open(&file, "f")
        .unwrap()
        .read_at(&mut buf, 0)
        .unwrap();
    assert!(buf == new, "the cache served the file's old bytes");
}
