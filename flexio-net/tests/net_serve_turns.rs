//! `serve`'s long bodies in turns: a `?tar` stream and a multipart answer
//! cut into many small turns (`max_chunk`), each resumed where the last
//! stopped — inside a header, a member, a part head or a range — come out
//! byte-exact.

use crate::common;

use std::process::{Command, Stdio};

use common::{pattern, require_tool, serve_with, RawClient};

/// An odd turn, so turns end inside headers, padding and members alike.
const SMALL_TURN: u64 = 3001;

#[test]
fn tar_streams_sent_in_small_turns_are_the_same_bytes_and_extract() {
    let root = tempfile::tempdir().unwrap();
    let tree = root.path().join("tree");
    std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    let files = [
        ("empty", 0),
        ("one", 1),
        ("sub/page", 4095),
        ("sub/deeper/big", (1 << 20) + 1),
        ("sub/odd", 70_001),
    ];
    for (seed, (name, size)) in files.iter().enumerate() {
        std::fs::write(tree.join(name), pattern(*size, seed as u64)).unwrap();
    }
    std::os::unix::fs::symlink("one", tree.join("sub/link")).unwrap();
    let whole = serve_with(root.path(), |config| config.max_chunk = 1 << 30);
    let in_turns = serve_with(root.path(), |config| config.max_chunk = SMALL_TURN);
    let expected = RawClient::connect(whole).get("/tree/?tar", "");
    let mut client = RawClient::connect(in_turns);
    let response = client.get("/tree/?tar", "");
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("Content-Length"),
        Some(response.body.len().to_string().as_str())
    );
    assert!(response.body.len() as u64 > 100 * SMALL_TURN);
    assert!(
        response.body == expected.body,
        "the stream differs when sent in turns"
    );
    // The connection goes on after the stream.
    assert_eq!(client.get("/tree/one", "").body, pattern(1, 1));

    if !require_tool("tar") {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let mut tar = Command::new("tar")
        .args(["-x", "-f", "-", "-C"])
        .arg(out.path())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(tar.stdin.as_mut().unwrap(), &response.body).unwrap();
    drop(tar.stdin.take());
    assert!(tar.wait().unwrap().success());
    for (seed, (name, size)) in files.iter().enumerate() {
        assert!(
            std::fs::read(out.path().join(name)).unwrap() == pattern(*size, seed as u64),
            "{name}"
        );
    }
    assert_eq!(
        std::fs::read_link(out.path().join("sub/link")).unwrap(),
        std::path::Path::new("one")
    );
}

#[test]
fn multipart_ranges_sent_in_small_turns_are_byte_exact() {
    let root = tempfile::tempdir().unwrap();
    let data = pattern(300_000, 5);
    std::fs::write(root.path().join("f"), &data).unwrap();
    let address = serve_with(root.path(), |config| config.max_chunk = SMALL_TURN);
    let mut client = RawClient::connect(address);
    let response = client.get(
        "/f",
        "Range: bytes=0-9999, 50000-170000, 200000-200000, -30000\r\n",
    );
    assert_eq!(response.status, 206);
    assert!(response.body.len() as u64 > 40 * SMALL_TURN);
    let parts = common::multipart_parts(&response);
    let wanted = [
        (0, 9999),
        (50_000, 170_000),
        (200_000, 200_000),
        (270_000, 299_999),
    ];
    assert_eq!(parts.len(), wanted.len());
    for ((head, bytes), (first, last)) in parts.iter().zip(wanted) {
        assert!(
            head.contains(&format!("Content-Range: bytes {first}-{last}/300000")),
            "{head}"
        );
        assert!(bytes[..] == data[first..=last], "bytes {first}-{last}");
    }
    // The closing boundary ends the body exactly, and the connection goes on.
    assert!(response.body.ends_with(b"--\r\n"));
    assert_eq!(client.get("/f", "Range: bytes=1-1\r\n").body, data[1..2]);
}
