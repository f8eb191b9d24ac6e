//! A progress bar for long flows: bytes, rate and ETA on a terminal, drawn
//! only once a flow has run for about a second, never with `--quiet` or
//! when stderr is not a terminal.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flexio::Progress;
use indicatif::{ProgressBar, ProgressStyle};

/// Draws a bar from a [`Progress`] on its own thread until dropped.
pub struct ProgressBarThread {
    state: Arc<AtomicU8>,
    handle: Option<JoinHandle<()>>,
}

/// The drawing thread has drawn nothing yet.
const WAITING: u8 = 0;
/// The drawing thread shows a bar, which it must clear before the report.
const DRAWING: u8 = 1;
/// The flow ended.
const STOPPED: u8 = 2;

impl ProgressBarThread {
    /// Starts watching `progress`; draws nothing when `quiet` or when
    /// stderr is not a terminal.
    pub fn start(progress: Arc<Progress>, quiet: bool) -> Self {
        let state = Arc::new(AtomicU8::new(WAITING));
        let handle = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let state = Arc::clone(&state);
            std::thread::spawn(move || draw(&progress, &state))
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
        // ended within the first second does not wait for the thread to
        // be scheduled and exit (about 175 µs of a 1.2 ms 4 KiB copy on a
        // loaded 2-core machine): it ends at its next tick, or with the
        // process.
        if previous == DRAWING {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

fn draw(progress: &Progress, state: &AtomicU8) {
    let started = Instant::now();
    let tick = Duration::from_millis(100);
    let mut bar: Option<ProgressBar> = None;
    while state.load(Ordering::Acquire) != STOPPED {
        std::thread::park_timeout(tick);
        if bar.is_none() && started.elapsed() >= Duration::from_secs(1) {
            // Stopped meanwhile: nobody waits for a bar to be cleared.
            if state
                .compare_exchange(WAITING, DRAWING, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                return;
            }
            bar = Some(new_bar(progress.total()));
        }
        if let Some(bar) = &bar {
            bar.set_position(progress.done());
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

fn new_bar(total: Option<u64>) -> ProgressBar {
    match total {
        Some(total) => ProgressBar::new(total).with_style(
            ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
            )
            .expect("valid template"),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec}")
                .expect("valid template"),
        ),
    }
}
