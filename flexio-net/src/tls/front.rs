//! The server's TLS front: accepts TLS connections on the public address,
//! completes each handshake under a deadline, and relays the plaintext to
//! the plain server on loopback ([`super::pump`]).
//!
//! One thread per TLS connection, at most `max_connections` of them (more
//! are closed at once): rustls needs a thread to drive each session, and
//! the plain server behind keeps its own limits and deadlines.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{pump, TlsIdentity};

/// How the front runs.
#[derive(Clone)]
pub(crate) struct FrontConfig {
    pub identity: TlsIdentity,
    /// The plain server on loopback.
    pub backend: SocketAddr,
    pub max_connections: usize,
    /// The whole handshake must end within this.
    pub handshake_timeout: Duration,
    /// A relayed connection with nothing moving this long is closed.
    pub idle_timeout: Duration,
}

/// Counts a relayed connection while its thread lives.
struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Accepts on `listener` until `stop` is set (and the listener shut
/// down, which wakes the accept).
pub(crate) fn run(listener: &TcpListener, config: FrontConfig, stop: &AtomicBool) {
    let live = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(stream) = stream else {
            // EMFILE and the like: wait instead of spinning.
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if live.fetch_add(1, Ordering::Relaxed) >= config.max_connections {
            live.fetch_sub(1, Ordering::Relaxed);
            continue;
        }
        let guard = Live(Arc::clone(&live));
        let config = config.clone();
        let spawned = std::thread::Builder::new()
            .name("serve-tls".into())
            .spawn(move || {
                let _guard = guard;
                let peer = stream
                    .peer_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                if let Err(error) = relay(stream, &config) {
                    if error.kind() != std::io::ErrorKind::UnexpectedEof {
                        eprintln!("flexio serve: TLS client {peer}: {error}");
                    }
                }
            });
        if spawned.is_err() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Completes the handshake of `session` on `stream` within `timeout`.
pub(crate) fn handshake(
    session: &mut rustls::Connection,
    stream: &mut TcpStream,
    timeout: Duration,
) -> std::io::Result<()> {
    let deadline = Instant::now() + timeout;
    while session.is_handshaking() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("TLS handshake not done within {timeout:?}"),
            ));
        }
        stream.set_read_timeout(Some(left))?;
        stream.set_write_timeout(Some(left))?;
        let (read, written) = session.complete_io(stream)?;
        if read == 0 && written == 0 && session.is_handshaking() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the peer closed during the TLS handshake",
            ));
        }
    }
    Ok(())
}

fn relay(mut stream: TcpStream, config: &FrontConfig) -> std::io::Result<()> {
    let _ = stream.set_nodelay(true);
    let session = rustls::ServerConnection::new(Arc::clone(&config.identity.config))
        .map_err(std::io::Error::other)?;
    let mut session = rustls::Connection::Server(session);
    handshake(&mut session, &mut stream, config.handshake_timeout)?;
    let mut inner = TcpStream::connect(config.backend)?;
    let _ = inner.set_nodelay(true);
    pump(&mut session, &mut stream, &mut inner, config.idle_timeout)
}
