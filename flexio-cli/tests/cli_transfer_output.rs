//! What `get` and `put` print, with `copy`'s habits: nothing when stdout
//! is not a terminal (`get | cat`), the summary on stderr with `-v`, and
//! progress (bytes, rate, ETA, files) counted from the transfer itself.

use std::path::Path;

use crate::common;

use common::{flexio, stderr};

const TOKEN: &str = "cli-token-0123456789abcdef";

/// A served directory with a file `f.bin` of `length` bytes and a tree
/// `t/` of three files (as many bytes together, about), taking uploads with a token; `extra` for serve.
struct Setup {
    _server: common::Serving,
    url: String,
    served: tempfile::TempDir,
    work: tempfile::TempDir,
}

fn setup(length: usize, extra: &[&str]) -> Setup {
    let served = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let token = work.path().join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let bytes: Vec<u8> = (0..length).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(served.path().join("f.bin"), &bytes).unwrap();
    std::fs::create_dir_all(served.path().join("t/sub")).unwrap();
    for (name, share) in [("t/a", 2), ("t/b", 3), ("t/sub/c", 6)] {
        std::fs::write(served.path().join(name), &bytes[..length / share]).unwrap();
    }
    let mut args = vec!["--token-file", token.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (server, url) = common::serve(served.path(), &args);
    Setup {
        _server: server,
        url,
        served,
        work,
    }
}

fn put(setup: &Setup, source: &Path, target: &str) -> std::process::Command {
    let mut command = flexio();
    command
        .arg("put")
        .arg(source)
        .arg(format!("{}/{target}", setup.url))
        .arg("--token-file")
        .arg(setup.work.path().join("token"));
    command
}

/// Runs `command` with stdout and stderr pipes (no terminal): its output.
fn piped(command: &mut std::process::Command) -> std::process::Output {
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

#[test]
fn get_and_put_into_a_pipe_print_nothing_and_v_prints_the_summary_on_stderr() {
    let setup = setup(1 << 20, &[]);
    let out = setup.work.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for verbose in [false, true] {
        let tag = if verbose { "v" } else { "quiet" };
        let runs = [
            piped(
                flexio()
                    .arg("get")
                    .args(verbose.then_some("-v"))
                    .arg(format!("{}/f.bin", setup.url))
                    .arg(out.join(format!("f-{tag}"))),
            ),
            piped(
                flexio()
                    .arg("get")
                    .args(verbose.then_some("-v"))
                    .arg(format!("{}/t/", setup.url))
                    .arg(out.join(format!("t-{tag}"))),
            ),
            piped(
                put(
                    &setup,
                    &setup.served.path().join("f.bin"),
                    &format!("up-{tag}.bin"),
                )
                .args(verbose.then_some("-v")),
            ),
            piped(
                put(
                    &setup,
                    &setup.served.path().join("t"),
                    &format!("up-{tag}/"),
                )
                .args(verbose.then_some("-v")),
            ),
        ];
        for (run, said) in
            runs.iter()
                .zip(["1.00 MiB in", "3 files fetched", "(created)", "3 files"])
        {
            assert!(
                run.stdout.is_empty(),
                "stdout: {}",
                String::from_utf8_lossy(&run.stdout)
            );
            match verbose {
                false => assert!(run.stderr.is_empty(), "stderr: {}", stderr(run)),
                true => assert!(
                    stderr(run).contains(said),
                    "{said:?} not in {}",
                    stderr(run)
                ),
            }
        }
    }
    assert!(
        std::fs::read(out.join("f-quiet")).unwrap()
            == std::fs::read(setup.served.path().join("f.bin")).unwrap()
    );
}

/// The `flexio: ...` progress lines `--progress` prints without a
/// terminal.
fn progress_lines(output: &std::process::Output) -> Vec<String> {
    stderr(output)
        .lines()
        .filter(|line| line.starts_with("flexio: ") && line.contains(" of "))
        .map(str::to_string)
        .collect()
}

/// The `(N%)` of a progress line.
fn percent(line: &str) -> u64 {
    let (_, after) = line.split_once(" (").expect("a percentage");
    after.split('%').next().unwrap().parse().expect("a number")
}

#[test]
fn progress_counts_the_bytes_and_files_of_paced_gets_and_puts() {
    // 3 MiB at 1 MiB/s: about 3 s, so lines come at 1 s and 3 s.
    let setup = setup(3 << 20, &["--rate-per-client", "1M"]);
    let out = setup.work.path().join("out");
    std::fs::create_dir(&out).unwrap();

    let got = piped(
        flexio()
            .args(["get", "--progress", "--streams", "1"])
            .arg(format!("{}/f.bin", setup.url))
            .arg(out.join("f.bin")),
    );
    let lines = progress_lines(&got);
    assert!(!lines.is_empty(), "no progress line: {}", stderr(&got));
    assert!(lines[0].contains("of 3.00 MiB ("), "{lines:?}");
    assert!(percent(&lines[0]) > 0, "{lines:?}");
    assert!(got.stdout.is_empty());

    let put_out =
        piped(put(&setup, &out.join("f.bin"), "back.bin").args(["--progress", "--rate", "1M"]));
    let lines = progress_lines(&put_out);
    assert!(!lines.is_empty(), "no progress line: {}", stderr(&put_out));
    assert!(lines[0].contains("of 3.00 MiB ("), "{lines:?}");
    assert!(percent(&lines[0]) > 0, "{lines:?}");

    let tree = piped(
        flexio()
            .args(["get", "--progress", "--streams", "1"])
            .arg(format!("{}/t/", setup.url))
            .arg(out.join("t")),
    );
    let lines = progress_lines(&tree);
    assert!(!lines.is_empty(), "no progress line: {}", stderr(&tree));
    assert!(lines[0].contains(" of 3 files, "), "{lines:?}");
    assert!(percent(&lines[0]) > 0, "{lines:?}");
}
