//! The standard tools run beside flexio — `cp`, `dd`, `cat`, `socat`, `nc`,
//! `pv`, `iperf3` — as supervised child processes, and the network paths
//! (loopback, or a veth pair between two namespaces the bench creates) they
//! and flexio run over.
//!
//! A peer is a command template; `{src}`, `{dst}`, `{host}`, `{port}` and
//! `{bytes}` are filled in per run. Every child is *supervised*: a watchdog
//! kills it (through a pidfd, so a recycled pid is never hit) when it
//! overruns its deadline, and dropping the handle kills and reaps it, so no
//! path — error, panic or early return — leaves a child behind.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

mod iperf3;
pub use crate::netns::free_port;
pub use crate::netns::veth::{self, VethPair};
pub use iperf3::{run_iperf3, Iperf3Run};

/// How long any child may run before the watchdog kills it.
pub const CHILD_DEADLINE: Duration = Duration::from_secs(300);

/// A standard tool as a command template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerSpec {
    /// The label in tables (`Contender::Peer::name`).
    pub name: String,
    /// The command line; `{src}`, `{dst}`, `{host}`, `{port}`, `{bytes}`
    /// are replaced per run.
    pub argv: Vec<String>,
    /// Programs that must be on `PATH` (the peer is *missing* otherwise).
    pub needs: Vec<String>,
    /// Standard input is the source file (`nc -N host port < src`).
    pub stdin_from_source: bool,
    /// Standard output is the sink (`nc -l … > dst`, `cat src | reader`).
    pub stdout_to_sink: bool,
    /// `iperf3`'s client/server pair instead of one command.
    pub iperf3: Option<Iperf3Mode>,
    /// Standard error, and standard output when it does not carry the
    /// data, go to this file instead of `/dev/null` (`flexio copy --json`
    /// writes its report there, for the mechanism that ran).
    pub capture: Option<PathBuf>,
}

/// How the iperf3 client sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Iperf3Mode {
    /// From a memory buffer with `write(2)`.
    Memory,
    /// `-Z`: with `sendfile(2)` from a temporary file.
    ZeroCopy,
}

/// The values a template's placeholders take in one run.
#[derive(Clone, Debug, Default)]
pub struct PeerVars {
    /// Source file.
    pub src: PathBuf,
    /// Destination file.
    pub dst: PathBuf,
    /// Host to connect to or listen on.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Bytes to move.
    pub bytes: u64,
}

fn words(argv: &[&str]) -> Vec<String> {
    argv.iter().map(|s| s.to_string()).collect()
}

impl PeerSpec {
    /// A peer running `argv` (its first word must be on `PATH`).
    ///
    /// # Examples
    /// ```
    /// use flexio_harness::peers::PeerSpec;
    /// let peer = PeerSpec::command("cp", &["cp", "{src}", "{dst}"]);
    /// assert_eq!(peer.needs, vec!["cp".to_string()]);
    /// ```
    pub fn command(name: &str, argv: &[&str]) -> Self {
        PeerSpec {
            name: name.to_string(),
            argv: words(argv),
            needs: vec![argv[0].to_string()],
            stdin_from_source: false,
            stdout_to_sink: false,
            iperf3: None,
            capture: None,
        }
    }

    fn needing(mut self, programs: &[&str]) -> Self {
        self.needs = words(programs);
        self
    }

    /// `cp SRC DST`.
    pub fn cp() -> Self {
        Self::command("cp", &["cp", "{src}", "{dst}"])
    }

    /// `dd bs=1M`.
    pub fn dd() -> Self {
        Self::command(
            "dd bs=1M",
            &["dd", "if={src}", "of={dst}", "bs=1M", "status=none"],
        )
    }

    /// `dd bs=1M iflag=direct oflag=direct`.
    pub fn dd_direct() -> Self {
        Self::command(
            "dd bs=1M iflag=direct oflag=direct",
            &[
                "dd",
                "if={src}",
                "of={dst}",
                "bs=1M",
                "iflag=direct",
                "oflag=direct",
                "status=none",
            ],
        )
    }

    /// `cat SRC > DST` through `sh -c`.
    pub fn cat_redirect() -> Self {
        Self::command(
            "cat SRC > DST",
            &["sh", "-c", "cat \"$1\" > \"$2\"", "sh", "{src}", "{dst}"],
        )
        .needing(&["sh", "cat"])
    }

    /// `cp SRC DST && sync` through `sh -c` (the durable peer).
    pub fn cp_sync() -> Self {
        Self::command(
            "cp && sync",
            &[
                "sh",
                "-c",
                "cp \"$1\" \"$2\" && sync",
                "sh",
                "{src}",
                "{dst}",
            ],
        )
        .needing(&["sh", "cp", "sync"])
    }

    /// `dd bs=1M conv=fsync` (the durable page-cache dd).
    pub fn dd_fsync() -> Self {
        Self::command(
            "dd bs=1M conv=fsync",
            &[
                "dd",
                "if={src}",
                "of={dst}",
                "bs=1M",
                "conv=fsync",
                "status=none",
            ],
        )
    }

    /// `dd bs=1M iflag=direct oflag=direct conv=fsync`.
    pub fn dd_direct_fsync() -> Self {
        Self::command(
            "dd bs=1M iflag=direct oflag=direct conv=fsync",
            &[
                "dd",
                "if={src}",
                "of={dst}",
                "bs=1M",
                "iflag=direct",
                "oflag=direct",
                "conv=fsync",
                "status=none",
            ],
        )
    }

    /// `socat -u FILE:src TCP:host:port`.
    pub fn socat_send() -> Self {
        Self::command("socat", &["socat", "-u", "FILE:{src}", "TCP:{host}:{port}"])
    }

    /// `socat -u TCP-LISTEN:port,reuseaddr OPEN:dst,creat,trunc` (bound to
    /// the bench's address only).
    pub fn socat_receive() -> Self {
        Self::command(
            "socat",
            &[
                "socat",
                "-u",
                "TCP-LISTEN:{port},reuseaddr,bind={host}",
                "OPEN:{dst},creat,trunc",
            ],
        )
    }

    /// `nc -N host port < src` (netcat-openbsd).
    pub fn nc_send() -> Self {
        PeerSpec {
            stdin_from_source: true,
            ..Self::command("nc", &["nc", "-N", "{host}", "{port}"])
        }
    }

    /// `nc -l host port > dst` (netcat-openbsd).
    pub fn nc_receive() -> Self {
        PeerSpec {
            stdout_to_sink: true,
            ..Self::command("nc", &["nc", "-l", "{host}", "{port}"])
        }
    }

    /// `cat SRC | reader`.
    pub fn cat_pipe() -> Self {
        PeerSpec {
            stdout_to_sink: true,
            ..Self::command("cat SRC | reader", &["cat", "{src}"])
        }
    }

    /// `pv -q SRC | reader`.
    pub fn pv_pipe() -> Self {
        PeerSpec {
            stdout_to_sink: true,
            ..Self::command("pv -q SRC | reader", &["pv", "-q", "{src}"])
        }
    }

    /// `writer | cat > DST`: the pipe on standard input, the sink on
    /// standard output.
    pub fn cat_from_pipe() -> Self {
        PeerSpec {
            stdout_to_sink: true,
            ..Self::command("writer | cat > DST", &["cat"])
        }
    }

    /// `writer | dd of=DST bs=1M`.
    pub fn dd_from_pipe() -> Self {
        Self::command(
            "writer | dd of=DST bs=1M",
            &["dd", "of={dst}", "bs=1M", "status=none"],
        )
    }

    /// `iperf3` memory → socket, or `iperf3 -Z` (sendfile).
    pub fn iperf3(mode: Iperf3Mode) -> Self {
        let name = match mode {
            Iperf3Mode::Memory => "iperf3",
            Iperf3Mode::ZeroCopy => "iperf3 -Z",
        };
        PeerSpec {
            iperf3: Some(mode),
            ..Self::command(name, &["iperf3"])
        }
    }

    /// The programs of [`Self::needs`] that are not on `PATH`.
    pub fn missing_programs(&self) -> Vec<String> {
        self.needs
            .iter()
            .filter(|p| find_program(p).is_none())
            .cloned()
            .collect()
    }

    /// The command line of one run.
    pub fn expand(&self, vars: &PeerVars) -> Vec<String> {
        self.argv
            .iter()
            .map(|word| {
                word.replace("{src}", &vars.src.to_string_lossy())
                    .replace("{dst}", &vars.dst.to_string_lossy())
                    .replace("{host}", &vars.host)
                    .replace("{port}", &vars.port.to_string())
                    .replace("{bytes}", &vars.bytes.to_string())
            })
            .collect()
    }
}

/// The executable `name` resolves to on `PATH` (or `name` itself when it
/// holds a `/` and is executable).
pub fn find_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let path = PathBuf::from(name);
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// A daemon's program (nginx, sshd): on the `PATH`, else in the `sbin`
/// directories a user's `PATH` often lacks. Only an executable file
/// counts, so that a peer hidden by a non-executable file mounted over it
/// (`.ci/without-peers`) is missing, not broken.
pub fn find_daemon(name: &str) -> Option<PathBuf> {
    find_program(name).or_else(|| {
        ["/usr/local/sbin", "/usr/sbin", "/sbin"]
            .into_iter()
            .map(|dir| Path::new(dir).join(name))
            .find(|candidate| is_executable(candidate))
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Reads a program's file once so that its pages are cached again after a
/// cache drop (keeps `exec` from a cold disk out of a peer's timed window).
pub fn prewarm_program(name: &str) {
    if let Some(path) = find_program(name)
        && let Ok(mut file) = std::fs::File::open(path)
    {
        let _ = io::copy(&mut file, &mut io::sink());
    }
}

/// A child process with a deadline: killed by a watchdog when it overruns,
/// and killed and reaped when dropped before [`Supervised::wait`].
#[derive(Debug)]
pub struct Supervised {
    child: Option<Child>,
    cancel: Option<mpsc::Sender<()>>,
    watchdog: Option<JoinHandle<()>>,
}

impl Supervised {
    /// Spawns `command` under a watchdog; it also gets SIGTERM when the
    /// thread that spawned it ends (so spawn it from the thread that waits
    /// for it), see [`flexio_sys::process::terminate_with_parent`].
    ///
    /// # Errors
    /// When the program cannot be started.
    pub fn spawn(command: &mut Command, deadline: Duration) -> io::Result<Self> {
        // Gone with the bench too, even one killed with `kill -9` (a
        // listener such as `iperf3 -s` or socat would otherwise stay).
        let child = flexio_sys::process::terminate_with_parent(command).spawn()?;
        let pid = rustix::process::Pid::from_child(&child);
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok();
        let (cancel, cancelled) = mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(deadline)
                && let Some(pidfd) = pidfd
            {
                let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
            }
        });
        Ok(Supervised {
            child: Some(child),
            cancel: Some(cancel),
            watchdog: Some(watchdog),
        })
    }

    /// The child, e.g. to take its stdout.
    pub fn child_mut(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("the child is there until waited for")
    }

    /// Waits for the child to exit and stops the watchdog.
    ///
    /// # Errors
    /// When `waitpid` fails.
    pub fn wait(mut self) -> io::Result<ExitStatus> {
        let status = self.child_mut().wait();
        self.child = None;
        self.stop_watchdog();
        status
    }

    /// Kills the child (if still running) and reaps it.
    pub fn kill(mut self) {
        self.kill_now();
    }

    fn kill_now(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.stop_watchdog();
    }

    fn stop_watchdog(&mut self) {
        drop(self.cancel.take());
        if let Some(watchdog) = self.watchdog.take() {
            let _ = watchdog.join();
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// Turns a failed exit status into an error naming the peer.
pub fn check_status(name: &str, status: ExitStatus) -> io::Result<()> {
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("{name} exited with {status}")))
    }
}

/// A command for `argv`, run inside network namespace `netns` when given.
pub fn command_in(netns: Option<&str>, argv: &[String]) -> Command {
    let mut command = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).args(argv);
            c
        }
        None => {
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
    };
    command.stdin(Stdio::null()).stderr(Stdio::piped());
    command
}

/// Where a peer's standard input and output go beyond its template:
/// the bench's end of a pipe, or the destination file.
#[derive(Debug, Default)]
pub struct PeerIo {
    /// Standard input (a pipe's read end); else the source file when the
    /// spec reads it there, else nothing.
    pub stdin: Option<OwnedFd>,
    /// Standard output (a pipe's write end or the destination file); else
    /// discarded.
    pub stdout: Option<OwnedFd>,
}

impl PeerIo {
    /// Standard output into `fd`.
    pub fn stdout(fd: OwnedFd) -> Self {
        PeerIo {
            stdout: Some(fd),
            ..PeerIo::default()
        }
    }
}

/// Spawns one run of a (non-iperf3) peer with its standard input and
/// output as `io` and the spec say.
///
/// # Errors
/// When the source cannot be opened or the program cannot start.
pub fn spawn_peer(
    spec: &PeerSpec,
    vars: &PeerVars,
    netns: Option<&str>,
    io: PeerIo,
) -> io::Result<Supervised> {
    let argv = spec.expand(vars);
    let mut command = command_in(netns, &argv);
    match io.stdin {
        Some(fd) => {
            command.stdin(Stdio::from(fd));
        }
        None if spec.stdin_from_source => {
            command.stdin(std::fs::File::open(&vars.src)?);
        }
        None => {}
    }
    let capture = match &spec.capture {
        Some(path) => Some(std::fs::File::create(path)?),
        None => None,
    };
    match (io.stdout, &capture) {
        (Some(fd), _) => command.stdout(Stdio::from(fd)),
        (None, Some(file)) => command.stdout(file.try_clone()?),
        (None, None) => command.stdout(Stdio::null()),
    };
    // stderr is never a pipe the bench would have to drain while the
    // child runs (a tool that filled it would block): a file, or null.
    match capture {
        Some(file) => command.stderr(file),
        None => command.stderr(Stdio::null()),
    };
    Supervised::spawn(&mut command, CHILD_DEADLINE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand() {
        let vars = PeerVars {
            src: "/a b".into(),
            dst: "/c".into(),
            host: "127.0.0.1".into(),
            port: 9,
            bytes: 5,
        };
        assert_eq!(
            PeerSpec::cat_redirect().expand(&vars)[4..],
            ["/a b".to_string(), "/c".to_string()]
        );
        assert_eq!(
            PeerSpec::socat_send().expand(&vars),
            words(&["socat", "-u", "FILE:/a b", "TCP:127.0.0.1:9"])
        );
    }

    #[test]
    fn a_program_that_is_not_there_is_missing() {
        let peer = PeerSpec::command("nope", &["flexio-bench-no-such-tool", "{src}"]);
        assert_eq!(peer.missing_programs(), vec!["flexio-bench-no-such-tool"]);
        assert!(find_program("sh").is_some());
    }
}
