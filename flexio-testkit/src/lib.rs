//! What flexio's tests share, in one crate that only tests depend on
//! (`publish = false`, a dev-dependency everywhere):
//!
//! - skips that say why: [`require_root`], [`require_feature`] and
//!   [`require_tool`] skip with a printed `skipped: TEST: REASON` line, and
//!   fail instead under `FLEXIO_TEST_PRIVILEGED=1` (`.ci/run`, as root,
//!   with its tools installed); [`optional_tool`] skips even then, for the
//!   peers CI does not install or hides (`.ci/without-peers`);
//! - [`free_port`], and [`wait_until`] for waiting on a condition instead
//!   of sleeping for a guessed time;
//! - [`http`], the small raw HTTP client that says exactly what goes on
//!   the wire;
//! - [`architecture`], the workspace's one layers-and-circles check.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod architecture;
pub mod http;
mod skip;

pub use skip::{
    is_root, optional_tool, require_device, require_feature, require_root, require_tool, skipped,
    skips_forbidden, tool_runs, CI_TOOLS, DEVICE_ENV, PRIVILEGED_ENV,
};

use std::time::{Duration, Instant};

/// A TCP port on 127.0.0.1 that was free a moment ago (bound, read, and
/// released), for a peer that must be told its port before it starts.
///
/// # Panics
///
/// When no loopback port can be bound at all.
///
/// # Examples
///
/// ```
/// let port = flexio_testkit::free_port();
/// assert_ne!(port, 0);
/// ```
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("bind a port on 127.0.0.1")
}

pub use flexio_sys::process::listens_on;

/// Polls `condition` every 10 ms until it holds (`true`) or `timeout`
/// passes (`false`): a wait on what the test needs, where a fixed sleep
/// would guess how long it takes. The timeout bounds a busy machine; it is
/// not a measure.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let start = std::time::Instant::now();
/// assert!(flexio_testkit::wait_until(
///     || start.elapsed() > Duration::from_millis(30),
///     Duration::from_secs(5),
/// ));
/// assert!(!flexio_testkit::wait_until(|| false, Duration::from_millis(20)));
/// ```
pub fn wait_until(mut condition: impl FnMut() -> bool, timeout: Duration) -> bool {
    let started = Instant::now();
    loop {
        if condition() {
            return true;
        }
        if started.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What process `pid` has written so far, in bytes (`wchar` in
/// `/proc/PID/io`: what it sent with `write` or `sendfile`, a server's
/// bodies; not what it moved with `splice`, so ask the sending side); 0
/// when that cannot be read. For waiting until a transfer is midway,
/// instead of sleeping for as long as it should take.
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// let before = flexio_testkit::bytes_written_by(std::process::id());
/// std::io::sink().write_all(b"not counted").unwrap();
/// let mut file = tempfile::tempfile().unwrap();
/// file.write_all(&[0; 4096]).unwrap();
/// assert!(flexio_testkit::bytes_written_by(std::process::id()) >= before + 4096);
/// ```
pub fn bytes_written_by(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|line| line.strip_prefix("wchar: "))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The name libtest gives test `test` written in the module at
/// `module_path` (`module_path!()` there): that path without the test
/// crate's own name, as `--exact` wants it when a test runs itself again
/// in a child process. A test file may be a test binary of its own or a
/// module of one.
///
/// # Examples
///
/// ```
/// use flexio_testkit::test_name;
/// assert_eq!(test_name("engine::engine_faults", "cut"), "engine_faults::cut");
/// assert_eq!(test_name("tree_copy", "cut"), "cut");
/// ```
pub fn test_name(module_path: &str, test: &str) -> String {
    match module_path.split_once("::") {
        Some((_crate, module)) => format!("{module}::{test}"),
        None => test.to_string(),
    }
}

/// How many files directly in `dir` this process holds open (an unnamed
/// `O_TMPFILE` there included): for waiting until a server in the test's
/// process has begun on a file.
///
/// # Examples
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let file = std::fs::File::create(dir.path().join("f")).unwrap();
/// assert_eq!(flexio_testkit::files_open_in(dir.path()), 1);
/// drop(file);
/// assert_eq!(flexio_testkit::files_open_in(dir.path()), 0);
/// ```
pub fn files_open_in(dir: &std::path::Path) -> usize {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.parent() == Some(dir))
        .count()
}
