//! The progress bar over a harness's runs, shared by `flexio bench` and
//! `flexio tune`, with the stop flag Ctrl-C sets.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use flexio_bench::runner::Observer;
use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar over the runs, with the current cell as its message;
/// Ctrl-C asks the runner to stop after the current run, so that children,
/// namespaces and the temporary directory are cleaned up.
pub(crate) struct BarObserver {
    bar: Option<ProgressBar>,
    stop: Arc<AtomicBool>,
}

impl BarObserver {
    pub(crate) fn new(quiet: bool) -> Self {
        let stop = crate::signals::stop_on_signals();
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            ProgressBar::new(0).with_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} runs, cell {prefix} {msg} [{elapsed}<{eta}]",
                )
                .expect("valid template"),
            )
        });
        BarObserver { bar, stop }
    }

    /// Clears the bar; Ctrl-C is still seen by `should_stop` after.
    pub(crate) fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Observer for BarObserver {
    fn cell_started(&mut self, index: usize, cells: usize, label: &str) {
        if let Some(bar) = &self.bar {
            bar.set_prefix(format!("{}/{cells}", index + 1));
            bar.set_message(label.to_string());
        }
    }

    fn run_finished(&mut self, done: usize, total: usize) {
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    }

    fn note(&mut self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(format!("note: {text}")),
            None => eprintln!("note: {text}"),
        }
    }

    fn should_stop(&mut self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}
