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
//! Bodies go file→socket with the [`Mover`] (sendfile). The server is a
//! thread per connection: a chain link has a few downstreams, not
//! thousands. Once the file is whole the relay goes on serving until no
//! connection has been open for `linger`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use flexio::range::{Mover, NewFile, RangeEnd, RangeRequest};
use flexio::{EndpointKind, MechanismName};

use super::mirror::{first_manifest, piece_size, reports, servers_of, Work};
use super::sink::{check_space, destination_for};
use super::{GetOptions, MirroredReport};
use crate::error::{Error, Result};
use crate::manifest::{Manifest, ManifestEntry, CHUNK_SIZE, MANIFEST_SCHEMA_VERSION};
use crate::ranges::{resolve, RangeAnswer};

/// The most downstream connections a relay serves at once (a thread
/// each). At the cap a connection waiting for a request makes way for a
/// new one; only when every one is busy is the new one answered 503.
pub const MAX_DOWNSTREAMS: usize = 64;

/// How long a downstream connection may wait for its next request head
/// (less when `--timeout` is less): an idle connection is reaped, so idle
/// ones cannot hold the cap.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A chain link's listening socket, bound before the fetch starts (so its
/// address can be given downstream first).
pub struct Relay {
    listener: TcpListener,
}

/// Which pieces are whole and checked, for the requests waiting on them.
struct Progress {
    pieces: Mutex<Vec<bool>>,
    changed: Condvar,
    failed: AtomicBool,
    piece: u64,
}

impl Progress {
    fn mark(&self, offset: u64) {
        self.pieces.lock().unwrap()[(offset / self.piece) as usize] = true;
        self.changed.notify_all();
    }

    fn fail(&self) {
        self.failed.store(true, Ordering::Release);
        self.changed.notify_all();
    }

    /// Waits until the piece holding byte `offset` is there; `false` when
    /// the fetch failed first.
    fn wait(&self, offset: u64) -> bool {
        let index = (offset / self.piece) as usize;
        let mut pieces = self.pieces.lock().unwrap();
        while !pieces[index] {
            if self.failed.load(Ordering::Acquire) {
                return false;
            }
            pieces = self
                .changed
                .wait_timeout(pieces, Duration::from_millis(500))
                .unwrap()
                .0;
        }
        true
    }
}

/// One downstream connection, as the accepting thread sees it.
struct Downstream {
    stream: TcpStream,
    /// Waiting for a request (not answering one): may make way.
    waiting: bool,
}

/// What the serving threads share.
struct Shared<'a> {
    file: std::os::fd::BorrowedFd<'a>,
    label: &'a str,
    name: &'a str,
    entry: &'a ManifestEntry,
    manifest: Vec<u8>,
    progress: &'a Progress,
    stop: AtomicBool,
    /// The downstream connections, and whether each waits for a request:
    /// to end those still open when the relay stops (a thread reading its
    /// next request would otherwise hold the end up for its timeout), and
    /// to make way for a new one at the cap.
    streams: Mutex<std::collections::HashMap<u64, Downstream>>,
    open_connections: AtomicUsize,
    /// Requests being answered: only these keep the relay from ending.
    busy: AtomicUsize,
    /// Nanoseconds since `epoch` of the last time a request was answered.
    last_answer_ns: AtomicU64,
    epoch: Instant,
    timeout: Duration,
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
        Ok(Relay { listener })
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
        let name = first
            .target
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let entry = first_manifest(&servers, options)?;
        let total = entry.size;
        check_space(&destination, total)?;
        let file = NewFile::create(&destination, entry.mode & 0o777)?;
        let piece = piece_size(options);
        let progress = Progress {
            pieces: Mutex::new(vec![false; total.div_ceil(piece) as usize]),
            changed: Condvar::new(),
            failed: AtomicBool::new(false),
            piece,
        };
        let manifest = serde_json::to_vec(&Manifest {
            schema_version: MANIFEST_SCHEMA_VERSION,
            chunk_size: CHUNK_SIZE,
            entries: vec![ManifestEntry {
                path: name.clone(),
                path_percent_encoded: false,
                ..entry.clone()
            }],
        })
        .expect("a manifest serialises");
        let shared = Shared {
            file: file.fd(),
            label: &label,
            name: &name,
            entry: &entry,
            manifest,
            progress: &progress,
            stop: AtomicBool::new(false),
            streams: Mutex::new(std::collections::HashMap::new()),
            open_connections: AtomicUsize::new(0),
            busy: AtomicUsize::new(0),
            last_answer_ns: AtomicU64::new(0),
            epoch: Instant::now(),
            timeout: options.timeout,
        };
        let arrived = |offset: u64| progress.mark(offset);
        let fetched = std::thread::scope(|scope| {
            scope.spawn(|| shared.accept(&self.listener));
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
                progress.fail();
            } else {
                // Serve on until downstreams are done with it.
                shared.linger(linger);
            }
            shared.stop.store(true, Ordering::Release);
            for (_, downstream) in shared.streams.lock().unwrap().drain() {
                let _ = downstream.stream.shutdown(std::net::Shutdown::Both);
            }
            fetched
        });
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
}

impl Shared<'_> {
    /// Accepts downstream connections, a thread each, until told to stop.
    fn accept(&self, listener: &TcpListener) {
        let _ = listener.set_nonblocking(true);
        let mut accepted: u64 = 0;
        std::thread::scope(|scope| {
            while !self.stop.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        if self.open_connections.fetch_add(1, Ordering::AcqRel) >= MAX_DOWNSTREAMS
                            && !self.make_way()
                        {
                            let _ = stream.set_nonblocking(false);
                            let _ = self.answer(
                                &stream,
                                503,
                                "Service Unavailable",
                                "too many downstream connections",
                            );
                            self.open_connections.fetch_sub(1, Ordering::AcqRel);
                            continue;
                        }
                        accepted += 1;
                        let id = accepted;
                        if let Ok(clone) = stream.try_clone() {
                            let downstream = Downstream {
                                stream: clone,
                                waiting: true,
                            };
                            self.streams.lock().unwrap().insert(id, downstream);
                        }
                        scope.spawn(move || {
                            let _ = self.serve(stream, id);
                            self.streams.lock().unwrap().remove(&id);
                            self.open_connections.fetch_sub(1, Ordering::AcqRel);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
    }

    /// Ends the connection that has waited longest for a request, to
    /// make way for a new one at the cap; `false` when every connection
    /// is busy answering.
    fn make_way(&self) -> bool {
        let streams = self.streams.lock().unwrap();
        let oldest = streams
            .iter()
            .filter(|(_, downstream)| downstream.waiting)
            .min_by_key(|(id, _)| **id);
        match oldest {
            Some((_, downstream)) => {
                // Its thread sees the end, leaves and uncounts it.
                let _ = downstream.stream.shutdown(std::net::Shutdown::Both);
                true
            }
            None => false,
        }
    }

    /// Marks connection `id` as waiting for a request, or not.
    fn set_waiting(&self, id: u64, waiting: bool) {
        if let Some(downstream) = self.streams.lock().unwrap().get_mut(&id) {
            downstream.waiting = waiting;
        }
    }

    /// Returns once no request has been answered for `linger`. Idle
    /// connections do not count: a downstream that opens one every half
    /// second without asking for anything held the relay open for ever.
    fn linger(&self, linger: Duration) {
        let whole_at = self.epoch.elapsed();
        loop {
            let busy = self.busy.load(Ordering::Acquire);
            let last = Duration::from_nanos(self.last_answer_ns.load(Ordering::Acquire));
            let quiet_since = last.max(whole_at);
            if busy == 0 && self.epoch.elapsed() >= quiet_since.saturating_add(linger) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One downstream connection: requests until it closes, is idle for
    /// the timeout, or asks for what is not here.
    fn serve(&self, stream: TcpStream, id: u64) -> std::io::Result<()> {
        stream.set_nonblocking(false)?;
        let mut mover = Mover::new();
        loop {
            let mut head = Vec::new();
            self.set_waiting(id, true);
            let wait = self.timeout.min(HEAD_TIMEOUT);
            let deadline = crate::deadline::after(Instant::now(), wait);
            let step = crate::head::read_until(
                stream.as_fd(),
                &mut head,
                crate::head::request_complete,
                deadline,
            )?;
            if !matches!(step, crate::head::Step::Complete) {
                return Ok(());
            }
            self.set_waiting(id, false);
            self.busy.fetch_add(1, Ordering::AcqRel);
            let answered = self.answer_request(&stream, &head, &mut mover);
            self.last_answer_ns
                .store(self.epoch.elapsed().as_nanos() as u64, Ordering::Release);
            self.busy.fetch_sub(1, Ordering::AcqRel);
            if !answered? {
                return Ok(());
            }
        }
    }

    /// Answers one request; `false` when the connection must end.
    fn answer_request(
        &self,
        stream: &TcpStream,
        head: &[u8],
        mover: &mut Mover,
    ) -> std::io::Result<bool> {
        let mut headers = [httparse::EMPTY_HEADER; crate::MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        if !matches!(request.parse(head), Ok(httparse::Status::Complete(_))) {
            self.answer(stream, 400, "Bad Request", "a malformed request head")?;
            return Ok(false);
        }
        let method = request.method.unwrap_or_default();
        let target = request.path.unwrap_or_default();
        let header = |name: &str| {
            request
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .and_then(|h| std::str::from_utf8(h.value).ok())
        };
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        if method != "GET" && method != "HEAD" {
            self.answer(stream, 405, "Method Not Allowed", "a relay only serves")?;
            return Ok(false);
        }
        if path.strip_prefix('/') != Some(self.name) {
            self.answer(stream, 404, "Not Found", "a relay serves one file")?;
            return Ok(true);
        }
        if query == "manifest" {
            self.head(
                stream,
                "200 OK",
                self.manifest.len() as u64,
                "Content-Type: application/json\r\n",
            )?;
            if method == "GET" {
                write_all(stream, &self.manifest)?;
            }
            return Ok(true);
        }
        let total = self.entry.size;
        let (status, start, length, range) =
            match resolve(header("range").unwrap_or_default(), total) {
                RangeAnswer::Parts(parts) if parts.len() == 1 => {
                    let (start, length) = parts[0];
                    let range = format!(
                        "Content-Range: bytes {start}-{}/{total}\r\n",
                        start + length - 1
                    );
                    ("206 Partial Content", start, length, range)
                }
                RangeAnswer::Unsatisfiable => {
                    let range = format!("Content-Range: bytes */{total}\r\n");
                    self.head(stream, "416 Range Not Satisfiable", 0, &range)?;
                    return Ok(true);
                }
                // One range at a time, or the whole file.
                _ => ("200 OK", 0, total, String::new()),
            };
        self.head(stream, status, length, &range)?;
        if method == "GET" {
            return self.body(stream, mover, start, length);
        }
        Ok(true)
    }

    /// Sends bytes `start..start + length`, each piece once it is here;
    /// `false` when the fetch failed and the connection must end.
    fn body(
        &self,
        stream: &TcpStream,
        mover: &mut Mover,
        start: u64,
        length: u64,
    ) -> std::io::Result<bool> {
        let end = start + length;
        let mut at = start;
        let piece = self.progress.piece;
        while at < end {
            if !self.progress.wait(at) {
                return Ok(false);
            }
            let upto = ((at / piece + 1) * piece).min(end);
            let source = RangeEnd::with_kind(self.file, EndpointKind::File, self.label);
            let sink = RangeEnd::with_kind(stream.as_fd(), EndpointKind::Tcp, "a downstream");
            let mut request = RangeRequest::new(at, 0, Some(upto - at)).via(MechanismName::Auto);
            request.idle_timeout = Some(self.timeout);
            mover
                .move_range(&source, &sink, &request, None)
                .map_err(std::io::Error::other)?;
            at = upto;
        }
        Ok(true)
    }

    fn head(
        &self,
        stream: &TcpStream,
        status: &str,
        length: u64,
        extra: &str,
    ) -> std::io::Result<()> {
        let head = format!(
            "HTTP/1.1 {status}\r\nServer: flexio\r\nAccept-Ranges: bytes\r\nContent-Length: {length}\r\n{extra}\r\n"
        );
        write_all(stream, head.as_bytes())
    }

    /// A short text answer, after which the connection closes.
    fn answer(
        &self,
        stream: &TcpStream,
        status: u16,
        reason: &str,
        text: &str,
    ) -> std::io::Result<()> {
        let body = format!("{text}\n");
        let head = format!(
            "HTTP/1.1 {status} {reason}\r\nServer: flexio\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        write_all(stream, head.as_bytes())
    }
}

fn write_all(stream: &TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    std::io::Write::write_all(&mut &*stream, bytes)
}
