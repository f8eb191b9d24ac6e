//! A chain link (`get --serve`, [`Relay`]) is served by the server
//! itself, so hostile downstreams meet what `serve` does to them: a
//! request smuggling head, a missing `Host`, a huge chunk size, garbage
//! and an oversized head are answered as `serve` answers them (400, 405,
//! 431, and a close); a slow-loris head gets 408 at the head deadline; a
//! downstream reset mid-body costs nothing to the others. A downstream
//! asking for bytes not fetched yet waits and gets them byte-exact once
//! they arrive; a fetch that fails cuts the responses waiting for it.
//! The upstream is paced (1 MiB/s, pieces of 1 MiB), so the link is still
//! fetching while the downstreams ask.

use crate::common;

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{pattern, serve, RawClient};
use flexio_net::client::{GetOptions, Relay};
use flexio_net::server::{ServeConfig, Server, ServerHandle};

const PIECE: usize = 1 << 20;

/// A link fetching `f` from a paced upstream, and what it needs alive.
struct Link {
    address: SocketAddr,
    upstream: ServerHandle,
    upstream_dir: tempfile::TempDir,
    ended: mpsc::Receiver<flexio_net::Result<u64>>,
    _dest: tempfile::TempDir,
}

/// A link of `data` (served upstream at `rate`), its requests timing out
/// after `timeout`.
fn link(data: &[u8], rate: &str, timeout: Duration) -> Link {
    let upstream_dir = tempfile::tempdir().unwrap();
    std::fs::write(upstream_dir.path().join("f"), data).unwrap();
    let mut config = ServeConfig::new(upstream_dir.path().into());
    config.rate_per_connection = Some(rate.parse().unwrap());
    let upstream = Server::bind(config).unwrap().spawn().unwrap();
    let from = format!("http://{}/f", upstream.local_addr());
    let relay = Relay::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    let address = relay.local_addr().unwrap();
    let dest = tempfile::tempdir().unwrap();
    let destination = dest.path().join("f");
    let options = GetOptions {
        streams: 1,
        piece_size: PIECE as u64,
        timeout,
        ..GetOptions::default()
    };
    let (done, ended) = mpsc::channel();
    std::thread::spawn(move || {
        let result = relay.fetch_and_serve(
            &[from],
            Some(&destination),
            &options,
            Duration::from_millis(500),
        );
        let _ = done.send(result.map(|report| report.bytes));
    });
    Link {
        address,
        upstream,
        upstream_dir,
        ended,
        _dest: dest,
    }
}

/// Sends `raw` on a fresh connection to `address`: the status of the
/// answer (`None` when closed without one), its `Connection` header, and
/// whether the connection was closed after it.
fn answer_to(address: SocketAddr, raw: &[u8]) -> (Option<u16>, Option<String>, bool) {
    let mut client = RawClient::connect(address);
    // The server may close before taking it all: a failed write is fine.
    let _ = client.stream.write_all(raw);
    let Some(response) = client.try_read_response(false) else {
        return (None, None, true);
    };
    let connection = response.header("Connection").map(str::to_string);
    let closed = connection.as_deref() == Some("close") && client.closed();
    (Some(response.status), connection, closed)
}

/// The requests `serve`'s hostile tests send, that a link must answer
/// the same way.
fn hostile_requests() -> Vec<(&'static str, Vec<u8>)> {
    let mut huge_head = b"GET /f HTTP/1.1\r\nHost: t\r\n".to_vec();
    while huge_head.len() < 64 << 10 {
        huge_head.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    huge_head.extend_from_slice(b"\r\n");
    vec![
        ("no Host", b"GET /f HTTP/1.1\r\n\r\n".to_vec()),
        (
            "two Hosts",
            b"GET /f HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n".to_vec(),
        ),
        (
            "two Content-Lengths",
            b"GET /f HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"
                .to_vec(),
        ),
        (
            "Content-Length beside Transfer-Encoding",
            b"GET /f HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                .to_vec(),
        ),
        (
            "a huge chunk size on a GET",
            b"GET /f HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff0\r\n"
                .to_vec(),
        ),
        (
            "a huge chunk size on a PUT",
            b"PUT /f HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff0\r\n"
                .to_vec(),
        ),
        (
            "a folded header",
            b"GET /f HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n".to_vec(),
        ),
        (
            "garbage",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n".to_vec(),
        ),
        ("a 64 KiB head", huge_head),
        (
            "a bad % escape",
            b"GET /f%zz HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
        ),
        (
            "a climb",
            b"GET /%2e%2e/f HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(),
        ),
        (
            "a percent-encoded name",
            b"GET /%66 HTTP/1.1\r\nHost: a\r\nRange: bytes=0-3\r\n\r\n".to_vec(),
        ),
    ]
}

#[test]
fn hostile_requests_to_a_link_are_answered_as_serve_answers_them() {
    let data = pattern(4 * PIECE, 38);
    let link = link(&data, "1M", Duration::from_secs(10));
    let plain = serve(link.upstream_dir.path());
    for (what, raw) in hostile_requests() {
        let expected = answer_to(plain, &raw);
        let got = answer_to(link.address, &raw);
        assert_eq!(got, expected, "{what}: the link answered unlike serve");
    }
    // Other connections were not affected: the file, byte-exact.
    let mut honest = RawClient::connect(link.address);
    let response = honest.get("/f", "");
    assert_eq!(response.status, 200, "{}", response.text());
    assert!(response.body == data, "the file served onward differs");
    drop(honest);
    assert_eq!(
        link.ended
            .recv_timeout(Duration::from_secs(20))
            .unwrap()
            .unwrap(),
        data.len() as u64
    );
}

#[test]
fn a_slow_loris_head_gets_408_at_the_head_deadline_while_others_are_served() {
    let data = pattern(3 * PIECE, 39);
    // The link's head deadline is its --timeout (under 10 s).
    let limit = Duration::from_secs(2);
    let link = link(&data, "2M", limit);
    let mut slow = RawClient::connect(link.address);
    let mut writer = slow.stream.try_clone().unwrap();
    let started = Instant::now();
    let dribble = std::thread::spawn(move || {
        for byte in b"GET /f HTTP/1.1\r\nHost: slow\r\n\r\n" {
            if writer.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let mut honest = RawClient::connect(link.address);
    assert!(honest.get("/f", "").body == data);
    let response = slow.try_read_response(false);
    let cut_after = started.elapsed();
    assert_eq!(response.map(|r| r.status), Some(408));
    assert!(slow.closed());
    assert!(
        cut_after >= limit && cut_after < limit + Duration::from_millis(1500),
        "cut after {cut_after:?}"
    );
    dribble.join().unwrap();
    assert!(link
        .ended
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .is_ok());
}

#[test]
fn a_range_not_fetched_yet_waits_and_arrives_byte_exact() {
    let data = pattern(4 * PIECE + 4321, 40);
    let link = link(&data, "1M", Duration::from_secs(10));
    let started = Instant::now();
    let mut client = RawClient::connect(link.address);
    // The last piece and a half: not there for about three seconds.
    let first = 3 * PIECE - PIECE / 2;
    let response = client.get("/f", &format!("Range: bytes={first}-\r\n"));
    assert_eq!(response.status, 206, "{}", response.text());
    assert!(response.body == data[first..], "the range differs");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "answered after {:?}: before the bytes could have arrived",
        started.elapsed()
    );
    // The manifest is there at once, the upstream's.
    let manifest = client.get("/f?manifest", "");
    assert_eq!(manifest.status, 200);
    assert!(manifest
        .text()
        .contains(&blake3::hash(&data[..PIECE]).to_hex().to_string()));
    assert!(link
        .ended
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .is_ok());
}

#[test]
fn a_downstream_reset_mid_body_leaves_the_link_serving_the_others() {
    let data = pattern(3 * PIECE, 41);
    let link = link(&data, "2M", Duration::from_secs(10));
    let mut reset = std::net::TcpStream::connect(link.address).unwrap();
    reset
        .write_all(b"GET /f HTTP/1.1\r\nHost: a\r\n\r\n")
        .unwrap();
    let mut some = vec![0u8; 64 << 10];
    reset.read_exact(&mut some).unwrap();
    // Closing with unread bytes and a zero linger sends a reset.
    rustix::net::sockopt::set_socket_linger(&reset, Some(Duration::ZERO)).unwrap();
    drop(reset);
    let mut honest = RawClient::connect(link.address);
    let response = honest.get("/f", "");
    assert!(response.body == data, "the file served onward differs");
    assert!(link
        .ended
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .is_ok());
}

#[test]
fn a_fetch_that_fails_cuts_the_responses_waiting_for_it() {
    let data = pattern(8 * PIECE, 42);
    let link = link(&data, "1M", Duration::from_secs(3));
    let address = link.address;
    let waiting = std::thread::spawn(move || {
        let mut client = RawClient::connect(address);
        client.send(b"GET /f HTTP/1.1\r\nHost: a\r\nRange: bytes=7340032-\r\n\r\n");
        let started = Instant::now();
        (client.try_read_response(false), started)
    });
    std::thread::sleep(Duration::from_millis(1500));
    link.upstream.abort();
    let (response, started) = waiting.join().unwrap();
    assert!(
        response.is_none(),
        "a response whole although its bytes never arrived"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "cut only after {:?}",
        started.elapsed()
    );
    assert!(link
        .ended
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .is_err());
}
