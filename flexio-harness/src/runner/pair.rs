//! The socket-pair scenario: the OS project's master and slave. A flexio
//! sender flow (file -> TCP, its own mechanism) and a flexio receiver flow
//! (TCP -> file, its own mechanism) move the cell's `flows` files one
//! after the other over one loopback connection, or a new connection for
//! each file where the cell asks (the OS project's slave connected once
//! per file). Each file is one flow on
//! each side: the sender writes the file's length (8 bytes, little
//! endian) and then the file; the receiver reads the length, checks it
//! against the one it expects, and receives exactly that many bytes into
//! a new file. After the last file of a connection the sender ends the
//! stream and the receiver must read its end: a byte too many is an
//! error. The sources are warm, or cold in a cold cell (their pages
//! dropped before each run, as a cold file cell's).
//!
//! The window runs from the sender's first connection (its first byte
//! follows at once) to the receiver's last file closed; its CPU is the whole
//! process's, both sides being flexio. Every received file is compared
//! with its source after the window, byte for byte. The receiver runs on
//! the bench's contender CPU and the sender on the other, as a stream's
//! two ends do (`affinity`).

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Instant;

use flexio::{Flow, MechanismName, Params, Report, Sink, Source};

use super::streams::{accept_within, Net};
use super::{joined, other, write_source, Workspace};
use crate::model::CacheState;
use crate::plan::{Cell, Entrant};
use crate::window::{CpuScope, Measured, Window};

/// One side of the pair: a mechanism with the cell's parameters.
#[derive(Clone)]
struct Side {
    mechanism: MechanismName,
    params: Params,
}

impl Side {
    fn flow<'f>(&self, flow: Flow<'f>) -> Flow<'f> {
        flow.via(self.mechanism)
            .params(self.params.clone())
            .strict(true)
    }
}

/// The length of each of `files` files that share `total` bytes (the
/// first ones one byte longer where it does not divide).
pub(crate) fn lengths(total: u64, files: u32) -> Vec<u64> {
    let files = u64::from(files.max(1));
    (0..files)
        .map(|i| total / files + u64::from(i < total % files))
        .collect()
}

impl Workspace {
    /// The pair's source files for `total` bytes in `files` files, each
    /// with its own pseudo-random bytes, made on first use.
    fn pair_sources(&mut self, total: u64, files: u32) -> io::Result<Vec<PathBuf>> {
        let mut paths = Vec::new();
        for (i, length) in lengths(total, files).into_iter().enumerate() {
            let path = self.path(&format!("pair-{total}-{files}-{i}"));
            if std::fs::metadata(&path).map(|m| m.len()).ok() != Some(length) {
                let seed = total ^ ((i as u64 + 1) << 40) ^ u64::from(files);
                write_source(&path, length, seed)?;
            }
            paths.push(path);
        }
        Ok(paths)
    }
}

/// One timed run of a pair entrant in `cell`: its files, warm or cold as
/// the cell says, sent and received; the received files checked and
/// removed. Also the share of the sources' bytes in the page cache as the
/// window opened (percent), where the kernel says.
pub(super) fn run(
    entrant: &Entrant,
    workspace: &mut Workspace,
    cell: &Cell,
    net: &Net,
) -> io::Result<(Measured, Option<f64>)> {
    let Entrant::Pair {
        sender,
        receiver,
        params,
    } = entrant
    else {
        return Err(other(format!(
            "{} is not a socket pair: socket-pair cells run pairs only",
            entrant.contender().label()
        )));
    };
    let sources = workspace.pair_sources(cell.key.size, cell.key.flows)?;
    let cache = match cell.key.cache {
        CacheState::Cold => CacheState::Cold,
        CacheState::Warm | CacheState::NotApplicable => CacheState::Warm,
    };
    let mut resident = Some(0.0);
    for (source, length) in sources.iter().zip(lengths(cell.key.size, cell.key.flows)) {
        let percent = workspace.prepare_source(source, cache, &[])?;
        let share = length as f64 / cell.key.size.max(1) as f64;
        resident = resident.zip(percent).map(|(sum, p)| sum + p * share);
    }
    let sinks: Vec<PathBuf> = (0..sources.len())
        .map(|i| workspace.path(&format!("pair-sink-{i}")))
        .collect();
    let sides = [*sender, *receiver].map(|mechanism| Side {
        mechanism,
        params: params.clone(),
    });
    // The receiver's lengths come from the cell, as the original's slave
    // knew its files; the sender announces its files' own.
    let expected = lengths(cell.key.size, cell.key.flows);
    let per_file = cell.key.connection_per_file;
    let measured = transfer(&sides, &sources, (&sinks, &expected), net, per_file)
        .and_then(|(measured, _)| check_files(&sources, &sinks).map(|()| (measured, resident)));
    for sink in &sinks {
        let _ = std::fs::remove_file(sink);
    }
    measured
}

/// The files each connection carries: all of them on one, or one each.
fn connections(files: usize, per_file: bool) -> Vec<std::ops::Range<usize>> {
    if per_file {
        (0..files).map(|i| i..i + 1).collect()
    } else {
        std::iter::once(0..files).collect()
    }
}

/// Sends `sources` by `sides[0]` and receives them into `sinks` by
/// `sides[1]`, expecting `lengths`, in one window: over one connection,
/// or a new one for each file (`per_file`). Also the address each
/// connection came from, in order.
fn transfer(
    sides: &[Side; 2],
    sources: &[PathBuf],
    (sinks, lengths): (&[PathBuf], &[u64]),
    net: &Net,
    per_file: bool,
) -> io::Result<(Measured, Vec<SocketAddr>)> {
    let listener = net.listen()?;
    let address = listener.local_addr()?;
    let groups = connections(sources.len(), per_file);
    let window = Window::open(CpuScope::Process);
    let sender = {
        let (side, sources, net) = (sides[0].clone(), sources.to_vec(), net.clone());
        let groups = groups.clone();
        std::thread::spawn(move || -> io::Result<Instant> {
            crate::affinity::leave_contender_cpu();
            let mut first = None;
            for group in groups {
                let connected = send(&side, &sources[group], &net, address)?;
                first.get_or_insert(connected);
            }
            first.ok_or_else(|| other("no file to send"))
        })
    };
    let mut peers = Vec::new();
    let received = groups.iter().try_fold((0, None), |(bytes, _), group| {
        let (sinks, lengths) = (&sinks[group.clone()], &lengths[group.clone()]);
        let (more, report, peer) = receive(&sides[1], &listener, sinks, lengths)?;
        peers.push(peer);
        Ok::<_, io::Error>((bytes + more, Some(report)))
    });
    let received = received.and_then(|(bytes, report)| {
        Ok((bytes, report.ok_or_else(|| other("no file to receive"))?))
    });
    drop(listener);
    let end = Instant::now();
    let mut measured = match &received {
        Ok((bytes, report)) => window.close_after(*bytes, Some(report)),
        Err(_) => window.close(0, None),
    };
    let sent = joined(sender, "sender");
    received?;
    let connected = sent?;
    measured.measurement.wall_ns = end.saturating_duration_since(connected).as_nanos() as u64;
    Ok((measured, peers))
}

/// The sender: connects, then each file's length and the file, then the
/// end of the stream; returns when it connected.
fn send(side: &Side, sources: &[PathBuf], net: &Net, address: SocketAddr) -> io::Result<Instant> {
    let mut stream = net.connect(address)?;
    let connected = Instant::now();
    // A length header after a file's short tail must not wait for the
    // receiver's delayed acknowledgement (Nagle).
    stream.set_nodelay(true)?;
    for source in sources {
        let length = std::fs::metadata(source)?.len();
        stream.write_all(&length.to_le_bytes())?;
        let flow = Flow::new(
            Source::path(source),
            Sink::Fd(stream.try_clone()?.into(), format!("tcp://{address}")),
        )
        .length(length)
        .end_stream(false);
        side.flow(flow).run().map_err(other)?;
    }
    stream.shutdown(Shutdown::Write)?;
    Ok(connected)
}

/// The receiver: accepts, then for each sink the length (checked against
/// `lengths`) and exactly that many bytes; then the end of the stream.
/// Returns the bytes received, the last flow's report and the sender's
/// address.
fn receive(
    side: &Side,
    listener: &TcpListener,
    sinks: &[PathBuf],
    lengths: &[u64],
) -> io::Result<(u64, Report, SocketAddr)> {
    let mut stream: TcpStream = accept_within(listener)?;
    let peer = stream.peer_addr()?;
    stream.set_nodelay(true)?;
    let (mut bytes, mut last) = (0, None);
    for (i, (sink, &want)) in sinks.iter().zip(lengths).enumerate() {
        let mut header = [0u8; 8];
        stream.read_exact(&mut header)?;
        let length = u64::from_le_bytes(header);
        if length != want {
            return Err(other(format!(
                "file {i}: the sender announced {length} bytes, the receiver expects {want}"
            )));
        }
        let flow = Flow::new(
            Source::Fd(stream.try_clone()?.into(), "tcp (pair)".into()),
            Sink::path(sink),
        )
        .length(length);
        let report = side.flow(flow).run().map_err(other)?;
        bytes += report.measured.bytes;
        last = Some(report);
    }
    let mut extra = [0u8; 1];
    let more = loop {
        match stream.read(&mut extra) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            read => break read?,
        }
    };
    if more != 0 {
        return Err(other("the sender sent bytes past the last file"));
    }
    Ok((
        bytes,
        last.ok_or_else(|| other("no file to receive"))?,
        peer,
    ))
}

/// Each sink holds exactly its source's bytes.
fn check_files(sources: &[PathBuf], sinks: &[PathBuf]) -> io::Result<()> {
    for (source, sink) in sources.iter().zip(sinks) {
        let (mut a, mut b) = (File::open(source)?, File::open(sink)?);
        let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
        let mut offset = 0u64;
        loop {
            let n = read_full(&mut a, &mut x)?;
            let m = read_full(&mut b, &mut y)?;
            if n != m || x[..n] != y[..m] {
                let at = x[..n.min(m)]
                    .iter()
                    .zip(&y[..n.min(m)])
                    .position(|(p, q)| p != q)
                    .unwrap_or(n.min(m));
                return Err(other(format!(
                    "{}: differs from {} at byte {}",
                    sink.display(),
                    source.display(),
                    offset + at as u64
                )));
            }
            if n == 0 {
                break;
            }
            offset += n as u64;
        }
    }
    Ok(())
}

/// Reads until `buffer` is full or the file ends.
fn read_full(file: &mut File, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::{check_files, connections, lengths, transfer, Net, Side};
    use flexio::{MechanismName, Params};

    #[test]
    fn a_connection_per_file_carries_one_file_each() {
        assert_eq!(connections(3, false), Vec::from_iter(std::iter::once(0..3)));
        assert_eq!(connections(3, true), vec![0..1, 1..2, 2..3]);
    }

    /// The peers' addresses of moving three files by mmap on both sides,
    /// over one connection or one per file.
    fn peers_of(per_file: bool) -> Vec<std::net::SocketAddr> {
        let dir = tempfile::tempdir().unwrap();
        let sizes = lengths((1 << 20) + 7, 3);
        let (mut sources, mut sinks) = (Vec::new(), Vec::new());
        for (i, &size) in sizes.iter().enumerate() {
            let source = dir.path().join(format!("source-{i}"));
            std::fs::write(&source, vec![i as u8 + 1; size as usize]).unwrap();
            sources.push(source);
            sinks.push(dir.path().join(format!("sink-{i}")));
        }
        let side = Side {
            mechanism: MechanismName::Mmap,
            params: Params {
                chunk: 4096,
                ..Params::default()
            },
        };
        let sides = [side.clone(), side];
        let (measured, peers) = transfer(
            &sides,
            &sources,
            (&sinks, &sizes),
            &Net::loopback(),
            per_file,
        )
        .unwrap();
        assert_eq!(measured.measurement.bytes, (1 << 20) + 7);
        check_files(&sources, &sinks).unwrap();
        peers
    }

    #[test]
    fn a_pair_with_a_connection_per_file_connects_once_for_each_file() {
        assert_eq!(peers_of(false).len(), 1);
        let mut ports: Vec<u16> = peers_of(true).iter().map(|p| p.port()).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 3, "three connections from three ports");
    }

    #[test]
    fn lengths_share_the_total() {
        assert_eq!(lengths(24_160, 10), vec![2416; 10]);
        assert_eq!(lengths(11, 3), vec![4, 4, 3]);
        assert_eq!(lengths(5, 0), vec![5]);
    }
}
