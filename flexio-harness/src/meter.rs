//! The meter: a CPU-bound co-process that counts units of work while a
//! transfer runs. The share of its solo rate it keeps during a transfer
//! shows how much CPU the transfer leaves to others — fewer copies, more
//! left (Cue's metering process, which counted `gettimeofday` calls).
//!
//! The co-process is a separate process (the `flexio` binary in a hidden
//! mode, `flexio bench --meter-child`, which calls [`child_main`]): the
//! scheduler treats it like any other program, not like a thread of the
//! bench. It runs at normal priority on the CPUs it was started on — the
//! bench starts it pinned to the transfer's CPU, so that the two compete
//! for one processor as Cue's did on its uniprocessor (at nice 19 it kept
//! 2–4% beside every mechanism and told them apart by nothing) — with a
//! spinner per allowed CPU, and answers each line on its standard input
//! with its current count; at the end of its input it exits.

use std::io::{self, BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::peers::Supervised;

/// One spinner's count, alone on its cache line so that spinners do not
/// slow each other down.
#[repr(align(128))]
#[derive(Default)]
struct Counter(AtomicU64);

/// The body of the meter co-process: one spinner per CPU it may run on
/// (so that it wants all of them and a transfer's CPU comes out of its
/// share), at the priority it was started with, and the sum of their
/// counts printed for every line read from stdin; returns when stdin
/// ends.
pub fn child_main() {
    let spinners = std::thread::available_parallelism().map_or(1, |n| n.get());
    let counters: Arc<Vec<Counter>> = Arc::new((0..spinners).map(|_| Counter::default()).collect());
    let done = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..spinners)
        .map(|i| {
            let (counters, done) = (Arc::clone(&counters), Arc::clone(&done));
            std::thread::spawn(move || {
                let counter = &counters[i].0;
                while !done.load(Ordering::Relaxed) {
                    // A little work between stores keeps the loop bound on
                    // the CPU rather than on the store.
                    for _ in 0..64 {
                        std::hint::black_box(());
                    }
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let stdin = io::stdin();
    let mut stdout = io::stdout().lock();
    for line in stdin.lock().lines() {
        if line.is_err() {
            break;
        }
        let total: u64 = counters.iter().map(|c| c.0.load(Ordering::Relaxed)).sum();
        if writeln!(stdout, "{total}").is_err() || stdout.flush().is_err() {
            break;
        }
    }
    done.store(true, Ordering::Relaxed);
    for handle in handles {
        let _ = handle.join();
    }
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
        meter.measure_solo(solo)?;
        Ok(meter)
    }

    /// Measures the solo rate again over `over`, with nothing but the
    /// machine's other tenants running: taken just before each transfer,
    /// it cancels their drift out of the kept share.
    ///
    /// # Errors
    /// When the co-process does not answer or did not count.
    pub fn measure_solo(&mut self, over: Duration) -> io::Result<f64> {
        let (start, at) = (self.count()?, Instant::now());
        std::thread::sleep(over);
        let (end, until) = (self.count()?, Instant::now());
        self.solo_rate = (end - start) as f64 / until.duration_since(at).as_secs_f64();
        if self.solo_rate <= 0.0 {
            return Err(io::Error::other("the meter did not count"));
        }
        Ok(self.solo_rate)
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
