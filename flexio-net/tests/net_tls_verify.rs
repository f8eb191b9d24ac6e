//! A get over TLS hashes the decrypted body as it passes (the bytes are in
//! this process anyway) instead of reading the file back: a server whose
//! manifest disagrees with its body is still caught, at the chunk that
//! differs, and an honest one is verified, short last chunk included.

use crate::common;

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use common::{pattern, read_head};
use flexio_net::client::{get, GetOptions};
use flexio_net::tls::{client::TlsClient, parse_pin, TlsIdentity, Trust};

/// The body: three whole chunks and a short fourth.
const SIZE: usize = (3 << 20) + 12_345;

/// A flexio-looking server over TLS for one connection: the file, whole
/// (`Range` ignored, as a server may) and its manifest, whose chunk
/// `wrong` (if any) is not the body's.
fn lying_server(identity: &TlsIdentity, data: Arc<Vec<u8>>, wrong: Option<usize>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let config = Arc::clone(&identity.config);
    std::thread::spawn(move || {
        for socket in listener.incoming().take(2) {
            let Ok(socket) = socket else { return };
            let session = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let mut stream = rustls::StreamOwned::new(session, socket);
            while let Some(head) = read_head(&mut stream) {
                let body = if head.starts_with("GET /file?manifest") {
                    common::manifest_of(&data, wrong)
                } else {
                    data.to_vec()
                };
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nServer: flexio\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                if stream.write_all(reply.as_bytes()).is_err()
                    || stream.write_all(&body).is_err()
                    || stream.flush().is_err()
                {
                    return;
                }
            }
        }
    });
    address
}

fn options(identity: &TlsIdentity) -> GetOptions {
    GetOptions {
        streams: 1,
        timeout: Duration::from_secs(10),
        tls: TlsClient::new(Trust::Pin(parse_pin(&identity.fingerprint).unwrap())),
        ..GetOptions::default()
    }
}

#[test]
fn a_manifest_that_does_not_match_the_decrypted_body_is_caught_at_its_chunk() {
    let identity = TlsIdentity::self_signed(&["127.0.0.1".into()]).unwrap();
    let data = Arc::new(pattern(SIZE, 11));
    for wrong in [1, 3] {
        let address = lying_server(&identity, Arc::clone(&data), Some(wrong));
        let out = tempfile::tempdir().unwrap();
        let error = get(
            &format!("https://{address}/file"),
            Some(&out.path().join("file")),
            &options(&identity),
        )
        .unwrap_err();
        assert!(
            matches!(
                error.cause(),
                flexio_net::Error::VerifyMismatch { chunk, .. } if *chunk == wrong
            ),
            "chunk {wrong}: {error}"
        );
        assert!(!out.path().join("file").exists(), "kept under its name");
    }
}

#[test]
fn an_honest_server_over_tls_is_verified_short_last_chunk_included() {
    let identity = TlsIdentity::self_signed(&["127.0.0.1".into()]).unwrap();
    let data = Arc::new(pattern(SIZE, 12));
    let address = lying_server(&identity, Arc::clone(&data), None);
    let out = tempfile::tempdir().unwrap();
    let report = get(
        &format!("https://{address}/file"),
        Some(&out.path().join("file")),
        &options(&identity),
    )
    .unwrap();
    assert!(report.verified, "{report:?}");
    assert_eq!(std::fs::read(out.path().join("file")).unwrap(), *data);
}
