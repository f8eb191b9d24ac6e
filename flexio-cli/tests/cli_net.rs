//! `flexio serve` and `flexio get` as a person runs them: the address
//! printed, a fetch over several streams, exit statuses and one-line
//! errors, and nothing left behind by a failed get.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::common;

use common::{flexio, json_report, names, require_root, wait_until, Serving, Tmpfs};

/// `flexio serve DIR EXTRA...` on loopback, and its base URL.
fn serve(dir: &std::path::Path, extra: &[&str]) -> (Serving, String) {
    let (server, url) = common::serve(dir, extra);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (server, url)
}

#[test]
fn serve_then_get_over_four_streams_prints_a_report() {
    let served = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..(5 << 20) + 7)
        .map(|i: usize| (i * 131 % 251) as u8)
        .collect();
    std::fs::write(served.path().join("data.bin"), &data).unwrap();
    let (_server, url) = serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let output = flexio()
        .args(["get", "--json", "--streams", "4", "--piece-size", "1MiB"])
        .arg(format!("{url}/data.bin"))
        .arg(out.path())
        .output()
        .unwrap();
    let report = json_report(&output);
    assert_eq!(report["bytes"], (5 << 20) + 7);
    assert_eq!(report["streams"], 4);
    assert_eq!(report["verified"], true);
    assert!(std::fs::read(out.path().join("data.bin")).unwrap() == data);
}

#[test]
fn get_errors_are_one_line_with_the_right_status_and_leave_nothing() {
    let served = tempfile::tempdir().unwrap();
    let (_server, url) = serve(served.path(), &["--read-only"]);
    let out = tempfile::tempdir().unwrap();
    let missing = flexio()
        .arg("get")
        .arg(format!("{url}/missing"))
        .arg(out.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.starts_with("flexio: ") && stderr.contains("404"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    // https to a plain server: the handshake fails (the system's trust
    // store is used when neither --pin nor --ca is given), in one line.
    let https = flexio()
        .arg("get")
        .arg(format!("{}/x", url.replace("http://", "https://")))
        .arg(out.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(https.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&https.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}

#[test]
fn serve_refuses_a_non_loopback_address_without_public() {
    let served = tempfile::tempdir().unwrap();
    let output = flexio()
        .arg("serve")
        .arg(served.path())
        .args(["--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--public"));
}

/// `flexio put SOURCE TARGET --token-file TOKEN`, to run or add to.
fn put(source: &std::path::Path, target: &str, token: &std::path::Path) -> std::process::Command {
    let mut command = flexio();
    command
        .arg("put")
        .arg(source)
        .arg(target)
        .arg("--token-file")
        .arg(token);
    command
}

/// A `flexio serve` of a new directory taking uploads with a token file:
/// the server, its URL, the served and the work directories, the token.
fn serve_for_uploads() -> (
    Serving,
    String,
    tempfile::TempDir,
    tempfile::TempDir,
    std::path::PathBuf,
) {
    let served = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let token = work.path().join("token");
    std::fs::write(&token, "cli-token-0123456789abcdef\n").unwrap();
    let (server, url) = serve(served.path(), &["--token-file", token.to_str().unwrap()]);
    (server, url, served, work, token)
}

#[test]
fn put_with_a_token_file_then_get_it_back() {
    let (_server, url, served, work, token) = serve_for_uploads();
    let source = work.path().join("up.bin");
    let data: Vec<u8> = (0..(2 << 20) + 3)
        .map(|i: usize| (i * 7 % 253) as u8)
        .collect();
    std::fs::write(&source, &data).unwrap();
    let output = put(&source, &format!("{url}/up.bin"), &token)
        .arg("-v")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("created"));
    assert!(std::fs::read(served.path().join("up.bin")).unwrap() == data);
    std::fs::write(&token, "wrong-token-0123456789abcdef\n").unwrap();
    let refused = put(&source, &format!("{url}/other.bin"), &token)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("401"));
    assert!(!served.path().join("other.bin").exists());
}

#[test]
fn get_of_a_directory_url_fetches_the_tree() {
    let served = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(served.path().join("photos/2024")).unwrap();
    std::fs::write(served.path().join("photos/2024/a.jpg"), b"jpeg bytes").unwrap();
    std::fs::write(served.path().join("photos/index.txt"), b"index").unwrap();
    let (_server, url) = serve(served.path(), &[]);
    let out = tempfile::tempdir().unwrap();
    let output = flexio()
        .current_dir(out.path())
        .args(["get", "-v", "--streams", "2"])
        .arg(format!("{url}/photos/"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("2 files"));
    assert_eq!(
        std::fs::read(out.path().join("photos/2024/a.jpg")).unwrap(),
        b"jpeg bytes"
    );
    assert_eq!(
        std::fs::read(out.path().join("photos/index.txt")).unwrap(),
        b"index"
    );
}

/// A tree get stopped while a new directory's tar stream is arriving
/// leaves nothing at that directory's name: SIGINT removes its staging
/// directory, SIGKILL leaves it hidden; run again, the get sweeps that and
/// fetches the tree whole, leaving nothing else beside it.
#[test]
fn a_tree_get_stopped_mid_directory_leaves_nothing_at_its_name_and_a_rerun_completes() {
    let served = tempfile::tempdir().unwrap();
    for top in ["a", "b"] {
        std::fs::create_dir_all(served.path().join(format!("t/{top}/sub"))).unwrap();
        for i in 0..100 {
            let bytes = vec![i as u8; 4096];
            std::fs::write(served.path().join(format!("t/{top}/f{i}")), &bytes).unwrap();
            std::fs::write(served.path().join(format!("t/{top}/sub/g{i}")), &bytes).unwrap();
        }
    }
    // 800 KiB per directory at 256 KiB/s per connection: seconds each.
    let (_server, url) = serve(served.path(), &["--rate-per-connection", "256K"]);
    let out = tempfile::tempdir().unwrap();
    let destination = out.path().join("copy");
    let get = || {
        let mut command = flexio();
        command
            .args(["get", "--streams", "2"])
            .stdout(Stdio::null())
            .arg(format!("{url}/t/"))
            .arg(&destination);
        command
    };
    let staging_appears = || {
        wait_until("no staging directory appeared", || {
            destination.is_dir() && names(&destination).iter().any(|name| name.starts_with('.'))
        })
    };
    // Ctrl-C: the signal handler removes the staging directories in flight.
    let mut child = get().spawn().unwrap();
    staging_appears();
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(child.wait().unwrap().code(), None, "ended by the signal");
    let left = names(&destination);
    assert!(
        left.iter().all(|name| !name.starts_with('.')),
        "SIGINT left a staging directory: {left:?}"
    );
    // kill -9: they stay, hidden, for the next get to sweep.
    let mut child = get().spawn().unwrap();
    // Mid-directory: a file has landed in a staging directory.
    wait_until("no file landed in a staging directory", || {
        names(&destination)
            .iter()
            .filter(|name| name.starts_with('.'))
            .any(|name| {
                std::fs::read_dir(destination.join(name)).is_ok_and(|mut d| d.next().is_some())
            })
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let left = names(&destination);
    assert!(
        left.iter().all(|name| name.starts_with('.')),
        "only hidden staging directories after the kill: {left:?}"
    );
    let output = get().output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(names(&destination), ["a", "b"]);
    for top in ["a", "b"] {
        for i in 0..100 {
            for name in [format!("{top}/f{i}"), format!("{top}/sub/g{i}")] {
                assert_eq!(
                    std::fs::read(destination.join(&name)).unwrap(),
                    vec![i as u8; 4096],
                    "{name}"
                );
            }
        }
    }
}

/// A ranged server of `data` (strong ETag) whose bodies at or past
/// `stall_from` hang halfway while `stalling` is set.
fn stalling_server(
    data: Vec<u8>,
    stall_from: usize,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/file", listener.local_addr().unwrap());
    let stalling = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = stalling.clone();
    let data = std::sync::Arc::new(data);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(100) {
            let Ok(mut stream) = stream else { return };
            let (flag, data) = (flag.clone(), data.clone());
            std::thread::spawn(move || loop {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let (first, last) = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Range: bytes="))
                    .and_then(|r| r.split_once('-'))
                    .map(|(a, b)| {
                        (
                            a.parse::<usize>().unwrap(),
                            b.parse::<usize>().unwrap().min(data.len() - 1),
                        )
                    })
                    .unwrap();
                let body = &data[first..=last];
                let reply = format!(
                    "HTTP/1.1 206 Partial Content\r\nETag: \"one\"\r\nContent-Range: bytes {first}-{last}/{}\r\nContent-Length: {}\r\n\r\n",
                    data.len(),
                    body.len()
                );
                if stream.write_all(reply.as_bytes()).is_err() {
                    return;
                }
                if flag.load(Ordering::SeqCst) && first >= stall_from {
                    let _ = stream.write_all(&body[..body.len() / 2]);
                    std::thread::sleep(std::time::Duration::from_secs(30));
                    return;
                }
                if stream.write_all(body).is_err() {
                    return;
                }
            });
        }
    });
    (url, stalling)
}

#[test]
fn get_resume_after_kill_9_fetches_only_what_is_missing() {
    let data: Vec<u8> = (0..(4 << 20) + 9)
        .map(|i: usize| (i * 13 % 241) as u8)
        .collect();
    let (url, stalling) = stalling_server(data.clone(), 3 << 20);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("file");
    let mut child = flexio()
        .args(["get", "--resume", "--streams", "1", "--piece-size", "1MiB"])
        .arg(&url)
        .arg(&dest)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until three pieces are in the journal, then kill -9.
    let journal = out.path().join(".file.flexio-journal");
    wait_until("the journal never grew", || {
        std::fs::read_to_string(&journal).map_or(0, |j| j.lines().count()) >= 4
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!dest.exists());
    stalling.store(false, std::sync::atomic::Ordering::SeqCst);
    let output = flexio()
        .args(["get", "--resume", "--json", "--piece-size", "1MiB"])
        .arg(&url)
        .arg(&dest)
        .output()
        .unwrap();
    let report = json_report(&output);
    assert_eq!(report["resumed_bytes"], 2 << 20);
    assert!(std::fs::read(&dest).unwrap() == data);
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
}

/// A veth link's namespaces are named after this process: one at a time.
static ONE_LINK: std::sync::Mutex<()> = std::sync::Mutex::new(());

const VETH_TOKEN: &str = "veth-token-0123456789abcdef";

/// `flexio serve --public --token-file` (and `extra`) on the server side
/// of a fresh veth pair, and a 1 MiB file to upload from the client side.
/// Fields drop in order: the server before its link.
struct Across {
    _server: Serving,
    url: String,
    line: String,
    source: std::path::PathBuf,
    data: Vec<u8>,
    token: std::path::PathBuf,
    served: tempfile::TempDir,
    _work: tempfile::TempDir,
    link: flexio_bench::host_bench::Link,
}

fn serve_across(extra: &[&str], scheme: &str) -> Across {
    let link = flexio_bench::host_bench::Link::create(true);
    assert!(link.is_veth(), "{}", link.description);
    let served = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let token = work.path().join("token");
    std::fs::write(&token, format!("{VETH_TOKEN}\n")).unwrap();
    let mut child = link
        .server_command(env!("CARGO_BIN_EXE_flexio"))
        .arg("serve")
        .arg(served.path())
        .arg("--listen")
        .arg(link.authority(0))
        .args(["--public", "--token-file"])
        .arg(&token)
        .args(extra)
        .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let server = Serving(child);
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with(&format!("{scheme}://10.77.0.1:")))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .trim_end_matches('/')
        .to_string();
    let source = work.path().join("up.bin");
    let data: Vec<u8> = (0..(1 << 20) + 5)
        .map(|i: usize| (i * 13 % 251) as u8)
        .collect();
    std::fs::write(&source, &data).unwrap();
    Across {
        _server: server,
        url,
        line,
        source,
        data,
        token,
        served,
        _work: work,
        link,
    }
}

impl Across {
    /// PUTs the file as `name` with curl (and `extra`) and the token as
    /// a bearer token: the body curl printed, then the status.
    fn put_bearer(&self, extra: &[&str], name: &str) -> String {
        let bearer = self
            .link
            .client_command("curl")
            .args(["-sS", "-X", "PUT", "--data-binary"])
            .arg(format!("@{}", self.source.display()))
            .args(["-H", &format!("Authorization: Bearer {VETH_TOKEN}")])
            .args(["-w", "\n%{http_code}"])
            .args(extra)
            .arg(format!("{}/{name}", self.url))
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&bearer.stdout),
            String::from_utf8_lossy(&bearer.stderr)
        )
    }
}

/// Across a plain link that is not loopback (a veth pair between two
/// network namespaces): `flexio put` signs its request and the upload
/// lands; the same token sent as a bearer token (curl) is refused with
/// the reason, and nothing is written.
#[test]
fn put_over_a_plain_link_is_signed_and_a_bearer_token_refused() {
    if !common::require_root("network namespaces and a veth pair") {
        return;
    }
    let _one_link = ONE_LINK.lock().unwrap_or_else(|p| p.into_inner());
    let across = serve_across(&[], "http");
    assert!(
        across.line.contains("uploads signed with the token"),
        "{}",
        across.line
    );
    let output = across
        .link
        .client_command(env!("CARGO_BIN_EXE_flexio"))
        .arg("put")
        .arg(&across.source)
        .arg(format!("{}/signed.bin", across.url))
        .arg("--token-file")
        .arg(&across.token)
        // In pieces over two streams: each piece's range is signed too.
        .args(["--piece-size", "256K", "--streams", "2"])
        .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(std::fs::read(across.served.path().join("signed.bin")).unwrap() == across.data);

    let answer = across.put_bearer(&[], "bearer.bin");
    assert!(answer.trim_end().ends_with("401"), "{answer}");
    assert!(answer.contains("never over a plain link"), "{answer}");
    assert!(!across.served.path().join("bearer.bin").exists());
}

/// The same across a veth pair over TLS (`--tls-self-signed`): the
/// bearer token is taken from a peer beyond loopback, because the link
/// is TLS.
#[test]
fn a_bearer_token_over_tls_is_taken_from_a_peer_beyond_loopback() {
    if !common::require_root("network namespaces and a veth pair") {
        return;
    }
    let _one_link = ONE_LINK.lock().unwrap_or_else(|p| p.into_inner());
    let across = serve_across(&["--tls-self-signed"], "https");
    let answer = across.put_bearer(&["-k"], "bearer.bin");
    assert!(answer.trim_end().ends_with("201"), "{answer}");
    assert!(std::fs::read(across.served.path().join("bearer.bin")).unwrap() == across.data);
}

/// Bytes a ranged upload's journal in `dir` says have arrived (0 when
/// there is none yet).
fn journaled_bytes(dir: &std::path::Path) -> u64 {
    let Some(journal) = std::fs::read_dir(dir).unwrap().flatten().find(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        name.starts_with(".flexio-part-") && name.ends_with(".ranges")
    }) else {
        return 0;
    };
    let text = std::fs::read_to_string(journal.path()).unwrap_or_default();
    text.lines()
        .skip(2)
        .filter_map(|line| {
            let (start, end) = line.split_once(' ')?;
            Some(end.parse::<u64>().ok()? - start.parse::<u64>().ok()?)
        })
        .sum()
}

/// `flexio put` killed with SIGKILL in the middle of a large upload, then
/// run again: the second run sends only the pieces the server lacks (at
/// most those in flight at the kill come again), and the file is whole.
#[test]
fn put_resumes_after_kill_9_sending_only_what_is_missing() {
    let (_server, url, served, work, token) = serve_for_uploads();
    let source = work.path().join("big.bin");
    let total = 16u64 << 20;
    let data: Vec<u8> = (0..total as usize).map(|i| (i * 31 % 253) as u8).collect();
    std::fs::write(&source, &data).unwrap();
    let put = |extra: &[&str]| {
        let mut command = flexio();
        command
            .arg("put")
            .arg(&source)
            .arg(format!("{url}/big.bin"))
            .arg("--token-file")
            .arg(&token)
            .args(["--piece-size", "1M"])
            .args(extra);
        command
    };
    // About four seconds at 4 MiB/s: killed after two pieces at least.
    let mut child = put(&["--rate", "4M"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("no piece arrived", || {
        journaled_bytes(served.path()) >= 2 << 20
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let before = journaled_bytes(served.path());
    assert!(before < total, "the upload finished before the kill");
    assert!(!served.path().join("big.bin").exists());

    let report = json_report(&put(&["--json"]).output().unwrap());
    assert_eq!(report["status"], 201);
    let resumed = report["resumed_bytes"].as_u64().unwrap();
    let sent = report["sent_bytes"].as_u64().unwrap();
    assert!(resumed >= before, "{report}");
    assert_eq!(resumed + sent, total, "{report}");
    assert!(std::fs::read(served.path().join("big.bin")).unwrap() == data);
    assert_eq!(common::names(served.path()), vec!["big.bin".to_string()]);
}

/// `flexio put DIR URL` uploads a tree into the URL's directory and says
/// what it made and skipped; a failed entry makes the exit status 1.
#[test]
fn put_of_a_directory_uploads_the_tree() {
    let (_server, url, served, work, token) = serve_for_uploads();
    let tree = work.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a"), b"alpha").unwrap();
    std::fs::write(tree.join("sub/b"), vec![7u8; 100_000]).unwrap();
    std::os::unix::fs::symlink("a", tree.join("link")).unwrap();
    let output = put(&tree, &format!("{url}/copy"), &token)
        .args(["--streams", "2", "--json"])
        .output()
        .unwrap();
    let report = json_report(&output);
    assert_eq!(report["files"], 2);
    assert_eq!(report["directories_made"], 2);
    assert_eq!(report["skipped"].as_array().unwrap().len(), 1);
    assert_eq!(
        std::fs::read(served.path().join("copy/a")).unwrap(),
        b"alpha"
    );
    assert_eq!(
        std::fs::read(served.path().join("copy/sub/b")).unwrap(),
        vec![7u8; 100_000]
    );

    // A file where the tree wants a directory: that entry fails, the rest
    // lands, exit status 1.
    std::fs::write(served.path().join("blocked"), b"a file").unwrap();
    std::fs::create_dir_all(tree.join("blocked")).unwrap();
    std::fs::write(tree.join("blocked/inside"), b"x").unwrap();
    std::fs::create_dir(served.path().join("copy2")).unwrap();
    std::fs::write(served.path().join("copy2/blocked"), b"a file").unwrap();
    let output = put(&tree, &format!("{url}/copy2/"), &token)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("blocked/inside"), "{stderr}");
    assert_eq!(
        std::fs::read(served.path().join("copy2/a")).unwrap(),
        b"alpha"
    );
}

/// Issue 24: `get` exited 2 (a usage error) when the server announced more
/// bytes than the destination has free: that is the disk's state at run
/// time, exit 1, and nothing is written.
#[test]
fn get_of_more_than_the_free_space_exits_1_and_writes_nothing() {
    if !require_root("mount a 1 MiB tmpfs as the destination") {
        return;
    }
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("big"), vec![7u8; 3 << 20]).unwrap();
    let (_server, url) = serve(served.path(), &[]);
    let mount = Tmpfs::mount("1m");
    let output = flexio()
        .args(["get", &format!("{url}/big")])
        .arg(mount.path())
        .output()
        .unwrap();
    let message = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(message.contains("free there"), "{message}");
    assert_eq!(names(mount.path()), Vec::<String>::new());
}

#[test]
fn quiet_put_to_a_directory_url_keeps_the_name_and_quiet_get_says_nothing() {
    let (_server, url, served, work, token) = serve_for_uploads();
    let source = work.path().join("notes.txt");
    std::fs::write(&source, b"as curl -T does").unwrap();
    let output = put(&source, &format!("{url}/"), &token)
        .arg("-q")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", common::stderr(&output));
    assert_eq!((output.stdout.len(), output.stderr.len()), (0, 0));
    assert_eq!(
        std::fs::read(served.path().join("notes.txt")).unwrap(),
        b"as curl -T does"
    );
    let out = tempfile::tempdir().unwrap();
    let got = flexio()
        .args(["get", "-q"])
        .arg(format!("{url}/notes.txt"))
        .arg(out.path())
        .output()
        .unwrap();
    assert!(got.status.success(), "{}", common::stderr(&got));
    assert_eq!((got.stdout.len(), got.stderr.len()), (0, 0));
    assert_eq!(
        std::fs::read(out.path().join("notes.txt")).unwrap(),
        b"as curl -T does"
    );
}

#[test]
fn listen_with_a_port_alone_is_loopback() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let served = tempfile::tempdir().unwrap();
    let (_server, url) = serve(served.path(), &["--listen", &port.to_string()]);
    assert_eq!(url, format!("http://127.0.0.1:{port}"));
}

/// Sends `signal` (`TERM`, `INT`) to `child`.
fn signal(child: &std::process::Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits at most `limit` for `child` to exit.
fn exit_within(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running after {limit:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `GET target` on a raw connection, its head read: the stream and the
/// body bytes that came with the head.
fn start_get(url: &str, target: &str) -> (std::net::TcpStream, Vec<u8>) {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .write_all(format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
        .unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 65536];
    loop {
        let n = stream.read(&mut buffer).unwrap();
        assert!(n > 0, "closed before the head");
        seen.extend_from_slice(&buffer[..n]);
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            assert!(seen.starts_with(b"HTTP/1.1 200"));
            return (stream, seen[end + 4..].to_vec());
        }
    }
}

#[test]
fn serve_on_sigterm_finishes_the_download_in_flight_and_exits_0() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let size = 24usize << 20;
    std::fs::File::create(dir.path().join("big"))
        .unwrap()
        .set_len(size as u64)
        .unwrap();
    let (mut server, url) = serve(dir.path(), &["--grace", "20s"]);
    let (mut stream, mut got) = start_get(&url, "/big");
    signal(&server.0, "TERM");
    let mut length = got.len();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = stream.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        got.clear();
        length += n;
    }
    assert_eq!(length, size, "the download was cut");
    drop(stream);
    let status = exit_within(&mut server.0, std::time::Duration::from_secs(10));
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn serve_on_a_second_signal_exits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::File::create(dir.path().join("big"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let (mut server, url) = serve(dir.path(), &["--grace", "60s"]);
    // Never read: the answer stays in flight for the whole grace.
    let (_stream, _) = start_get(&url, "/big");
    signal(&server.0, "INT");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        server.0.try_wait().unwrap().is_none(),
        "the first signal ended it"
    );
    let started = std::time::Instant::now();
    signal(&server.0, "INT");
    let status = exit_within(&mut server.0, std::time::Duration::from_secs(5));
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(status.code(), Some(130), "{status:?}");
}
