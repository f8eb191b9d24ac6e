//! `flexio get URL --mirror URL2 --mirror URL3 DEST`: one file from
//! several servers holding it at once. The first URL's `?manifest` (a
//! flexio server) is the truth: its size and the BLAKE3 of every 1 MiB
//! chunk. The file is cut into pieces of whole chunks; every server gets
//! `streams` connections, and each connection takes the next piece nobody
//! took, so a server twice as fast takes about twice the pieces (its rate,
//! measured as it goes, is reported). Each piece is hashed as soon as it
//! is written and checked against the manifest, whichever server sent it:
//! a server that fails or sends other bytes is dropped with a message, its
//! piece goes back to the queue, and the others finish. With `--resume`,
//! whole checked pieces are noted in the journal of
//! [`super::resume::Partial`] and a rerun fetches only the rest.

use std::collections::VecDeque;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use flexio::range::{Mover, NewFile};
use serde::Serialize;

use super::connection::{Connection, Url};
use super::pieces::receive;
use super::report::MirrorReport;
use super::resume::Partial;
use super::sink::{check_space, destination_for, Sink};
use super::GetOptions;
use crate::error::{Error, Result};
use crate::manifest::{hash_chunks, ManifestEntry, CHUNK_SIZE};
use crate::ranges::parse_content_range;

/// What a mirrored get did.
#[derive(Clone, Debug, Serialize)]
pub struct MirroredReport {
    /// The first URL (whose manifest is the truth).
    pub url: String,
    /// Where the file now is.
    pub destination: std::path::PathBuf,
    /// Its length.
    pub bytes: u64,
    /// Bytes an earlier, stopped run had fetched and checked.
    pub resumed_bytes: u64,
    /// Each server, the first one first.
    pub servers: Vec<MirrorReport>,
    /// Wall time from the manifest to the commit.
    pub wall_ns: u64,
}

/// One server's share of the work, as it goes.
pub(super) struct Server {
    pub(super) url: Url,
    bytes: AtomicU64,
    pieces: AtomicU64,
    busy_ns: AtomicU64,
    dropped: Mutex<Option<String>>,
}

impl Server {
    fn is_dropped(&self) -> bool {
        self.dropped.lock().unwrap().is_some()
    }

    fn drop_with(&self, why: String) {
        let mut dropped = self.dropped.lock().unwrap();
        if dropped.is_none() {
            eprintln!(
                "flexio: dropping {}: {why}; the other servers go on",
                self.url
            );
            *dropped = Some(why);
        }
    }
}

/// Fetches the file at `urls[0]` from every server in `urls` at once
/// into `destination` (as [`super::get`] names it).
///
/// # Errors
/// [`Error::Usage`] for a bad URL or destination; [`Error::Protocol`]
/// when the first server offers no manifest of the file, or when every
/// server was dropped (each reason is in the message); I/O errors of the
/// destination. Nothing is left at the destination unless the whole file
/// arrived and matched the manifest.
///
/// # Examples
/// ```no_run
/// let report = flexio_net::client::get_mirrored(
///     &["http://10.0.0.1:8080/big.iso".into(), "http://10.0.0.2:8080/big.iso".into()],
///     None,
///     &flexio_net::client::GetOptions { streams: 2, ..Default::default() },
/// )?;
/// for server in &report.servers {
///     println!("{}: {} bytes", server.url, server.bytes);
/// }
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn get_mirrored(
    urls: &[String],
    destination: Option<&Path>,
    options: &GetOptions,
) -> Result<MirroredReport> {
    let options = &options.with_rate_bucket();
    let started = Instant::now();
    let servers = servers_of(urls)?;
    let first = servers
        .first()
        .ok_or_else(|| Error::Usage("no URL to fetch".into()))?;
    if first.url.target.contains('?') || first.url.target.ends_with('/') {
        return Err(Error::Usage(format!(
            "{}: --mirror fetches one file (no query, not a directory)",
            first.url
        )));
    }
    let destination = destination_for(&first.url, destination)?;
    let label = destination.display().to_string();
    let entry = manifest_of(&first.url, options)?;
    let (total, hashes) = (entry.size, entry.blake3);
    check_space(&destination, total)?;
    let piece = piece_size(options);
    let sink = if options.resume {
        let version = blake3::hash(hashes.join("").as_bytes()).to_hex();
        let header = format!("mirrored\t{}\t{total}\t{version}\t{piece}", first.url);
        Sink::Partial(Partial::open(&destination, &header, total, piece)?)
    } else {
        Sink::New(NewFile::create(&destination, 0o644)?)
    };
    let done = sink.done();
    let pending: VecDeque<u64> = (0..total)
        .step_by(piece as usize)
        .filter(|offset| !done.contains(offset))
        .collect();
    let resumed_bytes = total
        - pending
            .iter()
            .map(|offset| (total - offset).min(piece))
            .sum::<u64>();
    if let Some(progress) = &options.progress {
        progress.expect_file(total);
        progress.add(resumed_bytes);
    }
    let work = Work {
        suffix: "",
        file: sink.fd(),
        label: &label,
        total,
        piece,
        hashes: &hashes,
        queue: Mutex::new(pending),
        in_flight: AtomicU64::new(0),
        held: Mutex::default(),
        journal: sink.journal(),
        failed: AtomicBool::new(false),
        options,
        ordered: false,
        arrived: None,
    };
    if let Err(error) = work.run(&servers) {
        return Err(sink.fail(error, &label));
    }
    sink.commit(total, options.fsync)?;
    Ok(MirroredReport {
        url: first.url.to_string(),
        destination,
        bytes: total,
        resumed_bytes,
        servers: reports(&servers),
        wall_ns: started.elapsed().as_nanos() as u64,
    })
}

/// Whole chunks per piece, so each piece is checked on its own.
pub(super) fn piece_size(options: &GetOptions) -> u64 {
    options.piece_size.max(CHUNK_SIZE) / CHUNK_SIZE * CHUNK_SIZE
}

/// The servers at `urls`, none dropped yet.
pub(super) fn servers_of(urls: &[String]) -> Result<Vec<Server>> {
    urls.iter()
        .map(|url| {
            Ok(Server {
                url: Url::parse(url)?,
                bytes: AtomicU64::new(0),
                pieces: AtomicU64::new(0),
                busy_ns: AtomicU64::new(0),
                dropped: Mutex::new(None),
            })
        })
        .collect()
}

/// What each server did.
pub(super) fn reports(servers: &[Server]) -> Vec<MirrorReport> {
    servers
        .iter()
        .map(|s| {
            let bytes = s.bytes.load(Ordering::Relaxed);
            let busy = s.busy_ns.load(Ordering::Relaxed).max(1) as f64 / 1e9;
            MirrorReport {
                url: s.url.to_string(),
                bytes,
                pieces: s.pieces.load(Ordering::Relaxed),
                bytes_per_second: bytes as f64 / busy,
                dropped: s.dropped.lock().unwrap().clone(),
            }
        })
        .collect()
}

/// The manifest entry of the file at the first of `servers` that gives
/// one (a server that cannot is dropped with why).
pub(super) fn first_manifest(servers: &[Server], options: &GetOptions) -> Result<ManifestEntry> {
    let mut last = None;
    for server in servers {
        match manifest_of(&server.url, options) {
            Ok(entry) => return Ok(entry),
            Err(error) => {
                server.drop_with(error.to_string());
                last = Some(error);
            }
        }
    }
    Err(last.unwrap_or_else(|| Error::Usage("no URL to fetch".into())))
}

/// The manifest entry of the file at `url`, from its `?manifest`.
fn manifest_of(url: &Url, options: &GetOptions) -> Result<ManifestEntry> {
    let target = format!("{}?manifest", url.target);
    let peer = url.with_target(target.clone()).to_string();
    let mut connection = Connection::open(url, options.timeout, &options.tls)?;
    connection.send_get(&target, "")?;
    let manifest = connection.read_manifest(&peer)?.needed(&peer)?;
    match manifest.entries.as_slice() {
        [entry]
            if manifest.chunk_size == CHUNK_SIZE
                && entry.kind == "file"
                && entry.blake3.len() as u64 == entry.size.div_ceil(CHUNK_SIZE) =>
        {
            Ok(entry.clone())
        }
        _ => Err(Error::protocol(
            peer,
            "not the manifest of one file in 1 MiB chunks: --mirror needs the first URL on a flexio server",
        )),
    }
}

/// What every connection to every server shares, for one file.
pub(super) struct Work<'a> {
    /// The file's path below each server's URL (percent-encoded), or
    /// nothing when the URLs are the file's.
    pub(super) suffix: &'a str,
    pub(super) file: BorrowedFd<'a>,
    pub(super) label: &'a str,
    pub(super) total: u64,
    pub(super) piece: u64,
    pub(super) hashes: &'a [String],
    /// Pieces nobody holds, by first byte; a dropped server's piece comes
    /// back here.
    pub(super) queue: Mutex<VecDeque<u64>>,
    /// Pieces some connection holds now: while any is, an idle connection
    /// waits, since it may come back.
    pub(super) in_flight: AtomicU64,
    pub(super) journal: Option<&'a Partial>,
    /// A failure of the destination itself: everyone stops.
    pub(super) failed: AtomicBool,
    pub(super) options: &'a GetOptions,
    /// Servers in order of preference: one takes pieces only once every
    /// server before it is dropped (a chain's upstreams), instead of all
    /// at once.
    pub(super) ordered: bool,
    /// Told the first byte of each piece kept (checked), as it is.
    pub(super) arrived: Option<&'a (dyn Fn(u64) + Sync)>,
    /// The pieces in flight, each with its server and connection, so that
    /// one that lags far behind what another server would take can be cut
    /// (see [`Work::cut_laggards`]).
    pub(super) held: Mutex<Vec<Held>>,
}

/// A piece in flight.
pub(super) struct Held {
    offset: u64,
    length: u64,
    /// Its server, by index.
    server: usize,
    since: Instant,
    /// The connection it comes over (a second descriptor of its socket),
    /// to shut down when the piece is cut.
    socket: Option<std::net::TcpStream>,
}

/// How long a piece may take before it can be said to lag: below this, a
/// slow piece is a hiccup, not a pace.
const LAG_GRACE: Duration = Duration::from_millis(1000);

/// How many times the time another server would take a piece may pass
/// before the piece is cut from its server.
const LAG_FACTOR: u32 = 8;

/// The least rate worth waiting for, where no other server has shown
/// one yet (a piece taken by every server at once): a piece slower than
/// this past [`LAG_GRACE`] is cut when another server is still in.
const MIN_USEFUL_RATE: f64 = 256.0 * 1024.0;

/// How often the pieces in flight are looked at.
const LAG_CHECK: Duration = Duration::from_millis(50);

/// How one piece went.
enum Outcome {
    Kept,
    /// The server failed or lied: it is dropped, the piece goes back.
    ServerFault(String),
}

impl Work<'_> {
    /// Every server's connections fetching pieces until none is left.
    ///
    /// # Errors
    /// The destination's own failure, or [`Error::Protocol`] when every
    /// server was dropped with pieces left (each reason given).
    pub(super) fn run(&self, servers: &[Server]) -> Result<()> {
        let errors = Mutex::new(Vec::new());
        let errors_ref = &errors;
        let running = AtomicU64::new(0);
        let running_ref = &running;
        std::thread::scope(|scope| {
            for (index, server) in servers.iter().enumerate() {
                if server.is_dropped() {
                    continue;
                }
                let earlier = &servers[..index];
                for _ in 0..self.options.streams.max(1) {
                    running_ref.fetch_add(1, Ordering::AcqRel);
                    scope.spawn(move || {
                        if let Err(error) = self.serve_from(index, servers, earlier) {
                            errors_ref.lock().unwrap().push(error);
                        }
                        running_ref.fetch_sub(1, Ordering::AcqRel);
                    });
                }
            }
            scope.spawn(move || {
                while running_ref.load(Ordering::Acquire) > 0 {
                    std::thread::sleep(LAG_CHECK);
                    self.cut_laggards(servers);
                }
            });
        });
        if let Some(error) = errors.into_inner().unwrap().into_iter().next() {
            return Err(error);
        }
        let left = self.queue.lock().unwrap().len();
        if left == 0 {
            return Ok(());
        }
        let reasons: Vec<String> = servers
            .iter()
            .map(|s| {
                format!(
                    "{}: {}",
                    s.url,
                    s.dropped.lock().unwrap().clone().unwrap_or_default()
                )
            })
            .collect();
        Err(Error::protocol(
            self.label,
            format!(
                "every server was dropped with {left} pieces left ({})",
                reasons.join("; ")
            ),
        ))
    }

    /// One connection's loop on `server`: take a piece, fetch and check
    /// it, until none is left, the server is dropped or the destination
    /// failed.
    fn serve_from(&self, index: usize, servers: &[Server], earlier: &[Server]) -> Result<()> {
        let server = &servers[index];
        let mut connection: Option<Connection> = None;
        let mut mover = Mover::new();
        loop {
            if server.is_dropped() || self.failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            if self.ordered && earlier.iter().any(|s| !s.is_dropped()) {
                // A standby: in only when those before it are out.
                if self.queue.lock().unwrap().is_empty()
                    && self.in_flight.load(Ordering::Acquire) == 0
                {
                    return Ok(());
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
            let Some(offset) = self.take() else {
                return Ok(());
            };
            let started = Instant::now();
            let outcome = self.fetch((index, server), &mut connection, &mut mover, offset);
            if let Ok(Outcome::ServerFault(_)) = &outcome {
                // Back in the queue before it stops counting as held, so
                // that no connection sees neither and ends.
                self.queue.lock().unwrap().push_front(offset);
            }
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            match outcome {
                Ok(Outcome::Kept) => {
                    if let Some(arrived) = self.arrived {
                        arrived(offset);
                    }
                    let length = (self.total - offset).min(self.piece);
                    server.bytes.fetch_add(length, Ordering::Relaxed);
                    server.pieces.fetch_add(1, Ordering::Relaxed);
                    server
                        .busy_ns
                        .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
                }
                Ok(Outcome::ServerFault(why)) => {
                    server.drop_with(why);
                    return Ok(());
                }
                Err(error) => {
                    self.failed.store(true, Ordering::Relaxed);
                    return Err(error);
                }
            }
        }
    }

    /// Cuts each piece in flight that lags far behind what another
    /// server would take for it, once no piece is left to take (the
    /// tail, where the slowest server would set the pace): its server is
    /// dropped, saying so, and its connection shut down, so the piece
    /// comes back to the queue and a faster server takes it. A piece lags
    /// when it has taken over [`LAG_GRACE`] and over [`LAG_FACTOR`] times
    /// what the fastest other server still in would take at the rate it
    /// showed (where none has shown one, over [`LAG_GRACE`] plus its time
    /// at [`MIN_USEFUL_RATE`]); the last server in is never cut. A mirror that sends a byte every 2 s, never idle for
    /// `--timeout`, holds a `get` no longer than that.
    fn cut_laggards(&self, servers: &[Server]) {
        if !self.queue.lock().unwrap().is_empty() {
            return;
        }
        let rate = |server: &Server| {
            let busy = server.busy_ns.load(Ordering::Relaxed);
            let bytes = server.bytes.load(Ordering::Relaxed);
            (busy > 0 && bytes > 0 && !server.is_dropped())
                .then(|| bytes as f64 * 1e9 / busy as f64)
        };
        let mut held = self.held.lock().unwrap();
        for piece in held.iter_mut() {
            let others = || {
                servers
                    .iter()
                    .enumerate()
                    .filter(|(i, s)| *i != piece.server && !s.is_dropped())
                    .map(|(_, s)| s)
            };
            if others().next().is_none() {
                // The last server in: slow beats nothing.
                continue;
            }
            let best = others().filter_map(rate).fold(0.0, f64::max);
            let seconds =
                |rate: f64| Duration::from_secs_f64((piece.length as f64 / rate).min(1e6));
            let (elsewhere, allowed) = if best > 0.0 {
                let elsewhere = seconds(best);
                (
                    elsewhere,
                    LAG_GRACE.max(elsewhere.saturating_mul(LAG_FACTOR)),
                )
            } else {
                let elsewhere = seconds(MIN_USEFUL_RATE);
                (elsewhere, LAG_GRACE + elsewhere)
            };
            let waited = piece.since.elapsed();
            if waited < allowed {
                continue;
            }
            let Some(socket) = piece.socket.take() else {
                continue;
            };
            servers[piece.server].drop_with(format!(
                "too slow: bytes {}.. ({} bytes) not in after {:.1} s, where another server would take {:.3} s; the piece goes to the others",
                piece.offset,
                piece.length,
                waited.as_secs_f64(),
                elsewhere.as_secs_f64()
            ));
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }

    /// The next piece, waiting while others hold pieces that may come
    /// back; `None` when every piece is done.
    fn take(&self) -> Option<u64> {
        loop {
            if let Some(offset) = {
                let mut queue = self.queue.lock().unwrap();
                let next = queue.pop_front();
                if next.is_some() {
                    self.in_flight.fetch_add(1, Ordering::AcqRel);
                }
                next
            } {
                return Some(offset);
            }
            if self.in_flight.load(Ordering::Acquire) == 0 || self.failed.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Fetches the piece at `offset` from `server` and checks it; an error
    /// only for the destination's own failures.
    fn fetch(
        &self,
        (index, server): (usize, &Server),
        connection: &mut Option<Connection>,
        mover: &mut Mover,
        offset: u64,
    ) -> Result<Outcome> {
        let length = (self.total - offset).min(self.piece);
        let received = (|| -> Result<()> {
            let mut open = match connection.take() {
                Some(open) => open,
                None => Connection::open(&server.url, self.options.timeout, &self.options.tls)?,
            };
            self.held.lock().unwrap().push(Held {
                offset,
                length,
                server: index,
                since: Instant::now(),
                socket: open.stream.socket().try_clone().ok(),
            });
            let last = offset + length - 1;
            let target = format!("{}{}", server.url.target, self.suffix);
            open.send_get(&target, &format!("Range: bytes={offset}-{last}\r\n"))?;
            let response = open.read_response()?;
            let peer = server.url.with_target(target).to_string();
            let range = response
                .header("content-range")
                .and_then(parse_content_range);
            if response.status != 206
                || range != Some((Some((offset, last)), Some(self.total)))
                || response.content_length(&peer)? != Some(length)
            {
                return Err(Error::protocol(
                    peer,
                    format!(
                        "asked for bytes {offset}-{last} of {}, got {} with Content-Range {:?}",
                        self.total,
                        response.status,
                        response.header("content-range")
                    ),
                ));
            }
            receive(
                &mut open,
                self.file,
                self.label,
                offset,
                length,
                self.total,
                self.options,
                mover,
            )?;
            if !response.closes() {
                *connection = Some(open);
            }
            Ok(())
        })();
        self.held.lock().unwrap().retain(|h| h.offset != offset);
        if let Err(error) = received {
            return match error {
                // The destination's own failure ends the get.
                Error::Move(flexio::Error::Io { ref endpoint, .. }) if endpoint == self.label => {
                    Err(error)
                }
                other => Ok(Outcome::ServerFault(other.to_string())),
            };
        }
        let first = offset / CHUNK_SIZE;
        let chunks = first..(offset + length).div_ceil(CHUNK_SIZE);
        let hashes = hash_chunks(self.file, self.total, chunks)
            .map_err(|e| Error::io("read", self.label, Some(offset), e))?;
        for (chunk, hash) in (first..).zip(&hashes) {
            if self.hashes.get(chunk as usize) != Some(hash) {
                return Ok(Outcome::ServerFault(format!(
                    "it sent bytes {}.. that differ from the manifest's BLAKE3 (chunk {chunk})",
                    chunk * CHUNK_SIZE
                )));
            }
        }
        if let Some(journal) = self.journal {
            journal.record(offset, length)?;
        }
        Ok(Outcome::Kept)
    }
}
