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
//! owed. Over any stretch the bytes moved are at most `rate × time +
//! burst`, and a flow that ends owes nothing to anyone: no sleep follows
//! its last call.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
            let earned = (now - state.at).as_secs_f64() * self.rate.0 as f64;
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
            Duration::from_secs_f64((needed - state.tokens) / self.rate.0 as f64)
        }
    }

    /// Records that `bytes` moved at `now`.
    pub fn charge(&self, bytes: u64, now: Instant) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.refill(&mut state, now);
        state.tokens -= bytes as f64;
    }
}

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
    /// most (under a schedule without a burst, one `chunk` at most is for
    /// the caller to say through `want`).
    pub fn grant(&self, want: usize) -> usize {
        match self.pacing.burst_bytes() {
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
        for bad in ["", "8", "0,5", "x,5", "8,x", "8,-1", "8,2m"] {
            assert!(bad.parse::<Schedule>().unwrap_err().is_usage(), "{bad}");
        }
    }

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
