//! The socket-pair scenario: the OS project's master and slave. A flexio
//! sender flow (file -> TCP, its own mechanism) and a flexio receiver flow
//! (TCP -> file, its own mechanism) move the cell's `flows` files one
//! after the other over one loopback connection. Each file is one flow on
//! each side: the sender writes the file's length (8 bytes, little
//! endian) and then the file; the receiver reads the length, checks it
//! against the one it expects, and receives exactly that many bytes into
//! a new file. After the last file the sender ends the stream and the
//! receiver must read its end: a byte too many is an error.
//!
//! The window runs from the sender's connection (its first byte follows at
//! once) to the receiver's last file closed; its CPU is the whole
//! process's, both sides being flexio. Every received file is compared
//! with its source after the window, byte for byte.

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

/// One timed run of a pair entrant in `cell`: its files, warm, sent and
/// received; the received files checked and removed.
pub(super) fn run(
    entrant: &Entrant,
    workspace: &mut Workspace,
    cell: &Cell,
    net: &Net,
) -> io::Result<Measured> {
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
    for source in &sources {
        workspace.prepare_source(source, CacheState::Warm, &[])?;
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
    let measured = transfer(&sides, &sources, (&sinks, &expected), net)
        .and_then(|measured| check_files(&sources, &sinks).map(|()| measured));
    for sink in &sinks {
        let _ = std::fs::remove_file(sink);
    }
    measured
}

/// Sends `sources` by `sides[0]` and receives them into `sinks` by
/// `sides[1]`, expecting `lengths`, in one window.
fn transfer(
    sides: &[Side; 2],
    sources: &[PathBuf],
    (sinks, lengths): (&[PathBuf], &[u64]),
    net: &Net,
) -> io::Result<Measured> {
    let listener = net.listen()?;
    let address = listener.local_addr()?;
    let window = Window::open(CpuScope::Process);
    let sender = {
        let (side, sources, net) = (sides[0].clone(), sources.to_vec(), net.clone());
        std::thread::spawn(move || send(&side, &sources, &net, address))
    };
    let received = receive(&sides[1], &listener, sinks, lengths);
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
    Ok(measured)
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
/// Returns the bytes received and the last flow's report.
fn receive(
    side: &Side,
    listener: &TcpListener,
    sinks: &[PathBuf],
    lengths: &[u64],
) -> io::Result<(u64, Report)> {
    let mut stream: TcpStream = accept_within(listener)?;
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
    Ok((bytes, last.ok_or_else(|| other("no file to receive"))?))
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
    use super::lengths;

    #[test]
    fn lengths_share_the_total() {
        assert_eq!(lengths(24_160, 10), vec![2416; 10]);
        assert_eq!(lengths(11, 3), vec![4, 4, 3]);
        assert_eq!(lengths(5, 0), vec![5]);
    }
}
