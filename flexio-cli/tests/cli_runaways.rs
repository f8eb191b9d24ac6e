//! Copies that used to run without end or end wrongly, each bounded in
//! time: `-L` through a symlink cycle, a thousand-fold `--jobs`, a
//! self-copy through `DIR/`, send-zc with a one-byte chunk or a receiver
//! that never reads.

use crate::common;

use common::{flexio, stderr, wait_at_most};

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Runs `flexio ARGS` in `dir`, killed after `limit` (a runaway fails the
/// test instead of hanging it).
fn run_within(dir: &Path, args: &[&str], limit: Duration) -> std::process::Output {
    let child = flexio()
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_at_most(child, limit)
        .unwrap_or_else(|| panic!("flexio {args:?} still running after {limit:?}"))
}

#[test]
fn copy_dereferencing_a_symlink_cycle_stops_there_as_cp_does_and_copies_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    std::fs::create_dir_all(source.join("sub")).unwrap();
    std::fs::write(source.join("f"), b"top").unwrap();
    std::fs::write(source.join("sub/g"), b"low").unwrap();
    // Two ways back up: the walk branches at every level without a check.
    std::os::unix::fs::symlink("..", source.join("sub/up")).unwrap();
    std::os::unix::fs::symlink(".", source.join("self")).unwrap();
    let output = run_within(
        dir.path(),
        &["copy", "-r", "-L", "src", "dst"],
        Duration::from_secs(30),
    );
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    for cycle in ["src/sub/up", "src/self"] {
        assert!(
            said.contains(&format!("{cycle}: cannot copy cyclic symbolic link")),
            "{cycle}: {said}"
        );
    }
    let copy = dir.path().join("dst");
    assert_eq!(std::fs::read(copy.join("f")).unwrap(), b"top");
    assert_eq!(std::fs::read(copy.join("sub/g")).unwrap(), b"low");
    assert!(!copy.join("sub/up").exists() && !copy.join("self").exists());
}

#[test]
fn copy_of_a_file_onto_itself_through_its_directory_is_refused_as_cp_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("dir")).unwrap();
    std::fs::write(dir.path().join("dir/f"), b"kept").unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    std::fs::write(dir.path().join("d/inside"), b"inside").unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["copy", "dir/f", "dir/"],
            "'dir/f' and 'dir/f' are the same file",
        ),
        (
            &["copy", "dir/f", "dir"],
            "'dir/f' and 'dir/f' are the same file",
        ),
        (&["copy", "-r", "d", "."], "'d' and './d' are the same file"),
    ];
    for (args, words) in cases {
        let output = run_within(dir.path(), args, Duration::from_secs(30));
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {said}");
        assert!(said.contains(words), "{args:?}: {said}");
    }
    assert_eq!(std::fs::read(dir.path().join("dir/f")).unwrap(), b"kept");
    assert_eq!(
        common::names(&dir.path().join("dir")),
        ["f"],
        "nothing left beside it"
    );
    assert_eq!(common::names(&dir.path().join("d")), ["inside"]);
}

#[test]
fn copy_jobs_past_the_bound_is_a_usage_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/f"), b"f").unwrap();
    for jobs in ["0", "257", "100000"] {
        let output = run_within(
            dir.path(),
            &["copy", "-r", "--jobs", jobs, "src", "dst"],
            Duration::from_secs(30),
        );
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "--jobs {jobs}: {said}");
        assert!(said.contains("1..=256"), "--jobs {jobs}: {said}");
    }
    assert_eq!(common::names(dir.path()), ["src"]);
}

/// A process that may map too little for 256 thread stacks: the copy
/// fails with the spawn's error before making anything, instead of
/// panicking.
#[test]
fn a_worker_thread_the_system_will_not_make_is_an_error_and_nothing_is_made() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/f"), b"f").unwrap();
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 400000 && exec "$0" copy -r --jobs 256 src dst"#)
        .arg(env!("CARGO_BIN_EXE_flexio"))
        .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = wait_at_most(child, Duration::from_secs(60)).expect("a bounded copy");
    let said = stderr(&output);
    if output.status.success() {
        // Stacks are reserved lazily on some systems: 256 fit.
        common::skipped("256 worker threads fit in 400 MB of address space here");
        return;
    }
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("spawn tree worker"), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    assert_eq!(common::names(dir.path()), ["src"], "no copy, no staging");
}
