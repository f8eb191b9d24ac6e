//! The parallel scenario's runs: 1–8 flows at once from one source file,
//! into files, or into TCP sockets that the bench's receivers drain (Cue's
//! Tables 6–7: 1–4 parallel transfers, in-kernel against read/write).
//! Each flow runs on its own thread; besides the aggregate, each flow's
//! own throughput is kept, for Jain's index over them: its bytes over the
//! time from the common start until its last byte arrived (the receiver
//! drained it, or its file was written).

use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Instant;

use flexio::measure::{self, Rusage};
use flexio::{Flow, Report, Sink, Source};

use super::streams::{drain, Net};
use super::{joined, other};
use crate::plan::Entrant;
use crate::window::{CpuScope, Measured, Window};

/// What one flow's thread returns: its report and the CPU its thread used.
type FlowOutcome = flexio::Result<(Report, Rusage, Instant)>;

/// The CPU and context switches of the flows' own threads, summed.
fn senders_cpu(outcomes: &[FlowOutcome]) -> Rusage {
    let mut cpu = Rusage::default();
    for (_, used, _) in outcomes.iter().filter_map(|r| r.as_ref().ok()) {
        cpu.user_ns += used.user_ns;
        cpu.sys_ns += used.sys_ns;
        cpu.cpu_ns += used.cpu_ns;
        cpu.voluntary_switches += used.voluntary_switches;
        cpu.involuntary_switches += used.involuntary_switches;
        cpu.minor_faults += used.minor_faults;
        cpu.major_faults += used.major_faults;
    }
    cpu
}

/// Runs `flows` flows of `entrant` from `source` at once — into files at
/// `sinks` when the cell has no network path, else each into a socket of
/// `net` drained by a receiver thread of the bench — and measures them in
/// one window. CPU is the flows' threads' own (the receivers are the
/// bench's, as a remote peer's would be); host CPU covers everything.
pub(super) fn run<'s>(
    entrant: &Entrant,
    source: &'s Path,
    sinks: &'s [PathBuf],
    net: Option<&Net>,
    setup: impl Fn(Flow<'s>) -> Flow<'s> + Sync,
) -> io::Result<Measured> {
    if !matches!(entrant, Entrant::Flexio { .. }) {
        return Err(other("the parallel scenario runs flexio mechanisms only"));
    }
    let listeners = match net {
        Some(net) => sinks
            .iter()
            .map(|_| net.listen())
            .collect::<io::Result<Vec<TcpListener>>>()?,
        None => Vec::new(),
    };
    let mut receivers = Vec::new();
    let mut addresses = Vec::new();
    for listener in listeners {
        addresses.push(listener.local_addr()?);
        receivers.push(std::thread::spawn(move || {
            let (stream, _) = listener.accept()?;
            let bytes = drain(stream)?;
            Ok((bytes, Instant::now()))
        }));
    }
    let window = Window::open(CpuScope::Process);
    let started = Instant::now();
    let outcomes: Vec<FlowOutcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = sinks
            .iter()
            .enumerate()
            .map(|(i, sink)| {
                let (setup, address) = (&setup, addresses.get(i).copied());
                scope.spawn(move || {
                    let before = measure::thread_rusage();
                    let sink = match (address, net) {
                        (Some(address), Some(net)) => {
                            let stream = net.connect(address).map_err(|e| flexio::Error::Io {
                                op: "connect",
                                endpoint: address.to_string(),
                                offset: None,
                                source: e,
                            })?;
                            Sink::Fd(stream.into(), format!("tcp://{address}"))
                        }
                        _ => Sink::path(sink),
                    };
                    let report = setup(Flow::new(Source::path(source), sink)).run()?;
                    let used = measure::thread_rusage().since(&before);
                    Ok((report, used, Instant::now()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(flexio::Error::Usage("flow thread panicked".into())))
            })
            .collect()
    });
    let received: Vec<io::Result<(u64, Instant)>> = receivers
        .into_iter()
        .map(|r| joined(r, "receiver"))
        .collect();
    let bytes: u64 = match net {
        Some(_) => received
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|(bytes, _)| bytes)
            .sum(),
        None => outcomes
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|(report, _, _)| report.measured.bytes)
            .sum(),
    };
    let first = outcomes
        .iter()
        .find_map(|r| r.as_ref().ok())
        .map(|(r, _, _)| r);
    let mut measured = window.close_after(bytes, first);
    if net.is_some() {
        // The senders' threads, not the receivers that stand in for the
        // other machine.
        measured.charge(&senders_cpu(&outcomes));
    }
    let rate = |bytes: u64, done: Instant| {
        bytes as f64 / done.duration_since(started).as_secs_f64().max(1e-9)
    };
    measured.flow_rates = match net {
        Some(_) => received
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|&(bytes, done)| rate(bytes, done))
            .collect(),
        None => outcomes
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|(report, _, done)| rate(report.measured.bytes, *done))
            .collect(),
    };
    for outcome in outcomes {
        outcome.map_err(other)?;
    }
    for r in received {
        r?;
    }
    Ok(measured)
}
