//! The command line tried as a hostile user would (issue 12, part A): each
//! test is named after a failure that once corrupted data, handed out
//! privileges, lost a peer's data or misled, and checks the data, the exit
//! status and what is left in the directory. Reproductions go through
//! `sh -c` where the shell's redirections (`>>`, `1<>`, `>&-`) are the case.

use crate::common;

use common::{flexio, is_root, json_report, names, require_root, stderr, write_with_mode, Tmpfs};

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

const MECHANISMS: [&str; 7] = [
    "read-write",
    "mmap",
    "sendfile",
    "splice",
    "copy-file-range",
    "io-uring",
    "direct",
];

/// Runs `script` under `sh -c` with `$F` set to the flexio binary and the
/// working directory `dir`.
fn shell(dir: &Path, script: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("F", env!("CARGO_BIN_EXE_flexio"))
        .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
        .output()
        .unwrap()
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u64 * 31 + seed as u64) as u8 ^ (i >> 12) as u8)
        .collect()
}

#[test]
fn setuid_source_copied_by_root_is_not_a_root_setuid_file() {
    if !require_root("chown to nobody") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("suid");
    std::fs::write(&source, b"#!/bin/sh\n").unwrap();
    let nobody = 65534;
    std::os::unix::fs::chown(&source, Some(nobody), Some(nobody)).unwrap();
    std::fs::set_permissions(&source, std::fs::Permissions::from_mode(0o6755)).unwrap();
    let sink = dir.path().join("copy");
    let output = shell(dir.path(), "umask 022; $F copy -q suid copy");
    assert!(output.status.success(), "{}", stderr(&output));
    let meta = std::fs::metadata(&sink).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o755, "setuid and setgid dropped");
    assert_eq!(meta.uid(), 0);
    // The umask applies to a new file, as for cp.
    let output = shell(dir.path(), "umask 077; $F copy -q suid copy2");
    assert!(output.status.success(), "{}", stderr(&output));
    let mode = std::fs::metadata(dir.path().join("copy2")).unwrap().mode();
    assert_eq!(mode & 0o7777, 0o700);
}

#[test]
fn existing_destination_keeps_its_own_mode() {
    let dir = tempfile::tempdir().unwrap();
    write_with_mode(&dir.path().join("pub644"), b"public", 0o644);
    write_with_mode(&dir.path().join("private"), b"secret", 0o600);
    let output = shell(dir.path(), "$F copy -q pub644 private");
    assert!(output.status.success(), "{}", stderr(&output));
    let meta = std::fs::metadata(dir.path().join("private")).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600);
    assert_eq!(
        std::fs::read(dir.path().join("private")).unwrap(),
        b"public"
    );
    // Bits the umask would clear are kept too: the replacement is made
    // under the umask, so its mode is set once it is written.
    write_with_mode(&dir.path().join("shared"), b"old", 0o666);
    let output = shell(dir.path(), "umask 077; $F copy pub644 shared");
    assert!(output.status.success(), "{}", stderr(&output));
    let meta = std::fs::metadata(dir.path().join("shared")).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o666);
}

#[test]
fn root_replacing_a_users_file_keeps_its_owner_and_group() {
    if !require_root("chown the destination to nobody") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("src"), b"new").unwrap();
    std::fs::write(dir.path().join("theirs"), b"old").unwrap();
    std::os::unix::fs::chown(dir.path().join("theirs"), Some(65534), Some(65534)).unwrap();
    let output = shell(dir.path(), "$F copy -q src theirs");
    assert!(output.status.success(), "{}", stderr(&output));
    let meta = std::fs::metadata(dir.path().join("theirs")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    assert_eq!(std::fs::read(dir.path().join("theirs")).unwrap(), b"new");
}

#[test]
fn direct_into_an_appending_stdout_appends_without_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern((1 << 20) + 12345, 1);
    std::fs::write(dir.path().join("src"), &data).unwrap();
    for (label, args) in [
        ("direct", "--via direct"),
        ("io-uring --direct", "--via io-uring --direct"),
        ("auto --direct", "--direct"),
    ]
    .into_iter()
    .chain(MECHANISMS.iter().map(|m| (*m, "")))
    {
        let via = if args.is_empty() {
            format!("--via {label}")
        } else {
            args.to_string()
        };
        std::fs::write(dir.path().join("a"), b"head\n").unwrap();
        let output = shell(dir.path(), &format!("$F copy -q src - {via} >> a"));
        assert!(output.status.success(), "{label}: {}", stderr(&output));
        let mut expected = b"head\n".to_vec();
        expected.extend_from_slice(&data);
        let got = std::fs::read(dir.path().join("a")).unwrap();
        assert_eq!(got.len(), expected.len(), "{label}: length");
        assert!(got == expected, "{label}: content");
    }
}

#[test]
fn file_appended_onto_itself_through_stdout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(300_000, 2);
    std::fs::write(dir.path().join("f"), &data).unwrap();
    for mechanism in MECHANISMS {
        let output = shell(dir.path(), &format!("$F copy f - --via {mechanism} >> f"));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{mechanism}: {}",
            stderr(&output)
        );
        assert!(stderr(&output).contains("input file is output file"));
        assert_eq!(
            std::fs::read(dir.path().join("f")).unwrap(),
            data,
            "{mechanism}"
        );
    }
}

#[test]
fn file_copied_onto_an_overlapping_range_of_itself_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = pattern(3 << 20, 3);
    std::fs::write(dir.path().join("f"), &data).unwrap();
    for mechanism in MECHANISMS {
        let output = shell(
            dir.path(),
            &format!("$F copy f - --seek 1M --via {mechanism} 1<>f"),
        );
        assert_eq!(
            output.status.code(),
            Some(2),
            "{mechanism}: {}",
            stderr(&output)
        );
        assert_eq!(
            std::fs::read(dir.path().join("f")).unwrap(),
            data,
            "{mechanism}"
        );
        let output = flexio()
            .args(["copy", "--in-place", "--via", mechanism])
            .arg(dir.path().join("f"))
            .arg(dir.path().join("f"))
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{mechanism}: {}",
            stderr(&output)
        );
        assert_eq!(
            std::fs::read(dir.path().join("f")).unwrap(),
            data,
            "{mechanism}"
        );
    }
    // Ranges provably apart are fine: the first MiB after the file's end.
    let output = shell(dir.path(), "$F copy f - --length 1M --seek 3M 1<>f");
    assert!(output.status.success(), "{}", stderr(&output));
    let got = std::fs::read(dir.path().join("f")).unwrap();
    assert_eq!(&got[..3 << 20], &data[..]);
    assert_eq!(&got[3 << 20..], &data[..1 << 20]);
}

#[test]
fn usage_errors_are_found_before_the_network_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("src"), b"data").unwrap();
    // A listener that would hold a connecting peer: flexio must fail before
    // it accepts anything, so it must not even bind.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let cases: [(Vec<String>, &str); 3] = [
        (
            vec![
                "copy".into(),
                "tcp-listen://127.0.0.1:0".into(),
                dir.path().join("out").display().to_string(),
                "--seek".into(),
                "10".into(),
            ],
            "seek on a regular file needs in-place writing",
        ),
        (
            vec![
                "copy".into(),
                dir.path().join("src").display().to_string(),
                format!("tcp://127.0.0.1:{port}"),
                "--seek".into(),
                "10".into(),
            ],
            "seek needs a seekable sink",
        ),
        (
            vec![
                "copy".into(),
                format!("tcp://127.0.0.1:{port}"),
                dir.path().join("out").display().to_string(),
                "--offset".into(),
                "10".into(),
            ],
            "offset needs a seekable source",
        ),
    ];
    for (args, expected) in cases {
        let output = flexio().args(&args).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(expected),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            listener.accept().is_err(),
            "{args:?}: connected before checking its arguments"
        );
        assert!(!stderr(&output).contains("listening"), "{args:?}: bound");
    }
}

#[test]
fn ranges_that_overflow_are_usage_errors_up_front() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("src"), pattern(102_400, 4)).unwrap();
    for args in [
        vec!["--offset", "1", "--length", "18446744073709551615"],
        vec!["--seek", "18446744073709551615", "--in-place"],
        vec!["--offset", "18446744073709551615"],
    ] {
        std::fs::write(dir.path().join("out"), b"old").unwrap();
        let output = flexio()
            .arg("copy")
            .arg(dir.path().join("src"))
            .arg(dir.path().join("out"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(std::fs::read(dir.path().join("out")).unwrap(), b"old");
        assert_eq!(names(dir.path()), ["out", "src"], "{args:?}");
    }
}

#[test]
fn procfs_and_sysfs_files_are_read_to_their_end() {
    let dir = tempfile::tempdir().unwrap();
    for (source, mechanism) in [
        ("/proc/cpuinfo", "auto"),
        ("/proc/self/status", "read-write"),
        ("/proc/cpuinfo", "splice"),
        ("/sys/kernel/mm/transparent_hugepage/enabled", "auto"),
    ] {
        if !Path::new(source).exists() {
            common::skipped(&format!("{source} does not exist here"));
            continue;
        }
        let sink = dir.path().join("copy");
        let output = flexio()
            .args(["copy", "-q", "--via", mechanism, source])
            .arg(&sink)
            .output()
            .unwrap();
        assert!(output.status.success(), "{source}: {}", stderr(&output));
        let copied = std::fs::read(&sink).unwrap();
        assert!(!copied.is_empty(), "{source} copied as 0 bytes");
        // Generated files may change between reads (cpu MHz, VmRSS):
        // compare the shape, not every byte.
        let direct = std::fs::read(source).unwrap();
        assert_eq!(
            copied.iter().filter(|&&b| b == b'\n').count(),
            direct.iter().filter(|&&b| b == b'\n').count(),
            "{source}"
        );
    }
}

#[test]
fn dangling_symlink_destination_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("src"), b"data").unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("link")).unwrap();
    let output = shell(dir.path(), "$F copy src link");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("dangling symlink"));
    assert!(std::fs::symlink_metadata(dir.path().join("link"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(names(dir.path()), ["link", "src"]);
}

#[test]
fn live_symlink_destination_is_written_through_to_its_target() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("src"), b"new").unwrap();
    std::fs::write(dir.path().join("target"), b"old").unwrap();
    std::os::unix::fs::symlink("target", dir.path().join("link")).unwrap();
    let output = shell(dir.path(), "$F copy -q src link");
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::symlink_metadata(dir.path().join("link"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(dir.path().join("target")).unwrap(), b"new");
}

#[test]
fn read_only_destination_of_another_owner_is_refused() {
    if is_root() {
        // Root may write any file, and so does cp as root; the refusal is
        // for a user who could not open the file for writing.
        common::skipped("root may write a read-only file (as cp does)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("src"), b"new").unwrap();
    write_with_mode(&dir.path().join("ro"), b"old", 0o444);
    let output = shell(dir.path(), "$F copy src ro");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(std::fs::read(dir.path().join("ro")).unwrap(), b"old");
}

#[test]
fn read_only_destination_is_refused_for_an_unprivileged_user() {
    if !require_root("run flexio as the nobody user") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    write_with_mode(&dir.path().join("src"), b"new", 0o644);
    write_with_mode(&dir.path().join("ro"), b"old", 0o444);
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_flexio"))
        .arg("copy")
        .arg(dir.path().join("src"))
        .arg(dir.path().join("ro"))
        .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("Permission denied"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read(dir.path().join("ro")).unwrap(), b"old");
    assert_eq!(names(dir.path()), ["ro", "src"]);
}

#[test]
fn closed_stdout_or_stdin_is_an_error_not_dev_null() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("src"), b"data").unwrap();
    let output = shell(dir.path(), "$F copy src - >&-");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("stdout (closed when flexio started)"));
    let output = shell(dir.path(), "$F copy - out <&-");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("stdin (closed when flexio started)"));
    assert_eq!(names(dir.path()), ["src"]);
}

#[test]
fn missing_source_is_a_failure_at_run_time_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    for command in ["copy", "plan"] {
        let output = flexio()
            .arg(command)
            .arg(dir.path().join("nosuch"))
            .arg(dir.path().join("out"))
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(1),
            "{command}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("No such file or directory"),
            "{command}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn plan_refuses_a_file_onto_itself_as_copy_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), b"data").unwrap();
    for command in ["copy", "plan"] {
        let output = flexio()
            .arg(command)
            .arg(dir.path().join("f"))
            .arg(dir.path().join("f"))
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{command}: {}",
            stderr(&output)
        );
        assert!(stderr(&output).contains("same file"), "{command}");
    }
}

#[test]
fn direct_under_auto_chooses_a_mechanism_that_writes_directly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("src"), pattern(1 << 20, 5)).unwrap();
    let output = flexio()
        .args(["copy", "--direct", "--json"])
        .arg(dir.path().join("src"))
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let report = json_report(&output);
    let used = report["mechanism_used"].as_str().unwrap();
    // io-uring with O_DIRECT, or its fallback when the file system refuses
    // O_DIRECT — said in the report.
    assert!(
        used == "io-uring"
            || report["fallbacks"]
                .as_array()
                .is_some_and(|f| !f.is_empty()),
        "{report}"
    );
    assert!(report["decided_by"]
        .as_str()
        .unwrap()
        .contains("direct I/O"));
    assert_eq!(
        std::fs::read(dir.path().join("out")).unwrap(),
        pattern(1 << 20, 5)
    );
    // A mechanism that ignores O_DIRECT is not silently given it.
    let output = flexio()
        .args(["copy", "--direct", "--via", "sendfile"])
        .arg(dir.path().join("src"))
        .arg(dir.path().join("out2"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
}

#[test]
fn splice_into_a_full_file_system_names_the_sink() {
    if !require_root("mount a small tmpfs") {
        return;
    }
    let mount = Tmpfs::mount("1m");
    let output = shell(
        mount.path(),
        "mkdir -p small && head -c 4000000 /dev/zero | $F copy - small/out --via splice",
    );
    drop(mount);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("small/out"), "{message}");
    assert!(!message.contains("stdin"), "{message}");
}

/// Issue 24: `--tls CERT,KEY`, `--token-file` and `--ca` were read without
/// a bound: `/dev/zero` grew the process to 4 GB and a FIFO would hang it.
/// Each is refused at once, as the profile is: a regular file of sane size
/// only, named in the error.
#[test]
fn token_certificate_and_ca_files_that_are_not_small_regular_files_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    common::mkfifo(&fifo);
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    std::fs::write(served.join("f"), b"x").unwrap();
    for bad in [Path::new("/dev/zero"), fifo.as_path()] {
        let bad = bad.to_str().unwrap();
        let runs: [Vec<String>; 4] = [
            vec![
                "serve".into(),
                "--listen".into(),
                "127.0.0.1:0".into(),
                "--token-file".into(),
                bad.into(),
                served.display().to_string(),
            ],
            vec![
                "serve".into(),
                "--listen".into(),
                "127.0.0.1:0".into(),
                "--tls".into(),
                format!("{bad},{bad}"),
                served.display().to_string(),
            ],
            vec![
                "put".into(),
                "--token-file".into(),
                bad.into(),
                served.join("f").display().to_string(),
                "http://127.0.0.1:9/f".into(),
            ],
            vec![
                "get".into(),
                "--ca".into(),
                bad.into(),
                "https://127.0.0.1:9/f".into(),
                dir.path().join("out").display().to_string(),
            ],
        ];
        for args in runs {
            let started = std::time::Instant::now();
            let child = flexio()
                .args(&args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let output = common::wait_at_most(child, std::time::Duration::from_secs(30))
                .unwrap_or_else(|| panic!("{args:?} hung"));
            let message = stderr(&output);
            assert!(!output.status.success(), "{args:?}: {message}");
            assert!(message.contains(bad), "{args:?}: {message}");
            assert!(
                message.contains("not a regular file"),
                "{args:?}: {message}"
            );
            assert!(started.elapsed().as_secs() < 30, "{args:?}");
        }
    }
}

// ---- hostile servers for `flexio get` (issue 39) ----

/// A server on loopback whose every response is `answer(request head)`,
/// raw (status line, headers and body), on kept-alive connections.
fn hostile_server(
    answer: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static,
) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { return };
            let answer = std::sync::Arc::clone(&answer);
            std::thread::spawn(move || loop {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                if stream
                    .write_all(&answer(&String::from_utf8_lossy(&head)))
                    .is_err()
                {
                    return;
                }
            });
        }
    });
    address
}

/// A 200 response with `body`, framed by its Content-Length.
fn ok_with(body: &[u8]) -> Vec<u8> {
    let mut raw = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    raw.extend_from_slice(body);
    raw
}

/// A tree manifest of `entries`, as `flexio serve` writes one.
fn manifest_of(entries: serde_json::Value) -> Vec<u8> {
    serde_json::json!({"schema_version": 1, "chunk_size": 1 << 20, "entries": entries})
        .to_string()
        .into_bytes()
}

/// Issue 39: a hostile server's manifest of links each lexically inside
/// DEST that lead out of it through one another (`s -> .`, `t -> s/..`,
/// `u -> s/s/s/../../../..`, `d/v -> ../s/..`): `get` made `t` and `d/v`
/// and exited 0. Now none of them is made, each is warned of, and the
/// summary and the JSON count them.
#[test]
fn get_of_a_manifest_planting_a_link_chain_out_of_dest_makes_none_of_it() {
    let link = |path: &str, target: &str| {
        serde_json::json!({"path": path, "type": "symlink", "size": 0, "mode": 511, "mtime": 0,
            "mtime_nsec": 0, "link_target": target})
    };
    let manifest = manifest_of(serde_json::json!([
        {"path": "d", "type": "directory", "size": 0, "mode": 493, "mtime": 0, "mtime_nsec": 0},
        link("s", "."),
        link("t", "s/.."),
        link("u", "s/s/s/../../../.."),
        link("d/v", "../s/.."),
    ]));
    let address = hostile_server(move |head| {
        assert!(head.starts_with("GET /t/?manifest"), "{head}");
        ok_with(&manifest)
    });
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("dest");
    for json in [false, true] {
        let _ = std::fs::remove_dir_all(&dest);
        let output = flexio()
            .args(["get", &format!("http://{address}/t/")])
            .arg(&dest)
            .arg(if json { "--json" } else { "-v" })
            .output()
            .unwrap();
        let warnings = stderr(&output);
        assert_eq!(output.status.code(), Some(0), "{warnings}");
        for left_out in ["t", "u", "d/v"] {
            assert!(
                std::fs::symlink_metadata(dest.join(left_out)).is_err(),
                "{left_out} was made"
            );
            assert!(
                warnings.contains(&format!("flexio: warning: {left_out}: a symlink whose target leads, or through the tree's other links could lead, out of")),
                "{warnings}"
            );
        }
        assert_eq!(names(&dest), ["d", "s"]);
        assert_eq!(names(&dest.join("d")), Vec::<String>::new());
        assert_eq!(std::fs::read_link(dest.join("s")).unwrap(), Path::new("."));
        if json {
            let report = json_report(&output);
            assert_eq!(report["symlinks"], 1, "{report}");
            let mut escaping: Vec<&str> = report["escaping_links"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            escaping.sort();
            assert_eq!(escaping, ["d/v", "t", "u"]);
        } else {
            let summary = stderr(&output);
            assert!(
                summary.contains("1 symlink in")
                    && summary.contains("; 3 symlinks left out (pointing out of the destination)"),
                "{summary}"
            );
        }
    }
}

/// Issue 39: `get --timeout 10000000000000000000s` panicked (exit 101) on
/// `Instant + Duration` overflowing at its first deadline. A wait that
/// long is endless (or refused as a usage error by the flag's bound), and
/// the file arrives.
#[test]
fn get_with_a_timeout_past_the_clock_does_not_panic() {
    let address = hostile_server(|head| {
        assert!(head.starts_with("GET /f "), "{head}");
        ok_with(b"the file")
    });
    let dir = tempfile::tempdir().unwrap();
    let output = flexio()
        .args(["get", "--timeout", "10000000000000000000s"])
        .arg(format!("http://{address}/f"))
        .arg(dir.path().join("f"))
        .output()
        .unwrap();
    let err = stderr(&output);
    assert!(!err.contains("panicked"), "{err}");
    match output.status.code() {
        Some(0) => assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"the file"),
        Some(2) => assert!(err.contains("timeout"), "{err}"),
        other => panic!("exit {other:?}: {err}"),
    }
}
