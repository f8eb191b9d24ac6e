//! Every command the README shows a newcomer runs as shown: the install
//! block (less `cargo install`, the binary under test standing in for the
//! installed one) and each block of "First examples", in a directory
//! holding `big.iso` and `photos/`, with a free port for 8080.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

/// The ```sh blocks of the README section that starts with `heading`.
fn blocks(heading: &str) -> Vec<String> {
    let readme = include_str!("../../README.md");
    let start = readme
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let section = &readme[start + heading.len()..];
    let section = section.find("\n## ").map_or(section, |end| &section[..end]);
    section
        .split("```sh\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap().to_string())
        .collect()
}

/// Runs `script` with `sh -e` in `dir`, `flexio` on the PATH, and returns
/// its output; its process group (a server it started in the background
/// included) is ended afterwards.
fn run(script: &str, dir: &Path, home: &Path) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let binary = Path::new(env!("CARGO_BIN_EXE_flexio"));
    let path = format!(
        "{}:{}",
        binary.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("sh");
    command
        .args(["-ec", script])
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", home)
        .env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml")
        .stdin(Stdio::null())
        .process_group(0);
    flexio_sys::process::default_signal_actions(&mut command);
    // Files, not pipes: a server left running by a failed script would
    // hold a pipe open, and reading it to its end would never finish.
    let (stdout, stderr) = (tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap());
    let mut child = command
        .stdout(stdout.try_clone().unwrap())
        .stderr(stderr.try_clone().unwrap())
        .spawn()
        .unwrap();
    let group = rustix::process::Pid::from_child(&child);
    let status = child.wait().unwrap();
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
    let read = |mut file: std::fs::File| {
        use std::io::{Read, Seek};
        let mut bytes = Vec::new();
        file.rewind().unwrap();
        file.read_to_end(&mut bytes).unwrap();
        bytes
    };
    std::process::Output {
        status,
        stdout: read(stdout),
        stderr: read(stderr),
    }
}

use flexio_testkit::free_port;

fn fixture(dir: &Path) {
    std::fs::write(dir.join("big.iso"), vec![7u8; 3 << 20]).unwrap();
    std::fs::create_dir_all(dir.join("photos/2024")).unwrap();
    std::fs::write(dir.join("photos/beach.jpg"), b"not really a jpeg").unwrap();
    std::fs::write(dir.join("photos/2024/a.jpg"), b"nor this").unwrap();
}

fn has(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

#[test]
fn every_first_example_runs_as_shown() {
    let examples = blocks("## First examples");
    assert_eq!(examples.len(), 5, "{examples:?}");
    for example in examples {
        if example.contains("curl ") && !has("curl") {
            common::skipped(&format!("curl is not installed, for:\n{example}"));
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        fixture(dir.path());
        let script = example.replace("8080", &free_port().to_string());
        let output = run(&script, dir.path(), dir.path());
        assert!(
            output.status.success(),
            "{example}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            common::stderr(&output)
        );
        let at = |p: &str| dir.path().join(p);
        if example.contains("copy -a") {
            assert_eq!(std::fs::read(at("backup/2024/a.jpg")).unwrap(), b"nor this");
        } else if example.contains("copy big.iso") {
            assert_eq!(
                std::fs::read(at("big-copy.iso")).unwrap(),
                vec![7u8; 3 << 20]
            );
            // Silent first (not a terminal); the report on stderr second.
            assert_eq!(output.stdout, b"");
            assert!(common::stderr(&output).contains("mechanism"));
        } else if example.contains("curl -sO") {
            assert_eq!(
                std::fs::read(at("beach.jpg")).unwrap(),
                b"not really a jpeg"
            );
        } else if example.contains("flexio get") {
            assert_eq!(
                std::fs::read(at("photos-fetched/2024/a.jpg")).unwrap(),
                b"nor this"
            );
        } else if example.contains("flexio bench") {
            assert!(at("bench-out/report.md").is_file());
            assert!(at("bench-out/results.json").is_file());
            // The verdict first and short, with where the tables went.
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(stdout.starts_with("== verdict ==\n"), "{stdout}");
            assert!(stdout.contains("bench-out/report.md"), "{stdout}");
            assert!(stdout.lines().count() <= 8, "{stdout}");
        } else {
            panic!("an example this test does not check: {example}");
        }
    }
}

#[test]
fn the_install_block_installs_completions_and_the_man_page() {
    let [install] = &blocks("## Install")[..] else {
        panic!("one sh block under Install");
    };
    assert!(install.starts_with("cargo install --path flexio-cli"));
    let script: String = install
        .lines()
        .filter(|line| !line.starts_with("cargo install"))
        .map(|line| line.to_string() + "\n")
        .collect();
    let home = tempfile::tempdir().unwrap();
    let output = run(&script, home.path(), home.path());
    assert!(output.status.success(), "{}", common::stderr(&output));
    let completions = home
        .path()
        .join(".local/share/bash-completion/completions/flexio");
    assert!(std::fs::read_to_string(completions)
        .unwrap()
        .contains("flexio"));
    let page = home.path().join(".local/share/man/man1/flexio.1");
    assert!(std::fs::read_to_string(page)
        .unwrap()
        .contains(".TH flexio 1"));
}
