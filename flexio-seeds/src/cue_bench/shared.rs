//! Table 8 behind a shared bottleneck: `flexio serve` as a process sends
//! one file to 1-4 clients at once with `--rate-total` [`SHARED_RATE`],
//! one token bucket that all its connections draw on, as wuftpd's clients
//! shared one DECstation. Whether a schedule keeps each client at its own
//! rate as the clients grow is then a finding, not the loopback's
//! plenty: a schedule whose clients together ask for less than the
//! bucket keeps its rate, an unpaced server's clients split the bucket.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use flexio::MechanismName;
use flexio_harness::clients::fetch_once;
use flexio_harness::servers::ServerProcess;

use crate::thesis_bench::{ThesisOptions, ThesisOutcome, ThesisPoint};

/// The bucket all connections share: 3 MiB/s. Four clients under
/// (1, 16 ms) or (4, 70 ms) in 8 KiB chunks ask for 2.0 and 1.8 MB/s
/// together, less than it; two under (4, 16 ms) ask for 4 MB/s, four
/// under (3, 16 ms) 6 MB/s, more; an unpaced server's clients ask for all.
pub const SHARED_RATE: u64 = 3 << 20;

/// Rounds per point, the median kept.
const ROUNDS: usize = 3;

/// One server of Table 8: its series, mechanism and schedule (K, T ms).
#[derive(Clone, Debug)]
pub struct Server {
    /// The series its points go to.
    pub series: String,
    /// `--via`.
    pub mechanism: MechanismName,
    /// `--schedule K,T`, if any.
    pub schedule: Option<(u32, u64)>,
}

/// Each of `servers` to 1-4 clients sharing [`SHARED_RATE`]: points of
/// KB/s at each client (the median client of a run; over the rounds the
/// median, with its round spread).
pub fn shared_link(options: &ThesisOptions, servers: &[Server]) -> ThesisOutcome {
    let size: u64 = if options.quick { 1 << 20 } else { 4 << 20 };
    let root = options.dir.join("cue-shared");
    let made = std::fs::create_dir_all(&root)
        .and_then(|()| std::fs::write(root.join("file"), pattern(size)));
    if let Err(e) = made {
        return ThesisOutcome {
            shortfall: Some(format!("write {}: {e}", root.display())),
            ..ThesisOutcome::default()
        };
    }
    let mut points = Vec::new();
    let mut shortfall = None;
    'servers: for server in servers {
        for clients in 1..=4u32 {
            if options.stop.load(std::sync::atomic::Ordering::Relaxed) {
                shortfall = Some("stopped by a signal".to_string());
                break 'servers;
            }
            match point(options, &root, server, clients, size) {
                Ok(p) => points.push(p),
                Err(e) => {
                    shortfall = Some(format!("{} to {clients} clients: {e}", server.series));
                    break 'servers;
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    ThesisOutcome {
        points,
        shortfall,
        setting: format!(
            "Table 8's shared bottleneck: `flexio serve --rate-total {}` (one token bucket, \
             {} MiB/s, that every connection draws on; --max-chunk 64K, so a burst is 64 KiB) \
             sending a {} MiB file over loopback to 1-4 clients at once, {} rounds each",
            SHARED_RATE,
            SHARED_RATE >> 20,
            size >> 20,
            options.rounds_of(ROUNDS)
        ),
    }
}

/// `server`'s point at `clients`: [`ROUNDS`] runs (within `--runs`),
/// each a fresh server.
fn point(
    options: &ThesisOptions,
    root: &Path,
    server: &Server,
    clients: u32,
    size: u64,
) -> io::Result<ThesisPoint> {
    let mut rates = Vec::new();
    while options.another_round(rates.len(), ROUNDS, [&rates[..]]) {
        let process = start(&options.flexio, root, server)?;
        let mut each = fetch_all(process.address, clients, size)?;
        rates.push(flexio_bench::stats::median(&mut each) / 1024.0);
    }
    let rounds = rates.len();
    let (low, high) = flexio_bench::stats::round_spread(&rates).unwrap_or((f64::NAN, f64::NAN));
    Ok(ThesisPoint {
        series: server.series.clone(),
        x: f64::from(clients),
        y: flexio_bench::stats::median(&mut rates),
        spread: Some((low, high, rounds)),
    })
}

/// `flexio serve` with the shared bucket, listening.
fn start(flexio: &Path, root: &Path, server: &Server) -> io::Result<ServerProcess> {
    let mut flags: Vec<String> = vec![
        "--via".into(),
        server.mechanism.as_str().into(),
        "--chunk".into(),
        "8192".into(),
        "--rate-total".into(),
        SHARED_RATE.to_string(),
        "--max-chunk".into(),
        "64K".into(),
    ];
    if let Some((k, t)) = server.schedule {
        flags.push("--schedule".into());
        flags.push(format!("{k},{t}"));
    }
    ServerProcess::flexio(flexio, root, &flags, None)
}

/// `clients` clients fetch `/file` at once: each one's bytes per second
/// from the common start to its last byte.
fn fetch_all(address: SocketAddr, clients: u32, size: u64) -> io::Result<Vec<f64>> {
    let start = Arc::new(Barrier::new(clients as usize + 1));
    let deadline = Instant::now() + Duration::from_secs(120);
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                fetch_once(address, "/file", deadline)
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    let mut rates = Vec::new();
    for handle in handles {
        let joined = handle
            .join()
            .map_err(|_| io::Error::other("a client thread panicked"))?;
        let (bytes, done) = joined?;
        if bytes != size {
            return Err(io::Error::other(format!(
                "a client got {bytes} bytes of {size}"
            )));
        }
        let seconds = done.duration_since(began).as_secs_f64().max(1e-9);
        rates.push(bytes as f64 / seconds);
    }
    Ok(rates)
}

/// `size` bytes of a pattern.
fn pattern(size: u64) -> Vec<u8> {
    (0..size).map(|i| (i % 251) as u8).collect()
}
