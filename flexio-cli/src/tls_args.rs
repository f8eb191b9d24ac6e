//! `--pin` and `--ca` of `flexio get` and `flexio put`: how an `https://`
//! server is trusted (see `flexio_net::tls`); with neither, the system's
//! trust store, as curl and wget trust it.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use flexio::Error;
use flexio_net::tls::{parse_pin, relay::Relay, Trust};

/// How to trust an `https://` server.
#[derive(Args)]
pub struct TlsArgs {
    /// Trust only the certificate with this SHA-256 fingerprint (as
    /// `flexio serve --tls…` prints it; colons optional).
    #[arg(long, value_name = "SHA256", conflicts_with = "ca")]
    pin: Option<String>,
    /// Trust certificates issued by the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
}

impl TlsArgs {
    /// The URL the plain client fetches: `url` itself for `http://`, or,
    /// for `https://`, the URL of a TLS relay on loopback started here
    /// (kept alive by the returned [`Relay`]).
    pub fn reachable(
        &self,
        url: &str,
        timeout: Duration,
    ) -> crate::error::Result<(Option<Relay>, String)> {
        if !url.starts_with("https://") {
            if self.pin.is_some() || self.ca.is_some() {
                return Err(
                    Error::Usage(format!("{url}: --pin and --ca are for https:// URLs")).into(),
                );
            }
            return Ok((None, url.to_string()));
        }
        let trust = match (&self.pin, &self.ca) {
            (Some(pin), _) => Trust::Pin(parse_pin(pin).map_err(|e| Error::Usage(e.to_string()))?),
            (None, Some(ca)) => Trust::Ca(ca.clone()),
            (None, None) => Trust::System,
        };
        let relay = Relay::start(url, &trust, timeout)?;
        let local = relay.local_url.clone();
        Ok((Some(relay), local))
    }
}
