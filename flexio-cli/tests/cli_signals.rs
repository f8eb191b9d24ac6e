//! A copy interrupted by SIGINT, SIGTERM or SIGHUP dies of the signal (a
//! shell reports 128 + the signal) and leaves the directory as it was: no
//! temporary file, the old destination intact, no `unix-listen` socket
//! file. `kill -9` leaves
//! nothing visible either, where the file system has `O_TMPFILE`.
//!
//! The copy is held mid-flight by a FIFO source the test feeds and then
//! stops feeding, for every mechanism that reads a pipe; the mechanisms
//! that need a file source are stopped (SIGSTOP) as soon as their temporary
//! file is open, signalled, and let go on.

use crate::common;

use common::{flexio, mkfifo, names};

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

const OLD: &[u8] = b"the old destination content\n";

fn pid(child: &Child) -> Pid {
    Pid::from_raw(child.id() as i32).unwrap()
}

/// Waits for the child to exit; kills it and fails after `limit`.
fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output_ref();
            panic!("flexio did not exit within {limit:?}: {output}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

trait StderrOf {
    fn wait_with_output_ref(&mut self) -> String;
}

impl StderrOf for Child {
    fn wait_with_output_ref(&mut self) -> String {
        let _ = self.wait();
        let mut text = String::new();
        if let Some(mut stderr) = self.stderr.take() {
            use std::io::Read;
            let _ = stderr.read_to_string(&mut text);
        }
        text
    }
}

/// The files the child has open in `dir`, other than `except` (its
/// source): its temporary file, named or not.
fn open_in(child: &Child, dir: &Path, except: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{}/fd", child.id())) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            std::fs::read_link(entry.path())
                .is_ok_and(|target| target.starts_with(dir) && target != except)
        })
        .map(|entry| entry.path())
        .collect()
}

/// Waits until the child has a temporary file in `dir` holding at least
/// `bytes` bytes; returns false after 10 s.
fn wait_for_temp(child: &Child, dir: &Path, except: &Path, bytes: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        for fd in open_in(child, dir, except) {
            if std::fs::metadata(&fd).is_ok_and(|meta| meta.len() >= bytes) {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// The write end of a FIFO, opened once the copy opened the read end.
fn open_writer(fifo: &Path) -> std::fs::File {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(fifo)
        {
            Ok(file) => return file,
            // ENXIO: no reader yet.
            Err(e) if e.raw_os_error() == Some(6) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(e) => panic!("open {}: {e}", fifo.display()),
        }
    }
}

/// Feeds `bytes` bytes into the FIFO (waiting for room), then stops.
fn feed(writer: &mut std::fs::File, bytes: usize) {
    let block = vec![7u8; bytes];
    let mut done = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while done < bytes {
        match writer.write(&block[done..]) {
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(e) => panic!("feeding the FIFO: {e}"),
        }
    }
}

/// Copies from a FIFO into an existing destination with `via`, feeds it
/// 64 KiB, waits until they are in the temporary file, sends `signal`, and
/// checks the exit status and what is left.
fn interrupt_fifo_copy(via: &str, signal: Signal) {
    let dir = tempfile::tempdir().unwrap();
    let (fifo, destination) = (dir.path().join("fifo"), dir.path().join("dst"));
    mkfifo(&fifo);
    std::fs::write(&destination, OLD).unwrap();
    let mut child = flexio()
        .args(["copy", "-q", "--via", via])
        .arg(&fifo)
        .arg(&destination)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut writer = open_writer(&fifo);
    feed(&mut writer, 64 << 10);
    if !wait_for_temp(&child, dir.path(), &fifo, 64 << 10) {
        let _ = child.kill();
        panic!(
            "{via}: no temporary file with the fed bytes: {}",
            child.wait_with_output_ref()
        );
    }
    kill_process(pid(&child), signal).unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(10));
    drop(writer);
    assert_eq!(
        status.signal(),
        Some(signal.as_raw()),
        "{via} {signal:?}: {status}: {}",
        child.wait_with_output_ref()
    );
    assert_eq!(names(dir.path()), ["dst", "fifo"], "{via} {signal:?}");
    assert_eq!(
        std::fs::read(&destination).unwrap(),
        OLD,
        "{via} {signal:?}"
    );
}

#[test]
fn sigint_sigterm_sighup_mid_copy_from_a_fifo_leave_no_temp_for_every_pipe_mechanism() {
    let signals = [Signal::INT, Signal::TERM, Signal::HUP];
    for via in ["read-write", "splice", "io-uring", "direct", "auto"] {
        for signal in signals {
            interrupt_fifo_copy(via, signal);
        }
    }
}

#[test]
fn signal_mid_copy_from_a_file_leaves_no_temp_for_file_only_mechanisms() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    let size = 128u64 << 20;
    {
        let mut file = std::fs::File::create(&source).unwrap();
        let block: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        for _ in 0..size >> 20 {
            file.write_all(&block).unwrap();
        }
    }
    let destination = dir.path().join("dst");
    let cases = [
        ("mmap", Signal::INT, ["--chunk", "64K"]),
        ("sendfile", Signal::TERM, ["--chunk", "64K"]),
        ("copy-file-range", Signal::HUP, ["--chunk", "64K"]),
    ];
    for (via, signal, extra) in cases {
        std::fs::write(&destination, OLD).unwrap();
        let mut child = flexio()
            .args(["copy", "-q", "--via", via])
            .args(extra)
            .arg(&source)
            .arg(&destination)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Stop it as soon as its temporary file is open: mid-flight.
        let deadline = Instant::now() + Duration::from_secs(10);
        while open_in(&child, dir.path(), &source).is_empty()
            && child.try_wait().unwrap().is_none()
            && Instant::now() < deadline
        {
            std::hint::spin_loop();
        }
        let _ = kill_process(pid(&child), Signal::STOP);
        let stopped_mid_flight = !open_in(&child, dir.path(), &source).is_empty();
        let _ = kill_process(pid(&child), signal);
        let _ = kill_process(pid(&child), Signal::CONT);
        let status = wait_exit(&mut child, Duration::from_secs(30));
        let stderr = child.wait_with_output_ref();
        assert_eq!(names(dir.path()), ["dst", "src"], "{via}: {stderr}");
        let content = std::fs::read(&destination).unwrap();
        eprintln!("{via}: stopped mid-flight: {stopped_mid_flight}, {status}");
        if status.signal() == Some(signal.as_raw()) {
            // Interrupted: the old content, unless the signal came after the
            // new file was already in place (then all of it).
            assert!(
                content == OLD || content.len() as u64 == size,
                "{via}: {} bytes",
                content.len()
            );
        } else {
            assert!(
                !stopped_mid_flight,
                "{via} {signal:?} mid-flight: {status}: {stderr}"
            );
            assert!(status.success(), "{via}: {status}: {stderr}");
            assert_eq!(content.len() as u64, size, "{via}");
        }
    }
}

#[test]
fn sigterm_while_listening_on_a_unix_socket_removes_the_socket_file() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("sock");
    let mut child = flexio()
        .arg("copy")
        .arg(format!("unix-listen://{}", socket.display()))
        .arg(dir.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(socket.exists(), "flexio never listened");
    kill_process(pid(&child), Signal::TERM).unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(status.signal(), Some(15), "{status}");
    assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
}

/// Whether `dir`'s file system can make unnamed files.
fn has_o_tmpfile(dir: &Path) -> bool {
    rustix::fs::open(
        dir,
        rustix::fs::OFlags::TMPFILE | rustix::fs::OFlags::RDWR,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .is_ok()
}

#[test]
fn kill_9_mid_copy_leaves_nothing_visible_where_o_tmpfile_exists() {
    // The test directory's file system (ext4 here), and tmpfs.
    let mut dirs = vec![tempfile::tempdir().unwrap()];
    if let Ok(shm) = tempfile::tempdir_in("/dev/shm") {
        dirs.push(shm);
    }
    for dir in &dirs {
        kill_9_mid_copy(dir.path());
    }
}

fn kill_9_mid_copy(dir: &Path) {
    if !has_o_tmpfile(dir) {
        common::skipped(&format!("{} has no O_TMPFILE", dir.display()));
        return;
    }
    for via in ["read-write", "splice"] {
        let (fifo, destination) = (dir.join("fifo"), dir.join("dst"));
        mkfifo(&fifo);
        std::fs::write(&destination, OLD).unwrap();
        let mut child = flexio()
            .args(["copy", "-q", "--via", via])
            .arg(&fifo)
            .arg(&destination)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut writer = open_writer(&fifo);
        feed(&mut writer, 64 << 10);
        assert!(wait_for_temp(&child, dir, &fifo, 64 << 10), "{via}");
        kill_process(pid(&child), Signal::KILL).unwrap();
        let status = wait_exit(&mut child, Duration::from_secs(10));
        assert_eq!(status.signal(), Some(9), "{via}");
        assert_eq!(names(dir), ["dst", "fifo"], "{via}");
        assert_eq!(std::fs::read(&destination).unwrap(), OLD, "{via}");
        std::fs::remove_file(&fifo).unwrap();
    }
}

#[test]
fn destination_name_of_255_bytes_copies_and_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    std::fs::write(&source, b"fits").unwrap();
    let destination = dir.path().join("d".repeat(255));
    for round in 0..2 {
        let output = flexio()
            .args(["copy", "-q"])
            .arg(&source)
            .arg(&destination)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(std::fs::read(&destination).unwrap(), b"fits");
        assert_eq!(names(dir.path()).len(), 2);
    }
}

#[test]
fn sighup_ignored_by_the_parent_stays_ignored_as_under_nohup() {
    let dir = tempfile::tempdir().unwrap();
    let (fifo, destination) = (dir.path().join("fifo"), dir.path().join("dst"));
    mkfifo(&fifo);
    // `trap "" HUP` ignores SIGHUP, and exec keeps it ignored: nohup's way.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' HUP; exec {} copy -q --via read-write {} {}",
            env!("CARGO_BIN_EXE_flexio"),
            fifo.display(),
            destination.display()
        ))
        .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut writer = open_writer(&fifo);
    feed(&mut writer, 4096);
    assert!(wait_for_temp(&child, dir.path(), &fifo, 4096));
    kill_process(pid(&child), Signal::HUP).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(child.try_wait().unwrap().is_none(), "SIGHUP ended the copy");
    feed(&mut writer, 4096);
    drop(writer);
    let status = wait_exit(&mut child, Duration::from_secs(10));
    assert!(
        status.success(),
        "{status}: {}",
        child.wait_with_output_ref()
    );
    assert_eq!(std::fs::read(&destination).unwrap(), vec![7u8; 8192]);
}

/// `flexio bench --scenario tree` stopped by SIGTERM mid-run removes its
/// work directory (the trees, the copy, the RAM disk as root) and says it
/// was stopped.
#[test]
fn sigterm_mid_tree_bench_removes_its_work_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = flexio()
        .args(["bench", "--scenario", "tree", "--trees", "A"])
        .args(["--tree-scale", "0.02", "--runs", "200", "--dir"])
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let work = dir
        .path()
        .join(format!(".flexio-tree-bench-{}", child.id()));
    // Signalled once the run has made its work directory (the signal is
    // honoured before the next copy: a busy machine's `sync` before each
    // copy can take minutes, so the test does not wait for one).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !work.exists() {
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!(
                "no work directory {}: {}",
                work.display(),
                child.wait_with_output_ref()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    kill_process(pid(&child), Signal::TERM).unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(120));
    let stderr = child.wait_with_output_ref();
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("stopped on request"), "{stderr}");
    assert!(!work.exists(), "{} is left behind", work.display());
}
