//! What the commands do on SIGINT, SIGTERM and SIGHUP: a copy or a get
//! removes the temporary file it made and dies of the signal; a bench, a
//! tune or a server sets a flag, stops at its next step and cleans up.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// On SIGINT, SIGTERM or SIGHUP: remove the temporary file and socket
/// file the flow made, and die of the signal (the shell reports 128 + its
/// number). Costs three `sigaction`s; no thread. `what` (`copy`, `get`)
/// names the work in the warning when the handlers cannot be installed.
pub(crate) fn remove_temporaries_on_signals(what: &str) {
    if let Err(error) = flexio::cleanup::remove_temporaries_on_signals() {
        eprintln!(
            "flexio: warning: cannot catch signals ({error}); an interrupted {what} may leave its temporary file"
        );
    }
}

/// A flag SIGINT and SIGTERM set, for a bench to stop at the next run and
/// clean up; a second signal, while the first is being honoured, exits at
/// once (children still die with their process group on Ctrl-C).
pub(crate) fn stop_on_signals() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop));
        let _ = signal_hook::flag::register(signal, Arc::clone(&stop));
    }
    stop
}
