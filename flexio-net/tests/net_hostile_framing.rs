//! Hostile framing: heads that two readers could split into requests
//! differently (request smuggling) — a missing or repeated `Host`, two
//! `Content-Length`s, `Content-Length` beside `Transfer-Encoding`, folded
//! header lines — are answered 400 and the connection closed, so nothing
//! after such a head is ever taken as a request (RFC 9112 §3.2, §5.2,
//! §6.1, §6.3). And ranges that overlap are merged, their count capped,
//! so no `Range` header makes a body larger than the file.

use crate::common;

use common::{multipart_parts, pattern, serve, serve_with, RawClient};

const TOKEN: &str = "framing-token-0123456789";

/// Sends `raw` on a fresh connection: the one answer, which must be a 400
/// saying `why`, followed by a close — never a second answer.
fn refused(address: std::net::SocketAddr, raw: &str, why: &str) {
    let mut client = RawClient::connect(address);
    // The server may close before taking it all: a failed write is fine.
    let _ = std::io::Write::write_all(&mut client.stream, raw.as_bytes());
    let response = client.read_response(false);
    assert_eq!(response.status, 400, "{raw:?}: {}", response.text());
    assert!(
        response.text().contains(why),
        "{raw:?}: {:?} does not say {why:?}",
        response.text()
    );
    assert_eq!(response.header("Connection"), Some("close"), "{raw:?}");
    assert!(
        client.try_read_response(false).is_none(),
        "{raw:?}: a second answer after the refusal"
    );
}

#[test]
fn a_missing_or_repeated_host_gets_400_and_a_close() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"served").unwrap();
    let address = serve(dir.path());
    refused(address, "GET /f HTTP/1.1\r\n\r\n", "needs a Host");
    refused(
        address,
        "GET /f HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "more than one Host",
    );
    refused(
        address,
        "GET /f HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
        "more than one Host",
    );
    refused(
        address,
        "GET /f HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
        "more than one Host",
    );
    refused(
        address,
        "GET /f HTTP/1.1\r\nHost: a b\r\n\r\n",
        "not a host",
    );
    refused(
        address,
        "GET /f HTTP/1.1\r\nHost: a/b\r\n\r\n",
        "not a host",
    );
    refused(
        address,
        "GET /f HTTP/1.1\r\nHost: u@a\r\n\r\n",
        "not a host",
    );
    // HTTP/1.0 has no Host to require (RFC 9112 §3.2 asks it of 1.1).
    let mut client = RawClient::connect(address);
    client.send(b"GET /f HTTP/1.0\r\n\r\n");
    assert_eq!(client.read_response(false).body, b"served");
    // The forms a Host may take are served.
    for host in [
        "t",
        "127.0.0.1:8080",
        "[::1]:80",
        "",
        "xn--bcher-kva.example",
    ] {
        let mut client = RawClient::connect(address);
        client.send(format!("GET /f HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes());
        assert_eq!(client.read_response(false).body, b"served", "{host:?}");
    }
}

#[test]
fn a_put_with_two_content_lengths_is_refused_and_its_tail_is_no_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"served").unwrap();
    let address = serve_with(dir.path(), |config| config.token = Some(TOKEN.into()));
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let smuggled = "GET /f HTTP/1.1\r\nHost: t\r\n\r\n";
    // One reader takes 5 bytes of body and the rest as a second request;
    // another takes all of it as the body. Neither may be chosen.
    let raw = format!(
        "PUT /new HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: 5\r\nContent-Length: {}\r\n\r\nhello{smuggled}",
        5 + smuggled.len()
    );
    refused(address, &raw, "more than one Content-Length");
    // The same value twice, or as a list: still two readings of one field.
    let raw = format!(
        "PUT /new HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello"
    );
    refused(address, &raw, "more than one Content-Length");
    for value in [
        "5, 5",
        "5,40",
        "+5",
        "-1",
        "0x5",
        "5 5",
        "",
        "99999999999999999999",
    ] {
        let raw = format!(
            "PUT /new HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: {value}\r\n\r\nhello{smuggled}"
        );
        refused(address, &raw, "is not a number of bytes");
    }
    // On a GET as well: a length the server does not read is still framing.
    refused(
        address,
        &format!("GET /f HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 27\r\n\r\n{smuggled}"),
        "more than one Content-Length",
    );
    assert!(
        !dir.path().join("new").exists(),
        "a refused PUT wrote its file"
    );
}

#[test]
fn content_length_beside_transfer_encoding_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"served").unwrap();
    let address = serve_with(dir.path(), |config| config.token = Some(TOKEN.into()));
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    for (first, second) in [
        ("Content-Length: 5", "Transfer-Encoding: chunked"),
        ("Transfer-Encoding: chunked", "Content-Length: 5"),
        ("Transfer-Encoding: identity", "Content-Length: 5"),
    ] {
        refused(
            address,
            &format!("PUT /new HTTP/1.1\r\nHost: t\r\n{auth}{first}\r\n{second}\r\n\r\n0\r\n\r\n"),
            "both Content-Length and Transfer-Encoding",
        );
        refused(
            address,
            &format!("GET /f HTTP/1.1\r\nHost: t\r\n{first}\r\n{second}\r\n\r\n0\r\n\r\n"),
            "both Content-Length and Transfer-Encoding",
        );
    }
    // HTTP/1.0 has no transfer codings: its framing is faulty.
    refused(
        address,
        "GET /f HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "Transfer-Encoding in an HTTP/1.0 request",
    );
    assert!(!dir.path().join("new").exists());
}

#[test]
fn folded_header_lines_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"served").unwrap();
    let address = serve_with(dir.path(), |config| config.token = Some(TOKEN.into()));
    // obs-fold (RFC 9112 §5.2): a line that begins with a space or a tab
    // continues the one before; a reader that unfolds and one that does
    // not see different headers.
    for fold in [" ", "\t"] {
        refused(
            address,
            &format!("GET /f HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n{fold}Content-Length: 27\r\n\r\n"),
            "malformed request head",
        );
        refused(
            address,
            &format!(
                "PUT /new HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 5\r\n{fold}5\r\n\r\nhello"
            ),
            "malformed request head",
        );
    }
    assert!(!dir.path().join("new").exists());
}

// ---- ranges ----

#[test]
fn sixteen_overlapping_whole_ranges_answer_one_plain_206_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(1 << 20, 9);
    std::fs::write(dir.path().join("f"), &data).unwrap();
    let address = serve(dir.path());
    let mut client = RawClient::connect(address);
    let whole = vec!["0-"; 16].join(",");
    let response = client.get("/f", &format!("Range: bytes={whole}\r\n"));
    assert_eq!(response.status, 206);
    assert_eq!(
        response.header("Content-Range"),
        Some("bytes 0-1048575/1048576")
    );
    assert!(response.body == data, "{} bytes", response.body.len());
    // Overlapping and adjacent pieces, asked in any order, are one range.
    let response = client.get(
        "/f",
        "Range: bytes=100-199, 0-99, 50-150, 200-299, -1048476\r\n",
    );
    assert_eq!(response.status, 206);
    assert_eq!(
        response.header("Content-Range"),
        Some("bytes 0-1048575/1048576")
    );
    let response = client.get("/f", "Range: bytes=100-199, 0-99, 150-250\r\n");
    assert_eq!(response.status, 206);
    assert_eq!(
        response.header("Content-Range"),
        Some("bytes 0-250/1048576")
    );
    assert!(response.body == data[..=250]);
    // The connection goes on.
    assert_eq!(client.get("/f", "Range: bytes=1-1\r\n").body, data[1..2]);
}

#[test]
fn merged_ranges_keep_the_order_asked_and_the_body_stays_within_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(1 << 20, 10);
    std::fs::write(dir.path().join("f"), &data).unwrap();
    std::fs::write(dir.path().join("small"), &data[..300]).unwrap();
    let address = serve(dir.path());
    let mut client = RawClient::connect(address);
    // Disjoint ranges stay parts, in the order asked; the overlapping
    // pair is one part, where the first of them was asked.
    let response = client.get(
        "/f",
        "Range: bytes=900000-900099, 10-19, 900050-900199, 5000-5009\r\n",
    );
    assert_eq!(response.status, 206);
    let parts = multipart_parts(&response);
    let wanted = [(900_000, 900_199), (10, 19), (5000, 5009)];
    assert_eq!(parts.len(), wanted.len());
    for ((head, bytes), (first, last)) in parts.iter().zip(wanted) {
        assert!(
            head.contains(&format!("Content-Range: bytes {first}-{last}/1048576")),
            "{head}"
        );
        assert!(bytes[..] == data[first..=last]);
    }
    // Sixteen disjoint single bytes of a small file: the part heads alone
    // would make the body several times the file, so the file comes whole.
    let singles: Vec<String> = (0..16).map(|i| format!("{0}-{0}", i * 18)).collect();
    let response = client.get("/small", &format!("Range: bytes={}\r\n", singles.join(",")));
    assert_eq!(response.status, 200);
    assert!(response.body == data[..300]);
    // Past the cap of ranges the header is ignored: the file, whole.
    let many: Vec<String> = (0..17).map(|i| format!("{0}-{0}", i * 1000)).collect();
    let response = client.get("/f", &format!("Range: bytes={}\r\n", many.join(",")));
    assert_eq!(response.status, 200);
    assert_eq!(response.body.len(), 1 << 20);
}

#[test]
fn no_range_header_makes_a_body_larger_than_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let size = 64 << 10;
    std::fs::write(dir.path().join("f"), pattern(size, 11)).unwrap();
    let address = serve(dir.path());
    let mut client = RawClient::connect(address);
    let shapes = [
        vec!["0-"; 16].join(","),
        vec!["-65536"; 16].join(","),
        (0..16)
            .map(|i| format!("{}-", i * 100))
            .collect::<Vec<_>>()
            .join(","),
        (0..16)
            .map(|i| format!("0-{}", i * 4096))
            .collect::<Vec<_>>()
            .join(","),
        (0..16)
            .map(|i| format!("{}-{}", i * 4000, i * 4000 + 5000))
            .collect::<Vec<_>>()
            .join(","),
        (0..16)
            .map(|i| format!("{0}-{0}", i * 4096))
            .collect::<Vec<_>>()
            .join(","),
    ];
    for shape in shapes {
        let response = client.get("/f", &format!("Range: bytes={shape}\r\n"));
        assert!(
            response.body.len() <= size,
            "bytes={shape}: a body of {} bytes for a file of {size}",
            response.body.len()
        );
    }
}

// ---- durations past the clock ----

#[test]
fn timeouts_and_a_grace_too_long_for_the_clock_neither_panic_nor_stop_serving() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"served").unwrap();
    let huge = Duration::from_secs(10_000_000_000_000_000_000);
    let mut config = flexio_net::server::ServeConfig::new(dir.path().to_path_buf());
    config.workers = 1;
    config.head_timeout = huge;
    config.idle_timeout = huge;
    config.grace = huge;
    let server = flexio_net::server::Server::bind(config).unwrap();
    let address = server.local_addr();
    let handle = server.spawn().unwrap();
    // The head deadline is set at the first connection, the idle one at
    // the first keep-alive wait: the one worker lives through both.
    let mut client = RawClient::connect(address);
    assert_eq!(client.get("/f", "").body, b"served");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(client.get("/f", "").body, b"served");
    let mut other = RawClient::connect(address);
    assert_eq!(other.get("/f", "").body, b"served");
    // The grace is set at the stop; idle connections close at once, so
    // the server ends.
    let started = Instant::now();
    handle.shutdown();
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        handle.wait();
        let _ = done.send(());
    });
    assert!(
        ended.recv_timeout(Duration::from_secs(20)).is_ok(),
        "the server did not stop"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(client.closed());
}
