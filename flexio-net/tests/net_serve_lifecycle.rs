//! `serve` stopping: asked through its [`ServerHandle`], the server
//! refuses new clients, lets a download in flight finish, links in an
//! upload that completes within the grace and drops one that does not,
//! and its workers end.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{names_in, pattern, RawClient};
use flexio_net::server::{ServeConfig, Server, ServerHandle};

const TOKEN: &str = "lifecycle-token-0123456789";

fn spawn(root: &Path, tweak: impl FnOnce(&mut ServeConfig)) -> ServerHandle {
    let mut config = ServeConfig::new(root.to_path_buf());
    config.workers = 2;
    tweak(&mut config);
    Server::bind(config).unwrap().spawn().unwrap()
}

/// Reads a response head; returns it and the body bytes read with it.
fn read_head(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 64 << 10];
    loop {
        let n = stream.read(&mut buffer).unwrap();
        assert!(n > 0, "closed before the head");
        seen.extend_from_slice(&buffer[..n]);
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            return (
                String::from_utf8_lossy(&seen[..end + 4]).into_owned(),
                seen[end + 4..].to_vec(),
            );
        }
    }
}

/// Whether connecting is refused (the listener is closed): a connection
/// left in the backlog of a listener nobody accepts from is not.
fn refused(address: SocketAddr) -> bool {
    match TcpStream::connect_timeout(&address, Duration::from_secs(2)) {
        Err(error) => error.kind() == std::io::ErrorKind::ConnectionRefused,
        Ok(_) => false,
    }
}

#[test]
fn a_download_in_flight_finishes_after_shutdown_and_new_clients_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let size = 24usize << 20;
    let content = pattern(size, 9);
    std::fs::write(root.path().join("big"), &content).unwrap();
    let handle = spawn(root.path(), |config| {
        config.grace = Duration::from_secs(20);
    });
    let address = handle.local_addr();
    // An idle kept-alive connection: closed at once when stopping.
    let mut idle = RawClient::connect(address);
    assert_eq!(idle.get("/missing", "").status, 404);
    let mut download = TcpStream::connect(address).unwrap();
    download
        .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let (head, mut body) = read_head(&mut download);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // The rest is in flight (the socket buffers hold far less).
    handle.shutdown();
    assert!(idle.closed(), "an idle connection was kept open");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !refused(address) {
        assert!(Instant::now() < deadline, "still accepting after shutdown");
        std::thread::sleep(Duration::from_millis(50));
    }
    download
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buffer = vec![0u8; 1 << 20];
    while body.len() < size {
        let n = download.read(&mut buffer).unwrap();
        assert!(n > 0, "cut after {} of {size} bytes", body.len());
        body.extend_from_slice(&buffer[..n]);
    }
    assert!(body == content, "the body differs");
    // Then the connection ends (the client closes its side on the end
    // of the stream, as clients do), and so does the server.
    assert_eq!(download.read(&mut buffer).unwrap(), 0);
    drop(download);
    let started = Instant::now();
    handle.wait();
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// Sends a PUT head and `part` of a body of `length` bytes.
fn start_upload(address: SocketAddr, name: &str, length: usize, part: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    let head = format!(
        "PUT /{name} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(part).unwrap();
    stream
}

#[test]
fn an_upload_in_flight_at_shutdown_is_whole_or_absent() {
    let root = tempfile::tempdir().unwrap();
    let handle = spawn(root.path(), |config| {
        config.token = Some(TOKEN.into());
        config.grace = Duration::from_secs(2);
    });
    let address = handle.local_addr();
    let content = pattern(1 << 20, 4);
    let half = content.len() / 2;
    let mut finishing = start_upload(address, "whole", content.len(), &content[..half]);
    let mut stalled = start_upload(address, "stalled", content.len(), &content[..half]);
    // Both uploads are in flight once the server holds a file for each
    // (unnamed O_TMPFILEs until linked).
    let both_open = || flexio_testkit::files_open_in(root.path()) == 2;
    assert!(
        flexio_testkit::wait_until(both_open, Duration::from_secs(20)),
        "the server never opened both uploads' files"
    );
    let started = Instant::now();
    handle.shutdown();
    // Within the grace: the rest of one upload arrives, and it is linked.
    finishing.write_all(&content[half..]).unwrap();
    finishing
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let (head, _) = read_head(&mut finishing);
    assert!(head.starts_with("HTTP/1.1 201"), "{head}");
    // The other never ends: dropped when the grace is over.
    handle.wait();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(5),
        "the workers ended after {took:?}"
    );
    stalled
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = stalled.read_to_end(&mut rest);
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    assert_eq!(names_in(root.path()), ["whole"]);
    assert!(std::fs::read(root.path().join("whole")).unwrap() == content);
}

#[test]
fn abort_cuts_what_is_in_flight_at_once() {
    let root = tempfile::tempdir().unwrap();
    std::fs::File::create(root.path().join("big"))
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    let handle = spawn(root.path(), |config| {
        config.grace = Duration::from_secs(60);
    });
    let mut download = TcpStream::connect(handle.local_addr()).unwrap();
    download
        .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let _ = read_head(&mut download);
    handle.shutdown();
    let started = Instant::now();
    handle.abort();
    handle.wait();
    assert!(started.elapsed() < Duration::from_secs(2));
}
