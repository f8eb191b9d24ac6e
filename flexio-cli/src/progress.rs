//! Progress of a long flow (a copy, a get, a put): a bar with bytes, rate and ETA on a terminal,
//! or, with `--progress` when stderr is not a terminal, a line every few
//! seconds (as `dd status=progress`).
//!
//! Nothing is drawn in a flow's first second, so short flows stay silent.
//! The rate and ETA are shown only once they mean something: measured by
//! this watcher over at least a second of the flow's own progress, never
//! from a first sample that holds everything moved before the bar came up
//! (that is how a bar once showed "8.60 TiB/s").

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flexio::tree::TreeProgress;
use flexio::{format_bytes, format_rate, Progress};
use indicatif::{ProgressBar, ProgressStyle};

/// How progress is shown, as chosen on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// Nothing (`--quiet`, `--no-progress`, or stderr not a terminal).
    Off,
    /// A bar redrawn in place on the terminal.
    Bar,
    /// A line every [`LINE_EVERY`] on stderr (`--progress` without a
    /// terminal).
    Lines,
}

/// Bytes one kernel call may move while progress is shown. copy_file_range
/// and sendfile otherwise move up to 1 GiB a call, and a 2 GiB copy's bar
/// sat at 50% for a second; 64 MiB is 16–30 ms at this machine's 2–4 GiB/s,
/// and 16 calls instead of 1 per GiB cost nothing measurable.
pub const CALL_LIMIT_WITH_PROGRESS: usize = 64 << 20;

/// Time between progress lines when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(2);

/// Time before anything is drawn.
const QUIET_START: Duration = Duration::from_secs(1);

impl ProgressMode {
    /// The mode for `--progress` / `--no-progress` / `--quiet` and
    /// whether stderr is a terminal.
    pub fn choose(progress: bool, no_progress: bool, quiet: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        match (quiet || no_progress, progress, terminal) {
            (true, _, _) => ProgressMode::Off,
            (false, _, true) => ProgressMode::Bar,
            (false, true, false) => ProgressMode::Lines,
            (false, false, false) => ProgressMode::Off,
        }
    }
}

/// What a watcher reads of a flow or a tree at one moment.
pub struct Snapshot {
    /// Bytes in the sink(s) so far.
    pub bytes_done: u64,
    /// Bytes to move, when known.
    pub bytes_total: Option<u64>,
    /// The total is only what was found so far (a walker still running).
    pub at_least: bool,
    /// Files done and found, for a tree.
    pub files: Option<(u64, u64)>,
}

/// Something whose progress can be drawn.
pub trait Watched: Send + Sync + 'static {
    /// Reads it now.
    fn snapshot(&self) -> Snapshot;
}

impl Watched for Progress {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            bytes_done: self.done(),
            bytes_total: self.total(),
            at_least: false,
            files: None,
        }
    }
}

impl Watched for TreeProgress {
    fn snapshot(&self) -> Snapshot {
        let (files_found, bytes_found, finished) = self.found();
        Snapshot {
            bytes_done: self.bytes_done(),
            bytes_total: Some(bytes_found),
            at_least: !finished,
            files: Some((self.files_done(), files_found)),
        }
    }
}

impl Watched for flexio_net::client::TransferProgress {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            bytes_done: self.bytes_done(),
            bytes_total: self.bytes_total(),
            at_least: self.still_finding(),
            files: self.files(),
        }
    }
}

/// Draws a [`Watched`] flow or tree on its own thread until dropped.
pub struct ProgressBarThread {
    state: Arc<AtomicU8>,
    handle: Option<JoinHandle<()>>,
}

/// The watcher has drawn nothing yet.
const WAITING: u8 = 0;
/// The watcher shows a bar (or has printed lines), which must be cleared
/// (or finished) before the report.
const DRAWING: u8 = 1;
/// The flow ended.
const STOPPED: u8 = 2;

impl ProgressBarThread {
    /// Starts watching `progress` in `mode`.
    pub fn start<W: Watched>(progress: Arc<W>, mode: ProgressMode) -> Self {
        let state = Arc::new(AtomicU8::new(WAITING));
        let handle = (mode != ProgressMode::Off).then(|| {
            let state = Arc::clone(&state);
            std::thread::spawn(move || watch(&*progress, &state, mode))
        });
        ProgressBarThread { state, handle }
    }
}

impl Drop for ProgressBarThread {
    fn drop(&mut self) {
        let previous = self.state.swap(STOPPED, Ordering::AcqRel);
        let Some(handle) = self.handle.take() else {
            return;
        };
        // Only a drawn bar must be cleared before the report. A flow that
        // ended within the first second does not wait for the thread to be
        // scheduled and exit (about 175 µs of a 1.2 ms 4 KiB copy on a
        // loaded 2-core machine): it ends at its next tick, or with the
        // process.
        if previous == DRAWING {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

/// The rate over the watcher's own samples: from the first sample it took
/// to the latest, and only once they are at least a second apart.
struct RateWindow {
    first: Option<(Instant, u64)>,
}

impl RateWindow {
    fn rate(&mut self, now: Instant, done: u64) -> Option<f64> {
        let (since, from) = *self.first.get_or_insert((now, done));
        let seconds = now.duration_since(since).as_secs_f64();
        (seconds >= 1.0 && done > from).then(|| (done - from) as f64 / seconds)
    }
}

fn watch<W: Watched>(progress: &W, state: &AtomicU8, mode: ProgressMode) {
    let started = Instant::now();
    let tick = match mode {
        ProgressMode::Bar => Duration::from_millis(100),
        _ => LINE_EVERY,
    };
    let mut window = RateWindow { first: None };
    let mut bar: Option<ProgressBar> = None;
    let mut drawing = false;
    while state.load(Ordering::Acquire) != STOPPED {
        std::thread::park_timeout(if started.elapsed() < QUIET_START {
            QUIET_START
        } else {
            tick
        });
        if started.elapsed() < QUIET_START {
            continue;
        }
        if !drawing {
            // Stopped meanwhile: nobody waits for anything to be cleared.
            if state
                .compare_exchange(WAITING, DRAWING, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                return;
            }
            drawing = true;
        }
        let now = Instant::now();
        let snapshot = progress.snapshot();
        let rate = window.rate(now, snapshot.bytes_done);
        let text = describe(&snapshot, rate);
        match mode {
            ProgressMode::Bar => {
                let bar = bar.get_or_insert_with(|| new_bar(snapshot.bytes_total));
                if let Some(total) = snapshot.bytes_total {
                    bar.set_length(total.max(snapshot.bytes_done));
                }
                bar.set_position(snapshot.bytes_done);
                bar.set_message(text);
            }
            _ => {
                let _ = writeln!(std::io::stderr().lock(), "flexio: {text}");
            }
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

/// `1.20 GiB of 4.00 GiB (30%), 1.01 GiB/s, ETA 3 s` — the rate and ETA
/// only once known; for a tree, files first, and "at least" while the
/// walker is still finding them (no ETA then).
fn describe(snapshot: &Snapshot, rate: Option<f64>) -> String {
    let (done, total) = (snapshot.bytes_done, snapshot.bytes_total);
    let at_least = if snapshot.at_least { "at least " } else { "" };
    let mut text = match snapshot.files {
        Some((files_done, files_found)) => {
            format!("{files_done} of {at_least}{files_found} files, ")
        }
        None => String::new(),
    };
    text += &format_bytes(done);
    if let Some(total) = total.filter(|&t| t > 0) {
        text += &format!(
            " of {at_least}{} ({}%)",
            format_bytes(total),
            done.saturating_mul(100) / total
        );
    }
    if let Some(rate) = rate {
        text += &format!(", {}", format_rate(rate));
        if let (Some(total), false) = (total, snapshot.at_least) {
            let left = total.saturating_sub(done) as f64 / rate;
            text += &format!(", ETA {}", human_duration(left));
        }
    }
    text
}

fn human_duration(seconds: f64) -> String {
    let seconds = seconds.ceil() as u64;
    match seconds {
        0..=99 => format!("{seconds} s"),
        100..=5999 => format!("{} min {} s", seconds / 60, seconds % 60),
        _ => format!("{} h {} min", seconds / 3600, seconds % 3600 / 60),
    }
}

fn new_bar(total: Option<u64>) -> ProgressBar {
    match total {
        Some(total) => ProgressBar::new(total)
            .with_style(ProgressStyle::with_template("{bar:40} {msg}").expect("valid template")),
        None => ProgressBar::new_spinner()
            .with_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rate_until_a_second_of_the_watchers_own_samples() {
        let start = Instant::now();
        let mut window = RateWindow { first: None };
        // The first sample holds everything moved before the bar came up:
        // it must not be divided by a few milliseconds.
        assert_eq!(window.rate(start, 8 << 30), None);
        assert_eq!(
            window.rate(start + Duration::from_millis(500), 9 << 30),
            None
        );
        let rate = window
            .rate(start + Duration::from_secs(2), 10 << 30)
            .unwrap();
        assert_eq!(rate, (1u64 << 30) as f64);
    }

    fn flow(done: u64, total: Option<u64>) -> Snapshot {
        Snapshot {
            bytes_done: done,
            bytes_total: total,
            at_least: false,
            files: None,
        }
    }

    #[test]
    fn lines_say_the_rate_and_eta_only_once_known() {
        assert_eq!(
            describe(&flow(512 << 20, Some(2 << 30)), None),
            "512.00 MiB of 2.00 GiB (25%)"
        );
        assert_eq!(
            describe(&flow(1 << 30, Some(2 << 30)), Some((512 << 20) as f64)),
            "1.00 GiB of 2.00 GiB (50%), 512.00 MiB/s, ETA 2 s"
        );
        assert_eq!(describe(&flow(1 << 20, None), None), "1.00 MiB");
    }

    #[test]
    fn a_tree_still_being_walked_says_at_least_and_no_eta() {
        let tree = Snapshot {
            bytes_done: 1 << 20,
            bytes_total: Some(4 << 20),
            at_least: true,
            files: Some((10, 40)),
        };
        assert_eq!(
            describe(&tree, Some((1 << 20) as f64)),
            "10 of at least 40 files, 1.00 MiB of at least 4.00 MiB (25%), 1.00 MiB/s"
        );
    }
}
