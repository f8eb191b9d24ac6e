//! Hostile peers. A client that climbs out with `..` (plain or encoded),
//! follows symlinks out of the served directory, sends a 64 KiB head,
//! dribbles its head (slowloris), hoards idle connections or sends
//! garbage; a server that closes early, sends an endless head, lies about
//! Content-Length, says nothing, or sends a manifest that does not match.
//! Each gets a clear answer or error; nothing escapes and nothing is left
//! at the destination.

use crate::common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{
    names_in, pattern, read_head, require_root, serve, serve_with, RawClient, SmallTmpfs,
};
use flexio_net::client::{get, GetOptions};
use proptest::prelude::*;

/// Content of a file outside the served directory: never to be seen.
const SECRET: &[u8] = b"SECRET-OUTSIDE-THE-ROOT";

/// A served directory `root` beside a directory `outside` holding the
/// secret, with symlinks inside pointing out.
fn tree_with_links_out() -> (tempfile::TempDir, std::path::PathBuf) {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("root");
    let outside = top.path().join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), SECRET).unwrap();
    std::fs::write(root.join("sub/ok"), b"fine").unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), root.join("abs-link")).unwrap();
    std::os::unix::fs::symlink("../outside/secret", root.join("rel-link")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("dir-link")).unwrap();
    std::os::unix::fs::symlink("ok", root.join("sub/inner-link")).unwrap();
    (top, root)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn climbing_out_is_refused_however_it_is_spelled() {
    let (_top, root) = tree_with_links_out();
    let mut client = RawClient::connect(serve(&root));
    for target in [
        "/../outside/secret",
        "/../../../../etc/passwd",
        "/%2e%2e/outside/secret",
        "/%2E%2E/%2e%2e/etc/passwd",
        "/sub/..%2f..%2foutside%2fsecret",
        "/sub/%2e%2e/%2e%2e/outside/secret",
    ] {
        let response = client.get(target, "");
        assert_eq!(response.status, 403, "{target}");
        assert!(!contains(&response.body, SECRET));
    }
    for (target, status) in [
        ("//etc/passwd", 404),
        ("/sub/ok%00.txt", 400),
        ("/a%zz", 400),
    ] {
        let response = client.get(target, "");
        assert_eq!(response.status, status, "{target}");
    }
    // The absolute form is taken as its path (RFC 9112), beneath the
    // root like any other: another host's name changes nothing.
    let absolute_form = client.get("http://elsewhere/etc/passwd", "");
    assert_eq!(absolute_form.status, 404);
    let absolute_climb = client.get("http://elsewhere/../outside/secret", "");
    assert_eq!(absolute_climb.status, 403);
    assert!(!contains(&absolute_climb.body, SECRET));
}

#[test]
fn symlinks_inside_the_root_are_never_followed() {
    let (_top, root) = tree_with_links_out();
    let mut client = RawClient::connect(serve(&root));
    for target in [
        "/abs-link",
        "/rel-link",
        "/dir-link/secret",
        "/dir-link/",
        "/sub/inner-link",
    ] {
        let response = client.get(target, "");
        assert_eq!(response.status, 403, "{target}");
        assert!(!contains(&response.body, SECRET), "{target}");
    }
    // Trees describe links as links: no content from outside.
    for target in ["/?tar", "/?manifest", "/"] {
        let response = client.get(target, "");
        assert_eq!(response.status, 200, "{target}");
        assert!(!contains(&response.body, SECRET), "{target}");
        assert!(
            !contains(&response.body, blake3::hash(SECRET).to_hex().as_bytes()),
            "{target}"
        );
    }
}

#[test]
fn a_64_kib_head_gets_431() {
    let dir = tempfile::tempdir().unwrap();
    let mut client = RawClient::connect(serve(dir.path()));
    let mut head = b"GET / HTTP/1.1\r\nHost: t\r\n".to_vec();
    while head.len() < 64 << 10 {
        head.extend_from_slice(
            b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
        );
    }
    head.extend_from_slice(b"\r\n");
    // The server may close before taking it all: a failed write is fine.
    let _ = client.stream.write_all(&head);
    let response = client.read_response(false);
    assert_eq!(response.status, 431);
    assert!(
        response.text().contains("over 16384 bytes"),
        "{}",
        response.text()
    );
}

#[test]
fn a_slowloris_client_is_cut_off_at_the_head_deadline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let limit = Duration::from_secs(2);
    let address = serve_with(dir.path(), |config| config.head_timeout = limit);
    let mut client = RawClient::connect(address);
    let mut writer = client.stream.try_clone().unwrap();
    let started = Instant::now();
    let dribble = std::thread::spawn(move || {
        for byte in b"GET /f HTTP/1.1\r\nHost: slow\r\n\r\n" {
            if writer.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let response = client.try_read_response(false);
    let cut_after = started.elapsed();
    assert_eq!(response.map(|r| r.status), Some(408));
    assert!(client.closed());
    assert!(
        cut_after >= limit && cut_after < limit + Duration::from_millis(1500),
        "cut after {cut_after:?}"
    );
    dribble.join().unwrap();
    // A connection that never sends a byte is closed as well.
    let mut silent = RawClient::connect(address);
    let started = Instant::now();
    assert!(silent.closed() || silent.closed());
    assert!(started.elapsed() < limit + Duration::from_millis(1500));
}

#[test]
fn idle_connections_do_not_starve_the_workers_and_the_limit_holds() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"served").unwrap();
    let address = serve_with(dir.path(), |config| {
        config.workers = 2;
        config.max_connections = 210;
        // The accepted ones among the last 20 get their 408 this soon;
        // and no sooner, or the 200 idle ones are cut before the last 20
        // come on a loaded machine (3 s: none of 20 refused, once in
        // four runs beside the other network tests).
        config.head_timeout = Duration::from_secs(10);
    });
    let idle: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(address).unwrap())
        .collect();
    // Half of them send half a head.
    for stream in idle.iter().step_by(2) {
        (&*stream).write_all(b"GET /f HTTP/1.1\r\n").unwrap();
    }
    let started = Instant::now();
    let mut client = RawClient::connect(address);
    assert_eq!(client.get("/f", "").body, b"served");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let mut more: Vec<RawClient> = (0..20).map(|_| RawClient::connect(address)).collect();
    let refused = more
        .iter_mut()
        .filter_map(|c| c.try_read_response(false))
        .filter(|r| r.status == 503)
        .count();
    assert!(refused >= 9, "only {refused} of 20 over the limit got 503");
    drop(idle);
}

#[test]
fn garbage_gets_400_and_a_close() {
    let dir = tempfile::tempdir().unwrap();
    let mut client = RawClient::connect(serve(dir.path()));
    client.send(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n");
    assert_eq!(client.read_response(false).status, 400);
    assert!(client.closed());
}

// ---- hostile servers for `get` ----

/// A server on loopback that runs `handler` for each of its first
/// `connections` connections.
fn fake_server(
    connections: usize,
    handler: impl Fn(usize, TcpStream) + Send + Sync + 'static,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let handler = std::sync::Arc::new(handler);
        for index in 0..connections {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let handler = std::sync::Arc::clone(&handler);
            std::thread::spawn(move || handler(index, stream));
        }
    });
    address
}

/// Holds the connection open and says nothing until the client gives up
/// and closes it (read returns 0) or resets it.
fn stay_silent_until_closed(mut stream: TcpStream) {
    let mut sink = [0u8; 4096];
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
}

fn quick(streams: usize) -> GetOptions {
    GetOptions {
        streams,
        piece_size: 1 << 20,
        timeout: Duration::from_secs(1),
        ..GetOptions::default()
    }
}

/// Fetches from `address` into a fresh directory; the error, checking
/// that the directory is still empty.
fn get_fails(address: SocketAddr, options: &GetOptions) -> (flexio_net::Error, Duration) {
    let out = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let error = get(
        &format!("http://{address}/file"),
        Some(&out.path().join("file")),
        options,
    )
    .unwrap_err();
    let took = started.elapsed();
    assert_eq!(names_in(out.path()), Vec::<String>::new(), "{error}");
    (error, took)
}

#[test]
fn a_server_that_closes_early_leaves_nothing_and_names_the_offset() {
    let address = fake_server(1, |_, mut stream| {
        read_head(&mut stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
        let _ = stream.write_all(&pattern(1000, 1));
    });
    let (error, _) = get_fails(address, &quick(1));
    let text = error.to_string();
    assert!(
        text.contains("closed the connection at byte 1000 of 1000000"),
        "{text}"
    );
}

#[test]
fn an_endless_response_head_is_refused_at_16_kib() {
    let address = fake_server(1, |_, mut stream| {
        read_head(&mut stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n");
        for _ in 0..(64 << 10) / 16 {
            if stream.write_all(b"X-Junk: aaaaaa\r\n").is_err() {
                return;
            }
        }
    });
    let (error, _) = get_fails(address, &quick(1));
    assert!(error.to_string().contains("over 16384 bytes"), "{error}");
}

#[test]
fn a_lying_content_length_and_a_silent_server_time_out() {
    let lying = fake_server(1, |_, mut stream| {
        read_head(&mut stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\nonly this");
        stay_silent_until_closed(stream);
    });
    let (error, took) = get_fails(lying, &quick(1));
    assert!(error.to_string().contains("at byte 9"), "{error}");
    assert!(took < Duration::from_secs(4), "{took:?}");

    let silent = fake_server(1, |_, mut stream| {
        read_head(&mut stream);
        stay_silent_until_closed(stream);
    });
    let (error, took) = get_fails(silent, &quick(1));
    assert!(
        matches!(error.cause(), flexio_net::Error::Timeout { .. }),
        "{error}"
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[test]
fn sizes_beyond_the_disk_and_unframed_bodies_are_refused_before_writing() {
    let huge = fake_server(1, |_, mut stream| {
        read_head(&mut stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387904\r\n\r\n");
    });
    let (error, _) = get_fails(huge, &quick(1));
    assert!(error.to_string().contains("free there"), "{error}");
    // Issue 24: a run-time failure (exit 1), not a usage error (exit 2).
    assert!(
        matches!(&error, flexio_net::Error::Move(flexio::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::StorageFull),
        "{error:?}"
    );

    let chunked = fake_server(1, |_, mut stream| {
        read_head(&mut stream);
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        );
    });
    let (error, _) = get_fails(chunked, &quick(1));
    assert!(error.to_string().contains("chunked"), "{error}");

    let unframed = fake_server(1, |_, mut stream| {
        read_head(&mut stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc");
    });
    let (error, _) = get_fails(unframed, &quick(1));
    assert!(error.to_string().contains("no Content-Length"), "{error}");

    let two_lengths = fake_server(1, |_, mut stream| {
        read_head(&mut stream);
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd");
    });
    let (error, _) = get_fails(two_lengths, &quick(1));
    assert!(error.to_string().contains("conflicting"), "{error}");
}

#[test]
fn a_piece_with_the_wrong_content_range_fails_the_whole_get() {
    let piece = 1u64 << 20;
    let data = pattern(2 * piece as usize, 4);
    let address = fake_server(4, move |_, mut stream| {
        while let Some(head) = read_head(&mut stream) {
            let first_piece = head.contains("Range: bytes=0-");
            // Every later piece is answered with the first piece's bytes.
            let reply = format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Length: {piece}\r\nContent-Range: bytes 0-{}/{}\r\n\r\n",
                piece - 1,
                2 * piece
            );
            if stream.write_all(reply.as_bytes()).is_err()
                || stream.write_all(&data[..piece as usize]).is_err()
                || !first_piece
            {
                return;
            }
        }
    });
    let (error, _) = get_fails(address, &quick(2));
    assert!(
        error
            .to_string()
            .contains("asked for bytes 1048576-2097151"),
        "{error}"
    );
}

#[test]
fn a_manifest_that_does_not_match_keeps_the_file_from_its_name() {
    let data = pattern(3 << 20, 6);
    let address = fake_server(2, move |_, mut stream| {
        while let Some(head) = read_head(&mut stream) {
            let body = if head.starts_with("GET /file?manifest") {
                common::manifest_of(&data, Some(2))
            } else {
                data.clone()
            };
            let reply = format!(
                "HTTP/1.1 200 OK\r\nServer: flexio\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            if stream.write_all(reply.as_bytes()).is_err() || stream.write_all(&body).is_err() {
                return;
            }
        }
    });
    let (error, _) = get_fails(address, &quick(1));
    assert!(
        matches!(
            error.cause(),
            flexio_net::Error::VerifyMismatch {
                chunk: 2,
                offset: 2097152,
                ..
            }
        ),
        "{error}"
    );
}

// ---- fuzz-style: arbitrary requests against a live server ----

/// Cases per property; `FLEXIO_FUZZ_CASES=1000000 cargo test -p flexio-net
/// --release --test net_hostile fuzz` for a long run.
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("FLEXIO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_string()),
        Just("%2e%2e".to_string()),
        Just("%2E.".to_string()),
        Just(".".to_string()),
        Just("".to_string()),
        Just("sub".to_string()),
        Just("ok".to_string()),
        Just("abs-link".to_string()),
        Just("rel-link".to_string()),
        Just("dir-link".to_string()),
        Just("secret".to_string()),
        Just("outside".to_string()),
        Just("%00".to_string()),
        Just("%2f".to_string()),
        Just("%".to_string()),
        "[ -~]{0,12}",
    ]
}

fn request() -> impl Strategy<Value = Vec<u8>> {
    let method = prop_oneof![
        Just("GET".to_string()),
        Just("HEAD".to_string()),
        Just("PUT".to_string()),
        Just("get".to_string()),
        "[A-Z]{0,8}",
    ];
    let version = prop_oneof![
        Just("HTTP/1.1".to_string()),
        Just("HTTP/1.0".to_string()),
        Just("HTTP/2.0".to_string()),
        "[ -~]{0,10}",
    ];
    let query = prop::sample::select(vec!["", "?tar", "?manifest", "?x"]);
    let header = prop_oneof![
        "Range: bytes=[0-9,\\- ]{0,20}",
        "If-Range: [ -~]{0,20}",
        "If-None-Match: [ -~]{0,20}",
        "Connection: (close|keep-alive)",
        "Content-Length: [0-9]{1,3}",
        "[ -~]{0,30}",
    ];
    (
        method,
        prop::collection::vec(segment(), 0..6),
        query,
        version,
        prop::collection::vec(header, 0..4),
        prop::collection::vec(any::<u8>(), 0..64),
        any::<bool>(),
        // Mostly with the Host HTTP/1.1 requires, so that the fuzzing
        // goes past the framing checks.
        prop::sample::select(vec![1, 1, 1, 0, 2]),
    )
        .prop_map(
            |(method, segments, query, version, headers, tail, complete, hosts)| {
                let mut raw =
                    format!("{method} /{}{query} {version}\r\n", segments.join("/")).into_bytes();
                for _ in 0..hosts {
                    raw.extend_from_slice(b"Host: fuzz\r\n");
                }
                for header in headers {
                    raw.extend_from_slice(header.as_bytes());
                    raw.extend_from_slice(b"\r\n");
                }
                if complete {
                    raw.extend_from_slice(b"\r\n");
                } else {
                    raw.extend_from_slice(&tail);
                }
                raw
            },
        )
}

/// Sends `raw`, half-closes, and reads everything back.
fn exchange(address: SocketAddr, raw: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.write_all(raw);
    let _ = stream.shutdown(Shutdown::Write);
    let mut back = Vec::new();
    let _ = stream.read_to_end(&mut back);
    back
}

fn fuzz_server() -> &'static (tempfile::TempDir, SocketAddr) {
    static SERVER: std::sync::OnceLock<(tempfile::TempDir, SocketAddr)> =
        std::sync::OnceLock::new();
    SERVER.get_or_init(|| {
        let (top, root) = tree_with_links_out();
        let address = serve(&root);
        (top, address)
    })
}

fn check_answers(back: &[u8]) -> Result<(), TestCaseError> {
    prop_assert!(!contains(back, SECRET), "the secret escaped");
    if !back.is_empty() {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut response = httparse::Response::new(&mut headers);
        let parsed = response.parse(back);
        prop_assert!(
            parsed.is_ok(),
            "not HTTP: {:?}",
            String::from_utf8_lossy(back)
        );
        let status = response.code.unwrap_or(0);
        prop_assert!(
            [200, 206, 301, 304, 400, 403, 404, 405, 408, 416, 431].contains(&status),
            "status {status}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(fuzz_cases(4000)))]

    #[test]
    fn fuzz_requests_get_an_answer_or_a_close_and_nothing_escapes(raw in request()) {
        let (_, address) = fuzz_server();
        check_answers(&exchange(*address, &raw))?;
    }

    #[test]
    fn fuzz_raw_bytes_get_an_answer_or_a_close(raw in prop::collection::vec(any::<u8>(), 0..300)) {
        let (_, address) = fuzz_server();
        check_answers(&exchange(*address, &raw))?;
    }

    #[test]
    fn fuzz_split_target_never_yields_a_climb_or_a_separator(target in "[ -~]{0,40}") {
        if let Ok((parts, _)) = flexio_net::names::split_target(&target) {
            for part in parts {
                prop_assert!(flexio_net::names::is_safe_component(&part), "{:?}", part);
            }
        }
    }
}

#[test]
fn the_fuzz_server_still_serves_after_the_fuzzing() {
    let (_, address) = fuzz_server();
    for _ in 0..50 {
        exchange(*address, b"GET /%2e%2e/secret HTTP/1.1\r\n\r\n");
    }
    let mut client = RawClient::connect(*address);
    assert_eq!(client.get("/sub/ok", "").body, b"fine");
    let _ = Path::new("/");
}

// ---- uploads ----

const TOKEN: &str = "hostile-token-0123456789";

#[test]
fn puts_without_the_token_over_a_directory_or_out_of_the_root_write_nothing() {
    let (top, root) = tree_with_links_out();
    let address = serve_with(&root, |config| config.token = Some(TOKEN.into()));
    let before_root = names_in(&root);
    let before_outside = names_in(&top.path().join("outside"));
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    for (target, headers, status) in [
        ("/new", String::new(), 401),
        (
            "/new",
            "Authorization: Bearer wrong-token-0123456789\r\n".to_string(),
            401,
        ),
        ("/new", format!("Authorization: Bearer {TOKEN}x\r\n"), 401),
        ("/sub", auth.clone(), 409),
        ("/../outside/new", auth.clone(), 403),
        ("/%2e%2e/outside/new", auth.clone(), 403),
        ("/dir-link/new", auth.clone(), 403),
        ("/sub/ok/new", auth.clone(), 409),
        ("/missing/new", auth.clone(), 404),
        ("/new?x", auth.clone(), 400),
    ] {
        let mut client = RawClient::connect(address);
        client.send(
            format!("PUT {target} HTTP/1.1\r\nHost: t\r\n{headers}Content-Length: 5\r\n\r\nhello")
                .as_bytes(),
        );
        let response = client.read_response(false);
        assert_eq!(response.status, status, "{target} {headers}");
        assert!(client.closed(), "{target}");
    }
    // A symlink at the target is replaced, not followed.
    let mut client = RawClient::connect(address);
    client.send(
        format!("PUT /abs-link HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: 5\r\n\r\nhello")
            .as_bytes(),
    );
    assert_eq!(client.read_response(false).status, 200);
    assert_eq!(
        std::fs::read(top.path().join("outside/secret")).unwrap(),
        SECRET
    );
    assert_eq!(std::fs::read(root.join("abs-link")).unwrap(), b"hello");
    assert_eq!(names_in(&root), before_root);
    assert_eq!(names_in(&top.path().join("outside")), before_outside);
}

#[test]
fn a_put_cut_short_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let address = serve_with(dir.path(), |config| {
        config.token = Some(TOKEN.into());
        config.send_timeout = Duration::from_secs(1);
    });
    let mut client = RawClient::connect(address);
    client.send(format!("PUT /partial HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 100000\r\n\r\n").as_bytes());
    client.send(&pattern(5000, 1));
    client.stream.shutdown(Shutdown::Write).unwrap();
    assert!(client.try_read_response(false).is_none());
    // A body that stalls: cut at the send timeout.
    let mut stalled = RawClient::connect(address);
    stalled.send(format!("PUT /stalled HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 100000\r\n\r\nabc").as_bytes());
    let started = Instant::now();
    assert!(stalled.try_read_response(false).is_none());
    assert!(started.elapsed() < Duration::from_secs(4));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(names_in(dir.path()), Vec::<String>::new());
}

// ---- fuzz-style: arbitrary responses against `get` ----

fn response() -> impl Strategy<Value = Vec<u8>> {
    let status = prop::sample::select(vec![
        "200 OK",
        "206 Partial Content",
        "416 Nope",
        "301 Moved",
        "500 Oops",
        "2000 X",
        "",
    ]);
    let header = prop_oneof![
        "Content-Length: [0-9]{0,6}",
        "Content-Range: bytes [0-9*]{0,3}-[0-9]{0,3}/[0-9*]{0,4}",
        "Transfer-Encoding: chunked",
        "Connection: close",
        "Server: flexio",
        "[ -~]{0,24}",
    ];
    (
        status,
        prop::collection::vec(header, 0..5),
        prop::collection::vec(any::<u8>(), 0..200),
        any::<bool>(),
    )
        .prop_map(|(status, headers, body, http)| {
            let mut raw = if http {
                format!("HTTP/1.1 {status}\r\n").into_bytes()
            } else {
                Vec::new()
            };
            for header in headers {
                raw.extend_from_slice(header.as_bytes());
                raw.extend_from_slice(b"\r\n");
            }
            raw.extend_from_slice(b"\r\n");
            raw.extend_from_slice(&body);
            raw
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(fuzz_cases(4000) / 8))]

    /// Whatever a server answers, `get` either fetches exactly what a
    /// Content-Length framed or fails, and a failure leaves nothing.
    #[test]
    fn fuzz_responses_give_a_file_or_a_clear_error_and_nothing_left(raw in response()) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let reply = raw.clone();
        let server = std::thread::spawn(move || {
            // One connection, one answer, then close (a second connection,
            // for a manifest or a piece, gets nothing but the close).
            if let Ok((mut stream, _)) = listener.accept() {
                read_head(&mut stream);
                let _ = stream.write_all(&reply);
            }
        });
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("file");
        let options = GetOptions { streams: 1, timeout: Duration::from_millis(500), ..GetOptions::default() };
        let result = get(&format!("http://{address}/file"), Some(&dest), &options);
        server.join().unwrap();
        match result {
            Ok(report) => {
                prop_assert_eq!(std::fs::read(&dest).unwrap().len() as u64, report.bytes);
                prop_assert!(report.bytes == 0 || contains(&raw, &std::fs::read(&dest).unwrap()));
            }
            Err(error) => {
                prop_assert!(!error.to_string().is_empty());
                prop_assert_eq!(names_in(out.path()), Vec::<String>::new());
            }
        }
    }
}

#[test]
fn a_file_that_changes_between_pieces_fails_instead_of_mixing_versions() {
    let piece = 1usize << 20;
    let (old, new) = (pattern(2 * piece, 1), pattern(2 * piece, 2));
    let address = fake_server(4, move |_, mut stream| {
        while let Some(head) = read_head(&mut stream) {
            let range = head
                .lines()
                .find_map(|l| l.strip_prefix("Range: bytes="))
                .and_then(|r| r.split_once('-'))
                .map(|(a, b)| (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()));
            let Some((first, last)) = range else { return };
            // The first piece comes from the old version; by the next
            // request the file has changed.
            let (data, etag) = if first == 0 {
                (&old, "\"v1\"")
            } else {
                (&new, "\"v2\"")
            };
            let stale = head
                .lines()
                .any(|l| l.starts_with("If-Range:") && !l.ends_with(etag));
            let (status, body, range_line) = if stale {
                ("200 OK", &data[..], String::new())
            } else {
                (
                    "206 Partial Content",
                    &data[first..=last],
                    format!("Content-Range: bytes {first}-{last}/{}\r\n", data.len()),
                )
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\nETag: {etag}\r\n{range_line}Content-Length: {}\r\n\r\n",
                body.len()
            );
            if stream.write_all(reply.as_bytes()).is_err() || stream.write_all(body).is_err() {
                return;
            }
        }
    });
    let (error, _) = get_fails(address, &quick(2));
    assert!(error.to_string().contains("got 200"), "{error}");
}

// ---- hostile manifests for a tree get ----

/// A server whose `/t/?manifest` is `entries` and whose files all hold
/// `content`.
fn tree_server(entries: serde_json::Value, content: &'static [u8]) -> SocketAddr {
    let manifest =
        serde_json::json!({"schema_version": 1, "chunk_size": 1 << 20, "entries": entries})
            .to_string()
            .into_bytes();
    fake_server(8, move |_, mut stream| {
        while let Some(head) = read_head(&mut stream) {
            let body: &[u8] = if head.starts_with("GET /t/?manifest") {
                &manifest
            } else {
                content
            };
            let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            if stream.write_all(reply.as_bytes()).is_err() || stream.write_all(body).is_err() {
                return;
            }
        }
    })
}

fn file_entry(path: &str, content: &[u8]) -> serde_json::Value {
    serde_json::json!({"path": path, "type": "file", "size": content.len(), "mode": 420, "mtime": 0,
        "mtime_nsec": 0, "blake3": [blake3::hash(content).to_hex().to_string()]})
}

/// A tree get from a server whose manifest is `entries` fails on a
/// manifest entry (`why` says which case) and makes nothing.
fn refused_whole(entries: serde_json::Value, content: &'static [u8], why: &str) {
    let address = tree_server(entries, content);
    let out = tempfile::tempdir().unwrap();
    let error = flexio_net::client::get_tree(
        &format!("http://{address}/t/"),
        &out.path().join("d"),
        &quick(2),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("manifest entry"),
        "{why}: {error}"
    );
    assert_eq!(names_in(out.path()), Vec::<String>::new(), "{why}");
}

fn link_entry(path: &str, target: &str) -> serde_json::Value {
    serde_json::json!({"path": path, "type": "symlink", "size": 0, "mode": 511, "mtime": 0,
        "mtime_nsec": 0, "link_target": target})
}

#[test]
fn a_tree_manifest_with_names_that_climb_makes_nothing() {
    let content: &'static [u8] = b"payload";
    for (entries, why) in [
        (serde_json::json!([file_entry("../x", content)]), ".."),
        (
            serde_json::json!([file_entry("/etc/x", content)]),
            "absolute",
        ),
        (
            serde_json::json!([file_entry("a/../../x", content)]),
            "a/../../x",
        ),
        (
            serde_json::json!([file_entry("a//x", content)]),
            "empty component",
        ),
        (serde_json::json!([file_entry("a\u{0}", content)]), "NUL"),
        (
            serde_json::json!([file_entry("x", content), file_entry("x", content)]),
            "duplicate",
        ),
        (
            serde_json::json!([{"path": "big", "type": "file", "size": 10_000_000_000u64, "mode": 420,
                "mtime": 0, "mtime_nsec": 0, "blake3": ["00"]}]),
            "hashes not covering the size",
        ),
    ] {
        refused_whole(entries, content, why);
    }
}

/// Links that would point out of the destination are left out, each
/// named, and the rest of the tree arrives (rsync's `--safe-links`), where
/// a get once refused the whole tree.
#[test]
fn a_tree_get_leaves_out_links_pointing_out_of_the_destination_and_fetches_the_rest() {
    let content: &'static [u8] = b"payload";
    let directory = serde_json::json!({"path": "d", "type": "directory", "size": 0, "mode": 493,
        "mtime": 0, "mtime_nsec": 0});
    let entries = serde_json::json!([
        file_entry("a", content),
        link_entry("climbs", "../../etc"),
        link_entry("absolute", "/etc/passwd"),
        directory,
        link_entry("d/up-one", "../a"),
        link_entry("d/up-two", "../../a"),
    ]);
    let address = tree_server(entries, content);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("d");
    let report =
        flexio_net::client::get_tree(&format!("http://{address}/t/"), &dest, &quick(2)).unwrap();
    assert_eq!(report.escaping_links, ["climbs", "absolute", "d/up-two"]);
    assert_eq!(report.symlinks, 1);
    assert_eq!(std::fs::read(dest.join("a")).unwrap(), content);
    assert_eq!(std::fs::read(dest.join("d/up-one")).unwrap(), content);
    for left_out in ["climbs", "absolute", "d/up-two"] {
        assert!(
            std::fs::symlink_metadata(dest.join(left_out)).is_err(),
            "{left_out} was made"
        );
    }
}

/// Every symlink beneath `dest`, and where it resolves (`None`: it does
/// not resolve).
fn resolved_links(dest: &std::path::Path) -> Vec<(String, Option<std::path::PathBuf>)> {
    let mut links = Vec::new();
    let mut stack = vec![dest.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_symlink() {
                let shown = path.strip_prefix(dest).unwrap().display().to_string();
                links.push((shown, std::fs::canonicalize(&path).ok()));
            } else if kind.is_dir() {
                stack.push(path);
            }
        }
    }
    links.sort();
    links
}

/// Issue 39: links each lexically inside the destination that lead out of
/// it through one another (`t -> s/..` with `s -> .`) were made. Whatever
/// order the manifest lists them in, none is made, each is named, and the
/// links that stay inside (through a real directory, or descending) are.
#[test]
fn a_manifest_chain_of_links_that_resolves_out_of_the_destination_makes_none_of_them() {
    let content: &'static [u8] = b"payload";
    let directory = |path: &str| {
        serde_json::json!({"path": path, "type": "directory", "size": 0, "mode": 493, "mtime": 0,
            "mtime_nsec": 0})
    };
    let links = [
        link_entry("s", "."),
        link_entry("t", "s/.."),
        link_entry("u", "s/s/s/../../../.."),
        link_entry("d/v", "../s/.."),
        link_entry("d/through-a-real-directory", "../d/../a"),
        link_entry("d/down-a-link", "../s/s/a"),
    ];
    for reversed in [false, true] {
        let mut entries = vec![file_entry("a", content), directory("d")];
        let mut ordered = links.to_vec();
        if reversed {
            ordered.reverse();
        }
        entries.extend(ordered);
        let address = tree_server(serde_json::Value::Array(entries), content);
        let out = tempfile::tempdir().unwrap();
        let dest = out.path().join("dest");
        let report =
            flexio_net::client::get_tree(&format!("http://{address}/t/"), &dest, &quick(2))
                .unwrap();
        let mut escaping = report.escaping_links.clone();
        escaping.sort();
        assert_eq!(escaping, ["d/v", "t", "u"], "reversed: {reversed}");
        assert_eq!(report.symlinks, 3, "reversed: {reversed}");
        let canonical = std::fs::canonicalize(&dest).unwrap();
        let made = resolved_links(&dest);
        let names: Vec<&str> = made.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            ["d/down-a-link", "d/through-a-real-directory", "s"],
            "reversed: {reversed}"
        );
        for (name, to) in &made {
            let to = to.as_ref().unwrap();
            assert!(to.starts_with(&canonical), "{name} -> {}", to.display());
        }
        assert_eq!(std::fs::read(dest.join("d/down-a-link")).unwrap(), content);
    }
}

/// Issue 24: a hostile manifest listing `d/lnk` before the directory `d`
/// left a partial tree, although every name is to be checked before
/// anything is made. Parents come first, or nothing is made.
#[test]
fn a_manifest_listing_an_entry_before_its_directory_makes_nothing() {
    let content: &'static [u8] = b"payload";
    let directory = |path: &str| {
        serde_json::json!({"path": path, "type": "directory", "size": 0, "mode": 493, "mtime": 0,
            "mtime_nsec": 0})
    };
    let link = link_entry("d/lnk", "x");
    for (entries, why) in [
        (
            serde_json::json!([file_entry("a", content), link.clone(), directory("d")]),
            "a link before its directory",
        ),
        (
            serde_json::json!([file_entry("a", content), file_entry("e/f", content)]),
            "a file under a directory never listed",
        ),
        (
            serde_json::json!([file_entry("d", content), file_entry("d/f", content)]),
            "a file under a file",
        ),
    ] {
        refused_whole(entries, content, why);
    }
}

#[test]
fn a_tree_manifest_over_the_cap_is_refused_before_it_is_read() {
    let address = fake_server(1, |_, mut stream| {
        read_head(&mut stream);
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n[");
    });
    let out = tempfile::tempdir().unwrap();
    let error = flexio_net::client::get_tree(
        &format!("http://{address}/t/"),
        &out.path().join("d"),
        &quick(1),
    )
    .unwrap_err();
    assert!(error.to_string().contains("cap"), "{error}");
    assert_eq!(names_in(out.path()), Vec::<String>::new());
}

/// Issue 39: a chunked manifest or listing announcing a chunk of
/// `ffffffffffffffff` bytes panicked `get` (capacity overflow, exit 101).
/// Every chunk size is checked against the cap before a byte is read or
/// given memory: an error naming the server.
#[test]
fn a_chunk_size_no_memory_could_hold_is_an_error_naming_the_server_not_a_panic() {
    for (content_type, sizes) in [
        ("application/json", ["ffffffffffffffff", "fffffffffffffff0"]),
        ("text/html", ["ffffffffffffffff", "10000000"]),
    ] {
        for size in sizes {
            let address = fake_server(1, move |_, mut stream| {
                read_head(&mut stream);
                let _ = stream.write_all(
                    format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[\n\r\n{size}\r\n")
                        .as_bytes(),
                );
            });
            let out = tempfile::tempdir().unwrap();
            let error = flexio_net::client::get_tree(
                &format!("http://{address}/t/"),
                &out.path().join("d"),
                &quick(1),
            )
            .unwrap_err();
            let text = error.to_string();
            assert!(
                text.starts_with(&format!("http://{address}/")) && text.contains("cap"),
                "{size}: {text}"
            );
            assert_eq!(names_in(out.path()), Vec::<String>::new());
        }
    }
}

#[test]
fn a_tree_get_never_replaces_a_directory_or_goes_through_a_symlink_in_dest() {
    let content: &'static [u8] = b"payload";
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("d");
    let outside = out.path().join("outside");
    std::fs::create_dir_all(dest.join("keep/inner")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, dest.join("l")).unwrap();
    // A file where a directory is.
    let address = tree_server(serde_json::json!([file_entry("keep", content)]), content);
    let error = flexio_net::client::get_tree(&format!("http://{address}/t/"), &dest, &quick(1))
        .unwrap_err();
    assert!(
        error.to_string().contains("a directory is there"),
        "{error}"
    );
    assert!(dest.join("keep/inner").is_dir());
    // Through a symlink DEST already holds.
    let address = tree_server(
        serde_json::json!([{"path": "l", "type": "directory", "size": 0, "mode": 493, "mtime": 0, "mtime_nsec": 0},
            file_entry("l/x", content)]),
        content,
    );
    let error = flexio_net::client::get_tree(&format!("http://{address}/t/"), &dest, &quick(1))
        .unwrap_err();
    assert!(error.to_string().contains("a file is there"), "{error}");
    assert_eq!(names_in(&outside), Vec::<String>::new());
    // And a file whose bytes are not the manifest's is not linked in.
    let address = tree_server(
        serde_json::json!([file_entry("new", b"not the payload")]),
        content,
    );
    let error = flexio_net::client::get_tree(&format!("http://{address}/t/"), &dest, &quick(1))
        .unwrap_err();
    assert!(
        error.to_string().contains("bytes the manifest lists"),
        "{error}"
    );
    assert!(!dest.join("new").exists());
    let address = tree_server(
        serde_json::json!([file_entry("same-size", b"PAYLOAD")]),
        content,
    );
    let error = flexio_net::client::get_tree(&format!("http://{address}/t/"), &dest, &quick(1))
        .unwrap_err();
    assert!(
        matches!(
            error.cause(),
            flexio_net::Error::VerifyMismatch { chunk: 0, .. }
        ),
        "{error}"
    );
    assert!(!dest.join("same-size").exists());
}

#[test]
fn a_put_larger_than_the_free_space_gets_507_and_writes_nothing() {
    if !require_root("mounting a 1 MiB tmpfs") {
        return;
    }
    let mount = SmallTmpfs::mount("1m");
    let address = serve_with(mount.path(), |config| config.token = Some(TOKEN.into()));
    let mut client = RawClient::connect(address);
    client.send(
        format!("PUT /big HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n", 2 << 20)
            .as_bytes(),
    );
    let _ = client.stream.write_all(&pattern(64 << 10, 3));
    let response = client.read_response(false);
    assert_eq!(response.status, 507, "{}", response.text());
    assert_eq!(names_in(mount.path()), Vec::<String>::new());
}

// ---- hostile tar streams for a tree get's directories of small files ----

/// A ustar header for `name` of `size` bytes and type `kind`, with a
/// correct checksum unless `break_checksum`.
fn tar_header(name: &str, size: u64, kind: u8, break_checksum: bool) -> Vec<u8> {
    let mut header = vec![0u8; 512];
    header[..name.len()].copy_from_slice(name.as_bytes());
    header[100..108].copy_from_slice(b"0000644\0");
    header[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    header[156] = kind;
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
    let sum = if break_checksum { sum + 1 } else { sum };
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    header
}

/// A tar stream of `(name, bytes)` files, with the end blocks.
fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, bytes) in files {
        out.extend(tar_header(name, bytes.len() as u64, b'0', false));
        out.extend_from_slice(bytes);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

#[test]
fn a_tar_stream_that_is_not_the_manifests_files_commits_nothing() {
    let (a, b): (&'static [u8], &'static [u8]) = (b"alpha", b"bravo!");
    let entries = serde_json::json!([
        {"path": "d", "type": "directory", "size": 0, "mode": 493, "mtime": 0, "mtime_nsec": 0},
        file_entry("d/a", a),
        file_entry("d/b", b),
    ]);
    let manifest =
        serde_json::json!({"schema_version": 1, "chunk_size": 1 << 20, "entries": entries})
            .to_string()
            .into_bytes();
    let mut huge = tar_header("a", 0o77_777_777_777, b'0', false);
    huge.resize(huge.len() + 1024, 0);
    let mut bad_sum = tar_header("a", a.len() as u64, b'0', true);
    bad_sum.extend_from_slice(a);
    bad_sum.resize(2048, 0);
    for (tar, why) in [
        (tar_of(&[("../x", a), ("b", b)]), "climbs"),
        (tar_of(&[("a", b), ("b", b)]), "another size"),
        (tar_of(&[("a", a), ("c", b)]), "unlisted"),
        (tar_of(&[("a", a), ("a", a)]), "twice"),
        (tar_of(&[("a", a)]), "missing"),
        (huge, "a size past the stream's end"),
        (bad_sum, "checksum"),
        (
            tar_of(&[("a", b"ALPHA"), ("b", b)]),
            "other bytes of the right size",
        ),
    ] {
        let manifest = manifest.clone();
        let address = fake_server(8, move |_, mut stream| {
            while let Some(head) = read_head(&mut stream) {
                let body: &[u8] = if head.starts_with("GET /t/?manifest") {
                    &manifest
                } else if head.starts_with("GET /t/d/?tar") {
                    &tar
                } else {
                    b"a file asked for alone"
                };
                let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
                if stream.write_all(reply.as_bytes()).is_err() || stream.write_all(body).is_err() {
                    return;
                }
            }
        });
        let out = tempfile::tempdir().unwrap();
        let error = flexio_net::client::get_tree(
            &format!("http://{address}/t/"),
            &out.path().join("copy"),
            &quick(2),
        )
        .unwrap_err();
        let expected = if why.starts_with("other bytes") {
            "differs from the server's manifest"
        } else {
            "tar stream"
        };
        assert!(error.to_string().contains(expected), "{why}: {error}");
        // A directory new to the get is built hidden and put in place only
        // whole: after a bad stream, neither it nor its staging directory
        // is there. Nothing else is made.
        assert_eq!(
            names_in(&out.path().join("copy")),
            Vec::<String>::new(),
            "{why}"
        );
        assert!(!out.path().join("x").exists(), "{why}");
    }
}
