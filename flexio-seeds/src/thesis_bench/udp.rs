//! Figure 4.18's user process over UDP: a sender reads the file (warm:
//! the original read the buffer cache) and sends it in sequenced 1 KiB
//! datagrams as fast as it can over loopback; a receiver writes what
//! arrives to a file at each datagram's place. SO_SNDBUF and SO_RCVBUF
//! are set at both ends, 1 to 50 KB as the original's; a datagram the
//! receiver's full buffer has no room for is lost, and counted.
//!
//! Throughput is the bytes that arrived over the time from the first send
//! to the last arrival. The sender and the receiver run on two CPUs, as on
//! the original's two hosts: where the scheduler put both on one, the
//! sender filled the receiver's buffer for a whole time slice before the
//! receiver ran, and 3% or 70% of a 1 MB transfer arrived by where the
//! threads had started. A round of a small file sends it
//! [`round_passes`](super::round_passes) times over and sums what
//! arrived: one 1 MB transfer lasts a few milliseconds, of which its start
//! is a noisy part.

use std::net::UdpSocket;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::process::{make_warm, source};
use super::{ThesisOptions, ThesisOutcome, ThesisPoint, MB};
use crate::error::{Error, Result};

const MIB: u64 = 1 << 20;
/// Payload bytes per datagram (the sequence number rides in front).
const PAYLOAD: usize = 1024;
/// Bytes of the sequence number.
const HEADER: usize = 8;
/// How long the receiver waits for a datagram once the sender is done
/// (loopback delivers one within the sender's call, or soon after in the
/// kernel's softirq work).
const DRAIN: Duration = Duration::from_millis(20);

/// The swept socket buffers, KB (10^3 bytes, the original's).
const BUFFERS_KB: [u64; 4] = [1, 10, 25, 50];

/// One run: what arrived and when.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UdpRun {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams that arrived and were written.
    pub received: u64,
    /// Payload bytes that arrived.
    pub bytes: u64,
    /// From the first send to the last arrival.
    pub seconds: f64,
}

impl UdpRun {
    /// The sum of two runs: one round of several transfers.
    fn plus(self, other: UdpRun) -> UdpRun {
        UdpRun {
            sent: self.sent + other.sent,
            received: self.received + other.received,
            bytes: self.bytes + other.bytes,
            seconds: self.seconds + other.seconds,
        }
    }

    /// Datagrams lost, in percent of those sent.
    pub fn lost_percent(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            100.0 * (self.sent - self.received) as f64 / self.sent as f64
        }
    }
}

/// The series' name for a socket buffer of `kb` KB.
pub fn series(kb: u64) -> String {
    format!("UDP, socket buffers {kb} KB (ours)")
}

/// The sweep: per socket buffer, by file size, the median throughput of
/// what arrived; the datagrams lost in the setting line.
pub fn udp_buffers(options: &ThesisOptions) -> ThesisOutcome {
    let sizes: &[u64] = if options.quick {
        &[1, 16, 64]
    } else {
        &[1, 25, 50, 100, 200]
    };
    let mut points = Vec::new();
    let mut losses = Vec::new();
    let mut shortfall = None;
    'sweep: for &mb in sizes {
        for kb in BUFFERS_KB {
            match one_point(options, mb * MIB, kb) {
                Ok((point, lost)) => {
                    losses.push(format!("{kb} KB at {mb} MB {lost:.1}%"));
                    points.push(point);
                }
                Err(why) => {
                    shortfall = Some(why.to_string());
                    break 'sweep;
                }
            }
        }
    }
    ThesisOutcome {
        points,
        shortfall,
        setting: format!(
            "file -> UDP over loopback (127.0.0.1) in {PAYLOAD}-byte sequenced datagrams, \
             SO_SNDBUF and SO_RCVBUF set at both ends, the receiver writing each datagram at \
             its place in a file on {}; datagrams lost (median of the rounds): {}",
            options.dir.display(),
            losses.join(", ")
        ),
    }
}

/// One round: [`round_passes`](super::round_passes) transfers of `file`
/// back to back, summed (one where a point is a single round).
fn round(
    options: &ThesisOptions,
    file: &Path,
    sink: &Path,
    size: u64,
    buffer: u64,
) -> Result<UdpRun> {
    let mut total: Option<UdpRun> = None;
    for _ in 0..options.passes(size) {
        options.stopped()?;
        make_warm(file)?;
        let run = transfer(file, sink, buffer);
        let _ = std::fs::remove_file(sink);
        let run = run?;
        total = Some(total.map_or(run, |sum| sum.plus(run)));
    }
    total.ok_or(Error::Stopped)
}

/// The median of the rounds at one size and buffer, and its loss.
fn one_point(options: &ThesisOptions, size: u64, kb: u64) -> Result<(ThesisPoint, f64)> {
    let file = source(&options.dir, size)?;
    let sink = options.dir.join("thesis-udp-received");
    let mut rates = Vec::new();
    let mut lost = Vec::new();
    while options.another_round(rates.len(), super::POINT_ROUNDS, [&rates[..]]) {
        let run = round(options, &file, &sink, size, kb * 1000)?;
        rates.push(run.bytes as f64 / MB / run.seconds);
        lost.push(run.lost_percent());
    }
    let (low, high) = flexio_bench::stats::round_spread(&rates).ok_or(Error::Stopped)?;
    let count = rates.len();
    let point = ThesisPoint {
        series: series(kb),
        x: (size / MIB) as f64,
        y: flexio_bench::stats::median(&mut rates),
        spread: Some((low, high, count)),
    };
    Ok((point, flexio_bench::stats::median(&mut lost)))
}

/// Sends `file` over loopback UDP with socket buffers of `buffer` bytes
/// at both ends; the receiver writes what arrives into `sink`.
///
/// # Errors
/// A socket, the file or the sink refused, with the operation and path.
pub fn transfer(file: &Path, sink: &Path, buffer: u64) -> Result<UdpRun> {
    let receiver = socket(buffer)?;
    let sender = socket(buffer)?;
    let to = receiver.local_addr().map_err(|source| Error::Socket {
        operation: "the UDP receiver's address".into(),
        source,
    })?;
    receiver
        .set_read_timeout(Some(DRAIN))
        .map_err(|source| Error::Socket {
            operation: "the UDP receiver's timeout".into(),
            source,
        })?;
    let done = AtomicBool::new(false);
    let written = std::fs::File::create(sink).map_err(|e| Error::io("create", sink, e))?;
    // The sender starts once the receiver is at its first recv, not while
    // its thread is still starting (every datagram lost then).
    let ready = Barrier::new(2);
    // The two ends on two CPUs, as on the original's two hosts: put on one
    // by the scheduler, the sender fills the receiver's buffer for a whole
    // time slice before the receiver runs, and a short transfer is lost.
    let _pinned = flexio_harness::affinity::pin_contender();
    std::thread::scope(|scope| {
        let receiving = scope.spawn(|| {
            flexio_harness::affinity::leave_contender_cpu();
            ready.wait();
            receive(&receiver, &written, sink, &done)
        });
        ready.wait();
        let start = Instant::now();
        let sent = send(&sender, to, file);
        done.store(true, Ordering::Release);
        let got = receiving
            .join()
            .map_err(|_| Error::Panicked("the UDP receiver"))?;
        let sent = sent?;
        let (received, bytes, last) = got?;
        Ok(UdpRun {
            sent,
            received,
            bytes,
            seconds: last.map_or(0.0, |at| at.duration_since(start).as_secs_f64()),
        })
    })
}

/// A loopback UDP socket with SO_SNDBUF and SO_RCVBUF of `buffer` bytes
/// (the kernel doubles the figure and keeps a floor; that is what the
/// original's setsockopt got too).
fn socket(buffer: u64) -> Result<UdpSocket> {
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(|source| Error::Socket {
        operation: "bind UDP on 127.0.0.1".into(),
        source,
    })?;
    let size = buffer as usize;
    rustix::net::sockopt::set_socket_send_buffer_size(&socket, size).map_err(|e| {
        Error::Socket {
            operation: format!("setsockopt(SO_SNDBUF, {size})"),
            source: e.into(),
        }
    })?;
    rustix::net::sockopt::set_socket_recv_buffer_size(&socket, size).map_err(|e| {
        Error::Socket {
            operation: format!("setsockopt(SO_RCVBUF, {size})"),
            source: e.into(),
        }
    })?;
    Ok(socket)
}

/// Sends `file` in sequenced datagrams; the count sent.
fn send(socket: &UdpSocket, to: std::net::SocketAddr, file: &Path) -> Result<u64> {
    let source = std::fs::File::open(file).map_err(|e| Error::io("open", file, e))?;
    let mut datagram = [0u8; HEADER + PAYLOAD];
    let mut sequence = 0u64;
    loop {
        let offset = sequence * PAYLOAD as u64;
        let n = source
            .read_at(&mut datagram[HEADER..], offset)
            .map_err(|e| Error::io_at("read", file, offset, e))?;
        if n == 0 {
            return Ok(sequence);
        }
        datagram[..HEADER].copy_from_slice(&sequence.to_le_bytes());
        socket
            .send_to(&datagram[..HEADER + n], to)
            .map_err(|source| Error::Socket {
                operation: format!("sendto {to}, datagram {sequence}"),
                source,
            })?;
        sequence += 1;
    }
}

/// Writes each datagram that arrives at its place in `sink` until the
/// sender is done and nothing more comes for [`DRAIN`]: (datagrams,
/// bytes, last arrival), into `file` (`sink`).
fn receive(
    socket: &UdpSocket,
    file: &std::fs::File,
    sink: &Path,
    done: &AtomicBool,
) -> Result<(u64, u64, Option<Instant>)> {
    let mut datagram = [0u8; HEADER + PAYLOAD];
    let (mut count, mut bytes, mut last) = (0u64, 0u64, None);
    loop {
        match socket.recv(&mut datagram) {
            Ok(n) if n > HEADER => {
                last = Some(Instant::now());
                let mut number = [0u8; HEADER];
                number.copy_from_slice(&datagram[..HEADER]);
                let offset = u64::from_le_bytes(number) * PAYLOAD as u64;
                file.write_all_at(&datagram[HEADER..n], offset)
                    .map_err(|e| Error::io_at("write", sink, offset, e))?;
                count += 1;
                bytes += (n - HEADER) as u64;
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if done.load(Ordering::Acquire) {
                    return Ok((count, bytes, last));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(Error::Socket {
                    operation: "recv on UDP".into(),
                    source,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_of_a_small_file_adds_up_all_its_transfers() {
        let dir = tempfile::tempdir().unwrap();
        let size = 2 * MIB;
        let file = source(dir.path(), size).unwrap();
        let sink = dir.path().join("received");
        let datagrams = size / PAYLOAD as u64;
        // Three rounds asked for: each sends the file 32 times over.
        let options = ThesisOptions {
            most_rounds: 3,
            ..ThesisOptions::one_round_in(dir.path())
        };
        let run = round(&options, &file, &sink, size, 50_000).unwrap();
        assert_eq!(run.sent, 32 * datagrams, "{run:?}");
        assert!(
            run.received > datagrams && run.received <= run.sent,
            "{run:?}"
        );
        assert_eq!(run.bytes, run.received * PAYLOAD as u64);
        // One round asked for: one transfer.
        let once = round(
            &ThesisOptions::one_round_in(dir.path()),
            &file,
            &sink,
            size,
            50_000,
        );
        assert_eq!(once.unwrap().sent, datagrams);
        assert!(!sink.exists());
    }

    #[test]
    fn what_arrives_is_written_in_place_and_what_does_not_is_counted_lost() {
        let dir = tempfile::tempdir().unwrap();
        let file = source(dir.path(), 8 * MIB).unwrap();
        let sink = dir.path().join("received");
        for buffer in [1000, 50_000] {
            let run = transfer(&file, &sink, buffer).unwrap();
            println!("{buffer} bytes: {run:?}, lost {:.1}%", run.lost_percent());
            assert_eq!(run.sent, 8 * MIB / PAYLOAD as u64);
            assert!(run.received > 0 && run.received <= run.sent, "{run:?}");
            assert_eq!(run.bytes, run.received * PAYLOAD as u64);
            assert!(run.seconds > 0.0);
            if buffer == 1000 {
                // A couple of datagrams' room: the unpaced sender outruns
                // a receiver that writes each to a file.
                assert!(run.received < run.sent, "nothing lost: {run:?}");
            }
            // Every datagram that arrived sits at its place in the sink;
            // the places of the lost ones are holes (zeros).
            let (sent, got) = (std::fs::read(&file).unwrap(), std::fs::read(&sink).unwrap());
            let arrived = got
                .chunks(PAYLOAD)
                .zip(sent.chunks(PAYLOAD))
                .filter(|(g, s)| g == s)
                .count() as u64;
            assert_eq!(arrived, run.received, "{run:?}");
            let expected = 100.0 * (run.sent - run.received) as f64 / run.sent as f64;
            assert!((run.lost_percent() - expected).abs() < 1e-9);
        }
    }
}
