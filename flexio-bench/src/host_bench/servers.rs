//! The servers of the `host-to-host` scenario as long-running processes
//! (flexio serve, nginx, the rsync daemon, iperf3), the CPU time their
//! process trees spend, and clients run with a deadline.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::link::listening;
use crate::process_cpu::process_cpu_ns;
use crate::{Error, Result};

/// A server process started on the servers' side, stopped on drop.
pub struct Server {
    /// Its name in tables (`flexio serve`, `nginx`, ...).
    pub name: String,
    /// The port it listens on.
    pub port: u16,
    child: Child,
}

impl Server {
    /// Starts `command`, its output going to `log`, and waits (at most
    /// 10 s) until it listens on `port`.
    ///
    /// # Errors
    /// It cannot be started, exits, or does not listen in time.
    pub fn start(name: &str, mut command: Command, port: u16, log: &Path) -> Result<Server> {
        let file = std::fs::File::create(log).map_err(|e| Error::io("create", log, e))?;
        let errors = file
            .try_clone()
            .map_err(|e| Error::io("duplicate the descriptor of", log, e))?;
        // Gone with the bench, even one killed with `kill -9`.
        let child = flexio_sys::process::terminate_with_parent(&mut command)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(errors)
            .spawn()
            .map_err(|e| Error::spawn("start", name, e))?;
        let mut server = Server {
            name: name.to_string(),
            port,
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !listening(server.child.id(), port) {
            if let Ok(Some(status)) = server.child.try_wait() {
                let said = std::fs::read_to_string(log).unwrap_or_default();
                return Err(Error::peer(
                    name,
                    format!("exited ({status}): {}", said.trim()),
                ));
            }
            if Instant::now() > deadline {
                return Err(Error::peer(
                    name,
                    format!("did not listen on port {port} within 10 s"),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(server)
    }

    /// CPU seconds its process tree has used so far (see [`tree_cpu_seconds`]).
    pub fn cpu_seconds(&self) -> f64 {
        settle(self.child.id());
        tree_cpu_seconds(self.child.id())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM first: nginx's master stops its workers on it, where
        // SIGKILL would leave them running.
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        for _ in 0..200 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `(pid, ppid, state)` of every process.
fn processes() -> Vec<(u32, u32, char)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The command name is in parentheses and may hold spaces.
            let rest = &stat[stat.rfind(')')? + 2..];
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let state = fields.first()?.chars().next()?;
            let ppid = fields.get(1)?.parse().ok()?;
            Some((pid, ppid, state))
        })
        .collect()
}

fn descendants(all: &[(u32, u32, char)], root: u32) -> Vec<(u32, u32, char)> {
    let mut children: HashMap<u32, Vec<usize>> = HashMap::new();
    for (index, process) in all.iter().enumerate() {
        children.entry(process.1).or_default().push(index);
    }
    let mut found: Vec<_> = all.iter().filter(|p| p.0 == root).copied().collect();
    let mut next = 0;
    while next < found.len() {
        let pid = found[next].0;
        for &index in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
            found.push(all[index]);
        }
        next += 1;
    }
    found
}

/// CPU seconds (user + system) spent by `root` and every descendant,
/// living or waited for. Exited children the tree has not yet waited for
/// still show as zombies with their times, so nothing is lost between a
/// child's exit and its reaping. In nanoseconds' resolution for living
/// threads ([`crate::process_cpu`]), the same way for every server.
pub fn tree_cpu_seconds(root: u32) -> f64 {
    let ns: u64 = descendants(&processes(), root)
        .iter()
        .filter_map(|p| process_cpu_ns(p.0))
        .sum();
    ns as f64 / 1e9
}

/// Waits (at most 0.5 s) until no process under `root` is a zombie, so a
/// forking server (the rsync daemon) has charged its finished child to
/// itself before its time is read.
fn settle(root: u32) {
    for _ in 0..50 {
        if !descendants(&processes(), root)
            .iter()
            .any(|p| p.0 != root && p.2 == 'Z')
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `command` to its end with its output captured, killing it after
/// `limit`; returns the output and the wall seconds from spawn to exit.
///
/// # Errors
/// It cannot be started, or it ran past `limit`.
pub fn run_bounded(mut command: Command, limit: Duration) -> Result<(Output, f64)> {
    let started = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::spawn("start", program_of(&command), e))?;
    let pid = child.id();
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if finished.recv_timeout(limit).is_err() {
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            return true;
        }
        false
    });
    let output = child.wait_with_output();
    let seconds = started.elapsed().as_secs_f64();
    let _ = done.send(());
    let killed = watchdog.join().unwrap_or(false);
    let output = output.map_err(|e| Error::spawn("wait for", program_of(&command), e))?;
    if killed {
        return Err(Error::program(
            program_of(&command),
            format!("killed after {} s", limit.as_secs()),
        ));
    }
    Ok((output, seconds))
}

/// The program a command runs, for messages.
fn program_of(command: &Command) -> String {
    command.get_program().to_string_lossy().into_owned()
}
