//! `flexio copy` with cp's grammar for many files and trees, as a person
//! types it: exit statuses, what lands where, one line per failed entry.

use crate::common;

use common::{flexio, json_report, names, require_root, stderr, wait_at_most, Tmpfs};

use std::path::Path;
use std::process::Command;

fn tree(root: &Path) {
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::write(root.join("top"), b"top").unwrap();
    std::fs::write(root.join("sub/mid"), b"mid").unwrap();
    std::fs::write(root.join("sub/deeper/low"), b"low").unwrap();
}

#[test]
fn several_sources_go_into_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("a"), b"a").unwrap();
    std::fs::write(root.join("b"), b"b").unwrap();
    std::fs::create_dir(root.join("into")).unwrap();
    let output = flexio()
        .args(["copy", "-q"])
        .args([root.join("a"), root.join("b"), root.join("into")])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read(root.join("into/a")).unwrap(), b"a");
    assert_eq!(std::fs::read(root.join("into/b")).unwrap(), b"b");
    // One file into an existing directory, as cp.
    let output = flexio()
        .args(["copy", "-q"])
        .args([root.join("a"), root.join("into/")])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    // Several sources and no directory: a usage error before any copy.
    let output = flexio()
        .arg("copy")
        .args([root.join("a"), root.join("b"), root.join("nodir")])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(!root.join("nodir").exists());
}

#[test]
fn a_source_given_twice_is_copied_once_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    tree(&root.join("a"));
    std::fs::write(root.join("f"), b"f").unwrap();
    std::fs::create_dir(root.join("into")).unwrap();
    // The same directory twice (once through "./"), and a file twice.
    let output = flexio()
        .current_dir(root)
        .args(["copy", "-r", "-q", "a", "./a/", "f", "f", "into"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert_eq!(err.matches("specified more than once").count(), 2, "{err}");
    assert_eq!(
        std::fs::read(root.join("into/a/sub/deeper/low")).unwrap(),
        b"low"
    );
    assert_eq!(std::fs::read(root.join("into/f")).unwrap(), b"f");
    assert_eq!(names(&root.join("into")), ["a", "f"]);
}

#[test]
fn a_directory_needs_r_and_r_copies_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    tree(&root.join("src"));
    let output = flexio()
        .arg("copy")
        .args([root.join("src"), root.join("dst")])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("-r not specified; omitting directory"),
        "{}",
        stderr(&output)
    );
    let output = flexio()
        .args(["copy", "-r", "--json"])
        .args([root.join("src"), root.join("dst")])
        .output()
        .unwrap();
    let report = json_report(&output);
    assert_eq!(report["files"], 3);
    assert_eq!(report["directories"], 3);
    assert_eq!(
        std::fs::read(root.join("dst/sub/deeper/low")).unwrap(),
        b"low"
    );
}

#[test]
fn dry_run_lists_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    tree(&root.join("src"));
    let output = flexio()
        .args(["copy", "-r", "--dry-run"])
        .args([root.join("src"), root.join("dst")])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("mkdir") && text.contains("low"), "{text}");
    assert!(!root.join("dst").exists());
}

#[test]
fn an_unreadable_file_fails_alone_with_its_path_and_exit_1() {
    if !require_root("running flexio as nobody") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    tree(&root.join("src"));
    std::fs::write(root.join("src/sub/secret"), b"secret").unwrap();
    let chmod = |path: &Path, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    chmod(root, 0o777);
    for path in ["src", "src/sub", "src/sub/deeper"] {
        chmod(&root.join(path), 0o755);
    }
    for path in ["src/top", "src/sub/mid", "src/sub/deeper/low"] {
        chmod(&root.join(path), 0o644);
    }
    chmod(&root.join("src/sub/secret"), 0o600);
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_flexio"))
        .args(["copy", "-r", "-q"])
        .args([root.join("src"), root.join("dst")])
        .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("secret") && message.contains("Permission denied"),
        "{message}"
    );
    assert!(!message.contains(".flexio-"), "{message}");
    assert_eq!(
        std::fs::read(root.join("dst/sub/deeper/low")).unwrap(),
        b"low"
    );
    assert_eq!(std::fs::read(root.join("dst/top")).unwrap(), b"top");
    assert!(!root.join("dst/sub/secret").exists());
}

/// Every regular file under `copy` equals its source under `source`, and
/// no temporary file is anywhere: what an interrupted copy may leave.
fn only_whole_files(source: &Path, copy: &Path) -> usize {
    let mut whole = 0;
    let mut stack = vec![copy.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                !name.contains(".flexio-"),
                "temporary file left: {}",
                path.display()
            );
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let relative = path.strip_prefix(copy).unwrap();
                let original = std::fs::read(source.join(relative)).unwrap();
                assert!(
                    std::fs::read(&path).unwrap() == original,
                    "{} is not whole",
                    path.display()
                );
                whole += 1;
            }
        }
    }
    whole
}

fn interruptible_tree(root: &Path) {
    for d in 0..20 {
        let dir = root.join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..50 {
            let data: Vec<u8> = (0..4096u32)
                .map(|i| (i * 7 + f * 13 + d * 3) as u8)
                .collect();
            std::fs::write(dir.join(format!("f{f:02}")), data).unwrap();
        }
    }
    for big in 0..3u32 {
        let data: Vec<u8> = (0..(16u32 << 20))
            .map(|i| (i >> 9) as u8 ^ big as u8)
            .collect();
        std::fs::write(root.join(format!("big{big}")), data).unwrap();
    }
}

/// The hidden staging directories (`.NAME.flexio-PID-RANDOM`) and
/// temporary files in `dir`.
fn staged_in(dir: &Path) -> Vec<String> {
    names(dir)
        .into_iter()
        .filter(|name| name.starts_with('.') && name.contains(".flexio-"))
        .collect()
}

/// Starts `flexio copy -r SOURCE TARGET` slowed down by `--rate` (the
/// interruptible tree takes seconds then) and returns it once its staging
/// directory shows in TARGET's parent, with that directory's name.
fn start_slow_copy(source: &Path, target: &Path) -> (std::process::Child, String) {
    let parent = target.parent().unwrap();
    let before = staged_in(parent);
    let mut child = flexio()
        .args(["copy", "-r", "-q", "--rate", "16M"])
        .arg(source)
        .arg(target)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut new = None;
    let showed = flexio_testkit::wait_until(
        || {
            new = staged_in(parent).into_iter().find(|n| !before.contains(n));
            new.is_some()
        },
        std::time::Duration::from_secs(10),
    );
    if !showed {
        child.kill().unwrap();
        child.wait().unwrap();
        panic!("no staging directory showed in {}", parent.display());
    }
    (child, new.expect("showed"))
}

/// Waits until `child` has written a mebibyte (a sixteenth of a second at
/// the slow copy's rate): the copy is under way, not merely started.
fn wait_until_copying(child: &std::process::Child) {
    let written = || flexio_testkit::bytes_written_by(child.id()) >= 1 << 20;
    assert!(
        flexio_testkit::wait_until(written, std::time::Duration::from_secs(10)),
        "the copy wrote nothing"
    );
}

fn signal(child: &std::process::Child, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn sigint_during_a_new_tree_copy_removes_its_whole_staging_directory() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    interruptible_tree(&source);
    let parent = dir.path().join("into");
    std::fs::create_dir(&parent).unwrap();
    let target = parent.join("dst");
    let (mut child, staging) = start_slow_copy(&source, &target);
    assert!(staging.starts_with(".dst.flexio-"), "{staging}");
    wait_until_copying(&child);
    signal(&child, "INT");
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(names(&parent).is_empty(), "{:?}", names(&parent));
}

#[test]
fn kill_9_leaves_a_hidden_staging_directory_the_next_copy_sweeps_unless_a_live_copy_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    interruptible_tree(&source);
    let parent = dir.path().join("into");
    std::fs::create_dir(&parent).unwrap();
    let (mut killed, killed_staging) = start_slow_copy(&source, &parent.join("one"));
    // A second copy, alive while the third runs: its staging directory
    // is locked and must stay.
    let (mut live, live_staging) = start_slow_copy(&source, &parent.join("two"));
    wait_until_copying(&killed);
    signal(&killed, "KILL");
    killed.wait().unwrap();
    assert_eq!(
        staged_in(&parent),
        {
            let mut both = vec![killed_staging.clone(), live_staging.clone()];
            both.sort();
            both
        },
        "kill -9 leaves the staging directory, hidden, and nothing at a final name"
    );
    assert!(!parent.join("one").exists());
    let small = dir.path().join("small");
    tree(&small);
    let output = flexio()
        .args(["copy", "-r", "-q"])
        .arg(&small)
        .arg(parent.join("three"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        staged_in(&parent),
        [live_staging],
        "the dead copy's staging directory is swept, the live one's kept"
    );
    signal(&live, "INT");
    live.wait().unwrap();
    assert_eq!(names(&parent), ["three"]);
}

#[test]
fn a_destination_made_during_a_new_tree_copy_is_left_alone_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    interruptible_tree(&source);
    let target = dir.path().join("dst");
    let (child, _) = start_slow_copy(&source, &target);
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("mine"), b"someone else's").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("created by something else") && message.contains("dst"),
        "{message}"
    );
    assert_eq!(names(&target), ["mine"]);
    assert_eq!(
        std::fs::read(target.join("mine")).unwrap(),
        b"someone else's"
    );
    assert_eq!(names(dir.path()), ["dst", "src"]);
}

#[test]
fn a_new_tree_copy_reports_each_files_mechanism_and_leaves_nothing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    tree(&source);
    for via in ["read-write", "copy-file-range"] {
        let target = dir.path().join(format!("dst-{via}"));
        let output = flexio()
            .args(["copy", "-r", "--json", "--via", via])
            .arg(&source)
            .arg(&target)
            .output()
            .unwrap();
        let report = json_report(&output);
        assert_eq!(report["files"], 3, "{report}");
        assert_eq!(report["files_by_mechanism"][via], 3, "{report}");
        assert_eq!(
            std::fs::read(target.join("sub/deeper/low")).unwrap(),
            b"low"
        );
    }
    assert_eq!(
        names(dir.path()),
        ["dst-copy-file-range", "dst-read-write", "src"]
    );
}

#[test]
fn a_tree_copy_interrupted_by_sigint_or_kill_9_leaves_only_whole_files() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    interruptible_tree(&source);
    // Delays spread over a copy of this tree (tens to hundreds of ms).
    let delays_ms = [1u64, 7, 19, 43, 97, 160];
    let mut interrupted = 0;
    for (round, delay) in delays_ms.iter().enumerate() {
        for signal in ["INT", "KILL"] {
            let target = dir.path().join(format!("dst-{round}-{signal}"));
            let mut child = flexio()
                .args(["copy", "-r", "-q", "--via", "read-write", "--chunk", "64K"])
                .arg(&source)
                .arg(&target)
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(*delay));
            let _ = Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(child.id().to_string())
                .status();
            let status = child.wait().unwrap();
            if !status.success() {
                interrupted += 1;
            }
            only_whole_files(&source, &target);
            if signal == "INT" {
                // The handler removed the staging directory whole.
                let left = staged_in(dir.path());
                assert!(!left.iter().any(|name| name.contains("INT")), "{left:?}");
            }
        }
    }
    assert!(
        interrupted > 0,
        "no copy was interrupted: the tree is too small"
    );
    // What kill -9 left (hidden, its process gone) the next copy into
    // the same directory sweeps.
    let output = flexio()
        .args(["copy", "-r", "-q"])
        .arg(dir.path().join("src/d00"))
        .arg(dir.path().join("last"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(staged_in(dir.path()), Vec::<String>::new());
}

/// The tree scenario's RAM-backed ext4 lives in a mount namespace of the
/// bench's own: while it runs the host sees no mount, and `kill -9` (which
/// runs no cleanup) leaves none behind.
#[test]
fn the_tree_benchs_ram_disk_leaves_no_mount_after_kill_9() {
    if !common::require_root("mount a RAM-backed ext4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let host_mounts = || {
        std::fs::read_to_string("/proc/self/mounts")
            .unwrap()
            .lines()
            .filter(|line| line.contains(".flexio-tree-bench-"))
            .count()
    };
    let mut child = flexio()
        .args([
            "bench",
            "--scenario",
            "tree",
            "--trees",
            "A",
            "--tree-scale",
            "0.05",
        ])
        .args(["--runs", "1000", "--dir"])
        // No xcp on the PATH: reported missing (nothing is installed
        // without --install-peers).
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .arg(dir.path())
        .args(["--out"])
        .arg(dir.path().join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let its_mounts = format!("/proc/{}/mounts", child.id());
    let started = std::time::Instant::now();
    let mut seen = false;
    while started.elapsed() < std::time::Duration::from_secs(60) {
        let mounts = std::fs::read_to_string(&its_mounts).unwrap_or_default();
        if mounts
            .lines()
            .any(|l| l.contains(".flexio-tree-bench-") && l.contains("ext4"))
        {
            seen = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(seen, "the bench never mounted its RAM disk");
    assert_eq!(
        host_mounts(),
        0,
        "the RAM disk is visible outside the bench"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // Contenders the bench started may outlive it for a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while host_mounts() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(host_mounts(), 0);
}

/// `flexio tune` keeps the tree copy's workers and batch per file system
/// type; `copy -r` without `--jobs` takes them for the destination's file
/// system and says so, `--jobs` overrides them, and `profile show` lists
/// them.
#[test]
fn tree_copies_take_their_workers_from_the_profile_for_the_destinations_file_system() {
    use flexio::profile::{Fingerprint, Mount, Profile, TreePoint, TreeProfile};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    tree(&root.join("src"));
    let filesystem = Mount::containing(root).unwrap().fs_type;
    let mut profile = Profile::new(Fingerprint::of_this_machine(root), root);
    profile.set_tree_settings(TreeProfile {
        filesystem: filesystem.clone(),
        jobs: 3,
        batch: 5,
        files: 2000,
        file_bytes: 4096,
        points: vec![TreePoint {
            jobs: 3,
            batch: 5,
            files_per_second: 12345.0,
        }],
    });
    let path = root.join("profile.toml");
    profile.save(&path).unwrap();

    let copy = |extra: &[&str], to: &str| {
        let output = flexio()
            .env("FLEXIO_PROFILE", &path)
            .args(["copy", "-r", "--json"])
            .args(extra)
            .args([root.join("src"), root.join(to)])
            .output()
            .unwrap();
        json_report(&output)
    };
    let report = copy(&[], "dst1");
    assert_eq!(
        (report["jobs"].as_u64(), report["batch"].as_u64()),
        (Some(3), Some(5))
    );
    let from = report["settings_from"].as_str().unwrap();
    assert!(
        from.starts_with("profile ") && from.contains(&filesystem),
        "{from}"
    );
    assert_eq!(
        std::fs::read(root.join("dst1/sub/deeper/low")).unwrap(),
        b"low"
    );

    let report = copy(&["--jobs", "2"], "dst2");
    assert_eq!(report["jobs"], 2);
    assert_eq!(report["settings_from"], "--jobs");

    let shown = flexio()
        .args(["profile", "--profile"])
        .arg(&path)
        .arg("show")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains(&format!(
            "tree copy onto {filesystem}: 3 jobs, batches of 5 (12345 files/s"
        )),
        "{text}"
    );
}

/// Settings out of bounds make the profile invalid as a whole: `auto`
/// falls back to the built-in table and the tree copy to its defaults.
#[test]
fn a_profile_asking_for_zero_workers_is_refused_and_the_copy_uses_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    tree(&root.join("src"));
    let filesystem = flexio::profile::Mount::containing(root).unwrap().fs_type;
    let mut profile =
        flexio::profile::Profile::new(flexio::profile::Fingerprint::of_this_machine(root), root);
    profile.set_tree_settings(flexio::profile::TreeProfile {
        filesystem,
        jobs: 7,
        batch: 16,
        files: 1,
        file_bytes: 1,
        points: Vec::new(),
    });
    let path = root.join("profile.toml");
    profile.save(&path).unwrap();
    // Edited by hand, as a person may.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("jobs = 7"), "{text}");
    std::fs::write(&path, text.replace("jobs = 7", "jobs = 0")).unwrap();
    let output = flexio()
        .env("FLEXIO_PROFILE", &path)
        .args(["copy", "-r", "--json"])
        .args([root.join("src"), root.join("dst")])
        .output()
        .unwrap();
    assert!(stderr(&output).contains("jobs 0"), "{}", stderr(&output));
    let report = json_report(&output);
    assert_eq!(report["settings_from"], "default");
    assert_eq!(report["batch"], flexio::tree::DEFAULT_BATCH);
}

/// The `tree` scenario at a tiny scale: its table, JSON and both charts,
/// every copy checked, nothing left in the work directory.
#[test]
fn the_tree_bench_writes_its_table_json_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = flexio()
        .args(["bench", "--scenario", "tree", "--trees", "A,B"])
        .args(["--tree-scale", "0.01", "--runs", "1", "--dir"])
        .arg(dir.path())
        .arg("--out")
        .arg(&out)
        // No cargo on the PATH: a missing xcp is reported, not built.
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains("tree A on ") && table.contains("tree B on "),
        "{table}"
    );
    assert!(!table.contains("DIFFERS"), "{table}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("tree.json")).unwrap()).unwrap();
    assert_eq!(json["scenario"], "tree");
    let timings = json["timings"].as_array().unwrap();
    assert!(timings.iter().any(|t| t["contender"] == "flexio copy -r"));
    assert!(timings.iter().any(|t| t["contender"] == "cp -r"));
    for chart in ["tree-files.svg", "tree-bytes.svg"] {
        let svg = std::fs::read_to_string(out.join(chart)).unwrap();
        assert!(
            svg.contains("flexio copy -r") && svg.contains("cp -r"),
            "{chart}"
        );
        assert!(svg.contains("A (") && svg.contains("B ("), "{chart}");
    }
    assert_eq!(common::names(dir.path()), vec!["out".to_string()]);
}

/// Issue 24: a tree copy by splice with one worker hung on the first small
/// file after a big one failed with ENOSPC, behind the big one's bytes
/// left in the worker's pipe.
#[test]
fn a_tree_copy_by_splice_onto_a_full_file_system_fails_the_big_file_and_copies_the_rest() {
    if !require_root("mount an 8 MiB tmpfs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    std::fs::create_dir(&source).unwrap();
    let small = |i: usize| format!("small {i} ").repeat(400).into_bytes();
    std::fs::write(source.join("big"), vec![0x42_u8; 10 << 20]).unwrap();
    for i in 0..30 {
        std::fs::write(source.join(format!("small-{i:02}")), small(i)).unwrap();
    }
    let mount = Tmpfs::mount("8m");
    let target = mount.path().join("dst");
    let child = flexio()
        .args(["copy", "-r", "--via", "splice", "--jobs", "1"])
        .arg(&source)
        .arg(&target)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let output = wait_at_most(child, std::time::Duration::from_secs(60))
        .expect("the copy hung behind the failed file's bytes");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("big"), "{}", stderr(&output));
    for i in 0..30 {
        let copied = std::fs::read(target.join(format!("small-{i:02}"))).unwrap();
        assert!(copied == small(i), "small-{i:02} holds other bytes");
    }
    assert!(!target.join("big").exists());
}

/// Issue 24: `copy -r SRC DST`, `copy f DIR/` and `copy -a` replaced a
/// symlink in the destination with a regular file (mode 0777, from the
/// link itself, under `-r`). As cp: a live link is written through (its
/// target keeps its mode, or takes the source's under `-a`), a dangling
/// one is refused and left as it was while the rest is copied.
#[test]
fn copy_over_a_symlink_in_the_destination_writes_through_it_as_cp_does() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    std::fs::create_dir(&source).unwrap();
    std::fs::write(source.join("f"), b"new bytes").unwrap();
    std::fs::write(source.join("g"), b"other").unwrap();
    std::fs::set_permissions(source.join("f"), std::fs::Permissions::from_mode(0o644)).unwrap();
    for (how, args) in [
        ("copy -r SRC DST", vec!["-r"]),
        ("copy SRC/f DIR/", vec![]),
        ("copy -a SRC DST", vec!["-a"]),
    ] {
        let case = dir.path().join(how.replace([' ', '/'], "_"));
        let dest = case.join("dst");
        std::fs::create_dir_all(&dest).unwrap();
        let target = case.join("target");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        symlink(&target, dest.join("f")).unwrap();
        let mut command = flexio();
        command.arg("copy").args(&args);
        match args.is_empty() {
            true => command
                .arg(source.join("f"))
                .arg(format!("{}/", dest.display())),
            false => command.arg(format!("{}/.", source.display())).arg(&dest),
        };
        let output = command.output().unwrap();
        assert!(output.status.success(), "{how}: {}", stderr(&output));
        let link = std::fs::symlink_metadata(dest.join("f")).unwrap();
        assert!(
            link.file_type().is_symlink(),
            "{how}: the link was replaced"
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"new bytes", "{how}");
        let expected_mode = if how.contains("-a") { 0o644 } else { 0o600 };
        assert_eq!(mode(&target), expected_mode, "{how}: the target's mode");
    }

    // A dangling link: refused, kept, and the other file still copied.
    let dest = dir.path().join("dangling");
    std::fs::create_dir(&dest).unwrap();
    symlink(dir.path().join("nothing-here"), dest.join("f")).unwrap();
    let output = flexio()
        .args(["copy", "-r"])
        .arg(format!("{}/.", source.display()))
        .arg(&dest)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("dangling"), "{}", stderr(&output));
    assert!(std::fs::symlink_metadata(dest.join("f"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(!dir.path().join("nothing-here").exists());
    assert_eq!(std::fs::read(dest.join("g")).unwrap(), b"other");
}
