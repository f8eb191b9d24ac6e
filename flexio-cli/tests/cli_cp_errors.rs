//! `flexio copy` fails in cp's words: for each common mistake cp and
//! flexio run in the same directory, and flexio's message (less the
//! kernel's `(os error N)`) starts with cp's. A failed entry of a tree is
//! named with its reason, never counted alone ("copy 1 of 3 entries").

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// `afile`, `adir/inner`, `bdir/`, `secret` (mode 000), `ro/` (mode 555).
fn fixture(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(dir.join("afile"), b"a").unwrap();
    std::fs::create_dir(dir.join("adir")).unwrap();
    std::fs::write(dir.join("adir/inner"), b"i").unwrap();
    std::fs::create_dir(dir.join("bdir")).unwrap();
    common::write_with_mode(&dir.join("secret"), b"s", 0o000);
    std::fs::create_dir(dir.join("ro")).unwrap();
    std::fs::set_permissions(dir.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
}

/// The first line of `program`'s stderr less `prefix` and `(os error N)`.
fn message(output: &std::process::Output, prefix: &str) -> String {
    let stderr = common::stderr(output);
    let line = stderr.lines().last().unwrap_or_default();
    let line = line.strip_prefix(prefix).unwrap_or(line);
    match line.find(" (os error ") {
        Some(at) => line[..at].to_string(),
        None => line.to_string(),
    }
}

/// Runs `cp ARGS` and `flexio copy ARGS` (as user nobody when
/// `unprivileged`) in a fresh fixture; returns both messages.
fn both(arguments: &[&str], unprivileged: bool) -> (String, String) {
    let run = |program: &str, first: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        fixture(dir.path());
        let mut command = if unprivileged {
            let mut command = Command::new("setpriv");
            command.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
            command
        } else {
            Command::new(program)
        };
        let output = command
            .args(first)
            .args(arguments)
            .current_dir(dir.path())
            .env("LC_ALL", "C")
            .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
            .output()
            .unwrap();
        assert!(
            !output.status.success(),
            "{program} {arguments:?} succeeded"
        );
        output
    };
    let cp = run("cp", &[]);
    let flexio = run(env!("CARGO_BIN_EXE_flexio"), &["copy"]);
    (message(&cp, "cp: "), message(&flexio, "flexio: "))
}

fn same_gist(arguments: &[&str], unprivileged: bool) {
    let (cp, flexio) = both(arguments, unprivileged);
    assert!(!cp.is_empty());
    assert!(
        flexio.starts_with(&cp),
        "{arguments:?}:\n  cp:     {cp}\n  flexio: {flexio}"
    );
}

#[test]
fn a_directory_onto_a_file_reads_as_cp() {
    same_gist(&["-r", "adir", "afile"], false);
}

#[test]
fn a_missing_source_reads_as_cp() {
    same_gist(&["nosuch", "out"], false);
    same_gist(&["-r", "nosuch", "bdir"], false);
}

#[test]
fn a_directory_without_r_reads_as_cp() {
    same_gist(&["adir", "bdir"], false);
}

#[test]
fn the_same_file_reads_as_cp() {
    same_gist(&["afile", "afile"], false);
}

#[test]
fn several_sources_into_a_file_read_as_cp() {
    same_gist(&["adir/inner", "secret", "afile"], false);
    same_gist(&["afile", "adir/inner", "not-there"], false);
}

#[test]
fn permission_denied_reads_as_cp() {
    if !common::is_root() {
        common::skipped("needs root to run both as user nobody with setpriv");
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        common::skipped("setpriv is not installed");
        return;
    }
    same_gist(&["secret", "out"], true);
    same_gist(&["afile", "ro/afile"], true);
}

#[test]
fn one_failed_entry_of_a_tree_is_named_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let output = common::flexio()
        .args(["copy", "-r", "afile", "nosuch", "bdir"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = common::stderr(&output);
    assert!(!stderr.contains(" entries"), "{stderr}");
    assert!(stderr.contains("cannot stat 'nosuch'"), "{stderr}");
    assert_eq!(std::fs::read(dir.path().join("bdir/afile")).unwrap(), b"a");
}
