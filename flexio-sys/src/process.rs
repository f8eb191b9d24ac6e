//! Child processes that do not outlive the process that started them: a
//! bench killed with `kill -9` (or stopped by a signal it does not catch)
//! runs no destructor, and the servers it started would go on listening.
//! And children that start with the default action for the signals that
//! end a process, whatever their parent ignores; and whether a child holds
//! the port it was told to listen on.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use rustix::process::{getpid, getppid, set_parent_process_death_signal, Signal};

/// Has the kernel send `SIGTERM` to `command`'s process when its parent
/// ends (`PR_SET_PDEATHSIG`). SIGTERM rather than SIGKILL so that a server
/// with workers (nginx's master) stops them too.
///
/// "Parent" is the thread that spawns it: spawn from a thread that lives
/// as long as the child should. A parent that is gone before the child
/// has set this up fails the spawn (`ESRCH`) rather than leaving an orphan.
///
/// # Errors
/// None here; the spawn fails if `prctl` does.
///
/// # Examples
/// ```
/// let mut command = std::process::Command::new("true");
/// flexio_sys::process::terminate_with_parent(&mut command);
/// assert!(command.status().unwrap().success());
/// ```
pub fn terminate_with_parent(command: &mut Command) -> &mut Command {
    let parent = getpid();
    let setup = move || -> io::Result<()> {
        set_parent_process_death_signal(Some(Signal::TERM))?;
        // The parent may have ended between fork and prctl, and then no
        // signal will come.
        if getppid() != Some(parent) {
            return Err(rustix::io::Errno::SRCH.into());
        }
        Ok(())
    };
    // SAFETY: the closure runs in the forked child before `exec`, where only
    // async-signal-safe work is allowed: it makes two system calls
    // (`prctl`, `getppid`) through rustix, which neither allocates nor
    // takes locks, and turns an errno into an `io::Error`, which does not
    // allocate either.
    unsafe { command.pre_exec(setup) }
}

/// Has `command`'s process join a cgroup before it execs, by writing `0`
/// (the writer itself, in cgroup v1 and v2) to the group's `procs`
/// (`cgroup.procs`, opened for writing by the caller): it runs no
/// instruction of the program outside the group, as moving it after the
/// spawn would let it.
///
/// # Errors
/// None here; the spawn fails if the write does (the group is gone, or
/// its limit is below what the process already uses).
///
/// # Examples
/// ```no_run
/// let procs = std::fs::OpenOptions::new()
///     .write(true)
///     .open("/sys/fs/cgroup/memory/some-group/cgroup.procs")
///     .unwrap();
/// let mut command = std::process::Command::new("true");
/// flexio_sys::process::join_cgroup_before_exec(&mut command, procs);
/// assert!(command.status().unwrap().success());
/// ```
pub fn join_cgroup_before_exec(command: &mut Command, procs: std::fs::File) -> &mut Command {
    let setup = move || -> io::Result<()> {
        rustix::io::write(&procs, b"0")?;
        Ok(())
    };
    // SAFETY: the closure runs in the forked child before `exec`, where only
    // async-signal-safe work is allowed: one `write(2)` through rustix to a
    // descriptor opened before the fork, which neither allocates nor takes
    // locks; an errno becomes an `io::Error` without allocating.
    unsafe { command.pre_exec(setup) }
}

/// The signals a terminal, a shell or a supervisor sends to end a process.
const ENDING_SIGNALS: [std::ffi::c_int; 4] =
    [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM];

/// Starts `command`'s process with the default action for SIGHUP, SIGINT,
/// SIGQUIT and SIGTERM, as a fresh terminal session would. A signal
/// ignored by a parent stays ignored across `fork` and `exec`: under
/// `nohup` (SIGHUP) or as a background job of a shell without job control
/// (SIGINT, SIGQUIT), a child that is meant to die of the signal would
/// otherwise shrug it off. Tests that signal a child use this.
///
/// # Errors
/// None here; the spawn fails if `sigaction` does.
///
/// # Examples
/// ```
/// let mut command = std::process::Command::new("sh");
/// command.args(["-c", "kill -HUP $$; sleep 5"]);
/// flexio_sys::process::default_signal_actions(&mut command);
/// let status = command.status().unwrap();
/// use std::os::unix::process::ExitStatusExt;
/// assert_eq!(status.signal(), Some(1)); // SIGHUP, even under nohup
/// ```
pub fn default_signal_actions(command: &mut Command) -> &mut Command {
    let setup = || -> io::Result<()> {
        for signal in ENDING_SIGNALS {
            // SAFETY: `signal` is async-signal-safe (POSIX lists it), so it
            // may run in the forked child before `exec`; SIG_DFL installs
            // no handler, so no Rust code runs on the signal later.
            if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the closure runs in the forked child before `exec`: it makes
    // four `signal` calls and, on failure, reads errno; it neither
    // allocates nor takes locks.
    unsafe { command.pre_exec(setup) }
}

/// Whether process `pid` holds a socket listening on `127.0.0.1:port`
/// (`/proc/net/tcp` and the process's descriptors): that a server started
/// on a port found free got it, and not another process that took the
/// port between; a connection to the port would not tell them apart.
///
/// # Examples
/// ```
/// let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
/// let port = listener.local_addr().unwrap().port();
/// assert!(flexio_sys::process::listens_on(std::process::id(), port));
/// drop(listener);
/// assert!(!flexio_sys::process::listens_on(std::process::id(), port));
/// ```
pub fn listens_on(pid: u32, port: u16) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    // The kernel prints the address as its bytes read as a native integer.
    let local = format!("{:08X}:{port:04X}", u32::from_ne_bytes([127, 0, 0, 1]));
    let sockets: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let listening = fields.get(1) == Some(&local.as_str()) && fields.get(3) == Some(&"0A");
            listening.then(|| fields.get(9).map(|inode| format!("socket:[{inode}]")))?
        })
        .collect();
    let Ok(descriptors) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    descriptors
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .any(|link| {
            sockets
                .iter()
                .any(|socket| link.as_os_str() == socket.as_str())
        })
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    #[test]
    fn a_child_is_terminated_when_its_parent_ends() {
        // This test run again as a process of its own (the parent) starts
        // `sleep` (the child) with the death signal set, prints its pid and
        // exits; the sleep must go too.
        let exe = std::env::current_exe().unwrap();
        if std::env::var_os("FLEXIO_SYS_PDEATH_CHILD").is_some() {
            let mut sleep = Command::new("sleep");
            sleep
                .arg("30")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            super::terminate_with_parent(&mut sleep);
            // Not waited for: this process ends now, and the test is that
            // the child ends with it.
            #[allow(clippy::zombie_processes)]
            let child = sleep.spawn().unwrap();
            println!("child pid {}", child.id());
            return;
        }
        let output = Command::new(exe)
            .args([
                "--exact",
                "process::tests::a_child_is_terminated_when_its_parent_ends",
            ])
            .args(["--nocapture", "--test-threads", "1"])
            .env("FLEXIO_SYS_PDEATH_CHILD", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        let pid: u32 = text
            .split("child pid ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no pid in {text:?}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie waiting for init to reap it.
            let running = state
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'));
            if !running {
                break;
            }
            assert!(Instant::now() < deadline, "sleep {pid} outlived its parent");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// How `sh -c 'kill -HUP $$; sleep 0.2'` ended: the signal that ended
    /// it, if one did.
    fn hang_up_self(default_actions: bool) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        let mut sh = Command::new("sh");
        sh.args(["-c", "kill -HUP $$; sleep 0.2"]);
        if default_actions {
            super::default_signal_actions(&mut sh);
        }
        sh.status().unwrap().signal()
    }

    #[test]
    fn a_child_dies_of_sighup_though_its_parent_ignores_it() {
        // This test run again under nohup (SIGHUP ignored, and inherited)
        // reports how its children ended.
        if std::env::var_os("FLEXIO_SYS_NOHUP_CHILD").is_some() {
            println!(
                "plain {:?} reset {:?}",
                hang_up_self(false),
                hang_up_self(true)
            );
            return;
        }
        let output = Command::new("nohup")
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "process::tests::a_child_dies_of_sighup_though_its_parent_ignores_it",
            ])
            .args(["--nocapture", "--test-threads", "1"])
            .env("FLEXIO_SYS_NOHUP_CHILD", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            text.contains("plain None reset Some(1)"),
            "{text}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
