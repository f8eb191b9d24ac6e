//! The bounds of the command line's durations and counts. Every duration
//! flag goes through [`duration`] and every count has a range, so no
//! number typed reaches a deadline's arithmetic (`Instant + Duration`
//! panics past the clock's range), a thread spawn or an allocation
//! unchecked: past its bound clap names the flag and the bound, and the
//! exit status is 2, as for any other usage error.

use std::time::Duration;

/// The longest wait any duration flag takes: a week. Longer than any
/// timeout, grace or linger that means something, far inside what the
/// clock holds.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// Connections one get or put opens at once (each a thread and a socket).
pub(crate) const MAX_STREAMS: u64 = 256;

/// Worker threads of `serve`.
pub(crate) const MAX_WORKERS: u64 = 1024;

/// Connections `serve` holds at once (each at least a descriptor).
pub(crate) const MAX_CONNECTIONS: u64 = 1 << 20;

/// Counted rounds of a bench.
pub(crate) const MAX_RUNS: u64 = 10_000;

/// A duration flag's value (`500ms`, `30s`, `2m`, `1h`), at most
/// [`MAX_WAIT`].
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    let duration = flexio::parse_duration(text).map_err(|e| e.to_string())?;
    if duration > MAX_WAIT {
        return Err(format!(
            "{text:?} is longer than the longest wait a flag takes, {}h (7 days)",
            MAX_WAIT.as_secs() / 3600
        ));
    }
    Ok(duration)
}

/// A count flag's parser: from 1 to `max`.
pub(crate) fn count(max: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..=max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_past_a_week_are_refused_with_the_bound() {
        assert_eq!(duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(duration("168h").unwrap(), MAX_WAIT);
        for text in ["10000000000000000000s", "169h", "604801"] {
            let error = duration(text).unwrap_err();
            assert!(error.contains("168h (7 days)"), "{text}: {error}");
        }
        // Past what a Duration holds: refused by the parser itself.
        let error = duration("99999999999999999999999999s").unwrap_err();
        assert!(error.contains("out of range"), "{error}");
        assert!(duration("0s").is_err());
    }
}
