//! `serve`'s Cue schedule (`ServeConfig::schedule`): K chunks of a body,
//! then a pause, each connection on its own, seen by clients over
//! loopback and counted by the server. Timings are lower bounds (a pause
//! is never shorter than asked; load only adds) or orders of events.

mod common;

use std::io::Read;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{pattern, RawClient};
use flexio::MechanismName;
use flexio_net::server::{ServeConfig, Server, ServerHandle};

const CHUNK: usize = 8 << 10;
/// 25 whole chunks and a short one.
const SIZE: usize = 25 * CHUNK + 100;
const CHUNKS: u64 = 26;

fn scheduled(
    root: &std::path::Path,
    schedule: &str,
    tweak: impl FnOnce(&mut ServeConfig),
) -> ServerHandle {
    let mut config = ServeConfig::new(root.to_path_buf());
    config.workers = 1;
    config.chunk = Some(CHUNK);
    config.schedule = Some(schedule.parse().unwrap());
    tweak(&mut config);
    Server::bind(config).unwrap().spawn().unwrap()
}

/// Fetches `target` on a fresh connection: the body and the seconds it
/// took.
fn timed_get(address: SocketAddr, target: &str) -> (Vec<u8>, f64) {
    let started = Instant::now();
    let response = RawClient::connect(address).get(target, "");
    assert_eq!(response.status, 200);
    (response.body, started.elapsed().as_secs_f64())
}

/// Pauses of a body of `chunks` chunks under K: one after every K-th
/// chunk but the last.
fn pauses(chunks: u64, k: u64) -> u64 {
    chunks.div_ceil(k) - 1
}

#[test]
fn a_scheduled_body_is_byte_exact_in_k_chunks_then_a_pause() {
    let root = tempfile::tempdir().unwrap();
    let data = pattern(SIZE, 11);
    std::fs::write(root.path().join("f"), &data).unwrap();
    for via in [
        MechanismName::Sendfile,
        MechanismName::ReadWrite,
        MechanismName::Splice,
    ] {
        let handle = scheduled(root.path(), "3,20", |config| config.mechanism = via);
        let (body, seconds) = timed_get(handle.local_addr(), "/f");
        assert!(body == data, "{via}: the body differs from the file");
        handle.shutdown();
        let tally = handle.wait_with_tally();
        let expected = pauses(CHUNKS, 3);
        assert_eq!(
            (tally.bodies, tally.chunks, tally.pauses),
            (1, CHUNKS, expected),
            "{via}"
        );
        // Each pause lasted its 20 ms at least, and the client waited
        // through them.
        let least = Duration::from_millis(20 * expected);
        assert!(tally.paused >= least, "{via}: {tally:?}");
        assert!(seconds >= least.as_secs_f64(), "{via}: {seconds:.3} s");
    }
}

#[test]
fn two_clients_at_once_each_keep_their_schedule() {
    let root = tempfile::tempdir().unwrap();
    let data = pattern(SIZE, 12);
    std::fs::write(root.path().join("big"), &data).unwrap();
    let handle = scheduled(root.path(), "4,50", |_| {});
    let address = handle.local_addr();
    let clients: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || timed_get(address, "/big")))
        .collect();
    let per_body = pauses(CHUNKS, 4);
    for client in clients {
        let (body, seconds) = client.join().unwrap();
        assert!(body == data, "a scheduled body differs from the file");
        // Each connection made all of its own pauses: a schedule shared
        // between them would pause each about half as often.
        assert!(
            seconds >= 0.050 * per_body as f64,
            "{seconds:.3} s for {per_body} pauses of 50 ms"
        );
    }
    handle.shutdown();
    let tally = handle.wait_with_tally();
    assert_eq!(
        (tally.bodies, tally.chunks, tally.pauses),
        (2, 2 * CHUNKS, 2 * per_body)
    );
}

#[test]
fn a_paused_connection_does_not_hold_up_the_others() {
    let root = tempfile::tempdir().unwrap();
    let pair = pattern(2 * CHUNK, 16);
    std::fs::write(root.path().join("pair"), &pair).unwrap();
    std::fs::write(root.path().join("small"), pattern(4096, 17)).unwrap();
    // One worker for both, and a pause of 1.5 s between the two chunks
    // of one body: a worker that slept through it would hold the other
    // connection as long.
    let handle = scheduled(root.path(), "1,1500", |_| {});
    let address = handle.local_addr();
    let mut paused = RawClient::connect(address);
    paused.send(b"GET /pair HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    let mut first = vec![0u8; 1024];
    paused.stream.read_exact(&mut first).unwrap();
    // Its first chunk is out: the pause has begun. The rest is read on
    // a thread of its own, timed when it ends.
    let rest = std::thread::spawn(move || {
        let mut response = first;
        paused.stream.read_to_end(&mut response).unwrap();
        (response, Instant::now())
    });
    let (small, _) = timed_get(address, "/small");
    let small_done = Instant::now();
    assert_eq!(small.len(), 4096);
    let (response, paused_done) = rest.join().unwrap();
    let head = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(
        response[head..] == pair[..],
        "the paused body differs from the file"
    );
    // An order of events, not a margin.
    assert!(
        small_done < paused_done,
        "the small body waited for the paused one"
    );
    handle.shutdown();
    let tally = handle.wait_with_tally();
    assert_eq!((tally.bodies, tally.chunks, tally.pauses), (2, 3, 1));
}

#[test]
fn a_paused_connection_is_cut_at_shutdown_and_when_its_client_stops_reading() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), pattern(SIZE, 14)).unwrap();
    // A pause of a minute after the first chunk: shutdown's grace (0.2 s)
    // ends it, not the pause.
    let handle = scheduled(root.path(), "1,60000", |config| {
        config.grace = Duration::from_millis(200);
    });
    let mut client = RawClient::connect(handle.local_addr());
    client.send(b"GET /f HTTP/1.1\r\nHost: test\r\n\r\n");
    let mut first = vec![0u8; 1024];
    client.stream.read_exact(&mut first).unwrap();
    let started = Instant::now();
    handle.shutdown();
    handle.wait();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "shutdown waited {:?} for a paused connection",
        started.elapsed()
    );
    let mut rest = Vec::new();
    let _ = client.stream.read_to_end(&mut rest);
    // The first chunk (8 KiB and the head) came before the pause; no more.
    assert!(
        first.len() + rest.len() < SIZE / 2,
        "{} bytes came though the connection was paused at shutdown",
        first.len() + rest.len()
    );

    // A client that stops reading: the send timeout still cuts it, pauses
    // or not (they do not count against it, nor hide it).
    std::fs::write(root.path().join("big"), pattern(32 << 20, 15)).unwrap();
    let handle = scheduled(root.path(), "64,1", |config| {
        config.send_timeout = Duration::from_millis(300);
    });
    let mut client = RawClient::connect(handle.local_addr());
    client.send(b"GET /big HTTP/1.1\r\nHost: test\r\n\r\n");
    std::thread::sleep(Duration::from_secs(3));
    let mut got = Vec::new();
    let _ = client.stream.read_to_end(&mut got);
    assert!(
        got.len() < 32 << 20,
        "a client that stopped reading got it all"
    );
    handle.abort();
    handle.wait();
}
