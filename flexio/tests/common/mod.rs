//! The engine tester and the fixtures every engine test shares.
//!
//! After ripgrep's `SearcherTester`: one driver, [`EngineTester`], runs the
//! same cases through every (source kind, sink kind, mechanism) triple that a
//! mechanism says it supports, and expects the same bytes out of each. A
//! mechanism that moves one byte wrong, drops a tail, or quietly falls back
//! shows up as a failure naming the triple and the case.
//!
//! Endpoints are real: files in a scratch directory on the crate's target
//! file system, loop devices made with `losetup` (root only), TCP over
//! loopback, Unix socket pairs, pipes, and memory. A stream source is fed by
//! a thread that writes the case's bytes and closes; a stream sink is drained
//! by a thread that hashes (BLAKE3) what arrives until end of stream.
//!
//! Tests that need root call [`require_root`]; tests that need a kernel
//! feature probe for it and call [`require_feature`]. Both print
//! `skipped: ...` and return `false` — unless `FLEXIO_TEST_PRIVILEGED=1`
//! is set (CI on a machine that has everything), which turns a skip into a
//! failure.

// Each test crate uses a different part of this module.
#![allow(dead_code, unused_imports)]

use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use flexio::{CopyKernel, EndpointKind, Error, Flow, MechanismName, Params, Report, Sink, Source};
use rustix::fs::SeekFrom;

pub const KIB: usize = 1 << 10;
pub const MIB: usize = 1 << 20;

pub use flexio_testkit::{
    is_root, require_feature, require_root, require_tool, skipped, skips_forbidden, PRIVILEGED_ENV,
};

/// A scratch directory on the file system of the crate's target directory
/// (a real disk file system with holes and `O_DIRECT`, not a tmpfs `/tmp`).
pub fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("flexio-test-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create a scratch directory under CARGO_TARGET_TMPDIR")
}

// ---------------------------------------------------------------------------
// Data

const POOL_LEN: usize = 64 * MIB + 64 * KIB;

/// 64 MiB + 64 KiB of deterministic, non-repeating bytes (the BLAKE3 output
/// stream of a fixed key), made once per test binary.
fn pool() -> &'static [u8] {
    static POOL: OnceLock<Vec<u8>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut bytes = vec![0; POOL_LEN];
        blake3::Hasher::new()
            .update(b"flexio engine tests")
            .finalize_xof()
            .fill(&mut bytes);
        bytes
    })
}

/// `len` bytes (at most 64 MiB) of test data. Different `salt`s give
/// different bytes at every position, so that stale content left by an
/// earlier case never passes for this one.
pub fn data(len: usize, salt: usize) -> &'static [u8] {
    assert!(len <= 64 * MIB, "test data is at most 64 MiB, not {len}");
    let shift = salt.wrapping_mul(4099) % (64 * KIB);
    &pool()[shift..shift + len]
}

/// BLAKE3 of a byte slice.
pub fn hash(bytes: &[u8]) -> blake3::Hash {
    blake3::hash(bytes)
}

/// Where two equal-length byte strings first differ, for messages.
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or((a.len() != b.len()).then_some(a.len().min(b.len())))
}

/// Reads `reader` to its end; returns the byte count and their BLAKE3.
pub fn drain_and_hash(mut reader: impl Read) -> io::Result<(u64, blake3::Hash)> {
    let mut hasher = blake3::Hasher::new();
    let mut buffer = vec![0; MIB];
    let mut count = 0u64;
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return Ok((count, hasher.finalize())),
            Ok(n) => {
                hasher.update(&buffer[..n]);
                count += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes all of `bytes` and closes the writer.
pub fn feed(mut writer: impl Write, bytes: &[u8]) -> io::Result<()> {
    writer.write_all(bytes)?;
    writer.flush()
}

/// Writes `bytes` in pieces of `piece` bytes (all at once when 0), so that
/// the reader's reads come back short, then flushes.
pub fn feed_in_pieces(mut writer: impl Write, bytes: &[u8], piece: usize) -> io::Result<()> {
    if piece == 0 {
        return feed(writer, bytes);
    }
    for part in bytes.chunks(piece) {
        writer.write_all(part)?;
    }
    writer.flush()
}

/// Writes a whole file.
pub fn write_file(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Reads `len` bytes of a file or device from `offset`.
pub fn read_range(path: &Path, offset: u64, len: usize) -> Vec<u8> {
    let file = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut bytes = vec![0; len];
    file.read_exact_at(&mut bytes, offset)
        .unwrap_or_else(|e| panic!("read {} at {offset}: {e}", path.display()));
    bytes
}

/// Writes `bytes` into an existing file or device at `offset`.
pub fn write_range(path: &Path, offset: u64, bytes: &[u8]) {
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.write_all_at(bytes, offset)
        .unwrap_or_else(|e| panic!("write {} at {offset}: {e}", path.display()));
    file.sync_all()
        .unwrap_or_else(|e| panic!("sync {}: {e}", path.display()));
}

/// The files a failed flow may have left in `dir`: flexio's temporary sink
/// files are named `.<name>.flexio-XXXXXX`.
pub fn leftover_temp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.') && name.contains(".flexio-"))
        .collect()
}

// ---------------------------------------------------------------------------
// Stream endpoints

/// Two ends of a TCP connection over loopback.
pub fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let address = listener.local_addr().unwrap();
    let connected = TcpStream::connect(address).expect("connect over loopback");
    let (accepted, _) = listener.accept().expect("accept over loopback");
    (connected, accepted)
}

/// Two ends of a Unix stream socket.
pub fn unix_pair() -> (UnixStream, UnixStream) {
    UnixStream::pair().expect("socketpair")
}

/// A pipe: (read end, write end).
pub fn pipe() -> (OwnedFd, OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe")
}

// ---------------------------------------------------------------------------
// Privileged fixtures

pub use flexio_sys::loop_device::LoopDevice;

/// Attaches a new loop device to `backing`, a file of `size` bytes created
/// here; `Err` says why the kernel or the tools refused.
fn attach_new(backing: &Path, size: u64) -> Result<LoopDevice, String> {
    let file = File::create(backing).map_err(|e| format!("create backing file: {e}"))?;
    file.set_len(size)
        .map_err(|e| format!("size backing file: {e}"))?;
    drop(file);
    LoopDevice::attach(backing, false)
}

/// A loop device of `size` bytes backed by a file in `dir`, or `None` (with
/// the skip printed) when not root or when loop devices are unavailable.
pub fn loop_device(dir: &Path, name: &str, size: u64, reason: &str) -> Option<LoopDevice> {
    if !require_root(reason) {
        return None;
    }
    match attach_new(&dir.join(name), size) {
        Ok(device) => Some(device),
        Err(why) => {
            require_feature(reason, Err(format!("no loop device ({why})")));
            None
        }
    }
}

/// A tmpfs mounted on a scratch directory, unmounted on drop (also when the
/// test panics).
pub struct Tmpfs {
    // An Option so that Drop can unmount before the directory is removed.
    dir: Option<tempfile::TempDir>,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it).
    pub fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = scratch_dir();
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("run mount: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "mount -t tmpfs failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(Tmpfs { dir: Some(dir) })
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("mounted").path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else { return };
        let unmounted = Command::new("umount")
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            // Something still holds a file open there (a failing test);
            // detach lazily so that the mount never outlives the test.
            let _ = Command::new("umount").arg("-l").arg(dir.path()).status();
        }
        drop(dir);
    }
}

/// A mounted tmpfs of `size`, or `None` (with the skip printed) when not
/// root or when mounting is refused.
pub fn tmpfs(size: &str, reason: &str) -> Option<Tmpfs> {
    if !require_root(reason) {
        return None;
    }
    match Tmpfs::mount(size) {
        Ok(mount) => Some(mount),
        Err(why) => {
            require_feature(reason, Err(why));
            None
        }
    }
}

// ---------------------------------------------------------------------------
// Running one case in a child process

const CHILD_ENV: &str = "FLEXIO_TEST_CHILD_MECHANISM";
const CHILD_DONE: &str = "flexio-test-child-case-done";

/// In a child started by [`run_in_child`]: the mechanism it is to test.
pub fn child_mechanism() -> Option<MechanismName> {
    let name = std::env::var(CHILD_ENV).ok()?;
    Some(name.parse().expect("a mechanism name from the parent test"))
}

/// In a child: says that the case ran to its end (the parent checks, so that
/// a filter that matched no test cannot pass for a passing case).
pub fn child_done() {
    println!("{CHILD_DONE}");
}

/// Runs test `test_name` (libtest's name for it, as
/// [`flexio_testkit::test_name`] makes it) of this test binary again in a
/// child process with
/// [`child_mechanism`] set to `mechanism` (and `env` set), so that a crash
/// — a SIGBUS from a mapping whose file shrank or filled its file system —
/// fails this one case with its signal instead of killing every test.
pub fn run_in_child(
    test_name: &str,
    mechanism: MechanismName,
    env: &[(&str, &Path)],
) -> Result<(), String> {
    let mut command = Command::new(std::env::current_exe().expect("current_exe"));
    command
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mechanism.as_str())
        .env("RUST_BACKTRACE", "0");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("start the test binary again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The child's panic message, without libtest's chatter around it.
    let tail = |text: &str| {
        let lines: Vec<&str> = text
            .lines()
            .filter(|line| {
                !line.trim().is_empty()
                    && !line.starts_with("running ")
                    && !line.starts_with("test ")
                    && !line.starts_with("failures:")
                    && !line.starts_with("    ")
                    && !line.starts_with("note: ")
            })
            .collect();
        lines[lines.len().saturating_sub(15)..].join("\n    ")
    };
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = output.status.signal() {
        let name = match signal {
            7 => " (SIGBUS)",
            11 => " (SIGSEGV)",
            6 => " (SIGABRT)",
            _ => "",
        };
        return Err(format!(
            "{mechanism}: the process was killed by signal {signal}{name}\n    {}",
            tail(&stderr)
        ));
    }
    if !output.status.success() {
        return Err(format!(
            "{mechanism}: {}\n    {}",
            output.status,
            tail(&format!("{stdout}\n{stderr}"))
        ));
    }
    if !stdout.contains(CHILD_DONE) {
        return Err(format!(
            "{mechanism}: the child ran no case (is the test still named {test_name}?)"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Checking results

/// Checks what every successful flow must report: the bytes, the mechanism
/// asked for, and that it ran without a fallback.
pub fn check_report(report: &Report, mechanism: MechanismName, bytes: u64) -> Result<(), String> {
    if report.measured.bytes != bytes {
        return Err(format!("report.bytes {} != {bytes}", report.measured.bytes));
    }
    if report.mechanism_requested != mechanism {
        return Err(format!(
            "report.mechanism_requested {} != {mechanism}",
            report.mechanism_requested
        ));
    }
    if let Some(fallback) = report.fallbacks.first() {
        return Err(format!(
            "{} fell back to {} at byte {} ({} refused: {}); this flow should run as asked",
            fallback.from, fallback.to, fallback.at_byte, fallback.operation, fallback.reason
        ));
    }
    if report.mechanism_used != mechanism {
        return Err(format!(
            "report.mechanism_used {} != {mechanism} without a fallback",
            report.mechanism_used
        ));
    }
    Ok(())
}

/// Compares bytes and says where they first differ.
pub fn check_bytes(what: &str, actual: &[u8], expected: &[u8]) -> Result<(), String> {
    if actual == expected {
        return Ok(());
    }
    Err(format!(
        "{what}: {} bytes differ from the {} expected, first at byte {:?}",
        actual.len(),
        expected.len(),
        first_difference(actual, expected)
    ))
}

/// A one-line error message, for errors a user reads.
pub fn check_one_line(error: &Error) -> Result<(), String> {
    let text = error.to_string();
    if text.is_empty() || text.contains('\n') {
        return Err(format!("error message is not one line: {text:?}"));
    }
    Ok(())
}

/// The data segments of a file, `(offset, length)`, by SEEK_DATA/SEEK_HOLE.
pub fn data_segments(file: &File) -> Vec<(u64, u64)> {
    let end = file.metadata().unwrap().len();
    let mut segments = Vec::new();
    let mut at = 0;
    while at < end {
        let data = match rustix::fs::seek(file.as_fd(), SeekFrom::Data(at)) {
            Ok(data) => data,
            Err(rustix::io::Errno::NXIO) => break,
            Err(e) => panic!("SEEK_DATA: {e}"),
        };
        let hole = rustix::fs::seek(file.as_fd(), SeekFrom::Hole(data)).expect("SEEK_HOLE");
        segments.push((data, hole - data));
        at = hole;
    }
    segments
}

// ---------------------------------------------------------------------------
// The tester

/// The endpoint kinds the tester drives.
pub const DRIVEN_KINDS: [EndpointKind; 6] = [
    EndpointKind::File,
    EndpointKind::BlockDevice,
    EndpointKind::Tcp,
    EndpointKind::Unix,
    EndpointKind::Pipe,
    EndpointKind::Memory,
];

/// Cases larger than this run with each mechanism's defaults only: the
/// other parameter sets are driven over the page and chunk edges.
const LARGE_CASE: usize = MIB;

/// One case: this many bytes, moved with this chunk size — and, for a
/// seekable source, where in the file they lie; for a stream source, how
/// the peer writes them and whether the flow is told their length.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub len: usize,
    pub chunk: usize,
    /// Bytes of a seekable source before the case's (the flow's offset).
    pub source_offset: usize,
    /// Bytes of a seekable source after the case's; the flow is then given
    /// the case's length, else it runs to the end of the file (where the
    /// last direct read comes back short).
    pub bytes_after: usize,
    /// A stream source's peer writes in pieces of this many bytes (reads
    /// come back short); 0: all at once.
    pub stream_piece: usize,
    /// A stream source's flow is given the case's length instead of
    /// reading to the peer's close.
    pub stream_length: bool,
}

impl Case {
    /// `len` bytes with `chunk`: a whole file, a stream written at once
    /// and read to its close.
    pub fn new(len: usize, chunk: usize) -> Case {
        Case {
            len,
            chunk,
            source_offset: 0,
            bytes_after: 0,
            stream_piece: 0,
            stream_length: false,
        }
    }

    /// The same bytes inside a file: `before` bytes ahead of them and
    /// `after` behind.
    pub fn within_file(self, before: usize, after: usize) -> Case {
        Case {
            source_offset: before,
            bytes_after: after,
            ..self
        }
    }

    /// The same bytes from a peer that writes `piece` bytes at a time, the
    /// flow told their length when `known_length`.
    pub fn streamed(self, piece: usize, known_length: bool) -> Case {
        Case {
            stream_piece: piece,
            stream_length: known_length,
            ..self
        }
    }

    /// Whether this case means anything for a `kind` source: a placement
    /// in a file only for seekable sources, a way of writing a stream only
    /// for stream sources.
    fn applies_to(&self, kind: EndpointKind) -> bool {
        let placed = self.source_offset > 0 || self.bytes_after > 0;
        let streamed = self.stream_piece > 0 || self.stream_length;
        let seekable = matches!(kind, EndpointKind::File | EndpointKind::BlockDevice);
        let stream = matches!(
            kind,
            EndpointKind::Tcp | EndpointKind::Unix | EndpointKind::Pipe
        );
        (!placed || seekable) && (!streamed || stream)
    }

    /// How a failure names the case beyond its size and chunk.
    fn shape(&self) -> String {
        let mut shape = String::new();
        if self.source_offset > 0 || self.bytes_after > 0 {
            let _ = write!(
                shape,
                ", at {} with {} after",
                self.source_offset, self.bytes_after
            );
        }
        if self.stream_piece > 0 {
            let _ = write!(shape, ", written {} at a time", self.stream_piece);
        }
        if self.stream_length {
            shape.push_str(", length given");
        }
        shape
    }
}

/// The standard cases: the page and chunk edges with a 64 KiB chunk, and
/// 64 MiB with the default chunk.
pub fn standard_cases() -> Vec<Case> {
    let chunk = 64 * KIB;
    let mut cases: Vec<Case> = [
        0,
        1,
        4095,
        4096,
        4097,
        chunk - 1,
        chunk,
        chunk + 1,
        3 * chunk + 17,
    ]
    .into_iter()
    .map(|len| Case::new(len, chunk))
    .collect();
    cases.push(Case::new(64 * MIB, Params::default().chunk));
    cases
}

/// One parameter set a mechanism is driven with, beside the case's chunk:
/// the settings of the parameters it reads that change which code runs.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// How the case names it (`qd 1`, `direct`, `pipe 64 KiB`).
    pub label: &'static str,
    pub queue_depth: u32,
    pub pipe_size: usize,
    pub direct: bool,
    /// How a memory-to-memory flow copies; a config with another kernel
    /// than `memcpy` runs for memory -> memory only (no other pair copies
    /// in user space).
    pub copy_kernel: CopyKernel,
}

impl Config {
    /// The defaults: what a flow without parameters runs.
    pub const DEFAULT: Config = Config {
        label: "defaults",
        queue_depth: 32,
        pipe_size: 1 << 20,
        direct: false,
        copy_kernel: CopyKernel::Memcpy,
    };

    fn params(self, chunk: usize) -> Params {
        Params {
            chunk,
            queue_depth: self.queue_depth,
            pipe_size: self.pipe_size,
            direct: self.direct,
            copy_kernel: self.copy_kernel,
        }
    }

    /// Whether this config means anything for `source` -> `sink`.
    fn applies(self, source: EndpointKind, sink: EndpointKind) -> bool {
        self.copy_kernel == CopyKernel::Memcpy
            || (source == EndpointKind::Memory && sink == EndpointKind::Memory)
    }
}

/// The parameter sets that matter for `mechanism`, by what its descriptor
/// says it reads: io_uring with one request in flight and with O_DIRECT,
/// splice through a small pipe, every copy kernel this CPU has (memory to
/// memory only, see [`Config::applies`]), and the defaults for every mechanism;
/// `thorough` adds io_uring with two requests in flight, and O_DIRECT with
/// one (the tests of io_uring itself).
pub fn configs(mechanism: MechanismName, thorough: bool) -> Vec<Config> {
    let reads = mechanism.descriptor().map(|d| d.reads).unwrap_or_default();
    let mut configs = vec![Config::DEFAULT];
    if reads.queue_depth {
        configs.push(Config {
            label: "qd 1",
            queue_depth: 1,
            ..Config::DEFAULT
        });
    }
    if reads.queue_depth && thorough {
        configs.push(Config {
            label: "qd 2",
            queue_depth: 2,
            ..Config::DEFAULT
        });
    }
    if reads.direct {
        configs.push(Config {
            label: "direct",
            direct: true,
            ..Config::DEFAULT
        });
    }
    if reads.direct && reads.queue_depth && thorough {
        configs.push(Config {
            label: "direct, qd 1",
            direct: true,
            queue_depth: 1,
            ..Config::DEFAULT
        });
    }
    if reads.copy_kernel {
        for copy_kernel in CopyKernel::available() {
            if copy_kernel != CopyKernel::Memcpy {
                configs.push(Config {
                    label: copy_kernel.as_str(),
                    copy_kernel,
                    ..Config::DEFAULT
                });
            }
        }
    }
    if reads.pipe_size {
        configs.push(Config {
            label: "pipe 64 KiB",
            pipe_size: 64 << 10,
            ..Config::DEFAULT
        });
    }
    configs
}

/// `FLEXIO_TEST_FILTER`: run only the tester's cases whose label (as the
/// failures print it: `file -> pipe via splice [pipe 64 KiB], 4097 bytes,
/// chunk 65536`) contains this text.
pub fn case_filter() -> Option<String> {
    std::env::var("FLEXIO_TEST_FILTER")
        .ok()
        .filter(|f| !f.is_empty())
}

/// Drives every supported (source, sink, mechanism) triple, each with the
/// parameter sets that matter for it ([`configs`]), over the same cases
/// and checks every byte. Large cases run with the defaults only.
pub struct EngineTester {
    sources: Vec<EndpointKind>,
    sinks: Vec<EndpointKind>,
    mechanisms: Vec<MechanismName>,
    cases: Vec<Case>,
    thorough: bool,
}

impl Default for EngineTester {
    fn default() -> Self {
        EngineTester::new()
    }
}

impl EngineTester {
    /// Every driven kind on both sides, every concrete mechanism, the
    /// standard cases.
    pub fn new() -> Self {
        EngineTester {
            sources: DRIVEN_KINDS.to_vec(),
            sinks: DRIVEN_KINDS.to_vec(),
            mechanisms: MechanismName::CONCRETE.to_vec(),
            cases: standard_cases(),
            thorough: false,
        }
    }

    /// Every parameter set [`configs`] knows, not only the usual ones.
    pub fn thorough(mut self) -> Self {
        self.thorough = true;
        self
    }

    /// Only these source kinds.
    pub fn sources(mut self, kinds: &[EndpointKind]) -> Self {
        self.sources = kinds.to_vec();
        self
    }

    /// Only these sink kinds.
    pub fn sinks(mut self, kinds: &[EndpointKind]) -> Self {
        self.sinks = kinds.to_vec();
        self
    }

    /// Only these mechanisms.
    pub fn mechanisms(mut self, mechanisms: &[MechanismName]) -> Self {
        self.mechanisms = mechanisms.to_vec();
        self
    }

    /// These cases instead of the standard ones.
    pub fn cases(mut self, cases: Vec<Case>) -> Self {
        self.cases = cases;
        self
    }

    /// Runs every triple over every case; panics listing every failure.
    pub fn test(self) {
        let started = Instant::now();
        let dir = scratch_dir();
        let needs_device = self
            .sources
            .iter()
            .chain(&self.sinks)
            .any(|k| *k == EndpointKind::BlockDevice);
        let capacity = self
            .cases
            .iter()
            .map(|c| c.source_offset + c.len + c.bytes_after)
            .max()
            .unwrap_or(0) as u64
            + 64 * KIB as u64;
        let devices = if needs_device {
            let reason = "block device endpoints";
            let source = self
                .sources
                .contains(&EndpointKind::BlockDevice)
                .then(|| loop_device(dir.path(), "source.img", capacity, reason))
                .flatten();
            let sink = self
                .sinks
                .contains(&EndpointKind::BlockDevice)
                .then(|| loop_device(dir.path(), "sink.img", capacity, reason))
                .flatten();
            (source, sink)
        } else {
            (None, None)
        };
        let env = Env {
            dir: dir.path(),
            source_device: devices.0.as_ref().map(LoopDevice::path),
            sink_device: devices.1.as_ref().map(LoopDevice::path),
        };
        let mut mechanisms = self.mechanisms.clone();
        // A mechanism this kernel lacks (send-zc before Linux 6.0) is
        // skipped with its reason, not counted as broken.
        mechanisms.retain(|m| require_feature(&format!("the {m} mechanism"), m.available()));
        let mut sources = self.sources.clone();
        let mut sinks = self.sinks.clone();
        sources.retain(|k| *k != EndpointKind::BlockDevice || env.source_device.is_some());
        sinks.retain(|k| *k != EndpointKind::BlockDevice || env.sink_device.is_some());

        let mut failures = Vec::new();
        let mut flows = 0usize;
        let filter = case_filter();
        for (case_index, case) in self.cases.iter().enumerate() {
            for &source in sources.iter().filter(|kind| case.applies_to(**kind)) {
                let salt = case_index * 64 + source_index(source);
                let whole = data(case.source_offset + case.len + case.bytes_after, salt);
                let bytes = &whole[case.source_offset..case.source_offset + case.len];
                let prepared = env.prepare_source(source, whole);
                for &sink in &sinks {
                    for &mechanism in &mechanisms {
                        if !mechanism.supports(source, sink) {
                            continue;
                        }
                        let triple = Triple {
                            source,
                            sink,
                            mechanism,
                        };
                        for config in configs(mechanism, self.thorough) {
                            let large = case.len > LARGE_CASE;
                            // A copy kernel runs large cases too: its threads
                            // and vector loops only start past a size.
                            if (large
                                && config.label != Config::DEFAULT.label
                                && config.copy_kernel == CopyKernel::Memcpy)
                                || !config.applies(source, sink)
                            {
                                continue;
                            }
                            let label = format!(
                                "{source} -> {sink} via {mechanism} [{}], {} bytes, chunk {}{}",
                                config.label,
                                case.len,
                                case.chunk,
                                case.shape()
                            );
                            if filter.as_ref().is_some_and(|f| !label.contains(f.as_str())) {
                                continue;
                            }
                            flows += 1;
                            let params = config.params(case.chunk);
                            if let Err(why) =
                                env.run(triple, *case, &params, bytes, prepared.as_deref())
                            {
                                failures.push(format!("{label}: {why}"));
                            }
                        }
                    }
                }
            }
        }
        let leftovers = leftover_temp_files(dir.path());
        if !leftovers.is_empty() {
            failures.push(format!("temporary files left behind: {leftovers:?}"));
        }
        eprintln!(
            "engine tester: {flows} flows ({} -> {}) in {:.1} s",
            kinds(&sources),
            kinds(&sinks),
            started.elapsed().as_secs_f64()
        );
        if flows == 0 && failures.is_empty() && filter.is_none() {
            panic!("the tester ran no flow: no mechanism supports the chosen kinds");
        }
        if !failures.is_empty() {
            let mut message = format!("{} of {flows} flows failed:\n", failures.len());
            for failure in failures.iter().take(60) {
                let _ = writeln!(message, "  {failure}");
            }
            panic!("{message}");
        }
    }
}

fn kinds(kinds: &[EndpointKind]) -> String {
    kinds
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join("|")
}

fn source_index(kind: EndpointKind) -> usize {
    DRIVEN_KINDS.iter().position(|k| *k == kind).unwrap_or(0)
}

#[derive(Clone, Copy)]
struct Triple {
    source: EndpointKind,
    sink: EndpointKind,
    mechanism: MechanismName,
}

/// Where the tester's endpoints live.
struct Env<'e> {
    dir: &'e Path,
    source_device: Option<&'e Path>,
    sink_device: Option<&'e Path>,
}

impl Env<'_> {
    /// Puts a case's bytes into a seekable source once, for every sink and
    /// mechanism to read; returns its path.
    fn prepare_source(&self, kind: EndpointKind, bytes: &[u8]) -> Option<PathBuf> {
        match kind {
            EndpointKind::File => {
                let path = self.dir.join("source");
                write_file(&path, bytes);
                Some(path)
            }
            EndpointKind::BlockDevice => {
                let device = self.source_device.expect("a source device");
                write_range(device, 0, bytes);
                Some(device.to_path_buf())
            }
            _ => None,
        }
    }

    /// Runs one flow and checks it.
    fn run(
        &self,
        triple: Triple,
        case: Case,
        params: &Params,
        bytes: &[u8],
        prepared: Option<&Path>,
    ) -> Result<(), String> {
        let sink_path = self.clear_sink(triple, case);
        let mut memory_sink = vec![
            0u8;
            if triple.sink == EndpointKind::Memory {
                case.len
            } else {
                0
            }
        ];
        let piece = case.stream_piece;
        std::thread::scope(|scope| {
            let mut writer = None;
            let source = match triple.source {
                EndpointKind::File | EndpointKind::BlockDevice => {
                    Source::path(prepared.expect("a prepared source"))
                }
                EndpointKind::Tcp => {
                    let (ours, theirs) = tcp_pair();
                    writer = Some(scope.spawn(move || feed_in_pieces(theirs, bytes, piece)));
                    Source::Fd(ours.into(), "tcp".into())
                }
                EndpointKind::Unix => {
                    let (ours, theirs) = unix_pair();
                    writer = Some(scope.spawn(move || feed_in_pieces(theirs, bytes, piece)));
                    Source::Fd(ours.into(), "unix".into())
                }
                EndpointKind::Pipe => {
                    let (read, write) = pipe();
                    writer =
                        Some(scope.spawn(move || feed_in_pieces(File::from(write), bytes, piece)));
                    Source::Fd(read, "pipe".into())
                }
                EndpointKind::Memory => Source::Memory(bytes),
                other => unreachable!("the tester does not drive {other} sources"),
            };
            let mut reader = None;
            let sink = match triple.sink {
                EndpointKind::File => Sink::path(&sink_path),
                EndpointKind::BlockDevice => Sink::path(self.sink_device.expect("a sink device")),
                EndpointKind::Tcp => {
                    let (ours, theirs) = tcp_pair();
                    reader = Some(scope.spawn(move || drain_and_hash(theirs)));
                    Sink::Fd(ours.into(), "tcp".into())
                }
                EndpointKind::Unix => {
                    let (ours, theirs) = unix_pair();
                    reader = Some(scope.spawn(move || drain_and_hash(theirs)));
                    Sink::Fd(ours.into(), "unix".into())
                }
                EndpointKind::Pipe => {
                    let (read, write) = pipe();
                    reader = Some(scope.spawn(move || drain_and_hash(File::from(read))));
                    Sink::Fd(write, "pipe".into())
                }
                EndpointKind::Memory => Sink::Memory(&mut memory_sink),
                other => unreachable!("the tester does not drive {other} sinks"),
            };
            let mut flow = Flow::new(source, sink)
                .via(triple.mechanism)
                .params(params.clone());
            if case.source_offset > 0 {
                flow = flow.offset(case.source_offset as u64);
            }
            let bounded = match triple.source {
                // A device is larger than the case: move just the case.
                EndpointKind::BlockDevice => true,
                EndpointKind::File => case.bytes_after > 0,
                _ => case.stream_length,
            };
            if bounded {
                flow = flow.length(case.len as u64);
            }
            // The flow owns the descriptors and closes them when it returns,
            // which ends the feeding and draining threads either way.
            let result = flow.run();
            let fed = writer.map(|w| w.join().expect("writer thread"));
            let received = reader.map(|r| r.join().expect("reader thread"));
            let report = result.map_err(|e| format!("flow failed: {e}"))?;
            if let Some(Err(e)) = fed {
                return Err(format!("feeding the source failed: {e}"));
            }
            check_report(&report, triple.mechanism, case.len as u64)?;
            let (count, actual) = match triple.sink {
                EndpointKind::File => {
                    let written = fs::read(&sink_path).map_err(|e| format!("read sink: {e}"))?;
                    (written.len() as u64, hash(&written))
                }
                EndpointKind::BlockDevice => {
                    let device = self.sink_device.expect("a sink device");
                    let written = read_range(device, 0, case.len);
                    (written.len() as u64, hash(&written))
                }
                EndpointKind::Memory => (memory_sink.len() as u64, hash(&memory_sink)),
                _ => received
                    .expect("a reader for a stream sink")
                    .map_err(|e| format!("draining the sink failed: {e}"))?,
            };
            check_sink(count, actual, case.len, bytes)
        })
    }

    /// The sink file's path, with nothing of an earlier flow left where
    /// this flow writes: the file removed, a device's range zeroed (bytes
    /// an earlier flow left there must not pass for this flow's).
    fn clear_sink(&self, triple: Triple, case: Case) -> std::path::PathBuf {
        let sink_path = self.dir.join("sink");
        if triple.sink == EndpointKind::File {
            let _ = fs::remove_file(&sink_path);
        }
        if triple.sink == EndpointKind::BlockDevice {
            let device = self.sink_device.expect("a sink device");
            write_range(device, 0, &vec![0; case.len]);
        }
        sink_path
    }
}

/// Whether the sink received `expected`'s bytes: `count` of them hashing
/// to `actual`.
fn check_sink(count: u64, actual: blake3::Hash, len: usize, expected: &[u8]) -> Result<(), String> {
    if count != len as u64 {
        return Err(format!("the sink holds {count} bytes, not {len}"));
    }
    let expected = hash(expected);
    if actual != expected {
        return Err(format!(
            "the sink's bytes differ (blake3 {} != {})",
            actual.to_hex(),
            expected.to_hex()
        ));
    }
    Ok(())
}
