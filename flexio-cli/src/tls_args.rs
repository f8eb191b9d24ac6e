//! `--pin` and `--ca` of `flexio get` and `flexio put`: how an `https://`
//! server is trusted (see `flexio_net::tls`); with neither, the system's
//! trust store, as curl and wget trust it.

use std::path::PathBuf;

use clap::Args;
use flexio_net::tls::{client::TlsClient, parse_pin, Trust};

use crate::error::{Error, Result};

/// How to trust an `https://` server.
#[derive(Args)]
pub struct TlsArgs {
    /// Trust only the certificate with this SHA-256 fingerprint (as
    /// `flexio serve --tls…` prints it; colons optional).
    #[arg(long, value_name = "SHA256", conflicts_with = "ca")]
    pin: Option<String>,
    /// Trust certificates issued by the CA certificates in this PEM file,
    /// and the certificates in it themselves (a self-signed one, as
    /// `curl --cacert`), each for its names and dates.
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
}

impl TlsArgs {
    /// How the `https://` servers among `urls` are trusted: the pin, the
    /// CA file, or the system's store.
    ///
    /// # Errors
    /// A bad pin, or `--pin`/`--ca` given with no `https://` URL.
    pub fn client<'u>(&self, mut urls: impl Iterator<Item = &'u str>) -> Result<TlsClient> {
        let secure = urls.any(|url| url.starts_with("https://"));
        if (self.pin.is_some() || self.ca.is_some()) && !secure {
            return Err(Error::Usage("--pin and --ca are for https:// URLs".into()));
        }
        let trust = match (&self.pin, &self.ca) {
            (Some(pin), _) => Trust::Pin(parse_pin(pin).map_err(|e| Error::Usage(e.to_string()))?),
            (None, Some(ca)) => Trust::Ca(ca.clone()),
            (None, None) => Trust::System,
        };
        // A trust that cannot be loaded is an error before any connection.
        match secure {
            true => Ok(TlsClient::ready(trust)?),
            false => Ok(TlsClient::new(trust)),
        }
    }
}
