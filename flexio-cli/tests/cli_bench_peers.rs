//! `flexio bench` installs nothing unless `--install-peers` says so: a
//! missing peer is reported as missing. `cargo` and `apt-get` on the PATH
//! are scripts that record each call, and no xcp is on it.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A directory holding `cargo` and `apt-get` that append their arguments
/// to `calls` and fail (so nothing is installed either way).
fn recording_installers(bin: &Path, calls: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    for name in ["cargo", "apt-get"] {
        let script = format!(
            "#!/bin/sh\necho \"{name} $*\" >> '{}'\nexit 1\n",
            calls.display()
        );
        let path = bin.join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Runs the tree scenario on a tiny tree with `extra` arguments; returns
/// its stdout and what the installers were asked.
fn tree_bench(extra: &[&str]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (bin, calls) = (dir.path().join("bin"), dir.path().join("calls"));
    recording_installers(&bin, &calls);
    let output = common::flexio()
        .args(["bench", "--scenario", "tree", "--trees", "A"])
        .args(["--tree-scale", "0.002", "--runs", "1"])
        .args(extra)
        .arg("--dir")
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("out"))
        .env(
            "PATH",
            format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", bin.display()),
        )
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", common::stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (stdout, std::fs::read_to_string(calls).unwrap_or_default())
}

#[test]
fn the_bench_installs_nothing_without_install_peers() {
    if Path::new("/usr/bin/xcp").exists() {
        common::skipped("the bench peers test: xcp is in /usr/bin, so never missing");
        return;
    }
    let (stdout, calls) = tree_bench(&[]);
    assert_eq!(calls, "", "installers called without --install-peers");
    assert!(stdout.contains("missing peers: xcp"), "{stdout}");
}

#[test]
fn install_peers_asks_cargo_for_a_missing_xcp() {
    if Path::new("/usr/bin/xcp").exists() {
        common::skipped("the bench peers test: xcp is in /usr/bin, so never missing");
        return;
    }
    let (stdout, calls) = tree_bench(&["--install-peers"]);
    assert_eq!(calls, "cargo install --quiet xcp\n");
    assert!(stdout.contains("missing peers: xcp"), "{stdout}");
}
