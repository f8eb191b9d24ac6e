//! Figures 4.21-4.22: network -> network, host to host and through a
//! middle host that only forwards. A sends a warm file to B; B either
//! drains it (two hosts) or relays it to C with `flexio copy
//! tcp-listen://… tcp://…` — by splice (socket -> pipe -> socket, the
//! bytes never in B's user space) or by read-write (a user-space copy in
//! B). C drains. Timed from A's start to the last exit, every byte
//! counted at the far end; a round of a small file is the sum of
//! [`round_passes`](super::round_passes) such transfers. Across three
//! network namespaces joined by two veth pairs as root ([`Line`]); without
//! root over loopback (said).

use std::net::Ipv4Addr;
use std::process::Command;
use std::time::Instant;

use super::process::{check_bytes, make_warm, source, start};
use super::{point, sweep, ThesisOptions, ThesisOutcome, ThesisPoint};
use crate::error::{Error, Result};
use flexio_bench::host_bench::line::Line;
use flexio_bench::host_bench::link::free_port;

const MIB: u64 = 1 << 20;

/// How the bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// A -> B, B drains.
    Direct,
    /// A -> B -> C, B relays with this mechanism.
    Relay(&'static str),
}

impl Route {
    fn series(self) -> String {
        match self {
            Route::Direct => "two hosts, A -> B (ours)".into(),
            Route::Relay("splice") => "three hosts, B relays by splice (ours)".into(),
            Route::Relay(via) => format!("three hosts, B relays by {via}, user space (ours)"),
        }
    }
}

/// Where the hosts are: three namespaces, or all on loopback.
enum Hosts {
    Line(Line),
    Loopback,
}

impl Hosts {
    fn command(&self, k: usize, program: &str) -> Command {
        match self {
            Hosts::Line(line) => line.command(k, program),
            Hosts::Loopback => Command::new(program),
        }
    }

    /// Where B listens for A, and C for B.
    fn addresses(&self) -> (Ipv4Addr, Ipv4Addr) {
        match self {
            Hosts::Line(_) => (Line::B_FROM_A, Line::C),
            Hosts::Loopback => (Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST),
        }
    }
}

/// The relay against the direct transfer, by file size.
pub fn relay(options: &ThesisOptions) -> ThesisOutcome {
    let (hosts, shortfall) = match Line::create() {
        Ok(line) => (Hosts::Line(line), None),
        Err(why) => (
            Hosts::Loopback,
            Some(format!("over loopback, one host ({why})")),
        ),
    };
    let setting = match &hosts {
        Hosts::Line(line) => format!(
            "namespaces {} (A, 10.79.1.1), {} (B, 10.79.1.2 and 10.79.2.1), {} (C, 10.79.2.2), \
             two veth pairs, MTU 1500",
            line.names()[0],
            line.names()[1],
            line.names()[2]
        ),
        Hosts::Loopback => "loopback, three processes on one host".into(),
    };
    let sizes: &[u64] = if options.quick {
        &[1, 16, 64]
    } else {
        &[1, 10, 100, 400]
    };
    let routes = [
        Route::Direct,
        Route::Relay("splice"),
        Route::Relay("read-write"),
    ];
    let (points, shortfall) = sweep(sizes, &routes, shortfall, |size, route| {
        one(options, &hosts, route, size)
    });
    // The namespaces go here, with `hosts`.
    ThesisOutcome {
        points,
        shortfall,
        setting,
    }
}

fn one(options: &ThesisOptions, hosts: &Hosts, route: Route, size: u64) -> Result<ThesisPoint> {
    let source = source(&options.dir, size)?;
    let passes = options.passes(size);
    point(
        options,
        &route.series(),
        (size / MIB) as f64,
        size * passes,
        || {
            let mut seconds = 0.0;
            for _ in 0..passes {
                options.stopped()?;
                seconds += transfer(options, hosts, route, &source, size)?;
            }
            Ok(seconds)
        },
    )
}

/// One transfer of `source` along `route`: seconds from A's start to the
/// last exit, every byte checked.
fn transfer(
    options: &ThesisOptions,
    hosts: &Hosts,
    route: Route,
    source: &std::path::Path,
    size: u64,
) -> Result<f64> {
    let flexio = options.flexio.to_string_lossy().to_string();
    let (b, c) = hosts.addresses();
    make_warm(source)?;
    let (port_b, port_c) = (free_port()?, free_port()?);
    let drain = |k: usize, address: Ipv4Addr, port: u16| {
        let mut command = hosts.command(k, &flexio);
        command
            .args([
                "copy",
                &format!("tcp-listen://{address}:{port}"),
                "/dev/null",
            ])
            .args(["--json", "--no-progress"]);
        command
    };
    let mut far = match route {
        Route::Direct => start("B's receiver", &mut drain(1, b, port_b))?,
        Route::Relay(_) => start("C's receiver", &mut drain(2, c, port_c))?,
    };
    let far_port = if route == Route::Direct {
        port_b
    } else {
        port_c
    };
    far.wait_listening(far_port)?;
    let middle = match route {
        Route::Direct => None,
        Route::Relay(via) => {
            let mut command = hosts.command(1, &flexio);
            command
                .args(["copy", &format!("tcp-listen://{b}:{port_b}")])
                .arg(format!("tcp://{c}:{port_c}"))
                .args(["--via", via, "--json", "--no-progress"]);
            let mut middle = start("B's relay", &mut command)?;
            middle.wait_listening(port_b)?;
            Some(middle)
        }
    };
    let mut sender = hosts.command(0, &flexio);
    sender
        .arg("copy")
        .arg(source)
        .arg(format!("tcp://{b}:{port_b}"))
        .args(["--json", "--no-progress"]);
    let started = Instant::now();
    let sent = start("A's sender", &mut sender)?.finish()?;
    let relayed = middle.map(|m| m.finish_report()).transpose()?;
    let received = far.finish()?;
    let seconds = started.elapsed().as_secs_f64();
    check_bytes("A's sender", sent, size)?;
    if let (Some(relayed), Route::Relay(via)) = (relayed, route) {
        check_bytes("B's relay", relayed["bytes"].as_u64().unwrap_or(0), size)?;
        // What B was asked to relay by, not a fallback: the point is
        // that mechanism's.
        let used = relayed["mechanism_used"].as_str().unwrap_or("?");
        if used != via {
            return Err(Error::program(
                "B's relay",
                format!("asked for {via} and moved by {used}"),
            ));
        }
    }
    check_bytes("the far receiver", received, size)?;
    Ok(seconds)
}
