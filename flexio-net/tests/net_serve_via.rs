//! Every `--via` `serve` takes is driven without blocking (issue 38): a
//! client that asks for a large file and never reads does not hold its
//! worker — a 4 KiB GET on another connection of the same (only) worker
//! is answered at once — and once it reads, its body is byte-exact. The
//! mechanisms a worker cannot drive that way are refused when the server
//! is bound, with a message that says why.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{pattern, serve_with, RawClient};
use flexio::MechanismName;
use flexio_net::server::{ServeConfig, Server, BODY_MECHANISMS};

/// Larger than what loopback's socket buffers take from a client that
/// does not read, so the server's send stops at a full socket.
const LARGE: usize = 24 << 20;

/// A client whose receive window is small (the kernel's floor and
/// doubling apply).
fn small_window_client(address: SocketAddr) -> TcpStream {
    use rustix::net::{socket, sockopt, AddressFamily, SocketType};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    sockopt::set_socket_recv_buffer_size(&fd, 4096).unwrap();
    rustix::net::connect(&fd, &address).unwrap();
    TcpStream::from(fd)
}

/// Reads one whole response of `length` body bytes off `stream`, past
/// its head.
fn body_of(stream: &mut TcpStream, length: usize) -> Vec<u8> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut received = Vec::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = stream.read(&mut buffer).unwrap();
        assert!(n > 0, "cut after {} bytes", received.len());
        received.extend_from_slice(&buffer[..n]);
        if let Some(end) = common::find(&received, b"\r\n\r\n")
            && received.len() >= end + 4 + length
        {
            return received.split_off(end + 4);
        }
    }
}

#[test]
fn a_client_that_never_reads_does_not_delay_another_on_the_same_worker_under_every_via() {
    let root = tempfile::tempdir().unwrap();
    let large = pattern(LARGE, 38);
    let small = pattern(4096, 39);
    std::fs::write(root.path().join("large"), &large).unwrap();
    std::fs::write(root.path().join("small"), &small).unwrap();
    let mut table = Vec::new();
    for via in BODY_MECHANISMS {
        let address = serve_with(root.path(), |config| {
            config.workers = 1;
            config.mechanism = via;
        });
        let mut stalled = small_window_client(address);
        stalled
            .write_all(b"GET /large HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        // The worker has filled the stalled client's window and its own
        // send buffer by now.
        std::thread::sleep(Duration::from_millis(300));
        let mut other = RawClient::connect(address);
        let started = Instant::now();
        let response = other.get("/small", "");
        let waited = started.elapsed();
        table.push(format!(
            "{via:<12} 4 KiB GET beside a non-reader: {waited:?}"
        ));
        assert_eq!(response.status, 200, "{via}");
        assert!(response.body == small, "{via}: the small body differs");
        assert!(
            waited < Duration::from_millis(500),
            "{via}: the 4 KiB GET waited {waited:?} behind a client that does not read\n{}",
            table.join("\n")
        );
        // The stalled client was only waiting: it reads its whole body.
        assert!(body_of(&mut stalled, LARGE) == large, "{via}: body differs");
        let part = other.get("/large", "Range: bytes=4095-1000000\r\n");
        assert_eq!(part.status, 206, "{via}");
        assert!(part.body == large[4095..=1_000_000], "{via}: range differs");
    }
    println!("{}", table.join("\n"));
}

#[test]
fn every_via_serve_refuses_says_why_when_bound() {
    let root = tempfile::tempdir().unwrap();
    let refused: Vec<MechanismName> = MechanismName::CONCRETE
        .into_iter()
        .filter(|via| !BODY_MECHANISMS.contains(via))
        .collect();
    assert!(refused.contains(&MechanismName::CopyFileRange));
    for via in refused {
        let mut config = ServeConfig::new(root.path().into());
        config.mechanism = via;
        let Err(error) = Server::bind(config) else {
            panic!("--via {via} was taken");
        };
        let message = error.to_string();
        assert!(
            message.contains(&format!("--via {via}")) && message.contains("use sendfile"),
            "{message}"
        );
    }
}
