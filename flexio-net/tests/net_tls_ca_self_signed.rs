//! `--ca` trusts the self-signed certificate everyone makes first (as
//! `curl --cacert` does) — still only for the names it carries and within
//! its dates — and the client offers ALPN `http/1.1`.

use crate::common;

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::read_head;
use flexio_net::client::{get, GetOptions};
use flexio_net::tls::{client::TlsClient, Trust};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const BODY: &[u8] = b"trusted as curl --cacert trusts it";

/// A self-signed certificate for `names`, a CA as `openssl req -x509`
/// makes it (`ca`) or a plain end entity, valid `from`–`to`: its DER
/// (with its PEM) and key.
fn self_signed(
    names: &[&str],
    ca: bool,
    (from, to): ((i32, u8, u8), (i32, u8, u8)),
) -> (Listed, PrivateKeyDer<'static>) {
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, names[0]);
    if ca {
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    }
    params.not_before = rcgen::date_time_ymd(from.0, from.1, from.2);
    params.not_after = rcgen::date_time_ymd(to.0, to.1, to.2);
    let key = rcgen::KeyPair::generate().unwrap();
    let certificate = params.self_signed(&key).unwrap();
    (
        Listed {
            der: certificate.der().clone(),
            pem: certificate.pem(),
        },
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

/// A certificate, and as a CA file holds it.
#[derive(Clone)]
struct Listed {
    der: CertificateDer<'static>,
    pem: String,
}

const NOW: ((i32, u8, u8), (i32, u8, u8)) = ((2020, 1, 1), (2099, 1, 1));

/// The ALPN protocol each request's client chose (`None`: none).
type Chosen = Arc<Mutex<Vec<Option<Vec<u8>>>>>;

/// An HTTPS server on loopback presenting `certificate`, answering every
/// GET with [`BODY`]; the ALPN protocol each client chose is recorded.
fn server(
    certificate: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
) -> (SocketAddr, Chosen) {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certificate], key)
    .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let chosen = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&chosen);
    std::thread::spawn(move || {
        for socket in listener.incoming().take(8) {
            let Ok(socket) = socket else { return };
            socket
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let session = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let mut stream = rustls::StreamOwned::new(session, socket);
            while let Some(_head) = read_head(&mut stream) {
                heard
                    .lock()
                    .unwrap()
                    .push(stream.conn.alpn_protocol().map(<[u8]>::to_vec));
                let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", BODY.len());
                if stream.write_all(reply.as_bytes()).is_err()
                    || stream.write_all(BODY).is_err()
                    || stream.flush().is_err()
                {
                    break;
                }
            }
        }
    });
    (address, chosen)
}

/// A get of the server's file trusting only `ca` (a PEM file made of
/// `listed`).
fn get_trusting(
    address: SocketAddr,
    host: &str,
    listed: &[&Listed],
) -> flexio_net::Result<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let pem: String = listed.iter().map(|c| c.pem.as_str()).collect();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, pem).unwrap();
    let options = GetOptions {
        timeout: Duration::from_secs(5),
        tls: TlsClient::new(Trust::Ca(ca)),
        resume: false,
        ..GetOptions::default()
    };
    let dest = dir.path().join("file");
    get(
        &format!("https://{host}:{}/file", address.port()),
        Some(&dest),
        &options,
    )?;
    Ok(std::fs::read(&dest).unwrap())
}

#[test]
fn a_self_signed_certificate_given_as_ca_is_trusted_for_its_names_and_dates() {
    for ca in [true, false] {
        let (certificate, key) = self_signed(&["localhost", "127.0.0.1"], ca, NOW);
        let (address, chosen) = server(certificate.der.clone(), key);
        let got = get_trusting(address, "127.0.0.1", &[&certificate]);
        assert_eq!(
            got.expect("trusted by its own file").as_slice(),
            BODY,
            "ca {ca}"
        );
        let got = get_trusting(address, "localhost", &[&certificate]);
        assert_eq!(
            got.expect("trusted as localhost").as_slice(),
            BODY,
            "ca {ca}"
        );
        assert!(
            chosen
                .lock()
                .unwrap()
                .iter()
                .all(|alpn| alpn.as_deref() == Some(b"http/1.1".as_slice())),
            "ALPN: {:?}",
            chosen.lock().unwrap()
        );
    }
}

#[test]
fn a_self_signed_certificate_is_refused_for_another_name_out_of_its_dates_or_unlisted() {
    let (other, _) = self_signed(&["127.0.0.1"], true, NOW);
    let cases = [
        (
            "another name",
            self_signed(&["elsewhere.example"], true, NOW),
            false,
        ),
        (
            "expired",
            self_signed(&["127.0.0.1"], true, ((2001, 1, 1), (2002, 1, 1))),
            false,
        ),
        (
            "not yet valid",
            self_signed(&["127.0.0.1"], true, ((2090, 1, 1), (2099, 1, 1))),
            false,
        ),
        (
            "another certificate",
            self_signed(&["127.0.0.1"], true, NOW),
            true,
        ),
    ];
    for (why, (certificate, key), list_other) in cases {
        let (address, _) = server(certificate.der.clone(), key);
        let listed = if list_other { &other } else { &certificate };
        let error =
            get_trusting(address, "127.0.0.1", &[listed]).expect_err(&format!("{why}: trusted"));
        let text = error.to_string();
        assert!(text.contains("TLS handshake"), "{why}: {text}");
    }
}
