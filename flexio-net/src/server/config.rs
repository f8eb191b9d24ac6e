//! How a server runs: [`ServeConfig`] and its defaults.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use flexio::pace::{Rate, Schedule};
use flexio::MechanismName;

/// How a server runs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// The directory served; nothing outside it is ever opened.
    pub root: PathBuf,
    /// Where to listen (port 0 picks one).
    pub listen: SocketAddr,
    /// Allow an address other than loopback (read-only serving only).
    pub public: bool,
    /// Worker threads, each owning the connections it accepted, with its
    /// own epoll set, for their whole life. [`default_workers`] unless
    /// set.
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
    /// read-only. As `Authorization: Bearer` from loopback peers or over
    /// TLS, or as a signed request from any
    /// peer ([`crate::signing`]): a bearer token is never taken from a
    /// plain link.
    pub token: Option<String>,
    /// The most bytes per second one connection is sent.
    pub rate_per_connection: Option<Rate>,
    /// The most bytes per second all connections together are sent.
    pub rate_total: Option<Rate>,
    /// Cue's schedule for every response body: `chunks` chunks of
    /// [`ServeConfig::chunk`] bytes (64 KiB without one), each in one
    /// call of the mechanism at most, then a pause of `pause` — each
    /// connection on its own, waiting in its worker's timer wheel.
    pub schedule: Option<Schedule>,
    /// The most body bytes a connection is sent (or an upload read) per
    /// wake-up before its worker goes on with its other connections
    /// (nginx's `sendfile_max_chunk`).
    pub max_chunk: u64,
    /// How long answers in flight may take to finish once the server is
    /// asked to stop (`ServerHandle::shutdown`); past it, what is
    /// left is cut (an upload not finished is never linked in).
    pub grace: Duration,
    /// Serve TLS on `listen` with this identity ([`crate::tls`]): each
    /// connection is a rustls session its worker drives like a plain one.
    pub tls: Option<crate::tls::TlsIdentity>,
    /// Follow symbolic links in a GET or HEAD target, as long as each
    /// resolves beneath the root (never out of it). Off by default: a
    /// link is answered 403, as `?tar` and manifests list it as a link.
    pub follow_symlinks: bool,
    /// Append a line per response to this file (`-` for standard output)
    /// in nginx's combined format plus the body's mechanism and the bytes
    /// it sent ([`super::access_log`]).
    pub access_log: Option<PathBuf>,
    /// Threads of the offload pool, which hashes files for manifests,
    /// walks trees for `?tar`, lists large directories and keeps ranged
    /// uploads' journals, so that no worker waits on them.
    pub offload_threads: usize,
    /// Tasks the offload pool holds waiting; past it a request that needs
    /// the pool is answered 503.
    pub offload_queue: usize,
    /// Of the offload threads, how many may hash at once (manifests): the
    /// rest stay for work that waits on a disk, and the CPUs left free
    /// for the workers. [`default_hash_threads`] unless set.
    pub hash_threads: usize,
    /// Pin a worker to the CPU its clients' packets arrive on, when
    /// nearly all of them arrive on one ([`super::affinity`]); off, the
    /// workers float on every CPU.
    pub follow_clients: bool,
}

/// The default [`ServeConfig::workers`]: two per CPU this process may
/// run on. On a 2-CPU machine one per CPU (nginx's `worker_processes
/// auto`) served sendfile bodies to 64 clients at half the rate, and
/// eight made the clients of bulk TLS bodies pay a third more CPU per
/// response; docs/net.md, "How many workers", has the figures.
///
/// # Examples
/// ```
/// assert!(flexio_net::server::default_workers() >= 2);
/// ```
pub fn default_workers() -> usize {
    2 * std::thread::available_parallelism().map_or(1, |cpus| cpus.get())
}

/// The default [`ServeConfig::hash_threads`]: half the CPUs this process
/// may run on, at least one. With every CPU hashing, a worker woken by a
/// request waits for the scheduler's next tick (docs/net.md, "Hashing
/// beside small requests").
///
/// # Examples
/// ```
/// assert!(flexio_net::server::default_hash_threads() >= 1);
/// ```
pub fn default_hash_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |cpus| (cpus.get() / 2).max(1))
}

/// The default [`ServeConfig::max_chunk`]. Measured with
/// `flexio-net/scripts/serve-max-chunk.sh` (2 workers, 4 clients fetching 512 MiB,
/// a fifth fetching 4 KiB 30 times; noisy 2-core VM): with 1 GiB turns (a
/// worker keeps a body to its end, as before turns) the first 4 KiB
/// request waited 1.0–1.3 s; with 1 MiB, at most 27–38 ms (p50 8 ms) for
/// 0–15% less total throughput; 256 KiB was no better, 4 MiB worse.
/// nginx's `sendfile_max_chunk` is 2 MiB.
pub const DEFAULT_MAX_CHUNK: u64 = 1 << 20;

/// The default [`ServeConfig::grace`].
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

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
            workers: default_workers(),
            max_connections: 1024,
            cache: None,
            head_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(15),
            send_timeout: Duration::from_secs(30),
            mechanism: MechanismName::Auto,
            chunk: None,
            token: None,
            rate_per_connection: None,
            rate_total: None,
            schedule: None,
            max_chunk: DEFAULT_MAX_CHUNK,
            tls: None,
            grace: DEFAULT_GRACE,
            follow_symlinks: false,
            access_log: None,
            offload_threads: 4,
            offload_queue: 256,
            hash_threads: default_hash_threads(),
            follow_clients: true,
        }
    }
}
