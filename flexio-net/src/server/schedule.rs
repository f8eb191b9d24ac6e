//! Cue's schedule in the server (`--schedule K,T`): every response body
//! goes out in chunks of the configured size, and after every K chunks its
//! connection pauses T — in its worker's timer wheel, like a rate's wait,
//! so a paused connection holds no thread and the others go on. Each
//! connection keeps its own count; a new body starts a new one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flexio::pace::Schedule;

/// What the schedules of one server did, over all its connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScheduleTally {
    /// Response bodies sent under the schedule (to their end).
    pub bodies: u64,
    /// Chunks sent: a chunk's worth of bytes, or a body's last bytes.
    pub chunks: u64,
    /// Pauses made (none after a body's last chunk).
    pub pauses: u64,
    /// Time spent in those pauses, from each one's start until its
    /// connection was driven again.
    pub paused: Duration,
}

/// The counters behind [`ScheduleTally`], shared by the workers.
#[derive(Debug, Default)]
pub(crate) struct ScheduleCounts {
    bodies: AtomicU64,
    chunks: AtomicU64,
    pauses: AtomicU64,
    paused_ns: AtomicU64,
}

impl ScheduleCounts {
    pub fn tally(&self) -> ScheduleTally {
        ScheduleTally {
            bodies: self.bodies.load(Ordering::Relaxed),
            chunks: self.chunks.load(Ordering::Relaxed),
            pauses: self.pauses.load(Ordering::Relaxed),
            paused: Duration::from_nanos(self.paused_ns.load(Ordering::Relaxed)),
        }
    }
}

/// One connection's place in its schedule.
#[derive(Debug)]
pub(crate) struct Scheduled {
    schedule: Schedule,
    /// Bytes per chunk.
    chunk: u64,
    /// Bytes of the current chunk sent so far.
    in_chunk: u64,
    /// Chunks sent since the last pause (or the body's start).
    since_pause: u32,
    /// The pause in force: when it began and when it ends.
    pause: Option<(Instant, Instant)>,
}

impl Scheduled {
    pub fn new(schedule: Schedule, chunk: u64) -> Scheduled {
        Scheduled {
            schedule,
            chunk: chunk.max(1),
            in_chunk: 0,
            since_pause: 0,
            pause: None,
        }
    }

    /// A new body starts its schedule afresh.
    pub fn start_body(&mut self) {
        self.in_chunk = 0;
        self.since_pause = 0;
        self.pause = None;
    }

    /// When the pause in force ends, if it has not yet; a pause that is
    /// over is counted (its length, as taken) and forgotten.
    pub fn paused_until(&mut self, now: Instant, counts: &ScheduleCounts) -> Option<Instant> {
        let (began, ends) = self.pause?;
        if now < ends {
            return Some(ends);
        }
        let taken = now.saturating_duration_since(began).as_nanos();
        counts
            .paused_ns
            .fetch_add(u64::try_from(taken).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.pause = None;
        None
    }

    /// The most bytes the next turn may send: what is left of the chunk.
    pub fn room(&self) -> u64 {
        self.chunk - self.in_chunk
    }

    /// Counts `bytes` sent at `now` (at most [`Self::room`]); `done` when
    /// the body ended with them. Returns the pause's end when they
    /// completed the K-th chunk and more of the body is left.
    pub fn sent(
        &mut self,
        bytes: u64,
        done: bool,
        now: Instant,
        counts: &ScheduleCounts,
    ) -> Option<Instant> {
        self.in_chunk += bytes;
        let whole = self.in_chunk >= self.chunk || (done && self.in_chunk > 0);
        if whole {
            self.in_chunk = 0;
            self.since_pause += 1;
            counts.chunks.fetch_add(1, Ordering::Relaxed);
        }
        if done {
            counts.bodies.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        if whole && self.since_pause >= self.schedule.chunks {
            self.since_pause = 0;
            counts.pauses.fetch_add(1, Ordering::Relaxed);
            let ends = crate::deadline::after(now, self.schedule.pause);
            self.pause = Some((now, ends));
            return Some(ends);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_chunks_then_a_pause_and_none_after_the_last() {
        let counts = ScheduleCounts::default();
        let schedule: Schedule = "2,16".parse().unwrap();
        let mut scheduled = Scheduled::new(schedule, 100);
        let now = Instant::now();
        // Five chunks of 100 bytes, the third sent in two turns.
        assert_eq!(scheduled.sent(100, false, now, &counts), None);
        let ends = scheduled.sent(100, false, now, &counts).unwrap();
        assert_eq!(ends, now + Duration::from_millis(16));
        assert_eq!(scheduled.paused_until(now, &counts), Some(ends));
        assert_eq!(scheduled.paused_until(ends, &counts), None);
        assert_eq!(scheduled.room(), 100);
        assert_eq!(scheduled.sent(40, false, ends, &counts), None);
        assert_eq!(scheduled.room(), 60);
        assert_eq!(scheduled.sent(60, false, ends, &counts), None);
        assert!(scheduled.sent(100, false, ends, &counts).is_some());
        assert_eq!(
            scheduled.paused_until(ends, &counts),
            Some(ends + Duration::from_millis(16))
        );
        let later = ends + Duration::from_millis(20);
        assert_eq!(scheduled.paused_until(later, &counts), None);
        assert_eq!(scheduled.sent(30, true, later, &counts), None);
        let tally = counts.tally();
        assert_eq!((tally.bodies, tally.chunks, tally.pauses), (1, 5, 2));
        assert_eq!(tally.paused, Duration::from_millis(36));
        // A new body starts its count afresh.
        scheduled.start_body();
        assert_eq!(scheduled.sent(100, false, later, &counts), None);
    }
}
