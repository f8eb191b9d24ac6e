//! The meter: a CPU-bound co-process that counts loop iterations while a
//! transfer runs. The share of its solo rate it keeps during a transfer
//! shows how much CPU the transfer leaves to others — fewer copies, more
//! left.
//!
//! The co-process is a separate process (the `flexio` binary in a hidden
//! mode, `flexio bench --meter-child`, which calls [`child_main`]): the
//! scheduler treats it like any other program, not like a thread of the
//! bench. It spins on one thread and answers each line on its standard
//! input with its current count; at the end of its input it exits.

use std::io::{self, BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::peers::Supervised;

/// The body of the meter co-process: spins, counting, and prints the count
/// for every line read from stdin; returns when stdin ends.
pub fn child_main() {
    let count = Arc::new(AtomicU64::new(0));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spinner = {
        let (count, done) = (Arc::clone(&count), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                // A few iterations between stores keep the loop CPU-bound
                // rather than bound on the cache line.
                for _ in 0..64 {
                    std::hint::black_box(());
                }
                count.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let stdin = io::stdin();
    let mut stdout = io::stdout().lock();
    for line in stdin.lock().lines() {
        if line.is_err() {
            break;
        }
        if writeln!(stdout, "{}", count.load(Ordering::Relaxed)).is_err() || stdout.flush().is_err()
        {
            break;
        }
    }
    done.store(true, Ordering::Relaxed);
    let _ = spinner.join();
}

/// A running meter co-process.
#[derive(Debug)]
pub struct Meter {
    child: Supervised,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// Iterations per second with the machine otherwise idle.
    pub solo_rate: f64,
}

impl Meter {
    /// Starts `argv` as the meter and measures its solo rate over `solo`.
    ///
    /// # Errors
    /// When the co-process cannot start or does not answer.
    pub fn start(argv: &[std::ffi::OsString], solo: Duration) -> io::Result<Self> {
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = Supervised::spawn(&mut command, Duration::from_secs(3600))?;
        let input = child.child_mut().stdin.take().expect("piped stdin");
        let output = BufReader::new(child.child_mut().stdout.take().expect("piped stdout"));
        let mut meter = Meter {
            child,
            input,
            output,
            solo_rate: 0.0,
        };
        // Let it get going before the solo measurement.
        meter.count()?;
        std::thread::sleep(Duration::from_millis(50));
        let (start, at) = (meter.count()?, Instant::now());
        std::thread::sleep(solo);
        let (end, until) = (meter.count()?, Instant::now());
        meter.solo_rate = (end - start) as f64 / until.duration_since(at).as_secs_f64();
        if meter.solo_rate <= 0.0 {
            return Err(io::Error::other("the meter did not count"));
        }
        Ok(meter)
    }

    /// The co-process's count now.
    ///
    /// # Errors
    /// When it does not answer.
    pub fn count(&mut self) -> io::Result<u64> {
        self.input.write_all(b"\n")?;
        self.input.flush()?;
        let mut line = String::new();
        if self.output.read_line(&mut line)? == 0 {
            return Err(io::Error::other("the meter exited"));
        }
        line.trim()
            .parse()
            .map_err(|e| io::Error::other(format!("meter answered {line:?}: {e}")))
    }

    /// The share of its solo rate the meter kept between two counts taken
    /// `wall_ns` apart (0..1, capped at 1).
    pub fn kept(&self, counted: u64, wall_ns: u64) -> f64 {
        if wall_ns == 0 {
            return 0.0;
        }
        let rate = counted as f64 * 1e9 / wall_ns as f64;
        (rate / self.solo_rate).min(1.0)
    }

    /// Ends the co-process (closing its input; killed if it lingers).
    pub fn stop(self) {
        let Meter { child, input, .. } = self;
        drop(input);
        drop(child);
    }
}
