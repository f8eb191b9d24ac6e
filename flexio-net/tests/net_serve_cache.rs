//! `flexio serve --cache`: bodies read through the block cache over
//! O_DIRECT are the files' bytes, whole, in ranges and in multipart
//! answers; and a client scanning a large file does not evict the blocks
//! other clients keep reading (the cache's own counters show it).

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::{pattern, RawClient};
use flexio_cache::policy::PolicyName;
use flexio_cache::{CacheConfig, FileCache};
use flexio_net::server::{ServeConfig, Server};

/// Serves `root` through a cache of `bytes`; returns the address and the
/// cache, whose counters the test reads.
fn serve_cached(root: &Path, bytes: u64) -> (std::net::SocketAddr, Arc<FileCache>) {
    let mut config = ServeConfig::new(root.to_path_buf());
    config.cache = Some(CacheConfig::new(bytes).policy(PolicyName::S3Fifo));
    let server = Server::bind(config).expect("bind");
    let address = server.local_addr();
    let cache = server.cache().expect("a cache was configured");
    std::thread::spawn(move || server.run());
    (address, cache)
}

fn temp_dir() -> tempfile::TempDir {
    // On the target's file system, where O_DIRECT works (/tmp may be a
    // tmpfs, which the server would serve without the cache).
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[test]
fn bytes_served_through_the_cache_are_the_files_whole_in_ranges_and_multipart() {
    let dir = temp_dir();
    let sizes = [0usize, 1, 4095, 4097, (1 << 20) + 1, 3 << 20];
    for (i, size) in sizes.iter().enumerate() {
        std::fs::write(
            dir.path().join(format!("f{size}")),
            pattern(*size, i as u64),
        )
        .unwrap();
    }
    let (address, cache) = serve_cached(dir.path(), 8 << 20);
    let mut after_first_round = None;
    let mut client = RawClient::connect(address);
    // Twice: the first round misses, the second (all of it fits) hits.
    for round in 0..2 {
        if round == 1 {
            after_first_round = Some(cache.stats());
        }
        for (i, size) in sizes.iter().enumerate() {
            let data = pattern(*size, i as u64);
            let response = client.get(&format!("/f{size}"), "");
            assert_eq!(response.status, 200);
            assert!(response.body == data, "f{size} differs, round {round}");
            if *size < 4097 {
                continue;
            }
            for (first, last) in [(0, 0), (1, 4096), (4095, 4096), (size - 3, size - 1)] {
                let response = client.get(
                    &format!("/f{size}"),
                    &format!("Range: bytes={first}-{last}\r\n"),
                );
                assert_eq!(response.status, 206);
                assert!(
                    response.body == data[first..=last],
                    "f{size} bytes {first}-{last}, round {round}"
                );
            }
            let response = client.get(&format!("/f{size}"), "Range: bytes=0-9, 4000-4090\r\n");
            assert_eq!(response.status, 206);
            let body = &response.body;
            let find = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
            assert!(
                find(&data[0..10]) && find(&data[4000..4091]),
                "multipart of f{size}"
            );
        }
    }
    let stats = cache.stats();
    assert!(
        stats.device_bytes_read >= (4 << 20),
        "bodies were read through the cache: {stats:?}"
    );
    let first = after_first_round.unwrap();
    assert_eq!(
        stats.misses, first.misses,
        "the second round hit: {stats:?}"
    );
    assert!(stats.hits > first.hits);
}

#[test]
fn a_scan_through_the_server_does_not_evict_the_hot_set() {
    let dir = temp_dir();
    let hot = pattern(64 << 10, 1);
    std::fs::write(dir.path().join("hot"), &hot).unwrap();
    std::fs::write(dir.path().join("big"), pattern(8 << 20, 2)).unwrap();
    // A 1 MiB cache; the scanned file is 8 times that.
    let (address, cache) = serve_cached(dir.path(), 1 << 20);
    let (mut hot_client, mut scanner) = (RawClient::connect(address), RawClient::connect(address));
    let hot_get = |client: &mut RawClient, block: usize| {
        let first = block * 4096;
        let response = client.get(
            "/hot",
            &format!("Range: bytes={first}-{}\r\n", first + 4095),
        );
        assert!(
            response.body == hot[first..first + 4096],
            "hot block {block}"
        );
    };
    // Popular first: every hot block read three times.
    for _ in 0..3 {
        for block in 0..16 {
            hot_get(&mut hot_client, block);
        }
    }
    // The scan, 256 KiB a request, with hot reads going on meanwhile.
    for (i, first) in (0..8usize << 20).step_by(256 << 10).enumerate() {
        let response = scanner.get(
            "/big",
            &format!("Range: bytes={first}-{}\r\n", first + (256 << 10) - 1),
        );
        assert_eq!(response.body.len(), 256 << 10);
        hot_get(&mut hot_client, i % 16);
    }
    let before = cache.stats();
    for block in 0..16 {
        hot_get(&mut hot_client, block);
    }
    let after = cache.stats();
    assert!(
        before.evictions > 0,
        "the scan filled the cache: {before:?}"
    );
    assert_eq!(
        after.misses, before.misses,
        "every hot block hits after the scan: {after:?}"
    );
    assert_eq!(after.hits - before.hits, 16);
}

#[test]
fn a_cache_with_a_rate_limit_is_refused_rather_than_left_unpaced() {
    let dir = temp_dir();
    let mut config = ServeConfig::new(dir.path().to_path_buf());
    config.cache = Some(CacheConfig::new(1 << 20));
    config.rate_total = Some("10M".parse().unwrap());
    let error = Server::bind(config).err().expect("refused");
    assert!(error.is_usage(), "{error}");
    assert!(error.to_string().contains("--rate"), "{error}");
}

/// How a cached file is changed while a response of it is being sent.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// Rewritten in place, same size, the modification time put back.
    InPlace,
    /// Cut to half its size.
    Truncated,
    /// Replaced by another file renamed over it.
    Renamed,
    /// Replaced by a PUT to the server itself.
    Put,
}

/// For each way a file can change: a client is in the middle of a GET of
/// it (every block of it cached), the file changes, and the client reads
/// on. Every byte that response delivers is the old file's or the new
/// file's at that offset (a truncation may cut it short), and every
/// later response is the new file, byte for byte.
#[test]
fn a_file_changed_mid_stream_is_never_served_from_its_old_blocks_afterwards() {
    use std::io::{Read, Write};
    const SIZE: usize = 24 << 20;
    for change in [
        Change::InPlace,
        Change::Truncated,
        Change::Renamed,
        Change::Put,
    ] {
        let dir = temp_dir();
        let path = dir.path().join("f");
        let old = pattern(SIZE, 1);
        std::fs::write(&path, &old).unwrap();
        let mut config = ServeConfig::new(dir.path().to_path_buf());
        config.cache = Some(CacheConfig::new(64 << 20));
        config.token = Some("a-secret-of-sixteen-chars".into());
        let server = Server::bind(config).expect("bind");
        let address = server.local_addr();
        std::thread::spawn(move || server.run());
        // Every block cached: the whole file once.
        let mut client = RawClient::connect(address);
        assert!(client.get("/f", "").body == old);

        let mut stream = std::net::TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        stream
            .write_all(b"GET /f HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            .unwrap();
        let head = common::read_head(&mut stream).expect("a head");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let mut delivered = vec![0u8; 1 << 20];
        stream.read_exact(&mut delivered).unwrap();

        let new = change_file(change, &path, &old, address);
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        delivered.extend_from_slice(&rest);
        assert!(delivered.len() <= SIZE, "{change:?}");
        if !matches!(change, Change::Truncated) {
            assert_eq!(delivered.len(), SIZE, "{change:?}: the response was cut");
        }
        for (offset, byte) in delivered.iter().enumerate() {
            assert!(
                *byte == old[offset] || new.get(offset) == Some(byte),
                "{change:?}: byte {offset} of the response in flight is neither file's"
            );
        }
        for round in 0..2 {
            let response = RawClient::connect(address).get("/f", "");
            assert_eq!(response.status, 200, "{change:?}");
            assert!(
                response.body == new,
                "{change:?}, response {round} after the change: not the new file's bytes"
            );
        }
    }
}

/// Applies `change` to the file at `path` (now `old`); returns its bytes.
fn change_file(change: Change, path: &Path, old: &[u8], address: std::net::SocketAddr) -> Vec<u8> {
    use std::io::Write;
    let new: Vec<u8> = old.iter().map(|b| b ^ 0xa5).collect();
    match change {
        Change::InPlace => {
            let modified = std::fs::metadata(path).unwrap().modified().unwrap();
            let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            file.write_all(&new).unwrap();
            file.set_times(std::fs::FileTimes::new().set_modified(modified))
                .unwrap();
            new
        }
        Change::Truncated => {
            let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            file.set_len(old.len() as u64 / 2).unwrap();
            old[..old.len() / 2].to_vec()
        }
        Change::Renamed => {
            let staged = path.with_extension("new");
            std::fs::write(&staged, &new).unwrap();
            std::fs::rename(&staged, path).unwrap();
            new
        }
        Change::Put => {
            let mut client = RawClient::connect(address);
            client.send(
                format!(
                    "PUT /f HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer a-secret-of-sixteen-chars\r\nContent-Length: {}\r\n\r\n",
                    new.len()
                )
                .as_bytes(),
            );
            client.send(&new);
            let response = client.read_response(false);
            assert!(
                response.status == 200 || response.status == 201 || response.status == 204,
                "PUT: {}",
                response.status
            );
            new
        }
    }
}
