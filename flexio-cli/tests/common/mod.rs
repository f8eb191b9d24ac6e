//! What the command-line tests share: the binary under test, run without
//! a developer's tuned profile; root checks that skip with a reason (or
//! fail under `FLEXIO_TEST_PRIVILEGED=1`); directory listings; FIFOs.

// Each test crate uses a different part of this module.
#![allow(dead_code, unused_imports)]

use std::path::Path;
use std::process::{Command, Output};

/// `flexio`, never consulting a profile a developer tuned on this machine,
/// and dying of SIGHUP, SIGINT and SIGTERM as on a terminal even when the
/// tests run under `nohup` or in the background (the signal tests count
/// on it).
pub fn flexio() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_flexio"));
    command.env("FLEXIO_PROFILE", "/nonexistent/flexio-profile.toml");
    flexio_sys::process::default_signal_actions(&mut command);
    command
}

/// What a run printed on stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The JSON report a successful run printed on stdout; a failed run
/// fails the test with its stderr.
pub fn json_report(output: &Output) -> serde_json::Value {
    assert!(output.status.success(), "{}", stderr(output));
    serde_json::from_slice(&output.stdout).expect("a JSON report on stdout")
}

/// The names in `dir`, sorted; temporary files would show up here.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub use flexio_testkit::{
    free_port, is_root, optional_tool, require_feature, require_root, require_tool, skipped,
};

/// Writes `bytes` to `path` and gives it permission bits `mode`.
pub fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Makes a FIFO at `path`.
pub fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// A tmpfs of a given size mounted on a fresh directory, unmounted when
/// dropped (also when the test panics). Needs root.
pub struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=` takes it).
    pub fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "mount -t tmpfs");
        Tmpfs(dir)
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// Waits for `child` at most `limit`; kills it and returns `None` when it
/// is still running then (a hang).
pub fn wait_at_most(mut child: std::process::Child, limit: std::time::Duration) -> Option<Output> {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Waits for `done` (polled every 10 ms); fails with `why` after 60 s (a
/// bound for a busy machine, not a measure).
pub fn wait_until(why: &str, done: impl FnMut() -> bool) {
    assert!(
        flexio_testkit::wait_until(done, std::time::Duration::from_secs(60)),
        "{why}"
    );
}

/// Runs the shell `script` with `dir` as `$1` (certificates made with
/// openssl, say); `false`, printing that the test skipped for `lacking`,
/// when it fails.
pub fn script_in(dir: &Path, script: &str, lacking: &str) -> bool {
    match Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(dir)
        .status()
    {
        Ok(status) if status.success() => true,
        _ => {
            skipped(lacking);
            false
        }
    }
}

/// A `flexio serve`, killed and reaped when dropped.
pub struct Serving(pub std::process::Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `flexio serve DIR EXTRA...` (on loopback port 0 unless EXTRA
/// says otherwise) and returns it with its base URL, without the final
/// `/`, read from the line it prints first.
pub fn serve(dir: &Path, extra: &[&str]) -> (Serving, String) {
    use std::io::BufRead;
    let mut child = flexio()
        .arg("serve")
        .arg(dir)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with("http://") || word.starts_with("https://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .trim_end_matches('/')
        .to_string();
    (Serving(child), url)
}

/// Every entry below `root` as (path, what it is): file bytes, a
/// symlink's target, a directory's mode.
pub fn tree_contents(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut found = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.file_type().is_symlink() {
                std::fs::read_link(&path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if meta.is_dir() {
                stack.push(path.clone());
                format!(
                    "dir {:o}",
                    std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777
                )
                .into_bytes()
            } else {
                std::fs::read(&path).unwrap()
            };
            found.insert(name, what);
        }
    }
    found
}

/// The network namespaces of the bench with process id `pid` whose names
/// start with `prefix`, as `ip netns list` shows them.
pub fn namespaces_of(prefix: &str, pid: u32) -> Vec<String> {
    let listed = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with(prefix) && name.ends_with(&format!("-{pid}")))
        .map(str::to_string)
        .collect()
}

/// What `flexio bench --exhibit NAME...` left: its process id (for what
/// it may have left behind), its output and seeds.md.
pub struct ExhibitRun {
    pub pid: u32,
    pub output: Output,
    pub md: String,
}

/// `flexio bench --exhibit NAME...` with one counted round, its data in
/// `dir` and its report in `dir/out`; fails the test unless it succeeds.
pub fn run_exhibits(dir: &Path, names: &[&str]) -> ExhibitRun {
    let out = dir.join("out");
    let mut command = flexio();
    command.arg("bench");
    for name in names {
        command.args(["--exhibit", name]);
    }
    let child = command
        .args(["--runs", "1", "--quiet", "--dir"])
        .arg(dir)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let md = std::fs::read_to_string(out.join("seeds.md")).unwrap();
    ExhibitRun { pid, output, md }
}
