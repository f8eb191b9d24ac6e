//! `flexio get`: fetch one file over HTTP/1.1 into a [`NewFile`] — from one
//! connection, or from several kept-alive connections each asking for the
//! next piece by `Range` — with body bytes spliced socket→file. The file
//! takes its name only when every byte arrived and, when the server offers
//! a manifest (`flexio serve`), each 1 MiB chunk matched its BLAKE3.

mod connection;
mod crawl;
mod listing;
mod mirror;
mod mirror_tree;
mod pieces;
mod relay;
mod resume;
mod shard_get;
mod shard_put;
mod tar_fetch;
mod transport;
mod tree;
mod upload;
mod upload_tree;
mod verify;

use std::collections::HashSet;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use flexio::range::{Mover, NewFile, RangeTotals};
use flexio::MechanismName;
use serde::Serialize;

pub use connection::Url;
use connection::{Connection, Response};
pub use crawl::ListingReport;
pub use listing::ListingFormat;
pub use mirror::{get_mirrored, MirrorReport, MirroredReport};
pub use mirror_tree::get_tree_mirrored;
use pieces::EarlyHashes;
use pieces::{receive, Pieces};
pub use relay::Relay;
use resume::Partial;
pub use shard_get::{get_tree_sharded, ShardPart, ShardReport};
pub use shard_put::put_tree_sharded;
pub use tree::{get_tree, TreeReport};
pub use upload::{put, put_paced, put_with, PutOptions, PutReport};
pub use upload_tree::{put_tree, PutTreeReport};
use verify::verify;

use std::sync::Arc;

use flexio::pace::{Rate, TokenBucket};

use crate::error::{Error, Result};
use crate::ranges::parse_content_range;
use crate::tls::client::TlsClient;

/// How to fetch.
#[derive(Clone, Debug)]
pub struct GetOptions {
    /// Connections to fetch pieces over at once (1: a plain GET).
    pub streams: usize,
    /// Bytes one ranged request asks for.
    pub piece_size: u64,
    /// Deadline for connecting, for a response head, and for any stretch
    /// of a body without progress.
    pub timeout: Duration,
    /// Check the server's manifest when it has one.
    pub verify: bool,
    /// The socket→file mechanism (`auto` is splice).
    pub mechanism: MechanismName,
    /// fsync before the file takes its name.
    pub fsync: bool,
    /// Keep what arrived in a partial file and journal beside the
    /// destination, and fetch only the missing pieces when run again.
    pub resume: bool,
    /// The most bytes per second, over all streams together.
    pub rate: Option<Rate>,
    /// The bucket that keeps `rate`, shared by the streams (and by several
    /// gets, when the caller passes one); made from `rate` when `None`.
    pub rate_bucket: Option<Arc<TokenBucket>>,
    /// How `https://` servers are trusted (the system's store unless
    /// told otherwise).
    pub tls: TlsClient,
}

impl GetOptions {
    /// These options with the bucket for `rate` made, so that every stream
    /// shares it.
    pub(crate) fn with_rate_bucket(&self) -> GetOptions {
        let mut options = self.clone();
        if let (Some(rate), None) = (options.rate, &options.rate_bucket) {
            options.rate_bucket = Some(Arc::new(TokenBucket::new(
                rate,
                rate.default_burst(),
                std::time::Instant::now(),
            )));
        }
        options
    }
}

impl Default for GetOptions {
    fn default() -> Self {
        GetOptions {
            streams: 1,
            piece_size: 16 << 20,
            timeout: Duration::from_secs(30),
            verify: true,
            mechanism: MechanismName::Auto,
            fsync: false,
            resume: false,
            rate: None,
            rate_bucket: None,
            tls: TlsClient::default(),
        }
    }
}

/// What a fetch did.
#[derive(Clone, Debug, Serialize)]
pub struct GetReport {
    /// The URL fetched.
    pub url: String,
    /// Where the file now is.
    pub destination: PathBuf,
    /// Its length.
    pub bytes: u64,
    /// Bytes an earlier, stopped run had fetched (`--resume`).
    pub resumed_bytes: u64,
    /// Connections used.
    pub streams: usize,
    /// Whether the server answered ranges (so pieces were fetched).
    pub ranged: bool,
    /// Why fewer streams than asked were used, when so.
    pub note: Option<String>,
    /// Requests sent for the body.
    pub requests: u64,
    /// System calls that moved body bytes.
    pub syscalls: u64,
    /// The mechanisms that moved the body.
    pub mechanisms: Vec<String>,
    /// Wall time from the first connection to the last body byte.
    pub transfer_ns: u64,
    /// Whether the manifest was checked (and matched).
    pub verified: bool,
    /// Time spent fetching the manifest and hashing.
    pub verify_ns: u64,
}

/// Fetches `url` to `destination` (or, when `None`, to the URL's last
/// name in the current directory; an existing directory gets that name
/// inside it).
///
/// # Errors
/// [`Error::Usage`] for a bad URL or destination; [`Error::Status`] when
/// the server answers an error; [`Error::Protocol`] when it breaks the
/// protocol (a head over 16 KiB, a body shorter than its Content-Length,
/// a Content-Range not asked for); [`Error::Timeout`] for a silent server;
/// [`Error::VerifyMismatch`] when the bytes do not match its manifest. In
/// every case nothing is left at the destination.
///
/// # Examples
/// ```no_run
/// let options = flexio_net::client::GetOptions { streams: 4, ..Default::default() };
/// let report = flexio_net::client::get("http://127.0.0.1:8080/big.iso", None, &options)?;
/// println!("{} bytes over {} streams", report.bytes, report.streams);
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn get(url: &str, destination: Option<&Path>, options: &GetOptions) -> Result<GetReport> {
    let options = &options.with_rate_bucket();
    let url = Url::parse(url)?;
    let destination = destination_for(&url, destination)?;
    let label = destination.display().to_string();
    let started = Instant::now();
    // `direct` opens the file again with O_DIRECT through /proc/self/fd,
    // a description of each stream's own; without /proc it falls back to
    // fcntl(F_SETFL), which would act on the description every stream
    // shares: one writer only then.
    let direct_alone = options.mechanism == MechanismName::Direct
        && options.streams > 1
        && !Path::new("/proc/self/fd").is_dir();
    let streams = if direct_alone {
        1
    } else {
        options.streams.max(1)
    };
    let piece = options.piece_size.max(64 << 10);
    let mut first = Connection::open(&url, options.timeout, &options.tls)?;
    let range_header = format!("Range: bytes=0-{}\r\n", piece - 1);
    // Pieces (and so a ranged first request) for several streams, or to
    // keep whole pieces in a journal.
    let by_pieces = streams > 1 || options.resume;
    first.send_get(&url.target, if by_pieces { &range_header } else { "" })?;
    let response = first.read_response()?;
    let peer = url.to_string();
    let shape = first_shape(&response, &peer, piece)?;
    let (total, first_length) = match shape {
        Shape::Whole(length)
        | Shape::Range {
            total: length,
            first: 0,
            ..
        } if length == 0 => (0, 0),
        Shape::Whole(length) => (length, length),
        Shape::Range { total, first, .. } => (total, first),
    };
    let ranged = matches!(shape, Shape::Range { .. });
    check_space(&destination, total)?;
    // The server's validator: pieces after the first carry it in If-Range
    // (a changed file then answers 200, which fails the get instead of
    // mixing versions), and a resumed get starts afresh when it changed.
    let validator = response
        .header("etag")
        .filter(|tag| tag.starts_with('"'))
        .or(response.header("last-modified"))
        .map(str::to_string);
    let mut note = match (streams > 1, ranged) {
        (true, false) => Some(format!(
            "the server answered a range request with {} (no ranges): one stream",
            response.status
        )),
        _ if direct_alone => Some(
            "without /proc, direct sets O_DIRECT on the file description all streams would share: one stream"
                .to_string(),
        ),
        _ => None,
    };
    let sink = match (&validator, options.resume && ranged) {
        (Some(validator), true) => Sink::Partial(Partial::open(
            &destination,
            &format!("{url}\t{total}\t{validator}\t{piece}"),
        )?),
        (_, resume) => {
            if resume || (options.resume && !ranged) {
                note = Some(
                    "--resume needs ranges and a validator (ETag or Last-Modified) from the server; fetched as one new file"
                        .to_string(),
                );
            }
            Sink::New(NewFile::create(&destination, 0o644)?)
        }
    };
    let done = sink.done();
    let pending: Vec<u64> = (first_length..total)
        .step_by(piece as usize)
        .filter(|offset| !done.contains(offset))
        .collect();
    let resumed_bytes = total
        - first_length
        - pending
            .iter()
            .map(|offset| (total - offset).min(piece))
            .sum::<u64>();
    // Hash pieces as they arrive when the manifest will be checked and
    // every piece is fetched now (a resumed file is read whole at the end).
    let early = (options.verify
        && response.header("server") == Some("flexio")
        && !url.target.contains('?')
        && resumed_bytes == 0
        && by_pieces)
        .then(|| EarlyHashes::new(total, piece))
        .flatten();
    let body = (|| -> Result<_> {
        let mut totals = RangeTotals::default();
        let mut mover = Mover::new();
        let mut requests = 1;
        if first_length > 0 {
            totals.add(receive(
                &mut first,
                sink.fd(),
                &label,
                0,
                first_length,
                total,
                options,
                &mut mover,
            )?);
            if let Some(early) = &early {
                early.add(sink.fd(), 0, first_length, &label)?;
            }
            if let Sink::Partial(partial) = &sink {
                partial.record(0)?;
            }
        }
        // The empty file's 416 carries a short text body: read it so the
        // connection can carry the manifest request; a long one ends it.
        let mut reusable = !response.closes();
        if response.status == 416 {
            match response.content_length(&peer)? {
                Some(length) if length <= 64 << 10 => drop(first.read_small_body(length)?),
                _ => reusable = false,
            }
        }
        let mut first = reusable.then_some(first);
        let mut streams_used = 1;
        if !pending.is_empty() {
            let pieces = Pieces {
                url: &url,
                file: sink.fd(),
                label: &label,
                total,
                piece,
                pending: pending.clone(),
                next: AtomicUsize::new(0),
                journal: sink.journal(),
                failed: AtomicBool::new(false),
                options,
                if_range: validator
                    .as_ref()
                    .map(|validator| format!("If-Range: {validator}\r\n"))
                    .unwrap_or_default(),
                early: early.as_ref(),
            };
            let results = Mutex::new(Vec::new());
            let extra = (streams - 1).min(pending.len());
            streams_used += extra;
            std::thread::scope(|scope| {
                for _ in 0..extra {
                    scope.spawn(|| {
                        let result = pieces.fetch(None);
                        results.lock().unwrap().push(result);
                    });
                }
                let result = pieces.fetch(first.take());
                results.lock().unwrap().push(result);
            });
            for result in results.into_inner().unwrap() {
                let (piece_totals, connection) = result?;
                requests += piece_totals.ranges.len() as u64;
                for range in piece_totals.ranges {
                    totals.add(range);
                }
                if first.is_none() {
                    first = connection;
                }
            }
        }
        let transfer_ns = started.elapsed().as_nanos() as u64;
        if totals.bytes + resumed_bytes != total {
            return Err(Error::protocol(
                &peer,
                format!(
                    "received {} of {total} bytes; not committed",
                    totals.bytes + resumed_bytes
                ),
            ));
        }
        let verify_started = Instant::now();
        let verified = options.verify
            && verify(
                &url,
                first,
                &response,
                sink.fd(),
                &label,
                total,
                options,
                early.and_then(EarlyHashes::all),
            )?;
        let verify_ns = if verified {
            verify_started.elapsed().as_nanos() as u64
        } else {
            0
        };
        Ok((
            totals,
            requests,
            streams_used,
            transfer_ns,
            verified,
            verify_ns,
        ))
    })();
    let (totals, requests, streams_used, transfer_ns, verified, verify_ns) = match body {
        Ok(done) => done,
        Err(error) => return Err(sink.fail(error, &label)),
    };
    sink.commit(total, options.fsync)?;
    let mut mechanisms: Vec<String> = totals
        .ranges
        .iter()
        .filter_map(|r| r.mechanism_used.map(|m| m.as_str().to_string()))
        .collect();
    mechanisms.sort();
    mechanisms.dedup();
    Ok(GetReport {
        url: url.to_string(),
        destination,
        bytes: total,
        resumed_bytes,
        streams: streams_used,
        ranged,
        note,
        requests,
        syscalls: totals.syscalls,
        mechanisms,
        transfer_ns,
        verified,
        verify_ns,
    })
}

/// Where the body goes: a new file that leaves nothing when dropped, or
/// with `--resume` a partial file and its journal that stay for the next
/// run.
enum Sink {
    New(NewFile),
    Partial(Partial),
}

impl Sink {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Sink::New(file) => file.fd(),
            Sink::Partial(partial) => partial.fd(),
        }
    }

    fn journal(&self) -> Option<&Partial> {
        match self {
            Sink::New(_) => None,
            Sink::Partial(partial) => Some(partial),
        }
    }

    /// The pieces already whole from an earlier run.
    fn done(&self) -> HashSet<u64> {
        match self {
            Sink::New(_) => HashSet::new(),
            Sink::Partial(partial) => partial.done.clone(),
        }
    }

    fn commit(self, total: u64, fsync: bool) -> Result<()> {
        match self {
            Sink::New(file) => Ok(file.commit(total, fsync)?),
            Sink::Partial(partial) => partial.commit(total, fsync),
        }
    }

    /// `error`, saying what became of the bytes: none left for a new file;
    /// kept for the next run with `--resume`.
    fn fail(self, error: Error, label: &str) -> Error {
        match self {
            Sink::New(_) => Error::Stopped {
                source: Box::new(error),
                what_remains: format!("nothing was written to {label}"),
            },
            Sink::Partial(partial) => Error::Stopped {
                source: Box::new(error),
                what_remains: format!(
                    "what arrived is kept in {}: run again with --resume to fetch only the rest",
                    partial.path().display()
                ),
            },
        }
    }
}

/// What the first response promises.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// A whole body of this length (ranges not answered).
    Whole(u64),
    /// A piece `[0, first)` of a `total`-byte file.
    Range { total: u64, first: u64 },
}

fn first_shape(response: &Response, peer: &str, piece: u64) -> Result<Shape> {
    if response.header("transfer-encoding").is_some() {
        return Err(Error::protocol(
            peer,
            "the body is sent with Transfer-Encoding (chunked), which is not fetched yet: its length cannot be checked before it arrives",
        ));
    }
    let length = response.content_length(peer)?;
    match response.status {
        200 => length.map(Shape::Whole).ok_or_else(|| {
            Error::protocol(peer, "no Content-Length: a body whose end is the connection's close cannot be told from a cut one; refused")
        }),
        206 => {
            let range = response
                .header("content-range")
                .and_then(parse_content_range);
            match (range, length) {
                (Some((Some((0, last)), Some(total))), Some(length))
                    if length == last + 1 && last + 1 == piece.min(total) =>
                {
                    Ok(Shape::Range { total, first: length })
                }
                _ => Err(Error::protocol(
                    peer,
                    format!(
                        "206 with Content-Range {:?} and Content-Length {length:?}, not the bytes 0-{} asked for",
                        response.header("content-range"),
                        piece - 1
                    ),
                )),
            }
        }
        416 => match response.header("content-range").and_then(parse_content_range) {
            Some((None, Some(0))) => Ok(Shape::Range { total: 0, first: 0 }),
            _ => Err(Error::Status {
                peer: peer.to_string(),
                status: 416,
                reason: response.reason.clone(),
            }),
        },
        status => Err(Error::Status {
            peer: peer.to_string(),
            status,
            reason: match (status, response.header("location")) {
                (300..=399, Some(location)) => format!("{} (to {location}; fetch that URL)", response.reason),
                _ => response.reason.clone(),
            },
        }),
    }
}

/// The destination: `given`, or inside it when it is a directory, or the
/// URL's last name.
fn destination_for(url: &Url, given: Option<&Path>) -> Result<PathBuf> {
    let name = || -> Result<PathBuf> {
        let path = url.target.split('?').next().unwrap_or_default();
        let last = path.rsplit('/').next().unwrap_or_default();
        let decoded = crate::names::percent_decode(last.as_bytes()).unwrap_or_default();
        if !crate::names::is_safe_component(&decoded) {
            return Err(Error::Usage(format!(
                "{url}: the URL names no file to save as; give DEST"
            )));
        }
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&decoded)))
    };
    match given {
        Some(path) if path.is_dir() => Ok(path.join(name()?)),
        Some(path) => Ok(path.to_path_buf()),
        None => name(),
    }
}

/// Refuses a body larger than the space free where it goes, before a byte
/// is written.
fn check_space(destination: &Path, length: u64) -> Result<()> {
    let directory = match destination.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let stat = rustix::fs::statvfs(directory)
        .map_err(|e| Error::io("statvfs", directory.display().to_string(), None, e))?;
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    if length > free {
        // Not the user's mistake but the disk's state: a failure at run
        // time (exit 1), not a usage error.
        return Err(Error::io(
            "check the free space for",
            destination.display().to_string(),
            None,
            std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                format!("the server announces {length} bytes, more than the {free} free there; not fetched"),
            ),
        ));
    }
    Ok(())
}

use std::os::unix::ffi::OsStrExt;
