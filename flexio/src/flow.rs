//! A flow — source, sink, range, mechanism, parameters: the builder a
//! caller fills in, the checks made before anything moves, and the decision
//! of `auto`. [`crate::engine`] runs it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::endpoint::{open_sink, open_source, EndpointKind, Sink, SinkOptions, Source};
use crate::engine::{Engine, RunSettings};
use crate::error::{Error, Result};
use crate::mechanism::MechanismName;
use crate::pace::Pacing;
pub use crate::params::Params;
use crate::profile::{Decision, Profile};
pub use crate::progress::Progress;
use crate::report::Report;

mod checks;
mod decide;
mod socket_ends;
use checks::verify_needs_seekable;

/// Called with the bound address of a `*-listen://` endpoint.
type ListenCallback<'a> = Box<dyn FnMut(&str) + 'a>;

/// One flow: where from, where to, which bytes, how.
///
/// # Examples
/// ```
/// use flexio::{Flow, MechanismName, Sink, Source};
/// let data = vec![7u8; 100_000];
/// let mut out = vec![0u8; 100_000];
/// let report = Flow::new(Source::Memory(&data), Sink::Memory(&mut out))
///     .via(MechanismName::ReadWrite)
///     .run()
///     .unwrap();
/// assert_eq!(report.measured.bytes, 100_000);
/// assert_eq!(out, data);
/// ```
pub struct Flow<'a> {
    source: Source<'a>,
    sink: Sink<'a>,
    pub(crate) offset: u64,
    length: Option<u64>,
    pub(crate) seek: u64,
    pub(crate) via: MechanismName,
    pub(crate) params: Params,
    in_place: bool,
    pub(crate) fsync: bool,
    pub(crate) strict: bool,
    pub(crate) verify: bool,
    measure: bool,
    pub(crate) progress: Arc<Progress>,
    pub(crate) call_limit: usize,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) pacing: Pacing,
    end_stream: bool,
    on_listen: Option<ListenCallback<'a>>,
    socket_buffer: Option<usize>,
    profile: Option<&'a Profile>,
    params_explicit: bool,
}

impl<'a> Flow<'a> {
    /// A flow of the whole source into the sink with `auto`.
    pub fn new(source: Source<'a>, sink: Sink<'a>) -> Self {
        Flow {
            source,
            sink,
            offset: 0,
            length: None,
            seek: 0,
            via: MechanismName::Auto,
            params: Params::default(),
            in_place: false,
            fsync: false,
            strict: false,
            verify: false,
            measure: true,
            progress: Arc::default(),
            call_limit: usize::MAX,
            idle_timeout: None,
            pacing: Pacing::default(),
            end_stream: true,
            on_listen: None,
            socket_buffer: None,
            profile: None,
            params_explicit: false,
        }
    }

    /// Start reading the source at this byte (seekable sources only).
    pub fn offset(mut self, offset: u64) -> Self {
        self.offset = offset;
        self
    }

    /// Move exactly this many bytes; a source that ends sooner is an error.
    pub fn length(mut self, length: u64) -> Self {
        self.length = Some(length);
        self
    }

    /// Start writing the sink at this byte (block devices, memory, and
    /// existing files written in place).
    pub fn seek(mut self, seek: u64) -> Self {
        self.seek = seek;
        self
    }

    /// The mechanism to use.
    pub fn via(mut self, mechanism: MechanismName) -> Self {
        self.via = mechanism;
        self
    }

    /// Mechanism parameters. Given explicitly, they also hold when `auto`
    /// takes its mechanism from a profile.
    pub fn params(mut self, params: Params) -> Self {
        self.params = params;
        self.params_explicit = true;
        self
    }

    /// The profile `auto` consults (see [`crate::profile`]); without one, or
    /// when it has no range for the flow, `auto` uses the built-in table.
    /// Checking that the profile fits this machine is the caller's choice
    /// ([`Profile::machine_differences`]).
    pub fn profile(mut self, profile: Option<&'a Profile>) -> Self {
        self.profile = profile;
        self
    }

    /// Write into the existing sink file instead of replacing it.
    pub fn in_place(mut self, in_place: bool) -> Self {
        self.in_place = in_place;
        self
    }

    /// fsync the sink (and, for a new file, its directory) before the flow
    /// counts as done; the time is inside the timed window.
    pub fn fsync(mut self, fsync: bool) -> Self {
        self.fsync = fsync;
        self
    }

    /// Make every fallback an error.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// After the flow, hash source range and sink (BLAKE3) and fail on a
    /// mismatch; outside the timed window.
    pub fn verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    /// Whether the report carries the process's CPU time, context
    /// switches and page faults, the host's CPU time and the source's
    /// page cache state (the default), or only bytes and wall time, with
    /// those figures zero. A caller that will not show them saves up to
    /// eight system calls a flow, a read of `/proc/stat` among them: for
    /// a copy of a few KiB, as much as its data costs.
    ///
    /// # Examples
    /// ```
    /// use flexio::{Flow, Sink, Source};
    /// let dir = tempfile::tempdir().unwrap();
    /// let (from, to) = (dir.path().join("a"), dir.path().join("b"));
    /// std::fs::write(&from, vec![7u8; 4096]).unwrap();
    /// let report = Flow::new(Source::path(&from), Sink::path(&to)).measure(false).run().unwrap();
    /// assert_eq!(report.measured.bytes, 4096);
    /// assert_eq!(report.measured.cpu_user_ns + report.measured.cpu_sys_ns, 0);
    /// ```
    pub fn measure(mut self, measure: bool) -> Self {
        self.measure = measure;
        self
    }

    /// Share progress with a watcher (a progress bar).
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = progress;
        self
    }

    /// Caps the bytes one kernel call may move (copy_file_range and
    /// sendfile move up to 1 GiB a call otherwise), so that a watcher of
    /// [`Progress`] sees it move several times a second.
    pub fn call_limit(mut self, bytes: usize) -> Self {
        self.call_limit = bytes.max(1);
        self
    }

    /// Fail the flow when it makes no progress for `limit`: a peer that
    /// connects and sends nothing, a reader that stops reading. The error
    /// ([`Error::IdleTimeout`]) names the endpoint waited for and its byte
    /// offset; a new file sink is removed as after any failure.
    ///
    /// Pipe and device ends are then used through non-blocking descriptors
    /// of their own and sockets get `SO_RCVTIMEO` / `SO_SNDTIMEO` (restored
    /// afterwards); without it nothing changes and nothing is paid.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use flexio::{Flow, Sink, Source};
    /// let data = [1u8; 10];
    /// let mut out = [0u8; 10];
    /// let report = Flow::new(Source::Memory(&data), Sink::Memory(&mut out))
    ///     .idle_timeout(Duration::from_secs(30))
    ///     .run()
    ///     .unwrap();
    /// assert_eq!(report.measured.bytes, 10);
    /// ```
    pub fn idle_timeout(mut self, limit: Duration) -> Self {
        self.idle_timeout = Some(limit);
        self
    }

    /// Paces the flow: a rate, a burst (the most bytes one call moves) and
    /// a schedule (pauses between runs of chunks). Calls wait in flexio's
    /// token bucket, or, for a TCP sink with [`crate::pace::PaceBy::Kernel`],
    /// the kernel paces (`SO_MAX_PACING_RATE`). The report's
    /// [`Report::pacing`] says which, and what rate was achieved.
    ///
    /// # Examples
    /// ```
    /// use flexio::pace::Pacing;
    /// use flexio::{Flow, Sink, Source};
    /// let data = vec![7u8; 64 << 10];
    /// let mut out = vec![0u8; 64 << 10];
    /// let pacing = Pacing::parse(Some("16M"), Some("16K"), None).unwrap();
    /// let report = Flow::new(Source::Memory(&data), Sink::Memory(&mut out))
    ///     .pacing(pacing)
    ///     .run()
    ///     .unwrap();
    /// assert!(report.pacing.unwrap().largest_call_bytes <= 16 << 10);
    /// ```
    pub fn pacing(mut self, pacing: Pacing) -> Self {
        self.pacing = pacing;
        self
    }

    /// Fixes SO_SNDBUF and SO_RCVBUF of the flow's TCP ends at `bytes`
    /// (4 KiB to 1 GiB) instead of the kernel's autotuning, once each
    /// connection is made; the report's `socket_buffers` says what the
    /// kernel gave (twice the request).
    ///
    /// # Errors
    /// [`Flow::run`] fails with a usage error for a size outside its
    /// bounds, and with an I/O error when the kernel caps the buffer below
    /// the request (`net.core.wmem_max` without CAP_NET_ADMIN).
    ///
    /// # Examples
    /// ```
    /// use flexio::{Address, Flow, Sink, Source};
    /// let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let address = listener.local_addr().unwrap();
    /// let reader = std::thread::spawn(move || {
    ///     let mut bytes = Vec::new();
    ///     std::io::Read::read_to_end(&mut listener.accept().unwrap().0, &mut bytes).unwrap();
    ///     bytes.len()
    /// });
    /// let data = vec![5u8; 1 << 20];
    /// let report = Flow::new(Source::Memory(&data), Sink::Address(Address::parse(&format!("tcp://{address}")).unwrap()))
    ///     .socket_buffer(64 << 10)
    ///     .run()
    ///     .unwrap();
    /// assert_eq!(report.socket_buffers.unwrap().send, 128 << 10);
    /// assert_eq!(reader.join().unwrap(), 1 << 20);
    /// ```
    pub fn socket_buffer(mut self, bytes: usize) -> Self {
        self.socket_buffer = Some(bytes);
        self
    }

    /// Whether a socket sink's sending side is shut down when the flow
    /// ends (the default: the peer reads the end of the stream). `false`
    /// leaves the connection open for further flows, as when several
    /// files follow one another over one connection, each with its
    /// length known to both sides; the caller then ends the stream.
    ///
    /// # Examples
    /// ```
    /// use std::io::Read;
    /// use std::net::{TcpListener, TcpStream};
    /// use flexio::{Flow, Sink, Source};
    /// let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    /// let stream = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    /// let (mut peer, _) = listener.accept().unwrap();
    /// for part in [&b"one"[..], b"two"] {
    ///     let fd = stream.try_clone().unwrap().into();
    ///     Flow::new(Source::Memory(part), Sink::Fd(fd, "tcp".into()))
    ///         .end_stream(false)
    ///         .run()
    ///         .unwrap();
    /// }
    /// stream.shutdown(std::net::Shutdown::Write).unwrap();
    /// let mut text = String::new();
    /// peer.read_to_string(&mut text).unwrap();
    /// assert_eq!(text, "onetwo");
    /// ```
    pub fn end_stream(mut self, end: bool) -> Self {
        self.end_stream = end;
        self
    }

    /// Called with the bound address when a `*-listen://` endpoint starts
    /// listening (useful with port 0).
    pub fn on_listen(mut self, hook: impl FnMut(&str) + 'a) -> Self {
        self.on_listen = Some(Box::new(hook));
        self
    }

    /// Runs the flow.
    ///
    /// # Errors
    /// [`Error::Usage`] and [`Error::UnsupportedPair`] for a flow described
    /// wrongly, parameters out of their bounds ([`Params::validate`])
    /// included (nothing is moved); [`Error::Io`], [`Error::SourceEnded`] and
    /// [`Error::MappingFault`] when moving fails (a regular-file sink is left
    /// as it was); [`Error::StrictRefusal`] when `strict` forbids a fallback;
    /// [`Error::VerifyMismatch`] when `verify` finds a difference.
    pub fn run(mut self) -> Result<Report> {
        let mut listen_hook = self.on_listen.take();
        let mut on_listen = |address: &str| {
            if let Some(hook) = listen_hook.as_mut() {
                hook(address)
            }
        };
        self.params.validate()?;
        self.pacing.validate()?;
        self.check_socket_buffer()?;
        self.check_before_opening()?;
        let source = open_source(
            std::mem::replace(&mut self.source, Source::Memory(&[])),
            &mut on_listen,
        )?;
        let total = self.checked_length(&source)?;
        let options = SinkOptions {
            in_place: self.in_place,
            source_identity: source.identity,
            source_label: source.label.clone(),
            mode: source.mode,
        };
        let sink = open_sink(
            std::mem::replace(&mut self.sink, Sink::Memory(&mut [])),
            &options,
            &mut on_listen,
        )?;
        self.check_sink(&sink, total)?;
        let socket_buffers = self.fix_socket_buffers(&source, &sink)?;
        self.check_not_onto_itself(&source, &sink, total)?;
        if self.verify && !(source.kind.is_seekable() && sink.kind.is_seekable()) {
            return Err(verify_needs_seekable(Some(source.kind), Some(sink.kind)));
        }
        let decision = self.decide(source.kind, sink.kind, total)?;
        if self.via == MechanismName::Auto && !self.params_explicit {
            self.params = decision.params.clone();
        }
        let mechanism = decision.mechanism;
        self.progress
            .total
            .store(total.unwrap_or(u64::MAX), Ordering::Relaxed);
        let settings = RunSettings {
            offset: self.offset,
            seek: self.seek,
            via: self.via,
            params: self.params,
            fsync: self.fsync,
            strict: self.strict,
            verify: self.verify,
            measure: self.measure,
            progress: self.progress,
            call_limit: self.call_limit,
            idle_timeout: self.idle_timeout,
            pacing: self.pacing,
            end_stream: self.end_stream,
        };
        let mut report = Engine::new(settings, source, sink, mechanism, total).run()?;
        report.decided_by = decision.decided_by;
        report.socket_buffers = socket_buffers;
        Ok(report)
    }

    /// What this flow would use and why, without opening sockets or moving
    /// a byte: kinds are told from the addresses, the size from `stat`
    /// (or `--length`).
    ///
    /// # Errors
    /// [`Error::Usage`] when a kind cannot be told without opening (a
    /// descriptor endpoint is fine; stdin that is a socket is not), and the
    /// errors of an unsupported pair.
    ///
    /// # Examples
    /// ```
    /// use flexio::{Flow, MechanismName, Sink, Source};
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("a"), [1u8; 4096]).unwrap();
    /// let decision = Flow::new(Source::path(dir.path().join("a")), Sink::path(dir.path().join("b")))
    ///     .plan()
    ///     .unwrap();
    /// assert_eq!(decision.size, Some(4096));
    /// assert_eq!(decision.mechanism, MechanismName::CopyFileRange);
    /// assert_eq!(decision.decided_by, "built-in table");
    /// ```
    pub fn plan(&self) -> Result<Decision> {
        if let Source::Address(crate::Address::Path(path)) = &self.source {
            // Say what is wrong with the path itself ("no such file") before
            // saying its kind cannot be told.
            std::fs::metadata(path)
                .map_err(|e| Error::io("cannot stat", format!("'{}'", path.display()), None, e))?;
        }
        self.check_before_opening()?;
        if let (
            Source::Address(crate::Address::Path(from)),
            Sink::Address(crate::Address::Path(to)),
        ) = (&self.source, &self.sink)
        {
            let same = |a: &std::fs::Metadata, b: &std::fs::Metadata| {
                use std::os::unix::fs::MetadataExt;
                (a.dev(), a.ino()) == (b.dev(), b.ino())
            };
            if let (Ok(a), Ok(b)) = (std::fs::metadata(from), std::fs::metadata(to))
                && same(&a, &b)
                && !self.in_place
            {
                return Err(Error::usage(format!(
                    "'{}' and '{}' are the same file",
                    from.display(),
                    to.display()
                )));
            }
        }
        let source_kind = self
            .source_kind_unopened()
            .ok_or_else(|| Error::usage("cannot tell the source's kind without opening it"))?;
        let sink_kind = self
            .sink_kind_unopened()
            .ok_or_else(|| Error::usage("cannot tell the sink's kind without opening it"))?;
        let size = match (&self.source, self.length) {
            (_, Some(length)) => Some(length),
            (Source::Memory(bytes), None) => Some((bytes.len() as u64).saturating_sub(self.offset)),
            // Only a file or block device is opened (for its size): opening
            // a FIFO for reading would wait for a writer, and a stream has
            // no size to find.
            (Source::Address(crate::Address::Path(path)), None)
                if matches!(source_kind, EndpointKind::File | EndpointKind::BlockDevice) =>
            {
                let label = path.display().to_string();
                let file =
                    std::fs::File::open(path).map_err(|e| Error::io("open", &label, None, e))?;
                let size = rustix::fs::seek(&file, rustix::fs::SeekFrom::End(0))
                    .map_err(|e| Error::io("seek", &label, None, e))?;
                Some(size.saturating_sub(self.offset))
            }
            _ => None,
        };
        self.decide(source_kind, sink_kind, size)
    }
}
