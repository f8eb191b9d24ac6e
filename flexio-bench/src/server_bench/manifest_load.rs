//! Latency beside hashing: `clients` clients each ask `?manifest` of a
//! different file that the server has not hashed (a fresh `flexio serve`
//! per round, so its hash cache is empty), while one client's 4 KiB GETs
//! measure the probe's latency. The server hashes in its offload pool, off
//! the event loop; the probe's p99 says whether that holds. flexio only:
//! nginx has no manifests.

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::clients::fetch_once;
use super::servers::ServerProcess;
use super::wrk::{Load, WrkReport};

/// The names of the files whose manifests are asked (`manifest-0` …).
pub(crate) fn file_name(index: usize) -> String {
    format!("manifest-{index}")
}

/// One round: the probe beside the manifests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestLatency {
    /// Round, from 1.
    pub round: usize,
    /// Bytes of each file whose manifest was asked.
    pub file_size: u64,
    /// The probe (one client, 4 KiB GETs) while the manifests ran.
    pub probe: WrkReport,
    /// Seconds from the manifests' start to the probe's start and end.
    pub probe_window_s: (f64, f64),
    /// Seconds from the manifests' start to each manifest's last byte.
    pub manifest_s: Vec<f64>,
}

impl ManifestLatency {
    /// The share of the probe's window during which hashing went on (a
    /// manifest not answered yet): 1.0 when it outlasted the probe. The
    /// server hashes a few files at a time (half the CPUs), so the last
    /// manifest's end, not the first's, is when the hashing stopped.
    pub fn overlap(&self) -> f64 {
        let (start, end) = self.probe_window_s;
        let last_done = self.manifest_s.iter().copied().fold(0.0, f64::max);
        ((last_done.min(end) - start) / (end - start).max(1e-9)).clamp(0.0, 1.0)
    }
}

/// Runs one round on a fresh `flexio serve ROOT` (the files
/// `manifest-0` … `manifest-{clients-1}` and `probe` already in ROOT).
///
/// # Errors
/// The server does not start, wrk fails, or a manifest request fails.
pub fn round(
    flexio: &Path,
    root: &Path,
    probe: &str,
    clients: usize,
    file_size: u64,
    duration: Duration,
    round: usize,
) -> io::Result<ManifestLatency> {
    let server = ServerProcess::flexio(flexio, root, &[], None)?;
    let address = server.address;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(600);
    let askers: Vec<_> = (0..clients)
        .map(|index| {
            let path = format!("/{}?manifest", file_name(index));
            std::thread::spawn(move || fetch_once(address, &path, deadline))
        })
        .collect();
    // The requests reach the server and its hashing starts before the
    // probe does.
    std::thread::sleep(Duration::from_millis(100));
    let probe_start = started.elapsed().as_secs_f64();
    let probe = Load {
        connections: 1,
        threads: 1,
        duration,
        timeout: Duration::from_secs(10),
    }
    .run(&server.url(probe))?;
    let probe_end = probe_start + duration.as_secs_f64();
    let mut manifest_s = Vec::with_capacity(clients);
    for asker in askers {
        let (_, done) = asker
            .join()
            .map_err(|_| io::Error::other("a manifest client panicked"))??;
        manifest_s.push((done - started).as_secs_f64());
    }
    Ok(ManifestLatency {
        round,
        file_size,
        probe,
        probe_window_s: (probe_start, probe_end),
        manifest_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished_at(manifest_s: Vec<f64>) -> ManifestLatency {
        ManifestLatency {
            round: 1,
            file_size: 1 << 30,
            probe: WrkReport::default(),
            probe_window_s: (0.1, 2.1),
            manifest_s,
        }
    }

    #[test]
    fn the_hashing_lasts_until_the_last_manifest_is_answered() {
        // One at a time: the first is done early, the hashing goes on.
        assert_eq!(finished_at(vec![0.4, 0.7, 2.5]).overlap(), 1.0);
        assert!((finished_at(vec![0.4, 1.1]).overlap() - 0.5).abs() < 1e-9);
        assert_eq!(finished_at(vec![0.05]).overlap(), 0.0);
    }
}
