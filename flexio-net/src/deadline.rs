//! Deadlines from durations a user chose: `Instant + Duration` panics
//! when the sum is past what the clock can hold (`--head-timeout` of
//! 10¹⁹ s killed each worker at its first connection), so every deadline
//! made from a configured wait is made here, and a wait too long to hold
//! becomes one that never comes in practice.

use std::time::{Duration, Instant};

/// The farthest a deadline is put: a century, past any wait that means
/// something, and well inside what `Instant` holds on Linux (the
/// monotonic clock counts from boot in an `i64` of seconds).
pub(crate) const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// `from + wait`, with `wait` cut to [`FAR`]; never panics. Were even
/// that past the clock's range, the latest of a day or `from` itself.
pub(crate) fn after(from: Instant, wait: Duration) -> Instant {
    [wait.min(FAR), Duration::from_secs(24 * 3600)]
        .into_iter()
        .find_map(|wait| from.checked_add(wait))
        .unwrap_or(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_too_long_for_the_clock_is_a_far_deadline_not_a_panic() {
        let now = Instant::now();
        let huge = Duration::from_secs(10_000_000_000_000_000_000);
        assert!(now.checked_add(huge).is_none(), "the case this guards");
        let far = after(now, huge);
        assert_eq!(far, now + FAR);
        assert_eq!(after(now, Duration::MAX), now + FAR);
        assert_eq!(
            after(now, Duration::from_secs(10)),
            now + Duration::from_secs(10)
        );
        assert_eq!(after(now, Duration::ZERO), now);
    }
}
