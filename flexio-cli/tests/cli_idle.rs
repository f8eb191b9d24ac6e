//! `--idle-timeout`: a peer that connects and never sends, or a receiver
//! that never reads, used to block `flexio copy` forever. With the flag the
//! copy fails within the timeout, naming the endpoint and the byte offset,
//! and leaves no temporary file; `flexio plan` on a FIFO returns at once.

use crate::common;

use common::{flexio, names};

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

const IDLE: &str = "300ms";

/// How long a stalled copy may take to give up: the timeout, twice over
/// for a socket (the kernel's own wait, then ours), and slack for a busy
/// machine.
const GIVE_UP: Duration = Duration::from_secs(15);

/// Waits for the child's exit; kills it and fails after [`GIVE_UP`].
fn finish(mut child: Child, what: &str) -> Output {
    let deadline = Instant::now() + GIVE_UP;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "{what}: still blocked after {GIVE_UP:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

fn assert_idle_error(output: &Output, endpoint: &str, offset: Option<u64>, what: &str) {
    assert_idle_error_after(output, IDLE, endpoint, offset, what)
}

fn assert_idle_error_after(
    output: &Output,
    limit: &str,
    endpoint: &str,
    offset: Option<u64>,
    what: &str,
) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
    assert!(
        stderr.contains(&format!("no progress for {limit}")),
        "{what}: {stderr}"
    );
    assert!(stderr.contains(endpoint), "{what}: {stderr}");
    match offset {
        Some(offset) => assert!(
            stderr.contains(&format!("at byte {offset} ")),
            "{what}: {stderr}"
        ),
        None => assert!(stderr.contains("at byte "), "{what}: {stderr}"),
    }
}

fn make_file(path: &Path, size: usize) {
    let block: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    let mut file = std::fs::File::create(path).unwrap();
    for _ in 0..size >> 20 {
        file.write_all(&block).unwrap();
    }
}

#[test]
fn tcp_peer_that_connects_and_sends_nothing_more_fails_after_the_idle_timeout() {
    for via in ["auto", "read-write", "splice", "io-uring", "direct"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut child = flexio()
            .args(["copy", "-q", "--idle-timeout", IDLE, "--via", via])
            .arg("tcp-listen://127.0.0.1:0")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let address = line
            .trim()
            .strip_prefix("flexio: listening on tcp://")
            .unwrap_or_else(|| panic!("{via}: {line}"))
            .to_string();
        let mut peer = TcpStream::connect(&address).unwrap();
        peer.write_all(&[5u8; 1000]).unwrap();
        let started = Instant::now();
        // The peer stays connected and silent until flexio gives up.
        let deadline = started + GIVE_UP;
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        let output = Output {
            status,
            stdout: Vec::new(),
            stderr: rest.into_bytes(),
        };
        assert_idle_error(&output, "tcp-listen://127.0.0.1:0", Some(1000), via);
        assert!(started.elapsed() >= Duration::from_millis(300), "{via}");
        assert!(
            names(dir.path()).is_empty(),
            "{via}: {:?}",
            names(dir.path())
        );
        drop(peer);
    }
}

#[test]
fn tcp_receiver_that_never_reads_fails_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    // More than any socket buffers can hold.
    make_file(&source, 64 << 20);
    for via in [
        "auto",
        "read-write",
        "sendfile",
        "splice",
        "mmap",
        "io-uring",
        "direct",
    ] {
        let (output, address, _) = copy_to_a_receiver_that_never_reads(&source, via, IDLE);
        assert_idle_error(&output, &format!("tcp://{address}"), None, via);
    }
}

/// `flexio copy SOURCE tcp://…` with `--idle-timeout idle --via via` to a
/// listener that accepts and never reads: what it said, the address, and
/// how long it took from start to exit.
fn copy_to_a_receiver_that_never_reads(
    source: &Path,
    via: &str,
    idle: &str,
) -> (Output, std::net::SocketAddr, Duration) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let started = Instant::now();
    let child = flexio()
        .args(["copy", "-q", "--idle-timeout", idle, "--via", via])
        .arg(source)
        .arg(format!("tcp://{address}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Accepted, and never read.
    let (receiver, _) = listener.accept().unwrap();
    let output = finish(child, via);
    let took = started.elapsed();
    drop(receiver);
    (output, address, took)
}

#[test]
fn pipe_receiver_that_never_reads_fails_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    make_file(&source, 16 << 20);
    for via in [
        "auto",
        "read-write",
        "sendfile",
        "splice",
        "mmap",
        "io-uring",
        "direct",
    ] {
        let (reader, writer) = rustix::pipe::pipe().unwrap();
        let child = flexio()
            .args(["copy", "-q", "--idle-timeout", IDLE, "--via", via])
            .arg(&source)
            .arg("-")
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The read end stays open and unread until flexio gives up.
        let output = finish(child, via);
        assert_idle_error(&output, "stdout", None, via);
        drop(reader);
    }
}

#[test]
fn fifo_writer_that_sends_nothing_fails_after_the_idle_timeout_and_leaves_no_temp() {
    for via in ["auto", "read-write", "splice", "io-uring", "direct"] {
        let dir = tempfile::tempdir().unwrap();
        let (fifo, out) = (dir.path().join("fifo"), dir.path().join("out"));
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::fs::write(&out, b"old").unwrap();
        let child = flexio()
            .args(["copy", "-q", "--idle-timeout", IDLE, "--via", via])
            .arg(&fifo)
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A writer that opens the FIFO, sends 4 KiB and then nothing.
        let mut writer = loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags_nonblock()
                .open(&fifo)
            {
                Ok(file) => break file,
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        };
        writer.write_all(&[1u8; 4096]).unwrap();
        let output = finish(child, via);
        assert_idle_error(&output, &fifo.display().to_string(), Some(4096), via);
        assert_eq!(names(dir.path()), ["fifo", "out"], "{via}");
        assert_eq!(std::fs::read(&out).unwrap(), b"old", "{via}");
        drop(writer);
    }
}

trait NonBlock {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlock for std::fs::OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
    }
}

#[test]
fn without_an_idle_timeout_a_slow_fifo_still_copies_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (fifo, out) = (dir.path().join("fifo"), dir.path().join("out"));
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    for (via, idle) in [("read-write", None), ("splice", Some("5s"))] {
        let mut command = flexio();
        command.args(["copy", "-q", "--via", via]);
        if let Some(idle) = idle {
            command.args(["--idle-timeout", idle]);
        }
        let child = command
            .arg(&fifo)
            .arg(&out)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        // Pauses shorter than the timeout are not idleness.
        for _ in 0..3 {
            writer.write_all(&[9u8; 1000]).unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(writer);
        let output = finish(child, via);
        assert!(
            output.status.success(),
            "{via}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(std::fs::read(&out).unwrap(), vec![9u8; 3000], "{via}");
    }
}

#[test]
fn plan_on_a_fifo_returns_without_opening_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let child = flexio()
        .arg("plan")
        .arg(&fifo)
        .arg(dir.path().join("out"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = finish(child, "plan");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("pipe-to-file"), "{stdout}");
    assert!(stdout.contains("size unknown"), "{stdout}");
}

/// Issue 24: `--idle-timeout 2s` fired after 6–8 s when the receiver
/// stopped reading: one `sendfile` into the socket waited for room three
/// times, each wait as long as the whole limit. Now the kernel's waits are
/// slices of it and the deadline is kept by `poll`: the copy gives up well
/// before three times the limit (6 s before the fix). The bound, 2.5 times
/// the limit, leaves a busy machine three seconds for starting the process
/// and its peer.
#[test]
fn idle_timeout_fires_on_time_when_the_receiver_stops_reading() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    make_file(&source, 64 << 20);
    for via in ["auto", "splice"] {
        let (output, address, took) = copy_to_a_receiver_that_never_reads(&source, via, "2s");
        assert_idle_error_after(&output, "2s", &format!("tcp://{address}"), None, via);
        assert!(
            took < Duration::from_millis(5000),
            "{via}: gave up after {took:?} with a 2 s idle timeout"
        );
    }
}
