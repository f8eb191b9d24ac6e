//! `kill -9` during write-back: a child process (this test binary run
//! again, with an environment variable selecting the child's role) writes
//! every block of a file with a new version each round through a cache
//! smaller than the file, flushes, and says so on stdout; the parent kills
//! it with SIGKILL at a random moment after some flushes. Then every block
//! must be whole — one (block, version) pattern across all its bytes, never
//! a mix — and no older than the last round the child said it flushed.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use flexio_cache::{BlockCache, CacheConfig};

const CHILD_ENV: &str = "FLEXIO_CACHE_CRASH_CHILD";
const BLOCK: usize = 4096;
const BLOCKS: u64 = 1024;

fn version_bytes(block: u64, version: u32) -> Vec<u8> {
    let word = (block << 32) | u64::from(version);
    word.to_le_bytes().repeat(BLOCK / 8)
}

/// The child: rewrite every block each round, flush, acknowledge.
fn child(path: &Path) -> ! {
    let config =
        CacheConfig::new(256 * BLOCK as u64).flush_interval(Some(Duration::from_millis(3)));
    let cache = BlockCache::open(path, config).unwrap();
    for round in 1..=100_000u32 {
        for first in (0..BLOCKS).step_by(16) {
            let data: Vec<u8> = (first..first + 16)
                .flat_map(|b| version_bytes(b, round))
                .collect();
            cache.write_at(&data, first * BLOCK as u64).unwrap();
        }
        cache.flush().unwrap();
        println!("flushed {round}");
    }
    std::process::exit(0)
}

#[test]
fn cache_kill_during_write_back_loses_no_flushed_byte_and_tears_no_block() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&path));
    }
    for (attempt, delay_ms) in [0u64, 3, 7, 13].into_iter().enumerate() {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let path = dir.path().join("data");
        let initial: Vec<u8> = (0..BLOCKS).flat_map(|b| version_bytes(b, 0)).collect();
        std::fs::write(&path, initial).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &flexio_testkit::test_name(
                    module_path!(),
                    "cache_kill_during_write_back_loses_no_flushed_byte_and_tears_no_block",
                ),
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Wait for a couple of acknowledged rounds, then kill mid-round.
        let mut acknowledged = 0u32;
        for line in lines.by_ref() {
            if let Some(round) = line.unwrap().strip_prefix("flushed ") {
                acknowledged = round.parse().unwrap();
                if acknowledged >= 2 + attempt as u32 {
                    break;
                }
            }
        }
        assert!(acknowledged >= 2, "the child never flushed");
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
                               // Acknowledgements printed before the kill count too.
        for line in lines {
            if let Some(round) = line.unwrap().strip_prefix("flushed ") {
                acknowledged = acknowledged.max(round.parse().unwrap());
            }
        }
        child.wait().unwrap();

        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() >= BLOCKS as usize * BLOCK);
        let mut newer = 0;
        for (block, chunk) in bytes.chunks(BLOCK).take(BLOCKS as usize).enumerate() {
            let first = &chunk[..8];
            assert!(chunk.chunks(8).all(|w| w == first), "block {block} is torn");
            let word = u64::from_le_bytes(first.try_into().unwrap());
            assert_eq!(
                word >> 32,
                block as u64,
                "block {block} holds another block"
            );
            let version = word as u32;
            assert!(
                version == acknowledged || version == acknowledged + 1,
                "block {block}: version {version}, but round {acknowledged} was flushed"
            );
            newer += usize::from(version > acknowledged);
        }
        eprintln!(
            "attempt {attempt}: round {acknowledged} flushed, {newer} blocks of the next on disk"
        );
    }
}
