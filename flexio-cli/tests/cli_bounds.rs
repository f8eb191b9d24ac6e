//! Every duration and count flag has a stated bound (issue 39): a value
//! past it — 10¹⁹ seconds, 100 000 streams — is a usage error naming the
//! flag and the bound, exit status 2, before anything runs; never a panic
//! (101), nor a server whose workers die while the process answers
//! nothing.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{flexio, stderr, wait_at_most};

const HUGE: &str = "10000000000000000000s";

/// Runs flexio with `args`; it must end within 20 s with status 2 and a
/// message naming `flag` and saying `bound`.
fn refused(args: &[&str], flag: &str, bound: &str) {
    let child = flexio()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = wait_at_most(child, Duration::from_secs(20))
        .unwrap_or_else(|| panic!("{args:?} ran on instead of refusing"));
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {said}");
    assert!(said.contains(flag), "{args:?}: {said} does not name {flag}");
    assert!(
        said.contains(bound),
        "{args:?}: {said} does not say {bound}"
    );
    assert!(!said.contains("panicked"), "{args:?}: {said}");
}

#[test]
fn durations_past_a_week_are_refused_with_status_2_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let url = "http://127.0.0.1:9/f";
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let week = "168h (7 days)";
    refused(&["get", url, out, "--timeout", HUGE], "--timeout", week);
    refused(&["get", url, out, "--timeout", "169h"], "--timeout", week);
    refused(
        &["get", url, out, "--serve", "127.0.0.1:0", "--linger", HUGE],
        "--linger",
        week,
    );
    refused(&["put", root, url, "--timeout", HUGE], "--timeout", week);
    for flag in ["--head-timeout", "--idle-timeout", "--grace"] {
        refused(&["serve", root, flag, HUGE], flag, week);
    }
    refused(
        &["copy", root, out, "--idle-timeout", HUGE],
        "--idle-timeout",
        week,
    );
    refused(
        &["cache", "bench", "--serve-window", HUGE],
        "--serve-window",
        week,
    );
}

#[test]
fn counts_past_their_bound_are_refused_with_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let url = "http://127.0.0.1:9/f";
    for value in ["0", "100000"] {
        refused(
            &["get", url, root, "--streams", value],
            "--streams",
            "1..=256",
        );
        refused(
            &["put", root, url, "--streams", value],
            "--streams",
            "1..=256",
        );
        refused(
            &["serve", root, "--workers", value],
            "--workers",
            "1..=1024",
        );
    }
    refused(
        &["serve", root, "--max-connections", "100000000"],
        "--max-connections",
        "1..=1048576",
    );
    refused(
        &["cache", "bench", "--runs", "100000"],
        "--runs",
        "1..=10000",
    );
}
