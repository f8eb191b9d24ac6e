//! A worker's event trace, for finding where a request's time goes (the
//! tail of small requests was found with it): with
//! `FLEXIO_SERVE_TRACE=DIR` in the environment, each worker records when
//! it enters and leaves `epoll_wait`, which connection each event was
//! for, when it drives a connection and when a response is done, on
//! `CLOCK_MONOTONIC` (the clock of `perf sched record -k mono`), and
//! writes them to `DIR/worker-N.trace` as text lines `NS KIND TOKEN ARG`
//! when it ends. Off (one branch per event) without the variable.

use std::io::Write;
use std::path::PathBuf;

/// Events kept at most per worker (about 200 MB of text at the end).
const MAX_EVENTS: usize = 8 << 20;

/// What happened.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// Entering `epoll_wait`; arg: its timeout in µs (`u64::MAX`: none).
    Wait,
    /// Back from `epoll_wait`; arg: events returned.
    Woke,
    /// An event for a connection; arg: its epoll flags.
    Event,
    /// A connection is driven; arg: 0 from an event, 1 from the ready
    /// queue, 2 from the timer wheel.
    Drive,
    /// A response was done; arg: responses done on it.
    Served,
    /// A drive ended; arg: 0 wait, 1 yield, 2 close.
    Next,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Wait => 'W',
            Kind::Woke => 'R',
            Kind::Event => 'E',
            Kind::Drive => 'D',
            Kind::Served => 'S',
            Kind::Next => 'N',
        }
    }
}

/// One worker's trace.
pub(crate) struct Trace {
    path: PathBuf,
    events: Vec<(u64, Kind, u64, u64)>,
}

impl Trace {
    /// Worker `index`'s trace, when `FLEXIO_SERVE_TRACE` names a
    /// directory.
    pub fn from_env(index: usize) -> Option<Trace> {
        let dir = std::env::var_os("FLEXIO_SERVE_TRACE")?;
        Some(Trace {
            path: PathBuf::from(dir).join(format!("worker-{index}.trace")),
            events: Vec::with_capacity(1 << 16),
        })
    }

    /// Records `kind` for `token` now.
    pub fn note(&mut self, kind: Kind, token: u64, arg: u64) {
        if self.events.len() < MAX_EVENTS {
            let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
            let ns = now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64;
            self.events.push((ns, kind, token, arg));
        }
    }

    /// Writes the trace out (best effort: a diagnostic).
    pub fn write(self) {
        let Ok(file) = std::fs::File::create(&self.path) else {
            eprintln!("flexio serve: cannot write {}", self.path.display());
            return;
        };
        let mut out = std::io::BufWriter::new(file);
        for (ns, kind, token, arg) in self.events {
            let _ = writeln!(out, "{ns} {} {token} {arg}", kind.letter());
        }
    }
}
