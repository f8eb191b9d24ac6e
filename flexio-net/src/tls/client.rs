//! The client's side of TLS: how a server is trusted (a pinned
//! fingerprint, a CA file, or the system's store), made into one rustls
//! configuration per get or put, and the handshake on a connection the
//! client opened itself. The client drives the session in its own
//! connection (`client::transport`): no relay, no listening socket, and
//! the real authority in `Host`.

use std::net::TcpStream;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::{fingerprint, provider, tls_error, Trust};

mod listed;
use crate::error::{Error, Result};

/// Accepts the one certificate whose SHA-256 is the pin, and checks the
/// handshake's signatures with it.
#[derive(Debug)]
struct PinVerifier {
    pin: [u8; 32],
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        use sha2::Digest;
        if sha2::Sha256::digest(end_entity.as_ref()).as_slice() == self.pin {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the server's certificate has SHA-256 {}, not the pinned one",
                fingerprint(end_entity.as_ref())
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

fn client_config(trust: &Trust) -> Result<Arc<rustls::ClientConfig>> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_error("protocol versions", e))?;
    let mut config = match trust {
        Trust::Pin(pin) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PinVerifier {
                pin: *pin,
                algorithms: provider().signature_verification_algorithms,
            }))
            .with_no_client_auth(),
        Trust::Ca(path) => {
            let mut roots = rustls::RootCertStore::empty();
            let mut listed = Vec::new();
            for cert in CertificateDer::pem_slice_iter(&super::read_pem(path)?) {
                let cert = cert.map_err(|e| tls_error(&path.display().to_string(), e))?;
                roots
                    .add(cert.clone())
                    .map_err(|e| tls_error(&path.display().to_string(), e))?;
                listed.push(cert);
            }
            if roots.is_empty() {
                return Err(tls_error(
                    &path.display().to_string(),
                    "no certificate in it",
                ));
            }
            let chains = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider(),
            )
            .build()
            .map_err(|e| tls_error(&path.display().to_string(), e))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(listed::ListedVerifier {
                    roots: chains,
                    listed,
                    algorithms: provider().signature_verification_algorithms,
                }))
                .with_no_client_auth()
        }
        Trust::System => {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = rustls::RootCertStore::empty();
            // A store with a few unreadable entries still trusts the rest,
            // as curl does; one with none at all is an error that says why.
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found
                    .errors
                    .first()
                    .map_or("it holds no certificate".to_string(), ToString::to_string);
                return Err(tls_error(
                    "the system's trust store (give --ca FILE or --pin SHA256)",
                    why,
                ));
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    config.alpn_protocols = vec![super::ALPN_HTTP_1_1.to_vec()];
    Ok(Arc::new(config))
}

/// How a get or put trusts `https://` servers, and the rustls
/// configuration made from it at the first `https://` connection (loading
/// the system's store once, not per connection); clones share it.
#[derive(Clone, Debug, Default)]
pub struct TlsClient {
    trust: Trust,
    config: Arc<OnceLock<std::result::Result<Arc<rustls::ClientConfig>, String>>>,
}

impl TlsClient {
    /// Trusting servers as `trust` says.
    ///
    /// # Examples
    /// ```
    /// use flexio_net::tls::{client::TlsClient, Trust};
    /// let options = flexio_net::client::GetOptions {
    ///     tls: TlsClient::new(Trust::Ca("ca.pem".into())),
    ///     ..Default::default()
    /// };
    /// # let _ = options;
    /// ```
    pub fn new(trust: Trust) -> TlsClient {
        TlsClient {
            trust,
            config: Arc::default(),
        }
    }

    /// Trusting servers as `trust` says, with the configuration made now:
    /// a CA file that cannot be read, or a system store with no
    /// certificate, is an error before any connection.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the file or the store and why.
    pub fn ready(trust: Trust) -> Result<TlsClient> {
        let client = TlsClient::new(trust);
        client.config()?;
        Ok(client)
    }

    /// The rustls configuration, made once.
    fn config(&self) -> Result<Arc<rustls::ClientConfig>> {
        self.config
            .get_or_init(|| client_config(&self.trust).map_err(|e| e.to_string()))
            .clone()
            .map_err(Error::Usage)
    }

    /// A TLS session with `host` over `socket`, its handshake done within
    /// `timeout` and the server's certificate checked.
    ///
    /// # Errors
    /// [`Error::Usage`] for a host that is no server name or a trust that
    /// cannot be loaded; [`Error::Move`] ([`flexio::Error::Io`]) naming `shown` when the handshake
    /// fails (a certificate refused, a pin that differs, a timeout).
    pub(crate) fn connect(
        &self,
        host: &str,
        socket: &mut TcpStream,
        timeout: Duration,
        shown: &str,
    ) -> Result<rustls::ClientConnection> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| Error::Usage(format!("{shown}: {e}")))?;
        let mut session = rustls::ClientConnection::new(self.config()?, name)
            .map_err(|e| tls_error("a new session", e))?;
        handshake(&mut session, socket, timeout)
            .map_err(|e| Error::io("TLS handshake with", shown, None, e))?;
        Ok(session)
    }
}

/// Completes the handshake within `timeout`; the socket's timeouts are
/// restored to `timeout` for what follows.
fn handshake(
    session: &mut rustls::ClientConnection,
    socket: &mut TcpStream,
    timeout: Duration,
) -> std::io::Result<()> {
    let deadline = crate::deadline::after(std::time::Instant::now(), timeout);
    while session.is_handshaking() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("TLS handshake not done within {timeout:?}"),
            ));
        }
        socket.set_read_timeout(Some(left))?;
        socket.set_write_timeout(Some(left))?;
        let (read, written) = session.complete_io(socket)?;
        if read == 0 && written == 0 && session.is_handshaking() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed during the TLS handshake",
            ));
        }
    }
    socket.set_read_timeout(Some(timeout))?;
    socket.set_write_timeout(Some(timeout))
}
