//! Shared by the network tests: a server on loopback in this process, a
//! small raw HTTP client (heads parsed with httparse) to say exactly what
//! goes on the wire, and file helpers.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use flexio_net::server::{ServeConfig, Server};

/// Serves `root` on 127.0.0.1 with `tweak` applied to the defaults; the
/// server thread lives until the test process ends.
pub fn serve_with(root: &Path, tweak: impl FnOnce(&mut ServeConfig)) -> SocketAddr {
    let mut config = ServeConfig::new(root.to_path_buf());
    tweak(&mut config);
    let server = Server::bind(config).expect("bind");
    let address = server.local_addr();
    std::thread::spawn(move || server.run());
    address
}

/// Serves `root` with the defaults.
pub fn serve(root: &Path) -> SocketAddr {
    serve_with(root, |_| {})
}

/// Bytes that are the same from run to run but differ from offset to
/// offset (a misplaced range shows).
pub fn pattern(length: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// A response as read off the wire.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One connection, kept alive across requests.
pub struct RawClient {
    pub stream: TcpStream,
    buffer: Vec<u8>,
}

impl RawClient {
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

/// The `?manifest` body a flexio server sends for the file `data`, named
/// `file`; with `wrong`, that chunk's hash is not the data's (a server whose
/// manifest lies).
#[allow(dead_code)]
pub fn manifest_of(data: &[u8], wrong: Option<usize>) -> Vec<u8> {
    let mut hashes: Vec<String> = data
        .chunks(1 << 20)
        .map(|c| blake3::hash(c).to_hex().to_string())
        .collect();
    if let Some(chunk) = wrong {
        hashes[chunk] = blake3::hash(b"not it").to_hex().to_string();
    }
    serde_json::json!({"schema_version": 1, "chunk_size": 1 << 20, "entries": [
        {"path": "file", "type": "file", "size": data.len(), "mode": 420,
         "mtime": 0, "mtime_nsec": 0, "blake3": hashes}]})
    .to_string()
    .into_bytes()
}

/// The entries of `dir`, for checking that nothing was left behind.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Whether `program` runs (`program --version`).
pub fn have(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// The parts of a `multipart/byteranges` response: each part's head and
/// bytes, in order.
pub fn multipart_parts(response: &Response) -> Vec<(String, Vec<u8>)> {
    let kind = response.header("Content-Type").unwrap();
    let boundary = kind
        .strip_prefix("multipart/byteranges; boundary=")
        .expect(kind);
    let delimiter = format!("\r\n--{boundary}");
    let mut parts = Vec::new();
    let mut rest = &response.body[..];
    while let Some(at) = find(rest, delimiter.as_bytes()) {
        rest = &rest[at + delimiter.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let head_end = find(rest, b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&rest[..head_end]).into_owned();
        let next = find(&rest[head_end + 4..], delimiter.as_bytes()).unwrap();
        parts.push((head, rest[head_end + 4..head_end + 4 + next].to_vec()));
    }
    parts
}

/// Where `needle` first occurs in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `true` as root; otherwise prints why it skips — or panics under
/// `FLEXIO_TEST_PRIVILEGED=1`, where skipping is forbidden.
pub fn require_root(reason: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(
        std::env::var("FLEXIO_TEST_PRIVILEGED").as_deref() != Ok("1"),
        "{reason} needs root, and FLEXIO_TEST_PRIVILEGED=1 forbids skipping it"
    );
    skipped(&format!("{reason} (needs root)"));
    false
}

/// A small tmpfs, unmounted when dropped.
pub struct SmallTmpfs(tempfile::TempDir);

impl SmallTmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it). Needs root.
    pub fn mount(size: &str) -> SmallTmpfs {
        let mount = SmallTmpfs(tempfile::tempdir().unwrap());
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(mount.0.path())
            .status()
            .unwrap();
        assert!(mounted.success(), "mount -t tmpfs failed");
        mount
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        // Lazily: the test's server, alive until the process ends, holds it.
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.0.path())
            .status();
    }
}

/// Starts a PUT of `body` (with `authorization`) whose disk fills while
/// the body is on its way: 1 MiB is sent, then every free block of
/// `mount` is taken by a file named `filler`, then the rest is sent.
/// Returns the answer, if one came before the close; `filler` is left for
/// the caller.
pub fn put_onto_a_disk_that_fills(
    address: SocketAddr,
    target: &str,
    authorization: &str,
    body: &[u8],
    mount: &Path,
) -> Option<Response> {
    let mut client = RawClient::connect(address);
    client.send(
        format!(
            "PUT {target} HTTP/1.1\r\nHost: t\r\nAuthorization: {authorization}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    client.send(&body[..1 << 20]);
    std::thread::sleep(Duration::from_millis(300));
    let mut fill = std::fs::File::create(mount.join("filler")).unwrap();
    while fill.write_all(&[0x5a; 64 << 10]).is_ok() {}
    drop(fill);
    let _ = client.stream.write_all(&body[1 << 20..]);
    client.try_read_response(false)
}

/// Says that the running test skipped, and why, on the terminal past the
/// harness's capture: `cargo test` counts a skipped test as passed, and
/// this line (`skipped: TEST: REASON`) is how a reader tells them apart.
/// `.ci/run` counts these lines in its summary.
pub fn skipped(reason: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let line = format!("skipped: {test}: {reason}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
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
