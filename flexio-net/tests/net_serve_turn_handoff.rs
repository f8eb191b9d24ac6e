//! `serve` hands a long body's next turn to another body worker only when
//! another connection waits for one: a lone download stays on the body
//! worker that took it (no wake-up and switch per turn). Alone in its own
//! test binary, so no other test's server runs body workers meanwhile.

mod common;

use std::time::Duration;

use common::{serve_with, RawClient};

/// The on-CPU nanoseconds of each `serve-body-*` thread of this process
/// (the first field of its schedstat, `proc(5)`).
fn body_worker_cpu() -> Vec<(String, u64)> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let task = task.ok()?.path();
            let name = std::fs::read_to_string(task.join("comm")).ok()?;
            let name = name.trim().to_string();
            if !name.starts_with("serve-body-") {
                return None;
            }
            let schedstat = std::fs::read_to_string(task.join("schedstat")).ok()?;
            let ns = schedstat.split_whitespace().next()?.parse().ok()?;
            Some((name, ns))
        })
        .collect()
}

#[test]
fn a_lone_download_stays_on_one_body_worker() {
    if !std::path::Path::new("/proc/self/schedstat").exists() {
        common::skipped("this kernel has no schedstat (CONFIG_SCHED_INFO)");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let size = 64usize << 20;
    // Sparse: the test looks at the server's threads, not the disk.
    std::fs::File::create(root.path().join("long"))
        .unwrap()
        .set_len(size as u64)
        .unwrap();
    let address = serve_with(root.path(), |config| {
        config.workers = 4;
        config.max_chunk = 256 << 10;
    });
    let mut client = RawClient::connect(address);
    // The workers have started and settled.
    assert_eq!(client.get("/missing", "").status, 404);
    std::thread::sleep(Duration::from_millis(200));
    let before = body_worker_cpu();
    assert_eq!(before.len(), 4, "{before:?}");
    // 256 turns of one body, with nobody else waiting for a turn.
    let response = client.get("/long", "");
    assert_eq!(response.body.len(), size);
    let after = body_worker_cpu();
    // What each ran meanwhile. A worker that only moves from waiting for
    // the queue's lock to waiting on the queue runs too, for microseconds:
    // the turns are where the time goes.
    let ran: Vec<(String, u64)> = after
        .iter()
        .map(|(name, ns)| {
            let was = before
                .iter()
                .find(|(was, _)| was == name)
                .map_or(0, |(_, ns)| *ns);
            (name.clone(), ns - was)
        })
        .collect();
    let total: u64 = ran.iter().map(|(_, ns)| ns).sum();
    let most = ran.iter().map(|(_, ns)| *ns).max().unwrap();
    assert!(
        most * 10 >= total * 9,
        "no body worker took 90% of the turns' CPU: {ran:?} (ns)"
    );
}
