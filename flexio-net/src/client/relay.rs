//! `flexio get URL DEST --serve ADDR`: a link of a chain. The file is
//! fetched as a mirrored get fetches it (pieces of whole chunks, each
//! checked against the manifest), from the first upstream that answers —
//! the others, given with `--upstream`, stand by in order and take over
//! when the ones before them drop out — and, while it arrives, served
//! onward at ADDR: its `?manifest` at once (the upstream's, so the next
//! host checks against the same truth), and any range, each piece sent as
//! soon as it is written and checked here, the request waiting for the
//! pieces not yet there. So N hosts in a chain receive the file in about
//! one transfer's time, and a host whose upstream dies resumes from the
//! next one up.
//!
//! Serving onward is the [`Server`]'s: the file is a
//! [`GrowingFile`] whose pieces the fetch marks as they are checked,
//! each mark waking the responses waiting for it; so a link has the
//! server's deadlines, request framing, limits, TLS and shutdown. Here is
//! only the fetching and the glue. Once the file is whole the link goes
//! on serving until no request has been answered for `linger`.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flexio::range::NewFile;

use super::mirror::{first_manifest, piece_size, reports, servers_of, Work};
use super::sink::{check_space, destination_for};
use super::{GetOptions, MirroredReport};
use crate::error::{Error, Result};
use crate::manifest::{
    text_or_percent_encoded, Manifest, ManifestEntry, CHUNK_SIZE, MANIFEST_SCHEMA_VERSION,
};
use crate::server::{GrowingFile, ServeConfig, Server};

/// How long a downstream connection may wait for its next request head
/// (less when `--timeout` is less): an idle connection is reaped.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// The workers serving a link: a chain link has a few downstreams, and
/// idle ones cost a table entry, not a thread.
const WORKERS: usize = 2;

/// How long answers in flight get to finish once the link ends (none is
/// in flight then but one that began in the last instant).
const GRACE: Duration = Duration::from_secs(1);

/// A chain link's listening socket, bound before the fetch starts (so its
/// address can be given downstream first).
pub struct Relay {
    listener: TcpListener,
    public: bool,
    tls: Option<crate::tls::TlsIdentity>,
}

impl Relay {
    /// Binds `address` (loopback unless `public`).
    ///
    /// # Errors
    /// [`Error::Usage`] for a non-loopback address without `public`; the
    /// bind's error.
    ///
    /// # Examples
    /// ```
    /// let relay = flexio_net::client::Relay::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    /// assert!(relay.local_addr().unwrap().port() > 0);
    /// ```
    pub fn bind(address: SocketAddr, public: bool) -> Result<Relay> {
        if !address.ip().is_loopback() && !public {
            return Err(Error::Usage(format!(
                "{address}: not a loopback address; add --public to serve the file onward to other hosts"
            )));
        }
        let listener = TcpListener::bind(address)
            .map_err(|e| Error::io("bind", address.to_string(), None, e))?;
        Ok(Relay {
            listener,
            public,
            tls: None,
        })
    }

    /// Serves onward over TLS with `identity` (as `serve --tls`).
    ///
    /// # Examples
    /// ```
    /// let identity = flexio_net::tls::TlsIdentity::self_signed(&["127.0.0.1".into()]).unwrap();
    /// let relay = flexio_net::client::Relay::bind("127.0.0.1:0".parse().unwrap(), false)
    ///     .unwrap()
    ///     .with_tls(identity);
    /// assert!(relay.local_addr().is_ok());
    /// ```
    pub fn with_tls(mut self, identity: crate::tls::TlsIdentity) -> Relay {
        self.tls = Some(identity);
        self
    }

    /// The bound address.
    ///
    /// # Errors
    /// `getsockname`'s.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|e| Error::io("getsockname", "the relay's socket", None, e))
    }

    /// Fetches the file at `upstreams[0]` (or, as they drop out, at the
    /// next ones, in order) into `destination`, serving it onward as it
    /// arrives; returns once the file is whole and no downstream
    /// connection has been open for `linger`.
    ///
    /// # Errors
    /// As [`super::get_mirrored`]; nothing is left at the destination
    /// unless the whole file arrived and matched the manifest.
    ///
    /// # Examples
    /// ```no_run
    /// let relay = flexio_net::client::Relay::bind("0.0.0.0:8081".parse().unwrap(), true)?;
    /// relay.fetch_and_serve(
    ///     &["http://host1:8080/image.raw".into()],
    ///     None,
    ///     &flexio_net::client::GetOptions::default(),
    ///     std::time::Duration::from_secs(10),
    /// )?;
    /// # Ok::<(), flexio_net::Error>(())
    /// ```
    pub fn fetch_and_serve(
        &self,
        upstreams: &[String],
        destination: Option<&Path>,
        options: &GetOptions,
        linger: Duration,
    ) -> Result<MirroredReport> {
        let options = &options.with_rate_bucket();
        let started = Instant::now();
        let servers = servers_of(upstreams)?;
        let first = &servers
            .first()
            .ok_or_else(|| Error::Usage("no URL to fetch".into()))?
            .url;
        let destination = destination_for(first, destination)?;
        let label = destination.display().to_string();
        let name = served_name(&first.target)?;
        let entry = first_manifest(&servers, options)?;
        let total = entry.size;
        check_space(&destination, total)?;
        let file = NewFile::create(&destination, entry.mode & 0o777)?;
        let piece = piece_size(options);
        let growing = GrowingFile::new(
            &name,
            total,
            piece,
            manifest_of(&name, &entry),
            file.fd(),
            label.clone(),
        )?;
        let server = self.server(&destination, options, &growing)?.spawn()?;
        let arrived = |offset: u64| growing.arrived(offset);
        let work = Work {
            suffix: "",
            file: file.fd(),
            label: &label,
            total,
            piece,
            hashes: &entry.blake3,
            queue: Mutex::new((0..total).step_by(piece as usize).collect()),
            in_flight: AtomicU64::new(0),
            held: Mutex::default(),
            journal: None,
            failed: AtomicBool::new(false),
            options,
            ordered: true,
            arrived: Some(&arrived),
        };
        let fetched = work.run(&servers);
        if fetched.is_err() {
            // The responses waiting for a piece end cut, at once.
            growing.fail();
            server.abort();
        } else {
            // Serve on until downstreams are done with it.
            growing.wait_quiet(linger);
            server.shutdown();
        }
        server.wait();
        fetched.map_err(|error| Error::Stopped {
            source: Box::new(error),
            what_remains: format!("nothing was written to {label}"),
        })?;
        file.commit(total, options.fsync)?;
        Ok(MirroredReport {
            url: first.to_string(),
            destination,
            bytes: total,
            resumed_bytes: 0,
            servers: reports(&servers),
            wall_ns: started.elapsed().as_nanos() as u64,
        })
    }

    /// The server of `growing` on the bound socket: the request timeouts
    /// no longer than `--timeout`, a response waiting for a piece as long
    /// as `--timeout` (the fetch's own limit for the piece to come).
    fn server(
        &self,
        destination: &Path,
        options: &GetOptions,
        growing: &Arc<GrowingFile>,
    ) -> Result<Server> {
        let listener = self
            .listener
            .try_clone()
            .map_err(|e| Error::io("dup", "the relay's socket", None, e))?;
        // Never opened beneath: every request is answered from the file.
        let root = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => ".".into(),
        };
        let mut config = ServeConfig::new(root);
        config.public = self.public;
        config.workers = WORKERS;
        config.head_timeout = HEAD_TIMEOUT.min(options.timeout);
        config.idle_timeout = HEAD_TIMEOUT.min(options.timeout);
        config.send_timeout = options.timeout;
        config.grace = GRACE;
        config.tls = self.tls.clone();
        Server::growing(config, listener, Arc::clone(growing))
    }
}

/// The name the file is served as: the URL's last component, decoded.
fn served_name(target: &str) -> Result<Vec<u8>> {
    let path = target.split('?').next().unwrap_or_default();
    let last = path.rsplit('/').next().unwrap_or_default();
    let name = crate::names::percent_decode(last.as_bytes())
        .map_err(|_| Error::Usage(format!("{target}: a bad % escape in the file's name")))?;
    if name.is_empty() {
        return Err(Error::Usage(format!("{target}: names no file")));
    }
    Ok(name)
}

/// The `?manifest` served onward: the upstream's entry, named as served.
fn manifest_of(name: &[u8], entry: &ManifestEntry) -> Vec<u8> {
    let (path, path_percent_encoded) = text_or_percent_encoded(name);
    serde_json::to_vec(&Manifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        chunk_size: CHUNK_SIZE,
        entries: vec![ManifestEntry {
            path,
            path_percent_encoded,
            ..entry.clone()
        }],
    })
    .expect("a manifest serialises")
}
