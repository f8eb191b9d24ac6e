//! Shared by the network tests: a server on loopback in this process, a
//! small raw HTTP client (heads parsed with httparse) to say exactly what
//! goes on the wire, and file helpers.

// Each test crate uses a different part of this module.
#![allow(dead_code, unused_imports)]

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use flexio_net::server::{ServeConfig, Server};
pub use flexio_testkit::http::{find, read_head, RawClient, Response};
pub use flexio_testkit::{optional_tool, require_root, require_tool, skipped};

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

/// A peer server process, killed when dropped.
pub struct Peer(pub std::process::Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A peer `start`ed on a free port, once it listens there itself: a
/// peer that exits (another test's server took the port first, and a
/// request would have gone to that one) is started again on another.
pub fn start_peer(mut start: impl FnMut(u16) -> std::process::Child) -> (Peer, u16) {
    for _ in 0..5 {
        let port = flexio_testkit::free_port();
        let mut peer = Peer(start(port));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !flexio_testkit::listens_on(peer.0.id(), port) {
            if peer.0.try_wait().ok().flatten().is_some() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the peer never listened"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        if flexio_testkit::listens_on(peer.0.id(), port) {
            return (peer, port);
        }
    }
    panic!("the peer lost its port to another five times");
}

/// `python3 -m http.server` serving `dir` on loopback, started as
/// [`start_peer`] starts a peer.
pub fn python_http_server(dir: &Path) -> (Peer, u16) {
    start_peer(|port| {
        std::process::Command::new("python3")
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .arg("--directory")
            .arg(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 starts")
    })
}
