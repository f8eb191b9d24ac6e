//! TLS (rustls) for `flexio serve --tls` and `flexio get/put https://`.
//!
//! On the server each connection of the state machine is plain or a
//! rustls session its worker drives without blocking, like the socket
//! under it (`server::wire`): the handshake is part of reading the first
//! request head, under its deadline; no thread per connection, no relay.
//! A bearer token is taken over TLS from any peer, over a plain link only
//! from loopback. The client drives its session in its own connection
//! ([`client`] for trust and the handshake).
//!
//! The cost, reported by `flexio serve`: bodies go through rustls, not
//! sendfile — each share of a file is read (pread) into a buffer and
//! encrypted, one user-space copy. Kernel TLS (kTLS), which would let
//! sendfile go on, is not used: the keys are not handed to the kernel.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

pub mod client;

/// What the server presents: its rustls configuration and the SHA-256
/// fingerprint of its certificate.
#[derive(Clone)]
pub struct TlsIdentity {
    /// The rustls server configuration.
    pub config: Arc<rustls::ServerConfig>,
    /// SHA-256 of the certificate (DER), as `AB:CD:…`; what
    /// `flexio get --pin` takes.
    pub fingerprint: String,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("fingerprint", &self.fingerprint)
            .finish()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The most a PEM file (a certificate chain, a key, a CA bundle) may
/// hold: a system's whole CA bundle is about 200 KiB.
const MAX_PEM_BYTES: u64 = 4 << 20;

/// Reads a PEM file that is a regular file of sane size: `/dev/zero` or a
/// FIFO named by mistake is refused at once instead of growing the process
/// or hanging it.
pub(crate) fn read_pem(path: &Path) -> Result<Vec<u8>> {
    flexio::read_regular_file_capped(path, MAX_PEM_BYTES)
        .map_err(|e| tls_error(&path.display().to_string(), e))
}

fn tls_error(what: &str, error: impl std::fmt::Display) -> Error {
    Error::Usage(format!("TLS: {what}: {error}"))
}

/// SHA-256 of `der`, as upper-case hex pairs joined by colons.
///
/// # Examples
/// ```
/// let print = flexio_net::tls::fingerprint(b"");
/// assert!(print.starts_with("E3:B0:C4:42"));
/// assert_eq!(print.len(), 32 * 3 - 1);
/// ```
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Parses a pin: 64 hex digits, colons allowed (as [`fingerprint`] writes).
///
/// # Errors
/// [`Error::Usage`] for anything else.
///
/// # Examples
/// ```
/// let pin = flexio_net::tls::parse_pin(&flexio_net::tls::fingerprint(b"x")).unwrap();
/// assert_eq!(pin.len(), 32);
/// assert!(flexio_net::tls::parse_pin("AB:CD").is_err());
/// ```
pub fn parse_pin(text: &str) -> Result<[u8; 32]> {
    let hex: String = text.chars().filter(|c| *c != ':').collect();
    let bad = || {
        Error::Usage(format!(
            "--pin {text:?}: give the 64 hex digits of a SHA-256 (colons allowed)"
        ))
    };
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(bad());
    }
    let mut pin = [0u8; 32];
    for (index, byte) in pin.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * index..2 * index + 2], 16).map_err(|_| bad())?;
    }
    Ok(pin)
}

impl TlsIdentity {
    fn from_der(cert: CertificateDer<'static>, key: PrivateKeyDer<'static>) -> Result<Self> {
        let fingerprint = fingerprint(cert.as_ref());
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error("protocol versions", e))?
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .map_err(|e| tls_error("the certificate and key", e))?;
        Ok(TlsIdentity {
            config: Arc::new(served(config)?),
            fingerprint,
        })
    }

    /// A new self-signed certificate for `names` (host names or addresses)
    /// made with rcgen; nothing is written to disk.
    ///
    /// # Errors
    /// [`Error::Usage`] when rcgen or rustls refuse.
    ///
    /// # Examples
    /// ```
    /// let identity = flexio_net::tls::TlsIdentity::self_signed(&["localhost".into()]).unwrap();
    /// assert_eq!(identity.fingerprint.len(), 95);
    /// ```
    pub fn self_signed(names: &[String]) -> Result<Self> {
        let made = rcgen::generate_simple_self_signed(names.to_vec())
            .map_err(|e| tls_error("generating a self-signed certificate", e))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
        TlsIdentity::from_der(made.cert.der().clone(), key)
    }

    /// The certificate chain and private key of two PEM files.
    ///
    /// # Errors
    /// [`Error::Usage`] for a file that cannot be read or holds no
    /// certificate or key.
    ///
    /// # Examples
    /// ```no_run
    /// let identity = flexio_net::tls::TlsIdentity::from_pem_files(
    ///     "cert.pem".as_ref(),
    ///     "key.pem".as_ref(),
    /// ).unwrap();
    /// println!("{}", identity.fingerprint);
    /// ```
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&read_pem(cert)?)
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| tls_error(&cert.display().to_string(), e))?;
        let Some(first) = chain.first().cloned() else {
            return Err(tls_error(
                &cert.display().to_string(),
                "no certificate in it",
            ));
        };
        let key = PrivateKeyDer::from_pem_slice(&read_pem(key)?)
            .map_err(|e| tls_error(&key.display().to_string(), e))?;
        let mut identity = TlsIdentity::from_der(first, key.clone_key())?;
        if chain.len() > 1 {
            let config = rustls::ServerConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .map_err(|e| tls_error("protocol versions", e))?
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .map_err(|e| tls_error("the certificate chain and key", e))?;
            identity.config = Arc::new(served(config)?);
        }
        Ok(identity)
    }
}

/// The one protocol this server and client speak, as ALPN names it
/// (RFC 7301): offered, so that a client or proxy that asks for it gets it
/// (and one asking only for `h2` is refused rather than misread).
pub(crate) const ALPN_HTTP_1_1: &[u8] = b"http/1.1";

/// The server's configuration as every connection uses it: ALPN offered,
/// and sessions resumed from tickets (encrypted with a key rustls rotates)
/// so that a client's next connection skips the key exchange, whichever
/// worker takes it, with no session state kept per client.
fn served(mut config: rustls::ServerConfig) -> Result<rustls::ServerConfig> {
    config.alpn_protocols = vec![ALPN_HTTP_1_1.to_vec()];
    config.ticketer =
        rustls::crypto::ring::Ticketer::new().map_err(|e| tls_error("session tickets", e))?;
    Ok(config)
}

/// Where the kernel lists the TCP upper-layer protocols it has loaded.
pub const ULP_LIST: &str = "/proc/sys/net/ipv4/tcp_available_ulp";

/// Whether this kernel offers kernel TLS (kTLS) now: `tls` among the TCP
/// upper-layer protocols of [`ULP_LIST`] (a kernel with the `tls` module
/// unloaded says no). The server does not use it either way yet: rustls
/// keeps the keys, so bodies over TLS are read and encrypted in user space.
///
/// # Examples
/// ```
/// let offered = flexio_net::tls::kernel_tls_offered();
/// assert_eq!(flexio_net::tls::kernel_tls_note().contains("not offered"), !offered);
/// ```
pub fn kernel_tls_offered() -> bool {
    std::fs::read_to_string(ULP_LIST)
        .map(|list| list.split_whitespace().any(|name| name == "tls"))
        .unwrap_or(false)
}

/// What `flexio serve --tls…` says about kTLS.
pub fn kernel_tls_note() -> String {
    if kernel_tls_offered() {
        "kernel TLS is offered by this kernel but not used: rustls keeps the keys".into()
    } else {
        format!("kernel TLS is not offered by this kernel (no `tls` in {ULP_LIST})")
    }
}

/// How the client trusts a server.
#[derive(Clone, Debug, Default)]
pub enum Trust {
    /// Only the certificate whose SHA-256 is this (`--pin`); names and
    /// dates are not checked: the pin is the identity.
    Pin([u8; 32]),
    /// Certificates chaining to the CA certificates of this PEM file
    /// (`--ca`), for the URL's host name.
    Ca(std::path::PathBuf),
    /// Certificates chaining to the system's trust store (as curl and
    /// wget trust them: `/etc/ssl/certs` on Debian, or the file named by
    /// `SSL_CERT_FILE`, the directory by `SSL_CERT_DIR`), for the URL's
    /// host name: what neither `--pin` nor `--ca` means.
    #[default]
    System,
}
