//! `serve`'s offload pool (issue 38): work that may block for long runs
//! beside the worker, not in it. With one worker, a manifest of a large
//! uncached file does not delay a 4 KiB GET on another connection; a
//! ranged upload whose journal blocks does not hold another file's
//! upload; a full queue answers 503 while a cached manifest is still
//! answered; a client that goes away frees the pool at once.

use crate::common;

use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{pattern, serve_with, RawClient, Response};

const TOKEN: &str = "offload-token-0123456789";

/// A sparse file of 16 GiB: no disk, and hashing it takes seconds even in
/// an optimised build.
fn huge(dir: &Path, name: &str) {
    let file = std::fs::File::create(dir.join(name)).unwrap();
    file.set_len(16 << 30).unwrap();
}

/// Whether nothing has arrived on `stream` yet (its answer is pending).
fn nothing_yet(stream: &TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    let pending = matches!(stream.peek(&mut byte), Err(e) if e.kind() == ErrorKind::WouldBlock);
    stream.set_nonblocking(false).unwrap();
    pending
}

/// A client that asked for `target` and has not read the answer.
fn asking(address: SocketAddr, target: &str) -> RawClient {
    let mut client = RawClient::connect(address);
    client.send(format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    client
}

#[test]
fn a_manifest_of_a_large_uncached_file_does_not_delay_a_small_get_on_the_same_worker() {
    let root = tempfile::tempdir().unwrap();
    huge(root.path(), "huge");
    std::fs::write(root.path().join("small"), pattern(4096, 1)).unwrap();
    let address = serve_with(root.path(), |config| config.workers = 1);
    let manifest = asking(address, "/huge?manifest");
    // The hashing has begun: the offload pool holds the file open.
    assert!(flexio_testkit::wait_until(
        || flexio_testkit::files_open_in(root.path()) >= 1,
        Duration::from_secs(20)
    ));
    let mut other = RawClient::connect(address);
    let started = Instant::now();
    let response = other.get("/small", "");
    let waited = started.elapsed();
    println!("4 KiB GET beside a 16 GiB manifest: {waited:?}");
    assert_eq!(response.status, 200);
    assert!(response.body == pattern(4096, 1));
    assert!(
        waited < Duration::from_millis(200),
        "the 4 KiB GET waited {waited:?} behind a manifest"
    );
    assert!(
        nothing_yet(&manifest.stream),
        "the manifest was done already: the test proves nothing"
    );
}

#[test]
fn a_full_queue_answers_503_a_cached_manifest_still_comes_and_a_client_gone_frees_the_pool() {
    let root = tempfile::tempdir().unwrap();
    huge(root.path(), "huge-1");
    huge(root.path(), "huge-2");
    huge(root.path(), "huge-3");
    let known = pattern(3 << 20, 2);
    std::fs::write(root.path().join("known"), &known).unwrap();
    std::fs::write(root.path().join("fresh"), pattern(5000, 3)).unwrap();
    let address = serve_with(root.path(), |config| {
        config.workers = 1;
        config.offload_threads = 1;
        config.offload_queue = 1;
    });
    let first = RawClient::connect(address).get("/known?manifest", "");
    assert_eq!(first.status, 200);
    for chunk in known.chunks(1 << 20) {
        let hash = blake3::hash(chunk).to_hex();
        assert!(first.text().contains(hash.as_str()), "{}", first.text());
    }

    let running = asking(address, "/huge-1?manifest");
    std::thread::sleep(Duration::from_millis(100));
    let queued = asking(address, "/huge-2?manifest");
    std::thread::sleep(Duration::from_millis(100));
    let refused = RawClient::connect(address).get("/huge-3?manifest", "");
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert!(refused.text().contains("busy"), "{}", refused.text());
    // A file whose hashes are held needs no pool.
    let cached = RawClient::connect(address).get("/known?manifest", "");
    assert_eq!(cached.status, 200);
    assert_eq!(cached.body, first.body);
    assert!(nothing_yet(&running.stream) && nothing_yet(&queued.stream));

    // Both clients go: the running hash stops, the queued one never
    // starts, and the one thread is free for the next request.
    drop((running, queued));
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let fresh: Response = RawClient::connect(address).get("/fresh?manifest", "");
    let waited = started.elapsed();
    assert_eq!(fresh.status, 200, "{}", fresh.text());
    assert!(
        waited < Duration::from_secs(1),
        "the pool was still busy with work nobody waits for: {waited:?}"
    );
}

/// The hidden journal of a ranged upload of `name` (as the server names it).
fn journal_of(name: &str, total: u64, upload: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(name.as_bytes());
    hasher.update(&[0]);
    hasher.update(total.to_string().as_bytes());
    hasher.update(&[0]);
    hasher.update(upload.as_bytes());
    format!(".flexio-part-{}.ranges", &hasher.finalize().to_hex()[..32])
}

fn send_piece(address: SocketAddr, target: &str, body: &[u8], range: &str) -> RawClient {
    let mut client = RawClient::connect(address);
    client.send(
        format!(
            "PUT {target} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nFlexio-Upload: u1\r\nContent-Range: {range}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    client.send(body);
    client
}

#[test]
fn two_ranged_uploads_of_different_files_are_not_serialised() {
    let root = tempfile::tempdir().unwrap();
    let address = serve_with(root.path(), |config| {
        config.workers = 1;
        config.token = Some(TOKEN.into());
    });
    // The first upload's journal blocks whoever reads it (a FIFO with no
    // writer): a disk that hangs, held still for the test.
    let fifo = root.path().join(journal_of("slow", 20, "u1"));
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let mut slow = send_piece(address, "/slow", &pattern(10, 4), "bytes 0-9/20");
    std::thread::sleep(Duration::from_millis(200));
    let whole = pattern(20, 5);
    let started = Instant::now();
    let mut fast = send_piece(address, "/fast", &whole, "bytes 0-19/20");
    let response = fast.read_response(false);
    let waited = started.elapsed();
    assert_eq!(response.status, 201, "{}", response.text());
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert_eq!(std::fs::read(root.path().join("fast")).unwrap(), whole);
    // They overlapped: the first is still in its journal.
    assert!(nothing_yet(&slow.stream), "the first upload was not held");

    // The journal's disk comes back: the first piece is recorded.
    let writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    drop(writer);
    let recorded = slow.read_response(false);
    assert_eq!(recorded.status, 202, "{}", recorded.text());
    assert_eq!(recorded.header("Range"), Some("bytes=0-9"));
}

#[test]
fn a_large_directory_is_listed_whole() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("many");
    std::fs::create_dir(&dir).unwrap();
    for index in 0..300 {
        std::fs::write(dir.join(format!("entry-{index:03}")), b"x").unwrap();
    }
    let address = serve_with(root.path(), |config| config.workers = 1);
    let mut client = RawClient::connect(address);
    let listing = client.get("/many/", "");
    assert_eq!(listing.status, 200);
    let html = listing.text();
    for index in 0..300 {
        assert!(
            html.contains(&format!("./entry-{index:03}\"")),
            "entry-{index:03}"
        );
    }
    // The connection goes on after an answer from the pool.
    let mut buffer = [0u8; 1];
    assert_eq!(client.get("/many/entry-007", "").body, b"x");
    client.stream.set_nonblocking(true).unwrap();
    assert!(client.stream.read(&mut buffer).is_err());
}
