//! What every worker reads: the configuration, the served directory held
//! open, and the few things that are one per server — the hash cache of
//! manifests, the nonces of signed uploads, the journal locks of ranged
//! uploads, the offload pool's queue, the block cache, the total rate's bucket, the count of live
//! connections and the stop order. Nothing here holds a connection: each
//! one belongs to the worker that accepted it.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use flexio::pace::{Rate, TokenBucket};

use super::config::ServeConfig;
use super::hash_cache::HashCache;

/// Shared by the workers of one server.
pub(crate) struct Shared {
    pub config: ServeConfig,
    /// The served directory, held open: every name resolves beneath it.
    pub root: OwnedFd,
    /// Connections alive, over all workers (for `max_connections`).
    pub live: Arc<AtomicUsize>,
    /// Connections past the cap being answered 503, apart: they do not
    /// keep the server full once they are gone.
    pub refusing: Arc<AtomicUsize>,
    /// Chunk hashes of unchanged files, for manifests.
    pub hashes: HashCache,
    /// The nonces of signed uploads taken lately (no replays).
    pub nonces: crate::signing::SeenNonces,
    /// Held per file while a ranged upload's journal is read and
    /// rewritten.
    pub uploads: super::upload_locks::UploadLocks,
    /// The offload pool's queue.
    pub offload: Arc<super::offload::Pool<Shared>>,
    /// The block cache file bodies go through, with `config.cache`.
    pub cache: Option<Arc<flexio_cache::FileCache>>,
    /// The bucket of `rate_total`, shared by every connection.
    pub total_rate: Option<Arc<TokenBucket>>,
    /// What the connections' schedules did (`config.schedule`).
    pub scheduled: super::schedule::ScheduleCounts,
    /// When the answers in flight must be done; set once asked to stop.
    pub stop: Mutex<Option<Instant>>,
    /// Whether `stop` is set: what every worker reads twice a loop turn,
    /// without taking the lock until the server stops.
    pub stopping: AtomicBool,
    /// The workers' connection counts, and connections handed between
    /// them.
    pub spread: super::spread::Spread,
    /// Where each worker runs, when they follow their clients' CPU.
    pub affinity: Option<super::affinity::Affinity>,
    /// Whether an accept error was logged and not yet recovered from (one
    /// line per episode, not one per worker and retry).
    pub accept_failing: AtomicBool,
    /// The one file served, still arriving (a chain link's): every
    /// request is answered from it, never from the root.
    pub growing: Option<Arc<super::growing::GrowingFile>>,
}

/// A bucket for a rate of the server's (`rate_total`, or one
/// connection's): a share of `max_chunk` at most per turn, and the credit
/// of three ticks of the timer wheel kept. A connection waiting for its
/// tokens is woken at the first tick after they are due, up to a tick
/// late (more on a busy worker): with less credit kept than that, what
/// accrued meanwhile was lost — `--rate-total 200M` with 4 clients sent
/// 160 MiB/s, the bucket keeping 5 ms of credit for waits of up to 10.
pub(crate) fn rate_bucket(rate: Rate, max_chunk: u64, now: Instant) -> TokenBucket {
    let ticks = rate.bytes_per_second() as f64 * (3 * super::timers::TICK).as_secs_f64();
    let burst = rate.default_burst().min(max_chunk.max(1)).max(ticks as u64);
    TokenBucket::new(rate, burst, now)
}

impl Shared {
    /// What the workers of a server with `config` share, serving `root`.
    pub fn new(
        config: ServeConfig,
        root: OwnedFd,
        cache: Option<Arc<flexio_cache::FileCache>>,
        total_rate: Option<Arc<TokenBucket>>,
    ) -> Shared {
        let offload = Arc::new(super::offload::Pool::new(
            config.offload_queue,
            config.hash_threads,
        ));
        let spread = super::spread::Spread::new(config.workers);
        let affinity = config.follow_clients.then(|| {
            super::affinity::Affinity::new(config.workers, super::affinity::Affinity::allowed_now())
        });
        Shared {
            config,
            root,
            live: Arc::new(AtomicUsize::new(0)),
            refusing: Arc::new(AtomicUsize::new(0)),
            hashes: HashCache::default(),
            nonces: crate::signing::SeenNonces::default(),
            uploads: super::upload_locks::UploadLocks::default(),
            offload,
            cache,
            total_rate,
            scheduled: super::schedule::ScheduleCounts::default(),
            stop: Mutex::new(None),
            stopping: AtomicBool::new(false),
            spread,
            affinity,
            accept_failing: AtomicBool::new(false),
            growing: None,
        }
    }

    /// Opens a GET or HEAD target beneath the root: symbolic links refused
    /// anywhere on the path, or, with `follow_symlinks`, followed as long as
    /// each resolves beneath the root (`RESOLVE_BENEATH`: an absolute link or
    /// one climbing out with `..` fails with `EXDEV`, whatever the tree).
    pub fn open_target(&self, path: &[u8]) -> std::io::Result<std::os::fd::OwnedFd> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let root = std::os::fd::AsFd::as_fd(&self.root);
        if !self.config.follow_symlinks {
            return crate::walk::open_beneath(root, path);
        }
        let path = if path.is_empty() { b"." as &[u8] } else { path };
        Ok(rustix::fs::openat2(
            root,
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path),
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        )?)
    }

    /// The time the server must be done by, once asked to stop.
    pub fn stop_by(&self) -> Option<Instant> {
        if !self.stopping.load(Ordering::Acquire) {
            return None;
        }
        *self.stop.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a new connection: among those served while fewer
    /// than `max` are, else among those refused (answered 503) while
    /// fewer than `most_refused` are, else none (it is closed without a
    /// word). Taken in one atomic step, so that workers adopting
    /// connections at the same moment cannot pass `max` between them.
    pub fn admit(&self, max: usize, most_refused: usize) -> Option<Admission> {
        let take = |count: &Arc<AtomicUsize>, most: usize| {
            count
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < most).then_some(n + 1)
                })
                .is_ok()
                .then(|| LiveGuard(Arc::clone(count)))
        };
        if let Some(live) = take(&self.live, max) {
            return Some(Admission {
                _count: live,
                refused: false,
            });
        }
        take(&self.refusing, most_refused).map(|live| Admission {
            _count: live,
            refused: true,
        })
    }
}

impl Drop for Shared {
    /// The server is gone: its pool's threads end.
    fn drop(&mut self) {
        self.offload.close();
    }
}

/// A connection's place among those served or those refused
/// ([`Shared::admit`]), given back when it is dropped.
pub(crate) struct Admission {
    _count: LiveGuard,
    /// Past the cap: answered 503 and closed.
    pub refused: bool,
}

/// Counts a connection while it exists.
struct LiveGuard(Arc<AtomicUsize>);

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::{Mode, OFlags};

    #[test]
    fn workers_admitting_together_never_pass_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let root = rustix::fs::open(
            dir.path(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        let shared = Shared::new(ServeConfig::new(dir.path().into()), root, None, None);
        let admitted: Vec<Admission> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        (0..5000)
                            .filter_map(|_| shared.admit(1000, 100))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|worker| worker.join().unwrap())
                .collect()
        });
        let refused = admitted.iter().filter(|a| a.refused).count();
        assert_eq!((admitted.len() - refused, refused), (1000, 100));
        assert_eq!(shared.live.load(Ordering::Relaxed), 1000);
        assert_eq!(shared.refusing.load(Ordering::Relaxed), 100);
        drop(admitted);
        assert_eq!(shared.live.load(Ordering::Relaxed), 0);
        assert_eq!(shared.refusing.load(Ordering::Relaxed), 0);
    }
}
