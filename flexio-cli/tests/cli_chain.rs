//! `flexio get URL DEST --serve ADDR`: hosts in a chain, each serving the
//! file onward while it arrives; a host whose upstream dies resumes from
//! the next one up (`--upstream`), and a plain `get` of a file still
//! arriving waits for its bytes. All on loopback, one process a host.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use common::{flexio, json_report, serve, stderr, wait_until};
use flexio_testkit::bytes_written_by;

/// Starts a chain link fetching `from` (then `upstreams`, in order) into
/// `dest`; returns it and the URL it serves the file at.
fn link(from: &str, upstreams: &[&str], dest: &std::path::Path) -> (Child, String) {
    link_with(from, upstreams, dest, &[])
}

/// As [`link`], with `extra` arguments; the URL is the first word of the
/// first line that starts with `http://` or `https://`.
fn link_with(
    from: &str,
    upstreams: &[&str],
    dest: &std::path::Path,
    extra: &[&str],
) -> (Child, String) {
    let mut command = flexio();
    command
        .args(["get", "--json", "--streams", "1", "--piece-size", "1MiB"])
        .args(extra)
        .args(["--serve", "127.0.0.1:0", "--linger", "1s"])
        .arg(from)
        .arg(dest);
    for upstream in upstreams {
        command.args(["--upstream", upstream]);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://") || w.starts_with("https://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    // The rest of stdout (the JSON report) is read at the end.
    child.stdout = Some(stdout.into_inner());
    if extra.contains(&"--serve-tls-self-signed") {
        let pin = line
            .split_whitespace()
            .skip_while(|w| *w != "--pin")
            .nth(1)
            .unwrap_or_else(|| panic!("no fingerprint in {line:?}"))
            .trim_end_matches(')')
            .to_string();
        return (child, format!("{url} {pin}"));
    }
    (child, url)
}

#[test]
fn a_chain_of_four_whose_second_host_dies_midway_finishes_right_on_hosts_three_and_four() {
    let length = (16 << 20) + 4321;
    let data: Vec<u8> = (0..length)
        .map(|i: usize| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let source = tempfile::tempdir().unwrap();
    std::fs::write(source.path().join("image.raw"), &data).unwrap();
    // Host 1: the source, paced so the transfer lasts a few seconds.
    let (_host1, base) = serve(source.path(), &["--rate-per-connection", "4M"]);
    let url1 = format!("{base}/image.raw");
    let dirs: Vec<_> = (0..5).map(|_| tempfile::tempdir().unwrap()).collect();
    let dest = |k: usize| dirs[k].path().join("image.raw");
    let (mut host2, url2) = link(&url1, &[], &dest(2));
    let (host3, url3) = link(&url2, &[&url1], &dest(3));
    let (host4, url4) = link(&url3, &[&url2, &url1], &dest(4));
    // A plain get from the end of the chain, started before anything is
    // there: it waits for the bytes.
    let plain = flexio()
        .args(["get", "--json"])
        .arg(&url4)
        .arg(dest(0))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Host 2 dies midway: once it has sent a MiB on (to host 3).
    let host2_pid = host2.id();
    wait_until("host 2 never sent a MiB", || {
        bytes_written_by(host2_pid) >= 1 << 20
    });
    host2.kill().unwrap();
    assert!(!host2.wait().unwrap().success());
    assert!(!dest(2).exists(), "the killed host left no file");
    let host3 = host3.wait_with_output().unwrap();
    let report3 = json_report(&host3);
    let servers = report3["servers"].as_array().unwrap();
    assert!(
        servers[0]["dropped"].is_string(),
        "host 3 dropped host 2: {servers:?}"
    );
    assert!(
        servers[0]["bytes"].as_u64().unwrap() > 0,
        "host 2 sent some first"
    );
    assert!(
        servers[1]["bytes"].as_u64().unwrap() > 0,
        "host 1 took over"
    );
    let report4 = json_report(&host4.wait_with_output().unwrap());
    assert!(report4["servers"][0]["dropped"].is_null(), "{report4}");
    let plain = plain.wait_with_output().unwrap();
    assert!(plain.status.success(), "{}", stderr(&plain));
    for k in [0, 3, 4] {
        assert!(std::fs::read(dest(k)).unwrap() == data, "host {k}'s copy");
        assert_eq!(common::names(dirs[k].path()), ["image.raw"]);
    }
    assert!(stderr(&host3).contains("dropping"), "{}", stderr(&host3));
}

#[test]
fn a_link_whose_only_upstream_dies_fails_at_once_and_so_does_its_downstream_leaving_nothing() {
    let data = vec![7u8; 12 << 20];
    let source = tempfile::tempdir().unwrap();
    std::fs::write(source.path().join("f.bin"), &data).unwrap();
    let (host1, base) = serve(source.path(), &["--rate-per-connection", "2M"]);
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let (relay, url2) = link(&format!("{base}/f.bin"), &[], &dirs[0].path().join("f.bin"));
    let downstream = flexio()
        .args(["get", "--streams", "1"])
        .arg(&url2)
        .arg(dirs[1].path().join("f.bin"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The upstream dies while bytes flow through the relay downstream.
    let relay_pid = relay.id();
    wait_until("the relay never sent bytes downstream", || {
        bytes_written_by(relay_pid) >= 64 << 10
    });
    let killed_at = std::time::Instant::now();
    drop(host1);
    let relay = relay.wait_with_output().unwrap();
    let downstream = downstream.wait_with_output().unwrap();
    assert!(!relay.status.success() && !downstream.status.success());
    assert!(
        killed_at.elapsed() < std::time::Duration::from_secs(10),
        "the relay and its downstream did not wait out their timeouts"
    );
    assert!(
        stderr(&relay).contains("every server was dropped"),
        "{}",
        stderr(&relay)
    );
    for dir in &dirs {
        assert_eq!(common::names(dir.path()), Vec::<String>::new());
    }
}

#[test]
fn a_link_serves_onward_over_tls_to_a_downstream_that_pins_it() {
    let data: Vec<u8> = (0..(3 << 20) + 77)
        .map(|i: usize| (i % 251) as u8)
        .collect();
    let source = tempfile::tempdir().unwrap();
    std::fs::write(source.path().join("f.bin"), &data).unwrap();
    let (_host1, base) = serve(source.path(), &["--rate-per-connection", "2M"]);
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let (relay, served) = link_with(
        &format!("{base}/f.bin"),
        &[],
        &dirs[0].path().join("f.bin"),
        &["--serve-tls-self-signed"],
    );
    let (url, pin) = served.split_once(' ').unwrap();
    assert!(url.starts_with("https://"), "{url}");
    let downstream = flexio()
        .args(["get", "--pin", pin])
        .arg(url)
        .arg(dirs[1].path().join("f.bin"))
        .output()
        .unwrap();
    assert!(downstream.status.success(), "{}", stderr(&downstream));
    let relay = relay.wait_with_output().unwrap();
    assert!(relay.status.success(), "{}", stderr(&relay));
    for dir in &dirs {
        assert!(std::fs::read(dir.path().join("f.bin")).unwrap() == data);
    }
}
