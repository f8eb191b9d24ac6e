//! What every bench command shares: the error for the bench's own files
//! and the stop flag Ctrl-C sets. Kept apart from `bench` so that the
//! scenario commands it dispatches to do not import it back.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use flexio::Error;

/// An I/O error of the bench's own files, naming the path.
pub(crate) fn io_error(
    op: &'static str,
    endpoint: &std::path::Path,
    source: std::io::Error,
) -> Error {
    Error::Io {
        op,
        endpoint: endpoint.display().to_string(),
        offset: None,
        source,
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
