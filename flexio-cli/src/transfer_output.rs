//! What `flexio get` and `flexio put` show, with `copy`'s habits (see
//! [`crate::output`] and [`crate::progress`]): a bar with bytes, rate,
//! ETA (and files, for a tree) while stderr is a terminal; afterwards one
//! summary on stderr when stdout is a terminal or with `-v`, the JSON
//! report on stdout with `--json`, and nothing else — so `get | cat` and
//! a script's put print nothing.

use std::sync::Arc;

use clap::Args;
use flexio_net::client::TransferProgress;

use crate::output::{print_err, print_stdout, Telling};
use crate::progress::{ProgressBarThread, ProgressMode};

/// The output flags `get` and `put` share.
#[derive(Args, Clone, Debug, Default)]
pub struct OutputArgs {
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Print nothing but errors.
    #[arg(long, short, conflicts_with = "json")]
    pub quiet: bool,
    /// Print the summary (on stderr) even when stdout is not a terminal.
    #[arg(long, short)]
    pub verbose: bool,
    /// Show progress: a bar on a terminal, else a line every 2 seconds on
    /// stderr [default: a bar when stderr is a terminal].
    #[arg(long, conflicts_with = "no_progress")]
    pub progress: bool,
    /// Never show progress.
    #[arg(long)]
    pub no_progress: bool,
}

/// A transfer's progress counters and the bar drawing them, if shown.
pub struct Watch {
    /// The counters the transfer bumps: none when nothing is drawn, so an
    /// unwatched transfer counts nothing.
    pub counters: Option<Arc<TransferProgress>>,
    mode: ProgressMode,
}

impl Watch {
    /// Starts drawing; the bar is cleared when the returned guard drops.
    pub fn start(&self) -> ProgressBarThread {
        let counters = self.counters.clone().unwrap_or_default();
        ProgressBarThread::start(counters, self.mode)
    }
}

impl OutputArgs {
    /// The counters and bar mode for these flags and this terminal.
    pub fn watch(&self) -> Watch {
        let mode = ProgressMode::choose(self.progress, self.no_progress, self.quiet);
        Watch {
            counters: (mode != ProgressMode::Off).then(Arc::default),
            mode,
        }
    }

    /// How the outcome is told: `-v` asks for the summary as `--report`
    /// does for `copy`.
    pub fn telling(&self) -> Telling {
        Telling::for_this_process(self.quiet, self.json, self.verbose)
    }

    /// Tells the outcome: `summary` (lines ending in `\n`) on stderr, or
    /// `json` on stdout, or nothing, as [`OutputArgs::telling`] says.
    pub fn tell(&self, summary: impl FnOnce() -> String, json: impl FnOnce() -> String) {
        match self.telling() {
            Telling::Nothing => {}
            Telling::Summary | Telling::Report => print_err(&summary()),
            Telling::Json => print_stdout(&json()),
        }
    }
}
