//! One file from one server: a plain GET, or — for several streams or
//! `--resume` — a ranged first request whose answer settles the plan (the
//! length, whether ranges are answered, the validator), then the other
//! pieces over kept-alive connections at once, then the manifest check.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Mutex;
use std::time::Instant;

use flexio::range::{Mover, NewFile, RangeTotals};
use flexio::MechanismName;

use super::connection::{Connection, Response, Url};
use super::listing::unix_seconds;
use super::pieces::{receive_hashed, EarlyHashes, Piece, Pieces};
use super::quick_check::same_as_served;
use super::resume::Partial;
use super::sink::{check_space, destination_for, Sink};
use super::tree_dest::set_times;
use super::verify::verify;
use super::{GetOptions, GetReport};
use crate::error::{Error, Result};
use crate::ranges::parse_content_range;

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
    let started = Instant::now();
    let (streams, note) = streams_for(options);
    let piece = options.piece_size.max(64 << 10);
    let mut first = Connection::open(&url, options.timeout, &options.tls)?;
    if options.resume
        && let Some(report) = already_complete(&url, &destination, &mut first, options, started)?
    {
        return Ok(report);
    }
    // Pieces (and so a ranged first request) for several streams, or to
    // keep whole pieces in a journal.
    let range_header = format!("Range: bytes=0-{}\r\n", piece - 1);
    let by_pieces = streams > 1 || options.resume;
    first.send_get(&url.target, if by_pieces { &range_header } else { "" })?;
    let response = first.read_response()?;
    if let Some(location) = same_origin_redirect(&url, &response) {
        return Err(Error::Redirect {
            peer: url.to_string(),
            status: response.status,
            location,
        });
    }
    let mut plan = Plan::settle(
        &url,
        &destination,
        response,
        options,
        (streams, piece),
        note,
    )?;
    let sink = plan.open_sink(&destination)?;
    let fetched = match plan.fetch_body(&sink, first, started, by_pieces) {
        Ok(fetched) => fetched,
        Err(error) => return Err(sink.fail(error, &plan.label)),
    };
    // The server's Last-Modified, as `curl -R` and wget keep it: a rerun
    // then knows the file it already has (see `already_complete`).
    if let Some(mtime) = plan.last_modified {
        set_times(sink.fd(), mtime, 0, &plan.label)?;
    }
    sink.commit(plan.total, options.fsync)?;
    Ok(plan.report(destination, fetched))
}

/// The report of a get whose destination already holds the file — a
/// regular file with the size and modification time of the server's
/// (HEAD's Content-Length and Last-Modified, rsync's quick check) — so
/// that no body is fetched; `None` otherwise, with `connection` ready for
/// the GET (opened again when the server closed it).
fn already_complete(
    url: &Url,
    destination: &Path,
    connection: &mut Connection,
    options: &GetOptions,
    started: Instant,
) -> Result<Option<GetReport>> {
    let Ok(here) = std::fs::symlink_metadata(destination) else {
        return Ok(None);
    };
    if !here.file_type().is_file() {
        return Ok(None);
    }
    use std::os::unix::fs::MetadataExt;
    let same = same_as_served(
        connection,
        &url.target,
        &url.to_string(),
        (here.len(), here.mtime()),
        &options.tls,
    )?;
    if !same {
        return Ok(None);
    }
    if let Some(progress) = &options.progress {
        progress.expect_file(here.len());
        progress.add(here.len());
    }
    Ok(Some(GetReport {
        url: url.to_string(),
        destination: destination.to_path_buf(),
        bytes: here.len(),
        resumed_bytes: here.len(),
        streams: 1,
        ranged: false,
        note: Some(
            "already here whole (the server's size and Last-Modified): not fetched again"
                .to_string(),
        ),
        requests: 0,
        syscalls: 0,
        mechanisms: Vec::new(),
        transfer_ns: started.elapsed().as_nanos() as u64,
        verified: false,
        verify_ns: 0,
    }))
}

/// Where a redirect answer sends the request, as a whole URL, when it is
/// on `url`'s origin (scheme, host and port): a `Location` that is a path
/// (`/dir/`) or a URL of the same origin. Another origin is not followed
/// (the answer stays an error naming it).
fn same_origin_redirect(url: &Url, response: &Response) -> Option<String> {
    if !matches!(response.status, 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = response.header("location")?;
    let origin = format!(
        "{}://{}",
        if url.tls { "https" } else { "http" },
        url.authority()
    );
    let target = if location.starts_with('/') && !location.starts_with("//") {
        location.to_string()
    } else {
        let to = Url::parse(location).ok()?;
        if (to.tls, &to.host, to.port) != (url.tls, &url.host, url.port) {
            return None;
        }
        to.target
    };
    // Checked as any URL given on the command line is.
    Url::parse(&format!("{origin}{target}"))
        .ok()
        .map(|to| to.to_string())
}

/// The streams to fetch over, and why fewer than asked.
fn streams_for(options: &GetOptions) -> (usize, Option<String>) {
    // `direct` opens the file again with O_DIRECT through /proc/self/fd,
    // a description of each stream's own; without /proc it falls back to
    // fcntl(F_SETFL), which would act on the description every stream
    // shares: one writer only then.
    let direct_alone = options.mechanism == MechanismName::Direct
        && options.streams > 1
        && !Path::new("/proc/self/fd").is_dir();
    match direct_alone {
        true => (
            1,
            Some("without /proc, direct sets O_DIRECT on the file description all streams would share: one stream".to_string()),
        ),
        false => (options.streams.max(1), None),
    }
}

/// What the first answer settled.
struct Plan<'a> {
    url: &'a Url,
    label: String,
    options: &'a GetOptions,
    response: Response,
    streams: usize,
    piece: u64,
    /// The file's length.
    total: u64,
    /// The first answer's body length.
    first_length: u64,
    /// Whether the server answers ranges.
    ranged: bool,
    /// Its ETag (or Last-Modified), for If-Range and `--resume`.
    validator: Option<String>,
    note: Option<String>,
    /// Pieces after the first still to fetch, by offset.
    pending: Vec<u64>,
    /// Bytes an earlier run left whole.
    resumed_bytes: u64,
    /// The server's Last-Modified, in seconds since the epoch.
    last_modified: Option<i64>,
}

/// What fetching the body did.
struct Fetched {
    totals: RangeTotals,
    requests: u64,
    streams_used: usize,
    transfer_ns: u64,
    verified: bool,
    verify_ns: u64,
}

impl<'a> Plan<'a> {
    /// The plan the first answer makes: its shape, the room for it, the
    /// validator, and why fewer streams than asked, if so.
    fn settle(
        url: &'a Url,
        destination: &Path,
        response: Response,
        options: &'a GetOptions,
        (streams, piece): (usize, u64),
        note: Option<String>,
    ) -> Result<Plan<'a>> {
        let shape = first_shape(&response, &url.to_string(), piece)?;
        let (total, first_length) = match shape {
            Shape::Whole(length)
            | Shape::Range {
                total: length,
                first: 0,
            } if length == 0 => (0, 0),
            Shape::Whole(length) => (length, length),
            Shape::Range { total, first } => (total, first),
        };
        let ranged = matches!(shape, Shape::Range { .. });
        check_space(destination, total)?;
        // The server's validator: pieces after the first carry it in
        // If-Range (a changed file then answers 200, which fails the get
        // instead of mixing versions), and a resumed get starts afresh
        // when it changed.
        let validator = response
            .header("etag")
            .filter(|tag| tag.starts_with('"'))
            .or(response.header("last-modified"))
            .map(str::to_string);
        let last_modified = response.header("last-modified").and_then(unix_seconds);
        let note = match (streams > 1, ranged) {
            (true, false) => Some(format!(
                "the server answered a range request with {} (no ranges): one stream",
                response.status
            )),
            _ => note,
        };
        Ok(Plan {
            url,
            label: destination.display().to_string(),
            options,
            response,
            streams,
            piece,
            total,
            first_length,
            ranged,
            validator,
            note,
            pending: Vec::new(),
            resumed_bytes: 0,
            last_modified,
        })
    }

    /// The file the body goes into — a partial one with its journal for
    /// `--resume` when the server allows it — and the pieces still to
    /// fetch.
    fn open_sink(&mut self, destination: &Path) -> Result<Sink> {
        let sink = match (&self.validator, self.options.resume && self.ranged) {
            (Some(validator), true) => {
                let partial = Partial::open(
                    destination,
                    &format!("{}\t{}\t{validator}\t{}", self.url, self.total, self.piece),
                    self.total,
                    self.piece,
                )?;
                if partial.healed > 0 {
                    self.note = Some(format!(
                        "{} journaled pieces no longer held the bytes journaled (never written, cut off or lost): fetched again",
                        partial.healed
                    ));
                }
                Sink::Partial(partial)
            }
            _ => {
                if self.options.resume {
                    self.note = Some(
                        "not resumable: the server offers no ranges or no validator (ETag or Last-Modified); fetched as one new file"
                            .to_string(),
                    );
                }
                Sink::New(NewFile::create(destination, 0o644)?)
            }
        };
        let done = sink.done();
        self.pending = (self.first_length..self.total)
            .step_by(self.piece as usize)
            .filter(|offset| !done.contains(offset))
            .collect();
        let pending_bytes: u64 = self
            .pending
            .iter()
            .map(|offset| (self.total - offset).min(self.piece))
            .sum();
        self.resumed_bytes = self.total - self.first_length - pending_bytes;
        if let Some(progress) = &self.options.progress {
            progress.expect_file(self.total);
            progress.add(self.resumed_bytes);
        }
        Ok(sink)
    }

    /// Hashes of pieces taken as they arrive, when the manifest will be
    /// checked and every piece is fetched now (a resumed file is read
    /// whole at the end). One plain body is hashed at the end instead,
    /// while the server hashes its copy; a decrypted one passes through
    /// this process and is hashed on the way.
    fn early_hashes(&self, by_pieces: bool) -> Option<EarlyHashes> {
        (self.options.verify
            && self.response.header("server") == Some("flexio")
            && !self.url.target.contains('?')
            && self.resumed_bytes == 0
            && (by_pieces || self.url.tls))
            .then(|| EarlyHashes::new(self.total, self.piece))
            .flatten()
    }

    /// The body: the first answer's, the pending pieces', then the
    /// manifest check.
    fn fetch_body(
        &self,
        sink: &Sink,
        mut first: Connection,
        started: Instant,
        by_pieces: bool,
    ) -> Result<Fetched> {
        let early = self.early_hashes(by_pieces);
        let mut totals = RangeTotals::default();
        if self.first_length > 0 {
            let mut mover = Mover::new();
            let piece = Piece {
                file: sink.fd(),
                label: &self.label,
                offset: 0,
                length: self.first_length,
                total: self.total,
            };
            totals.add(receive_hashed(
                &mut first,
                &piece,
                self.options,
                &mut mover,
                early.as_ref(),
            )?);
            if let Sink::Partial(partial) = &sink {
                partial.record(0, self.first_length)?;
            }
        }
        let first = self.keep_first(first)?;
        let (first, requests, streams_used) =
            self.fetch_pending(sink, first, early.as_ref(), &mut totals)?;
        let transfer_ns = started.elapsed().as_nanos() as u64;
        if totals.bytes + self.resumed_bytes != self.total {
            return Err(Error::protocol(
                self.url.to_string(),
                format!(
                    "received {} of {} bytes; not committed",
                    totals.bytes + self.resumed_bytes,
                    self.total
                ),
            ));
        }
        let verify_started = Instant::now();
        let verified = self.options.verify
            && verify(
                self.url,
                first,
                &self.response,
                sink.fd(),
                &self.label,
                self.total,
                self.options,
                early.and_then(EarlyHashes::all),
            )?;
        Ok(Fetched {
            totals,
            requests,
            streams_used,
            transfer_ns,
            verified,
            verify_ns: match verified {
                true => verify_started.elapsed().as_nanos() as u64,
                false => 0,
            },
        })
    }

    /// The first connection, when it can carry the next request. The
    /// empty file's 416 carries a short text body: read so the connection
    /// can carry the manifest request; a long one ends it.
    fn keep_first(&self, mut first: Connection) -> Result<Option<Connection>> {
        let mut reusable = !self.response.closes();
        if self.response.status == 416 {
            match self.response.content_length(&self.url.to_string())? {
                Some(length) if length <= 64 << 10 => drop(first.read_small_body(length)?),
                _ => reusable = false,
            }
        }
        Ok(reusable.then_some(first))
    }

    /// The pending pieces over the streams at once (the first on `first`);
    /// a connection left for the manifest, the requests sent and the
    /// streams used, the first included.
    fn fetch_pending(
        &self,
        sink: &Sink,
        mut first: Option<Connection>,
        early: Option<&EarlyHashes>,
        totals: &mut RangeTotals,
    ) -> Result<(Option<Connection>, u64, usize)> {
        if self.pending.is_empty() {
            return Ok((first, 1, 1));
        }
        let pieces = Pieces {
            url: self.url,
            file: sink.fd(),
            label: &self.label,
            total: self.total,
            piece: self.piece,
            pending: self.pending.clone(),
            next: AtomicUsize::new(0),
            journal: sink.journal(),
            failed: AtomicBool::new(false),
            options: self.options,
            if_range: self
                .validator
                .as_ref()
                .map(|validator| format!("If-Range: {validator}\r\n"))
                .unwrap_or_default(),
            early,
        };
        let results = Mutex::new(Vec::new());
        let extra = (self.streams - 1).min(self.pending.len());
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
        let mut requests = 1;
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
        Ok((first, requests, 1 + extra))
    }

    fn report(self, destination: PathBuf, fetched: Fetched) -> GetReport {
        let mut mechanisms: Vec<String> = fetched
            .totals
            .ranges
            .iter()
            .filter_map(|r| r.mechanism_used.map(|m| m.as_str().to_string()))
            .collect();
        mechanisms.sort();
        mechanisms.dedup();
        GetReport {
            url: self.url.to_string(),
            destination,
            bytes: self.total,
            resumed_bytes: self.resumed_bytes,
            streams: fetched.streams_used,
            ranged: self.ranged,
            note: self.note,
            requests: fetched.requests,
            syscalls: fetched.totals.syscalls,
            mechanisms,
            transfer_ns: fetched.transfer_ns,
            verified: fetched.verified,
            verify_ns: fetched.verify_ns,
        }
    }
}

/// What the first response promises.
#[derive(Debug, Clone, Copy)]
pub(super) enum Shape {
    /// A whole body of this length (ranges not answered).
    Whole(u64),
    /// A piece `[0, first)` of a `total`-byte file.
    Range { total: u64, first: u64 },
}

pub(super) fn first_shape(response: &Response, peer: &str, piece: u64) -> Result<Shape> {
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
