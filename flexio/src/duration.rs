//! Durations as people type them: `30s`, `500ms`, `500us`, `2m`, `1h`, `1.5s`.

use std::time::Duration;

use crate::error::{Error, Result};

/// Parses a duration: a number (decimals allowed) followed by `us` (or
/// `µs`), `ms`, `s`, `m` or `h`; a plain number is seconds.
///
/// # Errors
/// [`Error::Usage`] for an empty or negative number, an unknown unit, zero,
/// or a duration too large to represent.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// assert_eq!(flexio::parse_duration("30s").unwrap(), Duration::from_secs(30));
/// assert_eq!(flexio::parse_duration("500ms").unwrap(), Duration::from_millis(500));
/// assert_eq!(flexio::parse_duration("2m").unwrap(), Duration::from_secs(120));
/// assert_eq!(flexio::parse_duration("1.5").unwrap(), Duration::from_millis(1500));
/// assert!(flexio::parse_duration("5 fortnights").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let invalid = |why: &str| {
        Error::usage(format!(
            "invalid duration {text:?}: {why} (use e.g. 500ms, 30s, 2m or 1h)"
        ))
    };
    let value: f64 = number.parse().map_err(|_| invalid("expected a number"))?;
    let seconds = match unit.trim() {
        "us" | "µs" => value / 1e6,
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(invalid("unknown unit")),
    };
    let duration = Duration::try_from_secs_f64(seconds).map_err(|_| invalid("out of range"))?;
    if duration.is_zero() {
        return Err(invalid("must be more than zero"));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_refusals() {
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(
            parse_duration("250 ms").unwrap(),
            Duration::from_millis(250)
        );
        // A schedule's pause may be shorter than a millisecond.
        for micro in ["500us", "500µs"] {
            assert_eq!(parse_duration(micro).unwrap(), Duration::from_micros(500));
        }
        for bad in ["", "s", "0", "0s", "-1s", "1d", "1e999", "1.2.3s"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
