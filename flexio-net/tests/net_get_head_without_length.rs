//! Apache answers the HEAD of an empty file without a Content-Length. A
//! rerun of `get` (one file, resuming; or a tree from its listings) must
//! still know the empty file it already has and not fetch it again: the
//! size is asked again with a GET of the first byte. Against a loopback
//! server that answers as Apache does, and against Apache itself where
//! this machine has it.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{optional_tool, skipped};
use flexio_net::client::{get, get_tree, GetOptions};

const LAST_MODIFIED: &str = "Wed, 25 Nov 2026 10:00:00 GMT";

fn options() -> GetOptions {
    GetOptions {
        streams: 2,
        timeout: Duration::from_secs(10),
        resume: true,
        ..GetOptions::default()
    }
}

/// A keep-alive server shaped as Apache answers for `/t/` holding `empty`
/// (0 bytes) and `a.txt`: HEAD of the empty file has no Content-Length, a
/// ranged GET of it is answered `200` with `Content-Length: 0`. Each
/// request goes into `requests` as `METHOD TARGET` plus ` ranged` when it
/// had a Range.
fn apache_shaped(requests: Arc<Mutex<Vec<String>>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let requests = Arc::clone(&requests);
            std::thread::spawn(move || answer(stream.unwrap(), &requests));
        }
    });
    address
}

fn answer(stream: TcpStream, requests: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut ranged = false;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                break;
            }
            ranged |= header.to_ascii_lowercase().starts_with("range:");
        }
        let request: String = line.split(' ').take(2).collect::<Vec<_>>().join(" ");
        let logged = if ranged {
            format!("{request} ranged")
        } else {
            request.clone()
        };
        requests.lock().unwrap().push(logged);
        let head_only = request.starts_with("HEAD");
        let reply = match request.split_once(' ').map(|(_, target)| target) {
            Some("/t/" | "/t/?manifest") => {
                let page = r#"<html><body><a href="?C=N;O=D">Name</a> <a href="/">Parent Directory</a>
<a href="a.txt">a.txt</a> <a href="empty">empty</a></body></html>"#;
                reply_with("text/html", page.as_bytes(), None, head_only)
            }
            // Apache leaves an empty body's length out of its HEAD answer.
            Some("/t/empty") if head_only => reply_with("text/plain", b"", Some(false), true),
            Some("/t/empty") => reply_with("text/plain", b"", Some(true), false),
            Some("/t/a.txt") => reply_with("text/plain", b"hello\n", Some(true), head_only),
            _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
        };
        if stream.write_all(&reply).is_err() {
            return;
        }
    }
}

/// A `200` with `body` (left out with `head_only`); `dated` gives it a
/// Last-Modified and says whether it has a Content-Length.
fn reply_with(kind: &str, body: &[u8], dated: Option<bool>, head_only: bool) -> Vec<u8> {
    let mut reply = format!("HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\n").into_bytes();
    if dated.is_some() {
        reply.extend(format!("Last-Modified: {LAST_MODIFIED}\r\n").as_bytes());
    }
    if dated != Some(false) {
        reply.extend(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    reply.extend(b"\r\n");
    if !head_only {
        reply.extend(body);
    }
    reply
}

/// The requests logged since `from` for `target` sent as a plain GET
/// (no Range): a fetch of the whole file.
fn whole_gets(requests: &Mutex<Vec<String>>, from: usize, target: &str) -> usize {
    let wanted = format!("GET {target}");
    requests.lock().unwrap()[from..]
        .iter()
        .filter(|r| **r == wanted)
        .count()
}

#[test]
fn a_rerun_keeps_an_empty_file_whose_head_has_no_content_length() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let address = apache_shaped(Arc::clone(&requests));
    let work = tempfile::tempdir().unwrap();

    // One file, resuming (as `flexio get` does by default).
    let dest = work.path().join("empty");
    let url = format!("http://{address}/t/empty");
    get(&url, Some(&dest), &options()).unwrap();
    assert_eq!(std::fs::metadata(&dest).unwrap().len(), 0);
    let before = requests.lock().unwrap().len();
    let again = get(&url, Some(&dest), &options()).unwrap();
    assert!(
        again
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("already here"),
        "{again:?}"
    );
    assert_eq!(whole_gets(&requests, before, "/t/empty"), 0, "{requests:?}");

    // A tree from its listing.
    let tree = work.path().join("tree");
    let first = get_tree(&format!("http://{address}/t/"), &tree, &options()).unwrap();
    assert_eq!((first.files, first.unchanged), (2, 0), "{first:?}");
    let before = requests.lock().unwrap().len();
    let rerun = get_tree(&format!("http://{address}/t/"), &tree, &options()).unwrap();
    assert_eq!((rerun.files, rerun.unchanged), (0, 2), "{rerun:?}");
    assert_eq!(whole_gets(&requests, before, "/t/empty"), 0, "{requests:?}");
    assert_eq!(whole_gets(&requests, before, "/t/a.txt"), 0, "{requests:?}");
}

/// Apache, killed when dropped.
struct Apache(Child);

impl Drop for Apache {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const APACHE_MODULES: &str = "/usr/lib/apache2/modules";

/// Apache in the foreground serving `root` with autoindex on a free
/// loopback port, logging each request line, status and Range (`-` for
/// none) to `log`.
fn start_apache(work: &Path, root: &Path, log: &Path) -> (Apache, u16) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let modules = ["mpm_event", "authz_core", "dir", "autoindex", "mime"]
        .map(|m| format!("LoadModule {m}_module {APACHE_MODULES}/mod_{m}.so\n"))
        .concat();
    // As root, Apache serves as another user (it refuses root): one that
    // every system has, reading the world-readable tree below.
    let config = format!(
        "ServerRoot {work}\nServerName localhost\nPidFile {work}/httpd.pid\n\
         Listen 127.0.0.1:{port}\n{modules}User nobody\nGroup nogroup\n\
         TypesConfig /dev/null\nErrorLog {work}/error.log\n\
         LogFormat \"%r %>s %{{Range}}i\" target\nCustomLog {log} target\n\
         DocumentRoot {root}\n<Directory {root}>\n  Options +Indexes\n  Require all granted\n</Directory>\n",
        work = work.display(),
        root = root.display(),
        log = log.display(),
    );
    let path = work.join("httpd.conf");
    std::fs::write(&path, config).unwrap();
    let child = Command::new("apache2")
        .args(["-X", "-f"])
        .arg(&path)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "apache never listened: {}",
            std::fs::read_to_string(work.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (Apache(child), port)
}

#[test]
fn a_rerun_against_apache_fetches_no_empty_file_again() {
    if !optional_tool("apache2") {
        return;
    }
    if !Path::new(APACHE_MODULES).is_dir() {
        return skipped(&format!("apache2's modules are not in {APACHE_MODULES}"));
    }
    let work = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let served = work.path().join("served");
    std::fs::create_dir_all(served.join("sub")).unwrap();
    std::fs::write(served.join("a.txt"), b"hello\n").unwrap();
    std::fs::write(served.join("empty"), b"").unwrap();
    std::fs::write(served.join("sub/also-empty"), b"").unwrap();
    let log = work.path().join("access.log");
    let (_apache, port) = start_apache(work.path(), &served, &log);
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    let url = format!("http://127.0.0.1:{port}/");
    let out = tempfile::tempdir().unwrap();
    let tree = out.path().join("tree");
    let first = get_tree(&url, &tree, &options()).unwrap();
    assert_eq!((first.files, first.unchanged), (3, 0), "{first:?}");
    let before = logged().lines().count();
    let rerun = get_tree(&url, &tree, &options()).unwrap();
    assert_eq!((rerun.files, rerun.unchanged), (0, 3), "{rerun:?}");
    let single = out.path().join("one-empty");
    get(&format!("{url}empty"), Some(&single), &options()).unwrap();
    let again = get(&format!("{url}empty"), Some(&single), &options()).unwrap();
    assert!(
        again
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("already here"),
        "{again:?}"
    );
    // The rerun fetched no file whole: its GETs are probes of a first
    // byte (the empty files'), never a GET without a Range.
    let after: Vec<String> = logged().lines().skip(before).map(str::to_string).collect();
    let whole: Vec<&String> = after
        .iter()
        .filter(|l| {
            let target = l.split(' ').nth(1).unwrap_or_default();
            l.starts_with("GET ")
                && l.ends_with(" -")
                && !target.ends_with('/')
                && !target.contains('?')
        })
        .collect();
    assert!(whole.is_empty(), "{after:#?}");
}
