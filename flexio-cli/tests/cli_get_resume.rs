//! `get` resumes by default: Ctrl-C keeps what arrived for the same get
//! run again, a file already whole is not fetched again, and `--no-resume`
//! opts out.

use std::time::Duration;

use crate::common;

use common::{flexio, json_report, names, wait_until};

const PIECE: u64 = 256 << 10;

fn data(length: usize) -> Vec<u8> {
    (0..length).map(|i| (i * 29 % 239) as u8).collect()
}

/// Whole pieces the journal beside `dest` lists now.
fn journaled(dir: &std::path::Path) -> u64 {
    std::fs::read_to_string(dir.join(".f.bin.flexio-journal")).map_or(0, |journal| {
        journal.lines().count().saturating_sub(1) as u64
    })
}

#[test]
fn ctrl_c_then_the_same_get_fetches_only_the_rest_and_a_whole_file_is_not_fetched_again() {
    let served = tempfile::tempdir().unwrap();
    let bytes = data(4 << 20);
    std::fs::write(served.path().join("f.bin"), &bytes).unwrap();
    // 4 MiB at 1 MiB/s: about 4 s, stopped after 1.5 MiB or so.
    let (_server, url) = common::serve(served.path(), &["--rate-per-client", "1M"]);
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("f.bin");
    let get = || {
        let mut command = flexio();
        command
            .args(["get", "--json", "--streams", "1", "--piece-size", "256KiB"])
            .arg(format!("{url}/f.bin"))
            .arg(&dest);
        command
    };
    let child = get()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the journal never reached 6 pieces", || {
        journaled(out.path()) >= 6
    });
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let stopped = common::wait_at_most(child, Duration::from_secs(10)).expect("SIGINT ended it");
    assert!(!stopped.status.success());
    assert!(!dest.exists(), "a partial file took the name");
    let kept = journaled(out.path()) * PIECE;
    assert!(
        kept >= 6 * PIECE && kept < bytes.len() as u64,
        "kept {kept}"
    );

    let report = json_report(&get().output().unwrap());
    assert!(
        std::fs::read(&dest).unwrap() == bytes,
        "the resumed file differs"
    );
    let total = bytes.len() as u64;
    let fetched = total - report["resumed_bytes"].as_u64().unwrap();
    // The remainder, and at most the first piece again (it settles the
    // plan: length, ranges, validator).
    assert!(
        fetched >= total - kept && fetched <= total - kept + PIECE,
        "fetched {fetched} of {total} with {kept} kept: {report}"
    );
    assert_eq!(names(out.path()), ["f.bin"], "the journal stayed");

    // Whole already: not fetched again.
    let again = json_report(&get().output().unwrap());
    assert_eq!(again["requests"], 0, "{again}");
    assert_eq!(again["resumed_bytes"], total, "{again}");
    assert!(std::fs::read(&dest).unwrap() == bytes);

    // --no-resume fetches it all; --resume is still accepted.
    let all = json_report(&get().arg("--no-resume").output().unwrap());
    assert_eq!(all["resumed_bytes"], 0, "{all}");
    assert!(all["requests"].as_u64().unwrap() >= 1, "{all}");
    let accepted = get().arg("--resume").output().unwrap();
    assert!(accepted.status.success(), "{}", common::stderr(&accepted));
}

#[test]
fn ctrl_c_on_a_get_with_no_resume_leaves_nothing() {
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("f.bin"), data(4 << 20)).unwrap();
    let (server, url) = common::serve(served.path(), &["--rate-per-client", "1M"]);
    let out = tempfile::tempdir().unwrap();
    let child = flexio()
        .args(["get", "--no-resume", "--streams", "1"])
        .arg(format!("{url}/f.bin"))
        .arg(out.path().join("f.bin"))
        .spawn()
        .unwrap();
    // Midway through 4 MiB at 1 MiB/s: once the server has sent a MiB.
    let pid = server.0.id();
    assert!(
        flexio_testkit::wait_until(
            || flexio_testkit::bytes_written_by(pid) >= 1 << 20,
            Duration::from_secs(60)
        ),
        "the server never sent a MiB"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let stopped = common::wait_at_most(child, Duration::from_secs(10)).expect("SIGINT ended it");
    assert!(!stopped.status.success(), "it finished before SIGINT");
    assert_eq!(names(out.path()), Vec::<String>::new());
}
