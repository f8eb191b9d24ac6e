//! What `flexio copy` says, with cp's and curl's habits: nothing on
//! success when stdout is not a terminal, one line on a terminal, `-v` as
//! `cp -v`, the full report on stderr only with `--report` (`--stats`),
//! JSON on stdout only with `--json`; units that fit the size.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{flexio, stderr};

fn six_bytes(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let source = dir.join("a");
    std::fs::write(&source, b"hello\n").unwrap();
    (source, dir.join("b"))
}

#[test]
fn a_copy_says_nothing_on_success_when_stdout_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (source, sink) = six_bytes(dir.path());
    let output = flexio()
        .arg("copy")
        .arg(&source)
        .arg(&sink)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(output.stdout, b"", "stdout");
    assert_eq!(output.stderr, b"", "stderr");
    assert_eq!(std::fs::read(&sink).unwrap(), b"hello\n");
}

#[test]
fn the_report_goes_to_stderr_with_units_that_fit_six_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (source, sink) = six_bytes(dir.path());
    for flag in ["--report", "--stats"] {
        let output = flexio()
            .arg("copy")
            .arg(&source)
            .arg(&sink)
            .arg(flag)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        assert_eq!(output.stdout, b"", "{flag}: stdout");
        let report = stderr(&output);
        assert!(report.contains("  mechanism  "), "{flag}: {report}");
        assert!(report.contains("  kernel     "), "{flag}: {report}");
        assert!(!report.contains("CPU-s/GiB"), "{flag}: {report}");
        assert!(
            !report.contains("/s"),
            "{flag}: a rate for 6 bytes: {report}"
        );
        assert!(report.contains(" ms"), "{flag}: {report}");
        assert!(
            !report.contains(" 1 system calls") && !report.contains(" 1 syscalls"),
            "{flag}: {report}"
        );
    }
}

#[test]
fn json_goes_to_stdout_and_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (source, sink) = six_bytes(dir.path());
    let output = flexio()
        .arg("copy")
        .arg(&source)
        .arg(&sink)
        .arg("--json")
        .output()
        .unwrap();
    let json = common::json_report(&output);
    assert_eq!(json["bytes"], 6, "{json}");
    assert_eq!(output.stderr, b"");
}

#[test]
fn verbose_lists_the_copy_as_cp_does() {
    let dir = tempfile::tempdir().unwrap();
    let (source, sink) = six_bytes(dir.path());
    let output = flexio()
        .arg("copy")
        .arg("-v")
        .arg(&source)
        .arg(&sink)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = format!("'{}' -> '{}'\n", source.display(), sink.display());
    assert_eq!(String::from_utf8_lossy(&output.stdout), expected);
    assert_eq!(output.stderr, b"");
}

/// `copy -r -v` lists each file, directory and symlink it makes, under the
/// names `cp -r -v` gives them (order aside: files are copied in
/// parallel), into a new destination and into an existing one.
#[test]
fn verbose_lists_a_tree_copy_as_cp_does() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    std::fs::write(tree.join("one"), b"1").unwrap();
    std::fs::write(tree.join("sub/deeper/two"), b"22").unwrap();
    std::os::unix::fs::symlink("one", tree.join("link")).unwrap();
    let lines = |program: &str, dest: &str| {
        let mut command = match program {
            "cp" => Command::new("cp"),
            _ => flexio(),
        };
        if program != "cp" {
            command.arg("copy");
        }
        let output = command
            .args(["-r", "-v"])
            .arg(&tree)
            .arg(dir.path().join(dest))
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        let text = String::from_utf8_lossy(&output.stdout).replace(dest, "DEST");
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let ours = lines("flexio", "by-flexio");
    assert_eq!(ours.len(), 6, "{ours:#?}");
    assert_eq!(ours, lines("cp", "by-cp"));
    // Into an existing directory both copy the tree beneath it.
    assert_eq!(lines("flexio", "by-flexio"), lines("cp", "by-cp"));
}

/// `cp -av` lists every name it makes, a hard link to a file already
/// copied as well: `flexio copy -av` lists the same lines (in its own
/// order), with links in the top directory and in new subdirectories.
#[test]
fn verbose_lists_hard_links_as_cp_av_does() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
    std::fs::write(tree.join("first"), b"1").unwrap();
    std::fs::hard_link(tree.join("first"), tree.join("second")).unwrap();
    std::fs::hard_link(tree.join("first"), tree.join("sub/deeper/third")).unwrap();
    std::fs::write(tree.join("sub/a"), b"a").unwrap();
    std::fs::hard_link(tree.join("sub/a"), tree.join("sub/b")).unwrap();
    let lines = |program: &str, dest: &str| {
        let mut command = match program {
            "cp" => Command::new("cp"),
            _ => flexio(),
        };
        if program != "cp" {
            command.arg("copy");
        }
        let output = command
            .args(["-a", "-v"])
            .arg(&tree)
            .arg(dir.path().join(dest))
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        let text = String::from_utf8_lossy(&output.stdout).replace(dest, "DEST");
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let ours = lines("flexio", "by-flexio");
    assert_eq!(ours.len(), 8, "{ours:#?}");
    assert_eq!(ours, lines("cp", "by-cp"));
    use std::os::unix::fs::MetadataExt;
    let inode = |path: &str| std::fs::metadata(dir.path().join(path)).unwrap().ino();
    assert_eq!(
        inode("by-flexio/first"),
        inode("by-flexio/sub/deeper/third")
    );
}

#[test]
fn a_tree_copy_is_silent_too_and_its_report_goes_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("one"), b"1").unwrap();
    std::fs::write(tree.join("sub/two"), b"22").unwrap();
    let quiet = flexio()
        .args(["copy", "-r"])
        .arg(&tree)
        .arg(dir.path().join("copy"))
        .output()
        .unwrap();
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert_eq!(
        (quiet.stdout.as_slice(), quiet.stderr.as_slice()),
        (&b""[..], &b""[..])
    );
    let report = flexio()
        .args(["copy", "-r", "--report"])
        .arg(&tree)
        .arg(dir.path().join("again"))
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    assert_eq!(report.stdout, b"");
    assert!(stderr(&report).contains("2 files"), "{}", stderr(&report));
}

/// Runs `flexio ARGS` with stdout and stderr on a terminal (`script`
/// gives it a pty) and returns what the terminal showed; `None` without
/// `script` (util-linux).
fn on_a_terminal(args: &str) -> Option<String> {
    let line = format!(
        "FLEXIO_PROFILE=/nonexistent/flexio-profile.toml {} {args}",
        env!("CARGO_BIN_EXE_flexio")
    );
    let output = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .ok()?;
    assert!(output.status.success(), "{}", stderr(&output));
    Some(String::from_utf8_lossy(&output.stdout).replace('\r', ""))
}

#[test]
fn on_a_terminal_a_copy_prints_one_summary_line() {
    let dir = tempfile::tempdir().unwrap();
    let (source, sink) = six_bytes(dir.path());
    let Some(shown) = on_a_terminal(&format!(
        "copy --no-progress {} {}",
        source.display(),
        sink.display()
    )) else {
        common::skipped("script (util-linux) is not installed");
        return;
    };
    assert_eq!(shown.lines().count(), 1, "{shown:?}");
    let expected = format!("{} -> {}: 6 bytes in ", source.display(), sink.display());
    assert!(shown.starts_with(&expected), "{shown:?}");
    assert!(!shown.contains("/s"), "a rate for 6 bytes: {shown:?}");
}
