//! `serve`'s body workers run at the process's nice value while their
//! body is the only one being sent, and 10 nicer when idle or beside other
//! bodies. Lowering a thread's nice value again needs privilege, so the
//! test needs root. Alone in its own test binary: no other test's server
//! has body workers meanwhile.

mod common;

use std::time::{Duration, Instant};

use common::{serve_with, RawClient};

/// The nice value of each `serve-body-*` thread of this process.
fn body_worker_nice() -> Vec<i64> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let task = task.ok()?.path();
            let name = std::fs::read_to_string(task.join("comm")).ok()?;
            if !name.starts_with("serve-body-") {
                return None;
            }
            let stat = std::fs::read_to_string(task.join("stat")).ok()?;
            // After the ")" closing the name, nice is the 19th field of
            // stat, the 17th here.
            let after = &stat[stat.rfind(')')? + 2..];
            after.split_whitespace().nth(16)?.parse().ok()
        })
        .collect()
}

/// Waits (at most 10 s) until `check` holds for the body workers' nice
/// values; panics with `what` and the last values otherwise.
fn wait_for(what: &str, check: impl Fn(&[i64]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let nice = body_worker_nice();
        if check(&nice) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: body workers at {nice:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_lone_body_is_sent_at_the_process_priority_and_idle_workers_run_nicer() {
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var("FLEXIO_TEST_PRIVILEGED").as_deref() != Ok("1"),
            "lowering a thread's nice value needs root, and FLEXIO_TEST_PRIVILEGED=1 forbids skipping"
        );
        common::skipped("lowering a thread's nice value again needs root");
        return;
    }
    let own = rustix::process::getpriority_process(None).unwrap() as i64;
    let nicer = (own + 10).min(19);
    let root = tempfile::tempdir().unwrap();
    let long = 64u64 << 20;
    // Sparse: the test looks at the server's threads, not the disk.
    std::fs::File::create(root.path().join("long"))
        .unwrap()
        .set_len(long)
        .unwrap();
    let address = serve_with(root.path(), |config| config.workers = 2);
    wait_for("idle", |nice| {
        nice.len() == 2 && nice.iter().all(|&n| n == nicer)
    });

    // One body, not read: its worker blocks in sendfile at the process's
    // nice value.
    let mut lone = RawClient::connect(address);
    lone.send(b"GET /long HTTP/1.1\r\nHost: test\r\n\r\n");
    wait_for("one body", |nice| nice.contains(&own));
    // Until the socket's buffers are full and its worker sits in sendfile,
    // where its priority stays as it is.
    std::thread::sleep(Duration::from_millis(500));

    // A second body beside it: the worker that takes it runs nicer.
    let mut second = RawClient::connect(address);
    second.send(b"GET /long HTTP/1.1\r\nHost: test\r\n\r\n");
    wait_for("two bodies", |nice| {
        nice.contains(&nicer) && nice.contains(&own)
    });

    for client in [&mut lone, &mut second] {
        let response = client.read_response(false);
        assert_eq!(response.body.len() as u64, long);
    }
    wait_for("idle again", |nice| nice.iter().all(|&n| n == nicer));
}
