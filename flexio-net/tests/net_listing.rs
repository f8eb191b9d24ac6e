//! A tree get from servers that are not flexio: nginx's autoindex (HTML
//! and JSON), `python3 -m http.server`, and an Apache-shaped listing. Each
//! file arrives once and whole, nothing outside the tree is asked for, and
//! a second run fetches only what changed. nginx and python are optional
//! peers: their tests say when this machine lacks them.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{optional_tool, pattern, start_peer, Peer};
use flexio_net::client::{get_tree, GetOptions, ListingFormat, TreeReport};

/// A tree with nested directories, an empty file, a file of several
/// pieces, and names that need escaping in a URL and in HTML.
fn sample_tree(root: &Path) {
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::write(root.join("a.txt"), b"hello\n").unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    std::fs::write(root.join("sub/big.bin"), pattern(3 << 20, 7)).unwrap();
    std::fs::write(root.join("sub/deeper/caf\u{e9} & co.txt"), b"x\n").unwrap();
}

/// Every file beneath `root` by relative path, with its bytes.
fn contents(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_path_buf();
                found.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    found
}

fn options() -> GetOptions {
    GetOptions {
        streams: 3,
        timeout: Duration::from_secs(10),
        ..GetOptions::default()
    }
}

/// nginx serving `root` under `/` (HTML autoindex) and `/json/` (JSON),
/// logging each request's target to `log`.
fn start_nginx(work: &Path, root: &Path, log: &Path) -> (Peer, u16) {
    start_peer(|port| nginx_on(work, root, log, port))
}

/// nginx as [`start_nginx`] has it, on `port`.
fn nginx_on(work: &Path, root: &Path, log: &Path, port: u16) -> Child {
    let temp = work.join("nginx-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let root = root.display();
    let temp = temp.display();
    let config = format!(
        "daemon off; master_process off; pid {work}/nginx.pid; error_log stderr;
events {{}}
http {{
  log_format target '$request';
  access_log {log} target;
  client_body_temp_path {temp}; proxy_temp_path {temp}; fastcgi_temp_path {temp};
  uwsgi_temp_path {temp}; scgi_temp_path {temp};
  server {{
    listen 127.0.0.1:{port};
    location / {{ root {root}; autoindex on; }}
    location /json/ {{ alias {root}/; autoindex on; autoindex_format json; }}
  }}
}}
",
        work = work.display(),
        log = log.display(),
    );
    let path = work.join("nginx.conf");
    std::fs::write(&path, config).unwrap();
    Command::new("nginx")
        .args(["-c", &path.to_string_lossy(), "-p", &work.to_string_lossy()])
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// The request lines nginx logged.
fn logged(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_tree_get_from_nginx_autoindex_html_and_json_fetches_each_file_once_and_again_only_what_changed(
) {
    // .ci/without-peers hides nginx: it is optional even in CI.
    if !optional_tool("nginx") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    sample_tree(&served);
    let log = work.path().join("access.log");
    let (_nginx, port) = start_nginx(work.path(), &served, &log);
    for (path, format) in [
        ("/", ListingFormat::Html),
        ("/json/", ListingFormat::NginxJson),
    ] {
        let dest = work.path().join(format!("out{}", path.len()));
        let url = format!("http://127.0.0.1:{port}{path}");
        let before = logged(&log).len();
        let report = get_tree(&url, &dest, &options()).unwrap();
        assert_eq!(contents(&dest), contents(&served), "{path}");
        assert_listed(&report, format, 4, 0);
        let requests = logged(&log)[before..].to_vec();
        let gets: Vec<&String> = requests.iter().filter(|r| r.starts_with("GET")).collect();
        // The manifest probe, three listings, four files: each once.
        assert_eq!(gets.len(), 8, "{requests:#?}");
        assert!(
            requests
                .iter()
                .all(|r| !r.contains("..") && r.contains(&format!(" {path}"))),
            "{requests:#?}"
        );
        let again = get_tree(&url, &dest, &options()).unwrap();
        assert_listed(&again, format, 0, 4);
        std::fs::write(served.join("a.txt"), b"changed\n").unwrap();
        let changed = get_tree(&url, &dest, &options()).unwrap();
        assert_listed(&changed, format, 1, 3);
        assert_eq!(contents(&dest), contents(&served), "{path}");
        std::fs::write(served.join("a.txt"), b"hello\n").unwrap();
    }
}

/// `report` read listings of `format` and fetched `files`, keeping
/// `unchanged`.
fn assert_listed(report: &TreeReport, format: ListingFormat, files: u64, unchanged: u64) {
    let listing = report.listing.as_ref().expect("a listing report");
    assert_eq!(listing.format, Some(format));
    assert_eq!(listing.pages, 3, "{report:?}");
    assert_eq!(
        (report.files, report.unchanged),
        (files, unchanged),
        "{report:?}"
    );
    assert_eq!(report.directories, 2);
}

#[test]
fn a_tree_get_from_python_http_server_arrives_whole_over_its_closing_connections() {
    if !optional_tool("python3") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    sample_tree(&served);
    let (_python, port) = common::python_http_server(&served);
    let dest = work.path().join("out");
    let url = format!("http://127.0.0.1:{port}/");
    let report = get_tree(&url, &dest, &options()).unwrap();
    assert_eq!(contents(&dest), contents(&served));
    assert_listed(&report, ListingFormat::Html, 4, 0);
    let again = get_tree(&url, &dest, &options()).unwrap();
    assert_listed(&again, ListingFormat::Html, 0, 4);
}

/// `rclone serve http`'s listing sorts in a script that assigns `href`s;
/// the reader once took `chg;` out of it as a child and asked for it. Now
/// each file arrives and nothing is named as not sent.
#[test]
fn a_tree_get_from_rclone_serve_http_asks_for_nothing_out_of_its_script() {
    if !common::require_tool("rclone") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let served = work.path().join("served");
    sample_tree(&served);
    let (_rclone, port) = start_peer(|port| {
        Command::new("rclone")
            .args(["serve", "http", "--config", "/dev/null", "--addr"])
            .arg(format!("127.0.0.1:{port}"))
            .arg(&served)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    });
    let dest = work.path().join("out");
    let report = get_tree(&format!("http://127.0.0.1:{port}/"), &dest, &options()).unwrap();
    assert_eq!(contents(&dest), contents(&served));
    assert_listed(&report, ListingFormat::Html, 4, 0);
    let listing = report.listing.as_ref().unwrap();
    assert!(listing.not_fetched.is_empty(), "{report:?}");
}

/// An Apache-shaped listing, chunked, with sort links, a parent link, a
/// link to another host, a listed file that is gone, hrefs in a script, a
/// style and a comment, a name with a tab and one with NUL: the children
/// only, each once, the tab in its name; the gone file and the NUL name
/// named as not fetched; nothing from the script asked for; no query ever
/// sent.
#[test]
fn an_apache_shaped_listing_gives_its_children_once_and_names_what_was_not_sent() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let address = apache_shaped(Arc::clone(&requests));
    let work = tempfile::tempdir().unwrap();
    let dest = work.path().join("out");
    let report = get_tree(&format!("http://{address}/files/t/"), &dest, &options()).unwrap();
    assert_eq!(std::fs::read(dest.join("data.bin")).unwrap(), b"data bytes");
    assert_eq!(std::fs::read(dest.join("deep/inner")).unwrap(), b"inner");
    assert_eq!(std::fs::read(dest.join("deep/tab\tx")).unwrap(), b"tab");
    let listing = report.listing.as_ref().unwrap();
    let not_fetched = &listing.not_fetched;
    assert_eq!(not_fetched.len(), 2, "{report:?}");
    let nul = format!("{}/deep/nul\\u{{0}}x: ", dest.display());
    assert!(
        not_fetched.iter().any(|why| why.starts_with(&nul)),
        "{report:?}"
    );
    assert!(
        not_fetched.iter().any(|why| why.contains("gone: 404")),
        "{report:?}"
    );
    assert!(!dest.join("gone").exists());
    let mut seen = requests.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        [
            "GET /files/t/",
            "GET /files/t/?manifest",
            "GET /files/t/data.bin",
            "GET /files/t/deep/",
            "GET /files/t/deep/inner",
            "GET /files/t/deep/tab%09x",
            "GET /files/t/gone",
        ]
    );
}

/// A keep-alive server that answers as Apache would, its listings
/// chunked; each request line goes into `requests`.
fn apache_shaped(requests: Arc<Mutex<Vec<String>>>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let requests = Arc::clone(&requests);
            std::thread::spawn(move || answer_as_apache(stream.unwrap(), &requests));
        }
    });
    address
}

fn answer_as_apache(stream: TcpStream, requests: &Mutex<Vec<String>>) {
    let top = r#"<html><body><h1>Index of /files/t</h1><table>
<tr><th><a href="?C=N;O=D">Name</a></th><th><a href="?C=M;O=A">Last modified</a></th></tr>
<tr><td><a href="/files/">Parent Directory</a></td></tr>
<tr><td><a href="data.bin">data.bin</a></td></tr>
<tr><td><a href="/files/t/deep/">deep/</a></td></tr>
<tr><td><a href="gone">gone</a></td></tr>
<tr><td><a href="http://elsewhere.invalid/x">x</a></td></tr>
</table></body></html>"#;
    let deep = r#"<script>var sort = "<a href='scripted'>"; x.href = "assigned";</script>
<style>a[href="styled"] {}</style><!-- <a href="commented">c</a> -->
<a href="?C=S;O=A">Size</a> <a href="/files/t/">Parent Directory</a> <a href="inner">inner</a>
<a href="tab%09x">tab&#9;x</a> <a href="nul%00x">nul</a>"#;
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                break;
            }
        }
        let request: String = line.split(' ').take(2).collect::<Vec<_>>().join(" ");
        requests.lock().unwrap().push(request.clone());
        let reply = match request.as_str() {
            "GET /files/t/" | "GET /files/t/?manifest" => chunked_html(top),
            "GET /files/t/deep/" => chunked_html(deep),
            "GET /files/t/data.bin" => plain(200, b"data bytes"),
            "GET /files/t/deep/inner" => plain(200, b"inner"),
            "GET /files/t/deep/tab%09x" => plain(200, b"tab"),
            _ => plain(404, b"not here"),
        };
        if stream.write_all(&reply).is_err() {
            return;
        }
    }
}

/// An HTML page sent in chunks of 50 bytes.
fn chunked_html(page: &str) -> Vec<u8> {
    let mut reply =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html;charset=UTF-8\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    for chunk in page.as_bytes().chunks(50) {
        reply.extend(format!("{:x};ext=1\r\n", chunk.len()).as_bytes());
        reply.extend(chunk);
        reply.extend(b"\r\n");
    }
    reply.extend(b"0\r\n\r\n");
    reply
}

fn plain(status: u16, body: &[u8]) -> Vec<u8> {
    let mut reply = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    reply.extend(body);
    reply
}
