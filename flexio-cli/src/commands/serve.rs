//! `flexio serve DIR`: serve a directory read-only over HTTP/1.1 (see
//! `flexio_net::server`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::Args;
use flexio::pace::{Rate, Schedule};
use flexio::MechanismName;
use flexio_net::server::{ServeConfig, Server};

use crate::error::{Error, Result};
use crate::output::print_stdout;
use crate::token::read_token;
use crate::values;

/// Arguments of `flexio serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// The directory to serve; nothing outside it is reachable.
    dir: PathBuf,
    /// Address and port to listen on (port 0 picks a free one); a port
    /// alone (`--listen 8080`) is loopback's. Loopback unless --public.
    #[arg(long, default_value = "127.0.0.1:0", value_parser = values::listen_address)]
    listen: SocketAddr,
    /// Serve read-only: PUT is answered 405 even with --token-file.
    #[arg(long)]
    read_only: bool,
    /// Take PUT uploads authorised by this file's token (first line, at
    /// least 16 characters): as `Authorization: Bearer` from loopback or
    /// over TLS, as a request signed with it (`flexio put` signs) from any
    /// other peer, so the token never crosses a plain link.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Allow a non-loopback address: anyone who reaches it may read;
    /// uploads still need --token-file.
    #[arg(long)]
    public: bool,
    /// Worker threads, each with its own epoll set and the connections
    /// it accepted, driven without blocking [default: two per CPU].
    #[arg(long, value_name = "N", value_parser = values::count(values::MAX_WORKERS))]
    workers: Option<usize>,
    /// Let the workers float on every CPU. By default a worker whose
    /// clients' packets nearly all arrive on one CPU runs on that CPU
    /// only, so a request and its answer cross no CPUs.
    #[arg(long)]
    no_follow_clients: bool,
    /// Connections held at once; more get 503.
    #[arg(long, default_value_t = 1024, value_parser = values::count(values::MAX_CONNECTIONS))]
    max_connections: usize,
    /// Threads for work no worker may wait on: hashing files for
    /// manifests, walking trees for ?tar, listing large directories,
    /// ranged uploads' journals.
    #[arg(long, default_value_t = 4, value_parser = values::count(values::MAX_WORKERS))]
    offload_threads: usize,
    /// Of the offload threads, how many may hash at once [default: half
    /// the CPUs], so that the workers always find a CPU free.
    #[arg(long, value_name = "N", value_parser = values::count(values::MAX_WORKERS))]
    hash_threads: Option<usize>,
    /// Serve file bodies through a block cache of this size over O_DIRECT
    /// (copied from its blocks and written, not sent with --via), so a
    /// client scanning a large file does not evict what others read often.
    #[arg(long, value_name = "SIZE", value_parser = values::size)]
    cache: Option<u64>,
    /// The cache's eviction policy: adaptive (S3-FIFO tuning its small
    /// queue as it runs), lru, clock, sieve, s3-fifo, arc.
    #[arg(long, value_name = "P", requires = "cache", default_value_t = flexio_cache::policy::PolicyName::DEFAULT)]
    cache_policy: flexio_cache::policy::PolicyName,
    /// Time a request head may take to arrive (slow clients are cut off).
    #[arg(long, value_parser = values::duration, default_value = "10s")]
    head_timeout: Duration,
    /// Time a kept-alive connection may sit idle.
    #[arg(long, value_parser = values::duration, default_value = "15s")]
    idle_timeout: Duration,
    /// The file→socket mechanism for bodies: auto (sendfile), sendfile,
    /// splice, read-write, mmap or direct (the others are refused: they
    /// would wait for the socket inside a worker).
    #[arg(long, default_value = "auto")]
    via: MechanismName,
    /// The most bytes per second one connection is sent (10M, 1G,
    /// 100Mbit/s); a connection over it waits in its worker's timer
    /// wheel, holding no thread. A client with several connections
    /// (`get --streams 4`) gets it on each.
    #[arg(long, value_name = "RATE", value_parser = values::rate)]
    rate_per_connection: Option<Rate>,
    /// The old name of --rate-per-connection, which it is: it limits each
    /// connection, not each client address.
    #[arg(long, value_name = "RATE", value_parser = values::rate, hide = true, conflicts_with = "rate_per_connection")]
    rate_per_client: Option<Rate>,
    /// The most bytes per second all connections together are sent.
    #[arg(long, value_name = "RATE", value_parser = values::rate)]
    rate_total: Option<Rate>,
    /// Cue's schedule for every response body: K chunks of --chunk bytes
    /// (64KiB without it), each one call of --via at most, then a pause
    /// of T ms (`4,16`; T may carry a unit: `2.5ms`, `1s`). Each connection
    /// keeps its own count and waits in its worker's timer wheel, holding
    /// no thread; on exit a line says what the schedules did.
    #[arg(long, value_name = "K,T", value_parser = values::schedule)]
    schedule: Option<Schedule>,
    /// The most body bytes one connection is sent (or an upload read) per
    /// wake-up before its worker goes on with others (as nginx's
    /// sendfile_max_chunk).
    #[arg(long, value_name = "BYTES", value_parser = values::max_chunk, default_value = "1M")]
    max_chunk: u64,
    /// Bytes per read/write or per mapped window of that mechanism (the
    /// OS project's buffer and map size) [default: the mechanism's own].
    #[arg(long, value_parser = values::chunk)]
    chunk: Option<usize>,
    /// Serve HTTPS with this certificate chain and private key (two PEM
    /// files). Bodies then go through rustls: one user-space copy.
    #[arg(
        long,
        value_name = "CERT,KEY",
        value_delimiter = ',',
        num_args = 1,
        conflicts_with = "tls_self_signed"
    )]
    tls: Vec<PathBuf>,
    /// Follow symbolic links in a requested path when each resolves
    /// beneath DIR (openat2 RESOLVE_BENEATH: a link out of DIR, absolute
    /// or through .., is still refused). Off by default: a link is
    /// answered 403, and ?tar and manifests list links as links.
    #[arg(long)]
    follow_symlinks: bool,
    /// On SIGTERM or SIGINT: stop accepting and give the answers in
    /// flight this long to finish (an upload not whole is never linked
    /// in), then exit 0; a second signal exits at once.
    #[arg(long, value_parser = values::duration, default_value = "5s")]
    grace: Duration,
    /// Append a line per response to FILE (`-` for standard output):
    /// nginx's combined format, then the mechanism that sent the body and
    /// the bytes it sent. Written by a thread of its own: a slow disk
    /// never holds a worker.
    #[arg(long, value_name = "FILE|-")]
    access_log: Option<PathBuf>,
    /// Serve HTTPS with a new self-signed certificate; its SHA-256
    /// fingerprint is printed once, for `flexio get --pin`.
    #[arg(long)]
    tls_self_signed: bool,
}

/// Runs `flexio serve` until SIGTERM or SIGINT, then stops gracefully.
pub fn run(args: ServeArgs) -> Result<()> {
    let mut config = ServeConfig::new(args.dir.clone());
    config.listen = args.listen;
    config.public = args.public;
    if let Some(workers) = args.workers {
        config.workers = workers.max(1);
    }
    config.follow_clients = !args.no_follow_clients;
    config.max_connections = args.max_connections.max(1);
    config.offload_threads = args.offload_threads.max(1);
    if let Some(threads) = args.hash_threads {
        config.hash_threads = threads.max(1);
    }
    config.cache = args
        .cache
        .map(|bytes| flexio_cache::CacheConfig::new(bytes).policy(args.cache_policy));
    config.head_timeout = args.head_timeout;
    config.idle_timeout = args.idle_timeout;
    config.mechanism = args.via;
    if args.rate_per_client.is_some() {
        eprintln!(
            "flexio serve: --rate-per-client is deprecated: it limits each connection, not each client (a client with 4 streams gets 4 times the rate); use --rate-per-connection"
        );
    }
    config.rate_per_connection = args.rate_per_connection.or(args.rate_per_client);
    config.rate_total = args.rate_total;
    config.schedule = args.schedule;
    config.max_chunk = args.max_chunk;
    config.chunk = args.chunk;
    config.grace = args.grace;
    config.follow_symlinks = args.follow_symlinks;
    config.access_log = args.access_log.clone();
    if !matches!(args.tls.len(), 0 | 2) {
        return Err(Error::Usage("--tls takes two PEM files: CERT,KEY".into()));
    }
    if let [cert, key] = args.tls.as_slice() {
        config.tls = Some(flexio_net::tls::TlsIdentity::from_pem_files(cert, key)?);
    } else if args.tls_self_signed {
        let names = vec![args.listen.ip().to_string(), "localhost".to_string()];
        config.tls = Some(flexio_net::tls::TlsIdentity::self_signed(&names)?);
    }
    let tls_note = config.tls.as_ref().map(|identity| {
        format!(
            "TLS certificate SHA-256 {} (flexio get --pin {}); over TLS bodies go through rustls, one user-space copy, not sendfile; {}\n",
            identity.fingerprint,
            identity.fingerprint,
            flexio_net::tls::kernel_tls_note()
        )
    });
    if let (Some(path), false) = (&args.token_file, args.read_only) {
        config.token = Some(read_token(path)?);
    }
    let mode = match config.token {
        Some(_) if config.tls.is_none() && !config.listen.ip().is_loopback() => {
            "uploads signed with the token (flexio put); a bearer token only from loopback"
        }
        Some(_) => "uploads with the token",
        None => "read-only",
    };
    let server = Server::bind(config)?;
    let bodies = match server.cache() {
        Some(cache) => format!(
            "; file bodies through a {} KiB {} block cache over O_DIRECT, copied from its blocks instead of {}",
            (cache.capacity_blocks() * cache.block_size()) >> 10,
            cache.policy(),
            match args.via {
                MechanismName::Auto => "sendfile".to_string(),
                other => other.to_string(),
            }
        ),
        None => String::new(),
    };
    print_stdout(&format!(
        "serving {} on {}://{}/ ({mode}{bodies})\n{}",
        args.dir.display(),
        if tls_note.is_some() { "https" } else { "http" },
        server.local_addr(),
        tls_note.unwrap_or_default()
    ));
    // A second signal while stopping exits at once.
    let stop = crate::signals::stop_on_signals();
    let handle = server.spawn()?;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    handle.shutdown();
    let tally = handle.wait_with_tally();
    if let Some(schedule) = args.schedule {
        eprintln!(
            "flexio serve: schedule {},{}ms: {} bodies, {} chunks, {} pauses, {:.3} s paused",
            schedule.chunks,
            schedule.pause.as_secs_f64() * 1e3,
            tally.bodies,
            tally.chunks,
            tally.pauses,
            tally.paused.as_secs_f64()
        );
    }
    Ok(())
}
