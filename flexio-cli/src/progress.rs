//! A progress bar for long flows: bytes, rate and ETA on a terminal, drawn
//! only once a flow has run for about a second, never with `--quiet` or
//! when stderr is not a terminal.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flexio::Progress;
use indicatif::{ProgressBar, ProgressStyle};

/// Draws a bar from a [`Progress`] on its own thread until dropped.
pub struct ProgressBarThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl ProgressBarThread {
    /// Starts watching `progress`; draws nothing when `quiet` or when
    /// stderr is not a terminal.
    pub fn start(progress: Arc<Progress>, quiet: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || draw(&progress, &stop))
        });
        ProgressBarThread { stop, handle }
    }
}

impl Drop for ProgressBarThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

fn draw(progress: &Progress, stop: &AtomicBool) {
    let started = Instant::now();
    let tick = Duration::from_millis(100);
    let mut bar: Option<ProgressBar> = None;
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(tick);
        if bar.is_none() && started.elapsed() >= Duration::from_secs(1) {
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
