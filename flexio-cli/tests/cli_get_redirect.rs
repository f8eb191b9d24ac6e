//! `get URL/dir` (no slash) follows the server's 301 to `URL/dir/` and
//! fetches the tree; redirects are followed on the same origin only, and
//! a bounded number of times.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common;

use common::{flexio, stderr};

#[test]
fn get_of_a_directory_without_its_slash_follows_the_301_and_fetches_the_tree() {
    let served = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(served.path().join("photos/2024")).unwrap();
    std::fs::write(served.path().join("photos/2024/a.jpg"), b"jpeg bytes").unwrap();
    std::fs::write(served.path().join("photos/index.txt"), b"index").unwrap();
    let (_server, url) = common::serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let output = flexio()
        .current_dir(out.path())
        .args(["get", "-v"])
        .arg(format!("{url}/photos"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("2 files fetched"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read(out.path().join("photos/2024/a.jpg")).unwrap(),
        b"jpeg bytes"
    );
    assert_eq!(
        std::fs::read(out.path().join("photos/index.txt")).unwrap(),
        b"index"
    );
}

/// A server on loopback answering every request with a 301 to
/// `location(n)` (n: the requests so far); the count of requests.
fn redirecting(location: impl Fn(usize) -> String + Send + 'static) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&count);
    std::thread::spawn(move || {
        for socket in listener.incoming().take(50) {
            let Ok(mut socket) = socket else { return };
            let mut reader = BufReader::new(socket.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let _ = write!(
                socket,
                "HTTP/1.1 301 Moved Permanently\r\nLocation: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                location(n)
            );
        }
    });
    (url, count)
}

#[test]
fn redirects_are_bounded_and_stay_on_their_origin() {
    let out = tempfile::tempdir().unwrap();
    let (url, count) = redirecting(|n| format!("/loop{n}"));
    let output = flexio()
        .current_dir(out.path())
        .args(["get", "--timeout", "5s"])
        .arg(format!("{url}/start"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("301"), "{}", stderr(&output));
    let requests = count.load(Ordering::SeqCst);
    assert!((2..=12).contains(&requests), "{requests} requests");

    // Another origin (another port) is named, not followed.
    let (elsewhere, followed) = redirecting(|_| "/x".to_string());
    let (url, _) = redirecting(move |_| format!("{elsewhere}/file"));
    let output = flexio()
        .current_dir(out.path())
        .args(["get", "--timeout", "5s"])
        .arg(format!("{url}/file"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("301"), "{}", stderr(&output));
    assert_eq!(
        followed.load(Ordering::SeqCst),
        0,
        "another origin was followed"
    );
}
