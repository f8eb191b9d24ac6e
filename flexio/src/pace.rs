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

    /// How long from `now` until a call may go (zero: now).
    pub fn delay(&self, now: Instant) -> Duration {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.refill(&mut state, now);
        if state.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-state.tokens / self.rate.0 as f64)
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
/// assert_eq!(pacer.delay(start), Duration::from_millis(100)); // the rate
/// let later = start + Duration::from_millis(100);
/// pacer.charge(100, later); // two chunks: the schedule pauses 50 ms
/// assert_eq!(pacer.delay(later), Duration::from_millis(100));
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
    /// pause, or the time to pay a bucket's debt.
    pub fn delay(&self, now: Instant) -> Duration {
        let pause = self
            .pause_until
            .map_or(Duration::ZERO, |until| until.saturating_duration_since(now));
        self.buckets
            .iter()
            .map(|bucket| bucket.delay(now))
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

    /// Waits, on the real clock, until the next call may go; a pause of
    /// the schedule or a wait for the rate is counted as such.
    pub fn wait(&mut self) {
        let now = Instant::now();
        let delay = self.delay(now);
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
        // Sleep may wake early on a signal: sleep again for what is left.
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left);
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
