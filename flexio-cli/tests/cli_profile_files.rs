//! The profile as a hostile user points it at the wrong thing (issue 12,
//! A2, A3, A9): devices and FIFOs are never replaced, never streamed into
//! memory and never waited on, and a parameter out of its bounds is a usage
//! error, from a flag or from a profile, before anything is allocated.
//!
//! Tests that need root (making a character device) skip with a printed
//! reason, unless `FLEXIO_TEST_PRIVILEGED=1` makes the skip a failure.

use crate::common;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use flexio::profile::{Fingerprint, FlowKind, FlowProfile, Profile, RangeEntry};
use flexio::MechanismName;

/// Long enough for a debug build on a loaded 2-core machine; a hang is
/// forever.
const DEADLINE: Duration = Duration::from_secs(60);

fn flexio(profile: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_flexio"));
    command.env("FLEXIO_PROFILE", profile);
    command
}

/// Runs `command` to its end or kills it at [`DEADLINE`] and fails.
fn run_bounded(mut command: Command) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > DEADLINE {
            child.kill().unwrap();
            let output = child.wait_with_output().unwrap();
            panic!(
                "flexio still running after {DEADLINE:?}; stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A valid profile for this machine: file → file by read-write, 64 KiB
/// chunks, every size.
fn good_profile(dir: &Path) -> PathBuf {
    let mut profile = Profile::new(Fingerprint::of_this_machine(dir), dir);
    profile.flows.push(FlowProfile {
        kind: FlowKind::FileToFile,
        ranges: vec![RangeEntry {
            copy_kernel: Default::default(),
            min_bytes: 0,
            max_bytes: None,
            mechanism: MechanismName::ReadWrite,
            chunk: 64 << 10,
            queue_depth: 32,
            pipe_size: 1 << 20,
            direct: false,
            throughput_bytes_per_s: 1 << 30,
            spread: 0.01,
            measured_at: vec![4096],
        }],
        curves: Vec::new(),
    });
    let path = dir.join("good.toml");
    profile.save(&path).unwrap();
    path
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A character device like /dev/full (1, 7) made inside `dir`, so that a
/// regression replaces a scratch node and never the real /dev/full; `None`
/// (with the reason printed) when not root.
fn scratch_char_device(dir: &Path) -> Option<PathBuf> {
    let path = dir.join("full");
    let made = Command::new("mknod")
        .arg(&path)
        .args(["c", "1", "7"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if made {
        return Some(path);
    }
    if common::require_root("making a character device") {
        panic!("mknod failed as root");
    }
    None
}

fn is_char_device(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_char_device()
}

/// What is in `dir` besides `keep`: temporary files left behind show here.
fn leftovers(dir: &Path, keep: &[&str]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !keep.contains(&name.as_str()))
        .collect()
}

#[test]
fn profile_export_refuses_a_char_device() {
    let dir = tempfile::tempdir().unwrap();
    let profile = good_profile(dir.path());
    let Some(device) = scratch_char_device(dir.path()) else {
        return;
    };
    let mut command = flexio(&profile);
    command.args(["profile", "export"]).arg(&device);
    let output = run_bounded(command);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is a character device, not a regular file"),
        "{}",
        stderr(&output)
    );
    assert!(is_char_device(&device), "the device node is still there");
    assert_eq!(leftovers(dir.path(), &["good.toml", "full"]), [""; 0]);
}

#[test]
fn profile_import_refuses_a_char_device_as_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_profile(dir.path());
    let Some(device) = scratch_char_device(dir.path()) else {
        return;
    };
    let mut command = flexio(&device);
    command.args(["profile", "import"]).arg(&good);
    let output = run_bounded(command);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("character device"),
        "{}",
        stderr(&output)
    );
    assert!(is_char_device(&device));
    assert_eq!(leftovers(dir.path(), &["good.toml", "full"]), [""; 0]);
}

#[test]
fn profile_export_and_import_refuse_a_fifo_and_leave_it() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_profile(dir.path());
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let mut export = flexio(&good);
    export.args(["profile", "export"]).arg(&fifo);
    let mut import = flexio(&fifo);
    import.args(["profile", "import"]).arg(&good);
    for command in [export, import] {
        let output = run_bounded(command);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains("a FIFO"), "{}", stderr(&output));
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(kind.is_fifo(), "the FIFO is still a FIFO");
    }
    // A regular file is still replaced, and a link to one written through.
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink("exported.toml", &link).unwrap();
    std::fs::write(dir.path().join("exported.toml"), "old").unwrap();
    let mut export = flexio(&good);
    export.args(["profile", "export"]).arg(&link);
    let output = run_bounded(export);
    assert!(output.status.success(), "{}", stderr(&output));
    let exported = std::fs::read_to_string(dir.path().join("exported.toml")).unwrap();
    assert_eq!(exported, std::fs::read_to_string(&good).unwrap());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// Copies a 64 KiB file with `FLEXIO_PROFILE=profile` and checks that the
/// copy is whole and that a warning naming the profile was printed.
fn copy_warns_and_proceeds(profile: &Path, says: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (source, sink) = (dir.path().join("a"), dir.path().join("b"));
    let data: Vec<u8> = (0..64 << 10).map(|i: u32| (i % 251) as u8).collect();
    std::fs::write(&source, &data).unwrap();
    let mut command = flexio(profile);
    command.args(["copy", "-q"]).arg(&source).arg(&sink);
    let output = run_bounded(command);
    assert!(output.status.success(), "{}", stderr(&output));
    let warning = stderr(&output);
    assert!(warning.contains("warning"), "{warning}");
    assert!(
        warning.contains(&profile.display().to_string()),
        "{warning}"
    );
    assert!(warning.contains(says), "{warning}");
    assert!(warning.contains("using the built-in table"), "{warning}");
    assert_eq!(std::fs::read(&sink).unwrap(), data);
}

#[test]
fn profile_from_dev_zero_is_refused_and_copy_proceeds() {
    copy_warns_and_proceeds(Path::new("/dev/zero"), "is a character device");
}

#[test]
fn profile_from_a_fifo_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("profile.fifo");
    mkfifo(&fifo);
    copy_warns_and_proceeds(&fifo, "is a FIFO");
}

#[test]
fn profile_larger_than_its_cap_is_refused_and_copy_proceeds() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.toml");
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(flexio::profile::MAX_PROFILE_BYTES + 1)
        .unwrap();
    copy_warns_and_proceeds(&huge, "more than");
}

#[test]
fn chunk_of_one_tebibyte_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let (source, sink) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&source, vec![7u8; 100_000]).unwrap();
    let mut command = flexio(&dir.path().join("none.toml"));
    command
        .args(["copy", "--via", "direct", "--chunk", "1T"])
        .arg(&source)
        .arg(&sink);
    let output = run_bounded(command);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--chunk 1.00 TiB is above its bound, 1.00 GiB"),
        "{}",
        stderr(&output)
    );
    assert_eq!(leftovers(dir.path(), &["a"]), [""; 0], "no temp, no sink");
}

#[test]
fn io_uring_chunk_of_5g_from_a_pipe_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let sink = dir.path().join("b");
    let mut command = flexio(&dir.path().join("none.toml"));
    command
        .args(["copy", "--via", "io-uring", "--chunk", "5G", "-"])
        .arg(&sink);
    let output = run_bounded(command);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--chunk 5.00 GiB is above its bound"),
        "{}",
        stderr(&output)
    );
    assert_eq!(leftovers(dir.path(), &[]), [""; 0]);
}

#[test]
fn queue_depth_and_pipe_size_flags_out_of_bounds_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("a");
    std::fs::write(&source, b"hello").unwrap();
    for (flag, value, says) in [
        (
            "--queue-depth",
            "0",
            "--queue-depth 0 is below its bound, 1",
        ),
        (
            "--queue-depth",
            "5000",
            "--queue-depth 5000 is above its bound, 4096",
        ),
        (
            "--pipe-size",
            "3G",
            "--pipe-size 3.00 GiB is above its bound, 2.00 GiB",
        ),
        ("--chunk", "0", "--chunk 0 B is below its bound, 1 B"),
    ] {
        let mut command = flexio(&dir.path().join("none.toml"));
        command
            .args(["copy", flag, value])
            .arg(&source)
            .arg(dir.path().join("b"));
        let output = run_bounded(command);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}");
        assert!(stderr(&output).contains(says), "{}", stderr(&output));
    }
}

#[test]
fn profile_range_with_huge_chunk_fails_validate() {
    let dir = tempfile::tempdir().unwrap();
    let good = good_profile(dir.path());
    let text = std::fs::read_to_string(&good).unwrap();
    let huge = text.replacen("chunk = 65536", "chunk = 1099511627776", 1);
    assert_ne!(huge, text, "the sample profile names its chunk");
    let path = dir.path().join("huge-chunk.toml");
    std::fs::write(&path, huge).unwrap();

    let mut validate = flexio(&path);
    validate.args(["profile", "validate"]);
    let output = run_bounded(validate);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("file-to-file range 0: chunk 1.00 TiB is above its bound, 1.00 GiB"),
        "{}",
        stderr(&output)
    );
    // And `auto` refuses it with a warning instead of aborting the copy.
    copy_warns_and_proceeds(&path, "chunk 1.00 TiB is above its bound");
}

#[test]
fn tune_refuses_a_fifo_as_the_profile_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("profile.fifo");
    mkfifo(&fifo);
    let mut command = flexio(&fifo);
    command.args(["tune", "--quiet", "--dir"]).arg(dir.path());
    let output = run_bounded(command);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("is a FIFO"), "{}", stderr(&output));
    assert!(
        !stderr(&output).contains("flexio tune ("),
        "refused before the sweep: {}",
        stderr(&output)
    );
    assert_eq!(leftovers(dir.path(), &["profile.fifo"]), [""; 0]);
}

/// Issue 24: run as another user with `HOME=/root` (as `sudo -u` leaves
/// it), a copy warned "Permission denied" about a profile that does not
/// exist. A default profile out of this user's reach is no profile of
/// theirs: the built-in table, silently; a profile the user names still
/// earns the warning.
#[test]
fn another_users_home_is_no_profile_and_no_warning() {
    if !common::require_root("running as another user") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".config/flexio")).unwrap();
    std::fs::write(home.path().join(".config/flexio/profile.toml"), "x").unwrap();
    // The home is root's only (0700), as /root is.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(work.path().join("a"), b"bytes").unwrap();
    let as_nobody = |extra: &[&str]| {
        let output = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_flexio"))
            .args(extra)
            .args(["copy", "a", "b"])
            .current_dir(work.path())
            .env_remove("FLEXIO_PROFILE")
            .env_remove("XDG_CONFIG_HOME")
            .env("HOME", home.path())
            .output()
            .unwrap();
        let _ = std::fs::remove_file(work.path().join("b"));
        output
    };
    let output = as_nobody(&[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("warning"), "{}", stderr(&output));
    // Named, the same unreachable profile is worth a warning.
    let named = home.path().join(".config/flexio/profile.toml");
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_flexio"))
        .args(["copy", "a", "c", "--profile"])
        .arg(&named)
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(stderr(&output).contains("warning"), "{}", stderr(&output));
}
