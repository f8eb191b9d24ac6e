//! State a [`Mover`] keeps from one range to the next (splice's pipe, the
//! io_uring ring and its buffers, direct I/O's aligned buffer, the plain
//! buffer) never carries bytes, completions or a blocked pipe into the next
//! range after a failure.
//!
//! One tester drives every mechanism through every failure: the first range
//! on a mover fails at a chosen byte (the sink's file system fills, the
//! reader resets the connection, the pipe's reader goes away, the reader
//! stops reading until the idle timeout, the source is shorter than asked),
//! then a second range on the same mover moves other bytes to a fresh sink.
//! The second range must arrive exactly, and must not hang.

use crate::common;

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::*;
use flexio::range::{Mover, RangeEnd, RangeRequest};
use flexio::{EndpointKind, MechanismName};

/// How the first range is made to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// file -> file on a tmpfs with less room than the range.
    SinkFull,
    /// file -> TCP; the reader takes some bytes, then resets the connection.
    ReaderReset,
    /// file -> pipe; the reader takes some bytes, then closes its end.
    BrokenPipe,
    /// file -> TCP; the reader takes some bytes, then stops reading.
    IdleTimeout,
    /// file -> file; the source holds fewer bytes than the range asks for.
    SourceTruncated,
    /// TCP -> file (an upload) on a tmpfs with less room than the range.
    UploadSinkFull,
    /// TCP -> file; the sender closes part-way.
    UploadSenderCloses,
    /// TCP -> file; the sender stops sending until the idle timeout.
    UploadSenderStalls,
}

const FAILURES: [Failure; 8] = [
    Failure::SinkFull,
    Failure::ReaderReset,
    Failure::BrokenPipe,
    Failure::IdleTimeout,
    Failure::SourceTruncated,
    Failure::UploadSinkFull,
    Failure::UploadSenderCloses,
    Failure::UploadSenderStalls,
];

impl Failure {
    fn source_kind(self) -> EndpointKind {
        match self {
            Failure::UploadSinkFull | Failure::UploadSenderCloses | Failure::UploadSenderStalls => {
                EndpointKind::Tcp
            }
            _ => EndpointKind::File,
        }
    }

    fn sink_kind(self) -> EndpointKind {
        match self {
            Failure::ReaderReset | Failure::IdleTimeout => EndpointKind::Tcp,
            Failure::BrokenPipe => EndpointKind::Pipe,
            _ => EndpointKind::File,
        }
    }

    fn needs_a_full_disk(self) -> bool {
        matches!(self, Failure::SinkFull | Failure::UploadSinkFull)
    }
}

/// Bytes of the first (failing) range, and where its failure strikes.
const FIRST_LEN: usize = 16 * MIB;
const FAIL_AT: usize = 3 * MIB;
/// Bytes of the second range: more than a pipe holds, so that leftovers of
/// the first range shift every byte after them.
const SECOND_LEN: usize = 5 * MIB + 12_345;
/// How long a second range may take before it counts as hung.
const HANG_LIMIT: Duration = Duration::from_secs(60);

/// The data both ranges read from: a file of the first range's bytes
/// (salt 1) and one of the second's (salt 2).
struct Sources {
    _dir: tempfile::TempDir,
    first: File,
    second: File,
    truncated: File,
}

impl Sources {
    fn new() -> Sources {
        let dir = scratch_dir();
        let make = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            write_file(&path, bytes);
            File::open(path).unwrap()
        };
        Sources {
            first: make("first", data(FIRST_LEN, 1)),
            second: make("second", data(SECOND_LEN, 2)),
            truncated: make("truncated", data(FAIL_AT, 1)),
            _dir: dir,
        }
    }
}

fn request(mechanism: MechanismName, length: usize) -> RangeRequest {
    let mut request = RangeRequest::new(0, 0, Some(length as u64)).via(mechanism);
    // A refusal must not turn into a quiet pass with another mechanism's
    // (stateless) path: the mechanism under test is the one that runs.
    request.strict = true;
    // Small pieces keep several in flight (io_uring) and many in the pipe.
    request.params.chunk = 256 * 1024;
    request
}

/// Runs the failing first range on `mover`. Returns a description of what
/// went wrong with the set-up (the range succeeded), or `Ok`.
fn fail_first(
    mover: &mut Mover,
    mechanism: MechanismName,
    failure: Failure,
    sources: &Sources,
    full: Option<&Path>,
) -> Result<(), String> {
    let source = RangeEnd::new(sources.first.as_fd(), "first").unwrap();
    let outcome = match failure {
        Failure::SinkFull => {
            let path = full.expect("a small tmpfs").join("first-out");
            let sink_file = open_sink(&path, mechanism);
            let sink = RangeEnd::new(sink_file.as_fd(), "full").unwrap();
            let outcome = mover.move_range(&source, &sink, &request(mechanism, FIRST_LEN), None);
            drop(sink_file);
            std::fs::remove_file(&path).unwrap();
            outcome
        }
        Failure::SourceTruncated => {
            let source = RangeEnd::new(sources.truncated.as_fd(), "truncated").unwrap();
            let sink_file = tempfile::tempfile().unwrap();
            let sink = RangeEnd::new(sink_file.as_fd(), "out").unwrap();
            mover.move_range(&source, &sink, &request(mechanism, FIRST_LEN), None)
        }
        Failure::ReaderReset | Failure::IdleTimeout => {
            let (sender, receiver) = tcp_pair();
            let reset = failure == Failure::ReaderReset;
            let reader = thread::spawn(move || read_then_stop(receiver, FAIL_AT, reset));
            let mut request = request(mechanism, FIRST_LEN);
            if !reset {
                sender.set_nonblocking(true).unwrap();
                request.idle_timeout = Some(Duration::from_millis(500));
            }
            let sink = RangeEnd::new(sender.as_fd(), "tcp").unwrap();
            let outcome = mover.move_range(&source, &sink, &request, None);
            drop(sink);
            drop(sender);
            reader.join().unwrap();
            outcome
        }
        Failure::UploadSinkFull | Failure::UploadSenderCloses | Failure::UploadSenderStalls => {
            let (mut sender, receiver) = tcp_pair();
            let (to_send, stall) = match failure {
                Failure::UploadSinkFull => (FIRST_LEN, false),
                Failure::UploadSenderCloses => (FAIL_AT, false),
                _ => (FAIL_AT, true),
            };
            let feeder = thread::spawn(move || {
                // A write may fail once the receiving side gives up.
                let _ = sender.write_all(&data(to_send, 1)[..to_send]);
                if stall {
                    thread::sleep(Duration::from_millis(900));
                }
            });
            let mut request = request(mechanism, FIRST_LEN);
            if stall {
                receiver.set_nonblocking(true).unwrap();
                request.idle_timeout = Some(Duration::from_millis(500));
            }
            let source = RangeEnd::new(receiver.as_fd(), "tcp").unwrap();
            let (path, sink_file) = match failure {
                Failure::UploadSinkFull => {
                    let path = full.expect("a small tmpfs").join("upload-out");
                    let file = open_sink(&path, mechanism);
                    (Some(path), file)
                }
                _ => (None, tempfile::tempfile().unwrap()),
            };
            let sink = RangeEnd::new(sink_file.as_fd(), "file").unwrap();
            let outcome = mover.move_range(&source, &sink, &request, None);
            drop(source);
            drop(receiver);
            feeder.join().unwrap();
            drop(sink_file);
            if let Some(path) = path {
                std::fs::remove_file(path).unwrap();
            }
            outcome
        }
        Failure::BrokenPipe => {
            let (read_end, write_end) = pipe();
            let reader = thread::spawn(move || {
                let mut file = File::from(read_end);
                let mut left = FAIL_AT;
                let mut buffer = vec![0; 64 * 1024];
                while left > 0 {
                    let n = file.read(&mut buffer[..left.min(64 * 1024)]).unwrap();
                    if n == 0 {
                        break;
                    }
                    left -= n;
                }
            });
            let sink = RangeEnd::new(write_end.as_fd(), "pipe").unwrap();
            let outcome = mover.move_range(&source, &sink, &request(mechanism, FIRST_LEN), None);
            reader.join().unwrap();
            outcome
        }
    };
    match outcome {
        Ok(report) => Err(format!(
            "the first range should have failed, moved {} bytes",
            report.bytes
        )),
        Err(error) if error.is_usage() => Err(format!("the first range was refused: {error}")),
        Err(_) => Ok(()),
    }
}

/// Reads `take` bytes, then resets the connection (SO_LINGER 0) or keeps
/// it open without reading until the sender gives up.
fn read_then_stop(mut stream: TcpStream, take: usize, reset: bool) {
    let mut left = take;
    let mut buffer = vec![0; 64 * 1024];
    while left > 0 {
        match stream.read(&mut buffer[..left.min(64 * 1024)]) {
            Ok(0) | Err(_) => return,
            Ok(n) => left -= n,
        }
    }
    if reset {
        rustix::net::sockopt::set_socket_linger(&stream, Some(Duration::ZERO)).unwrap();
        drop(stream);
    } else {
        // Hold the connection, unread, until the sender has timed out
        // and closed its end.
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        thread::sleep(Duration::from_millis(900));
        drop(stream);
    }
}

fn open_sink(path: &Path, mechanism: MechanismName) -> File {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(true);
    if mechanism == MechanismName::Direct {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_DIRECT);
    }
    options
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// Whether a file in `dir` opens with `O_DIRECT`: `false` for the
/// `EINVAL` of a file system without it; any other error fails the test.
fn direct_io_opens(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.join("direct-probe");
    let opened = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe);
    let _ = std::fs::remove_file(&probe);
    match opened {
        Ok(_) => true,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => false,
        Err(e) => panic!("open {} with O_DIRECT: {e}", probe.display()),
    }
}

/// Runs the second range on `mover` into a fresh sink of `kind`, and
/// returns what arrived.
fn second(
    mover: &mut Mover,
    mechanism: MechanismName,
    failure: Failure,
    sources: &Sources,
) -> Result<Vec<u8>, String> {
    if failure.source_kind() == EndpointKind::Tcp {
        return second_upload(mover, mechanism);
    }
    let source = RangeEnd::new(sources.second.as_fd(), "second").unwrap();
    let request = request(mechanism, SECOND_LEN);
    match failure.sink_kind() {
        EndpointKind::File => {
            let mut sink_file = tempfile::tempfile().unwrap();
            let sink = RangeEnd::new(sink_file.as_fd(), "out").unwrap();
            mover
                .move_range(&source, &sink, &request, None)
                .map_err(|e| format!("second range failed: {e}"))?;
            // sendfile moves a file sink's position: read from the start.
            sink_file.rewind().unwrap();
            let mut bytes = Vec::new();
            sink_file.read_to_end(&mut bytes).unwrap();
            Ok(bytes)
        }
        EndpointKind::Tcp => {
            let (sender, mut receiver) = tcp_pair();
            let reader = thread::spawn(move || {
                let mut bytes = Vec::new();
                receiver.read_to_end(&mut bytes).map(|_| bytes)
            });
            let sink = RangeEnd::new(sender.as_fd(), "tcp").unwrap();
            let moved = mover.move_range(&source, &sink, &request, None);
            drop(sink);
            drop(sender);
            let bytes = reader.join().unwrap().map_err(|e| e.to_string())?;
            moved.map_err(|e| format!("second range failed: {e}"))?;
            Ok(bytes)
        }
        EndpointKind::Pipe => {
            let (read_end, write_end): (OwnedFd, OwnedFd) = pipe();
            let reader = thread::spawn(move || {
                let mut bytes = Vec::new();
                File::from(read_end).read_to_end(&mut bytes).map(|_| bytes)
            });
            let sink = RangeEnd::new(write_end.as_fd(), "pipe").unwrap();
            let moved = mover.move_range(&source, &sink, &request, None);
            drop(sink);
            drop(write_end);
            let bytes = reader.join().unwrap().map_err(|e| e.to_string())?;
            moved.map_err(|e| format!("second range failed: {e}"))?;
            Ok(bytes)
        }
        other => unreachable!("no failure case writes to {other:?}"),
    }
}

/// The second range of an upload: TCP -> a fresh file.
fn second_upload(mover: &mut Mover, mechanism: MechanismName) -> Result<Vec<u8>, String> {
    let (mut sender, receiver) = tcp_pair();
    let feeder = thread::spawn(move || sender.write_all(data(SECOND_LEN, 2)));
    let mut sink_file = tempfile::tempfile().unwrap();
    let source = RangeEnd::new(receiver.as_fd(), "tcp").unwrap();
    let sink = RangeEnd::new(sink_file.as_fd(), "out").unwrap();
    mover
        .move_range(&source, &sink, &request(mechanism, SECOND_LEN), None)
        .map_err(|e| format!("second range failed: {e}"))?;
    feeder.join().unwrap().map_err(|e| e.to_string())?;
    sink_file.rewind().unwrap();
    let mut bytes = Vec::new();
    sink_file.read_to_end(&mut bytes).unwrap();
    Ok(bytes)
}

/// One cell of the table: the failing range, then the second, on one
/// mover, in a thread so that a hang is seen as one.
fn run_cell(
    mechanism: MechanismName,
    failure: Failure,
    sources: &'static Sources,
    full: Option<&'static Path>,
) -> Result<(), String> {
    let (done, outcome) = mpsc::channel();
    thread::spawn(move || {
        let mut mover = Mover::new();
        let result = fail_first(&mut mover, mechanism, failure, sources, full).and_then(|()| {
            let bytes = second(&mut mover, mechanism, failure, sources)?;
            check_bytes("the second range", &bytes, data(SECOND_LEN, 2))
        });
        let _ = done.send(result);
    });
    match outcome.recv_timeout(HANG_LIMIT) {
        Ok(result) => result,
        Err(_) => Err(format!("hung for {HANG_LIMIT:?}")),
    }
}

#[test]
fn a_failed_range_leaves_nothing_for_the_next_on_the_same_mover() {
    // 8 MiB of room for a 16 MiB range: it fails with ENOSPC part-way. A
    // tmpfs needs root; without it the other failures still run.
    let tmpfs = tmpfs("8m", "a sink that fills mid-range");
    let sources: &'static Sources = Box::leak(Box::new(Sources::new()));
    let full: Option<&'static Path> = tmpfs
        .as_ref()
        .map(|mount| &*Box::leak(mount.path().to_path_buf().into_boxed_path()));

    let mut table = String::from("mechanism       failure            second range\n");
    let mut failures = Vec::new();
    let mut cells = 0;
    for failure in FAILURES {
        if failure.needs_a_full_disk() && full.is_none() {
            continue;
        }
        for mechanism in MechanismName::serving(failure.source_kind(), failure.sink_kind()) {
            if failure.needs_a_full_disk() && mechanism == MechanismName::Direct {
                // tmpfs has no O_DIRECT on older kernels: probe it.
                if !direct_io_opens(full.unwrap()) {
                    writeln_cell(&mut table, mechanism, failure, "skipped: no O_DIRECT here");
                    continue;
                }
            }
            cells += 1;
            let verdict = run_cell(mechanism, failure, sources, full);
            let shown = match &verdict {
                Ok(()) => "exact, no hang".to_string(),
                Err(why) => why.clone(),
            };
            writeln_cell(&mut table, mechanism, failure, &shown);
            if let Err(why) = verdict {
                failures.push(format!("{mechanism} after {failure:?}: {why}"));
            }
        }
    }
    drop(tmpfs);
    println!("{table}");
    assert!(cells >= 20, "only {cells} cells ran:\n{table}");
    assert!(failures.is_empty(), "{}\n\n{table}", failures.join("\n"));
}

fn writeln_cell(table: &mut String, mechanism: MechanismName, failure: Failure, verdict: &str) {
    use std::fmt::Write as _;
    let failure = format!("{failure:?}");
    writeln!(
        table,
        "{:<15} {failure:<17} {verdict}",
        mechanism.to_string()
    )
    .unwrap();
}
