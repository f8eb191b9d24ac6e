//! Physical limits measured in the same run as the contenders, so that a
//! result can be read as a share of what the machine can do at all:
//! `memcpy` bandwidth, direct (O_DIRECT) sequential disk read and write
//! bandwidth — with flexio's own `io-uring --direct` (16 requests in
//! flight), and with `fio` when it
//! is installed, also reading and writing at once, as a copy onto the same
//! disk does — buffered disk write bandwidth up to
//! `fsync` (flexio `read-write`), and loopback TCP bandwidth with `iperf3`
//! (the faster of from memory and `-Z`). The disk and the network are also
//! measured beside the contenders of the cells they bound, in the same
//! rounds: a shared machine drifts from minute to minute.
//!
//! Limits are recorded like any other run: [`crate::model::Contender::Limit`]
//! in cells of the `limits` scenario (and `memcpy` beside flexio in the
//! `memory` scenario).

use std::io;
use std::path::Path;
use std::process::Stdio;

use flexio::{Flow, MechanismName, Params, Sink, Source};

use crate::peers::{self, Iperf3Mode, Supervised, CHILD_DEADLINE};
use crate::window::{CpuScope, Measured, Window};

/// A physical-limit probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Probe {
    /// `copy_from_slice` between two buffers of the cell's size: the faster
    /// of one call over the whole buffer and calls of 256 KiB (see
    /// [`memcpy`]).
    Memcpy,
    /// flexio `io-uring --direct` from the source file to `/dev/null`,
    /// 1 MiB requests, 16 in flight (see [`DISK_QUEUE_DEPTH`]).
    DiskDirectRead,
    /// Reading the cold source at all, the faster of two ways: O_DIRECT as
    /// [`Probe::DiskDirectRead`], and buffered `read` with the kernel's
    /// readahead, the cache dropped in between (see [`disk_read`]).
    DiskRead,
    /// flexio `io-uring --direct` from `/dev/zero` to a new file, 1 MiB
    /// requests, 16 in flight.
    DiskDirectWrite,
    /// Writing a new file durably at all, the faster of
    /// [`Probe::DiskDirectWrite`] and [`Probe::DiskWriteFsync`] (see
    /// [`disk_write`]).
    DiskWrite,
    /// flexio `read-write` from `/dev/zero` to a new file with `fsync`, 1 MiB
    /// chunks: writing through the page cache until the data is on the disk
    /// — the most a durable copy can reach when reading costs nothing.
    DiskWriteFsync,
    /// `fio --rw=read --bs=1M --direct=1`, 16 requests in flight through
    /// io_uring: the disk's sequential read bandwidth.
    FioRead,
    /// `fio --rw=write --bs=1M --direct=1`, 16 requests in flight: the
    /// disk's sequential write bandwidth.
    FioWrite,
    /// `fio` reading the source and writing a new file at the same time,
    /// both as above: how far this disk's reads and writes slow each other
    /// down when a copy overlaps them.
    FioCopy,
    /// `iperf3` over 127.0.0.1, the faster of from memory and `-Z`
    /// (sendfile; see [`network`]).
    Iperf3Loopback,
    /// The same across the bench's veth pair.
    Iperf3Veth,
}

impl Probe {
    /// The name in results (`Contender::Limit::name`).
    pub fn name(self) -> &'static str {
        match self {
            Probe::Memcpy => "memcpy",
            Probe::DiskDirectRead => "disk-direct-read",
            Probe::DiskRead => "disk-read",
            Probe::DiskDirectWrite => "disk-direct-write",
            Probe::DiskWrite => "disk-write",
            Probe::DiskWriteFsync => "disk-write-fsync",
            Probe::FioRead => "fio-read",
            Probe::FioWrite => "fio-write",
            Probe::FioCopy => "fio-copy",
            Probe::Iperf3Loopback => "iperf3-loopback",
            Probe::Iperf3Veth => "iperf3-veth",
        }
    }

    /// Programs the probe runs (reported missing when absent).
    pub fn needs(self) -> &'static [&'static str] {
        match self {
            Probe::FioRead | Probe::FioWrite | Probe::FioCopy => &["fio"],
            Probe::Iperf3Loopback => &["iperf3"],
            Probe::Iperf3Veth => &["iperf3", "ip"],
            _ => &[],
        }
    }
}

/// The slices of [`memcpy`]'s second way: flexio's default chunk.
const MEMCPY_SLICE: usize = 256 << 10;

/// Copies `source` into `sink` `reps` times with `copy_from_slice`, once
/// as one call per copy and once in 256 KiB slices, and keeps the faster
/// window. One call over a buffer larger than the last-level cache makes
/// glibc's `memcpy` switch to non-temporal stores, which bypass the cache
/// and were slower here than slices that stay in it; a flow copying in
/// 256 KiB chunks then beat "memcpy" by half. A limit is the best the
/// machine does, whichever way.
pub(crate) fn memcpy(source: &[u8], sink: &mut [u8], reps: u64) -> Measured {
    let whole = {
        let window = Window::open(CpuScope::Thread);
        for _ in 0..reps {
            sink.copy_from_slice(std::hint::black_box(source));
            std::hint::black_box(&mut *sink);
        }
        window.close(source.len() as u64 * reps, None)
    };
    let sliced = {
        let window = Window::open(CpuScope::Thread);
        for _ in 0..reps {
            for (to, from) in sink
                .chunks_mut(MEMCPY_SLICE)
                .zip(std::hint::black_box(source).chunks(MEMCPY_SLICE))
            {
                to.copy_from_slice(from);
            }
            std::hint::black_box(&mut *sink);
        }
        window.close(source.len() as u64 * reps, None)
    };
    if sliced.measurement.wall_ns < whole.measurement.wall_ns {
        sliced
    } else {
        whole
    }
}

/// Requests in flight for the disk probes: one O_DIRECT request at a time
/// measures the disk's latency, not its bandwidth (230 MiB/s here, where
/// writeback through the page cache wrote 1.06 GiB/s and fio with 16 in
/// flight 1.41 GiB/s), so a buffered durable write "beat" the direct-write
/// limit. 16, as the fio probes.
pub const DISK_QUEUE_DEPTH: u32 = 16;

fn direct_params() -> Params {
    Params {
        chunk: 1 << 20,
        queue_depth: DISK_QUEUE_DEPTH,
        direct: true,
        ..Params::default()
    }
}

fn buffered_params() -> Params {
    Params {
        chunk: 1 << 20,
        ..Params::default()
    }
}

/// Reads `source` with O_DIRECT into `/dev/null`, 16 requests in flight.
pub(crate) fn disk_direct_read(source: &Path) -> io::Result<Measured> {
    let window = Window::open(CpuScope::Thread);
    let report = Flow::new(Source::path(source), Sink::path("/dev/null"))
        .via(MechanismName::IoUring)
        .params(direct_params())
        .run()
        .map_err(io::Error::other)?;
    Ok(window.close(report.measured.bytes, Some(report.mechanism_used.as_str())))
}

/// Reads the cold `source` twice, O_DIRECT with 16 requests in flight and
/// then buffered (flexio `read-write`, 1 MiB, into `/dev/null`) after
/// dropping its cache again, and keeps the faster window: what reading
/// the file from its device costs at best, which no cold copy can beat.
/// O_DIRECT alone was beaten: on this virtual disk (readahead 8 MiB,
/// requests up to 4 MiB) a buffered read of a cold 64 MiB file ran at
/// 1.5–2.0 GiB/s where O_DIRECT with 16 × 1 MiB in flight ran at
/// 0.9–1.3 GiB/s, and cold copies went past the direct-read limit by up
/// to 1.9× in every run. (At 256 MiB it was the other way round.)
pub(crate) fn disk_read(source: &Path) -> io::Result<Measured> {
    let direct = disk_direct_read(source)?;
    let file = std::fs::File::open(source)?;
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)?;
    let window = Window::open(CpuScope::Thread);
    let report = Flow::new(Source::path(source), Sink::path("/dev/null"))
        .via(MechanismName::ReadWrite)
        .params(buffered_params())
        .run()
        .map_err(io::Error::other)?;
    let buffered = window.close(report.measured.bytes, Some(report.mechanism_used.as_str()));
    Ok(
        if buffered.measurement.wall_ns < direct.measurement.wall_ns {
            buffered
        } else {
            direct
        },
    )
}

/// Writes `size` bytes of `/dev/zero` into a new file `sink` with
/// O_DIRECT, 16 requests in flight.
pub(crate) fn disk_direct_write(sink: &Path, size: u64) -> io::Result<Measured> {
    write_zeros(sink, size, MechanismName::IoUring, direct_params(), false)
}

/// Writes `size` bytes into a new file `sink` twice, O_DIRECT with 16
/// requests in flight and then through the page cache up to `fsync`, and
/// keeps the faster window: what making a file durable costs at best. The
/// kernel's writeback sends requests up to the device's largest (4 MiB
/// here, `max_sectors_kb`) where the direct probe sends 1 MiB, and the
/// probe's copy out of `/dev/zero` sits in its loop: the buffered durable
/// write ran at 1.67 GiB/s where the direct one ran at 1.12.
pub(crate) fn disk_write(sink: &Path, size: u64) -> io::Result<Measured> {
    let direct = disk_direct_write(sink, size)?;
    let _ = std::fs::remove_file(sink);
    let buffered = disk_write_fsync(sink, size)?;
    Ok(
        if buffered.measurement.wall_ns < direct.measurement.wall_ns {
            buffered
        } else {
            direct
        },
    )
}

/// `size` bytes of `/dev/zero` written into a new file `sink` through the
/// page cache by flexio `read-write` with `fsync`: the flow starts the
/// writeback of each slice as soon as it is written and ends when the data
/// is on the disk (`dd conv=fsync`, which only syncs at the end, is slower).
pub(crate) fn disk_write_fsync(sink: &Path, size: u64) -> io::Result<Measured> {
    write_zeros(
        sink,
        size,
        MechanismName::ReadWrite,
        buffered_params(),
        true,
    )
}

/// `size` bytes of `/dev/zero` into `sink` by `mechanism` with `params`.
fn write_zeros(
    sink: &Path,
    size: u64,
    mechanism: MechanismName,
    params: Params,
    fsync: bool,
) -> io::Result<Measured> {
    let window = Window::open(CpuScope::Thread);
    let report = Flow::new(Source::path("/dev/zero"), Sink::path(sink))
        .length(size)
        .via(mechanism)
        .params(params)
        .fsync(fsync)
        .run()
        .map_err(io::Error::other)?;
    Ok(window.close(report.measured.bytes, Some(report.mechanism_used.as_str())))
}

/// `fio` sequential direct read (`write == false`) or write of `size`
/// bytes of `file`, 16 requests in flight; the wall time is derived from
/// fio's own bandwidth.
pub(crate) fn fio(file: &Path, size: u64, write: bool) -> io::Result<Measured> {
    run_fio(&[FioJob { file, write }], size)
}

/// `fio` copying, as far as the disk is concerned: one job reads `source`
/// while another writes `sink`, each `size` bytes, O_DIRECT, 1 MiB blocks,
/// 16 in flight. The copy takes as long as the slower job.
pub(crate) fn fio_copy(source: &Path, sink: &Path, size: u64) -> io::Result<Measured> {
    let jobs = [false, true].map(|write| FioJob {
        file: if write { sink } else { source },
        write,
    });
    run_fio(&jobs, size)
}

/// One sequential O_DIRECT job of a fio run, 1 MiB requests, 16 in
/// flight: enough to keep a disk (or a virtual disk's host) busy, where one
/// request at a time measures its latency instead.
struct FioJob<'p> {
    file: &'p Path,
    write: bool,
}

/// Runs `jobs` side by side, `size` bytes each, and measures `size` bytes
/// in the time of the slowest job, derived from fio's own bandwidth.
fn run_fio(jobs: &[FioJob<'_>], size: u64) -> io::Result<Measured> {
    let mut argv = vec!["fio".to_string()];
    for (index, job) in jobs.iter().enumerate() {
        argv.extend([
            format!("--name=flexio-bench-{index}"),
            format!("--filename={}", job.file.display()),
            format!("--rw={}", if job.write { "write" } else { "read" }),
            "--bs=1M".into(),
            "--direct=1".into(),
            format!("--size={size}"),
            "--ioengine=io_uring".into(),
            "--iodepth=16".into(),
        ]);
    }
    argv.push("--output-format=json".into());
    let mut command = peers::command_in(None, &argv);
    command.stdout(Stdio::piped()).stderr(Stdio::null());
    let window = Window::open(CpuScope::Children);
    let mut child = Supervised::spawn(&mut command, CHILD_DEADLINE)?;
    let mut json = String::new();
    io::Read::read_to_string(
        &mut child.child_mut().stdout.take().expect("piped stdout"),
        &mut json,
    )?;
    let status = child.wait()?;
    let mut measured = window.close(size, None);
    peers::check_status("fio", status)?;
    // fio may print warnings before the JSON object.
    let start = json.find('{').unwrap_or(0);
    let value: serde_json::Value = serde_json::from_str(&json[start..])
        .map_err(|e| io::Error::other(format!("fio JSON output: {e}")))?;
    let mut slowest_ns = 0.0f64;
    let mut moved = size;
    for (index, job) in jobs.iter().enumerate() {
        let side = &value["jobs"][index][if job.write { "write" } else { "read" }];
        let bandwidth = side["bw_bytes"]
            .as_f64()
            .filter(|b| *b > 0.0)
            .ok_or_else(|| io::Error::other("fio JSON output has no bw_bytes"))?;
        let bytes = side["io_bytes"].as_u64().unwrap_or(size);
        moved = moved.min(bytes);
        slowest_ns = slowest_ns.max(bytes as f64 * 1e9 / bandwidth);
    }
    // A copy has moved what both of its sides moved.
    measured.measurement.bytes = moved;
    measured.measurement.wall_ns = slowest_ns as u64;
    Ok(measured)
}

/// The network path's limit: `iperf3` from memory and `iperf3 -Z`
/// (sendfile from a file), the faster of the two. From memory alone the
/// sender pays a copy that zero-copy senders skip: flexio's sendfile and
/// splice, and iperf3 -Z itself as a peer, went past it by 1.4–1.9×.
pub(crate) fn network(
    bytes: u64,
    host: &str,
    client_ns: Option<&str>,
    server_ns: Option<&str>,
) -> io::Result<Measured> {
    let copied = iperf3(bytes, Iperf3Mode::Memory, host, client_ns, server_ns)?;
    let zero_copy = iperf3(bytes, Iperf3Mode::ZeroCopy, host, client_ns, server_ns)?;
    Ok(
        if zero_copy.measurement.wall_ns < copied.measurement.wall_ns {
            zero_copy
        } else {
            copied
        },
    )
}

/// `iperf3` from memory (or with `-Z`) to a one-shot server; the wall
/// time is derived from iperf3's receiver-side rate, the CPU is the
/// client's.
pub(crate) fn iperf3(
    bytes: u64,
    mode: Iperf3Mode,
    host: &str,
    client_ns: Option<&str>,
    server_ns: Option<&str>,
) -> io::Result<Measured> {
    let window = Window::open(CpuScope::Children);
    let run = peers::run_iperf3(bytes, mode, host, client_ns, server_ns)?;
    let mut measured = window.close(run.bytes, None);
    measured.charge(&run.client);
    measured.measurement.wall_ns = (run.bytes as f64 * 8e9 / run.bits_per_second) as u64;
    Ok(measured)
}
