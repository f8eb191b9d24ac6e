//! The CLI enters at its own C `main` (to skip the runtime's stack-overflow
//! handler setup, a tenth of a small copy's time): what the runtime did
//! before `main` that flexio relies on must still hold.

mod common;

use common::flexio;

use std::io::Read;
use std::process::Stdio;

#[test]
fn a_reader_that_goes_away_is_an_epipe_error_not_a_sigpipe_death() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a");
    std::fs::write(&source, vec![1u8; 16 << 20]).unwrap();
    let mut child = flexio()
        .args(["copy", "--via", "read-write"])
        .arg(&source)
        .arg("-")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "not killed by SIGPIPE: {stderr}"
    );
    assert!(stderr.contains("Broken pipe"), "{stderr}");
}

#[test]
fn a_report_on_stdout_is_flushed_at_exit() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a");
    std::fs::write(&source, b"hello").unwrap();
    let output = flexio()
        .args(["copy", "--json"])
        .arg(&source)
        .arg(dir.path().join("b"))
        .output()
        .unwrap();
    assert!(output.status.success());
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["bytes"], 5);
}

/// The loader maps libc alone: the unwinder is linked in and the float
/// functions come from the program (`build.rs`, `float_functions.rs`). A
/// library more costs a small copy some 5% of its wall time. The loader
/// itself (`ld-linux*`, named when the unwinder calls `_dl_find_object`)
/// is in every process already.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_loads_libc_alone() {
    let output = std::process::Command::new("readelf")
        .args(["--dynamic", "--wide", env!("CARGO_BIN_EXE_flexio")])
        .output()
        .expect("readelf (binutils, which the C compiler needs) runs");
    assert!(output.status.success());
    let dynamic = String::from_utf8_lossy(&output.stdout);
    let needed: Vec<&str> = dynamic
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(|line| line.split('[').nth(1)?.split(']').next())
        .filter(|library| !library.starts_with("ld-linux"))
        .collect();
    assert_eq!(needed, ["libc.so.6"], "{dynamic}");
}
