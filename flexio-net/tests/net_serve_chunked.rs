//! Chunked PUT bodies (`curl -T -`, WebDAV clients) over loopback:
//! byte-exact whatever the chunk sizes, a request after one on the same
//! connection intact, the free space's cap (413, nothing left behind),
//! malformed sizes and codings refused.

use crate::common;

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use common::*;

const TOKEN: &str = "chunked-token-0123456789";

/// `body` as chunks of `sizes` (cycled), with an extension on some and a
/// trailer.
fn chunked(body: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    for (index, size) in sizes.iter().cycle().enumerate() {
        if at == body.len() {
            break;
        }
        let end = (at + size).min(body.len());
        let extension = if index % 3 == 1 { ";note=odd" } else { "" };
        out.extend_from_slice(format!("{:x}{extension}\r\n", end - at).as_bytes());
        out.extend_from_slice(&body[at..end]);
        out.extend_from_slice(b"\r\n");
        at = end;
    }
    out.extend_from_slice(b"0\r\nX-Checksum: none\r\n\r\n");
    out
}

fn put_head(target: &str, extra: &str) -> Vec<u8> {
    format!(
        "PUT {target} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n{extra}\r\n"
    )
    .into_bytes()
}

fn server(root: &std::path::Path) -> SocketAddr {
    serve_with(root, |config| config.token = Some(TOKEN.into()))
}

#[test]
fn a_chunked_put_with_odd_chunk_sizes_is_byte_exact_and_the_connection_goes_on() {
    let root = tempfile::tempdir().unwrap();
    let address = server(root.path());
    let body = pattern(700_001, 11);
    let mut client = RawClient::connect(address);
    // The next request follows the body in the same write: the server
    // must not read past the body's end.
    let mut wire = put_head("/odd.bin", "");
    wire.extend(chunked(&body, &[1, 7, 4093, 65_537, 3, 262_147]));
    wire.extend_from_slice(b"GET /odd.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    client.send(&wire);
    let response = client.read_response(false);
    assert_eq!(response.status, 201, "{}", response.text());
    assert!(
        response.text().contains("700001 bytes"),
        "{}",
        response.text()
    );
    let fetched = client.read_response(false);
    assert_eq!(fetched.status, 200);
    assert!(fetched.body == body, "the body read back differs");
    assert_eq!(std::fs::read(root.path().join("odd.bin")).unwrap(), body);
    // An empty chunked body makes an empty file.
    let mut wire = put_head("/empty", "Connection: close\r\n");
    wire.extend_from_slice(b"0\r\n\r\n");
    let response = RawClient::connect(address)
        .try_read_response_to(&wire)
        .unwrap();
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(std::fs::read(root.path().join("empty")).unwrap(), b"");
}

#[test]
fn a_chunk_larger_than_the_free_space_is_refused_413_and_leaves_nothing() {
    let root = tempfile::tempdir().unwrap();
    let address = server(root.path());
    let mut wire = put_head("/huge", "");
    wire.extend_from_slice(b"3\r\nabc\r\nfffffffffffffff0\r\n");
    let response = RawClient::connect(address)
        .try_read_response_to(&wire)
        .unwrap();
    assert_eq!(response.status, 413, "{}", response.text());
    assert!(
        response.text().contains("free space"),
        "{}",
        response.text()
    );
    assert!(names_in(root.path()).is_empty());
}

#[test]
fn chunks_adding_up_past_the_free_space_are_refused_413_and_leave_nothing() {
    if !require_root("mounting a 4 MiB tmpfs as the free space") {
        return;
    }
    let mount = SmallTmpfs::mount("4m");
    let address = server(mount.path());
    let mut client = RawClient::connect(address);
    client.send(&put_head("/big", ""));
    let piece = pattern(1 << 20, 2);
    for _ in 0..3 {
        client.send(format!("{:x}\r\n", piece.len()).as_bytes());
        client.send(&piece);
        client.send(b"\r\n");
    }
    // 3 MiB in; 2 MiB more would pass the 4 MiB there was.
    client.send(b"200000\r\n");
    let response = client.read_response(false);
    assert_eq!(response.status, 413, "{}", response.text());
    assert!(
        names_in(mount.path()).is_empty(),
        "{:?}",
        names_in(mount.path())
    );
}

#[test]
fn malformed_chunk_sizes_and_unknown_codings_are_refused_and_leave_nothing() {
    let root = tempfile::tempdir().unwrap();
    let address = server(root.path());
    for (coding, body, status) in [
        ("chunked", &b"3\r\nabc\r\nzz\r\n"[..], 400),
        ("chunked", b"3\nabc\r\n0\r\n\r\n", 400),
        ("chunked", b"3\r\nabcd\r\n0\r\n\r\n", 400),
        ("chunked", b"11111111111111111\r\n", 400),
        ("gzip, chunked", b"0\r\n\r\n", 501),
        ("chunked, gzip", b"0\r\n\r\n", 400),
    ] {
        let mut wire = format!(
            "PUT /f HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nTransfer-Encoding: {coding}\r\n\r\n"
        )
        .into_bytes();
        wire.extend_from_slice(body);
        let response = RawClient::connect(address).try_read_response_to(&wire);
        let shown = String::from_utf8_lossy(body);
        let response = response.unwrap_or_else(|| panic!("{coding} {shown:?}: no answer"));
        assert_eq!(
            response.status,
            status,
            "{coding} {shown:?}: {}",
            response.text()
        );
        assert!(names_in(root.path()).is_empty(), "{coding} {shown:?}");
    }
}

#[test]
fn curl_uploads_from_stdin_chunked() {
    if !require_tool("curl") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let address = server(root.path());
    let body = pattern(3 << 20 | 12_345, 7);
    let mut curl = Command::new("curl")
        .args([
            "-sS",
            "--fail",
            "-T",
            "-",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
        ])
        .arg("-H")
        .arg(format!("Authorization: Bearer {TOKEN}"))
        .arg(format!("http://{address}/from-stdin.bin"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = curl.stdin.take().unwrap();
    let sent = body.clone();
    let writer = std::thread::spawn(move || {
        for piece in sent.chunks(100_003) {
            stdin.write_all(piece).unwrap();
        }
    });
    let output = curl.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(output.status.success(), "curl failed");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "201");
    assert_eq!(
        std::fs::read(root.path().join("from-stdin.bin")).unwrap(),
        body
    );
}
