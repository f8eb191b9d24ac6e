//! `serve --tls CERT,KEY` with a real certificate chain: a PEM holding the
//! leaf and an intermediate, issued by a root the client alone trusts. A
//! server that sent only its leaf could not be verified (unknown issuer).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use common::serve_with;
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};

/// A root, an intermediate it signs, and a leaf for 127.0.0.1 the
/// intermediate signs: the root's DER, the chain's PEM, the leaf key's PEM.
fn chain() -> (CertificateDer<'static>, String, String) {
    let ca = |name: &str| {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params
    };
    let root_key = KeyPair::generate().unwrap();
    let root = ca("flexio test root").self_signed(&root_key).unwrap();
    let middle_key = KeyPair::generate().unwrap();
    let middle = ca("flexio test intermediate")
        .signed_by(&middle_key, &root, &root_key)
        .unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &middle, &middle_key)
        .unwrap();
    (
        root.der().clone(),
        format!("{}{}", leaf.pem(), middle.pem()),
        leaf_key.serialize_pem(),
    )
}

#[test]
fn a_chain_with_an_intermediate_is_presented_whole() {
    let (root_der, chain_pem, key_pem) = chain();
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    std::fs::write(served.join("f"), b"over tls").unwrap();
    std::fs::write(dir.path().join("chain.pem"), chain_pem).unwrap();
    std::fs::write(dir.path().join("key.pem"), key_pem).unwrap();
    let identity = flexio_net::tls::TlsIdentity::from_pem_files(
        &dir.path().join("chain.pem"),
        &dir.path().join("key.pem"),
    )
    .unwrap();
    let address = serve_with(&served, |config| config.tls = Some(identity));

    let mut roots = rustls::RootCertStore::empty();
    roots.add(root_der).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let session = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let socket = TcpStream::connect(address).unwrap();
    let mut tls = rustls::StreamOwned::new(session, socket);
    tls.write_all(b"GET /f HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut response = Vec::new();
    match tls.read_to_end(&mut response) {
        Ok(_) => {}
        // The server may close without close_notify after the body.
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => {}
        Err(error) => panic!("{error}"),
    }
    assert!(
        response.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&response)
    );
    assert!(response.ends_with(b"over tls"));
    assert_eq!(tls.conn.peer_certificates().map(<[_]>::len), Some(2));
}
