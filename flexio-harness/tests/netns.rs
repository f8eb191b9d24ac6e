//! The network-namespace module for real (as root): every kind of host
//! it makes is there, carries a byte, and is gone on drop.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;

use flexio_harness::netns::line::Line;
use flexio_harness::netns::veth::VethPair;
use flexio_harness::netns::{free_port, Hosts, Link};

fn namespaces() -> Vec<String> {
    let output = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn link_hosts_line_and_veth_pair_are_made_work_and_are_removed_on_drop() {
    if !flexio_testkit::require_root("network namespaces and veth pairs") {
        return;
    }
    let link = Link::create(true);
    assert!(link.is_veth(), "{}", link.description);
    assert!(link.server_command("true").status().unwrap().success());
    let hosts = Hosts::create(2).unwrap();
    let line = Line::create().unwrap();
    let pair = VethPair::create().unwrap();
    let mut made: Vec<String> = hosts.names();
    made.extend(line.names().iter().cloned());
    made.extend([pair.sender_ns.clone(), pair.receiver_ns.clone()]);
    let listed = namespaces();
    for name in &made {
        assert!(listed.contains(name), "{name} not in {listed:?}");
    }

    // A byte crosses the veth pair: bound in the receiver's namespace,
    // connected from the sender's.
    let at = SocketAddr::new(pair.receiver_addr, free_port().unwrap());
    let listener =
        VethPair::in_namespace(&pair.receiver_ns, move || TcpListener::bind(at)).unwrap();
    let mut client =
        VethPair::in_namespace(&pair.sender_ns, move || TcpStream::connect(at)).unwrap();
    client.write_all(b"x").unwrap();
    let (mut served, from) = listener.accept().unwrap();
    assert_eq!(from.ip(), pair.sender_addr);
    let mut byte = [0u8];
    served.read_exact(&mut byte).unwrap();
    assert_eq!(&byte, b"x");
    // Neither side caches what a connection ended with for the next.
    for ns in [&pair.sender_ns, &pair.receiver_ns] {
        let saved = Command::new("ip")
            .args([
                "netns",
                "exec",
                ns,
                "cat",
                "/proc/sys/net/ipv4/tcp_no_metrics_save",
            ])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&saved.stdout).trim(), "1", "{ns}");
    }

    drop((link, hosts, line, pair));
    let listed = namespaces();
    for name in &made {
        assert!(!listed.contains(name), "{name} left in {listed:?}");
    }
}
