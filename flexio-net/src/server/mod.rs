//! `flexio serve`: a static file server, read-only unless given a token.
//!
//! N workers ([`worker`]), each with its own epoll set and the
//! connections it accepted for their whole life: a connection is a state
//! machine ([`connection`]) driven without blocking — a request head read,
//! a handler's answer ([`respond`]: a head and a body description, never
//! a write to the socket), the body sent with sendfile until the socket is
//! full, a share (`--max-chunk`) per wake-up, an upload's body read the
//! same way — with its deadlines and paced sends in the worker's timer
//! wheel ([`timers`]). So idle and slow clients cost a table entry, not a
//! thread, a client that does not read holds nothing but its own
//! connection, and the number of threads never grows.
//!
//! What may block for long — hashing files for manifests, walking a tree
//! for `?tar`, listing a large directory, a ranged upload's journal — runs
//! on the offload pool ([`offload`]) while the connection waits holding
//! no thread; its answer comes back through the worker's wake eventfd.
//!
//! With [`ServeConfig::tls`] each connection's bytes go through a rustls
//! session the same state machine drives ([`wire`]): the handshake is
//! read with the first head, bodies are read into a buffer and written
//! into the session instead of sendfile.
//!
//! With [`ServeConfig::cache`], file bodies are read through one
//! [`flexio_cache::FileCache`] over `O_DIRECT` instead ([`cached_body`]):
//! copied from its blocks and sent, so a client scanning a large file
//! does not evict what others read often.
//!
//! [`Server::spawn`] returns a [`ServerHandle`]: asked to stop, the
//! workers stop accepting, close the connections waiting for a request,
//! let the answers in flight finish within [`ServeConfig::grace`] and
//! drop what is left (an upload not whole is never linked in).

mod access_log;
mod affinity;
mod body;
mod cached_body;
mod chunked;
mod config;
mod connection;
mod directory;
mod exchange;
mod files;
mod growing;
mod growing_answer;
mod hash_cache;
mod intake;
mod offload;
mod preconditions;
mod request;
mod respond;
mod schedule;
mod shared;
mod spread;
mod staged;
mod timers;
mod trace;
mod upload;
mod upload_locks;
mod upload_meta;
mod upload_ranges;
mod validators;
mod wire;
mod worker;

use std::net::{SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use flexio::MechanismName;

pub use config::{
    default_hash_threads, default_workers, ServeConfig, DEFAULT_GRACE, DEFAULT_MAX_CHUNK,
};
pub use growing::GrowingFile;
pub use schedule::ScheduleTally;
pub use upload_ranges::MAX_PARTIAL_UPLOADS;

use crate::error::{Error, Result};
use shared::Shared;

/// A bound server, not yet answering.
pub struct Server {
    listener: Arc<TcpListener>,
    shared: Arc<Shared>,
    access_log: Option<access_log::LogFile>,
}

/// A running server: stops it and waits for it.
pub struct ServerHandle {
    address: SocketAddr,
    shared: Arc<Shared>,
    wakes: Vec<Arc<OwnedFd>>,
    workers: Vec<JoinHandle<()>>,
    /// The access log's writer, done once the workers are.
    logger: Option<JoinHandle<()>>,
}

impl Server {
    /// Opens `config.root` and binds `config.listen`.
    ///
    /// # Errors
    /// [`Error::Usage`] for a root that is not a directory or a
    /// non-loopback address without `public`; [`Error::Move`] ([`flexio::Error::Io`]) when binding
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
        check(&config)?;
        let root = open_root(&config)?;
        let listener = TcpListener::bind(config.listen)
            .map_err(|e| Error::io("bind", config.listen.to_string(), None, e))?;
        Server::on(config, root, listener, None)
    }

    /// A server on `listener` (bound already, its address given out)
    /// that answers every request from `file`, a file still arriving
    /// (a chain link, the client's `Relay`): `GET` and `HEAD` of its
    /// name, waiting for the bytes not there yet; nothing beneath
    /// `config.root` is ever opened. `config.listen` is not bound.
    ///
    /// # Errors
    /// As [`Server::bind`].
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let file = tempfile::tempfile().unwrap();
    /// let growing = flexio_net::server::GrowingFile::new(
    ///     b"f", 0, 1 << 20, b"{}".to_vec(), std::os::fd::AsFd::as_fd(&file), "f".into(),
    /// ).unwrap();
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let config = flexio_net::server::ServeConfig::new(dir.path().into());
    /// let server = flexio_net::server::Server::growing(config, listener, growing).unwrap();
    /// server.spawn().unwrap().abort();
    /// ```
    pub fn growing(
        mut config: ServeConfig,
        listener: TcpListener,
        file: Arc<GrowingFile>,
    ) -> Result<Server> {
        if let Ok(address) = listener.local_addr() {
            config.listen = address;
        }
        check(&config)?;
        let root = open_root(&config)?;
        Server::on(config, root, listener, Some(file))
    }

    /// A server on `listener` (bound), serving `root` (opened) or the
    /// `growing` file.
    fn on(
        config: ServeConfig,
        root: OwnedFd,
        listener: TcpListener,
        growing: Option<Arc<GrowingFile>>,
    ) -> Result<Server> {
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("fcntl(O_NONBLOCK)", config.listen.to_string(), None, e))?;
        let cache = match &config.cache {
            Some(cache) => Some(Arc::new(
                flexio_cache::FileCache::new(cache.clone())
                    .map_err(|e| Error::Usage(format!("--cache: {e}")))?,
            )),
            None => None,
        };
        let total_rate = config
            .rate_total
            .map(|rate| Arc::new(shared::rate_bucket(rate, config.max_chunk, Instant::now())));
        let access_log = match &config.access_log {
            Some(path) => Some(
                access_log::LogFile::open(path)
                    .map_err(|e| Error::io("open", path.display().to_string(), None, e))?,
            ),
            None => None,
        };
        Ok(Server {
            access_log,
            listener: Arc::new(listener),
            shared: Arc::new({
                let mut shared = Shared::new(config, root, cache, total_rate);
                shared.growing = growing;
                shared
            }),
        })
    }

    /// The address bound (with the port picked when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or(self.shared.config.listen)
    }

    /// The block cache file bodies go through, when the configuration has
    /// one: its [`stats`](flexio_cache::FileCache::stats) show what it
    /// served.
    pub fn cache(&self) -> Option<Arc<flexio_cache::FileCache>> {
        self.shared.cache.clone()
    }

    /// Answers requests until the server is stopped — which only a
    /// [`ServerHandle`] can do: this is [`Server::spawn`] and
    /// [`ServerHandle::wait`].
    ///
    /// # Errors
    /// As [`Server::spawn`].
    pub fn run(self) -> Result<()> {
        self.spawn()?.wait();
        Ok(())
    }

    /// Starts the workers and returns at once.
    ///
    /// # Errors
    /// [`Error::Move`] ([`flexio::Error::Io`]) when a worker's epoll set, eventfd or thread cannot
    /// be made.
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let config = flexio_net::server::ServeConfig::new(dir.path().into());
    /// let handle = flexio_net::server::Server::bind(config).unwrap().spawn().unwrap();
    /// std::net::TcpStream::connect(handle.local_addr()).unwrap();
    /// handle.shutdown();
    /// handle.wait();
    /// ```
    pub fn spawn(mut self) -> Result<ServerHandle> {
        let address = self.local_addr();
        let (log, logger) = match self.access_log.take() {
            Some(file) => {
                let (sender, thread) = file
                    .start()
                    .map_err(|e| Error::io("spawn", "access log thread", None, e))?;
                (Some(sender), Some(thread))
            }
            None => (None, None),
        };
        let mut handle = ServerHandle {
            address,
            shared: Arc::clone(&self.shared),
            wakes: Vec::new(),
            workers: Vec::new(),
            logger,
        };
        for index in 0..self.shared.config.offload_threads.max(1) {
            let pool = Arc::clone(&self.shared.offload);
            let shared = Arc::downgrade(&self.shared);
            pool.thread_starts();
            let spawned = std::thread::Builder::new()
                .name(format!("serve-offload-{index}"))
                .spawn(move || offload::serve(pool, shared));
            if let Err(error) = spawned {
                self.shared.offload.thread_ended();
                return Err(Error::io("spawn", "offload thread", None, error));
            }
        }
        let mut wakes = Vec::new();
        for _ in 0..self.shared.config.workers.max(1) {
            let wake = rustix::event::eventfd(
                0,
                rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
            )
            .map_err(|e| Error::io("eventfd", address.to_string(), None, e))?;
            wakes.push(Arc::new(wake));
        }
        // Set once, before any worker runs.
        self.shared.spread.set_wakes(wakes.clone());
        for (index, wake) in wakes.into_iter().enumerate() {
            let worker = worker::Worker::new(
                index,
                Arc::clone(&self.shared),
                Arc::clone(&self.listener),
                Arc::clone(&wake),
                log.clone(),
            )
            .map_err(|e| Error::io("epoll_create", address.to_string(), None, e))?
            .traced(trace::Trace::from_env(index));
            handle.wakes.push(wake);
            let thread = std::thread::Builder::new()
                .name(format!("serve-worker-{index}"))
                .spawn(move || worker.run())
                .map_err(|e| Error::io("spawn", "worker thread", None, e))?;
            handle.workers.push(thread);
        }
        Ok(handle)
    }
}

/// How long [`ServerHandle::wait`] waits for the offload pool's threads
/// to end once the workers have (a thread stuck on a hung disk is left).
const OFFLOAD_END_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The served directory, opened to resolve every name beneath it.
fn open_root(config: &ServeConfig) -> Result<OwnedFd> {
    rustix::fs::open(
        &config.root,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| Error::io("open", config.root.display().to_string(), None, e))
}

/// Refuses a configuration the server cannot honour.
fn check(config: &ServeConfig) -> Result<()> {
    if !config.listen.ip().is_loopback() && !config.public {
        return Err(Error::Usage(format!(
            "{} is not a loopback address: serving beyond this machine needs --public (anyone who reaches it may read; uploads still need a token)",
            config.listen
        )));
    }
    check_mechanism(config.mechanism)?;
    if config.token.as_ref().is_some_and(|t| t.len() < 16) {
        return Err(Error::Usage(
            "the token must be at least 16 characters".into(),
        ));
    }
    if config.cache.is_some()
        && (config.rate_per_connection.is_some() || config.rate_total.is_some())
    {
        // Paced bodies are charged per share sent, which the cache's reads
        // ahead of the socket do not follow: refuse rather than serve
        // faster than asked.
        return Err(Error::Usage(
            "--cache cannot be combined with --rate-per-connection or --rate-total yet".into(),
        ));
    }
    Ok(())
}

/// The mechanisms [`ServeConfig::mechanism`] may name besides `auto`
/// (sendfile): each stops at a full socket and waits for `EPOLLOUT` with
/// its worker's other connections. [`Server::bind`] refuses the others.
///
/// # Examples
/// ```
/// use flexio::MechanismName;
/// assert!(flexio_net::server::BODY_MECHANISMS.contains(&MechanismName::Mmap));
/// assert!(!flexio_net::server::BODY_MECHANISMS.contains(&MechanismName::SendZc));
/// ```
pub const BODY_MECHANISMS: [MechanismName; 5] = [
    MechanismName::ReadWrite,
    MechanismName::Mmap,
    MechanismName::Sendfile,
    MechanismName::Splice,
    MechanismName::Direct,
];

/// Refuses a body mechanism a worker cannot drive without blocking (see
/// `docs/net.md`).
fn check_mechanism(mechanism: MechanismName) -> Result<()> {
    if mechanism == MechanismName::Auto || BODY_MECHANISMS.contains(&mechanism) {
        return Ok(());
    }
    let why = match mechanism {
        MechanismName::CopyFileRange => {
            "copy_file_range(2) copies between files; it cannot write to a socket"
        }
        MechanismName::IoUring => {
            "its sends complete in the mechanism's own ring, which the worker would wait on while the socket is full (one client that does not read would hold every connection of its worker)"
        }
        MechanismName::SendZc => {
            "a zero-copy send holds its pages until the kernel's notification, which the worker would wait on while the socket is full (one client that does not read would hold every connection of its worker)"
        }
        _ => "it is not one serve knows how to drive without blocking",
    };
    Err(Error::Usage(format!(
        "serve cannot send bodies with --via {mechanism}: {why}; use sendfile (the default), splice, read-write, mmap or direct"
    )))
}

impl ServerHandle {
    /// The address the server answers on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The connections each worker holds now, in worker order: how
    /// evenly the workers share the clients.
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut config = flexio_net::server::ServeConfig::new(dir.path().into());
    /// config.workers = 2;
    /// let handle = flexio_net::server::Server::bind(config).unwrap().spawn().unwrap();
    /// assert_eq!(handle.connections_by_worker(), [0, 0]);
    /// handle.abort();
    /// handle.wait();
    /// ```
    pub fn connections_by_worker(&self) -> Vec<usize> {
        self.shared.spread.held()
    }

    /// What [`ServeConfig::schedule`] did so far, over all connections:
    /// bodies, chunks, pauses and the time paused.
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut config = flexio_net::server::ServeConfig::new(dir.path().into());
    /// config.schedule = Some("4,16".parse().unwrap());
    /// let handle = flexio_net::server::Server::bind(config).unwrap().spawn().unwrap();
    /// assert_eq!(handle.schedule_tally().pauses, 0);
    /// handle.abort();
    /// handle.wait();
    /// ```
    pub fn schedule_tally(&self) -> ScheduleTally {
        self.shared.scheduled.tally()
    }

    /// As [`Self::wait`], then what the schedules did over the server's
    /// whole life.
    ///
    /// # Examples
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut config = flexio_net::server::ServeConfig::new(dir.path().into());
    /// config.schedule = Some("1,16".parse().unwrap());
    /// let handle = flexio_net::server::Server::bind(config).unwrap().spawn().unwrap();
    /// handle.shutdown();
    /// assert_eq!(handle.wait_with_tally().bodies, 0);
    /// ```
    pub fn wait_with_tally(self) -> ScheduleTally {
        let shared = Arc::clone(&self.shared);
        self.wait();
        shared.scheduled.tally()
    }

    /// Stops the server gracefully: no new connection is taken, those
    /// waiting for a request are closed, answers in flight get
    /// [`ServeConfig::grace`] to finish. Returns at once; [`Self::wait`]
    /// waits for the end. Asking again does not extend the grace.
    pub fn shutdown(&self) {
        self.stop_by(crate::deadline::after(
            Instant::now(),
            self.shared.config.grace,
        ));
    }

    /// Stops the server now: what is in flight is cut (an upload not
    /// whole is not linked in).
    pub fn abort(&self) {
        self.stop_by(Instant::now());
    }

    fn stop_by(&self, at: Instant) {
        {
            let mut stop = self.shared.stop.lock().unwrap_or_else(|p| p.into_inner());
            *stop = Some(stop.map_or(at, |earlier| earlier.min(at)));
        }
        self.shared
            .stopping
            .store(true, std::sync::atomic::Ordering::Release);
        for wake in &self.wakes {
            let _ = rustix::io::write(&**wake, &1u64.to_ne_bytes());
        }
    }

    /// Waits for every worker to end (after [`Self::shutdown`] or
    /// [`Self::abort`]; forever otherwise).
    pub fn wait(self) {
        for worker in self.workers {
            let _ = worker.join();
        }
        if let Some(logger) = self.logger {
            let _ = logger.join();
        }
        // The connections are gone, so is whatever they asked of the pool:
        // its threads end at their next check.
        self.shared.offload.close();
        self.shared
            .offload
            .wait_ended(Instant::now() + OFFLOAD_END_WAIT);
    }
}
