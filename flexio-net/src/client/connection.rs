//! One client connection: a parsed `http://` or `https://` URL, connecting
//! (and shaking hands) with a deadline, writing a request head, and reading
//! a response head (capped at [`MAX_HEAD`], parsed with `httparse`) while
//! the body stays in the socket for splice, or in the TLS session.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::transport::{HeadEnd, Stream};
use crate::tls::client::TlsClient;

use crate::error::{Error, Result};
use crate::head::{read_until, response_complete, Step, MAX_HEAD, MAX_HEADERS};
use crate::manifest::{Manifest, MAX_MANIFEST_BYTES};

/// An `http://` or `https://host[:port]/path` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// Whether the connection is TLS (`https://`).
    pub tls: bool,
    /// Host name or address (brackets kept for IPv6), for `Host:`.
    pub host: String,
    /// The port (80, or 443 for `https://`, when not given).
    pub port: u16,
    /// The path and query, as sent (starts with `/`).
    pub target: String,
}

impl Url {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`Error::Usage`] for anything but a plain `http://` or `https://`
    /// URL.
    ///
    /// # Examples
    /// ```
    /// let url = flexio_net::client::Url::parse("http://127.0.0.1:8080/a/b?x").unwrap();
    /// assert_eq!((url.host.as_str(), url.port, url.target.as_str()), ("127.0.0.1", 8080, "/a/b?x"));
    /// let secure = flexio_net::client::Url::parse("https://example.org/").unwrap();
    /// assert_eq!((secure.tls, secure.port, secure.authority().as_str()), (true, 443, "example.org"));
    /// assert!(flexio_net::client::Url::parse("ftp://example.org/").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Url> {
        let (tls, rest) = match (text.strip_prefix("http://"), text.strip_prefix("https://")) {
            (Some(rest), _) => (false, rest),
            (None, Some(rest)) => (true, rest),
            (None, None) => {
                return Err(Error::Usage(format!(
                    "{text}: only http:// and https:// URLs are fetched"
                )))
            }
        };
        let (authority, target) = match rest.find(['/', '?']) {
            Some(at) => (&rest[..at], rest[at..].to_string()),
            None => (rest, "/".to_string()),
        };
        let target = if target.starts_with('?') {
            format!("/{target}")
        } else {
            target
        };
        if authority.contains('@') {
            return Err(Error::Usage(format!(
                "{text}: credentials in the URL are not accepted"
            )));
        }
        if target.bytes().any(|b| b <= b' ' || b == 0x7f || b == b'#') {
            return Err(Error::Usage(format!(
                "{text}: the path holds spaces, control characters or a fragment; percent-encode them"
            )));
        }
        let default_port = if tls { 443 } else { 80 };
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (
                host,
                port.parse()
                    .map_err(|_| Error::Usage(format!("{text}: bad port {port:?}")))?,
            ),
            _ => (authority, default_port),
        };
        if host.is_empty() {
            return Err(Error::Usage(format!("{text}: no host")));
        }
        Ok(Url {
            tls,
            host: host.to_string(),
            port,
            target,
        })
    }

    /// The URL with another path and query.
    pub fn with_target(&self, target: String) -> Url {
        Url {
            target,
            ..self.clone()
        }
    }

    /// `host:port` (the port left out where it is the scheme's), as for
    /// `Host:`.
    pub fn authority(&self) -> String {
        if self.port == if self.tls { 443 } else { 80 } {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The host without IPv6 brackets, as names resolve and certificates
    /// name it.
    fn bare_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "https" } else { "http" };
        write!(f, "{scheme}://{}{}", self.authority(), self.target)
    }
}

/// A response head.
#[derive(Debug)]
pub(crate) struct Response {
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    pub status: u16,
    pub reason: String,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
}

impl Response {
    /// The length of a body that must come with `200 OK` and a
    /// Content-Length; `what` names the body in the error.
    pub fn ok_length(self, peer: &str, what: &str) -> Result<u64> {
        if self.status != 200 {
            return Err(Error::Status {
                peer: peer.to_string(),
                status: self.status,
                reason: self.reason,
            });
        }
        self.content_length(peer)?
            .ok_or_else(|| Error::protocol(peer, format!("{what} without Content-Length")))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.trim())
    }

    /// The Content-Length, refusing several that disagree or one that is
    /// not a number.
    pub fn content_length(&self, peer: &str) -> Result<Option<u64>> {
        let mut found: Option<u64> = None;
        for (_, value) in self.headers.iter().filter(|(n, _)| n == "content-length") {
            let value = value.trim();
            let parsed = (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
                .then(|| value.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| Error::protocol(peer, format!("bad Content-Length {value:?}")))?;
            if found.is_some_and(|f| f != parsed) {
                return Err(Error::protocol(peer, "conflicting Content-Length headers"));
            }
            found = Some(parsed);
        }
        Ok(found)
    }

    /// Whether the server will close the connection after this response:
    /// it says `close`, or it speaks HTTP/1.0 (`python3 -m http.server`)
    /// without asking to keep it alive.
    pub fn closes(&self) -> bool {
        let says = |token: &str| {
            self.header("connection")
                .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        };
        says("close") || (self.version == 0 && !says("keep-alive"))
    }
}

/// What a server answered to `DIR/?manifest`.
pub(crate) enum ManifestAnswer {
    /// flexio's manifest.
    Manifest(Manifest),
    /// Its listing of the directory (read and dropped): the server is not
    /// flexio. Whether the connection can carry the next request.
    Listing { reusable: bool },
}

impl ManifestAnswer {
    /// The manifest, where one is needed; `peer` names the server.
    ///
    /// # Errors
    /// [`Error::Protocol`] for an answer that is not flexio's manifest.
    pub fn needed(self, peer: &str) -> Result<Manifest> {
        match self {
            ManifestAnswer::Manifest(manifest) => Ok(manifest),
            ManifestAnswer::Listing { .. } => Err(Error::protocol(
                peer,
                "answered with something other than a flexio manifest: this needs `flexio serve`",
            )),
        }
    }
}

/// A connection to one server.
pub(crate) struct Connection {
    pub stream: Stream,
    pub url: Url,
    pub timeout: Duration,
}

impl Connection {
    /// Connects to `url`'s host within `timeout` (and, for `https://`,
    /// completes a handshake `tls` checks); reads and writes then time out
    /// in the kernel after `timeout` without progress.
    pub fn open(url: &Url, timeout: Duration, tls: &TlsClient) -> Result<Connection> {
        let name = url.authority();
        let addresses: Vec<SocketAddr> = (url.bare_host(), url.port)
            .to_socket_addrs()
            .map_err(|e| Error::io("resolve", name.clone(), None, e))?
            .collect();
        let mut last = None;
        for address in addresses {
            match TcpStream::connect_timeout(&address, timeout) {
                Ok(mut socket) => {
                    let set = |r: std::io::Result<()>| {
                        r.map_err(|e| Error::io("setsockopt", name.clone(), None, e))
                    };
                    set(socket.set_read_timeout(Some(timeout)))?;
                    set(socket.set_write_timeout(Some(timeout)))?;
                    set(socket.set_nodelay(true))?;
                    let stream = if url.tls {
                        let session = tls.connect(url.bare_host(), &mut socket, timeout, &name)?;
                        Stream::Tls {
                            session: Box::new(rustls::StreamOwned::new(session, socket)),
                            ahead: Vec::new(),
                        }
                    } else {
                        Stream::Plain(socket)
                    };
                    return Ok(Connection {
                        stream,
                        url: url.clone(),
                        timeout,
                    });
                }
                Err(error) => last = Some(error),
            }
        }
        Err(Error::io(
            "connect",
            url.to_string(),
            None,
            last.unwrap_or_else(|| std::io::ErrorKind::NotFound.into()),
        ))
    }

    /// Reads the answer to a `?manifest` request: 200 with a body under
    /// [`MAX_MANIFEST_BYTES`], parsed; or, where the server is not flexio
    /// and answered with its listing (HTML, or nginx's JSON array), that it
    /// did. `peer` names it in errors.
    pub fn read_manifest(&mut self, peer: &str) -> Result<ManifestAnswer> {
        let response = self.read_response()?;
        if response.status != 200 {
            return Err(Error::Status {
                peer: peer.to_string(),
                status: response.status,
                reason: response.reason,
            });
        }
        // nginx, Apache and `python3 -m http.server` ignore the query and
        // list the directory. A body without a type is parsed, and
        // checked, as a manifest.
        let content_type = response.header("content-type").unwrap_or_default();
        let listing = ManifestAnswer::Listing {
            reusable: !response.closes(),
        };
        let json = content_type.is_empty() || content_type.starts_with("application/json");
        if !json && !content_type.starts_with("text/html") {
            // A file's bytes, say: left unread, and the connection with them.
            return Ok(ManifestAnswer::Listing { reusable: false });
        }
        let body = self.read_framed_body(&response, MAX_MANIFEST_BYTES, "a manifest")?;
        if !json || body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            return Ok(listing);
        }
        serde_json::from_slice(&body)
            .map(ManifestAnswer::Manifest)
            .map_err(|e| Error::protocol(peer, format!("malformed manifest: {e}")))
    }

    /// Sends `GET target` with optional extra header lines.
    pub fn send_get(&mut self, target: &str, extra: &str) -> Result<()> {
        self.send_request("GET", target, extra)
    }

    /// Sends a request head with optional extra header lines.
    pub fn send_request(&mut self, method: &str, target: &str, extra: &str) -> Result<()> {
        let head = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: flexio/{}\r\nAccept-Encoding: identity\r\n{extra}\r\n",
            self.url.authority(),
            env!("CARGO_PKG_VERSION")
        );
        self.stream
            .write_all(head.as_bytes())
            .and_then(|()| self.stream.flush())
            .map_err(|e| Error::io("send request to", self.url.to_string(), None, e))
    }

    /// Reads a response head within the connection's timeout.
    pub fn read_response(&mut self) -> Result<Response> {
        let peer = self.url.to_string();
        let head = self.read_head().map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => Error::Timeout {
                peer: peer.clone(),
                waited: self.timeout,
                during: "waiting for the response head",
            },
            _ => Error::io("recv", peer.clone(), None, e),
        })?;
        let head = match head {
            HeadEnd::Complete(head) => head,
            HeadEnd::Closed(length) => {
                return Err(Error::protocol(
                    peer,
                    format!("the server closed the connection after {length} bytes of response head"),
                ))
            }
            HeadEnd::TooLarge => {
                return Err(Error::protocol(
                    peer,
                    format!("the response head is over {MAX_HEAD} bytes or {MAX_HEADERS} header lines; refused"),
                ))
            }
            HeadEnd::Malformed(why) => {
                return Err(Error::protocol(
                    peer,
                    format!("malformed response head: {why}"),
                ))
            }
        };
        parse_head(&head, &peer)
    }

    /// Reads and drops the short text body of `response` (an answer to a
    /// write), so the connection can carry the next request; `what` names
    /// the answer in the error when it has no short Content-Length.
    pub(crate) fn skip_short_body(&mut self, response: &Response, what: &str) -> Result<()> {
        let peer = self.url.to_string();
        match response.content_length(&peer)? {
            Some(n) if n <= 64 << 10 => self.read_small_body(n).map(drop),
            _ => Err(Error::protocol(
                peer,
                format!("{what} without a short Content-Length"),
            )),
        }
    }

    /// A response head: peeked off a plain socket (the body stays in it
    /// for splice) until the deadline, or read from the TLS session.
    fn read_head(&mut self) -> std::io::Result<HeadEnd> {
        let Some(socket) = self.stream.plain_fd() else {
            return self.stream.read_tls_head();
        };
        let mut head = Vec::new();
        let deadline = super::deadline_after(self.timeout);
        Ok(
            match read_until(socket, &mut head, response_complete, deadline)? {
                Step::Complete => HeadEnd::Complete(head),
                Step::WouldBlock | Step::Partial => return Err(std::io::ErrorKind::TimedOut.into()),
                Step::Closed => HeadEnd::Closed(head.len()),
                Step::TooLarge => HeadEnd::TooLarge,
                Step::Malformed(why) => HeadEnd::Malformed(why),
            },
        )
    }

    /// Reads a body of at most `cap` bytes however it is framed: by
    /// Content-Length, chunked (nginx sends its listings so), or up to the
    /// close; `what` names it in errors.
    pub(crate) fn read_framed_body(
        &mut self,
        response: &Response,
        cap: u64,
        what: &str,
    ) -> Result<Vec<u8>> {
        let peer = self.url.to_string();
        let over = || Error::protocol(&peer, format!("{what} is over the {cap}-byte cap"));
        let chunked = response
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        if chunked {
            return self.read_chunked(cap, what);
        }
        match response.content_length(&peer)? {
            Some(length) if length > cap => Err(over()),
            Some(length) => self.read_small_body(length),
            None if response.closes() => {
                let mut body = Vec::new();
                std::io::Read::read_to_end(
                    &mut std::io::Read::take(&mut self.stream, cap + 1),
                    &mut body,
                )
                .map_err(|e| Error::io("recv body from", &peer, None, e))?;
                if body.len() as u64 > cap {
                    return Err(over());
                }
                Ok(body)
            }
            None => Err(Error::protocol(
                &peer,
                format!("{what} with neither a length, chunks nor a close"),
            )),
        }
    }

    /// A chunked body, joined, refused past `cap` bytes.
    fn read_chunked(&mut self, cap: u64, what: &str) -> Result<Vec<u8>> {
        let peer = self.url.to_string();
        read_chunked_from(&mut self.stream, cap, &peer, what)
    }

    /// Reads a small body (a manifest, an error text) of `length` bytes
    /// into memory; the caller has capped `length`.
    pub fn read_small_body(&mut self, length: u64) -> Result<Vec<u8>> {
        let peer = self.url.to_string();
        read_exactly(&mut self.stream, length, &peer)
    }
}

/// The most memory a small body is given up front: past it, a body grows
/// only as its bytes arrive, so no length a peer announces is an
/// allocation by itself.
const UP_FRONT: u64 = 1 << 20;

/// Exactly `length` bytes from `reader`; a peer that ends sooner is an
/// error naming how many came.
fn read_exactly(reader: &mut impl std::io::Read, length: u64, peer: &str) -> Result<Vec<u8>> {
    let mut body = Vec::with_capacity(length.min(UP_FRONT) as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(reader, length), &mut body)
        .map_err(|e| Error::io("recv body from", peer, Some(body.len() as u64), e))?;
    if (body.len() as u64) < length {
        return Err(Error::protocol(
            peer,
            format!("the body ended after {} of its {length} bytes", body.len()),
        ));
    }
    Ok(body)
}

/// A response head's bytes, parsed; `peer` names the server in errors.
///
/// # Errors
/// [`Error::Protocol`] for a head `httparse` refuses.
pub(crate) fn parse_head(head: &[u8], peer: &str) -> Result<Response> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    response
        .parse(head)
        .map_err(|e| Error::protocol(peer, format!("malformed response head: {e}")))?;
    Ok(Response {
        version: response.version.unwrap_or(1),
        status: response.code.unwrap_or(0),
        reason: response.reason.unwrap_or_default().to_string(),
        headers: crate::head::owned_headers(response.headers),
    })
}

/// A chunked body from `reader`, joined, refused past `cap` bytes: each
/// chunk's size is checked against the room left before a byte of it is
/// read or a byte of memory given to it (a chunk of `ffffffffffffffff`
/// bytes is an error naming the peer, not an allocation). `what` names
/// the body in errors.
///
/// # Errors
/// [`Error::Protocol`] for a bad size or line, a body over `cap`, or one
/// cut short; the errors of reading.
pub(crate) fn read_chunked_from(
    reader: &mut impl std::io::Read,
    cap: u64,
    peer: &str,
    what: &str,
) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line_from(reader, peer)?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = (!size.is_empty() && size.len() <= 16)
            .then(|| u64::from_str_radix(size, 16).ok())
            .flatten()
            .ok_or_else(|| Error::protocol(peer, format!("a bad chunk size {size:?}")))?;
        if size == 0 {
            // The trailer: lines up to an empty one, as many as a head
            // may hold.
            for _ in 0..=MAX_HEADERS {
                if read_line_from(reader, peer)?.is_empty() {
                    return Ok(body);
                }
            }
            return Err(Error::protocol(
                peer,
                format!("{what}: a trailer of over {MAX_HEADERS} lines"),
            ));
        }
        if size > cap.saturating_sub(body.len() as u64) {
            return Err(Error::protocol(
                peer,
                format!("{what} is over the {cap}-byte cap (a chunk of {size} bytes announced)"),
            ));
        }
        body.extend(read_exactly(reader, size, peer)?);
        if !read_line_from(reader, peer)?.is_empty() {
            return Err(Error::protocol(peer, "a chunk longer than its size"));
        }
    }
}

/// One CRLF-ended line of at most 1 KiB, without its end; bytes one by
/// one, so nothing past it leaves the reader.
fn read_line_from(reader: &mut impl std::io::Read, peer: &str) -> Result<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() <= 1024 {
        std::io::Read::read_exact(reader, &mut byte)
            .map_err(|e| Error::io("recv chunk from", peer, None, e))?;
        if byte[0] == b'\n' {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(String::from_utf8_lossy(&line).into_owned());
        }
        line.push(byte[0]);
    }
    Err(Error::protocol(peer, "a chunk line over 1 KiB"))
}
