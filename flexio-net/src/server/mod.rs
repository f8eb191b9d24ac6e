//! `flexio serve`: a read-only static file server.
//!
//! One event-loop thread ([`event_loop`]) accepts connections into an
//! epoll set and enforces the deadlines; a fixed pool of workers
//! ([`worker`]) waits on that set, reads request heads without blocking
//! and answers whole requests — file bodies with sendfile through a
//! [`flexio::range::Mover`] each worker keeps, a body longer than one turn
//! through a second pool of body workers at a lower CPU priority — and
//! parks a kept-alive connection in the set again. So idle and slow
//! clients cost a table entry, not a thread, and the number of threads
//! never grows.
//!
//! With [`ServeConfig::cache`], file bodies are read through one
//! [`flexio_cache::FileCache`] over `O_DIRECT` instead ([`cached_body`]):
//! copied from its blocks and written to the socket, so a client scanning
//! a large file does not evict what others read often.

mod body;
mod cached_body;
mod directory;
mod event_loop;
mod files;
mod hash_cache;
mod request;
mod turns;
mod upload;
mod upload_ranges;
mod worker;

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flexio::pace::{Rate, TokenBucket};
use flexio::MechanismName;

use crate::error::{Error, Result};

/// How a server runs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The directory served; nothing outside it is ever opened.
    pub root: PathBuf,
    /// Where to listen (port 0 picks one).
    pub listen: SocketAddr,
    /// Allow an address other than loopback (read-only serving only).
    pub public: bool,
    /// Worker threads answering requests; as many again send the turns of
    /// long bodies, at a lower CPU priority.
    pub workers: usize,
    /// Connections held at once; past it new ones get 503.
    pub max_connections: usize,
    /// Serve file bodies through a block cache of this configuration over
    /// `O_DIRECT` (copied out of its blocks and written) instead of with
    /// the mechanism; `None` for none.
    pub cache: Option<flexio_cache::CacheConfig>,
    /// The time a request head may take to arrive, from its first byte
    /// (or from the connection's start for the first request).
    pub head_timeout: Duration,
    /// How long a kept-alive connection may sit idle between requests.
    pub idle_timeout: Duration,
    /// How long sending may make no progress before the connection is cut.
    pub send_timeout: Duration,
    /// The file→socket mechanism for bodies (`auto` is sendfile).
    pub mechanism: MechanismName,
    /// Bytes per read and write (read-write) or per mapped window (mmap)
    /// of that mechanism; `None` keeps its default. The OS project's
    /// buffer size and map size (`flexio bench --scenario host-to-host`,
    /// Fig 6).
    pub chunk: Option<usize>,
    /// The token PUTs are authorised by; without one, the server is
    /// read-only. As `Authorization: Bearer` from loopback peers (which
    /// is also how the TLS front relays), or as a signed request from any
    /// peer ([`crate::signing`]): a bearer token is never taken from a
    /// plain link.
    pub token: Option<String>,
    /// The most bytes per second one connection is sent.
    pub rate_per_client: Option<Rate>,
    /// The most bytes per second all connections together are sent.
    pub rate_total: Option<Rate>,
    /// The most body bytes a connection is sent per turn before the
    /// workers go on with others (nginx's `sendfile_max_chunk`).
    pub max_chunk: u64,
    /// Serve TLS on `listen` with this identity ([`crate::tls`]): a front
    /// terminates TLS and relays to the plain server on loopback.
    pub tls: Option<crate::tls::TlsIdentity>,
}

/// The default [`ServeConfig::max_chunk`]. Measured with
/// `flexio-net/scripts/serve-max-chunk.sh` (2 workers, 4 clients fetching 512 MiB,
/// a fifth fetching 4 KiB 30 times; noisy 2-core VM): with 1 GiB turns (a
/// worker keeps a body to its end, as before turns) the first 4 KiB
/// request waited 1.0–1.3 s; with 1 MiB, at most 27–38 ms (p50 8 ms) for
/// 0–15% less total throughput; 256 KiB was no better, 4 MiB worse.
/// nginx's `sendfile_max_chunk` is 2 MiB.
pub const DEFAULT_MAX_CHUNK: u64 = 1 << 20;

pub use upload_ranges::MAX_PARTIAL_UPLOADS;

impl ServeConfig {
    /// Serving `root` on `127.0.0.1:0` with the default limits.
    ///
    /// # Examples
    /// ```
    /// let config = flexio_net::server::ServeConfig::new("/srv".into());
    /// assert!(config.listen.ip().is_loopback());
    /// ```
    pub fn new(root: PathBuf) -> Self {
        ServeConfig {
            root,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            public: false,
            workers: 8,
            max_connections: 1024,
            cache: None,
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(15),
            send_timeout: Duration::from_secs(30),
            mechanism: MechanismName::Auto,
            chunk: None,
            token: None,
            rate_per_client: None,
            rate_total: None,
            max_chunk: DEFAULT_MAX_CHUNK,
            tls: None,
        }
    }
}

/// A bound server, not yet answering.
pub struct Server {
    listener: TcpListener,
    /// With TLS: the public listener of the TLS front (`listener` is then
    /// the plain server's, on loopback).
    front: Option<TcpListener>,
    shared: Arc<Shared>,
}

/// What the event loop and the workers share.
pub(crate) struct Shared {
    pub config: ServeConfig,
    /// The served directory, held open: every name resolves beneath it.
    pub root: OwnedFd,
    /// The connections waiting for (the rest of) a request head, armed
    /// one-shot; the request workers wait on it.
    pub epoll: OwnedFd,
    /// Connections waiting for (the rest of) a request head, by token.
    pub parked: Mutex<HashMap<u64, Connection>>,
    pub live: Arc<AtomicUsize>,
    pub next_token: AtomicU64,
    /// Chunk hashes of unchanged files, for manifests.
    pub hashes: hash_cache::HashCache,
    /// The nonces of signed uploads taken lately (no replays).
    pub nonces: crate::signing::SeenNonces,
    /// Held while a ranged upload's journal is read and rewritten.
    pub uploads: Mutex<()>,
    /// The block cache file bodies go through, with `config.cache`.
    pub cache: Option<Arc<flexio_cache::FileCache>>,
    /// The bucket of `rate_total`, shared by every connection.
    pub total_rate: Option<Arc<TokenBucket>>,
    /// Connections waiting for their rate's tokens, for the event loop.
    pub deferred: Mutex<Vec<turns::Deferred>>,
    /// Wakes the event loop when a connection is deferred.
    pub wake: OwnedFd,
}

/// A client connection and the state of its next request head.
pub(crate) struct Connection {
    pub stream: TcpStream,
    pub peer: String,
    pub token: u64,
    /// Head bytes consumed so far.
    pub head: Vec<u8>,
    /// When the connection started or last finished a response.
    pub since: Instant,
    /// When the first byte of the current head arrived.
    pub head_started: Option<Instant>,
    /// Responses sent on it.
    pub served: u64,
    /// The last response is sent and our side shut down: what the client
    /// still sends is read and dropped until it closes (or the head
    /// deadline passes), so closing never resets a connection whose
    /// response the client has not read yet.
    pub closing: bool,
    /// Its bucket for `rate_per_client`.
    pub rate: Option<Arc<TokenBucket>>,
    /// The body being sent in turns.
    pub body: Option<body::Body>,
    _live: LiveGuard,
}

/// Counts a connection while it exists.
struct LiveGuard(Arc<AtomicUsize>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Server {
    /// Opens `config.root` and binds `config.listen`.
    ///
    /// # Errors
    /// [`Error::Usage`] for a root that is not a directory or a
    /// non-loopback address without `public`; [`Error::Io`] when binding
    /// fails.
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let server = flexio_net::server::Server::bind(
    ///     flexio_net::server::ServeConfig::new(dir.path().into()),
    /// ).unwrap();
    /// assert_ne!(server.local_addr().port(), 0);
    /// ```
    pub fn bind(config: ServeConfig) -> Result<Server> {
        if !config.listen.ip().is_loopback() && !config.public {
            return Err(Error::Usage(format!(
                "{} is not a loopback address: serving beyond this machine needs --public (anyone who reaches it may read; uploads still need a token)",
                config.listen
            )));
        }
        if config.token.as_ref().is_some_and(|t| t.len() < 16) {
            return Err(Error::Usage(
                "the token must be at least 16 characters".into(),
            ));
        }
        let root = rustix::fs::open(
            &config.root,
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| Error::io("open", config.root.display().to_string(), None, e))?;
        let (front, plain_address) = match config.tls {
            Some(_) => {
                let front = TcpListener::bind(config.listen)
                    .map_err(|e| Error::io("bind", config.listen.to_string(), None, e))?;
                (Some(front), SocketAddr::from(([127, 0, 0, 1], 0)))
            }
            None => (None, config.listen),
        };
        let listener = TcpListener::bind(plain_address)
            .map_err(|e| Error::io("bind", plain_address.to_string(), None, e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("fcntl(O_NONBLOCK)", config.listen.to_string(), None, e))?;
        let epoll = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC)
            .map_err(|e| Error::io("epoll_create", config.listen.to_string(), None, e))?;
        if config.cache.is_some()
            && (config.rate_per_client.is_some() || config.rate_total.is_some())
        {
            // Paced bodies go through the mover's token buckets, which the
            // cache's copy loop does not take part in: refuse rather than
            // serve faster than asked.
            return Err(Error::Usage(
                "--cache cannot be combined with --rate-per-client or --rate-total yet".into(),
            ));
        }
        let cache = match &config.cache {
            Some(cache) => Some(Arc::new(
                flexio_cache::FileCache::new(cache.clone())
                    .map_err(|e| Error::Usage(format!("--cache: {e}")))?,
            )),
            None => None,
        };
        let wake = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )
        .map_err(|e| Error::io("eventfd", config.listen.to_string(), None, e))?;
        let total_rate = config.rate_total.map(|rate| {
            Arc::new(TokenBucket::new(
                rate,
                rate.default_burst().min(config.max_chunk.max(1)),
                Instant::now(),
            ))
        });
        Ok(Server {
            listener,
            front,
            shared: Arc::new(Shared {
                config,
                root,
                epoll,
                parked: Mutex::new(HashMap::new()),
                live: Arc::new(AtomicUsize::new(0)),
                next_token: AtomicU64::new(0),
                hashes: hash_cache::HashCache::default(),
                nonces: crate::signing::SeenNonces::default(),
                uploads: Mutex::new(()),
                cache,
                total_rate,
                deferred: Mutex::new(Vec::new()),
                wake,
            }),
        })
    }

    /// The address bound (with the port picked when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.front
            .as_ref()
            .unwrap_or(&self.listener)
            .local_addr()
            .unwrap_or(self.shared.config.listen)
    }

    /// The block cache file bodies go through, when the configuration has
    /// one: its [`stats`](flexio_cache::FileCache::stats) show what it
    /// served.
    pub fn cache(&self) -> Option<Arc<flexio_cache::FileCache>> {
        self.shared.cache.clone()
    }

    /// Answers requests until the process ends.
    ///
    /// # Errors
    /// [`Error::Io`] when the event loop itself fails (`epoll_wait`).
    pub fn run(self) -> Result<()> {
        let (turns, turn_queue) = turns::TurnQueue::new();
        let turn_queue = Arc::new(turn_queue);
        for index in 0..self.shared.config.workers.max(1) {
            let (shared, requeue) = (Arc::clone(&self.shared), turns.clone());
            std::thread::Builder::new()
                .name(format!("serve-worker-{index}"))
                .spawn(move || worker::run_requests(&shared, &requeue))
                .map_err(|e| Error::io("spawn", "worker thread", None, e))?;
            let (shared, queue, requeue) = (
                Arc::clone(&self.shared),
                Arc::clone(&turn_queue),
                turns.clone(),
            );
            std::thread::Builder::new()
                .name(format!("serve-body-{index}"))
                .spawn(move || worker::run_turns(&shared, &queue, &requeue))
                .map_err(|e| Error::io("spawn", "body worker thread", None, e))?;
        }
        if let (Some(front), Some(identity)) = (self.front, self.shared.config.tls.clone()) {
            let config = crate::tls::front::FrontConfig {
                identity,
                backend: self
                    .listener
                    .local_addr()
                    .map_err(|e| Error::io("getsockname", "the plain listener", None, e))?,
                max_connections: self.shared.config.max_connections,
                handshake_timeout: self.shared.config.head_timeout,
                idle_timeout: self.shared.config.send_timeout,
            };
            std::thread::Builder::new()
                .name("serve-tls-front".into())
                .spawn(move || crate::tls::front::run(front, config))
                .map_err(|e| Error::io("spawn", "TLS front thread", None, e))?;
        }
        event_loop::run(&self.shared, &self.listener, &turns)
    }
}

impl Shared {
    /// Wraps an accepted stream, counting it.
    pub fn connection(&self, stream: TcpStream, peer: SocketAddr) -> Connection {
        self.live.fetch_add(1, Ordering::Relaxed);
        Connection {
            stream,
            peer: format!("client {peer}"),
            token: self.next_token.fetch_add(1, Ordering::Relaxed),
            head: Vec::new(),
            since: Instant::now(),
            head_started: None,
            served: 0,
            closing: false,
            rate: self.config.rate_per_client.map(|rate| {
                Arc::new(TokenBucket::new(
                    rate,
                    rate.default_burst().min(self.config.max_chunk.max(1)),
                    Instant::now(),
                ))
            }),
            body: None,
            _live: LiveGuard(Arc::clone(&self.live)),
        }
    }

    /// Ends `connection` gracefully: shuts our side down (the client sees
    /// the end of the last response) and parks it to drain what the client
    /// still sends — a request body not read, pipelined requests — so the
    /// kernel does not answer the close with a reset that could destroy
    /// the response in flight.
    pub fn close(&self, mut connection: Connection) {
        if connection
            .stream
            .shutdown(std::net::Shutdown::Write)
            .is_err()
        {
            return;
        }
        connection.closing = true;
        connection.head = Vec::new();
        connection.since = Instant::now();
        let _ = self.park(connection);
    }

    /// Hands a connection whose tokens are not yet due to the event loop,
    /// which queues it again when they are.
    pub(crate) fn defer(&self, deferred: turns::Deferred) {
        self.deferred.lock().unwrap().push(deferred);
        let _ = rustix::io::write(&self.wake, &1u64.to_ne_bytes());
    }

    /// Puts `connection` back to wait for its next request head: into the
    /// table first, then re-armed, under the table's lock, so the event
    /// loop always finds the connection an event names.
    pub fn park(&self, connection: Connection) -> std::io::Result<()> {
        use rustix::event::epoll;
        let token = connection.token;
        let mut parked = self.parked.lock().unwrap();
        let entry = parked.entry(token).insert_entry(connection);
        let armed = epoll::modify(
            &self.epoll,
            &entry.get().stream,
            epoll::EventData::new_u64(token),
            epoll::EventFlags::IN | epoll::EventFlags::RDHUP | epoll::EventFlags::ONESHOT,
        );
        if armed.is_err() {
            entry.remove();
        }
        Ok(armed?)
    }
}
