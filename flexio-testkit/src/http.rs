//! The small raw HTTP/1.1 client the tests use to say exactly what goes on
//! the wire: requests are bytes the test writes; responses are read back
//! with their heads parsed by httparse and their bodies by
//! `Content-Length`, one connection kept alive across requests.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A response as read off the wire.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The header fields, in order, as sent.
    pub headers: Vec<(String, String)>,
    /// The body (empty for HEAD and 304).
    pub body: Vec<u8>,
}

impl Response {
    /// The first header field named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One connection, kept alive across requests.
pub struct RawClient {
    /// The connection, for writing raw bytes or reading at will.
    pub stream: TcpStream,
    buffer: Vec<u8>,
}

impl RawClient {
    /// Connects to `address`, with a 20 s read timeout (a bound on a
    /// hung server, not a measure).
    ///
    /// # Panics
    ///
    /// When the connection is refused.
    pub fn connect(address: SocketAddr) -> Self {
        let stream = TcpStream::connect(address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        RawClient {
            stream,
            buffer: Vec::new(),
        }
    }

    /// Writes `raw` as it is.
    pub fn send(&mut self, raw: &[u8]) {
        self.stream.write_all(raw).expect("send");
    }

    /// `GET target` with extra header lines (each ending in CRLF).
    pub fn get(&mut self, target: &str, extra: &str) -> Response {
        self.send(format!("GET {target} HTTP/1.1\r\nHost: test\r\n{extra}\r\n").as_bytes());
        self.read_response(false)
    }

    /// Sends `raw`, then reads the response as `try_read_response` does.
    pub fn try_read_response_to(&mut self, raw: &[u8]) -> Option<Response> {
        self.send(raw);
        self.try_read_response(false)
    }

    /// Reads one response; `head_only` for the answer to HEAD (no body
    /// whatever Content-Length says). Panics when the connection closes
    /// first.
    pub fn read_response(&mut self, head_only: bool) -> Response {
        self.try_read_response(head_only)
            .expect("the connection closed before a whole response")
    }

    /// As `read_response`, `None` when the connection closed first.
    pub fn try_read_response(&mut self, head_only: bool) -> Option<Response> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut parsed = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head_len) = parsed.parse(&self.buffer).expect("HTTP")
            {
                let status = parsed.code.unwrap();
                let headers: Vec<(String, String)> = parsed
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                let length = if head_only || status == 304 {
                    0
                } else {
                    headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                        .map(|(_, v)| v.parse::<usize>().unwrap())
                        .unwrap_or(0)
                };
                while self.buffer.len() < head_len + length {
                    if !self.fill() {
                        return None;
                    }
                }
                let body = self.buffer[head_len..head_len + length].to_vec();
                self.buffer.drain(..head_len + length);
                return Some(Response {
                    status,
                    headers,
                    body,
                });
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Whether the server closed the connection: the next read is the end
    /// of the stream (or a reset). Bytes are not a close (they are kept
    /// for the next response), and neither is silence: a server that
    /// keeps the connection open without a word for 10 s has not closed
    /// it, and `false` says so instead of taking the timeout for a close.
    pub fn closed(&mut self) -> bool {
        let before = self.stream.read_timeout().ok().flatten();
        self.stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut chunk = [0u8; 64 * 1024];
        let closed = loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => break true,
                Ok(n) => {
                    self.buffer.extend_from_slice(&chunk[..n]);
                    break false;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break e.kind() == std::io::ErrorKind::ConnectionReset,
            }
        };
        self.stream.set_read_timeout(before).unwrap();
        closed
    }

    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 64 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buffer.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }
}

/// Where `needle` first occurs in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads one request head (up to the blank line) off a plain or TLS
/// stream, a byte at a time so that nothing of the body is taken; `None`
/// at its end.
pub fn read_head(stream: &mut impl Read) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}
