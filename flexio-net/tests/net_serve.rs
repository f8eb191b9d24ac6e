//! `flexio serve` over loopback: files byte-exact whole and in ranges,
//! validators and conditionals, keep-alive, directories (listing,
//! manifest, tar), and real clients (curl, wget) against it.

use crate::common;

use std::process::{Command, Stdio};

use common::{pattern, require_tool, serve, RawClient};

const SIZES: [usize; 5] = [0, 1, 4095, (1 << 20) + 1, 8 << 20];

#[test]
fn files_round_trip_byte_exact_at_every_size() {
    let dir = tempfile::tempdir().unwrap();
    for (i, size) in SIZES.iter().enumerate() {
        std::fs::write(
            dir.path().join(format!("f{size}")),
            pattern(*size, i as u64),
        )
        .unwrap();
    }
    let address = serve(dir.path());
    let mut client = RawClient::connect(address);
    for (i, size) in SIZES.iter().enumerate() {
        let response = client.get(&format!("/f{size}"), "");
        assert_eq!(response.status, 200);
        assert_eq!(
            response.header("Content-Length"),
            Some(size.to_string().as_str())
        );
        assert!(response.body == pattern(*size, i as u64), "f{size} differs");
    }
}

#[test]
fn single_ranges_suffixes_and_unsatisfiable_ones() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(100_000, 7);
    std::fs::write(dir.path().join("f"), &data).unwrap();
    let address = serve(dir.path());
    let mut client = RawClient::connect(address);
    for (header, first, length) in [
        ("bytes=0-0", 0, 1),
        ("bytes=10-4105", 10, 4096),
        ("bytes=99990-", 99_990, 10),
        ("bytes=-5", 99_995, 5),
        ("bytes=50000-999999999", 50_000, 50_000),
    ] {
        let response = client.get("/f", &format!("Range: {header}\r\n"));
        assert_eq!(response.status, 206, "{header}");
        assert_eq!(
            response.header("Content-Range").unwrap(),
            format!("bytes {first}-{}/100000", first + length - 1)
        );
        assert!(response.body == data[first..first + length], "{header}");
    }
    let response = client.get("/f", "Range: bytes=100000-\r\n");
    assert_eq!(response.status, 416);
    assert_eq!(response.header("Content-Range"), Some("bytes */100000"));
    // A malformed header is ignored: the whole file.
    let response = client.get("/f", "Range: bytes=9-2\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(response.body.len(), 100_000);
}

#[test]
fn several_ranges_come_as_multipart_byteranges() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(10_000, 3);
    std::fs::write(dir.path().join("f"), &data).unwrap();
    let address = serve(dir.path());
    let mut client = RawClient::connect(address);
    let response = client.get("/f", "Range: bytes=0-9, 5000-5099, -3\r\n");
    assert_eq!(response.status, 206);
    let parts = common::multipart_parts(&response);
    assert_eq!(parts.len(), 3);
    for ((head, bytes), (first, last)) in parts.iter().zip([(0, 9), (5000, 5099), (9997, 9999)]) {
        assert!(
            head.contains(&format!("Content-Range: bytes {first}-{last}/10000")),
            "{head}"
        );
        assert!(bytes[..] == data[first..=last]);
    }
    // The connection goes on after the multipart body.
    assert_eq!(client.get("/f", "Range: bytes=1-1\r\n").body, data[1..2]);
}

#[test]
fn validators_and_conditional_requests() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"0123456789").unwrap();
    let address = serve(dir.path());
    let mut client = RawClient::connect(address);
    let first = client.get("/f", "");
    let etag = first.header("ETag").unwrap().to_string();
    let modified = first.header("Last-Modified").unwrap().to_string();
    assert!(etag.starts_with('"') && etag.ends_with('"'));
    assert_eq!(
        client
            .get("/f", &format!("If-None-Match: {etag}\r\n"))
            .status,
        304
    );
    assert_eq!(
        client
            .get("/f", &format!("If-None-Match: \"other\", W/{etag}\r\n"))
            .status,
        304
    );
    assert_eq!(client.get("/f", "If-None-Match: \"other\"\r\n").status, 200);
    assert_eq!(
        client
            .get("/f", &format!("If-Modified-Since: {modified}\r\n"))
            .status,
        304
    );
    assert_eq!(
        client
            .get("/f", "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n")
            .status,
        200
    );
    let ranged = client.get("/f", &format!("Range: bytes=2-3\r\nIf-Range: {etag}\r\n"));
    assert_eq!((ranged.status, ranged.body.as_slice()), (206, &b"23"[..]));
    let stale = client.get("/f", "Range: bytes=2-3\r\nIf-Range: \"stale\"\r\n");
    assert_eq!((stale.status, stale.body.len()), (200, 10));
    let dated = client.get(
        "/f",
        &format!("Range: bytes=2-3\r\nIf-Range: {modified}\r\n"),
    );
    assert_eq!(dated.status, 206);
}

#[test]
fn keep_alive_carries_many_requests_including_pipelined_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a"), pattern(70_000, 1)).unwrap();
    std::fs::write(dir.path().join("b"), b"bee").unwrap();
    let address = serve(dir.path());
    let mut client = RawClient::connect(address);
    for _ in 0..5 {
        assert_eq!(client.get("/a", "").body, pattern(70_000, 1));
        assert_eq!(client.get("/b", "").body, b"bee");
    }
    // Three requests in one write: the bodies stay in order and whole.
    client.send(
        b"GET /b HTTP/1.1\r\nHost: t\r\n\r\nHEAD /a HTTP/1.1\r\nHost: t\r\n\r\nGET /a HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    assert_eq!(client.read_response(false).body, b"bee");
    let head = client.read_response(true);
    assert_eq!(head.header("Content-Length"), Some("70000"));
    assert_eq!(client.read_response(false).body, pattern(70_000, 1));
    // Connection: close is honoured.
    let last = client.get("/b", "Connection: close\r\n");
    assert_eq!(last.header("Connection"), Some("close"));
    assert!(client.closed());
}

#[test]
fn http_1_0_gets_its_answer_and_a_close() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"old").unwrap();
    let mut client = RawClient::connect(serve(dir.path()));
    client.send(b"GET /f HTTP/1.0\r\n\r\n");
    assert_eq!(client.read_response(false).body, b"old");
    assert!(client.closed());
}

#[test]
fn directories_redirect_list_escaped_and_describe_themselves() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/<b>&\"x y.txt"), b"odd").unwrap();
    std::fs::write(dir.path().join("sub/big"), pattern((3 << 20) + 5, 2)).unwrap();
    std::os::unix::fs::symlink("big", dir.path().join("sub/link")).unwrap();
    let mut client = RawClient::connect(serve(dir.path()));
    let redirect = client.get("/sub?manifest", "");
    assert_eq!(redirect.status, 301);
    assert_eq!(redirect.header("Location"), Some("/sub/?manifest"));
    let listing = client.get("/sub/", "").text();
    assert!(listing.contains("&lt;b&gt;&amp;&quot;x y.txt"), "{listing}");
    assert!(
        listing.contains("href=\"./%3Cb%3E%26%22x%20y.txt\""),
        "{listing}"
    );
    assert!(!listing.contains("<b>"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&client.get("/sub/?manifest", "").body).unwrap();
    let entries = manifest["entries"].as_array().unwrap();
    let big = entries.iter().find(|e| e["path"] == "big").unwrap();
    assert_eq!(big["size"], (3 << 20) + 5);
    let hashes = big["blake3"].as_array().unwrap();
    assert_eq!(hashes.len(), 4);
    let data = pattern((3 << 20) + 5, 2);
    assert_eq!(hashes[3], blake3::hash(&data[3 << 20..]).to_hex().as_str());
    let link = entries.iter().find(|e| e["path"] == "link").unwrap();
    assert_eq!(
        (link["type"].as_str(), link["link_target"].as_str()),
        (Some("symlink"), Some("big"))
    );
    // A file's own manifest.
    let own: serde_json::Value =
        serde_json::from_slice(&client.get("/sub/big?manifest", "").body).unwrap();
    assert_eq!(own["entries"][0]["blake3"], big["blake3"]);
}

#[test]
fn writes_are_refused_with_405_and_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut client = RawClient::connect(serve(dir.path()));
    client.send(b"PUT /new HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc");
    let response = client.read_response(false);
    assert_eq!(response.status, 405);
    assert_eq!(response.header("Allow"), Some("GET, HEAD"));
    assert!(response.text().contains("read-only"), "{}", response.text());
    assert!(!dir.path().join("new").exists());
}

#[test]
fn curl_and_wget_fetch_files_ranges_and_trees() {
    if !require_tool("curl") || !require_tool("wget") || !require_tool("tar") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("tree/deep/er")).unwrap();
    let big = pattern((5 << 20) + 3, 9);
    std::fs::write(root.join("big"), &big).unwrap();
    for (i, size) in SIZES.iter().enumerate() {
        std::fs::write(root.join(format!("tree/f{size}")), pattern(*size, i as u64)).unwrap();
    }
    std::fs::write(root.join("tree/deep/er/small"), b"s").unwrap();
    let long_name = format!("tree/deep/{}", "n".repeat(150));
    std::fs::write(root.join(&long_name), b"long").unwrap();
    std::os::unix::fs::symlink("../f1", root.join("tree/deep/link")).unwrap();
    let url = format!("http://{}", serve(&root));
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();

    let status = Command::new("curl")
        .args(["-sS", "--fail", "-o"])
        .arg(out.join("curl-big"))
        .arg(format!("{url}/big"))
        .status()
        .unwrap();
    assert!(status.success());
    assert!(std::fs::read(out.join("curl-big")).unwrap() == big);

    let ranged = Command::new("curl")
        .args(["-sS", "--fail", "-r", "1000-2999"])
        .arg(format!("{url}/big"))
        .output()
        .unwrap();
    assert!(ranged.status.success());
    assert!(ranged.stdout == big[1000..3000]);

    // curl reusing one connection for two URLs.
    let twice = Command::new("curl")
        .args(["-sS", "--fail", "-v", "-o", "/dev/null", "-o", "/dev/null"])
        .arg(format!("{url}/big"))
        .arg(format!("{url}/tree/f1"))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&twice.stderr);
    assert!(
        log.contains("Re-using existing connection") || log.contains("Reusing existing"),
        "{log}"
    );

    let status = Command::new("wget")
        .args(["-q", "-O"])
        .arg(out.join("wget-big"))
        .arg(format!("{url}/big"))
        .status()
        .unwrap();
    assert!(status.success());
    assert!(std::fs::read(out.join("wget-big")).unwrap() == big);

    let extract = out.join("tree");
    std::fs::create_dir(&extract).unwrap();
    let pipeline = format!(
        "curl -sS --fail '{url}/tree/?tar' | tar -x -f - -C '{}'",
        extract.display()
    );
    let status = Command::new("sh")
        .args(["-c", &pipeline])
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    for (i, size) in SIZES.iter().enumerate() {
        assert!(
            std::fs::read(extract.join(format!("f{size}"))).unwrap() == pattern(*size, i as u64),
            "f{size}"
        );
    }
    assert_eq!(std::fs::read(extract.join("deep/er/small")).unwrap(), b"s");
    assert_eq!(
        std::fs::read(extract.join(long_name.strip_prefix("tree/").unwrap())).unwrap(),
        b"long"
    );
    assert_eq!(
        std::fs::read_link(extract.join("deep/link")).unwrap(),
        std::path::Path::new("../f1")
    );
}

const TOKEN: &str = "test-token-0123456789abcdef";

/// `PUT target` with these extra header lines (each ending in CRLF) and
/// `body`, on a connection of its own; the answer.
fn raw_put(
    address: std::net::SocketAddr,
    target: &str,
    headers: &str,
    body: &[u8],
) -> common::Response {
    let mut client = RawClient::connect(address);
    let mut raw = format!(
        "PUT {target} HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\n{headers}\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    client.send(&raw);
    client.read_response(false)
}

/// A PUT with `Content-Range` writes one piece of a file into a hidden
/// partial file; pieces may come in any order and overlap; a question
/// (`bytes */TOTAL`) says what arrived; the file appears at its name only
/// when whole, and nothing is left beside it. Malformed or inconsistent
/// ranges are refused with 400 and write nothing.
#[test]
fn ranged_puts_assemble_a_file_in_any_order_and_commit_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let address = common::serve_with(dir.path(), |config| config.token = Some(TOKEN.into()));
    let put = |range: &str, upload: &str, body: &[u8]| {
        let headers = format!(
            "Authorization: Bearer {TOKEN}\r\nContent-Range: {range}\r\nFlexio-Upload: {upload}\r\n"
        );
        raw_put(address, "/assembled", &headers, body)
    };
    let data = pattern(300_000, 77);
    let total = data.len();
    let piece = |start: usize, end: usize| {
        (
            format!("bytes {start}-{}/{total}", end - 1),
            &data[start..end],
        )
    };

    let asked = put(&format!("bytes */{total}"), "u1", b"");
    assert_eq!(asked.status, 202);
    assert_eq!(asked.header("range"), None);

    for (start, end) in [(200_000, 300_000), (0, 120_000), (100_000, 150_000)] {
        let (range, body) = piece(start, end);
        let answer = put(&range, "u1", body);
        assert_eq!(answer.status, 202, "{}", answer.text());
    }
    let asked = put(&format!("bytes */{total}"), "u1", b"");
    assert_eq!(asked.header("range"), Some("bytes=0-149999,200000-299999"));
    assert!(!dir.path().join("assembled").exists());
    // Another upload of the same name (another source) does not see them.
    let other = put(&format!("bytes */{total}"), "u2", b"");
    assert_eq!(other.header("range"), None);

    for bad in [
        format!("bytes 0-{total}/{total}"),
        format!("bytes 10-5/{total}"),
        "bytes 0-9/x".to_string(),
        "lines 0-9/10".to_string(),
    ] {
        let answer = put(&bad, "u1", &data[..10]);
        assert_eq!(answer.status, 400, "{bad}: {}", answer.text());
    }
    // Content-Length and Content-Range disagree.
    assert_eq!(
        put(&format!("bytes 0-9/{total}"), "u1", &data[..11]).status,
        400
    );
    // A question carries no body.
    assert_eq!(put(&format!("bytes */{total}"), "u1", b"x").status, 400);
    assert_eq!(put(&format!("bytes */{total}"), "bad id!", b"").status, 400);

    let (range, body) = piece(150_000, 200_000);
    let done = put(&range, "u1", body);
    assert_eq!(done.status, 201, "{}", done.text());
    assert!(std::fs::read(dir.path().join("assembled")).unwrap() == data);
    // The other upload's question made no file; the finished one's partial
    // file and journal are gone.
    assert_eq!(common::names_in(dir.path()), vec!["assembled".to_string()]);
}

/// `put_with` sends a large file in pieces over several connections, and
/// an upload interrupted after some pieces sends only the rest when run
/// again.
#[test]
fn put_in_pieces_over_streams_and_resumed_sends_only_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let address = common::serve_with(dir.path(), |config| config.token = Some(TOKEN.into()));
    let sources = tempfile::tempdir().unwrap();
    let source = sources.path().join("big");
    let data = pattern(1 << 20, 5);
    std::fs::write(&source, &data).unwrap();
    let url = format!("http://{address}/big");
    let options = flexio_net::client::PutOptions {
        streams: 3,
        piece: 100 << 10,
        ..Default::default()
    };
    let report = flexio_net::client::put_with(&source, &url, TOKEN, &options).unwrap();
    assert_eq!((report.status, report.pieces, report.streams), (201, 11, 3));
    assert_eq!((report.sent_bytes, report.resumed_bytes), (1 << 20, 0));
    assert!(std::fs::read(dir.path().join("big")).unwrap() == data);
    assert_eq!(common::names_in(dir.path()), vec!["big".to_string()]);

    // An earlier attempt got the first four pieces there, then stopped:
    // sent here by hand, as its pieces would have been.
    let second = pattern(1 << 20, 6);
    std::fs::write(&source, &second).unwrap();
    let stat = std::fs::metadata(&source).unwrap();
    let upload = {
        use std::os::unix::fs::MetadataExt;
        let mut hasher = blake3::Hasher::new();
        for value in [
            stat.dev(),
            stat.ino(),
            stat.size(),
            stat.mtime() as u64,
            stat.mtime_nsec() as u64,
        ] {
            hasher.update(&value.to_le_bytes());
        }
        hasher.finalize().to_hex()[..32].to_string()
    };
    for k in 0..4usize {
        let (start, end) = (k * (100 << 10), (k + 1) * (100 << 10));
        let headers = format!(
            "Authorization: Bearer {TOKEN}\r\nContent-Range: bytes {start}-{}/{}\r\nFlexio-Upload: {upload}\r\n",
            end - 1,
            1 << 20
        );
        let answer = raw_put(address, "/big", &headers, &second[start..end]);
        assert_eq!(answer.status, 202);
    }
    let report = flexio_net::client::put_with(&source, &url, TOKEN, &options).unwrap();
    assert_eq!(report.status, 200);
    assert_eq!(report.resumed_bytes, 4 * (100 << 10));
    assert_eq!(report.sent_bytes, (1 << 20) - 4 * (100 << 10));
    assert_eq!(report.pieces, 7);
    assert!(std::fs::read(dir.path().join("big")).unwrap() == second);
    assert_eq!(common::names_in(dir.path()), vec!["big".to_string()]);
}

/// `MKCOL` makes one directory beneath the root, authorised as a PUT is,
/// with WebDAV's answers for what is there already (405), a missing
/// parent (409), a body (415); a read-only server refuses it (405 with
/// `Allow: GET, HEAD`), and a path that climbs out is 403.
#[test]
fn mkcol_makes_one_directory_with_webdavs_answers() {
    let dir = tempfile::tempdir().unwrap();
    let writable = common::serve_with(dir.path(), |config| config.token = Some(TOKEN.into()));
    let read_only = common::serve(dir.path());
    let mkcol = |address, target: &str, authorization: &str, body: &str| {
        let mut client = RawClient::connect(address);
        client.send(
            format!(
                "MKCOL {target} HTTP/1.1\r\nHost: test\r\nAuthorization: {authorization}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        client.read_response(false)
    };
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(mkcol(writable, "/made", &bearer, "").status, 201);
    assert!(dir.path().join("made").is_dir());
    assert_eq!(mkcol(writable, "/made/deeper", &bearer, "").status, 201);
    assert_eq!(mkcol(writable, "/made", &bearer, "").status, 405);
    assert_eq!(mkcol(writable, "/missing/child", &bearer, "").status, 409);
    assert_eq!(mkcol(writable, "/with-body", &bearer, "x").status, 415);
    assert_eq!(mkcol(writable, "/made/../../out", &bearer, "").status, 403);
    let wrong = mkcol(writable, "/wrong", "Bearer not-the-token-at-all", "");
    assert_eq!(wrong.status, 401);
    let refused = mkcol(read_only, "/ro", &bearer, "");
    assert_eq!(
        (refused.status, refused.header("allow")),
        (405, Some("GET, HEAD"))
    );
    for name in ["with-body", "wrong", "ro"] {
        assert!(!dir.path().join(name).exists(), "{name}");
    }
}

/// `put_tree` uploads a tree (directories by MKCOL, files by PUT over
/// several connections, a file larger than a piece in pieces) byte-exact,
/// skips symlinks saying so, and run again into the same place replaces
/// the file that changed, leaves the others, and enters the directories.
#[test]
fn a_tree_is_uploaded_with_mkcol_and_put_and_again_over_itself() {
    let dir = tempfile::tempdir().unwrap();
    let address = common::serve_with(dir.path(), |config| config.token = Some(TOKEN.into()));
    let sources = tempfile::tempdir().unwrap();
    let tree = sources.path().join("tree");
    std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(tree.join("empty")).unwrap();
    let files = [
        ("top", 10usize),
        ("sub/a b%c", 5000),
        ("sub/deeper/big", 300_000),
        ("sub/deeper/zero", 0),
    ];
    for (i, (name, size)) in files.iter().enumerate() {
        std::fs::write(tree.join(name), pattern(*size, i as u64)).unwrap();
    }
    std::os::unix::fs::symlink("top", tree.join("link")).unwrap();
    let options = flexio_net::client::PutOptions {
        streams: 3,
        piece: 100_000,
        ..Default::default()
    };
    let url = format!("http://{address}/up/");
    let report = flexio_net::client::put_tree(&tree, &url, TOKEN, &options).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!((report.files, report.directories_made), (4, 4));
    assert_eq!(report.bytes, 305_010);
    assert_eq!(report.skipped.len(), 1);
    for (i, (name, size)) in files.iter().enumerate() {
        assert!(
            std::fs::read(dir.path().join("up").join(name)).unwrap() == pattern(*size, i as u64),
            "{name}"
        );
    }
    assert!(dir.path().join("up/empty").is_dir());
    assert!(!dir.path().join("up/link").exists());
    // Nothing hidden left beside the big file's pieces.
    assert_eq!(
        common::names_in(&dir.path().join("up/sub/deeper")),
        vec!["big", "zero"]
    );

    std::fs::write(tree.join("top"), b"changed").unwrap();
    let again = flexio_net::client::put_tree(&tree, &url, TOKEN, &options).unwrap();
    assert!(again.failures.is_empty(), "{:?}", again.failures);
    assert_eq!(
        (again.files, again.unchanged, again.directories_made),
        (1, 3, 0)
    );
    assert_eq!(
        std::fs::read(dir.path().join("up/top")).unwrap(),
        b"changed"
    );

    let wrong = flexio_net::client::put_tree(
        &tree,
        &format!("http://{address}/other/"),
        "not-the-token-at-all",
        &options,
    );
    assert!(
        matches!(wrong, Err(flexio_net::Error::Status { status: 401, .. })),
        "{wrong:?}"
    );
    assert!(!dir.path().join("other").exists());
}

/// A signed PUT (as `flexio put` sends across a plain link) is taken from
/// any peer, exactly once: the same bytes again are a replay; the
/// signature does not carry over to another target or length; a wrong
/// token's signature is refused. Each refusal is a 401 saying why, and
/// writes nothing.
#[test]
fn signed_puts_are_taken_once_and_only_for_what_was_signed() {
    let dir = tempfile::tempdir().unwrap();
    let address = common::serve_with(dir.path(), |config| config.token = Some(TOKEN.into()));
    let put = |target: &str, authorization: &str, body: &[u8]| {
        raw_put(
            address,
            target,
            &format!("Authorization: {authorization}\r\n"),
            body,
        )
    };
    // raw_put sends `Host: test`.
    let request = |target| flexio_net::signing::SignedRequest {
        method: "PUT",
        authority: "test",
        target,
        length: 5,
        ..Default::default()
    };
    let signed = flexio_net::signing::sign(TOKEN, &request("/signed")).unwrap();
    let created = put("/signed", &signed, b"hello");
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(std::fs::read(dir.path().join("signed")).unwrap(), b"hello");

    let replayed = put("/signed", &signed, b"HELLO");
    assert_eq!(replayed.status, 401);
    assert!(replayed.text().contains("replay"), "{}", replayed.text());
    assert_eq!(std::fs::read(dir.path().join("signed")).unwrap(), b"hello");

    let fresh = flexio_net::signing::sign(TOKEN, &request("/signed")).unwrap();
    for (target, body) in [("/elsewhere", &b"hello"[..]), ("/signed", &b"hello!"[..])] {
        let refused = put(target, &fresh, body);
        assert_eq!(refused.status, 401, "{target}");
        assert!(
            refused.text().contains("does not match"),
            "{}",
            refused.text()
        );
        assert!(refused
            .header("www-authenticate")
            .is_some_and(|v| v.contains("FlexioSig")));
    }
    assert!(!dir.path().join("elsewhere").exists());

    // Signed for another host: refused here.
    let elsewhere = flexio_net::signing::SignedRequest {
        authority: "other-server",
        ..request("/signed")
    };
    let signed = flexio_net::signing::sign(TOKEN, &elsewhere).unwrap();
    assert_eq!(put("/signed", &signed, b"HELLO").status, 401);
    assert_eq!(std::fs::read(dir.path().join("signed")).unwrap(), b"hello");

    let forged =
        flexio_net::signing::sign("not-the-token-0123456789", &request("/forged")).unwrap();
    assert_eq!(put("/forged", &forged, b"hello").status, 401);
    assert!(!dir.path().join("forged").exists());
}

#[test]
fn put_with_the_token_writes_files_byte_exact_and_curl_uploads_too() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("in")).unwrap();
    let address = common::serve_with(dir.path(), |config| config.token = Some(TOKEN.into()));
    let sources = tempfile::tempdir().unwrap();
    for (i, size) in SIZES.iter().enumerate() {
        let source = sources.path().join(format!("s{size}"));
        std::fs::write(&source, pattern(*size, i as u64 + 40)).unwrap();
        let url = format!("http://{address}/in/up{size}");
        let report =
            flexio_net::client::put(&source, &url, TOKEN, std::time::Duration::from_secs(20))
                .unwrap_or_else(|e| panic!("{size}: {e}"));
        assert_eq!(report.status, 201);
        assert!(
            std::fs::read(dir.path().join(format!("in/up{size}"))).unwrap()
                == pattern(*size, i as u64 + 40)
        );
        // Again: replaced, and served back the same.
        let again =
            flexio_net::client::put(&source, &url, TOKEN, std::time::Duration::from_secs(20))
                .unwrap();
        assert_eq!(again.status, 200);
        let mut client = RawClient::connect(address);
        assert!(client.get(&format!("/in/up{size}"), "").body == pattern(*size, i as u64 + 40));
    }
    if !require_tool("curl") {
        return;
    }
    let big = sources.path().join(format!("s{}", 8 << 20));
    let status = Command::new("curl")
        .args(["-sS", "--fail", "-o", "/dev/null", "-H"])
        .arg(format!("Authorization: Bearer {TOKEN}"))
        .arg("-T")
        .arg(&big)
        .arg(format!("http://{address}/in/by-curl"))
        .status()
        .unwrap();
    assert!(status.success());
    assert!(std::fs::read(dir.path().join("in/by-curl")).unwrap() == std::fs::read(&big).unwrap());
}

#[test]
fn a_manifest_follows_a_file_rewritten_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, pattern(3 << 20, 1)).unwrap();
    let mut client = RawClient::connect(serve(dir.path()));
    let hashes = |client: &mut RawClient| {
        let manifest: serde_json::Value =
            serde_json::from_slice(&client.get("/f?manifest", "").body).unwrap();
        manifest["entries"][0]["blake3"].clone()
    };
    let first = hashes(&mut client);
    assert_eq!(first, hashes(&mut client));
    // Same size, same inode, new bytes in the middle chunk.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, b"changed", (1 << 20) + 5).unwrap();
    drop(file);
    let second = hashes(&mut client);
    assert_eq!(first[0], second[0]);
    assert_ne!(first[1], second[1]);
    let mut expected = pattern(3 << 20, 1);
    expected[(1 << 20) + 5..(1 << 20) + 12].copy_from_slice(b"changed");
    assert_eq!(
        second[1],
        blake3::hash(&expected[1 << 20..2 << 20]).to_hex().as_str()
    );
}

#[test]
fn every_file_to_socket_mechanism_serves_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern((1 << 20) + 77, 13);
    std::fs::write(dir.path().join("f"), &data).unwrap();
    for mechanism in flexio_net::server::BODY_MECHANISMS {
        let address = common::serve_with(dir.path(), |config| config.mechanism = mechanism);
        let mut client = RawClient::connect(address);
        assert!(client.get("/f", "").body == data, "{mechanism}");
        let part = client.get("/f", "Range: bytes=5-70000\r\n");
        assert_eq!(part.status, 206, "{mechanism}");
        assert!(part.body == data[5..=70_000], "{mechanism}");
        // The tree holds only f: its body follows the first header block.
        let tar = client.get("/?tar", "");
        assert_eq!(tar.status, 200, "{mechanism}");
        assert!(tar.body[512..512 + data.len()] == data[..], "{mechanism}");
    }
}

/// Issue 24: a name with a newline was listed in the index and the
/// manifest, then a GET of it answered 400. Issue 40: it was then left out
/// of every listing, so that it vanished unsaid. Listed or not, what is
/// listed is what a GET fetches: now the index links it percent-encoded,
/// the manifest and the tar stream hold it, and a GET of it answers.
#[test]
fn a_name_with_a_newline_is_listed_percent_encoded_and_a_get_fetches_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a\nb"), b"newline").unwrap();
    std::fs::write(dir.path().join("fine"), b"shown").unwrap();
    let mut client = RawClient::connect(serve(dir.path()));
    let listing = client.get("/", "").text();
    assert!(listing.contains("href=\"./fine\""), "{listing}");
    assert!(listing.contains("href=\"./a%0Ab\""), "{listing}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&client.get("/?manifest", "").body).unwrap();
    let paths: Vec<&str> = manifest["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a%0Ab", "fine"]);
    assert_eq!(manifest["entries"][0]["path_percent_encoded"], true);
    for path in paths {
        let response = client.get(&format!("/{path}"), "");
        assert_eq!(response.status, 200, "{path}");
    }
    let tar = client.get("/?tar", "").body;
    assert!(
        tar.windows(3).any(|w| w == b"a\nb"),
        "the tar stream lacks it"
    );
}

/// Issue 24: a request target in absolute form (`GET http://host/path`)
/// answered 400; RFC 9112 says a server must accept it.
#[test]
fn an_absolute_form_request_target_is_served_as_its_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"absolute").unwrap();
    let address = serve(dir.path());
    let mut client = RawClient::connect(address);
    let response = client.get(&format!("http://{address}/f"), "");
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.body, b"absolute");
    let listing = client.get(&format!("http://{address}"), "");
    assert_eq!(listing.status, 200);
    assert!(
        listing.text().contains("href=\"./f\""),
        "{}",
        listing.text()
    );
}

/// `wget -r` against the listing fetches each file once: the tar and the
/// manifest of a directory are forms, not links a crawler follows (they
/// were links, and wget fetched a 50 MiB tree as 101 MiB). The listing
/// shows size and modification time, as nginx's autoindex does.
#[test]
fn wget_mirror_of_the_listing_fetches_each_file_once() {
    if !require_tool("wget") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    let files = [("one", 70_000), ("a/two", 5_000), ("a/b/three", 123_456)];
    for (i, (name, size)) in files.iter().enumerate() {
        std::fs::write(root.join(name), pattern(*size, i as u64)).unwrap();
    }
    let address = serve(&root);
    let url = format!("http://{address}");
    let text = RawClient::connect(address).get("/a/", "").text();
    assert!(text.contains("two</a> — 4.88 KiB, "), "{text}");
    assert!(text.contains(" GMT</li>"), "{text}");
    assert!(!text.contains("href=\"?"), "{text}");
    // What the listing's buttons submit.
    for (query, kind) in [
        ("tar=", "application/x-tar"),
        ("manifest=", "application/json"),
    ] {
        let response = RawClient::connect(address).get(&format!("/a/?{query}"), "");
        assert_eq!(response.status, 200, "?{query}");
        assert!(
            response.header("Content-Type").unwrap().starts_with(kind),
            "?{query}"
        );
    }
    let out = dir.path().join("out");
    let status = Command::new("wget")
        .args(["-q", "-r", "-np", "-nH", "-l", "5", "-P"])
        .arg(&out)
        .arg(format!("{url}/"))
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success() || status.code() == Some(8), "{status}");
    let mut fetched = Vec::new();
    let mut stack = vec![out.clone()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                fetched.push(path.strip_prefix(&out).unwrap().display().to_string());
            }
        }
    }
    fetched.retain(|name| !name.ends_with("index.html"));
    fetched.sort();
    assert_eq!(fetched, ["a/b/three", "a/two", "one"]);
    for (i, (name, size)) in files.iter().enumerate() {
        assert!(std::fs::read(out.join(name)).unwrap() == pattern(*size, i as u64));
    }
}
