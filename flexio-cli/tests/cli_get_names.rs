//! `flexio serve` → `flexio get` of a tree whose names hold control
//! characters arrives byte-exact under the real names; a listing's name
//! no file here can take is warned, counted in the summary and named in
//! the JSON report, never dropped unsaid.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use common::{flexio, json_report, serve, stderr, tree_contents};

#[test]
fn a_tree_with_tab_and_newline_names_round_trips_serve_to_get() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    std::fs::create_dir_all(source.join("d\tir")).unwrap();
    std::fs::write(source.join("a\tb"), b"tab\n").unwrap();
    std::fs::write(source.join("d\tir/c\nd"), b"newline\n").unwrap();
    std::fs::write(source.join("plain"), b"plain\n").unwrap();
    let (_serving, url) = serve(&source, &[]);
    let dest = work.path().join("dest");
    let output = flexio()
        .args(["get", "--json"])
        .arg(format!("{url}/"))
        .arg(&dest)
        .output()
        .unwrap();
    let report = json_report(&output);
    assert_eq!(report["files"], 3, "{report}");
    assert_eq!(tree_contents(&dest), tree_contents(&source));
}

/// A server that is not flexio: one listing naming a file, a name with
/// NUL (`%00`) and one with an encoded `/`, each answer closing.
fn listing_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for socket in listener.incoming().take(20) {
            let Ok(mut socket) = socket else { return };
            let mut reader = BufReader::new(socket.try_clone().unwrap());
            let mut request = String::new();
            let _ = reader.read_line(&mut request);
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let (kind, body): (&str, &[u8]) = match request.split(' ').nth(1) {
                Some("/ok") => ("application/octet-stream", b"ok bytes"),
                _ => (
                    "text/html",
                    b"<a href=\"ok\">ok</a> <a href=\"nul%00x\">n</a> <a href=\"s%2Fx\">s</a>",
                ),
            };
            let _ = write!(
                socket,
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(body);
        }
    });
    url
}

#[test]
fn a_listed_name_no_file_can_take_is_warned_and_counted() {
    let url = listing_server();
    let work = tempfile::tempdir().unwrap();
    let dest = work.path().join("dest");
    // `-v`: the summary (on stderr) though stdout is no terminal.
    let output = flexio()
        .args(["get", "-v"])
        .arg(format!("{url}/"))
        .arg(&dest)
        .output()
        .unwrap();
    let warnings = stderr(&output);
    assert!(output.status.success(), "{warnings}");
    assert_eq!(std::fs::read(dest.join("ok")).unwrap(), b"ok bytes");
    assert!(warnings.contains("2 listed but left out"), "{warnings}");
    assert!(
        warnings.contains("nul\\u{0}x: a name no file here can take"),
        "{warnings}"
    );
    assert!(
        warnings.contains("s/x: a name no file here can take"),
        "{warnings}"
    );

    let output = flexio()
        .args(["get", "--json"])
        .arg(format!("{url}/"))
        .arg(work.path().join("again"))
        .output()
        .unwrap();
    let report = json_report(&output);
    let not_fetched = report["listing"]["not_fetched"].as_array().unwrap();
    assert_eq!(not_fetched.len(), 2, "{report}");
}
