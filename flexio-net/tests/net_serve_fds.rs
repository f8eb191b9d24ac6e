//! `serve` out of descriptors: `accept` failing with `EMFILE` makes the
//! workers back off instead of spinning on the level-triggered listener,
//! and the client waiting in the backlog is answered once descriptors
//! return. Alone in its binary: it fills this process's descriptor table.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::serve_with;
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// The `schedstat` files of this process's `serve-worker-*` threads,
/// opened while descriptors are there to open them.
fn worker_schedstats() -> Vec<std::fs::File> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let task = task.ok()?.path();
            let name = std::fs::read_to_string(task.join("comm")).ok()?;
            if !name.starts_with("serve-worker-") {
                return None;
            }
            std::fs::File::open(task.join("schedstat")).ok()
        })
        .collect()
}

/// Their on-CPU nanoseconds (the first field), read again from the start.
fn worker_cpu(files: &[std::fs::File]) -> u64 {
    use std::os::unix::fs::FileExt;
    files
        .iter()
        .map(|file| {
            let mut text = [0u8; 128];
            let n = file.read_at(&mut text, 0).unwrap();
            let text = std::str::from_utf8(&text[..n]).unwrap();
            text.split_whitespace()
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum()
}

#[test]
fn out_of_descriptors_the_server_backs_off_and_recovers() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("f"), b"hello").unwrap();
    let address = serve_with(root.path(), |config| config.workers = 2);
    let mut warm = common::RawClient::connect(address);
    assert_eq!(warm.get("/f", "").status, 200);
    drop(warm);
    // The workers start as the server runs: wait for both.
    let deadline = Instant::now() + Duration::from_secs(10);
    let schedstats = loop {
        let files = worker_schedstats();
        if files.len() == 2 {
            break files;
        }
        assert!(Instant::now() < deadline, "{} workers", files.len());
        std::thread::sleep(Duration::from_millis(20));
    };

    let before = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(512),
            maximum: before.maximum,
        },
    )
    .unwrap();
    let mut held = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(file) => held.push(file),
            Err(error) => {
                assert_eq!(
                    error.raw_os_error(),
                    Some(rustix::io::Errno::MFILE.raw_os_error())
                );
                break;
            }
        }
    }
    // One descriptor for the client; none is left for the server's accept.
    held.pop();
    let mut client = TcpStream::connect(address).unwrap();
    client
        .write_all(b"GET /f HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (cpu, started) = (worker_cpu(&schedstats), Instant::now());
    std::thread::sleep(Duration::from_secs(1));
    let burnt = Duration::from_nanos(worker_cpu(&schedstats) - cpu);
    let elapsed = started.elapsed();
    // A worker spinning on the listener would burn about all of it.
    assert!(
        burnt < elapsed / 5,
        "the workers burnt {burnt:?} of CPU in {elapsed:?} while accept failed"
    );

    drop(held);
    setrlimit(Resource::Nofile, before).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut response = Vec::new();
    client.read_to_end(&mut response).unwrap();
    assert!(
        response.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&response)
    );
    assert!(response.ends_with(b"hello"));
}
