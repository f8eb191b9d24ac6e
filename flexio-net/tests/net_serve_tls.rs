//! TLS inside the server's workers: each TLS connection is a rustls
//! session driven by its worker like a plain socket — no thread per
//! connection, a client that does not read holds only its own connection,
//! and close_notify ends a closing response. The tests that count this
//! process's threads take one lock, so no other test here runs meanwhile.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flexio_net::server::{ServeConfig, Server, ServerHandle};
use rustls::pki_types::{CertificateDer, ServerName};

/// Held by every test here: thread counts are this process's.
static ALONE: Mutex<()> = Mutex::new(());

/// A server with a fresh certificate for 127.0.0.1 (its configuration
/// as `tweak` makes it) and the client configuration that trusts it.
fn tls_server(
    root: &std::path::Path,
    tweak: impl FnOnce(&mut ServeConfig),
) -> (ServerHandle, Arc<rustls::ClientConfig>) {
    tls_server_for(root, tweak, rustls::DEFAULT_VERSIONS)
}

/// [`tls_server`] with a client that offers only `versions`.
fn tls_server_for(
    root: &std::path::Path,
    tweak: impl FnOnce(&mut ServeConfig),
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> (ServerHandle, Arc<rustls::ClientConfig>) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let pems = tempfile::tempdir().unwrap();
    std::fs::write(pems.path().join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(pems.path().join("key.pem"), key.serialize_pem()).unwrap();
    let identity = flexio_net::tls::TlsIdentity::from_pem_files(
        &pems.path().join("cert.pem"),
        &pems.path().join("key.pem"),
    )
    .unwrap();
    let mut config = ServeConfig::new(root.to_path_buf());
    config.tls = Some(identity);
    tweak(&mut config);
    let handle = Server::bind(config).unwrap().spawn().unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(cert.der().to_vec()))
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    (handle, Arc::new(client))
}

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A TLS connection to `address` with its handshake done.
fn connect(address: SocketAddr, client: &Arc<rustls::ClientConfig>) -> Tls {
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let session = rustls::ClientConnection::new(Arc::clone(client), name).unwrap();
    let socket = TcpStream::connect(address).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut tls = rustls::StreamOwned::new(session, socket);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).unwrap();
    }
    tls
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// Reads one response to a GET with `Connection: close` to its end: the
/// head and body, and whether the server ended with close_notify.
fn get_to_close(tls: &mut Tls, target: &str) -> (Vec<u8>, bool) {
    let request = format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let clean = match tls.read_to_end(&mut response) {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => false,
        Err(e) => panic!("reading the response: {e}"),
    };
    (response, clean)
}

#[test]
fn two_hundred_idle_tls_connections_add_no_thread() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), b"over tls").unwrap();
    let (handle, client) = tls_server(root.path(), |config| config.workers = 2);
    let address = handle.local_addr();
    // One exchange first, so that whatever the server starts lazily runs.
    let (response, _) = get_to_close(&mut connect(address, &client), "/f");
    assert!(response.ends_with(b"over tls"));
    let before = threads();
    let mut idle: Vec<Tls> = (0..200).map(|_| connect(address, &client)).collect();
    // Each handshake is done; a request on the last one shows the server
    // still answers with all of them open.
    let last = idle.last_mut().unwrap();
    last.write_all(b"GET /f HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !seen.ends_with(b"over tls") {
        let n = last.read(&mut buffer).unwrap();
        assert_ne!(n, 0, "the server closed before answering");
        seen.extend_from_slice(&buffer[..n]);
    }
    // At most as many: a helper thread of an earlier test in this binary
    // may still be finishing (CI saw 9 threads before and 8 during).
    let during = threads();
    assert!(
        during <= before,
        "200 idle TLS connections took this process's threads from {before} to {during}"
    );
    drop(idle);
    handle.abort();
    handle.wait();
}

#[test]
fn a_tls_client_that_does_not_read_delays_no_other() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("big"), common::pattern(32 << 20, 7)).unwrap();
    std::fs::write(root.path().join("small"), b"small one").unwrap();
    // One worker: the stalled client and the other share it.
    let (handle, client) = tls_server(root.path(), |config| config.workers = 1);
    let address = handle.local_addr();
    let mut stalled = connect(address, &client);
    stalled
        .write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    stalled.flush().unwrap();
    // The server fills the socket towards it and stops there.
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    for _ in 0..5 {
        let (response, clean) = get_to_close(&mut connect(address, &client), "/small");
        assert!(response.starts_with(b"HTTP/1.1 200"), "{response:?}");
        assert!(response.ends_with(b"small one"));
        assert!(clean, "the response did not end with close_notify");
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "five small GETs took {took:?} beside a client that does not read"
    );
    // The stalled client reads its whole body at last, intact.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stalled.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"));
    let mut body = vec![0u8; 32 << 20];
    stalled.read_exact(&mut body).unwrap();
    assert!(body == common::pattern(32 << 20, 7), "the big body differs");
    handle.abort();
    handle.wait();
}

#[test]
fn an_upload_with_a_bearer_token_goes_over_tls() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    let (handle, client) = tls_server(root.path(), |config| {
        config.token = Some("a-token-of-twenty-chars".into());
    });
    let body = common::pattern(3 << 20, 11);
    let mut tls = connect(handle.local_addr(), &client);
    let head = format!(
        "PUT /up HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a-token-of-twenty-chars\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).unwrap();
    tls.write_all(&body).unwrap();
    let mut response = Vec::new();
    tls.read_to_end(&mut response).unwrap();
    assert!(
        response.starts_with(b"HTTP/1.1 201"),
        "{}",
        String::from_utf8_lossy(&response)
    );
    assert!(std::fs::read(root.path().join("up")).unwrap() == body);
    handle.abort();
    handle.wait();
}

#[test]
fn kernel_tls_is_probed_and_said() {
    let list = std::fs::read_to_string(flexio_net::tls::ULP_LIST).unwrap_or_default();
    let offered = list.split_whitespace().any(|name| name == "tls");
    assert_eq!(flexio_net::tls::kernel_tls_offered(), offered);
    let note = flexio_net::tls::kernel_tls_note();
    if !offered {
        eprintln!(
            "skipped: this kernel offers no kernel TLS (no `tls` in {}: {:?}); checked only that serve says so",
            flexio_net::tls::ULP_LIST,
            list.trim()
        );
        assert!(note.contains("not offered"), "{note}");
        return;
    }
    assert!(
        note.contains("offered by this kernel but not used"),
        "{note}"
    );
}

#[test]
fn a_connection_over_the_cap_is_answered_503_over_tls() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    let (handle, client) = tls_server(root.path(), |config| config.max_connections = 2);
    let address = handle.local_addr();
    let _held: Vec<Tls> = (0..2).map(|_| connect(address, &client)).collect();
    // The third is answered after its handshake, without a request.
    let mut third = connect(address, &client);
    let mut response = Vec::new();
    let clean = match third.read_to_end(&mut response) {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => false,
        Err(e) => panic!("reading the 503: {e}"),
    };
    assert!(
        response.starts_with(b"HTTP/1.1 503"),
        "{}",
        String::from_utf8_lossy(&response)
    );
    assert!(clean, "the 503 did not end with close_notify");
    handle.abort();
    handle.wait();
}

#[test]
fn a_tls_handshake_not_done_by_the_head_deadline_is_closed() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    let (handle, _) = tls_server(root.path(), |config| {
        config.head_timeout = Duration::from_millis(500);
    });
    // A client that starts a record and never finishes its ClientHello.
    let mut socket = TcpStream::connect(handle.local_addr()).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    socket
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = socket.read_to_end(&mut rest);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "a stalled handshake was held {took:?}"
    );
    handle.abort();
    handle.wait();
}

#[test]
fn the_server_offers_http_1_1_by_alpn() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), b"over alpn").unwrap();
    let (handle, client) = tls_server(root.path(), |_| {});
    let mut asking = (*client).clone();
    asking.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let mut tls = connect(handle.local_addr(), &Arc::new(asking));
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    let (response, _) = get_to_close(&mut tls, "/f");
    assert!(response.ends_with(b"over alpn"));
    // A client that offers no ALPN is served as before.
    let mut plain = connect(handle.local_addr(), &client);
    assert_eq!(plain.conn.alpn_protocol(), None);
    let (response, _) = get_to_close(&mut plain, "/f");
    assert!(response.ends_with(b"over alpn"));
    handle.abort();
    handle.wait();
}

/// Reads whole TLS records off the socket into the session until `want`
/// bytes of plaintext came out: the plaintext and how many records held it.
fn read_counting_records(tls: &mut Tls, want: usize) -> (Vec<u8>, usize) {
    let mut plain = Vec::new();
    let mut records = 0;
    let mut buffer = vec![0u8; 1 << 16];
    while plain.len() < want {
        let mut record = vec![0u8; 5];
        tls.sock.read_exact(&mut record).unwrap();
        let length = usize::from(u16::from_be_bytes([record[3], record[4]]));
        record.resize(5 + length, 0);
        tls.sock.read_exact(&mut record[5..]).unwrap();
        records += 1;
        let mut unread = &record[..];
        while !unread.is_empty() {
            tls.conn.read_tls(&mut unread).unwrap();
        }
        tls.conn.process_new_packets().unwrap();
        loop {
            match tls.conn.reader().read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => plain.extend_from_slice(&buffer[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("reading plaintext: {e}"),
            }
        }
    }
    (plain, records)
}

#[test]
fn a_small_response_over_tls_is_one_record() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("small"), common::pattern(4096, 3)).unwrap();
    let (handle, client) = tls_server(root.path(), |_| {});
    let mut tls = connect(handle.local_addr(), &client);
    let request = b"GET /small HTTP/1.1\r\nHost: x\r\n\r\n";
    // The first exchange also carries the session tickets sent after the
    // handshake; the second is the response alone.
    tls.write_all(request).unwrap();
    let (first, _) = read_counting_records(&mut tls, 4096 + 1);
    let head_end = first.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let whole = head_end + 4096;
    if first.len() < whole {
        read_counting_records(&mut tls, whole - first.len());
    }
    tls.write_all(request).unwrap();
    let (second, records) = read_counting_records(&mut tls, whole);
    assert!(second.starts_with(b"HTTP/1.1 200"));
    assert!(second.ends_with(&common::pattern(4096, 3)));
    assert_eq!(
        records, 1,
        "a 4 KiB response came in {records} TLS records (its head in one of its own?)"
    );
    handle.abort();
    handle.wait();
}

#[test]
fn a_second_connection_resumes_the_tls_session() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), b"resumed").unwrap();
    let (handle, client) = tls_server(root.path(), |config| config.workers = 4);
    let address = handle.local_addr();
    let mut first = connect(address, &client);
    // Reading the response reads the tickets sent before it.
    let (response, _) = get_to_close(&mut first, "/f");
    assert!(response.ends_with(b"resumed"));
    assert_eq!(
        first.conn.handshake_kind(),
        Some(rustls::HandshakeKind::Full)
    );
    // Whichever worker takes the next connections, each skips the key
    // exchange.
    for _ in 0..4 {
        let mut next = connect(address, &client);
        assert_eq!(
            next.conn.handshake_kind(),
            Some(rustls::HandshakeKind::Resumed),
            "a later connection did a full handshake: no session resumption"
        );
        let (response, _) = get_to_close(&mut next, "/f");
        assert!(response.ends_with(b"resumed"));
    }
    handle.abort();
    handle.wait();
}

#[test]
fn a_tls_1_2_client_resumes_its_session_too() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), b"resumed").unwrap();
    // A client offering only TLS 1.2 (as older clients and proxies do):
    // resumed from a ticket or a session id.
    let (handle, client) = tls_server_for(
        root.path(),
        |config| config.workers = 4,
        &[&rustls::version::TLS12],
    );
    let address = handle.local_addr();
    let mut first = connect(address, &client);
    assert_eq!(
        first.conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    let (response, _) = get_to_close(&mut first, "/f");
    assert!(response.ends_with(b"resumed"));
    for _ in 0..4 {
        let mut next = connect(address, &client);
        assert_eq!(
            next.conn.handshake_kind(),
            Some(rustls::HandshakeKind::Resumed),
            "a later TLS 1.2 connection did a full handshake: no session resumption"
        );
        let (response, _) = get_to_close(&mut next, "/f");
        assert!(response.ends_with(b"resumed"));
    }
    handle.abort();
    handle.wait();
}

/// The body of a response (after its head).
fn body_of(response: &[u8]) -> &[u8] {
    let end = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    &response[end..]
}

#[test]
fn multipart_ranges_and_a_tar_over_tls_are_the_bytes_sent_plain() {
    let _alone = ALONE.lock().unwrap_or_else(|p| p.into_inner());
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), common::pattern(300_000, 5)).unwrap();
    std::fs::create_dir(root.path().join("d")).unwrap();
    for (name, size) in [("a", 10), ("b", 70_000), ("c", 0)] {
        std::fs::write(root.path().join("d").join(name), common::pattern(size, 9)).unwrap();
    }
    let (tls_handle, client) = tls_server(root.path(), |_| {});
    let plain_handle = Server::bind(ServeConfig::new(root.path().to_path_buf()))
        .unwrap()
        .spawn()
        .unwrap();
    // Part heads and tar headers are sent with more to follow: held back
    // over TLS, they must still arrive, in order, before their bytes.
    for (target, range) in [
        ("/f", "Range: bytes=0-9,100-199,299990-\r\n"),
        ("/d/?tar", ""),
    ] {
        let request =
            format!("GET {target} HTTP/1.1\r\nHost: x\r\n{range}Connection: close\r\n\r\n");
        let mut plain = TcpStream::connect(plain_handle.local_addr()).unwrap();
        plain.write_all(request.as_bytes()).unwrap();
        let mut plain_response = Vec::new();
        plain.read_to_end(&mut plain_response).unwrap();
        let mut tls = connect(tls_handle.local_addr(), &client);
        tls.write_all(request.as_bytes()).unwrap();
        let mut tls_response = Vec::new();
        tls.read_to_end(&mut tls_response).unwrap();
        let (plain_body, tls_body) = (body_of(&plain_response), body_of(&tls_response));
        assert!(!plain_body.is_empty(), "{target}: an empty body");
        if target == "/f" {
            // The boundary differs per response; each part's bytes do not.
            let boundary_of = |r: &[u8]| {
                let head = String::from_utf8_lossy(&r[..r.len() - body_of(r).len()]).into_owned();
                head.split("boundary=")
                    .nth(1)
                    .unwrap()
                    .split("\r\n")
                    .next()
                    .unwrap()
                    .to_string()
            };
            let normal =
                |r: &[u8]| String::from_utf8_lossy(body_of(r)).replace(&boundary_of(r), "BOUNDARY");
            assert_eq!(normal(&plain_response), normal(&tls_response), "{target}");
        } else {
            assert_eq!(plain_body, tls_body, "{target}: the tar differs over TLS");
        }
    }
    tls_handle.abort();
    tls_handle.wait();
    plain_handle.abort();
    plain_handle.wait();
}
