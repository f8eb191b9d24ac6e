//! `flexio get URL --mirror URL2 ...`: one file from several servers at
//! once, each piece checked against the first server's manifest; a server
//! that lies (serves other bytes) or fails is dropped with a message and
//! the others finish with the right file.

use crate::common;

use common::{flexio, json_report, names, serve, stderr};

fn data(seed: u8, length: usize) -> Vec<u8> {
    (0..length)
        .map(|i| ((i as u64).wrapping_mul(2_654_435_761) >> 16) as u8 ^ seed)
        .collect()
}

#[test]
fn a_lying_mirror_and_a_dead_one_are_dropped_and_the_others_finish_the_file() {
    let length = (24 << 20) + 1234;
    let good = data(0, length);
    let (honest_a, honest_b, liar) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    std::fs::write(honest_a.path().join("f.bin"), &good).unwrap();
    std::fs::write(honest_b.path().join("f.bin"), &good).unwrap();
    // Same name and size, other bytes in every chunk.
    std::fs::write(liar.path().join("f.bin"), data(0x5a, length)).unwrap();
    // Paced, so that every server's connections take pieces before the
    // queue runs dry.
    let pace = ["--rate-per-connection", "16M"];
    let (_a, url_a) = serve(honest_a.path(), &pace);
    let (_b, url_b) = serve(honest_b.path(), &pace);
    let (_l, url_l) = serve(liar.path(), &pace);
    // Nothing listens on port 1 of loopback.
    let dead = "http://127.0.0.1:1/f.bin";
    let out = tempfile::tempdir().unwrap();
    let output = flexio()
        .args(["get", "--json", "--streams", "2", "--piece-size", "1MiB"])
        .arg(format!("{url_a}/f.bin"))
        .args(["--mirror", &format!("{url_l}/f.bin")])
        .args(["--mirror", &format!("{url_b}/f.bin")])
        .args(["--mirror", dead])
        .arg(out.path().join("f.bin"))
        .output()
        .unwrap();
    let report = json_report(&output);
    assert!(std::fs::read(out.path().join("f.bin")).unwrap() == good);
    assert_eq!(names(out.path()), ["f.bin"]);
    let servers = report["servers"].as_array().unwrap();
    let dropped = |i: usize| {
        servers[i]["dropped"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(dropped(1).contains("BLAKE3"), "the liar: {:?}", servers[1]);
    assert_eq!(servers[1]["bytes"], 0, "nothing of the liar's is kept");
    assert!(!dropped(3).is_empty(), "the dead one: {:?}", servers[3]);
    for honest in [0, 2] {
        assert!(
            servers[honest]["dropped"].is_null(),
            "{:?}",
            servers[honest]
        );
        assert!(servers[honest]["bytes"].as_u64().unwrap() > 0);
    }
    let kept: u64 = servers.iter().map(|s| s["bytes"].as_u64().unwrap()).sum();
    assert_eq!(kept, length as u64);
    let err = stderr(&output);
    assert!(err.contains("dropping") && err.contains(&url_l), "{err}");
}

#[test]
fn a_mirrored_get_stopped_midway_resumes_with_the_checked_pieces_it_kept() {
    let length = (12 << 20) + 77;
    let good = data(3, length);
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(a.path().join("f.bin"), &good).unwrap();
    std::fs::write(b.path().join("f.bin"), &good).unwrap();
    let pace = ["--rate-per-connection", "2M"];
    let (_a, url_a) = serve(a.path(), &pace);
    let (_b, url_b) = serve(b.path(), &pace);
    let out = tempfile::tempdir().unwrap();
    let get = || {
        let mut command = flexio();
        command
            .args([
                "get",
                "--json",
                "--resume",
                "--streams",
                "1",
                "--piece-size",
                "1MiB",
            ])
            .arg(format!("{url_a}/f.bin"))
            .args(["--mirror", &format!("{url_b}/f.bin")])
            .arg(out.path().join("f.bin"));
        command
    };
    let mut stopped = get()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Stopped once a checked piece is in the journal, however long that
    // takes on a busy machine.
    let journal = out.path().join(".f.bin.flexio-journal");
    common::wait_until("no piece reached the journal", || {
        std::fs::read_to_string(&journal).map_or(0, |j| j.lines().count()) >= 2
    });
    stopped.kill().unwrap();
    assert!(!stopped.wait().unwrap().success());
    assert!(!out.path().join("f.bin").exists());
    let report = json_report(&get().output().unwrap());
    let resumed = report["resumed_bytes"].as_u64().unwrap();
    assert!(resumed >= 1 << 20, "kept {resumed} bytes of the first run");
    assert!(std::fs::read(out.path().join("f.bin")).unwrap() == good);
    assert_eq!(
        names(out.path()),
        ["f.bin"],
        "partial file and journal removed"
    );
}

#[test]
fn a_tree_from_a_lying_mirror_and_an_honest_one_arrives_right_and_the_liar_is_dropped() {
    let (honest, liar) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (root, seed) in [(honest.path(), 0u8), (liar.path(), 0x33)] {
        std::fs::create_dir_all(root.join("t/sub")).unwrap();
        // The liar's large file differs in every chunk; the small ones
        // are the same on both.
        std::fs::write(root.join("t/sub/big.bin"), data(seed, (8 << 20) + 3)).unwrap();
        for i in 0..5u8 {
            std::fs::write(
                root.join(format!("t/small{i}")),
                data(i, 1000 + usize::from(i)),
            )
            .unwrap();
        }
        std::os::unix::fs::symlink("sub/big.bin", root.join("t/link")).unwrap();
    }
    let pace = ["--rate-per-connection", "16M"];
    let (_h, url_h) = serve(honest.path(), &pace);
    let (_l, url_l) = serve(liar.path(), &pace);
    let out = tempfile::tempdir().unwrap();
    let output = flexio()
        .args(["get", "--json", "--streams", "2", "--piece-size", "1MiB"])
        .arg(format!("{url_h}/t/"))
        .args(["--mirror", &format!("{url_l}/t/")])
        .arg(out.path().join("t"))
        .output()
        .unwrap();
    let report = json_report(&output);
    assert_eq!(
        common::tree_contents(&honest.path().join("t")),
        common::tree_contents(&out.path().join("t"))
    );
    let servers = report["servers"].as_array().unwrap();
    assert!(servers[0]["dropped"].is_null(), "{:?}", servers[0]);
    let why = servers[1]["dropped"].as_str().unwrap_or_default();
    assert!(why.contains("BLAKE3"), "the liar: {:?}", servers[1]);
    assert!(stderr(&output).contains("dropping"), "{}", stderr(&output));
}

/// A mirror on loopback that answers every range request rightly, with
/// `good`'s bytes, but sends them one byte every 2 s: never idle for
/// `--timeout 5s`, never done.
fn trickling_mirror(good: Vec<u8>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let good = std::sync::Arc::new(good);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { return };
            let good = std::sync::Arc::clone(&good);
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let Some((first, last)) = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Range: bytes="))
                    .and_then(|r| r.split_once('-'))
                    .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
                else {
                    return;
                };
                let reply = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{}\r\nContent-Length: {}\r\n\r\n",
                    good.len(),
                    last - first + 1
                );
                if stream.write_all(reply.as_bytes()).is_err() {
                    return;
                }
                // At most 30 bytes (a minute): the thread ends with the test.
                for &byte in good[first..=last].iter().take(30) {
                    if stream.write_all(&[byte]).is_err() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_secs(2));
                }
            });
        }
    });
    format!("http://{address}")
}

/// Issue 39: a mirror that sends a byte every 2 s (never idle for
/// `--timeout 5s`) kept a get with a fast honest server beside it running
/// past 90 s. Once nothing is left to take, a piece that lags far behind
/// what the honest server would take is cut: the trickler is dropped,
/// saying so, and the honest server fetches its piece.
#[test]
fn a_trickling_mirror_is_dropped_and_the_honest_server_finishes_in_seconds() {
    let length = 16 << 20;
    let good = data(7, length);
    let honest = tempfile::tempdir().unwrap();
    std::fs::write(honest.path().join("f.bin"), &good).unwrap();
    // Paced (about a second for the file), and four connections to each
    // server, so that the trickler's connections take pieces before the
    // queue runs dry.
    let (_server, url) = serve(honest.path(), &["--rate-per-client", "16M"]);
    let trickler = trickling_mirror(good.clone());
    let out = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let child = flexio()
        .args(["get", "--json", "--timeout", "5s", "--piece-size", "1MiB"])
        .args(["--streams", "4"])
        .arg(format!("{url}/f.bin"))
        .args(["--mirror", &format!("{trickler}/f.bin")])
        .arg(out.path().join("f.bin"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let output = common::wait_at_most(child, std::time::Duration::from_secs(30))
        .expect("the get was still running after 30 s");
    let took = started.elapsed();
    let report = json_report(&output);
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
    assert!(std::fs::read(out.path().join("f.bin")).unwrap() == good);
    let servers = report["servers"].as_array().unwrap();
    let dropped = servers[1]["dropped"].as_str().unwrap_or_default();
    assert!(dropped.contains("too slow"), "{:?}", servers[1]);
    assert!(servers[0]["dropped"].is_null(), "{:?}", servers[0]);
    assert_eq!(servers[0]["bytes"], length as u64);
    let err = stderr(&output);
    assert!(
        err.contains(&format!("dropping {trickler}/f.bin: too slow")),
        "{err}"
    );
}
