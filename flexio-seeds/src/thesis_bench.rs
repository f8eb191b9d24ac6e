//! FlexIO's setups that the bench's matrix has no cell for, run as
//! `flexio copy` processes timed from spawn to exit (the thesis, chapter
//! 4; its exhibits in `seeds`):
//!
//! - a low-memory setting: the copies run in a 128 MiB memory cgroup, as
//!   on the original's 128 MB machine, cold and synced to ext4 on a
//!   throttled loop device (its slow disk, `slow_device`), by file size up
//!   to 200 MiB (Figures 4.7-4.14) and by buffer size from 1 KiB (4.15);
//! - the disk -> disk cells with memory to spare, cold and synced
//!   through the matrix's runner on the same throttled device (ext4, and
//!   ext2 as the thesis's second file system), so that the two settings
//!   differ in memory only (4.7-4.15);
//! - a socket-buffer sweep: file -> TCP with `--socket-buffer` at both
//!   ends, 16 KiB to 4 MiB, beside the kernel's autotuning (4.18);
//! - a user process over UDP: file -> loopback UDP -> file with
//!   SO_SNDBUF/SO_RCVBUF of 1 to 50 KB, the datagrams lost counted (4.18);
//! - a network -> network relay: A -> B -> C across three network
//!   namespaces, B forwarding by splice or by read-write, beside A -> B
//!   direct (4.21-4.22).
//!
//! Each returns its points and, where it could not run as designed (not
//! root: no cgroup, no namespaces), why. SIGINT/SIGTERM (the `stop` flag)
//! end a sweep after its current copy; the cgroup and the namespaces are
//! removed on every way out.
//!
//! ```text
//! thesis_bench.rs   options, points, the shared run loop
//!  ├ process.rs     one timed copy (or a group of them), its bytes checked
//!  ├ low_memory.rs  the 128 MiB cgroup: by size, by buffer
//!  ├ disk_bound.rs  the matrix's cold cells on a throttled ext4 or ext2
//!  ├ sockets.rs     the socket-buffer sweep (TCP)
//!  ├ udp.rs         the socket-buffer sweep over UDP, loss counted
//!  └ relay.rs       A -> B -> C
//! ```

mod disk_bound;
mod low_memory;
mod process;
mod relay;
mod sockets;
pub mod udp;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

pub use disk_bound::disk_bound;
pub(crate) use disk_bound::run_cells;
pub use low_memory::{by_buffer, by_size, by_size_small_buffers, MEMORY_LIMIT, SMALL_BUFFERS_KIB};
pub use relay::relay;
pub use sockets::socket_buffers;
pub use udp::udp_buffers;

/// The widest spread ([`round_spread`](flexio_bench::stats::round_spread)
/// of a point's rounds, over its median) a point may have: the seeds'
/// grades judge it, and a point wider than it gets a few more rounds
/// ([`ThesisOptions::another_round`]).
pub const SPREAD_LIMIT: f64 = 0.5;

/// What to run.
#[derive(Clone, Debug)]
pub struct ThesisOptions {
    /// A directory for the sources and copies (files are removed after).
    pub dir: PathBuf,
    /// The `flexio` binary the copies run.
    pub flexio: PathBuf,
    /// The short run: fewer sizes (still three rounds each).
    pub quick: bool,
    /// At most this many timed rounds per point (`--runs`): each setup
    /// runs its own count, or fewer when asked (a look at the shape, or a
    /// test, needs no median; the grade then says "fewer than 3 rounds").
    pub most_rounds: usize,
    /// Set by SIGINT/SIGTERM: stop after the current copy.
    pub stop: Arc<AtomicBool>,
}

#[cfg(test)]
impl ThesisOptions {
    /// What the setups' unit tests run with: the quick sizes, one round
    /// (a test needs every point, not a median), files under `dir`, and a
    /// `flexio` they do not start.
    pub(crate) fn one_round_in(dir: &std::path::Path) -> ThesisOptions {
        ThesisOptions {
            dir: dir.to_path_buf(),
            flexio: dir.join("no-flexio-needed"),
            quick: true,
            most_rounds: 1,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Timed rounds a setup's point is planned for: three, the least that
/// has a median apart from its extremes.
const POINT_ROUNDS: usize = 3;

impl ThesisOptions {
    /// Timed rounds per point (the median is kept, the spread shown):
    /// [`POINT_ROUNDS`], or fewer by [`ThesisOptions::most_rounds`].
    fn rounds(&self) -> usize {
        self.rounds_of(POINT_ROUNDS)
    }

    /// A setup's own count of rounds, `own`, within
    /// [`ThesisOptions::most_rounds`] (and at least one).
    ///
    /// # Examples
    /// ```
    /// use flexio_seeds::thesis_bench::ThesisOptions;
    /// let options = ThesisOptions {
    ///     dir: std::env::temp_dir(),
    ///     flexio: "flexio".into(),
    ///     quick: true,
    ///     most_rounds: 1,
    ///     stop: Default::default(),
    /// };
    /// assert_eq!(options.rounds_of(3), 1);
    /// assert_eq!(ThesisOptions { most_rounds: 5, ..options }.rounds_of(3), 3);
    /// ```
    pub fn rounds_of(&self, own: usize) -> usize {
        own.min(self.most_rounds).max(1)
    }

    /// Whether a point whose setup runs `own` rounds, `ran` of them run,
    /// gets another: until [`rounds_of`](Self::rounds_of)`(own)` are done,
    /// then a few more while any of `rounds` (each series' values so far,
    /// in its unit) spreads wider than [`SPREAD_LIMIT`]
    /// ([`another_round`](flexio_bench::stats::another_round)).
    ///
    /// # Examples
    /// ```
    /// use flexio_seeds::thesis_bench::ThesisOptions;
    /// let options = ThesisOptions {
    ///     dir: std::env::temp_dir(),
    ///     flexio: "flexio".into(),
    ///     quick: true,
    ///     most_rounds: 3,
    ///     stop: Default::default(),
    /// };
    /// let steady = [1.0, 1.1, 0.9];
    /// let disturbed = [1.0, 1.1, 3.0];
    /// assert!(!options.another_round(3, 3, [&steady[..]]));
    /// assert!(options.another_round(3, 3, [&steady[..], &disturbed[..]]));
    /// ```
    pub fn another_round<'a>(
        &self,
        ran: usize,
        own: usize,
        rounds: impl IntoIterator<Item = &'a [f64]>,
    ) -> bool {
        flexio_bench::stats::another_round(ran, self.rounds_of(own), || {
            rounds
                .into_iter()
                .any(|values| flexio_bench::stats::unsettled(values, SPREAD_LIMIT))
        })
    }

    /// Transfers one round of a network setup adds up for a `size`-byte
    /// file: [`round_passes`], or one where a point is a single round (a
    /// look at the shape has no spread between rounds to narrow).
    fn passes(&self, size: u64) -> u64 {
        match self.rounds() {
            1 => 1,
            _ => round_passes(size),
        }
    }

    fn stopped(&self) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            Err(Error::Stopped)
        } else {
            Ok(())
        }
    }
}

/// One point: a series, its x, and the median throughput in MB/s (2^20
/// bytes, the thesis's MB).
#[derive(Clone, Debug, PartialEq)]
pub struct ThesisPoint {
    /// e.g. `mmap, 128 MiB cgroup`.
    pub series: String,
    /// File size in MB, buffer size in KB, or socket buffer in KB.
    pub x: f64,
    /// Median over the rounds, in the exhibit's unit: MB/s for FlexIO's,
    /// seconds for S.M.A.C.K.'s (`smack_bench`).
    pub y: f64,
    /// The lowest and highest round in the same unit, and the number of
    /// rounds.
    pub spread: Option<(f64, f64, usize)>,
}

/// What one setup measured.
#[derive(Clone, Debug, Default)]
pub struct ThesisOutcome {
    /// The points measured.
    pub points: Vec<ThesisPoint>,
    /// Why the setup did not run as designed (not root, a failure), if so.
    pub shortfall: Option<String>,
    /// Where it ran, for the report (the cgroup, the link).
    pub setting: String,
}

/// Bytes in the thesis's MB.
const MB: f64 = (1u64 << 20) as f64;

/// The bytes a round of a network setup moves at least: a smaller file is
/// sent [`round_passes`] times over, back to back, and the round is their
/// sum. One transfer of 1 MB lasts a few milliseconds, of which starting
/// it (threads, processes, connections) is a noisy part.
const ROUND_BYTES: u64 = 64 << 20;

/// How many transfers of a `size`-byte file one round adds up: 64 MiB's
/// worth, at most 64.
///
/// # Examples
/// ```
/// use flexio_seeds::thesis_bench::round_passes;
/// assert_eq!(round_passes(1 << 20), 64);
/// assert_eq!(round_passes(16 << 20), 4);
/// assert_eq!(round_passes(100 << 20), 1);
/// ```
pub fn round_passes(size: u64) -> u64 {
    ROUND_BYTES.div_ceil(size.max(1)).clamp(1, 64)
}

/// The median of `rounds` runs of `run` (each returning seconds for
/// `bytes`) as a point of `series` at `x`.
fn point(
    options: &ThesisOptions,
    series: &str,
    x: f64,
    bytes: u64,
    mut run: impl FnMut() -> Result<f64>,
) -> Result<ThesisPoint> {
    let mut seconds: Vec<f64> = Vec::new();
    let rate = |s: f64| bytes as f64 / MB / s;
    while options.another_round(
        seconds.len(),
        POINT_ROUNDS,
        [&seconds.iter().map(|&s| rate(s)).collect::<Vec<_>>()[..]],
    ) {
        options.stopped()?;
        seconds.push(run()?);
    }
    let (fastest, slowest) = flexio_bench::stats::round_spread(&seconds).ok_or(Error::Stopped)?;
    let rounds = seconds.len();
    Ok(ThesisPoint {
        series: series.to_string(),
        x,
        y: rate(flexio_bench::stats::median(&mut seconds)),
        spread: Some((rate(slowest), rate(fastest), rounds)),
    })
}

/// Every `(size in MiB, variant)` pair through `one`, sizes outer; the
/// first failure ends the sweep and becomes the shortfall (after
/// `shortfall`, why the setup already fell short, if it did).
fn sweep<V: Copy>(
    sizes: &[u64],
    variants: &[V],
    mut shortfall: Option<String>,
    mut one: impl FnMut(u64, V) -> Result<ThesisPoint>,
) -> (Vec<ThesisPoint>, Option<String>) {
    let mut points = Vec::new();
    for &mb in sizes {
        for &variant in variants {
            match one(mb << 20, variant) {
                Ok(p) => points.push(p),
                Err(why) => {
                    shortfall = Some(why.to_string());
                    return (points, shortfall);
                }
            }
        }
    }
    (points, shortfall)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The point of rounds taking `seconds` in turn (1 MB each), planned
    /// for three.
    fn point_of(seconds: &[f64]) -> ThesisPoint {
        let options = ThesisOptions {
            most_rounds: 3,
            ..ThesisOptions::one_round_in(&std::env::temp_dir())
        };
        let mut next = seconds.iter().copied();
        point(&options, "s", 1.0, 1 << 20, || {
            Ok(next.next().expect("a planted round"))
        })
        .unwrap()
    }

    #[test]
    fn a_point_whose_rounds_disagree_gets_two_more_and_sets_one_odd_round_aside() {
        let steady = point_of(&[1.0, 1.1, 0.9]);
        assert_eq!(steady.spread, Some((1.0 / 1.1, 1.0 / 0.9, 3)));
        let one = point_of(&[1.0, 3.0, 1.0, 1.1, 0.9]);
        assert_eq!(one.spread, Some((1.0 / 1.1, 1.0, 5)));
        assert_eq!(one.y, 1.0);
        let two = point_of(&[1.0, 3.0, 1.0, 3.0, 0.9]);
        assert_eq!(two.spread, Some((1.0 / 3.0, 1.0, 5)));
    }
}
