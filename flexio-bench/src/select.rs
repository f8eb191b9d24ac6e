//! From measurements to size ranges: for each measured size the best
//! candidate (ties within a tolerance go to the lower CPU per byte), range
//! boundaries halfway (geometrically) between measured sizes, neighbours
//! with the same winner merged. The ranges start at 0 and the last one has
//! no upper bound, so every size has exactly one range.

use serde::{Deserialize, Serialize};

use flexio::profile::{FlowKind, RangeEntry};
use flexio::{MechanismName, Params};

/// A mechanism with its parameters: one contender of the sweep.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// The mechanism.
    pub mechanism: MechanismName,
    /// Its parameters.
    pub params: Params,
}

/// The measured performance of one candidate at one size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The flow kind measured.
    pub kind: FlowKind,
    /// Bytes per flow.
    pub size: u64,
    /// What ran.
    pub candidate: Candidate,
    /// Median throughput, bytes per second.
    pub median_bps: f64,
    /// Slowest run.
    pub min_bps: f64,
    /// Fastest run.
    pub max_bps: f64,
    /// CPU (user + system) per byte moved, ns: what the flow cost the
    /// machine, work done on its behalf by kernel threads included.
    pub cpu_ns_per_byte: f64,
}

impl Measurement {
    /// (max − min) / median: how much the runs disagreed.
    pub fn spread(&self) -> f64 {
        if self.median_bps > 0.0 {
            (self.max_bps - self.min_bps) / self.median_bps
        } else {
            0.0
        }
    }
}

/// The widest tie band the leader's noise can open: a lead of more than
/// this fraction of the leader's median is a lead, however widely its runs
/// spread. One slow run in seven once stretched a durable leader's spread
/// to 82%, and a candidate 35% slower won the tie on CPU. At 10% the band
/// still gave pipe → file to read-write at 0.91 of splice's throughput;
/// 5% is as much throughput as a tie may cost (the bench holds `auto` to
/// 0.95 of the best fixed mechanism).
pub const MAX_NOISE_BAND: f64 = 0.05;

/// The best candidate among measurements of one size: the highest median
/// throughput, except that candidates close to it are ranked by lower CPU
/// per byte. Close means within `tie_tolerance` (a fraction, e.g. 0.03) of
/// the highest median, or within half the min–max spread of the runs that
/// gave it (at most [`MAX_NOISE_BAND`]), whichever is wider: a lead
/// smaller than the leader's own run-to-run noise is not a win (durable
/// copies on a shared disk spread by 25% and more).
pub fn best_at_size<'m>(
    at_size: &[&'m Measurement],
    tie_tolerance: f64,
) -> Option<&'m Measurement> {
    let leader = at_size
        .iter()
        .max_by(|a, b| a.median_bps.total_cmp(&b.median_bps))?;
    let noise = (leader.spread() / 2.0).min(MAX_NOISE_BAND);
    let band = tie_tolerance.max(noise).min(1.0);
    let floor = leader.median_bps * (1.0 - band);
    at_size
        .iter()
        .filter(|m| m.median_bps >= floor)
        .min_by(|a, b| {
            a.cpu_ns_per_byte
                .total_cmp(&b.cpu_ns_per_byte)
                .then(b.median_bps.total_cmp(&a.median_bps))
        })
        .copied()
}

/// Size ranges for `kind` from `measurements` (other kinds are ignored).
/// Empty when nothing of that kind was measured.
///
/// # Examples
/// ```
/// use flexio::profile::FlowKind;
/// use flexio_bench::select::{select_ranges, Candidate, Measurement};
/// use flexio::{MechanismName, Params};
/// let m = |size, mechanism, bps: f64| Measurement {
///     kind: FlowKind::FileToFile, size,
///     candidate: Candidate { mechanism, params: Params::default() },
///     median_bps: bps, min_bps: bps, max_bps: bps, cpu_ns_per_byte: 1.0,
/// };
/// let measured = [
///     m(4096, MechanismName::ReadWrite, 2e9), m(4096, MechanismName::CopyFileRange, 1e9),
///     m(1 << 30, MechanismName::ReadWrite, 1e9), m(1 << 30, MechanismName::CopyFileRange, 3e9),
/// ];
/// let ranges = select_ranges(&measured, FlowKind::FileToFile, 0.03);
/// assert_eq!(ranges.len(), 2);
/// assert_eq!(ranges[0].mechanism, MechanismName::ReadWrite);
/// assert_eq!(ranges[1].mechanism, MechanismName::CopyFileRange);
/// assert_eq!(ranges[0].max_bytes, Some(ranges[1].min_bytes));
/// ```
pub fn select_ranges(
    measurements: &[Measurement],
    kind: FlowKind,
    tie_tolerance: f64,
) -> Vec<RangeEntry> {
    let mut sizes: Vec<u64> = measurements
        .iter()
        .filter(|m| m.kind == kind)
        .map(|m| m.size)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let winners: Vec<&Measurement> = sizes
        .iter()
        .filter_map(|&size| {
            let at_size: Vec<&Measurement> = measurements
                .iter()
                .filter(|m| m.kind == kind && m.size == size)
                .collect();
            best_at_size(&at_size, tie_tolerance)
        })
        .collect();
    let mut ranges: Vec<RangeEntry> = Vec::new();
    for (i, winner) in winners.iter().enumerate() {
        let min_bytes = if i == 0 {
            0
        } else {
            geometric_midpoint(winners[i - 1].size, winner.size)
        };
        let max_bytes = winners
            .get(i + 1)
            .map(|next| geometric_midpoint(winner.size, next.size));
        match ranges.last_mut() {
            Some(last)
                if last.mechanism == winner.candidate.mechanism
                    && last.params() == winner.candidate.params =>
            {
                last.max_bytes = max_bytes;
                last.measured_at.push(winner.size);
                // The range reports its weakest measured point.
                if (winner.median_bps as u64) < last.throughput_bytes_per_s {
                    last.throughput_bytes_per_s = winner.median_bps as u64;
                    last.spread = winner.spread();
                }
            }
            _ => ranges.push(range_entry(min_bytes, max_bytes, winner)),
        }
    }
    ranges
}

/// The size halfway between `a` and `b` on a log scale.
fn geometric_midpoint(a: u64, b: u64) -> u64 {
    ((a as f64 * b as f64).sqrt().round() as u64).clamp(a + 1, b.max(a + 1))
}

/// The profile's range `[min_bytes, max_bytes)` for a size's winner.
fn range_entry(min_bytes: u64, max_bytes: Option<u64>, winner: &Measurement) -> RangeEntry {
    let params = &winner.candidate.params;
    RangeEntry {
        min_bytes,
        max_bytes,
        mechanism: winner.candidate.mechanism,
        chunk: params.chunk,
        queue_depth: params.queue_depth,
        pipe_size: params.pipe_size,
        direct: params.direct,
        throughput_bytes_per_s: winner.median_bps as u64,
        spread: winner.spread(),
        measured_at: vec![winner.size],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measurement(size: u64, mechanism: MechanismName, bps: f64, cpu: f64) -> Measurement {
        Measurement {
            kind: FlowKind::FileToFile,
            size,
            candidate: Candidate {
                mechanism,
                params: Params::default(),
            },
            median_bps: bps,
            min_bps: bps * 0.9,
            max_bps: bps * 1.1,
            cpu_ns_per_byte: cpu,
        }
    }

    #[test]
    fn crossover_is_found_between_the_measured_sizes() {
        use MechanismName::*;
        let measured = vec![
            measurement(4 << 10, ReadWrite, 3e9, 1.0),
            measurement(4 << 10, Sendfile, 1e9, 0.5),
            measurement(64 << 10, ReadWrite, 3e9, 1.0),
            measurement(64 << 10, Sendfile, 2e9, 0.5),
            measurement(1 << 20, ReadWrite, 2e9, 1.0),
            measurement(1 << 20, Sendfile, 4e9, 0.5),
            measurement(1 << 30, ReadWrite, 2e9, 1.0),
            measurement(1 << 30, Sendfile, 5e9, 0.5),
        ];
        let ranges = select_ranges(&measured, FlowKind::FileToFile, 0.03);
        assert_eq!(ranges.len(), 2);
        assert_eq!(ranges[0].mechanism, ReadWrite);
        assert_eq!(ranges[0].min_bytes, 0);
        assert_eq!(ranges[0].measured_at, vec![4 << 10, 64 << 10]);
        assert_eq!(ranges[1].mechanism, Sendfile);
        // Boundary halfway between 64 KiB and 1 MiB on a log scale: 256 KiB.
        assert_eq!(ranges[0].max_bytes, Some(256 << 10));
        assert_eq!(ranges[1].min_bytes, 256 << 10);
        assert_eq!(ranges[1].max_bytes, None);
        assert_eq!(ranges[1].throughput_bytes_per_s, 4_000_000_000);
    }

    #[test]
    fn ties_go_to_lower_cpu_per_byte() {
        use MechanismName::*;
        let steady = |mechanism, bps: f64, cpu| Measurement {
            min_bps: bps * 0.99,
            max_bps: bps * 1.01,
            ..measurement(1 << 20, mechanism, bps, cpu)
        };
        let measured = vec![
            steady(ReadWrite, 3.00e9, 2.0),
            steady(Splice, 2.95e9, 0.4),
            steady(Mmap, 2.00e9, 0.1),
        ];
        let ranges = select_ranges(&measured, FlowKind::FileToFile, 0.03);
        assert_eq!(ranges.len(), 1);
        assert_eq!(
            ranges[0].mechanism, Splice,
            "within 3% of the best, and cheaper"
        );
        let strict = select_ranges(&measured, FlowKind::FileToFile, 0.0);
        assert_eq!(strict[0].mechanism, ReadWrite);
    }

    #[test]
    fn a_lead_inside_the_leaders_noise_is_a_tie() {
        use MechanismName::*;
        // The leader's runs spread over 30% of its median: 4% behind it
        // is a tie (past the 3% tolerance, inside the noise), and the
        // cheaper candidate is chosen; 8% is not.
        let noisy = Measurement {
            min_bps: 0.8e9,
            max_bps: 1.1e9,
            ..measurement(64 << 20, CopyFileRange, 1.0e9, 0.5)
        };
        let measured = vec![
            noisy.clone(),
            measurement(64 << 20, IoUring, 0.96e9, 0.2),
            measurement(64 << 20, Mmap, 0.92e9, 0.1),
        ];
        let ranges = select_ranges(&measured, FlowKind::FileToFile, 0.03);
        assert_eq!(ranges[0].mechanism, IoUring);
        // A steady leader keeps its lead.
        let steady = Measurement {
            min_bps: 0.99e9,
            max_bps: 1.01e9,
            ..noisy
        };
        let measured = vec![steady, measurement(64 << 20, IoUring, 0.96e9, 0.2)];
        let ranges = select_ranges(&measured, FlowKind::FileToFile, 0.03);
        assert_eq!(ranges[0].mechanism, CopyFileRange);
    }

    #[test]
    fn one_slow_run_of_the_leader_does_not_make_a_large_lead_a_tie() {
        use MechanismName::*;
        // A durable tune: splice's seven runs 400 to 1278 MB/s around a
        // median of 1067 (82% spread); direct, cheaper, at 694. Half the
        // spread would call that a tie; the band stops at 5%.
        let leader = Measurement {
            min_bps: 400e6,
            max_bps: 1278e6,
            ..measurement(64 << 20, Splice, 1067e6, 0.32)
        };
        let cheaper = measurement(64 << 20, Direct, 694e6, 0.30);
        let best = best_at_size(&[&leader, &cheaper], 0.03).unwrap();
        assert_eq!(best.candidate.mechanism, Splice);
        // Inside the band the cheaper one still wins.
        let close = measurement(64 << 20, Direct, 1030e6, 0.30);
        let best = best_at_size(&[&leader, &close], 0.03).unwrap();
        assert_eq!(best.candidate.mechanism, Direct);
        // 6% behind is past it.
        let close = measurement(64 << 20, Direct, 1000e6, 0.30);
        let best = best_at_size(&[&leader, &close], 0.03).unwrap();
        assert_eq!(best.candidate.mechanism, Splice);
        let close = measurement(64 << 20, Direct, 1030e6, 0.30);
        let best = best_at_size(&[&leader, &close], 0.03).unwrap();
        assert_eq!(best.candidate.mechanism, Direct);
    }

    #[test]
    fn ranges_are_contiguous_and_cover_every_size() {
        use MechanismName::*;
        let mechanisms = [ReadWrite, Sendfile, Splice, CopyFileRange];
        let mut measured = Vec::new();
        for (i, shift) in (12..31).step_by(2).enumerate() {
            for (j, m) in mechanisms.iter().enumerate() {
                let bps = 1e9 + ((i * 7 + j * 3) % 5) as f64 * 1e8;
                measured.push(measurement(1 << shift, *m, bps, j as f64));
            }
        }
        let ranges = select_ranges(&measured, FlowKind::FileToFile, 0.03);
        assert_eq!(ranges[0].min_bytes, 0);
        assert_eq!(ranges.last().unwrap().max_bytes, None);
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].max_bytes, Some(pair[1].min_bytes));
            assert!(pair[0].min_bytes < pair[1].min_bytes);
            assert!(pair[0].mechanism != pair[1].mechanism || pair[0].params() != pair[1].params());
        }
    }

    #[test]
    fn nothing_measured_gives_no_ranges() {
        assert!(select_ranges(&[], FlowKind::FileToSocket, 0.03).is_empty());
    }
}
