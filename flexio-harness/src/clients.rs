//! Equal clients for the fairness measurements: each a thread with one
//! kept-alive connection that fetches the same file again and again for a
//! fixed time, counting the body bytes it got. wrk reports only its
//! total; Jain's index needs each client's share.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// What one client got.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientShare {
    /// Body bytes received inside the window.
    pub bytes: u64,
    /// The window's length, seconds.
    pub seconds: f64,
}

impl ClientShare {
    /// Bytes per second.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// `clients` equal clients fetching `path` from `address` for `duration`,
/// all starting together.
///
/// # Errors
/// A client cannot connect, or a server answers something other than 200
/// with a length.
pub fn equal_clients(
    address: SocketAddr,
    path: &str,
    clients: usize,
    duration: Duration,
) -> io::Result<Vec<ClientShare>> {
    let start = Arc::new(Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (start, path) = (Arc::clone(&start), path.to_string());
            std::thread::spawn(move || {
                let stream = TcpStream::connect(address);
                start.wait();
                fetch_until(stream?, address, &path, duration)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .map_err(|_| io::Error::other("a client thread panicked"))?
        })
        .collect()
}

/// Fetches `path` from `address` once, on a connection of its own that
/// the request closes: the body's bytes and when its last byte came.
///
/// # Errors
/// The client cannot connect, the answer is not a 200 with a length, the
/// body is cut short or longer than its length, or `deadline` passes.
pub fn fetch_once(
    address: SocketAddr,
    path: &str,
    deadline: Instant,
) -> io::Result<(u64, Instant)> {
    let mut stream = TcpStream::connect(address)?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes())?;
    let mut buffer = vec![0u8; 256 << 10];
    let late = || {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("GET {path}: past its deadline"),
        )
    };
    let (length, mut got) = read_head(&mut stream, &mut buffer, deadline)?.ok_or_else(late)?;
    while got < length {
        let now = Instant::now();
        if now >= deadline {
            return Err(late());
        }
        stream.set_read_timeout(Some(deadline - now))?;
        match stream.read(&mut buffer) {
            Ok(0) => {
                return Err(io::Error::other(format!(
                    "GET {path}: the server closed at byte {got} of {length}"
                )))
            }
            Ok(n) => got += n as u64,
            Err(e) if is_timeout(&e) => return Err(late()),
            Err(e) => return Err(e),
        }
    }
    if got != length {
        return Err(io::Error::other(format!(
            "GET {path}: {got} body bytes for a Content-Length of {length}"
        )));
    }
    Ok((got, Instant::now()))
}

/// Fetches `path` over `stream` until `duration` has passed.
fn fetch_until(
    mut stream: TcpStream,
    address: SocketAddr,
    path: &str,
    duration: Duration,
) -> io::Result<ClientShare> {
    let started = Instant::now();
    let deadline = started + duration;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n");
    let mut buffer = vec![0u8; 256 << 10];
    let mut bytes = 0u64;
    'requests: while Instant::now() < deadline {
        stream.write_all(request.as_bytes())?;
        let Some((mut body_left, mut extra)) = read_head(&mut stream, &mut buffer, deadline)?
        else {
            break;
        };
        loop {
            let take = extra.min(body_left);
            bytes += take;
            body_left -= take;
            if body_left == 0 {
                continue 'requests;
            }
            let now = Instant::now();
            if now >= deadline {
                break 'requests;
            }
            stream.set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))?;
            extra = match stream.read(&mut buffer) {
                Ok(0) => return Err(io::Error::other("the server closed mid-body")),
                Ok(n) => n as u64,
                Err(e) if is_timeout(&e) => break 'requests,
                Err(e) => return Err(e),
            };
        }
    }
    Ok(ClientShare {
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Reads a response head; returns the body's length and how many body
/// bytes came with the head, or `None` when the window ended first.
fn read_head(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    deadline: Instant,
) -> io::Result<Option<(u64, u64)>> {
    let mut filled = 0;
    loop {
        if let Some(end) = buffer[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]);
            if !head.starts_with("HTTP/1.1 200") {
                return Err(io::Error::other(format!(
                    "server answered {:?}",
                    head.lines().next().unwrap_or("")
                )));
            }
            let length = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<u64>().ok())?
                })
                .ok_or_else(|| io::Error::other("a response without Content-Length"))?;
            return Ok(Some((length, (filled - end - 4) as u64)));
        }
        if filled == buffer.len() {
            return Err(io::Error::other("a response head over 256 KiB"));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        stream.set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))?;
        match stream.read(&mut buffer[filled..]) {
            Ok(0) => return Err(io::Error::other("the server closed before a head")),
            Ok(n) => filled += n,
            Err(e) if is_timeout(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_client_counts_bodies_across_requests() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            // Three answers of 1000 bytes, then the connection stays
            // silent until the client gives up.
            for _ in 0..3 {
                let _ = socket.read(&mut request).unwrap();
                socket
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
                    .unwrap();
                socket.write_all(&[7u8; 1000]).unwrap();
            }
            let _ = socket.read(&mut request);
            let _ = socket.read(&mut request);
        });
        let shares = equal_clients(address, "/f", 1, Duration::from_millis(300));
        let shares = shares.unwrap();
        server.join().unwrap();
        assert_eq!(shares[0].bytes, 3000);
        assert!(shares[0].seconds >= 0.3);
    }
}
