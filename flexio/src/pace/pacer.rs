//! One flow's pacing: its schedule, its burst and its buckets, and what
//! they did.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Pacing, Rate, Schedule, TokenBucket};

/// What paced a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PacedBy {
    /// The kernel: `SO_MAX_PACING_RATE` on a TCP sink (TCP's own pacing,
    /// or the fq qdisc's).
    Kernel,
    /// flexio's token bucket, waiting between calls.
    TokenBucket,
    /// Only a schedule (and perhaps a burst): pauses, no rate.
    Schedule,
}

impl fmt::Display for PacedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PacedBy::Kernel => "kernel (SO_MAX_PACING_RATE)",
            PacedBy::TokenBucket => "token bucket",
            PacedBy::Schedule => "schedule",
        })
    }
}

/// What pacing did to a flow; part of the [`crate::Report`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PacingReport {
    /// Who kept the rate (or the schedule).
    pub paced_by: PacedBy,
    /// The rate asked for.
    pub target_bytes_per_s: Option<u64>,
    /// Bytes over the time from the flow's start to the end of its last
    /// call.
    pub achieved_bytes_per_s: u64,
    /// The burst in force (most bytes per call), if any.
    pub burst_bytes: Option<u64>,
    /// The schedule in force.
    pub schedule: Option<Schedule>,
    /// The largest number of bytes one call moved.
    pub largest_call_bytes: u64,
    /// Calls that moved bytes.
    pub calls: u64,
    /// Pauses the schedule made.
    pub pauses: u64,
    /// Waits for the token bucket.
    pub rate_waits: u64,
    /// Time spent in both, asleep.
    pub waited_ns: u64,
}

/// Paces one flow: the schedule, the burst, and the buckets (its own and
/// any shared). Mechanisms reach it through the one place they ask how
/// much to move next.
///
/// # Examples
/// ```
/// use std::time::{Duration, Instant};
/// use flexio::pace::{Pacer, Pacing};
/// let start = Instant::now();
/// let pacing = Pacing::parse(Some("1000"), Some("100"), Some("2,50")).unwrap();
/// let mut pacer = Pacer::new(&pacing, start);
/// assert_eq!(pacer.grant(4096), 100); // the burst caps each call
/// pacer.charge(100, start);
/// assert_eq!(pacer.delay_for(start, 100), Duration::from_millis(100)); // the rate
/// let later = start + Duration::from_millis(100);
/// pacer.charge(100, later); // two chunks: the schedule pauses 50 ms
/// assert_eq!(pacer.delay_for(later, 100), Duration::from_millis(100));
/// assert_eq!(pacer.delay(later), Duration::from_millis(50));
/// ```
#[derive(Debug)]
pub struct Pacer {
    pacing: Pacing,
    buckets: Vec<Arc<TokenBucket>>,
    kernel: bool,
    chunks_since_pause: u32,
    pause_until: Option<Instant>,
    /// When the flow started: the achieved rate counts from here.
    started: Instant,
    last_end: Option<Instant>,
    bytes: u64,
    largest: u64,
    calls: u64,
    pauses: u64,
    rate_waits: u64,
    waited: Duration,
}

impl Pacer {
    /// A pacer for `pacing` starting at `now`, with a bucket of its own
    /// when it has a rate.
    pub fn new(pacing: &Pacing, now: Instant) -> Self {
        let buckets = pacing
            .rate
            .map(|rate| {
                let burst = pacing.burst_bytes().unwrap_or(rate.default_burst());
                Arc::new(TokenBucket::new(rate, burst, now))
            })
            .into_iter()
            .collect();
        Pacer {
            pacing: *pacing,
            buckets,
            kernel: false,
            chunks_since_pause: 0,
            pause_until: None,
            started: now,
            last_end: None,
            bytes: 0,
            largest: 0,
            calls: 0,
            pauses: 0,
            rate_waits: 0,
            waited: Duration::ZERO,
        }
    }

    /// Also keeps `bucket`, shared with other flows (a total rate).
    pub fn with_shared(mut self, bucket: Arc<TokenBucket>) -> Self {
        self.buckets.push(bucket);
        self
    }

    /// The pacing asked for.
    pub fn pacing(&self) -> &Pacing {
        &self.pacing
    }

    /// The kernel keeps this flow's own rate (`SO_MAX_PACING_RATE` was
    /// set on its socket): its own bucket stands down; shared ones, the
    /// burst and the schedule still hold.
    pub fn rate_kept_by_kernel(&mut self) {
        if self.pacing.rate.is_some() && !self.kernel {
            self.kernel = true;
            self.buckets.remove(0);
        }
    }

    /// Whether the kernel keeps the rate.
    pub fn kernel_paced(&self) -> bool {
        self.kernel
    }

    /// The most bytes the next call may ask for, of `want`: a burst at
    /// most, its own or a shared bucket's (under a schedule without a
    /// burst, one `chunk` at most is for the caller to say through `want`).
    pub fn grant(&self, want: usize) -> usize {
        // A shared bucket's burst bounds calls too: several flows each
        // moving more than it at once would outrun the shared rate.
        let burst = self
            .buckets
            .iter()
            .map(|bucket| bucket.burst())
            .chain(self.pacing.burst_bytes())
            .min();
        match burst {
            Some(burst) => want.min(usize::try_from(burst).unwrap_or(usize::MAX)),
            None => want,
        }
        .max(1)
    }

    /// How long from `now` until the next call may go: the schedule's
    /// pause, or the time until every bucket is out of debt.
    pub fn delay(&self, now: Instant) -> Duration {
        self.delay_for(now, 0)
    }

    /// How long from `now` until a call of `bytes` may go: the schedule's
    /// pause, or the time until every bucket holds them.
    pub fn delay_for(&self, now: Instant, bytes: u64) -> Duration {
        let pause = self
            .pause_until
            .map_or(Duration::ZERO, |until| until.saturating_duration_since(now));
        self.buckets
            .iter()
            .map(|bucket| bucket.delay_for(now, bytes))
            .fold(pause, Duration::max)
    }

    /// Records that a call moved `bytes`, ending at `now`.
    pub fn charge(&mut self, bytes: u64, now: Instant) {
        self.last_end = Some(now);
        self.bytes += bytes;
        self.largest = self.largest.max(bytes);
        self.calls += 1;
        for bucket in &self.buckets {
            bucket.charge(bytes, now);
        }
        if let Some(schedule) = self.pacing.schedule {
            self.chunks_since_pause += 1;
            if self.chunks_since_pause >= schedule.chunks {
                self.chunks_since_pause = 0;
                self.pause_until = Some(now + schedule.pause);
            }
        }
    }

    /// Waits, on the real clock, until the next call, of `bytes`, may go
    /// (0 for calls whose size is not known: until out of debt); a pause of
    /// the schedule or a wait for the rate is counted as such.
    pub fn wait(&mut self, bytes: u64) {
        self.wait_unless(bytes, |left| {
            std::thread::sleep(left);
            false
        });
    }

    /// As [`Pacer::wait`] (for a call of `bytes`), with `sleep` doing the waiting: it waits at most
    /// the time it is given and returns `true` when the wait should end
    /// early (the sink hung up: the next call will say so at once, rather
    /// than after the pause).
    pub fn wait_unless(&mut self, bytes: u64, mut sleep: impl FnMut(Duration) -> bool) {
        let now = Instant::now();
        let delay = self.delay_for(now, bytes);
        if delay.is_zero() {
            return;
        }
        if self.pause_until.is_some_and(|until| until > now) {
            self.pauses += 1;
        } else {
            self.rate_waits += 1;
        }
        self.pause_until = None;
        let deadline = now + delay;
        // A sleep may end early on a signal: sleep again for what is left.
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || sleep(left) {
                break;
            }
        }
        self.waited += Instant::now() - now;
    }

    /// Counts a wait that the caller made itself (a server that deferred
    /// a connection instead of sleeping).
    pub fn waited_outside(&mut self, waited: Duration, was_pause: bool) {
        if was_pause {
            self.pauses += 1;
            self.pause_until = None;
        } else {
            self.rate_waits += 1;
        }
        self.waited += waited;
    }

    /// What pacing did so far.
    pub fn report(&self) -> PacingReport {
        let span = self.last_end.map_or(Duration::ZERO, |last| {
            last.saturating_duration_since(self.started)
        });
        let achieved = if span.is_zero() {
            0
        } else {
            (self.bytes as f64 / span.as_secs_f64()) as u64
        };
        let paced_by = if self.kernel {
            PacedBy::Kernel
        } else if !self.buckets.is_empty() {
            PacedBy::TokenBucket
        } else {
            PacedBy::Schedule
        };
        PacingReport {
            paced_by,
            target_bytes_per_s: self.pacing.rate.map(Rate::bytes_per_second),
            achieved_bytes_per_s: achieved,
            burst_bytes: self.pacing.burst_bytes(),
            schedule: self.pacing.schedule,
            largest_call_bytes: self.largest,
            calls: self.calls,
            pauses: self.pauses,
            rate_waits: self.rate_waits,
            waited_ns: self.waited.as_nanos() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a pacer on a made-up clock that jumps exactly to when each
    /// call may go, and checks the bytes moved against the clock.
    #[test]
    fn a_bucket_never_lets_more_than_rate_times_time_plus_a_burst_through() {
        let start = Instant::now();
        let pacing = Pacing::parse(Some("1M"), Some("64K"), None).unwrap();
        let mut pacer = Pacer::new(&pacing, start);
        let (rate, burst) = (1u64 << 20, 64u64 << 10);
        let mut now = start;
        let mut moved = 0u64;
        for call in 0..200u64 {
            // Calls of varying sizes, each at most a burst.
            let bytes = pacer.grant(((call * 7919) % 100_000 + 1) as usize) as u64;
            now += pacer.delay_for(now, bytes);
            assert!(bytes <= burst);
            pacer.charge(bytes, now);
            moved += bytes;
            let elapsed = (now - start).as_secs_f64();
            // (+1: the delay is rounded down to a nanosecond.)
            assert!(
                moved as f64 <= rate as f64 * elapsed + burst as f64 + 1.0,
                "{moved} bytes by {elapsed} s"
            );
        }
        // And it is not slower than the rate either: no call waited past
        // its due time, so the time is what the bytes owed.
        let elapsed = (now - start).as_secs_f64();
        let owed = (moved - burst) as f64 / rate as f64;
        assert!((elapsed - owed).abs() <= 1e-6, "{elapsed} against {owed}");
    }

    #[test]
    fn a_shared_bucket_holds_the_total_of_two_pacers() {
        let start = Instant::now();
        let total = Arc::new(TokenBucket::new(Rate::new(1000).unwrap(), 100, start));
        let pacing = Pacing::parse(Some("1000"), Some("100"), None).unwrap();
        let mut a = Pacer::new(&pacing, start).with_shared(Arc::clone(&total));
        let mut b = Pacer::new(&pacing, start).with_shared(Arc::clone(&total));
        a.charge(100, start);
        // b's own bucket is full, but the shared one is spent.
        assert_eq!(b.delay(start), Duration::ZERO);
        b.charge(100, start);
        assert_eq!(a.delay(start), Duration::from_millis(100));
        assert_eq!(b.delay(start), Duration::from_millis(100));
    }

    #[test]
    fn a_schedule_pauses_after_every_k_chunks_and_not_after_the_last() {
        let start = Instant::now();
        let pacing = Pacing::parse(None, Some("10"), Some("3,20")).unwrap();
        let mut pacer = Pacer::new(&pacing, start);
        let mut now = start;
        let mut pauses = 0;
        for _ in 0..9 {
            let delay = pacer.delay(now);
            if !delay.is_zero() {
                assert_eq!(delay, Duration::from_millis(20));
                pauses += 1;
                now += delay;
            }
            pacer.charge(10, now);
        }
        // Pauses after chunks 3 and 6; the one due after 9 is never
        // taken, as no call follows.
        assert_eq!(pauses, 2);
        assert_eq!(pacer.report().paced_by, PacedBy::Schedule);
    }
}
