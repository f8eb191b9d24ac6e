//! The bench's side of stream contenders, the same for all of them: the
//! network path (loopback or the veth pair), the receiver that drains a
//! socket, the sender that feeds one from memory, and the pipe's reader
//! and feeder.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{HELPER_BUFFER, IO_DEADLINE};
use crate::affinity::leave_contender_cpu;
use crate::peers::VethPair;

/// The network path of a cell: loopback, or the veth pair.
#[derive(Clone, Debug)]
pub(super) struct Net {
    pub sender_ns: Option<String>,
    pub receiver_ns: Option<String>,
    pub receiver_ip: IpAddr,
    /// Loopback: how many connections this path made, which picks the
    /// next one's source address (see [`Net::connect`]).
    connections: Arc<AtomicU32>,
}

impl Net {
    pub(super) fn loopback() -> Self {
        Net {
            sender_ns: None,
            receiver_ns: None,
            receiver_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            connections: Arc::default(),
        }
    }

    pub(super) fn veth(pair: &VethPair) -> Self {
        Net {
            sender_ns: Some(pair.sender_ns.clone()),
            receiver_ns: Some(pair.receiver_ns.clone()),
            receiver_ip: pair.receiver_addr,
            connections: Arc::default(),
        }
    }

    /// Forgets what the kernel learned from earlier connections on this
    /// path (`ip tcp_metrics flush all` in each namespace). A new
    /// connection to an address starts from the cwnd, ssthresh and
    /// reordering cached from the last one, so one contender's run shaped
    /// the next: loopback socket → file splice fell from 3 to 1 GiB/s, at
    /// a hundred times the context switches, after a few rounds beside
    /// io-uring, and kept 1.8–3.1 GiB/s with the cache flushed. (Within a
    /// whole tune it still slows down at times: a further cause remains.)
    /// Root only (as dropping the page cache is); best effort.
    pub(super) fn forget_tcp_metrics(&self) {
        if !super::is_root() {
            return;
        }
        let mut namespaces = vec![self.sender_ns.as_deref()];
        if self.receiver_ns != self.sender_ns {
            namespaces.push(self.receiver_ns.as_deref());
        }
        for ns in namespaces {
            let argv = ["ip", "tcp_metrics", "flush", "all"].map(String::from);
            let _ = crate::peers::command_in(ns, &argv)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }

    pub(super) fn listen(&self) -> io::Result<TcpListener> {
        let address = SocketAddr::new(self.receiver_ip, 0);
        match &self.receiver_ns {
            None => TcpListener::bind(address),
            Some(ns) => VethPair::in_namespace(ns, move || TcpListener::bind(address)),
        }
    }

    /// A connection to `address` from the sender's side. On loopback each
    /// comes from an address of its own in 127.1.0.0/16 (all of 127/8 is
    /// this host's): TCP caches what a connection ended with (cwnd,
    /// ssthresh) per pair of addresses and starts the next one from it,
    /// so the transfers a run repeats would each inherit the last, while
    /// a peer's one transfer a run starts fresh ([`forget_tcp_metrics`]
    /// runs before every run; docs/bench.md has the figures). The bench's
    /// veth namespaces cache nothing ([`VethPair::create`]).
    ///
    /// [`forget_tcp_metrics`]: Net::forget_tcp_metrics
    pub(super) fn connect(&self, address: SocketAddr) -> io::Result<TcpStream> {
        match &self.sender_ns {
            None if address.ip().is_loopback() && address.is_ipv4() => {
                let n = self.connections.fetch_add(1, Ordering::Relaxed) % (1 << 16);
                let [high, low] = (n as u16).to_be_bytes();
                connect_from(IpAddr::V4(Ipv4Addr::new(127, 1, high, low)), address)
            }
            None => TcpStream::connect(address),
            Some(ns) => VethPair::in_namespace(ns, move || TcpStream::connect(address)),
        }
    }
}

/// A connection to `address` from `source` (any port).
fn connect_from(source: IpAddr, address: SocketAddr) -> io::Result<TcpStream> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let socket = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::bind(&socket, &SocketAddr::new(source, 0))?;
    rustix::net::connect(&socket, &address)?;
    Ok(TcpStream::from(socket))
}

/// Waits up to [`IO_DEADLINE`] for a connection.
pub(super) fn accept_within(listener: &TcpListener) -> io::Result<TcpStream> {
    let mut fds = [rustix::event::PollFd::new(
        listener,
        rustix::event::PollFlags::IN,
    )];
    let deadline = std::time::Instant::now() + IO_DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let timeout = rustix::time::Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no connection came",
                ))
            }
            Ok(_) => break,
            // A signal (or io_uring's task work) woke the wait: wait on.
            Err(rustix::io::Errno::INTR) => continue,
            Err(errno) => return Err(errno.into()),
        }
    }
    let (stream, _) = listener.accept()?;
    stream.set_read_timeout(Some(IO_DEADLINE))?;
    stream.set_write_timeout(Some(IO_DEADLINE))?;
    Ok(stream)
}

/// The reading thread of file → pipe: drains the pipe.
pub(super) fn spawn_pipe_reader(read_end: OwnedFd) -> JoinHandle<io::Result<u64>> {
    std::thread::spawn(move || {
        leave_contender_cpu();
        drain(File::from(read_end))
    })
}

/// Reads to the end, counting.
pub(super) fn drain(mut from: impl Read) -> io::Result<u64> {
    let mut buffer = vec![0u8; HELPER_BUFFER];
    let mut total = 0u64;
    loop {
        match from.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The receiving thread of file → socket: accepts `connections`
/// connections one after the other and drains each; the bytes of all.
pub(super) fn spawn_receiver(
    listener: TcpListener,
    connections: u64,
) -> JoinHandle<io::Result<u64>> {
    std::thread::spawn(move || {
        leave_contender_cpu();
        let mut total = 0;
        for _ in 0..connections {
            total += drain(accept_within(&listener)?)?;
        }
        Ok(total)
    })
}

/// The sending thread of socket → file: connects (retrying while a peer's
/// listener is not up yet), writes `size` bytes of `pattern`, shuts down
/// its side, and returns when it connected.
pub(super) fn spawn_sender(
    net: &Net,
    address: SocketAddr,
    pattern: Arc<Vec<u8>>,
    size: u64,
) -> JoinHandle<io::Result<Instant>> {
    let ns = net.sender_ns.clone();
    std::thread::spawn(move || {
        leave_contender_cpu();
        if let Some(ns) = ns {
            VethPair::enter(&ns)?;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut stream = loop {
            match TcpStream::connect(address) {
                Ok(stream) => break stream,
                Err(e)
                    if e.kind() == io::ErrorKind::ConnectionRefused
                        && Instant::now() < deadline =>
                {
                    // The peer is still starting; its start-up is outside
                    // its window (the window starts at the connection).
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        };
        let connected = Instant::now();
        stream.set_write_timeout(Some(IO_DEADLINE))?;
        write_pattern(&mut stream, &pattern, size)?;
        stream.shutdown(Shutdown::Write)?;
        Ok(connected)
    })
}

/// The writing thread of pipe → file: writes `size` bytes of `pattern`
/// into the pipe, then closes it. A reader that goes away ends it with
/// `EPIPE`.
pub(super) fn spawn_feeder(
    write_end: OwnedFd,
    pattern: Arc<Vec<u8>>,
    size: u64,
) -> JoinHandle<io::Result<()>> {
    std::thread::spawn(move || {
        leave_contender_cpu();
        write_pattern(&mut File::from(write_end), &pattern, size)
    })
}

/// `size` bytes of `pattern`, repeated, into `to`.
fn write_pattern(to: &mut impl Write, pattern: &[u8], size: u64) -> io::Result<()> {
    let mut left = size;
    while left > 0 {
        let n = left.min(pattern.len() as u64) as usize;
        to.write_all(&pattern[..n])?;
        left -= n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_connections_come_from_addresses_of_their_own() {
        let net = Net::loopback();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let mut from = Vec::new();
        for _ in 0..3 {
            let _stream = net.connect(address).unwrap();
            from.push(listener.accept().unwrap().1.ip());
        }
        let expected: Vec<IpAddr> = (0..3)
            .map(|n| IpAddr::V4(Ipv4Addr::new(127, 1, 0, n)))
            .collect();
        assert_eq!(from, expected);
    }
}
