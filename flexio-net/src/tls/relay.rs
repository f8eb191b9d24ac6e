//! The client's side of TLS: a relay on loopback whose far side is a TLS
//! session to the server, checked against a pinned fingerprint or a CA
//! file. `flexio get/put https://…` fetch `http://127.0.0.1:PORT/…` from it
//! with the plain client, unchanged.

use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::front::handshake;
use super::{fingerprint, provider, pump, tls_error, Trust};
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
    let config = match trust {
        Trust::Pin(pin) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PinVerifier {
                pin: *pin,
                algorithms: provider().signature_verification_algorithms,
            }))
            .with_no_client_auth(),
        Trust::Ca(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&super::read_pem(path)?) {
                let cert = cert.map_err(|e| tls_error(&path.display().to_string(), e))?;
                roots
                    .add(cert)
                    .map_err(|e| tls_error(&path.display().to_string(), e))?;
            }
            if roots.is_empty() {
                return Err(tls_error(
                    &path.display().to_string(),
                    "no certificate in it",
                ));
            }
            builder.with_root_certificates(roots).with_no_client_auth()
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
    Ok(Arc::new(config))
}

/// A running relay: connections to [`Relay::local_addr`] are carried to
/// the server over TLS.
#[derive(Debug)]
pub struct Relay {
    local: SocketAddr,
    /// The `https://` URL with its scheme and authority replaced by the
    /// relay's `http://127.0.0.1:PORT`.
    pub local_url: String,
}

struct Far {
    address: SocketAddr,
    name: ServerName<'static>,
    config: Arc<rustls::ClientConfig>,
    timeout: Duration,
}

impl Far {
    /// Connects and completes a checked handshake.
    fn connect(&self) -> std::io::Result<(rustls::Connection, TcpStream)> {
        let mut stream = TcpStream::connect_timeout(&self.address, self.timeout)?;
        let _ = stream.set_nodelay(true);
        let session = rustls::ClientConnection::new(Arc::clone(&self.config), self.name.clone())
            .map_err(std::io::Error::other)?;
        let mut session = rustls::Connection::Client(session);
        handshake(&mut session, &mut stream, self.timeout)?;
        Ok((session, stream))
    }
}

impl Relay {
    /// Starts a relay for `url` (`https://host[:port]/…`, port 443 when
    /// not given) trusting the server as `trust` says. One handshake is
    /// made here, so a wrong pin or an unknown CA is an error now, not a
    /// closed connection later.
    ///
    /// # Errors
    /// [`Error::Usage`] for a URL that is not `https://`; [`Error::Io`]
    /// when the server cannot be reached or its certificate is refused.
    ///
    /// # Examples
    /// ```no_run
    /// use flexio_net::tls::{parse_pin, relay::Relay, Trust};
    /// let pin = parse_pin("E3:B0:C4:42:98:FC:1C:14:9A:FB:F4:C8:99:6F:B9:24:27:AE:41:E4:64:9B:93:4C:A4:95:99:1B:78:52:B8:55").unwrap();
    /// let relay = Relay::start("https://10.0.0.2:8443/big", &Trust::Pin(pin), std::time::Duration::from_secs(10)).unwrap();
    /// assert!(relay.local_url.starts_with("http://127.0.0.1:"));
    /// ```
    pub fn start(url: &str, trust: &Trust, timeout: Duration) -> Result<Relay> {
        let Some(rest) = url.strip_prefix("https://") else {
            return Err(Error::Usage(format!("{url}: not an https:// URL")));
        };
        let (authority, target) = match rest.find(['/', '?']) {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (
                host,
                port.parse::<u16>()
                    .map_err(|_| Error::Usage(format!("{url}: bad port {port:?}")))?,
            ),
            _ => (authority, 443),
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(bare.to_string())
            .map_err(|e| Error::Usage(format!("{url}: {e}")))?;
        let address = (bare, port)
            .to_socket_addrs()
            .map_err(|e| Error::io("resolve", authority, None, e))?
            .next()
            .ok_or_else(|| Error::Usage(format!("{url}: {host} has no address")))?;
        let far = Arc::new(Far {
            address,
            name,
            config: client_config(trust)?,
            timeout,
        });
        // The first handshake proves the server's identity before any
        // request is made.
        let first = far
            .connect()
            .map_err(|e| Error::io("TLS handshake with", authority, None, e))?;
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::io("bind", "127.0.0.1:0", None, e))?;
        let local = listener
            .local_addr()
            .map_err(|e| Error::io("getsockname", "127.0.0.1:0", None, e))?;
        let mut first = Some(first);
        std::thread::Builder::new()
            .name("tls-relay".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    let Ok(mut plain) = stream else { continue };
                    let _ = plain.set_nodelay(true);
                    let far = Arc::clone(&far);
                    let ready = first.take();
                    let _ = std::thread::Builder::new()
                        .name("tls-relay-conn".into())
                        .spawn(move || {
                            let connected = match ready {
                                Some(ready) => Ok(ready),
                                None => far.connect(),
                            };
                            match connected {
                                Ok((mut session, mut tls)) => {
                                    let _ = pump(&mut session, &mut tls, &mut plain, far.timeout);
                                }
                                Err(error) => eprintln!("flexio: TLS: {error}"),
                            }
                        });
                }
            })
            .map_err(|e| Error::io("spawn", "TLS relay", None, e))?;
        Ok(Relay {
            local,
            local_url: format!("http://{local}{target}"),
        })
    }

    /// Where the plain client connects.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}
