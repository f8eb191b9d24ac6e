//! `wrk` as the load generator of the `server` scenario: its command line
//! and what its text output says (requests, bytes read, the latency
//! distribution of `--latency`, errors).

use std::io;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What one `wrk` run reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WrkReport {
    /// Completed requests.
    pub requests: u64,
    /// Seconds the run lasted, as wrk measured it.
    pub seconds: f64,
    /// Bytes read, headers included (wrk prints them in binary units with
    /// two decimals: exact to about 0.5%).
    pub bytes_read: u64,
    /// Median latency, microseconds (`None` when no request completed).
    pub p50_us: Option<f64>,
    /// 99th percentile latency, microseconds.
    pub p99_us: Option<f64>,
    /// Socket errors (connect, read, write, timeout) and non-2xx answers.
    pub errors: u64,
}

/// One load: `connections` kept-alive connections over `threads` threads
/// fetching `path` for `duration`; a request may take up to `timeout`.
#[derive(Clone, Debug)]
pub struct Load {
    /// Open connections, each a client.
    pub connections: u32,
    /// wrk's threads (at most `connections`).
    pub threads: u32,
    /// How long.
    pub duration: Duration,
    /// A request taking longer is counted as a timeout.
    pub timeout: Duration,
}

impl Load {
    /// `connections` clients on at most two threads (a small machine: wrk
    /// shares it with the server) for `duration`.
    pub fn clients(connections: u32, duration: Duration) -> Self {
        Load {
            connections,
            threads: connections.clamp(1, 2),
            duration,
            timeout: Duration::from_secs(10),
        }
    }

    /// The command line against `url` (http or https).
    pub fn command(&self, url: &str) -> Command {
        let mut command = Command::new("wrk");
        command
            .arg("--latency")
            .arg(format!("-t{}", self.threads.min(self.connections).max(1)))
            .arg(format!("-c{}", self.connections.max(1)))
            .arg(format!("-d{}s", self.duration.as_secs().max(1)))
            .arg(format!("--timeout={}s", self.timeout.as_secs().max(1)))
            .arg(url)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .stdout(Stdio::piped());
        command
    }

    /// Runs wrk to its end and reads its report.
    ///
    /// # Errors
    /// wrk cannot start, fails, or prints nothing readable.
    pub fn run(&self, url: &str) -> io::Result<WrkReport> {
        let output = self.command(url).output()?;
        let text = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            return Err(io::Error::other(format!(
                "wrk exited with {}: {}{}",
                output.status,
                text,
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        parse(&text)
            .ok_or_else(|| io::Error::other(format!("wrk printed nothing readable: {text}")))
    }
}

/// Whether wrk is on `PATH`.
pub fn available() -> bool {
    crate::peers::find_program("wrk").is_some()
}

/// Reads wrk's text report.
///
/// # Examples
/// ```
/// use flexio_bench::server_bench::wrk::parse;
/// let text = "  Latency Distribution\n     50%  108.00us\n     99%    1.52ms\n  \
///             37495 requests in 1.10s, 155.08MB read\nRequests/sec:  34108.29\n";
/// let report = parse(text).unwrap();
/// assert_eq!(report.requests, 37495);
/// assert_eq!(report.p50_us, Some(108.0));
/// assert_eq!(report.p99_us, Some(1520.0));
/// ```
pub fn parse(text: &str) -> Option<WrkReport> {
    let mut report = WrkReport::default();
    let mut found = false;
    for line in text.lines().map(str::trim) {
        if let Some((requests, rest)) = line.split_once(" requests in ") {
            report.requests = requests.trim().parse().ok()?;
            let (seconds, read) = rest.split_once(", ")?;
            report.seconds = duration_us(seconds)? / 1e6;
            report.bytes_read = bytes(read.trim_end_matches(" read"))?;
            found = true;
        } else if let Some(value) = line.strip_prefix("50%") {
            report.p50_us = duration_us(value.trim());
        } else if let Some(value) = line.strip_prefix("99%") {
            report.p99_us = duration_us(value.trim());
        } else if let Some(errors) = line.strip_prefix("Socket errors:") {
            // "connect 0, read 0, write 0, timeout 0"
            report.errors += errors
                .split(',')
                .filter_map(|part| part.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>();
        } else if let Some(count) = line.strip_prefix("Non-2xx or 3xx responses:") {
            report.errors += count.trim().parse::<u64>().unwrap_or(0);
        }
    }
    if report.requests == 0 {
        // No request completed: wrk prints no distribution worth reading.
        report.p50_us = None;
        report.p99_us = None;
    }
    found.then_some(report)
}

/// `108.00us`, `1.52ms`, `2.00s`, `1.10m` in microseconds.
fn duration_us(text: &str) -> Option<f64> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.trim().parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    Some(value * scale)
}

/// `155.08MB` (binary units, as wrk prints them) in bytes.
fn bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().ok()?;
    let scale = match unit {
        "" | "B" => 1.0,
        "KB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        "TB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some((value * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Running 1s test @ http://127.0.0.1:18080/f4k
  2 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   121.24us  157.84us   3.64ms   98.39%
    Req/Sec    17.97k     4.74k   34.85k    90.48%
  Latency Distribution
     50%  108.00us
     75%  128.00us
     90%  160.00us
     99%  518.00us
  37495 requests in 1.10s, 155.08MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 4
Requests/sec:  34108.29
Transfer/sec:    141.07MB
";

    #[test]
    fn a_whole_report_is_read() {
        let report = parse(SAMPLE).unwrap();
        assert_eq!(report.requests, 37495);
        assert!((report.seconds - 1.10).abs() < 1e-9);
        assert_eq!(report.bytes_read, (155.08f64 * 1048576.0).round() as u64);
        assert_eq!(report.p50_us, Some(108.0));
        assert_eq!(report.p99_us, Some(518.0));
        assert_eq!(report.errors, 9);
    }

    #[test]
    fn units_are_read() {
        assert_eq!(duration_us("2.00s"), Some(2e6));
        assert_eq!(duration_us("1.5ms"), Some(1500.0));
        assert_eq!(bytes("1.00GB"), Some(1 << 30));
        assert_eq!(bytes("512B"), Some(512));
        assert_eq!(bytes("3XB"), None);
        assert!(parse("nothing here").is_none());
    }
}
