//! The veth path: two network namespaces joined by a veth pair that the
//! bench creates (as root) and removes when dropped.

use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;

use super::ip;
use crate::error::Result;

/// Two network namespaces joined by a veth pair, created by the bench and
/// removed when dropped. Addresses are link-local (169.254.77.0/30), so
/// nothing outside the pair is ever reached.
#[derive(Debug)]
pub struct VethPair {
    /// Namespace of the sending side.
    pub sender_ns: String,
    /// Namespace of the receiving side.
    pub receiver_ns: String,
    /// The sender's address.
    pub sender_addr: IpAddr,
    /// The receiver's address.
    pub receiver_addr: IpAddr,
}

impl VethPair {
    /// Creates the namespaces, the pair and the addresses (needs root and
    /// `ip`).
    ///
    /// # Errors
    /// When any `ip` command fails; what was created is removed.
    pub fn create() -> Result<Self> {
        let tag = std::process::id();
        let pair = VethPair {
            sender_ns: format!("flexio-bench-{tag}-s"),
            receiver_ns: format!("flexio-bench-{tag}-r"),
            sender_addr: IpAddr::V4(Ipv4Addr::new(169, 254, 77, 1)),
            receiver_addr: IpAddr::V4(Ipv4Addr::new(169, 254, 77, 2)),
        };
        let (s, r) = (&pair.sender_ns, &pair.receiver_ns);
        let (s_if, r_if) = (format!("fxb{tag}s"), format!("fxb{tag}r"));
        let steps: [&[&str]; 9] = [
            &["netns", "add", s],
            &["netns", "add", r],
            &[
                "link", "add", "name", &s_if, "netns", s, "type", "veth", "peer", "name", &r_if,
                "netns", r,
            ],
            &["-n", s, "addr", "add", "169.254.77.1/30", "dev", &s_if],
            &["-n", r, "addr", "add", "169.254.77.2/30", "dev", &r_if],
            &["-n", s, "link", "set", &s_if, "up"],
            &["-n", r, "link", "set", &r_if, "up"],
            &["-n", s, "link", "set", "lo", "up"],
            &["-n", r, "link", "set", "lo", "up"],
        ];
        for step in steps {
            ip(step)?;
        }
        // Each connection starts fresh, as on loopback (`Net::connect`):
        // the namespaces are the bench's own, so nothing of the host's
        // changes.
        for ns in [s, r] {
            ip(&[
                "netns",
                "exec",
                ns,
                "sh",
                "-c",
                "echo 1 > /proc/sys/net/ipv4/tcp_no_metrics_save",
            ])?;
        }
        Ok(pair)
    }

    /// Moves the calling thread into network namespace `ns` (a thread
    /// made for the purpose: it stays there).
    ///
    /// # Errors
    /// When the namespace does not exist or `setns(2)` is refused.
    pub fn enter(ns: &str) -> io::Result<()> {
        let handle = std::fs::File::open(Path::new("/run/netns").join(ns))?;
        rustix::thread::move_into_link_name_space(
            std::os::fd::AsFd::as_fd(&handle),
            Some(rustix::thread::LinkNameSpaceType::Network),
        )?;
        Ok(())
    }

    /// Runs `work` on a thread that has entered namespace `ns`: sockets it
    /// creates belong to that namespace wherever they are used afterwards.
    ///
    /// # Errors
    /// When the namespace cannot be entered, or `work` fails.
    pub fn in_namespace<T: Send + 'static>(
        ns: &str,
        work: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let ns = ns.to_string();
        std::thread::spawn(move || {
            Self::enter(&ns)?;
            work()
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end inside it, and with it
        // the other end.
        for ns in [&self.sender_ns, &self.receiver_ns] {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}
