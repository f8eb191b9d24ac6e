//! Figure 4.18's socket buffers: file -> TCP with SO_SNDBUF and SO_RCVBUF
//! fixed at both ends (`flexio copy --socket-buffer`), 16 KiB to 4 MiB,
//! beside the kernel's autotuning, by file size; the source warm (the
//! original read the buffer cache). Over the host scenario's veth pair
//! between two network namespaces as root, else over loopback (said).

use std::time::Instant;

use super::process::{check_bytes, make_warm, source, start};
use super::{point, sweep, ThesisOptions, ThesisOutcome, ThesisPoint};
use crate::error::Result;
use flexio_bench::host_bench::link::{free_port, Link};

const MIB: u64 = 1 << 20;

/// The swept sizes, KiB; `None` is the kernel's autotuning.
const BUFFERS: [Option<u64>; 6] = [Some(16), Some(64), Some(256), Some(1024), Some(4096), None];

/// The sweep: one series per buffer size, x the file size in MB.
pub fn socket_buffers(options: &ThesisOptions) -> ThesisOutcome {
    let link = Link::create(true);
    let sizes: &[u64] = if options.quick {
        &[1, 16, 64]
    } else {
        &[1, 25, 50, 100, 200]
    };
    let buffers: Vec<Option<u64>> = if options.quick {
        vec![Some(16), Some(256), Some(4096), None]
    } else {
        BUFFERS.to_vec()
    };
    let short = (!link.is_veth()).then(|| format!("ran over {}", link.description));
    let (points, shortfall) = sweep(sizes, &buffers, short, |size, buffer| {
        one(options, &link, size, buffer)
    });
    ThesisOutcome {
        points,
        shortfall,
        setting: format!("file -> TCP over {}", link.description),
    }
}

/// The series' name for a buffer size.
pub(super) fn series(buffer: Option<u64>) -> String {
    match buffer {
        Some(kib) if kib >= 1024 => format!("socket buffers {} MiB (ours)", kib / 1024),
        Some(kib) => format!("socket buffers {kib} KiB (ours)"),
        None => "kernel autotuning (ours)".to_string(),
    }
}

fn one(
    options: &ThesisOptions,
    link: &Link,
    size: u64,
    buffer: Option<u64>,
) -> Result<ThesisPoint> {
    let source = source(&options.dir, size)?;
    let flag: Vec<String> = buffer
        .map(|kib| vec!["--socket-buffer".to_string(), format!("{kib}K")])
        .unwrap_or_default();
    point(options, &series(buffer), (size / MIB) as f64, size, || {
        make_warm(&source)?;
        let port = free_port()?;
        let authority = link.authority(port);
        let mut receiver = link.server_command(&options.flexio.to_string_lossy());
        receiver
            .args(["copy", &format!("tcp-listen://{authority}"), "/dev/null"])
            .args(["--json", "--no-progress"])
            .args(&flag);
        let mut receiver = start("the receiver", &mut receiver)?;
        receiver.wait_listening(port)?;
        let mut sender = link.client_command(&options.flexio.to_string_lossy());
        sender
            .arg("copy")
            .arg(&source)
            .arg(format!("tcp://{authority}"))
            .args(["--json", "--no-progress"])
            .args(&flag);
        let started = Instant::now();
        let sent = start("the sender", &mut sender)?.finish()?;
        let received = receiver.finish()?;
        let seconds = started.elapsed().as_secs_f64();
        check_bytes("the sender", sent, size)?;
        check_bytes("the receiver", received, size)?;
        Ok(seconds)
    })
}
