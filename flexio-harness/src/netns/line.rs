//! Three hosts in a line for FlexIO's network -> network relay (its
//! Figures 4.21-4.22): namespaces A, B and C, a veth pair between A and
//! B (10.79.1.0/24) and another between B and C (10.79.2.0/24). A and C
//! share no link, so what reaches C from A went through a process in B.
//! Made with the same `ip` steps, names and stale-namespace sweep as the
//! other host scenarios; removed on drop.

use std::net::Ipv4Addr;
use std::process::Command;

use super::{ip, not_root, remove_stale, Link, HOSTS_PREFIX};
use crate::error::Result;

/// The three namespaces, removed on drop.
#[derive(Debug)]
pub struct Line {
    names: [String; 3],
}

impl Line {
    /// A's address, on the A-B pair.
    pub const A: Ipv4Addr = Ipv4Addr::new(10, 79, 1, 1);
    /// B's address on the A-B pair (where A connects).
    pub const B_FROM_A: Ipv4Addr = Ipv4Addr::new(10, 79, 1, 2);
    /// B's address on the B-C pair.
    pub const B_TO_C: Ipv4Addr = Ipv4Addr::new(10, 79, 2, 1);
    /// C's address, on the B-C pair (where B connects).
    pub const C: Ipv4Addr = Ipv4Addr::new(10, 79, 2, 2);

    /// Creates A, B and C and the two pairs (root only).
    ///
    /// # Errors
    /// Not root, or an `ip` step fails (what was made is removed).
    pub fn create() -> Result<Line> {
        if !rustix::process::geteuid().is_root() {
            return Err(not_root());
        }
        remove_stale();
        let pid = std::process::id();
        let names = ["a", "b", "c"].map(|host| format!("{HOSTS_PREFIX}l{host}-{pid}"));
        let mut made = Line {
            names: Default::default(),
        };
        for (k, name) in names.iter().enumerate() {
            ip(&["netns", "add", name])?;
            made.names[k] = name.clone();
            ip(&["-n", name, "link", "set", "lo", "up"])?;
        }
        let [a, b, c] = &names;
        for (left, right, left_addr, right_addr, tag) in [
            (a, b, Line::A, Line::B_FROM_A, "ab"),
            (b, c, Line::B_TO_C, Line::C, "bc"),
        ] {
            let (l, r) = (format!("fxl{pid}{tag}l"), format!("fxl{pid}{tag}r"));
            let (la, ra) = (format!("{left_addr}/24"), format!("{right_addr}/24"));
            for step in [
                vec!["link", "add", &l, "type", "veth", "peer", "name", &r],
                vec!["link", "set", &l, "netns", left],
                vec!["link", "set", &r, "netns", right],
                vec!["-n", left, "addr", "add", &la, "dev", &l],
                vec!["-n", right, "addr", "add", &ra, "dev", &r],
                vec!["-n", left, "link", "set", &l, "up"],
                vec!["-n", right, "link", "set", &r, "up"],
            ] {
                if let Err(why) = ip(&step) {
                    // A pair still in this namespace is not deleted with
                    // the three.
                    let _ = ip(&["link", "del", &l]);
                    return Err(why);
                }
            }
        }
        Ok(made)
    }

    /// `program` in host `k` (0 is A, 1 is B, 2 is C).
    pub fn command(&self, k: usize, program: &str) -> Command {
        Link::command(&Some(self.names[k].clone()), program)
    }

    /// The namespaces' names, A first.
    pub fn names(&self) -> &[String; 3] {
        &self.names
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        // Deleting a namespace deletes its veth ends, and so the pairs.
        for name in self.names.iter().filter(|n| !n.is_empty()) {
            let _ = ip(&["netns", "del", name]);
        }
    }
}
