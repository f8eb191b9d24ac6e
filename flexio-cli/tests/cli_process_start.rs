//! How the `flexio` binary starts: what the runtime does before `main`
//! that flexio relies on (SIGPIPE ignored, stdout flushed), and how it is
//! linked (a PIE, no C library function replaced, few libraries to load).

use crate::common;

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

/// `readelf` (binutils, which the C compiler needs) on the binary.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn readelf(option: &str) -> String {
    let output = std::process::Command::new("readelf")
        .args([option, "--wide", env!("CARGO_BIN_EXE_flexio")])
        .output()
        .expect("readelf runs");
    assert!(output.status.success(), "readelf {option}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The binary is a position-independent executable, so that its own code
/// and data are randomized (ASLR) like its libraries, stack and heap.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_is_position_independent() {
    let header = readelf("--file-header");
    let kind = header
        .lines()
        .find(|line| line.trim_start().starts_with("Type:"))
        .unwrap_or_default();
    assert!(kind.contains("DYN"), "not a PIE: {kind}");
    let dynamic = readelf("--dynamic");
    assert!(
        dynamic.contains("(FLAGS_1)") && dynamic.contains("PIE"),
        "{dynamic}"
    );
}

/// Where the build script found the toolchain able to (see `build.rs`),
/// the relative relocations are packed (DT_RELR), which spares the loader
/// reading tens of KiB of `.rela.dyn` at every start.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn relative_relocations_are_packed_where_the_toolchain_can() {
    if option_env!("FLEXIO_PACKED_RELOCATIONS") != Some("1") {
        eprintln!("skipped: the linker or the C library here cannot pack relocations");
        return;
    }
    let dynamic = readelf("--dynamic");
    assert!(dynamic.contains("(RELR)"), "{dynamic}");
}

/// The binary exports no function, so it replaces none of the C
/// library's for the process (`exp`, `log`, `pow`... come from the C
/// library, as in any other program).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_exports_no_function() {
    let symbols = readelf("--dyn-syms");
    let exported: Vec<&str> = symbols
        .lines()
        .filter(|line| line.contains(" FUNC ") && !line.contains(" UND "))
        .filter_map(|line| line.split_whitespace().nth(7))
        .collect();
    assert!(exported.is_empty(), "exported: {exported:?}");
}

/// The loader maps the C library and, where the program calls float
/// functions, the maths library beside it; the unwinder is linked in
/// (`build.rs`), so `libgcc_s` is not loaded. A library more costs a small
/// copy some 5% of its wall time. The loader itself (`ld-linux*`, named
/// when the unwinder calls `_dl_find_object`) is in every process already.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_loads_libc_and_libm_alone() {
    let dynamic = readelf("--dynamic");
    let needed: Vec<&str> = dynamic
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(|line| line.split('[').nth(1)?.split(']').next())
        .filter(|library| !library.starts_with("ld-linux"))
        .collect();
    assert!(needed.contains(&"libc.so.6"), "{dynamic}");
    assert!(
        needed
            .iter()
            .all(|library| ["libc.so.6", "libm.so.6"].contains(library)),
        "{dynamic}"
    );
}
