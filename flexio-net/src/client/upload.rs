//! `flexio put`: one file sent as a PUT body, file→socket with sendfile,
//! to a `flexio serve --token-file`: with the token as a bearer token on
//! loopback (and through the TLS relay), as a signed request
//! ([`crate::signing`]) over any other link.

use std::os::fd::AsFd;
use std::path::Path;
use std::time::Instant;

use flexio::pace::Pacing;
use flexio::range::{Mover, RangeEnd, RangeRequest};
use flexio::{EndpointKind, MechanismName};
use serde::Serialize;

use super::connection::{Connection, Response, Url};
use crate::error::{Error, Result};

/// What an upload did.
#[derive(Clone, Debug, Serialize)]
pub struct PutReport {
    /// The URL written.
    pub url: String,
    /// Bytes sent.
    pub bytes: u64,
    /// The HTTP status of the request that completed the file (201
    /// created, 200 replaced).
    pub status: u16,
    /// The mechanism that moved the body.
    pub mechanism: Option<String>,
    /// Wall time from connecting to the server's answer.
    pub wall_ns: u64,
    /// Body bytes sent by this run.
    pub sent_bytes: u64,
    /// Bytes the server had already from an earlier attempt, not sent
    /// again.
    pub resumed_bytes: u64,
    /// Requests that carried the body (1 for a whole-file upload).
    pub pieces: usize,
    /// Connections that sent them.
    pub streams: usize,
}

/// Sends `source` to `url`, authorised by `token`: as a bearer token to a
/// loopback peer, else as a signed request (the token does not cross the
/// link).
///
/// # Errors
/// [`Error::Usage`] for a source that is not a regular file;
/// [`Error::Status`] when the server refuses; I/O errors as they come.
///
/// # Examples
/// ```no_run
/// let report = flexio_net::client::put(
///     std::path::Path::new("notes.txt"),
///     "http://127.0.0.1:8080/notes.txt",
///     "a-token-of-16-chars-or-more",
///     std::time::Duration::from_secs(30),
/// )?;
/// assert_eq!(report.status, 201);
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn put(
    source: &Path,
    url: &str,
    token: &str,
    timeout: std::time::Duration,
) -> Result<PutReport> {
    put_paced(source, url, token, timeout, Pacing::default())
}

/// [`put`] with the body paced: at most `pacing.rate` bytes per second,
/// `pacing.burst` bytes per call, kept by flexio's token bucket or by the
/// kernel (`pacing.by`) — see [`flexio::pace`].
///
/// # Errors
/// As [`put`].
///
/// # Examples
/// ```no_run
/// let pacing = flexio::pace::Pacing::parse(Some("10M"), None, None).unwrap();
/// flexio_net::client::put_paced(
///     std::path::Path::new("notes.txt"),
///     "http://127.0.0.1:8080/notes.txt",
///     "a-token-of-16-chars-or-more",
///     std::time::Duration::from_secs(30),
///     pacing,
/// )?;
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn put_paced(
    source: &Path,
    url: &str,
    token: &str,
    timeout: std::time::Duration,
    pacing: Pacing,
) -> Result<PutReport> {
    put_with(
        source,
        url,
        token,
        &PutOptions {
            timeout,
            pacing,
            ..PutOptions::default()
        },
    )
}

/// How [`put_with`] sends a file.
#[derive(Clone, Debug)]
pub struct PutOptions {
    /// Deadline to connect, for each answer, and for any stretch without
    /// progress.
    pub timeout: std::time::Duration,
    /// The body's pace; one rate over all streams.
    pub pacing: Pacing,
    /// Connections sending pieces at once.
    pub streams: usize,
    /// A file larger than this (or sent over several streams) goes in
    /// pieces of this size (`Content-Range`), which an interrupted upload
    /// run again does not send twice.
    pub piece: u64,
    /// How `https://` servers are trusted (the system's store unless
    /// told otherwise).
    pub tls: crate::tls::client::TlsClient,
    /// Counters a progress bar reads (none: nothing counted).
    pub progress: Option<std::sync::Arc<super::TransferProgress>>,
}

impl Default for PutOptions {
    fn default() -> Self {
        PutOptions {
            timeout: std::time::Duration::from_secs(30),
            pacing: Pacing::default(),
            streams: 1,
            piece: 64 << 20,
            tls: crate::tls::client::TlsClient::default(),
            progress: None,
        }
    }
}

/// Sends `source` to `url`, authorised by `token` (a bearer token to a
/// loopback peer, else a signed request): in one request, or — when it is
/// larger than `options.piece` or `options.streams` is above 1 — in
/// pieces, after asking the server which pieces it already has from an
/// earlier attempt at the same upload (the same source file: device,
/// inode, size and modification time).
///
/// # Errors
/// As [`put`].
///
/// # Examples
/// ```no_run
/// use flexio_net::client::{put_with, PutOptions};
/// let options = PutOptions { streams: 4, piece: 16 << 20, ..PutOptions::default() };
/// let report = put_with(
///     std::path::Path::new("big.iso"),
///     "http://127.0.0.1:8080/big.iso",
///     "a-token-of-16-chars-or-more",
///     &options,
/// )?;
/// println!("{} bytes sent, {} already there", report.sent_bytes, report.resumed_bytes);
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn put_with(source: &Path, url: &str, token: &str, options: &PutOptions) -> Result<PutReport> {
    put_keeping(source, url, token, options, false)
}

/// [`put_with`], asking the server (with `keep`) to give the file the
/// source's mode and mtime.
pub(crate) fn put_keeping(
    source: &Path,
    url: &str,
    token: &str,
    options: &PutOptions,
    keep: bool,
) -> Result<PutReport> {
    let url = Url::parse(url)?;
    let label = source.display().to_string();
    let file = std::fs::File::open(source).map_err(|e| Error::io("open", &label, None, e))?;
    let stat = rustix::fs::fstat(&file).map_err(|e| Error::io("fstat", &label, None, e))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(Error::Usage(format!("{label}: not a regular file")));
    }
    if options.piece == 0 || options.streams == 0 {
        return Err(Error::Usage("pieces and streams must be at least 1".into()));
    }
    let length = stat.st_size as u64;
    let started = Instant::now();
    let sender = Sender {
        url: &url,
        token,
        file: &file,
        label: &label,
        length,
        keep: if keep {
            keep_lines(&stat)
        } else {
            String::new()
        },
        options,
        rate: options.pacing.rate.map(|rate| {
            std::sync::Arc::new(flexio::pace::TokenBucket::new(
                rate,
                options.pacing.burst_bytes().unwrap_or(rate.default_burst()),
                Instant::now(),
            ))
        }),
    };
    if let Some(progress) = &options.progress {
        progress.expect_file(length);
    }
    let mut report = if length > options.piece || options.streams > 1 {
        let upload = upload_identity(&stat);
        sender.in_pieces(&upload, 0..length)?
    } else {
        sender.whole()?
    };
    report.wall_ns = started.elapsed().as_nanos() as u64;
    Ok(report)
}

/// A write's headers beyond its authorisation and length, each empty
/// when it has none.
#[derive(Clone, Copy, Default)]
pub(crate) struct Extra<'a> {
    /// `Content-Range` of a piece (or a question about pieces).
    pub content_range: &'a str,
    /// `Flexio-Upload`: which upload the piece belongs to.
    pub upload: &'a str,
    /// Whole header lines asking the server to keep the file's mode and
    /// mtime ([`keep_lines`]).
    pub keep: &'a str,
}

/// Sends the head of a write request (`PUT`, `MKCOL`) on `connection`,
/// authorised by `token`: the token itself only to a loopback peer (a
/// local server, or the TLS relay), to anyone else a signature good for
/// this one request.
pub(crate) fn send_head(
    connection: &mut Connection,
    method: &str,
    url: &Url,
    token: &str,
    length: u64,
    extra: Extra<'_>,
) -> Result<()> {
    let Extra {
        content_range,
        upload,
        keep,
    } = extra;
    let peer = connection
        .stream
        .socket()
        .peer_addr()
        .map_err(|e| Error::io("getpeername", url.to_string(), None, e))?;
    let authorization = if peer.ip().is_loopback() {
        format!("Bearer {token}")
    } else {
        let authority = url.authority();
        let signed = crate::signing::SignedRequest {
            method,
            authority: &authority,
            target: &url.target,
            length,
            content_range,
            upload,
        };
        crate::signing::sign(token, &signed)
            .map_err(|e| Error::io("getrandom", "the request's nonce", None, e))?
    };
    let mut extra = format!("Authorization: {authorization}\r\nContent-Length: {length}\r\n");
    if !content_range.is_empty() {
        extra += &format!("Content-Range: {content_range}\r\nFlexio-Upload: {upload}\r\n");
    }
    extra += keep;
    connection.send_request(method, &url.target, &extra)
}

/// The header lines that ask `flexio serve` to give the uploaded file
/// the permission bits and mtime of `stat` (see `server::upload_meta`).
pub(crate) fn keep_lines(stat: &rustix::fs::Stat) -> String {
    format!(
        "Flexio-Mode: {:o}\r\nFlexio-Mtime: {}.{:09}\r\n",
        stat.st_mode & 0o777,
        stat.st_mtime,
        stat.st_mtime_nsec
    )
}

/// Which upload a piece belongs to: the source file as it is now.
fn upload_identity(stat: &rustix::fs::Stat) -> String {
    let mut hasher = blake3::Hasher::new();
    for value in [
        stat.st_dev,
        stat.st_ino,
        stat.st_size as u64,
        stat.st_mtime as u64,
        stat.st_mtime_nsec,
    ] {
        hasher.update(&value.to_le_bytes());
    }
    hasher.finalize().to_hex()[..32].to_string()
}

/// One upload's fixed parts.
pub(crate) struct Sender<'a> {
    pub(crate) url: &'a Url,
    pub(crate) token: &'a str,
    pub(crate) file: &'a std::fs::File,
    pub(crate) label: &'a str,
    pub(crate) length: u64,
    /// Header lines asking to keep the file's mode and mtime (empty: not
    /// asked).
    pub(crate) keep: String,
    pub(crate) options: &'a PutOptions,
    pub(crate) rate: Option<std::sync::Arc<flexio::pace::TokenBucket>>,
}

impl Sender<'_> {
    /// A connection and the head of a PUT with these extra headers.
    fn start(&self, length: u64, content_range: &str, upload: &str) -> Result<Connection> {
        let mut connection = Connection::open(self.url, self.options.timeout, &self.options.tls)?;
        let extra = Extra {
            content_range,
            upload,
            keep: &self.keep,
        };
        send_head(&mut connection, "PUT", self.url, self.token, length, extra)?;
        Ok(connection)
    }

    /// Sends `[offset, offset + length)` on `connection`: by the
    /// [`Mover`] (sendfile) to a plain socket, or read and encrypted
    /// through user space into a TLS session. The mechanism used.
    fn send_body(
        &self,
        connection: &mut Connection,
        offset: u64,
        length: u64,
    ) -> Result<Option<String>> {
        let Some(socket) = connection.stream.plain_fd() else {
            self.send_encrypted(connection, offset, length)?;
            return Ok(Some(MechanismName::ReadWrite.as_str().to_string()));
        };
        let mut mover = Mover::new();
        let source_end = RangeEnd::with_kind(self.file.as_fd(), EndpointKind::File, self.label);
        let sink_end = RangeEnd::with_kind(socket, EndpointKind::Tcp, self.url.to_string());
        let mut request = RangeRequest::new(offset, 0, Some(length)).via(MechanismName::Auto);
        request.idle_timeout = Some(self.options.timeout);
        request.pacing = self.options.pacing;
        request.shared_rate = self.rate.clone();
        let report = mover.move_range(
            &source_end,
            &sink_end,
            &request,
            self.options.progress.as_deref().map(|p| p.counter()),
        )?;
        Ok(report.mechanism_used.map(|m| m.as_str().to_string()))
    }

    /// The file's bytes `[offset, offset + length)` written into a TLS
    /// session, within the shared rate.
    fn send_encrypted(&self, connection: &mut Connection, offset: u64, length: u64) -> Result<()> {
        use std::io::Write;
        let peer = self.url.to_string();
        let mut buffer = vec![0u8; (256 << 10).min(length as usize)];
        let mut done = 0u64;
        while done < length {
            let at = offset + done;
            let room = buffer.len().min((length - done) as usize);
            let read = rustix::io::pread(self.file.as_fd(), &mut buffer[..room], at)
                .map_err(|e| Error::io("pread", self.label, Some(at), e))?;
            if read == 0 {
                return Err(Error::Usage(format!(
                    "{}: the file shrank to {at} bytes while it was sent",
                    self.label
                )));
            }
            if let Some(bucket) = &self.rate {
                std::thread::sleep(bucket.delay_for(std::time::Instant::now(), read as u64));
                bucket.charge(read as u64, std::time::Instant::now());
            }
            connection
                .stream
                .write_all(&buffer[..read])
                .map_err(|e| Error::io("send (TLS) to", &peer, Some(at), e))?;
            if let Some(progress) = &self.options.progress {
                progress.add(read as u64);
            }
            done += read as u64;
        }
        connection
            .stream
            .flush()
            .map_err(|e| Error::io("send (TLS) to", &peer, Some(offset + length), e))
    }

    /// Sends `[offset, offset + length)` as the body on `connection` and
    /// reads the answer; `None` for a body with no bytes.
    pub(crate) fn body(
        &self,
        connection: &mut Connection,
        offset: u64,
        length: u64,
    ) -> Result<(Response, Option<String>)> {
        let mechanism = if length > 0 {
            match self.send_body(connection, offset, length) {
                Ok(mechanism) => mechanism,
                // A server that refuses early (a wrong token) answers and
                // closes while the body is still going out: its answer
                // says why, the broken pipe that follows does not.
                Err(sending) => {
                    return Err(match connection.read_response() {
                        Ok(response) if !matches!(response.status, 200..=202) => {
                            refusal(connection, response, self.url)
                        }
                        _ => sending,
                    })
                }
            }
        } else {
            None
        };
        let response = connection.read_response()?;
        if !matches!(response.status, 200..=202) {
            return Err(refusal(connection, response, self.url));
        }
        Ok((response, mechanism))
    }

    /// The whole file in one request on `connection`, kept alive for the
    /// next (its short answer read whole); returns the status.
    pub(crate) fn whole_on(&self, connection: &mut Connection) -> Result<u16> {
        let extra = Extra {
            keep: &self.keep,
            ..Extra::default()
        };
        send_head(connection, "PUT", self.url, self.token, self.length, extra)?;
        let (response, _) = self.body(connection, 0, self.length)?;
        connection.skip_short_body(&response, "a PUT answer")?;
        let status = response.status;
        Ok(status)
    }

    /// The whole file in one request.
    pub(crate) fn whole(&self) -> Result<PutReport> {
        let mut connection = self.start(self.length, "", "")?;
        let (response, mechanism) = self.body(&mut connection, 0, self.length)?;
        if response.status == 202 {
            return Err(Error::protocol(
                self.url.to_string(),
                "202 to a whole-file PUT",
            ));
        }
        Ok(self.report(response.status, mechanism, self.length, 0, 1, 1))
    }

    /// Bytes `span` of the file in pieces, those the server lacks only,
    /// as part `upload` of the file. The span being the whole file, one
    /// of the answers must say the file was completed; a part of it (a
    /// shard's) may end with 202, the other parts to come from others.
    pub(crate) fn in_pieces(&self, upload: &str, span: std::ops::Range<u64>) -> Result<PutReport> {
        let peer = self.url.to_string();
        let total = self.length;
        let mut asking = self.start(0, &format!("bytes */{total}"), upload)?;
        let (answer, _) = self.body(&mut asking, 0, 0)?;
        if answer.status != 202 {
            return Err(Error::protocol(
                &peer,
                format!("{} to a question about pieces", answer.status),
            ));
        }
        let received = received_ranges(answer.header("range").unwrap_or_default());
        drop(asking);
        let piece = self.options.piece;
        let length = span.end - span.start;
        let mut missing: Vec<(u64, u64)> = (0..length.div_ceil(piece))
            .map(|k| {
                let start = span.start + k * piece;
                (start, (start + piece).min(span.end))
            })
            .filter(|&(start, end)| !received.iter().any(|&(a, b)| a <= start && end <= b))
            .collect();
        if missing.is_empty() {
            // Everything arrived but nothing committed it (a journal from
            // a server killed at that moment): the last piece again does.
            missing.push((span.start + (length - 1) / piece * piece, span.end));
        }
        let sent: u64 = missing.iter().map(|(a, b)| b - a).sum();
        if let Some(progress) = &self.options.progress {
            progress.add(length - sent);
        }
        let pieces = missing.len();
        // Largest offsets last: the queue is popped from its end.
        missing.reverse();
        let queue = std::sync::Mutex::new(missing);
        let streams = self.options.streams.min(pieces).max(1);
        let outcomes: Vec<Result<(Option<u16>, Option<String>)>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..streams)
                .map(|_| {
                    scope.spawn(|| -> Result<(Option<u16>, Option<String>)> {
                        let (mut done, mut mechanism) = (None, None);
                        loop {
                            let Some((start, end)) =
                                queue.lock().unwrap_or_else(|p| p.into_inner()).pop()
                            else {
                                return Ok((done, mechanism));
                            };
                            let range = format!("bytes {start}-{}/{total}", end - 1);
                            let mut connection = self.start(end - start, &range, upload)?;
                            let (response, used) =
                                self.body(&mut connection, start, end - start)?;
                            mechanism = mechanism.or(used);
                            if response.status != 202 {
                                done = Some(response.status);
                            }
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("a put stream panicked"))
                .collect()
        });
        let (mut status, mut mechanism) = (None, None);
        for outcome in outcomes {
            let (done, used) = outcome?;
            status = status.or(done);
            mechanism = mechanism.or(used);
        }
        let status = match status {
            Some(status) => status,
            None if span.end - span.start < total => 202,
            None => {
                return Err(Error::protocol(
                    &peer,
                    "every piece was sent but the server did not complete the file",
                ))
            }
        };
        Ok(self.report(status, mechanism, sent, length - sent, pieces, streams))
    }

    fn report(
        &self,
        status: u16,
        mechanism: Option<String>,
        sent: u64,
        resumed: u64,
        pieces: usize,
        streams: usize,
    ) -> PutReport {
        PutReport {
            url: self.url.to_string(),
            bytes: self.length,
            status,
            mechanism,
            wall_ns: 0,
            sent_bytes: sent,
            resumed_bytes: resumed,
            pieces,
            streams,
        }
    }
}

/// The ranges of a `Range: bytes=A-B,C-D` answer, as `[start, end)`.
fn received_ranges(header: &str) -> Vec<(u64, u64)> {
    let Some(spans) = header.trim().strip_prefix("bytes=") else {
        return Vec::new();
    };
    spans
        .split(',')
        .filter_map(|span| {
            let (a, b) = span.trim().split_once('-')?;
            let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
            (a <= b).then(|| (a, b.saturating_add(1)))
        })
        .collect()
}

/// The error for a server's refusal, with its short body as the reason.
pub(crate) fn refusal(connection: &mut Connection, response: Response, url: &Url) -> Error {
    let peer = url.to_string();
    let detail = match response.content_length(&peer) {
        Ok(Some(n)) if n <= 4096 => connection.read_small_body(n).ok(),
        _ => None,
    };
    let reason = match detail {
        Some(body) => with_detail(&response.reason, response.status, &body),
        None => response.reason.clone(),
    };
    Error::Status {
        peer,
        status: response.status,
        reason,
    }
}

/// `reason: detail`, where detail is a short text body with the status line
/// a server (flexio's among them) may begin it with taken off, so the
/// message says "409 Conflict: a directory is there", not "409 409
/// Conflict: …".
fn with_detail(reason: &str, status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let detail = text
        .strip_prefix(&format!("{status} "))
        .and_then(|rest| rest.split_once(": ").map(|(_, detail)| detail))
        .unwrap_or(text);
    match (reason.is_empty(), detail.is_empty()) {
        (_, true) => reason.to_string(),
        (true, false) => detail.to_string(),
        (false, false) => format!("{reason}: {detail}"),
    }
}

#[cfg(test)]
mod refusal_tests {
    #[test]
    fn a_refusal_says_its_status_once_with_the_servers_detail() {
        let said = super::with_detail("Conflict", 409, b"409 Conflict: a directory is there\n");
        assert_eq!(said, "Conflict: a directory is there");
        assert_eq!(
            super::with_detail("Conflict", 409, b"plain words"),
            "Conflict: plain words"
        );
        assert_eq!(super::with_detail("Conflict", 409, b""), "Conflict");
    }
}
