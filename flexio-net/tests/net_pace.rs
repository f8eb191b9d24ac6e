//! `serve`'s rate limits and fair turns, seen by clients over loopback.

mod common;

use std::time::{Duration, Instant};

use common::{pattern, serve_with, RawClient};
use flexio::pace::Rate;

/// Fetches `target` on a fresh connection; returns the body's length and
/// the seconds it took.
fn timed_get(address: std::net::SocketAddr, target: &str) -> (usize, f64) {
    let started = Instant::now();
    let mut client = RawClient::connect(address);
    let response = client.get(target, "");
    assert_eq!(response.status, 200);
    (response.body.len(), started.elapsed().as_secs_f64())
}

/// Two clients at once; each one's bytes over its own time.
fn two_clients(address: std::net::SocketAddr) -> [(usize, f64); 2] {
    let a = std::thread::spawn(move || timed_get(address, "/big"));
    let b = std::thread::spawn(move || timed_get(address, "/big"));
    [a.join().unwrap(), b.join().unwrap()]
}

#[test]
fn serve_holds_each_clients_rate_and_the_total() {
    let root = tempfile::tempdir().unwrap();
    let size = 3usize << 20;
    std::fs::write(root.path().join("big"), pattern(size, 3)).unwrap();

    // Per client: 4 MiB/s each, whatever the other does.
    let per_client = 4u64 << 20;
    let address = serve_with(root.path(), |config| {
        config.rate_per_client = Some(Rate::new(per_client).unwrap());
    });
    let burst = Rate::new(per_client).unwrap().default_burst();
    for (bytes, seconds) in two_clients(address) {
        assert_eq!(bytes, size);
        let rate = bytes as f64 / seconds;
        // Never faster than the bucket allows (its burst, and one turn
        // past it); late by at most a fifth on a loaded machine.
        let most = (per_client as f64 * seconds + 2.0 * burst as f64) / seconds;
        assert!(rate <= most, "{rate:.0} B/s for a limit of {per_client}");
        assert!(
            rate >= per_client as f64 * 0.8,
            "{rate:.0} B/s for {per_client}"
        );
    }

    // In total: 4 MiB/s shared, so about 2 MiB/s each, both finishing
    // near the same time (the deferred connections take turns).
    let total = 4u64 << 20;
    let address = serve_with(root.path(), |config| {
        config.rate_total = Some(Rate::new(total).unwrap());
    });
    let started = Instant::now();
    let both = two_clients(address);
    let elapsed = started.elapsed().as_secs_f64();
    let moved: usize = both.iter().map(|(bytes, _)| bytes).sum();
    let burst = Rate::new(total).unwrap().default_burst() as f64;
    assert!(
        moved as f64 <= total as f64 * elapsed + 3.0 * burst,
        "{moved} bytes in {elapsed:.3} s over a total of {total} B/s"
    );
    assert!(moved as f64 / elapsed >= total as f64 * 0.8);
    let (fast, slow) = (both[0].1.min(both[1].1), both[0].1.max(both[1].1));
    assert!(
        fast >= slow * 0.8,
        "one client took {fast:.3} s, the other {slow:.3} s"
    );
}

#[test]
fn a_small_request_is_not_stuck_behind_a_large_one() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("big"), pattern(8 << 20, 5)).unwrap();
    std::fs::write(root.path().join("small"), pattern(4096, 6)).unwrap();
    // One worker, and a large body that takes a second at its rate: the
    // worker must not sleep with it, and must not send all of it first.
    let address = serve_with(root.path(), |config| {
        config.workers = 1;
        config.rate_per_client = Some(Rate::new(8 << 20).unwrap());
        config.max_chunk = 256 << 10;
    });
    let large = std::thread::spawn(move || timed_get(address, "/big"));
    std::thread::sleep(Duration::from_millis(100));
    let (bytes, small) = timed_get(address, "/small");
    let (_, large) = large.join().unwrap();
    assert_eq!(bytes, 4096);
    assert!(
        small < large / 5.0,
        "4 KiB took {small:.3} s beside a large body of {large:.3} s"
    );
}
