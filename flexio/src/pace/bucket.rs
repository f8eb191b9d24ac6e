//! A token bucket on the caller's clock.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Rate;

/// A token bucket on the caller's clock, shareable between flows and
/// threads (a server's total rate). It charges after the fact: it lets a
/// call go whenever it is not in debt, and the bytes moved are then owed.
/// Unused credit is kept up to one burst.
///
/// # Examples
/// ```
/// use std::time::{Duration, Instant};
/// use flexio::pace::{Rate, TokenBucket};
/// let start = Instant::now();
/// let bucket = TokenBucket::new(Rate::new(1000).unwrap(), 100, start);
/// assert_eq!(bucket.delay(start), Duration::ZERO);
/// bucket.charge(600, start); // 100 of credit, 500 owed: half a second
/// assert_eq!(bucket.delay(start), Duration::from_millis(500));
/// assert_eq!(bucket.delay(start + Duration::from_millis(500)), Duration::ZERO);
/// // A call that must find its 100 bytes in the bucket waits for them.
/// let then = start + Duration::from_millis(500);
/// assert!(bucket.delay_for(then, 100) > Duration::from_millis(99));
/// assert!(bucket.delay_for(then, 100) <= Duration::from_millis(100));
/// ```
#[derive(Debug)]
pub struct TokenBucket {
    rate: Rate,
    burst: u64,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    /// Credit in bytes (negative: debt) as of `at`.
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    /// A full bucket (one burst of credit) at `now`.
    pub fn new(rate: Rate, burst: u64, now: Instant) -> Self {
        TokenBucket {
            rate,
            burst: burst.max(1),
            state: Mutex::new(BucketState {
                tokens: burst.max(1) as f64,
                at: now,
            }),
        }
    }

    /// The rate it keeps.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The credit it keeps at most.
    pub fn burst(&self) -> u64 {
        self.burst
    }

    fn refill(&self, state: &mut BucketState, now: Instant) {
        if now > state.at {
            let earned = (now - state.at).as_secs_f64() * self.rate.bytes_per_second() as f64;
            state.tokens = (state.tokens + earned).min(self.burst as f64);
            state.at = now;
        }
    }

    /// How long from `now` until a call may go (zero: now): until the
    /// bucket is out of debt.
    pub fn delay(&self, now: Instant) -> Duration {
        self.delay_for(now, 0)
    }

    /// How long from `now` until a call of `bytes` may go: until the
    /// bucket holds them (a burst at most), so that no stretch of time
    /// sees more than `rate × time + burst`.
    pub fn delay_for(&self, now: Instant, bytes: u64) -> Duration {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.refill(&mut state, now);
        let needed = bytes.min(self.burst) as f64;
        if state.tokens >= needed {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((needed - state.tokens) / self.rate.bytes_per_second() as f64)
        }
    }

    /// Records that `bytes` moved at `now`.
    pub fn charge(&self, bytes: u64, now: Instant) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.refill(&mut state, now);
        state.tokens -= bytes as f64;
    }
}
