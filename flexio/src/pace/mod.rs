//! Pacing: how fast a flow may go and when it must pause. Ground floor —
//! it imports nothing of flexio but the size parser and the error type.
//!
//! A [`Pacing`] is what a user asks for: a [`Rate`], a burst (the most
//! bytes one call moves) and a [`Schedule`] (Cue's k chunks, then a pause
//! of t ms). A [`Pacer`] carries it out for one flow: before each call the
//! mechanism's loop asks [`Pacer::delay`] how long to wait and
//! [`Pacer::grant`] how much to ask for, and after it tells
//! [`Pacer::charge`] what moved. The rate is kept by [`TokenBucket`]s —
//! the flow's own, and any shared with other flows (a server's total) —
//! that run on the caller's clock (`Instant`s passed in), so a server can
//! ask "when may this connection go on?" without sleeping, and tests can
//! drive them with made-up instants.
//!
//! The buckets charge after the fact: a call may go whenever a bucket is
//! not in debt, moves at most a burst, and the bytes it moved are then
//! owed. Over any stretch the bytes moved are at most `rate × time` plus
//! the bucket's credit (a burst) and one call (a burst), and a flow that
//! ends owes nothing to anyone: no sleep follows its last call.
//!
//! ```text
//! units.rs   Rate, Schedule: what people type (10M, 100Mbit/s, 8,5)
//! bucket.rs  TokenBucket: a rate on the caller's clock, shareable
//! pacer.rs   Pacer: one flow's schedule, burst and buckets; its report
//! ```

mod bucket;
mod pacer;
mod units;

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::size::parse_size;

pub use bucket::TokenBucket;
pub use pacer::{PacedBy, Pacer, PacingReport};
pub use units::{Rate, Schedule};

/// What a flow's pacing is to be.
///
/// # Examples
/// ```
/// use flexio::pace::Pacing;
/// let pacing = Pacing::parse(Some("10M"), Some("64K"), None).unwrap();
/// assert_eq!(pacing.burst_bytes(), Some(64 << 10));
/// assert!(Pacing::parse(None, Some("0"), None).is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pacing {
    /// The most bytes per second; `None` for no limit.
    pub rate: Option<Rate>,
    /// The most bytes one call moves; `None` for the rate's
    /// [`Rate::default_burst`] (or no cap without a rate).
    pub burst: Option<u64>,
    /// Pauses between runs of chunks.
    pub schedule: Option<Schedule>,
    /// Who keeps the rate on a TCP sink.
    pub by: PaceBy,
}

/// Who is to keep a TCP sink's rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PaceBy {
    /// The one measured to keep the rate: the token bucket. `flexio bench
    /// --scenario pace` (10 s per rate over loopback, 2-core VM under
    /// load) found TCP's own pacing 4.9% slow at 10 MiB/s (−14% over 1 s,
    /// +0.4% over 2 s in other runs), 28% slow at 100 MiB/s and 72% at
    /// 1 GiB/s: it caps each segment's departure and never catches up
    /// on time the sender lost, and paces loopback's 64 KiB segments with
    /// a timer each (1.3–2.3 CPU-s/GiB). The bucket was within 0.5% at 10
    /// and 100 MiB/s in the same run. Re-measure on the machine at hand:
    /// the scenario runs both.
    #[default]
    Auto,
    /// The kernel (`SO_MAX_PACING_RATE`, with TCP's internal pacing or
    /// the fq qdisc) at any rate up to 4 GiB/s, for a TCP sink; other
    /// sinks get the bucket.
    Kernel,
    /// flexio's token bucket always.
    TokenBucket,
}

impl FromStr for PaceBy {
    type Err = Error;

    /// `auto`, `kernel` or `bucket`.
    fn from_str(text: &str) -> Result<PaceBy> {
        match text {
            "auto" => Ok(PaceBy::Auto),
            "kernel" => Ok(PaceBy::Kernel),
            "bucket" | "token-bucket" => Ok(PaceBy::TokenBucket),
            _ => Err(Error::usage(format!(
                "--pace-by {text:?}: use auto, kernel or bucket"
            ))),
        }
    }
}

impl Pacing {
    /// Parses the CLI's `--rate`, `--burst` and `--schedule`.
    ///
    /// # Errors
    /// [`Error::Usage`] naming the flag for a value that does not parse, a
    /// burst of 0, or a burst over 1 GiB.
    pub fn parse(rate: Option<&str>, burst: Option<&str>, schedule: Option<&str>) -> Result<Self> {
        let flag = |name: &str, error: Error| Error::usage(format!("--{name}: {error}"));
        let rate = rate
            .map(str::parse::<Rate>)
            .transpose()
            .map_err(|e| flag("rate", e))?;
        let burst = burst
            .map(parse_size)
            .transpose()
            .map_err(|e| flag("burst", e))?;
        let schedule = schedule
            .map(str::parse::<Schedule>)
            .transpose()
            .map_err(|e| flag("schedule", e))?;
        let pacing = Pacing {
            rate,
            burst,
            schedule,
            by: PaceBy::Auto,
        };
        pacing.validate()?;
        Ok(pacing)
    }

    /// Checks the burst's bounds.
    ///
    /// # Errors
    /// [`Error::Usage`] for a burst of 0 or over 1 GiB.
    pub fn validate(&self) -> Result<()> {
        match self.burst {
            Some(0) => Err(Error::usage("--burst 0: a call must move at least a byte")),
            Some(burst) if burst > 1 << 30 => Err(Error::usage(format!(
                "--burst {burst} is over 1 GiB, the most one call moves"
            ))),
            _ => Ok(()),
        }
    }

    /// Whether anything is asked at all.
    pub fn is_active(&self) -> bool {
        self.rate.is_some() || self.burst.is_some() || self.schedule.is_some()
    }

    /// The burst in force: given, or the rate's default.
    pub fn burst_bytes(&self) -> Option<u64> {
        self.burst.or(self.rate.map(Rate::default_burst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacing_flags_name_themselves_in_errors() {
        let error = Pacing::parse(Some("fast"), None, None).unwrap_err();
        assert!(error.to_string().starts_with("--rate"), "{error}");
        let error = Pacing::parse(None, Some("0"), None).unwrap_err();
        assert!(error.to_string().starts_with("--burst"), "{error}");
        let error = Pacing::parse(None, Some("2G"), None).unwrap_err();
        assert!(error.to_string().starts_with("--burst"), "{error}");
        let error = Pacing::parse(None, None, Some("1")).unwrap_err();
        assert!(error.to_string().starts_with("--schedule"), "{error}");
        assert!(!Pacing::parse(None, None, None).unwrap().is_active());
    }
}
