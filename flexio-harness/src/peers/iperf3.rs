//! `iperf3` as the network path's limit and as a peer: a one-shot server
//! and a client, each in its namespace, and the figures of its JSON.

use std::io::{self, BufRead, BufReader, Read};
use std::process::Stdio;

use flexio::measure::Rusage;

use super::{check_status, command_in, free_port, words, Iperf3Mode, Supervised, CHILD_DEADLINE};

/// The outcome of one iperf3 transfer.
#[derive(Clone, Copy, Debug)]
pub struct Iperf3Run {
    /// Receiver-side bits per second as iperf3 reports it.
    pub bits_per_second: f64,
    /// Bytes iperf3 says it moved.
    pub bytes: u64,
    /// The client's resource use (reaped inside the call).
    pub client: Rusage,
}

/// One iperf3 transfer of `bytes` to a one-shot server on `host`: the
/// server (`iperf3 -s -1`) runs in `server_ns`, the client in `client_ns`.
///
/// # Errors
/// When iperf3 fails or its JSON lacks the figures.
pub fn run_iperf3(
    bytes: u64,
    mode: Iperf3Mode,
    host: &str,
    client_ns: Option<&str>,
    server_ns: Option<&str>,
) -> io::Result<Iperf3Run> {
    let port = free_port()?.to_string();
    let server_argv = words(&[
        "iperf3",
        "-s",
        "-1",
        "-p",
        &port,
        "-B",
        host,
        "--forceflush",
    ]);
    let mut command = command_in(server_ns, &server_argv);
    command.stdout(Stdio::piped()).stderr(Stdio::null());
    let mut server = Supervised::spawn(&mut command, CHILD_DEADLINE)?;
    crate::affinity::move_to_counterpart(rustix::process::Pid::from_child(server.child_mut()));
    let stdout = server.child_mut().stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout);
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line)? == 0 {
            return Err(io::Error::other("iperf3 server ended before listening"));
        }
        if line.contains("listening") {
            break;
        }
    }
    // Keep draining the server's report so it never blocks on a full pipe.
    let drain = std::thread::spawn(move || io::copy(&mut lines, &mut io::sink()));

    let mut client_argv = words(&["iperf3", "-c", host, "-p", &port, "-n"]);
    client_argv.push(bytes.to_string());
    if mode == Iperf3Mode::ZeroCopy {
        client_argv.push("-Z".into());
    }
    client_argv.push("-J".into());
    let mut command = command_in(client_ns, &client_argv);
    command.stdout(Stdio::piped()).stderr(Stdio::null());
    let before = flexio::measure::children_rusage();
    let mut client = Supervised::spawn(&mut command, CHILD_DEADLINE)?;
    let mut json = String::new();
    client
        .child_mut()
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_string(&mut json)?;
    let status = client.wait()?;
    let after = flexio::measure::children_rusage();
    let _ = server.wait();
    let _ = drain.join();
    check_status("iperf3 client", status)?;
    let value: serde_json::Value = serde_json::from_str(&json)
        .map_err(|e| io::Error::other(format!("iperf3 -J output: {e}")))?;
    // The receiver's rate; the sender's when the receiver's interval was
    // too short to report one (tiny transfers).
    let bits_per_second = ["sum_received", "sum_sent"]
        .iter()
        .find_map(|sum| {
            value["end"][sum]["bits_per_second"]
                .as_f64()
                .filter(|b| *b > 0.0)
        })
        .ok_or_else(|| {
            let error = value["error"].as_str().unwrap_or("no end.sum_received");
            io::Error::other(format!("iperf3: {error}"))
        })?;
    Ok(Iperf3Run {
        bits_per_second,
        bytes,
        client: after.since(&before),
    })
}
