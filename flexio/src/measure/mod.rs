//! Measuring a flow: process resource use, host CPU, clocks, and the page
//! cache state and data layout of a source.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::fs::SeekFrom;
use serde::{Deserialize, Serialize};

use crate::sys::cachestat;
use crate::sys::mapping::Mapping;
use crate::sys::rusage::rusage_self;
pub use crate::sys::rusage::{children_rusage, thread_rusage, Rusage};

/// A reading of the clocks and counters at one instant.
#[derive(Clone, Debug)]
pub struct Sample {
    at: Instant,
    rusage: Rusage,
    host: HostCpu,
}

/// What happened between two samples.
#[derive(Clone, Copy, Debug, Default)]
pub struct Delta {
    /// Wall time.
    pub wall_ns: u64,
    /// Process user CPU.
    pub cpu_user_ns: u64,
    /// Process system CPU.
    pub cpu_sys_ns: u64,
    /// Host CPU busy time over all CPUs.
    pub host_busy_ns: u64,
    /// Voluntary context switches.
    pub voluntary_switches: u64,
    /// Involuntary context switches.
    pub involuntary_switches: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
}

/// What a timed window measured of a transfer: the fields a flow's
/// [`Report`](crate::Report) and a bench run's record both carry, listed
/// once here and flattened into each, so their JSON keeps these names.
/// Integer fields carry their unit in their name.
///
/// # Examples
/// ```
/// use flexio::measure::Measurement;
/// let moved = Measurement { bytes: 1 << 30, wall_ns: 500_000_000, cpu_user_ns: 100_000_000,
///     cpu_sys_ns: 400_000_000, host_cpu_busy_ns: 900_000_000 };
/// assert_eq!(moved.bytes_per_s(), 2.0 * (1u64 << 30) as f64);
/// assert_eq!(moved.cpu_seconds_per_gib(), 0.5);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measurement {
    /// Bytes moved (all flows of the window together).
    pub bytes: u64,
    /// Wall time of the timed window.
    pub wall_ns: u64,
    /// CPU time in user mode charged to the window (getrusage).
    pub cpu_user_ns: u64,
    /// CPU time in the kernel charged to the window.
    pub cpu_sys_ns: u64,
    /// CPU time the whole host was busy over the window, all CPUs
    /// (`/proc/stat`, in 1/USER_HZ steps).
    pub host_cpu_busy_ns: u64,
}

impl Measurement {
    /// `bytes` moved over the window `delta` describes, its CPU charged
    /// to the whole process.
    pub fn of(bytes: u64, delta: &Delta) -> Self {
        Measurement {
            bytes,
            wall_ns: delta.wall_ns,
            cpu_user_ns: delta.cpu_user_ns,
            cpu_sys_ns: delta.cpu_sys_ns,
            host_cpu_busy_ns: delta.host_busy_ns,
        }
    }

    /// Throughput in bytes per second of wall time (0 for an empty window).
    pub fn bytes_per_s(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.bytes as f64 * 1e9 / self.wall_ns as f64
        }
    }

    /// CPU seconds (user + system) per GiB moved (0 when nothing moved).
    pub fn cpu_seconds_per_gib(&self) -> f64 {
        if self.bytes == 0 {
            return 0.0;
        }
        (self.cpu_user_ns + self.cpu_sys_ns) as f64
            / 1e9
            / (self.bytes as f64 / (1u64 << 30) as f64)
    }
}

impl Sample {
    /// Reads the clocks and counters now.
    pub fn now() -> Self {
        let host = HostCpu::read();
        let rusage = rusage_self();
        Sample {
            at: Instant::now(),
            rusage,
            host,
        }
    }

    /// Reads only the clock: every counter of the sample is zero, and so
    /// is every difference but the wall time.
    pub fn wall_clock_only() -> Self {
        Sample {
            at: Instant::now(),
            rusage: Rusage::default(),
            host: HostCpu::default(),
        }
    }

    /// The difference from an earlier sample.
    pub fn since(&self, earlier: &Sample) -> Delta {
        let used = self.rusage.since(&earlier.rusage);
        Delta {
            wall_ns: self.at.duration_since(earlier.at).as_nanos() as u64,
            cpu_user_ns: used.user_ns,
            cpu_sys_ns: used.sys_ns,
            host_busy_ns: self.host.busy_ns.saturating_sub(earlier.host.busy_ns),
            voluntary_switches: used.voluntary_switches,
            involuntary_switches: used.involuntary_switches,
            minor_faults: used.minor_faults,
            major_faults: used.major_faults,
        }
    }
}

/// Host-wide CPU time from the first line of `/proc/stat`.
#[derive(Clone, Copy, Debug, Default)]
struct HostCpu {
    busy_ns: u64,
}

/// How long a `/proc/stat` reading is reused: a tenth of a clock tick at
/// the usual USER_HZ of 100. The counters move in whole ticks, so a
/// reading this young differs from a fresh one by at most the tick that
/// may have fallen in between — the counters' own resolution.
const HOST_READING_REUSE: Duration = Duration::from_millis(1);

/// `/proc/stat`, opened once per process, and its last reading. The
/// kernel writes the whole file (every interrupt's count) on each read,
/// about 7 µs on a small VM: a flow of a few KiB would spend most of its
/// time reading it before and after.
static PROC_STAT: Mutex<HostReader> = Mutex::new(HostReader {
    file: None,
    last: None,
});

struct HostReader {
    file: Option<File>,
    last: Option<(Instant, HostCpu)>,
}

impl HostCpu {
    /// The counters now; zero where `/proc/stat` cannot be read (then the
    /// host figures of a report are zero too).
    fn read() -> Self {
        let Ok(mut reader) = PROC_STAT.lock() else {
            return HostCpu::default();
        };
        let now = Instant::now();
        if let Some((at, reading)) = reader.last
            && now.duration_since(at) < HOST_READING_REUSE
        {
            return reading;
        }
        if reader.file.is_none() {
            reader.file = File::open("/proc/stat").ok();
        }
        // One `pread` at offset 0 regenerates the file; its first line,
        // the one wanted, is well inside the first 512 bytes.
        let mut head = [0u8; 512];
        let n = reader
            .file
            .as_ref()
            .and_then(|file| file.read_at(&mut head, 0).ok())
            .unwrap_or(0);
        let text = std::str::from_utf8(&head[..n]).unwrap_or_default();
        let reading = HostCpu {
            busy_ns: parse_busy_ns(text, rustix::param::clock_ticks_per_second()),
        };
        reader.last = Some((now, reading));
        reading
    }
}

/// Busy time in ns from `/proc/stat` text: every field of the `cpu` line but
/// idle and iowait (guest time is already inside user).
fn parse_busy_ns(stat: &str, ticks_per_second: u64) -> u64 {
    let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return 0;
    };
    let busy: u64 = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .filter_map(|(_, field)| field.parse::<u64>().ok())
        .sum();
    busy * (1_000_000_000 / ticks_per_second.max(1))
}

/// How much of a range was in the page cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Residency {
    /// Bytes in the page cache (whole pages, clamped to the range).
    pub resident_bytes: u64,
    /// Bytes in the range.
    pub total_bytes: u64,
    /// Bytes actually looked at, when the range was too large to look at
    /// whole and `resident_bytes` is estimated from evenly spread samples
    /// (0: the whole range was looked at).
    #[serde(default)]
    pub sampled_bytes: u64,
}

impl Residency {
    /// Resident share, 0 to 100.
    pub fn percent(&self) -> f64 {
        if self.total_bytes == 0 {
            100.0
        } else {
            self.resident_bytes as f64 * 100.0 / self.total_bytes as f64
        }
    }
}

/// Page-cache residency of `length` bytes of `fd` from `offset`: by
/// `cachestat(2)` where the kernel has it (one call, nothing mapped), else
/// by mapping the range in windows and asking `mincore(2)`; `None` if
/// neither can tell (an empty range is fully resident).
pub fn residency<Fd: AsFd>(fd: Fd, offset: u64, length: u64) -> Option<Residency> {
    if length == 0 {
        return Some(Residency {
            resident_bytes: 0,
            total_bytes: 0,
            sampled_bytes: 0,
        });
    }
    if length > SAMPLE_ABOVE
        && let Some(sampled) = residency_sampled(fd.as_fd(), offset, length)
    {
        return Some(sampled);
    }
    // ENOSYS (before 6.5), EPERM (kernels that ask for write access),
    // EOPNOTSUPP (hugetlbfs): mincore still answers.
    match cachestat::cached_pages(fd.as_fd(), offset, length) {
        Ok(pages) => Some(Residency {
            resident_bytes: (pages * rustix::param::page_size() as u64).min(length),
            total_bytes: length,
            sampled_bytes: 0,
        }),
        Err(_) => residency_by_mincore(fd, offset, length),
    }
}

/// Ranges larger than this are sampled: cachestat walks every page of
/// the range, 12 ms for 1 GiB here — 4% of a warm 1 GiB copy, for a field
/// of its report.
const SAMPLE_ABOVE: u64 = 64 << 20;

/// Samples spread evenly over a large range, and their size: 64 MiB looked
/// at in all, whatever the range.
const SAMPLES: u64 = 64;
const SAMPLE_BYTES: u64 = 1 << 20;

/// [`residency`] of a large range estimated from [`SAMPLES`] windows of
/// [`SAMPLE_BYTES`] spread evenly over it, by cachestat; `None` where the
/// kernel has no cachestat (the caller then looks at the whole range).
fn residency_sampled(fd: BorrowedFd<'_>, offset: u64, length: u64) -> Option<Residency> {
    let page = rustix::param::page_size() as u64;
    let stride = length / SAMPLES;
    let mut resident = 0u64;
    for sample in 0..SAMPLES {
        let at = (offset + sample * stride) / page * page;
        resident += cachestat::cached_pages(fd, at, SAMPLE_BYTES).ok()? * page;
    }
    let sampled = SAMPLES * SAMPLE_BYTES;
    let estimate = (resident.min(sampled) as u128 * length as u128 / sampled as u128) as u64;
    Some(Residency {
        resident_bytes: estimate.min(length),
        total_bytes: length,
        sampled_bytes: sampled,
    })
}

/// [`residency`] by `mincore(2)` over mappings of the range, 1 GiB at a
/// time.
fn residency_by_mincore<Fd: AsFd>(fd: Fd, offset: u64, length: u64) -> Option<Residency> {
    const WINDOW: u64 = 1 << 30;
    let page = rustix::param::page_size() as u64;
    let mut resident_pages = 0u64;
    let start = offset / page * page;
    let end = offset + length;
    let mut at = start;
    while at < end {
        let len = (end - at).min(WINDOW);
        let mapping = Mapping::map(fd.as_fd(), at, len as usize, false).ok()?;
        resident_pages += mapping.resident_pages().ok()?;
        at += len;
    }
    Some(Residency {
        resident_bytes: (resident_pages * page).min(length),
        total_bytes: length,
        sampled_bytes: 0,
    })
}

/// The data segments `(offset, length)` of `length` bytes of a file from
/// `offset`, found with `SEEK_DATA`/`SEEK_HOLE`; one segment for the whole
/// range where the file system does not report holes.
pub fn data_segments<Fd: AsFd>(fd: Fd, offset: u64, length: u64) -> io::Result<Vec<(u64, u64)>> {
    let end = offset + length;
    let mut segments = Vec::new();
    let mut at = offset;
    while at < end {
        let data = match rustix::fs::seek(fd.as_fd(), SeekFrom::Data(at)) {
            Ok(data) => data,
            // No data past `at`: the rest is a hole.
            Err(rustix::io::Errno::NXIO) => break,
            Err(rustix::io::Errno::INVAL) if segments.is_empty() => {
                return Ok(vec![(offset, length)])
            }
            Err(e) => return Err(e.into()),
        };
        if data >= end {
            break;
        }
        let hole = rustix::fs::seek(fd.as_fd(), SeekFrom::Hole(data))?.min(end);
        segments.push((data, hole - data));
        at = hole;
    }
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_excludes_idle_and_iowait() {
        let stat = "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 1 2 3 4\n";
        // user+nice+system+irq+softirq+steal = 100+5+50+3+2+1 = 161 ticks
        assert_eq!(parse_busy_ns(stat, 100), 161 * 10_000_000);
        assert_eq!(parse_busy_ns("", 100), 0);
    }

    #[test]
    fn host_cpu_is_read_from_the_held_proc_stat() {
        let first = HostCpu::read();
        assert!(first.busy_ns > 0, "a running machine has been busy");
        std::thread::sleep(HOST_READING_REUSE * 2);
        let fresh = HostCpu::read();
        assert!(fresh.busy_ns >= first.busy_ns, "the counters only grow");
        // Other tests' flows may have read since; the kept reading is this
        // one or a later one.
        let reader = PROC_STAT.lock().unwrap();
        let (at, reading) = reader.last.expect("a reading is kept");
        assert!(reading.busy_ns >= fresh.busy_ns);
        assert!(at.elapsed() < Duration::from_secs(60));
    }

    /// A file a quarter of which was read back into the cache after
    /// dropping it all.
    fn partly_cached_file() -> (tempfile::NamedTempFile, u64) {
        let page = rustix::param::page_size() as u64;
        let file = tempfile::NamedTempFile::new().unwrap();
        let len = 256 * page;
        file.as_file()
            .write_all_at(&vec![5u8; len as usize], 0)
            .unwrap();
        file.as_file().sync_all().unwrap();
        rustix::fs::fadvise(file.as_file(), 0, None, rustix::fs::Advice::DontNeed).unwrap();
        let mut quarter = vec![0u8; (len / 4) as usize];
        file.as_file()
            .read_exact_at(&mut quarter, 64 * page)
            .unwrap();
        (file, len)
    }

    #[test]
    fn cachestat_and_mincore_agree_on_a_file_partly_in_cache() {
        let (file, len) = partly_cached_file();
        let page = rustix::param::page_size() as u64;
        let whole = residency_by_mincore(file.as_file(), 0, len).unwrap();
        if whole.percent() == 100.0 {
            // tmpfs keeps every page whatever it is advised.
            eprintln!("skipped: the temporary directory's file system does not drop pages");
            return;
        }
        if let Err(error) = cachestat::cached_pages(file.as_file(), 0, len) {
            // Not a failure: the kernel (before 6.5) or its policy says no.
            eprintln!("skipped: cachestat(2) unavailable here ({error})");
            return;
        }
        let ranges = [
            (0, len),
            (0, 64 * page),
            (64 * page, 64 * page),
            (100, 70 * page),
            (60 * page + 1, page),
        ];
        for (offset, length) in ranges {
            // Read-ahead may still be landing: compare when two mincore
            // readings around the cachestat one agree, a few tries at most.
            let agreed = (0..20).any(|_| {
                let before = residency_by_mincore(file.as_file(), offset, length);
                let by_cachestat = residency(file.as_file(), offset, length);
                let after = residency_by_mincore(file.as_file(), offset, length);
                before == after && by_cachestat == before
            });
            assert!(
                agreed,
                "range {offset}+{length}: cachestat {:?}, mincore {:?}",
                residency(file.as_file(), offset, length),
                residency_by_mincore(file.as_file(), offset, length)
            );
        }
        let whole = residency(file.as_file(), 0, len).unwrap();
        assert!(
            whole.percent() > 0.0 && whole.percent() < 100.0,
            "partly cached: {whole:?}"
        );
    }

    #[test]
    fn residency_percent_of_empty_range_is_full() {
        let r = Residency {
            resident_bytes: 0,
            total_bytes: 0,
            sampled_bytes: 0,
        };
        assert_eq!(r.percent(), 100.0);
    }

    #[test]
    fn a_large_range_is_sampled_and_the_estimate_is_close() {
        // 128 MiB, the first 40% in the page cache, the rest dropped.
        let len: u64 = 128 << 20;
        let file = tempfile::NamedTempFile::new().unwrap();
        let chunk = vec![3u8; 8 << 20];
        for at in (0..len).step_by(chunk.len()) {
            file.as_file().write_all_at(&chunk, at).unwrap();
        }
        file.as_file().sync_all().unwrap();
        let cached = len * 2 / 5;
        rustix::fs::fadvise(file.as_file(), cached, None, rustix::fs::Advice::DontNeed).unwrap();
        let exact = match cachestat::cached_pages(file.as_file(), 0, len) {
            Ok(pages) => pages * rustix::param::page_size() as u64,
            Err(error) => {
                eprintln!("skipped: cachestat(2) unavailable here ({error})");
                return;
            }
        };
        if exact == len {
            eprintln!("skipped: the temporary directory's file system does not drop pages");
            return;
        }
        let estimate = residency(file.as_file(), 0, len).unwrap();
        assert_eq!(estimate.sampled_bytes, SAMPLES * SAMPLE_BYTES);
        let error = estimate.resident_bytes.abs_diff(exact) as f64 / len as f64;
        assert!(
            error < 0.03,
            "estimate {estimate:?} against {exact} bytes cached"
        );
        // Up to the threshold the whole range is looked at.
        let small = residency(file.as_file(), 0, SAMPLE_ABOVE).unwrap();
        assert_eq!(small.sampled_bytes, 0);
    }
}
