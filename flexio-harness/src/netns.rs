//! Network namespaces joined by veth pairs, made with `ip` and always
//! removed (as root): one module for every scenario that needs hosts.
//!
//! - [`Link`]: the `host-to-host` scenario's two ends, a veth pair
//!   between two namespaces, or loopback when they cannot be made;
//! - [`Hosts`]: the `hosts` scenario's hub and `n` hosts on a bridge;
//! - [`line::Line`]: three hosts in a line (FlexIO's relay);
//! - [`veth::VethPair`]: the runner's veth cells, whose sockets are
//!   made inside a namespace by a thread that entered it.
//!
//! All share one `ip` runner, one naming scheme (the bench's pid last)
//! and one sweep of namespaces left by benches no longer running.
//!
//! Processes are put on either side with `ip netns exec`, which `exec`s
//! the command in place, so the pid of the child is the pid of the tool
//! (its CPU time can be read from `/proc`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

pub mod line;
pub mod veth;

/// The two ends: where servers listen and where clients run.
#[derive(Debug)]
pub struct Link {
    /// The servers' namespace (`None` on loopback).
    server_ns: Option<String>,
    /// The clients' namespace (`None` on loopback).
    client_ns: Option<String>,
    /// The address servers listen on and clients connect to.
    pub server_addr: IpAddr,
    /// What the link is, for the report.
    pub description: String,
}

/// Names start with this, then the bench's pid: a bench killed before it
/// removed its namespaces has them removed by the next run.
const PREFIX: &str = "flexio-hb";

/// Runs `ip ARGS`; its standard error is the error's reason.
fn ip(args: &[&str]) -> Result<()> {
    let failed = |why: String| Error::Command {
        command: format!("ip {}", args.join(" ")),
        why,
    };
    let output = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(e.to_string()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(failed(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ))
    }
}

/// The error for a namespace made without root.
fn not_root() -> Error {
    Error::Refused {
        why: "not root: network namespaces need root".into(),
    }
}

/// The `hosts` scenario's names start with this, then `n` and the host's
/// index (0 is the hub), then `-` and the bench's pid. Not under
/// [`PREFIX`]: benches built before it would take the index for part of
/// a pid that does not parse and delete a running bench's namespaces.
const HOSTS_PREFIX: &str = "flexio-hosts";

/// Removes the namespaces of benches that are no longer running.
fn remove_stale() {
    let Ok(output) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name
            .strip_prefix(PREFIX)
            .or_else(|| name.strip_prefix(HOSTS_PREFIX))
        else {
            continue;
        };
        // The pid is the name's last part (`s-PID`, `c-PID`, `n3-PID`).
        let pid = rest.rsplit('-').next().unwrap_or("");
        let alive = pid
            .parse::<u32>()
            .is_ok_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

impl Link {
    /// A veth pair between two new namespaces (10.77.0.1 serves, 10.77.0.2
    /// fetches), or loopback with the reason when that is impossible.
    pub fn create(want_namespaces: bool) -> Link {
        if !want_namespaces {
            return Link::loopback("asked for loopback".into());
        }
        if !rustix::process::geteuid().is_root() {
            return Link::loopback("not root: no network namespaces".into());
        }
        remove_stale();
        let pid = std::process::id();
        let server = format!("{PREFIX}s-{pid}");
        let client = format!("{PREFIX}c-{pid}");
        let (a, b) = (format!("fxhb{pid}a"), format!("fxhb{pid}b"));
        let mut link = Link {
            server_ns: Some(server.clone()),
            client_ns: Some(client.clone()),
            server_addr: IpAddr::V4(Ipv4Addr::new(10, 77, 0, 1)),
            description: String::new(),
        };
        let steps: Vec<Vec<&str>> = vec![
            vec!["netns", "add", &server],
            vec!["netns", "add", &client],
            vec!["link", "add", &a, "type", "veth", "peer", "name", &b],
            vec!["link", "set", &a, "netns", &server],
            vec!["link", "set", &b, "netns", &client],
            vec!["-n", &server, "addr", "add", "10.77.0.1/24", "dev", &a],
            vec!["-n", &client, "addr", "add", "10.77.0.2/24", "dev", &b],
            vec!["-n", &server, "link", "set", &a, "up"],
            vec!["-n", &client, "link", "set", &b, "up"],
            vec!["-n", &server, "link", "set", "lo", "up"],
            vec!["-n", &client, "link", "set", "lo", "up"],
        ];
        for step in steps {
            if let Err(why) = ip(&step) {
                // Drop removes what was made.
                drop(link);
                let _ = ip(&["link", "del", &a]);
                return Link::loopback(format!("network namespaces failed ({why})"));
            }
        }
        link.description = format!(
            "veth pair between network namespaces {server} (10.77.0.1, servers) and {client} (10.77.0.2, clients), MTU 1500"
        );
        link
    }

    fn loopback(why: String) -> Link {
        Link {
            server_ns: None,
            client_ns: None,
            server_addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            description: format!("loopback ({why})"),
        }
    }

    /// Whether the link is the veth pair.
    pub fn is_veth(&self) -> bool {
        self.server_ns.is_some()
    }

    pub(super) fn command(ns: &Option<String>, program: &str) -> Command {
        match ns {
            Some(ns) => {
                let mut command = Command::new("ip");
                command.args(["netns", "exec", ns, program]);
                command
            }
            None => Command::new(program),
        }
    }

    /// `program` on the servers' side.
    pub fn server_command(&self, program: &str) -> Command {
        Link::command(&self.server_ns, program)
    }

    /// `program` on the clients' side.
    pub fn client_command(&self, program: &str) -> Command {
        Link::command(&self.client_ns, program)
    }

    /// `host:port` of a server, as URLs and tools write it.
    pub fn authority(&self, port: u16) -> String {
        format!("{}:{port}", self.server_addr)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end inside it, and so the
        // pair.
        for ns in [&self.server_ns, &self.client_ns].into_iter().flatten() {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// The `hosts` scenario's network: a hub namespace holding a bridge (and
/// the servers, on 10.78.0.1) and `n` host namespaces, each joined to the
/// bridge by a veth pair (host `k` is 10.78.0.(10+k), k = 1..=n), so every
/// host reaches the hub and every other host (a chain's links serve each
/// other). All removed on drop.
#[derive(Debug)]
pub struct Hosts {
    hub: String,
    hosts: Vec<String>,
}

impl Hosts {
    /// The hub's address, where the servers listen.
    pub const HUB: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 1);

    /// Creates the hub and `n` hosts (1 ≤ n ≤ 200; root only).
    ///
    /// # Errors
    /// Not root, or an `ip` step fails (what was made is removed).
    pub fn create(n: usize) -> Result<Hosts> {
        if !rustix::process::geteuid().is_root() {
            return Err(not_root());
        }
        if !(1..=200).contains(&n) {
            return Err(Error::Refused {
                why: format!("{n} hosts: between 1 and 200"),
            });
        }
        remove_stale();
        let pid = std::process::id();
        let mut made = Hosts {
            hub: format!("{HOSTS_PREFIX}n0-{pid}"),
            hosts: Vec::new(),
        };
        let bridge = format!("fxbr{pid}");
        let hub = made.hub.clone();
        ip(&["netns", "add", &hub])?;
        let hub_address = format!("{}/24", Hosts::HUB);
        for step in [
            vec!["-n", &hub, "link", "set", "lo", "up"],
            vec!["-n", &hub, "link", "add", &bridge, "type", "bridge"],
            vec!["-n", &hub, "addr", "add", &hub_address, "dev", &bridge],
            vec!["-n", &hub, "link", "set", &bridge, "up"],
        ] {
            ip(&step)?;
        }
        for k in 1..=n {
            let ns = format!("{HOSTS_PREFIX}n{k}-{pid}");
            ip(&["netns", "add", &ns])?;
            made.hosts.push(ns.clone());
            let (a, b) = (format!("fxn{pid}a{k}"), format!("fxn{pid}b{k}"));
            let address = format!("{}/24", Hosts::address(k));
            for step in [
                vec!["link", "add", &a, "type", "veth", "peer", "name", &b],
                vec!["link", "set", &a, "netns", &hub],
                vec!["link", "set", &b, "netns", &ns],
                vec!["-n", &hub, "link", "set", &a, "master", &bridge],
                vec!["-n", &hub, "link", "set", &a, "up"],
                vec!["-n", &ns, "addr", "add", &address, "dev", &b],
                vec!["-n", &ns, "link", "set", &b, "up"],
                vec!["-n", &ns, "link", "set", "lo", "up"],
            ] {
                if let Err(why) = ip(&step) {
                    let _ = ip(&["link", "del", &a]);
                    return Err(why);
                }
            }
        }
        Ok(made)
    }

    /// Host `k`'s address (k = 1..=n).
    pub fn address(k: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 78, 0, 10 + k as u8)
    }

    /// `program` in the hub (the servers' side).
    pub fn hub_command(&self, program: &str) -> Command {
        Link::command(&Some(self.hub.clone()), program)
    }

    /// `program` on host `k` (1..=n).
    pub fn host_command(&self, k: usize, program: &str) -> Command {
        Link::command(&Some(self.hosts[k - 1].clone()), program)
    }

    /// The namespaces' names, hub first.
    pub fn names(&self) -> Vec<String> {
        std::iter::once(self.hub.clone())
            .chain(self.hosts.iter().cloned())
            .collect()
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Deleting a host's namespace deletes its veth end, and so the
        // pair; the bridge goes with the hub.
        for ns in self.hosts.iter().chain([&self.hub]) {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// A TCP port free on the loopback right now (the kernel picks it; bound,
/// then released), for servers on loopback; in a new network namespace
/// every port is free.
///
/// # Errors
/// [`Error::Net`] when no port can be bound.
///
/// # Examples
/// ```
/// let port = flexio_harness::netns::free_port().unwrap();
/// assert_ne!(port, 0);
/// ```
pub fn free_port() -> Result<u16> {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    TcpListener::bind(address)
        .and_then(|listener| listener.local_addr())
        .map(|bound| bound.port())
        .map_err(|source| Error::Net {
            operation: "bind a free port on",
            address,
            source,
        })
}

/// Whether a socket of the network namespace `pid` is in is listening on
/// `port` (read from `/proc/PID/net/tcp`, which shows that namespace).
pub fn listening(pid: u32, port: u16) -> bool {
    let wanted = format!(":{port:04X}");
    ["tcp", "tcp6"].iter().any(|table| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).is_ok_and(|text| {
            text.lines().skip(1).any(|line| {
                let mut fields = line.split_whitespace();
                let local = fields.nth(1).unwrap_or("");
                let state = fields.nth(1).unwrap_or("");
                state == "0A" && local.ends_with(&wanted)
            })
        })
    })
}

#[cfg(test)]
mod tests;
