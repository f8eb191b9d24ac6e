//! `serve`'s request path beside long bodies: a client that does not read
//! its body holds nothing but its own connection, so a new request is
//! answered at once; the threads are the workers and never grow.

use crate::common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::{serve_with, RawClient};

/// Bytes of each long body: more than loopback's socket buffers hold, so
/// a client that does not read leaves its connection waiting for EPOLLOUT.
const LONG: u64 = 48 << 20;

/// Serves `root` (with a 4 KiB `small` added) on two workers,
/// starts twice as many downloads of `stalled` as there are workers
/// and reads none of them; a request for `small` must still be answered
/// promptly. Then each download is read to its end with `read_whole`,
/// which must count `whole` bytes: they were only waiting.
fn a_small_request_is_answered_beside(
    root: &std::path::Path,
    stalled: &str,
    read_whole: fn(RawClient) -> u64,
    whole: u64,
) {
    std::fs::write(root.join("small"), common::pattern(4096, 16)).unwrap();
    let workers = 2;
    let address = serve_with(root, |config| {
        config.workers = workers;
        // A blocked send gives up only after this: far longer than the
        // small request may take below.
        config.send_timeout = Duration::from_secs(60);
    });
    let mut readers: Vec<RawClient> = (0..2 * workers)
        .map(|_| {
            let mut client = RawClient::connect(address);
            client.send(format!("GET {stalled} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes());
            client
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));

    let started = Instant::now();
    let mut client = RawClient::connect(address);
    let response = client.get("/small", "");
    let took = started.elapsed();
    assert_eq!(response.status, 200);
    assert_eq!(response.body, common::pattern(4096, 16));
    assert!(
        took < Duration::from_secs(10),
        "4 KiB took {took:?} beside unread downloads of {stalled}"
    );

    let handles: Vec<_> = readers
        .drain(..)
        .map(|client| std::thread::spawn(move || read_whole(client)))
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap(), whole);
    }
}

#[test]
fn a_small_request_is_answered_while_every_body_worker_is_blocked() {
    let root = tempfile::tempdir().unwrap();
    // Sparse: the test measures the server, not the disk. Unread, every
    // body worker sits in sendfile on a full socket and more turns queue.
    std::fs::File::create(root.path().join("long"))
        .unwrap()
        .set_len(LONG)
        .unwrap();
    a_small_request_is_answered_beside(root.path(), "/long", body_length_all_zero, LONG);
}

#[test]
fn a_small_request_is_answered_while_slow_tar_downloads_fill_every_worker() {
    // Before tar streams went in turns, a request worker wrote a `?tar`
    // from start to end: as many slow readers as request workers held
    // them all, and a 4 KiB request waited for the send timeout.
    let root = tempfile::tempdir().unwrap();
    let tree = root.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    for name in ["a", "b"] {
        // Sparse, as above; two members so a turn ends inside the stream.
        std::fs::File::create(tree.join(name))
            .unwrap()
            .set_len(LONG / 2)
            .unwrap();
    }
    // Two headers, two zero bodies, two end blocks.
    let whole = 2 * 512 + LONG + 2 * 512;
    a_small_request_is_answered_beside(root.path(), "/tree/?tar", tar_stream_length, whole);
}

/// Reads a response to `GET /tree/?tar` of two zero files and returns its
/// body's length, checking the header blocks name the members and every
/// other byte is a zero.
fn tar_stream_length(mut client: RawClient) -> u64 {
    let (head, mut body) = read_head(&mut client);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let member = LONG / 2;
    // Where each member's header block starts.
    let headers = [0, 512 + member];
    let mut buffer = vec![0u8; 1 << 20];
    let mut at = 0u64;
    loop {
        for (offset, &byte) in body.iter().enumerate() {
            let position = at + offset as u64;
            let in_header = headers
                .iter()
                .any(|&start| (start..start + 512).contains(&position));
            if !in_header {
                assert_eq!(byte, 0, "a non-zero byte at {position} of the stream");
            }
        }
        for (start, name) in headers.iter().zip([b'a', b'b']) {
            if (at..at + body.len() as u64).contains(start) {
                assert_eq!(body[(start - at) as usize], name, "the header at {start}");
            }
        }
        at += body.len() as u64;
        if at >= 2 * 512 + member * 2 + 1024 {
            return at;
        }
        let n = client.stream.read(&mut buffer).unwrap();
        assert!(n > 0, "closed after {at} body bytes");
        body = buffer[..n].to_vec();
    }
}

/// Reads up to the end of a response head: the head, and the body bytes
/// that came with it.
fn read_head(client: &mut RawClient) -> (String, Vec<u8>) {
    let mut buffer = vec![0u8; 1 << 20];
    let mut seen = Vec::new();
    loop {
        let n = client.stream.read(&mut buffer).unwrap();
        assert!(n > 0, "closed before the head");
        seen.extend_from_slice(&buffer[..n]);
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&seen[..end + 4]).to_string();
            return (head, seen[end + 4..].to_vec());
        }
    }
}

/// Reads a response to `GET /long` and returns its body's length,
/// checking every byte is a zero (the sparse file's).
fn body_length_all_zero(mut client: RawClient) -> u64 {
    let (head, first) = read_head(&mut client);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(first.iter().all(|&b| b == 0));
    let mut buffer = vec![0u8; 1 << 20];
    let mut length = first.len() as u64;
    while length < LONG {
        let n = client.stream.read(&mut buffer).unwrap();
        assert!(n > 0, "closed after {length} body bytes");
        assert!(buffer[..n].iter().all(|&b| b == 0));
        length += n as u64;
    }
    length
}
