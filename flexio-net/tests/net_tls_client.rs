//! The client's TLS is a transport of its own connection: an `https://`
//! get sends the real authority in `Host`, opens no listening socket (the
//! loopback relay it replaced did, and any local process could connect to
//! it first), keeps one session alive across requests, and refuses a
//! server whose certificate is not the pinned one before any request.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flexio_net::client::{get, get_tree, GetOptions};
use flexio_net::tls::client::TlsClient;
use flexio_net::tls::{parse_pin, TlsIdentity, Trust};

/// The request heads a server saw, each as sent, and `accepted` for each
/// connection it took.
type Seen = Arc<Mutex<Vec<String>>>;

/// A TLS server on loopback (a self-signed certificate for `localhost`)
/// answering `GET /file` with `body` and anything else with 404, over
/// kept-alive connections; every connection and request head goes into
/// `seen`.
fn tls_server(body: Vec<u8>, seen: Seen) -> (SocketAddr, String) {
    let identity = TlsIdentity::self_signed(&["localhost".into()]).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let config = Arc::clone(&identity.config);
    let body = Arc::new(body);
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            seen.lock().unwrap().push("accepted".into());
            let (config, body, seen) = (Arc::clone(&config), Arc::clone(&body), Arc::clone(&seen));
            std::thread::spawn(move || {
                let session = rustls::ServerConnection::new(config).unwrap();
                let mut stream = rustls::StreamOwned::new(session, socket.unwrap());
                while let Some(head) = read_head(&mut stream) {
                    seen.lock().unwrap().push(head.clone());
                    let (status, kind, bytes): (&str, &str, &[u8]) = if head
                        .starts_with("GET /file ")
                    {
                        ("200 OK", "application/octet-stream", &body)
                    } else if head.starts_with("GET / ") || head.starts_with("GET /?manifest ") {
                        (
                            "200 OK",
                            "text/html",
                            br#"<a href="../">up</a><a href="file">file</a>"#,
                        )
                    } else {
                        ("404 Not Found", "text/plain", b"none")
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
                        bytes.len()
                    );
                    if stream.write_all(reply.as_bytes()).is_err()
                        || stream.write_all(bytes).is_err()
                        || stream.flush().is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (address, identity.fingerprint)
}

fn read_head(stream: &mut impl Read) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// The inodes of this process's listening TCP sockets.
fn listening_sockets() -> Vec<String> {
    let listening: Vec<String> = ["/proc/self/net/tcp", "/proc/self/net/tcp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    (fields.get(3) == Some(&"0A")).then(|| fields[9].to_string())
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let mut ours: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter_map(|target| {
            let text = target.to_string_lossy().into_owned();
            let inode = text
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .to_string();
            listening.contains(&inode).then_some(inode)
        })
        .collect();
    ours.sort();
    ours
}

fn pinned(fingerprint: &str) -> GetOptions {
    GetOptions {
        timeout: Duration::from_secs(10),
        tls: TlsClient::new(Trust::Pin(parse_pin(fingerprint).unwrap())),
        ..GetOptions::default()
    }
}

#[test]
fn an_https_get_sends_the_real_host_and_opens_no_listening_socket() {
    let body: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let seen = Seen::default();
    let (address, fingerprint) = tls_server(body.clone(), Arc::clone(&seen));
    let before = listening_sockets();
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("file");
    let url = format!("https://localhost:{}/file", address.port());
    let report = get(&url, Some(&dest), &pinned(&fingerprint)).unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), body);
    assert_eq!(report.bytes, body.len() as u64);
    assert_eq!(listening_sockets(), before, "a listening socket was opened");
    let heads = seen.lock().unwrap().clone();
    assert!(heads.len() > 1);
    for head in heads.iter().filter(|h| h.as_str() != "accepted") {
        assert!(
            head.contains(&format!("\r\nHost: localhost:{}\r\n", address.port())),
            "{head}"
        );
    }
}

#[test]
fn an_https_get_with_another_pin_is_refused_before_any_request() {
    let seen = Seen::default();
    let (address, _) = tls_server(b"secret".to_vec(), Arc::clone(&seen));
    let other = TlsIdentity::self_signed(&["localhost".into()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("file");
    let url = format!("https://localhost:{}/file", address.port());
    let error = get(&url, Some(&dest), &pinned(&other.fingerprint)).unwrap_err();
    assert!(error.to_string().contains("pinned"), "{error}");
    assert!(!dest.exists());
    assert_eq!(*seen.lock().unwrap(), ["accepted"], "a request went out");
}

/// A tree over TLS from a server that is not flexio: the manifest probe,
/// the listing and the file all go over one kept-alive session.
#[test]
fn one_tls_session_carries_every_request_of_a_tree_get() {
    let seen = Seen::default();
    let (address, fingerprint) = tls_server(b"file bytes".to_vec(), Arc::clone(&seen));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("https://localhost:{}/", address.port());
    let tree = dir.path().join("t");
    get_tree(&url, &tree, &pinned(&fingerprint)).unwrap();
    assert_eq!(std::fs::read(tree.join("file")).unwrap(), b"file bytes");
    let heads = seen.lock().unwrap().clone();
    let lines: Vec<&str> = heads.iter().filter_map(|h| h.lines().next()).collect();
    assert_eq!(
        lines,
        [
            "accepted",
            "GET /?manifest HTTP/1.1",
            "GET / HTTP/1.1",
            "GET /file HTTP/1.1"
        ]
    );
}

#[test]
fn the_client_offers_http_1_1_by_alpn() {
    let identity = TlsIdentity::self_signed(&["localhost".into()]).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let config = Arc::clone(&identity.config);
    let server = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut session = rustls::ServerConnection::new(config).unwrap();
        while session.is_handshaking() {
            if session.complete_io(&mut socket).is_err() {
                break;
            }
        }
        session.alpn_protocol().map(<[u8]>::to_vec)
    });
    let dir = tempfile::tempdir().unwrap();
    let url = format!("https://localhost:{}/file", address.port());
    // The server closes after the handshake: only what was negotiated counts.
    let _ = get(
        &url,
        Some(&dir.path().join("file")),
        &pinned(&identity.fingerprint),
    );
    assert_eq!(server.join().unwrap().as_deref(), Some(&b"http/1.1"[..]));
}
