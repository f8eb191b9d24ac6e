//! Skips that say why, and that CI turns into failures where it promised
//! the test would run.

use std::process::{Command, Stdio};

/// Set to `1` (as `.ci/run` does) to make a skip for root, a kernel
/// feature or a tool CI installs a failure.
pub const PRIVILEGED_ENV: &str = "FLEXIO_TEST_PRIVILEGED";

/// The programs a test may insist on, each with the Debian package that
/// `.ci/run` installs it from: under `FLEXIO_TEST_PRIVILEGED=1` a missing
/// one fails the test. Any other program (lftp, rclone, aria2c, apache2,
/// lighttpd, caddy, stress, python3, and the peers `.ci/without-peers`
/// hides: nginx, iperf3, socat, fio, wrk, rsync, nc, pv...) is an
/// [`optional_tool`]. A test of this crate checks the list against
/// `.ci/run` and `.ci/without-peers`.
pub const CI_TOOLS: [(&str, &str); 14] = [
    ("curl", "curl"),
    ("wget", "wget"),
    ("tar", "tar"),
    ("losetup", "util-linux"),
    ("mkfs.ext4", "e2fsprogs"),
    ("mkfs.xfs", "xfsprogs"),
    ("ip", "iproute2"),
    ("gcc", "gcc"),
    ("readelf", "binutils"),
    ("ssh", "openssh-client"),
    ("sbatch", "slurm-wlm"),
    ("lftp", "lftp"),
    ("rclone", "rclone"),
    ("stress", "stress"),
];

/// Whether skips are forbidden on this run (`FLEXIO_TEST_PRIVILEGED=1`).
pub fn skips_forbidden() -> bool {
    std::env::var(PRIVILEGED_ENV).as_deref() == Ok("1")
}

/// Set to `1` on a machine with a GPU (the device check's script does) to
/// make a device test's skip a failure. Not `FLEXIO_TEST_PRIVILEGED`: CI
/// runs as root on machines without a GPU.
pub const DEVICE_ENV: &str = "FLEXIO_TEST_DEVICE";

/// `true` when `probe` found a usable device; otherwise prints `skipped:
/// TEST: a GPU: WHY` and returns `false`.
///
/// # Panics
///
/// When the probe failed under `FLEXIO_TEST_DEVICE=1`.
///
/// # Examples
///
/// ```
/// let probe: Result<(), String> = Err("no CUDA driver".into());
/// if std::env::var("FLEXIO_TEST_DEVICE").as_deref() != Ok("1") {
///     assert!(!flexio_testkit::require_device(probe));
/// }
/// ```
pub fn require_device(probe: Result<(), String>) -> bool {
    match probe {
        Ok(()) => true,
        Err(why) if std::env::var(DEVICE_ENV).as_deref() == Ok("1") => {
            panic!("{DEVICE_ENV}=1 forbids skipping: a GPU: {why}")
        }
        Err(why) => {
            skipped(&format!("a GPU: {why}"));
            false
        }
    }
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Says that the running test skipped, and why, on stderr past the
/// harness's capture: `cargo test` counts a skipped test as passed, and
/// this line (`skipped: TEST: REASON`, TEST the running thread's name,
/// which libtest sets to the test's) is how a reader tells them apart.
/// `.ci/run` counts these lines in its summary.
///
/// # Examples
///
/// ```
/// flexio_testkit::skipped("no frobnicator here");
/// ```
pub fn skipped(reason: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let line = format!("skipped: {test}: {reason}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Skips (`false`, with the reason printed) or, where skipping is
/// forbidden, panics saying so.
fn skip_or_fail(reason: &str) -> bool {
    assert!(
        !skips_forbidden(),
        "{reason}, and {PRIVILEGED_ENV}=1 forbids skipping it"
    );
    skipped(reason);
    false
}

/// `true` as root; otherwise prints `skipped: TEST: REASON (needs root)`
/// and returns `false`.
///
/// # Panics
///
/// When not root under `FLEXIO_TEST_PRIVILEGED=1`.
///
/// # Examples
///
/// ```no_run
/// if !flexio_testkit::require_root("a loop device") {
///     return;
/// }
/// ```
pub fn require_root(reason: &str) -> bool {
    is_root() || skip_or_fail(&format!("{reason} (needs root)"))
}

/// `true` when `probe` found the kernel feature; otherwise prints
/// `skipped: TEST: WHAT: WHY` and returns `false`.
///
/// # Panics
///
/// When the probe failed under `FLEXIO_TEST_PRIVILEGED=1`.
///
/// # Examples
///
/// ```
/// assert!(flexio_testkit::require_feature("pipes", Ok(())));
/// ```
pub fn require_feature(what: &str, probe: Result<(), String>) -> bool {
    match probe {
        Ok(()) => true,
        Err(why) => skip_or_fail(&format!("{what}: {why}")),
    }
}

/// Whether `program` can be started (`program --version`; a non-zero exit
/// still counts: the program is there).
pub fn tool_runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// `true` when `program`, one `.ci/run` installs ([`CI_TOOLS`]), runs
/// here; otherwise prints the skip and returns `false`.
///
/// # Panics
///
/// When `program` is missing under `FLEXIO_TEST_PRIVILEGED=1`; and always
/// when `program` is not in [`CI_TOOLS`] (CI could not keep that promise:
/// use [`optional_tool`]).
///
/// # Examples
///
/// ```
/// if flexio_testkit::require_tool("tar") {
///     // run tar against the server
/// }
/// ```
pub fn require_tool(program: &str) -> bool {
    assert!(
        CI_TOOLS.iter().any(|(tool, _)| *tool == program),
        "{program} is not a tool .ci/run installs: use optional_tool"
    );
    tool_runs(program) || skip_or_fail(&format!("{program} is not installed"))
}

/// `true` when `program` runs here; otherwise prints the skip and returns
/// `false`, even under `FLEXIO_TEST_PRIVILEGED=1`: for the peers CI does
/// not install (or hides, in `.ci/without-peers`).
///
/// # Examples
///
/// ```
/// if flexio_testkit::optional_tool("lftp") {
///     // compare with lftp
/// }
/// ```
pub fn optional_tool(program: &str) -> bool {
    if tool_runs(program) {
        return true;
    }
    skipped(&format!("{program} is not installed (an optional peer)"));
    false
}
