//! `flexio serve --cache` against `flexio serve` for a hot set during a
//! scan: the server runs as a process (this very `flexio`), in a memory
//! group limited to the cache size plus an allowance for its own memory
//! when root, so the page cache behind sendfile gets the same budget as the
//! block cache. Hot readers fetch zipf-drawn 4 KiB ranges of the hot region
//! over kept-alive connections, first alone, then while one client scans
//! the region after it (four times the cache) in 1 MiB ranges as fast as
//! it can; the hot readers' requests per second in both windows, and the
//! scan's MiB/s.

use std::io::{self, BufRead, BufReader};
use std::net::SocketAddr;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{CacheBenchOptions, DataFile, HotSetShape, Spread, BLOCK, MIB};
use crate::memory_group::MemoryGroup;
use flexio_harness::clients::Probe;

/// Memory a server needs besides its cache: with the cache, each worker's
/// 256 KiB piece buffer and the staging buffers of its misses (up to
/// 1.3 MiB with read-ahead), the heap, thread stacks, io_uring rings (at
/// 8 MiB, `serve --cache` was killed by the group's OOM killer; at 16 MiB
/// too, once in four rounds, its anonymous memory at 33 MB beside a
/// 16 MiB cache). The same limit for both, so the page cache behind plain
/// `serve` may use what its process leaves of the allowance: more than
/// the cache's memory, an edge for plain `serve`.
pub(crate) const SERVER_ALLOWANCE: u64 = 24 << 20;

/// The scan's request size.
const SCAN_PIECE: u64 = MIB;

/// One contender's figures.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServeRow {
    /// `serve` (sendfile through the page cache) or `serve --cache SIZE`.
    pub server: String,
    /// Hot 4 KiB requests per second, all readers, without a scan.
    pub hot_alone_requests_per_s: Spread,
    /// The same while one client scans.
    pub hot_with_scan_requests_per_s: Spread,
    /// The scanning client's MiB/s meanwhile.
    pub scan_mib_s: Spread,
    /// Median with scan over median alone.
    pub kept: f64,
}

/// The comparison.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServeFigures {
    /// The setup, in words.
    pub setup: String,
    /// `serve`, then `serve --cache`.
    pub rows: Vec<ServeRow>,
    /// `serve --cache` hot requests per second during the scan over
    /// `serve`'s (medians).
    pub cache_over_plain_with_scan: f64,
}

/// A running `flexio serve`, killed on drop (before its memory group is
/// removed: fields drop in order).
struct Served {
    child: Child,
    address: SocketAddr,
    group: Option<MemoryGroup>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(
    exe: &Path,
    dir: &Path,
    cache: Option<u64>,
    limit: u64,
    note: &mut Option<String>,
) -> io::Result<Served> {
    let mut command = Command::new(exe);
    command
        .arg("serve")
        .arg(dir)
        .args(["--listen", "127.0.0.1:0", "--workers", "4"]);
    if let Some(bytes) = cache {
        command.args(["--cache", &bytes.to_string()]);
    }
    // Gone with the bench, even one killed with `kill -9`.
    let child = flexio_sys::process::terminate_with_parent(&mut command)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    // Moved into the group before it serves anything.
    let group = match MemoryGroup::new("cache-bench-serve", limit) {
        Ok(group) => Some(group),
        Err(why) => {
            note.get_or_insert(format!("no memory limit on the servers ({why})"));
            None
        }
    };
    let mut served = Served {
        address: SocketAddr::from(([127, 0, 0, 1], 0)),
        child,
        group,
    };
    if let Some(group) = &served.group {
        group.add(served.child.id()).map_err(io::Error::other)?;
    }
    let mut line = String::new();
    let stdout = served.child.stdout.take().expect("piped");
    BufReader::new(stdout).read_line(&mut line)?;
    served.address = line
        .split_whitespace()
        .find_map(|word| word.strip_prefix("http://"))
        .and_then(|rest| rest.trim_end_matches('/').parse().ok())
        .ok_or_else(|| io::Error::other(format!("no address in {line:?}")))?;
    Ok(served)
}

/// GETs bytes `first..first + length` of `/data` over `probe`, each
/// read waiting at most 30 s; the status and the length are checked.
fn get_range(probe: &mut Probe, first: u64, length: u64) -> io::Result<()> {
    match probe.get("/data", Some(first..first + length), None)? {
        Some(body) if body.complete() => Ok(()),
        _ => Err(io::Error::other(format!(
            "GET /data bytes {first}+{length}: cut short"
        ))),
    }
}

/// Each reader's first `warm` draws, fetched concurrently: the server's
/// cache (either kind) holds the hot set before anything is timed.
fn warm_up(address: SocketAddr, draws: &[Vec<u64>], warm: usize) -> io::Result<()> {
    std::thread::scope(|scope| {
        let readers: Vec<_> = draws
            .iter()
            .map(|draw| {
                scope.spawn(move || -> io::Result<()> {
                    let mut probe = Probe::connect(address)?;
                    for &block in &draw[..warm.min(draw.len())] {
                        get_range(&mut probe, block * BLOCK as u64, BLOCK as u64)?;
                    }
                    Ok(())
                })
            })
            .collect();
        readers
            .into_iter()
            .try_for_each(|reader| reader.join().expect("no panic"))
    })
}

/// Hot requests per second and the scan's MiB/s over `window` (the scan
/// only when `scan`).
fn window(
    address: SocketAddr,
    shape: &HotSetShape,
    draws: &[Vec<u64>],
    scan: bool,
    window: Duration,
) -> io::Result<(f64, f64)> {
    let hot_requests = AtomicU64::new(0);
    let scanned = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|scope| -> io::Result<()> {
        let readers: Vec<_> = draws
            .iter()
            .map(|draw| {
                let (hot_requests, stop) = (&hot_requests, &stop);
                scope.spawn(move || -> io::Result<()> {
                    let mut probe = Probe::connect(address)?;
                    for &block in draw.iter().cycle() {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        get_range(&mut probe, block * BLOCK as u64, BLOCK as u64)?;
                        hot_requests.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        let scanner = scan.then(|| {
            let (scanned, stop) = (&scanned, &stop);
            scope.spawn(move || -> io::Result<()> {
                let mut probe = Probe::connect(address)?;
                let (from, to) = (
                    shape.hot_blocks * BLOCK as u64,
                    (shape.hot_blocks + shape.scan_blocks) * BLOCK as u64,
                );
                let mut at = from;
                while !stop.load(Ordering::Relaxed) {
                    let length = SCAN_PIECE.min(to - at);
                    get_range(&mut probe, at, length)?;
                    scanned.fetch_add(length, Ordering::Relaxed);
                    at = if at + length >= to { from } else { at + length };
                }
                Ok(())
            })
        });
        std::thread::sleep(window);
        stop.store(true, Ordering::Relaxed);
        for reader in readers {
            reader.join().expect("no panic")?;
        }
        if let Some(scanner) = scanner {
            scanner.join().expect("no panic")?;
        }
        Ok(())
    })?;
    let seconds = start.elapsed().as_secs_f64();
    Ok((
        hot_requests.load(Ordering::Relaxed) as f64 / seconds,
        scanned.load(Ordering::Relaxed) as f64 / MIB as f64 / seconds,
    ))
}

/// Runs the comparison on a file of the hot-set experiment's shape;
/// `Err` with the reason when it cannot (no `flexio` executable).
pub(crate) fn compare(
    options: &CacheBenchOptions,
    runs: u32,
    progress: &mut dyn FnMut(&str),
) -> io::Result<ServeFigures> {
    let exe: PathBuf = options
        .flexio_exe
        .clone()
        .ok_or_else(|| io::Error::other("skipped: no flexio executable to serve with"))?;
    let shape = HotSetShape::of(options);
    let served_dir = options.dir.join("flexio-cache-bench-served");
    std::fs::create_dir_all(&served_dir)?;
    let result = compare_in(options, runs, progress, &exe, &shape, &served_dir);
    let _ = std::fs::remove_dir_all(&served_dir);
    result
}

fn compare_in(
    options: &CacheBenchOptions,
    runs: u32,
    progress: &mut dyn FnMut(&str),
    exe: &Path,
    shape: &HotSetShape,
    served_dir: &Path,
) -> io::Result<ServeFigures> {
    let data = DataFile::new(served_dir, "data", shape.file_bytes())?;
    let draws = shape.draws();
    let warm = shape.reads / 2;
    let limit = options.cache_bytes + SERVER_ALLOWANCE;
    let mut note = None;
    let contenders = [None, Some(options.cache_bytes)];
    // [contender] -> (alone, with scan, scan MiB/s) per round
    let mut figures = vec![(Vec::new(), Vec::new(), Vec::new()); contenders.len()];
    for round in 0..=runs {
        for (index, cache) in contenders.iter().enumerate() {
            progress(&format!(
                "cache: serve{} for a hot set during a scan, round {round}",
                if cache.is_some() { " --cache" } else { "" }
            ));
            // Cold for both: the file's pages dropped, a fresh server.
            let file = std::fs::File::open(&data.0)?;
            rustix::fs::fadvise(
                &file,
                0,
                NonZeroU64::new(shape.file_bytes()),
                rustix::fs::Advice::DontNeed,
            )?;
            let server = start(exe, served_dir, *cache, limit, &mut note)?;
            warm_up(server.address, &draws, warm)?;
            let (alone, _) = window(server.address, shape, &draws, false, options.serve_window)?;
            let (with_scan, scan) =
                window(server.address, shape, &draws, true, options.serve_window)?;
            drop(server);
            if round > 0 {
                figures[index].0.push(alone);
                figures[index].1.push(with_scan);
                figures[index].2.push(scan);
            }
        }
    }
    let rows: Vec<ServeRow> = contenders
        .iter()
        .zip(&figures)
        .map(|(cache, (alone, with_scan, scan))| {
            let (alone, with_scan) = (Spread::of(alone), Spread::of(with_scan));
            ServeRow {
                server: match cache {
                    Some(bytes) => format!("serve --cache {}MiB", bytes / MIB),
                    None => "serve (sendfile)".into(),
                },
                kept: with_scan.median / alone.median.max(f64::MIN_POSITIVE),
                hot_alone_requests_per_s: alone,
                hot_with_scan_requests_per_s: with_scan,
                scan_mib_s: Spread::of(scan),
            }
        })
        .collect();
    let setup = format!(
        "{} hot readers over kept-alive connections, 4 KiB ranges drawn zipf 1.0 from {} blocks, {} requests each to warm up; one client scanning the next {} blocks in 1 MiB ranges; {:.1} s windows, servers with 4 workers, {}",
        shape.readers,
        shape.hot_blocks,
        warm,
        shape.scan_blocks,
        options.serve_window.as_secs_f64(),
        note.unwrap_or_else(|| format!(
            "each in a cgroup-v1 memory group of the cache size + {} MiB",
            SERVER_ALLOWANCE / MIB
        ))
    );
    Ok(ServeFigures {
        setup,
        cache_over_plain_with_scan: rows[1].hot_with_scan_requests_per_s.median
            / rows[0]
                .hot_with_scan_requests_per_s
                .median
                .max(f64::MIN_POSITIVE),
        rows,
    })
}
