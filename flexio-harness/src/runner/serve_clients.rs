//! The serve-clients cells, Cue's Table 8 (wuftpd sending one file to 1-4
//! clients by read/write or by Cue): `flexio serve --via MECHANISM` (and
//! `--schedule K,T`, Cue's, in a scheduled cell) as a process on loopback, started before the window, and N clients, each a
//! thread of the bench with a connection of its own fetching the whole
//! source once, all starting together. Each client's rate (its bytes over
//! the time from the common start to its last byte) is kept as a flow's;
//! the CPU charged is the server's (all its threads, user + system not
//! split), as wuftpd's was on its own machine.

use std::io;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use flexio::measure::Rusage;
use flexio::pace::Schedule;
use flexio::{MechanismName, Params};

use super::other;
use crate::clients::fetch_once;
use crate::servers::ServerProcess;
use crate::window::{CpuScope, Measured, Window};

/// The longest one run may take: 1-4 clients of a file of at most a few
/// hundred MiB over loopback take seconds.
const DEADLINE: Duration = Duration::from_secs(300);

/// One run: `clients` clients fetch `source` from `flexio serve` (the
/// executable `flexio`) sending by `mechanism` with `params`' chunk,
/// every body under `schedule` when there is one.
pub(super) fn run(
    flexio: &Path,
    source: &Path,
    mechanism: MechanismName,
    params: &Params,
    schedule: Option<Schedule>,
    clients: u32,
) -> io::Result<Measured> {
    let (Some(root), Some(name)) = (source.parent(), source.file_name()) else {
        return Err(other(format!(
            "{}: no directory to serve",
            source.display()
        )));
    };
    let path = format!("/{}", name.to_string_lossy());
    let mut flags = vec![
        "--via".to_string(),
        mechanism.as_str().to_string(),
        "--chunk".to_string(),
        params.chunk.to_string(),
    ];
    if let Some(schedule) = schedule {
        flags.push("--schedule".into());
        // Whole milliseconds as a plain number (0 included), others
        // with their unit.
        let pause = schedule.pause;
        let pause = match pause.as_nanos() % 1_000_000 {
            0 => pause.as_millis().to_string(),
            _ => format!("{}ms", pause.as_secs_f64() * 1e3),
        };
        flags.push(format!("{},{pause}", schedule.chunks));
    }
    let server = ServerProcess::flexio(flexio, root, &flags, None)?;
    let address = server.address;
    let cpu_before = server.cpu_seconds()?;
    let start = Arc::new(Barrier::new(clients as usize + 1));
    let deadline = Instant::now() + DEADLINE;
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (start, path) = (Arc::clone(&start), path.clone());
            std::thread::spawn(move || {
                start.wait();
                fetch_once(address, &path, deadline)
            })
        })
        .collect();
    let window = Window::open(CpuScope::Process);
    let started = Instant::now();
    start.wait();
    let fetched: Vec<io::Result<(u64, Instant)>> = handles
        .into_iter()
        .map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(other("a client thread panicked")))
        })
        .collect();
    let fetched: Vec<(u64, Instant)> = fetched.into_iter().collect::<io::Result<_>>()?;
    let bytes = fetched.iter().map(|(b, _)| b).sum();
    let mut measured = window.close(bytes, Some(mechanism.as_str()));
    let server_ns = ((server.cpu_seconds()? - cpu_before).max(0.0) * 1e9) as u64;
    measured.charge(&Rusage {
        user_ns: server_ns,
        cpu_ns: server_ns,
        ..Rusage::default()
    });
    measured.flow_rates = fetched
        .iter()
        .map(|&(bytes, done)| bytes as f64 / done.duration_since(started).as_secs_f64().max(1e-9))
        .collect();
    Ok(measured)
}
