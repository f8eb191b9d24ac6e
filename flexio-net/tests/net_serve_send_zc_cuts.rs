//! `serve --via send-zc` and clients that stop reading (issue 39): each
//! is cut at the send timeout, and the file mappings its zero-copy sends
//! held go with it — 256 such connections used to leave the process
//! without guard slots, and every later body on `sendfile`.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{pattern, serve_with, RawClient};
use flexio::MechanismName;

/// Mappings of `path` this process (the server's) holds.
fn mappings_of(path: &std::path::Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let name = path.to_str().unwrap();
    maps.lines().filter(|line| line.ends_with(name)).count()
}

#[test]
fn clients_cut_mid_send_leave_no_mapping_and_the_next_body_is_whole() {
    if let Err(why) = MechanismName::SendZc.available() {
        eprintln!(
            "skipped: clients_cut_mid_send_leave_no_mapping_and_the_next_body_is_whole: {why}"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big-for-cut-clients");
    let data = pattern(32 << 20, 4);
    std::fs::write(&path, &data).unwrap();
    let send_timeout = Duration::from_millis(500);
    let address = serve_with(dir.path(), |config| {
        config.mechanism = MechanismName::SendZc;
        config.send_timeout = send_timeout;
        config.workers = 4;
    });
    let clients: Vec<TcpStream> = (0..24)
        .map(|_| {
            let mut stream = TcpStream::connect(address).unwrap();
            stream
                .write_all(b"GET /big-for-cut-clients HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            stream
        })
        .collect();
    // Six rounds of four workers, each cut after the send timeout.
    std::thread::sleep(6 * (send_timeout + Duration::from_millis(500)));
    drop(clients);
    let started = Instant::now();
    while mappings_of(&path) > 0 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(mappings_of(&path), 0, "cut connections left mappings");
    let mut client = RawClient::connect(address);
    let response = client.get("/big-for-cut-clients", "");
    assert_eq!(response.status, 200);
    assert!(response.body == data, "the body after the cuts differs");
}
