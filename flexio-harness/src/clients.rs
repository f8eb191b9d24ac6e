//! The one small HTTP/1.1 client of the harness and the bench: a
//! [`Probe`] is a connection that GETs a whole file (200) or a byte range
//! (206) and counts the body, within a deadline or not. On it stand the
//! equal clients of the fairness measurements (each a thread with one
//! kept-alive connection fetching the same file again and again for a
//! fixed time: wrk reports only its total, Jain's index needs each
//! client's share), the one-shot fetch of the serve-clients cells, and the
//! cache bench's range readers.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::ops::Range;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// How long a read may wait when the caller gives no deadline.
const IDLE: Duration = Duration::from_secs(30);

/// The largest response head read; also the read buffer's size.
const BUFFER: usize = 256 << 10;

/// One connection to an HTTP/1.1 server, kept alive across GETs unless a
/// GET asks to close it.
///
/// # Examples
/// ```no_run
/// use flexio_harness::clients::Probe;
/// let mut probe = Probe::connect("127.0.0.1:8080".parse().unwrap())?;
/// // Bytes 0..4096 of /data, waiting at most 30 s for each read.
/// let body = probe.get("/data", Some(0..4096), None)?.expect("no deadline");
/// assert!(body.complete());
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Probe {
    stream: TcpStream,
    address: SocketAddr,
    buffer: Vec<u8>,
    /// The read timeout set on the socket now.
    timeout: Option<Duration>,
}

/// What one GET brought.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Body {
    /// Body bytes received.
    pub got: u64,
    /// The body's length (its Content-Length).
    pub length: u64,
}

impl Body {
    /// Whether the whole body came.
    pub fn complete(&self) -> bool {
        self.got == self.length
    }
}

impl Probe {
    /// Connects to `address`; reads wait at most 30 s unless a GET gives
    /// a deadline.
    ///
    /// # Errors
    /// The connection cannot be made or its options set.
    pub fn connect(address: SocketAddr) -> io::Result<Probe> {
        let stream = TcpStream::connect(address)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IDLE))?;
        Ok(Probe {
            stream,
            address,
            buffer: vec![0u8; BUFFER],
            timeout: Some(IDLE),
        })
    }

    /// GETs `path` (or bytes `range` of it) and reads the body, counting
    /// it. With a `deadline`, a GET whose head has not come by then gives
    /// `None`, and one whose body is cut by it a [`Body`] that is not
    /// complete; without one, each read waits at most 30 s and a longer
    /// wait is an error.
    ///
    /// # Errors
    /// The request cannot be sent; the answer is not a 200 (206 for a
    /// range) with a Content-Length (the range's length for a range); the
    /// server closes before the body's end or sends more than its length;
    /// a read waits too long without a deadline.
    pub fn get(
        &mut self,
        path: &str,
        range: Option<Range<u64>>,
        deadline: Option<Instant>,
    ) -> io::Result<Option<Body>> {
        if range.as_ref().is_some_and(|r| r.is_empty()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("GET {path}: an empty range"),
            ));
        }
        self.send(path, range.clone(), false)?;
        self.answer(path, range, deadline)
    }

    fn send(&mut self, path: &str, range: Option<Range<u64>>, close: bool) -> io::Result<()> {
        let mut request = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n", self.address);
        if let Some(range) = range {
            request += &format!("Range: bytes={}-{}\r\n", range.start, range.end - 1);
        }
        if close {
            request += "Connection: close\r\n";
        }
        request += "\r\n";
        self.stream.write_all(request.as_bytes())
    }

    fn answer(
        &mut self,
        path: &str,
        range: Option<Range<u64>>,
        deadline: Option<Instant>,
    ) -> io::Result<Option<Body>> {
        let Some((length, extra)) = self.read_head(path, range, deadline)? else {
            return Ok(None);
        };
        let mut got = extra;
        while got < length {
            if !self.wait_until(deadline)? {
                return Ok(Some(Body { got, length }));
            }
            match self.stream.read(&mut self.buffer) {
                Ok(0) => {
                    return Err(io::Error::other(format!(
                        "GET {path}: the server closed at byte {got} of {length}"
                    )))
                }
                Ok(n) => got += n as u64,
                Err(e) if is_timeout(&e) && deadline.is_some() => {
                    return Ok(Some(Body { got, length }))
                }
                Err(e) => return Err(e),
            }
        }
        if got != length {
            return Err(io::Error::other(format!(
                "GET {path}: {got} body bytes for a Content-Length of {length}"
            )));
        }
        Ok(Some(Body { got, length }))
    }

    /// Sets the read timeout for the next read: what is left until
    /// `deadline`, or [`IDLE`] without one. `false` when the deadline has
    /// passed.
    fn wait_until(&mut self, deadline: Option<Instant>) -> io::Result<bool> {
        let timeout = match deadline {
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    return Ok(false);
                }
                (deadline - now).max(Duration::from_millis(1))
            }
            None => IDLE,
        };
        if self.timeout != Some(timeout) {
            self.stream.set_read_timeout(Some(timeout))?;
            self.timeout = Some(timeout);
        }
        Ok(true)
    }

    /// Reads a response head and checks it; returns the body's length and
    /// how many body bytes came with the head, or `None` when the
    /// deadline passed first.
    fn read_head(
        &mut self,
        path: &str,
        range: Option<Range<u64>>,
        deadline: Option<Instant>,
    ) -> io::Result<Option<(u64, u64)>> {
        let mut filled = 0;
        loop {
            if let Some(end) = self.buffer[..filled]
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
            {
                let head = String::from_utf8_lossy(&self.buffer[..end]);
                let length = checked_length(&head, path, range)?;
                return Ok(Some((length, (filled - end - 4) as u64)));
            }
            if filled == self.buffer.len() {
                return Err(io::Error::other(format!(
                    "GET {path}: a response head over 256 KiB"
                )));
            }
            if !self.wait_until(deadline)? {
                return Ok(None);
            }
            match self.stream.read(&mut self.buffer[filled..]) {
                Ok(0) => {
                    return Err(io::Error::other(format!(
                        "GET {path}: the server closed before a head"
                    )))
                }
                Ok(n) => filled += n,
                Err(e) if is_timeout(&e) && deadline.is_some() => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }
}

/// The body's length a response `head` announces, after checking its
/// status (200, or 206 for a `range`) and, for a range, that the length
/// is the range's.
fn checked_length(head: &str, path: &str, range: Option<Range<u64>>) -> io::Result<u64> {
    let status = head.lines().next().unwrap_or("");
    let expected = if range.is_some() {
        "HTTP/1.1 206"
    } else {
        "HTTP/1.1 200"
    };
    if !status.starts_with(expected) {
        return Err(io::Error::other(format!(
            "GET {path}: the server answered {status:?}"
        )));
    }
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<u64>().ok())?
        })
        .ok_or_else(|| {
            io::Error::other(format!("GET {path}: a response without Content-Length"))
        })?;
    match range {
        Some(range) if length != range.end - range.start => Err(io::Error::other(format!(
            "GET {path} bytes {}+{}: a Content-Length of {length}",
            range.start,
            range.end - range.start
        ))),
        _ => Ok(length),
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

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
                let probe = Probe::connect(address);
                start.wait();
                fetch_until(probe?, &path, duration)
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
    let mut probe = Probe::connect(address)?;
    probe.send(path, None, true)?;
    match probe.answer(path, None, Some(deadline))? {
        Some(body) if body.complete() => Ok((body.got, Instant::now())),
        _ => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("GET {path}: past its deadline"),
        )),
    }
}

/// Fetches `path` over `probe` until `duration` has passed, counting the
/// body bytes that came inside the window (a body cut by its end too).
fn fetch_until(mut probe: Probe, path: &str, duration: Duration) -> io::Result<ClientShare> {
    let started = Instant::now();
    let deadline = started + duration;
    let mut bytes = 0u64;
    while Instant::now() < deadline {
        match probe.get(path, None, Some(deadline))? {
            Some(body) => bytes += body.got,
            None => break,
        }
    }
    Ok(ClientShare {
        bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
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

    /// A server that answers each request it reads with `answers[i]`
    /// (head and body), then closes; the requests it read come back.
    fn answering(answers: Vec<Vec<u8>>) -> (SocketAddr, std::thread::JoinHandle<Vec<String>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut requests = Vec::new();
            for answer in answers {
                let mut request = [0u8; 1024];
                let n = socket.read(&mut request).unwrap();
                requests.push(String::from_utf8_lossy(&request[..n]).into_owned());
                socket.write_all(&answer).unwrap();
            }
            requests
        });
        (address, server)
    }

    fn answer(status: &str, body: &[u8]) -> Vec<u8> {
        let mut answer = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        answer.extend_from_slice(body);
        answer
    }

    #[test]
    fn a_probe_gets_ranges_and_whole_files_on_one_connection() {
        let (address, server) = answering(vec![
            answer("206 Partial Content", &[1u8; 4096]),
            answer("200 OK", &[2u8; 100]),
        ]);
        let mut probe = Probe::connect(address).unwrap();
        let range = probe.get("/data", Some(8192..12288), None).unwrap();
        assert_eq!(
            range,
            Some(Body {
                got: 4096,
                length: 4096
            })
        );
        let whole = probe.get("/data", None, None).unwrap();
        assert_eq!(
            whole,
            Some(Body {
                got: 100,
                length: 100
            })
        );
        let requests = server.join().unwrap();
        assert!(
            requests[0].contains("Range: bytes=8192-12287\r\n"),
            "{}",
            requests[0]
        );
        assert!(!requests[1].contains("Range:"), "{}", requests[1]);
    }

    #[test]
    fn a_probe_refuses_a_whole_file_for_a_range_and_a_wrong_length() {
        let (address, server) = answering(vec![answer("200 OK", &[1u8; 4096])]);
        let mut probe = Probe::connect(address).unwrap();
        let error = probe.get("/data", Some(0..4096), None).unwrap_err();
        assert!(
            error.to_string().contains("answered \"HTTP/1.1 200 OK\""),
            "{error}"
        );
        server.join().unwrap();

        let (address, server) = answering(vec![answer("206 Partial Content", &[1u8; 100])]);
        let mut probe = Probe::connect(address).unwrap();
        let error = probe.get("/data", Some(0..4096), None).unwrap_err();
        assert!(
            error.to_string().contains("Content-Length of 100"),
            "{error}"
        );
        server.join().unwrap();
    }

    #[test]
    fn a_probe_says_where_a_body_was_cut() {
        let mut cut = answer("200 OK", &[1u8; 1000]);
        cut.truncate(cut.len() - 400);
        let (address, server) = answering(vec![cut]);
        let error =
            fetch_once(address, "/f", Instant::now() + Duration::from_secs(10)).unwrap_err();
        assert!(
            error.to_string().contains("closed at byte 600 of 1000"),
            "{error}"
        );
        server.join().unwrap();
    }
}
