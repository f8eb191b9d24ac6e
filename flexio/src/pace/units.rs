//! Rates and schedules as people type them: `10M`, `512K/s`,
//! `100Mbit/s`; `8,5`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::size::{format_rate, parse_size};

/// A rate in bytes per second.
///
/// Parsed from what people type ([`Rate::from_str`]): a byte size with an
/// optional `/s` (`10M`, `10MiB/s`, `1G`: binary units as everywhere in
/// flexio), or bits spelled out (`100Mbit/s`, `1gbit`: decimal, as network
/// links are rated; `Mibit` is binary).
///
/// # Examples
/// ```
/// use flexio::pace::Rate;
/// assert_eq!("10M".parse::<Rate>().unwrap().bytes_per_second(), 10 << 20);
/// assert_eq!("100Mbit/s".parse::<Rate>().unwrap().bytes_per_second(), 12_500_000);
/// assert!("0".parse::<Rate>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Rate(u64);

impl Rate {
    /// A rate of `bytes` bytes per second.
    ///
    /// # Errors
    /// [`Error::Usage`] for zero: a flow that may not move is no flow.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(flexio::pace::Rate::new(1000).unwrap().bytes_per_second(), 1000);
    /// ```
    pub fn new(bytes: u64) -> Result<Rate> {
        if bytes == 0 {
            return Err(Error::usage(
                "a rate of 0 bytes/s would never finish; leave the rate out for no limit",
            ));
        }
        Ok(Rate(bytes))
    }

    /// Bytes per second.
    pub fn bytes_per_second(self) -> u64 {
        self.0
    }

    /// The time `bytes` take at this rate.
    pub fn time_for(self, bytes: u64) -> Duration {
        Duration::from_secs_f64(bytes as f64 / self.0 as f64)
    }

    /// The burst used when none is given: 10 ms of the rate, at least
    /// 16 KiB and at most 4 MiB — small enough that the rate holds over
    /// a tenth of a second, large enough that a call per burst is cheap.
    pub fn default_burst(self) -> u64 {
        (self.0 / 100).clamp(16 << 10, 4 << 20)
    }
}

impl FromStr for Rate {
    type Err = Error;

    fn from_str(text: &str) -> Result<Rate> {
        let trimmed = text.trim();
        let lower = trimmed.to_ascii_lowercase();
        let body = lower.strip_suffix("/s").unwrap_or(&lower);
        let bad = |why: &str| {
            Error::usage(format!(
                "invalid rate {trimmed:?}: {why} (e.g. 10M, 512K/s, 1G, 100Mbit/s)"
            ))
        };
        let bytes = match body.strip_suffix("bit") {
            Some(bits) => bits_to_bytes(bits).ok_or_else(|| bad("not a number of bits"))?,
            None => parse_size(body).map_err(|_| bad("not a size"))?,
        };
        Rate::new(bytes).map_err(|_| bad("zero"))
    }
}

/// `100m` (bits, decimal prefix) or `100mi` (binary) in bytes.
fn bits_to_bytes(text: &str) -> Option<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, prefix) = text.split_at(split);
    let number: u64 = digits.parse().ok()?;
    let scale: u64 = match prefix {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        "t" => 1_000_000_000_000,
        "ki" => 1 << 10,
        "mi" => 1 << 20,
        "gi" => 1 << 30,
        "ti" => 1 << 40,
        _ => return None,
    };
    Some(number.checked_mul(scale)? / 8)
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_rate(self.0 as f64))
    }
}

/// Cue's schedule: move `chunks` chunks (calls), then pause for `pause`.
///
/// # Examples
/// ```
/// use flexio::pace::Schedule;
/// let schedule: Schedule = "8,5".parse().unwrap();
/// assert_eq!(schedule.chunks, 8);
/// assert_eq!(schedule.pause, std::time::Duration::from_millis(5));
/// assert!("0,5".parse::<Schedule>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// Chunks moved between pauses (at least 1).
    pub chunks: u32,
    /// The pause after them.
    pub pause: Duration,
}

impl FromStr for Schedule {
    type Err = Error;

    /// `K,T`: K chunks, then T milliseconds (or a duration with its unit,
    /// `T` as in `--idle-timeout`: `500us`, `2ms`).
    fn from_str(text: &str) -> Result<Schedule> {
        let bad = |why: &str| {
            Error::usage(format!(
                "invalid schedule {text:?}: {why} (K,T: K chunks then a pause of T ms, e.g. 8,5)"
            ))
        };
        let (chunks, pause) = text.split_once(',').ok_or_else(|| bad("no comma"))?;
        let chunks: u32 = chunks
            .trim()
            .parse()
            .map_err(|_| bad("K is not a whole number"))?;
        if chunks == 0 {
            return Err(bad("K must be at least 1"));
        }
        let pause = pause.trim();
        let pause = match pause.parse::<u64>() {
            Ok(ms) => Duration::from_millis(ms),
            Err(_) => crate::duration::parse_duration(pause).map_err(|_| bad("T is not a time"))?,
        };
        if pause > Duration::from_secs(60) {
            return Err(bad("T is over a minute"));
        }
        Ok(Schedule { chunks, pause })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn rate(text: &str) -> u64 {
        text.parse::<Rate>().unwrap().bytes_per_second()
    }

    #[test]
    fn rates_take_byte_sizes_with_or_without_per_second() {
        assert_eq!(rate("10M"), 10 << 20);
        assert_eq!(rate("10MiB/s"), 10 << 20);
        assert_eq!(rate("512K/s"), 512 << 10);
        assert_eq!(rate("1G"), 1 << 30);
        assert_eq!(rate("4096"), 4096);
        assert_eq!(rate(" 2gb/s "), 2 << 30);
    }

    #[test]
    fn rates_in_bits_are_decimal_unless_binary_is_spelled() {
        assert_eq!(rate("100Mbit/s"), 12_500_000);
        assert_eq!(rate("1gbit"), 125_000_000);
        assert_eq!(rate("8000bit/s"), 1000);
        assert_eq!(rate("8Mibit/s"), 1 << 20);
    }

    #[test]
    fn bad_rates_are_usage_errors_that_say_what_was_wrong() {
        for bad in [
            "",
            "0",
            "0M",
            "fast",
            "10Q",
            "1.5G",
            "-1M",
            "10Xbit/s",
            "99999999999999999999",
        ] {
            let error = bad.parse::<Rate>().unwrap_err();
            assert!(error.is_usage(), "{bad}");
            assert!(error.to_string().contains("invalid rate"), "{bad}: {error}");
        }
    }

    #[test]
    fn schedules_are_chunks_comma_milliseconds() {
        let schedule: Schedule = "8,5".parse().unwrap();
        assert_eq!(
            (schedule.chunks, schedule.pause),
            (8, Duration::from_millis(5))
        );
        let schedule: Schedule = "1, 2ms".parse().unwrap();
        assert_eq!(schedule.pause, Duration::from_millis(2));
        let schedule: Schedule = "4,500us".parse().unwrap();
        assert_eq!(schedule.pause, Duration::from_micros(500));
        for bad in ["", "8", "0,5", "x,5", "8,x", "8,-1", "8,2m"] {
            assert!(bad.parse::<Schedule>().unwrap_err().is_usage(), "{bad}");
        }
    }
}
