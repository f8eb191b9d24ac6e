//! Ours, read from the summaries of an exhibit's cells, in the units the
//! documents use (MB is 2^20 bytes, as their file sizes are), and the
//! small arithmetic the comparisons share.

use flexio::MechanismName;

use super::Point;
use flexio_bench::model::{CellKey, Contender, Scenario};
use flexio_bench::stats::Summary;

/// Bytes in the documents' MB.
pub(super) const MB: f64 = (1u64 << 20) as f64;

/// Whether `summary` is flexio's `mechanism` run in the engine (not the
/// process, not `auto (built-in)`), at `chunk` when given.
pub(super) fn is_engine(summary: &Summary, mechanism: MechanismName, chunk: Option<u64>) -> bool {
    matches!(
        &summary.contender,
        Contender::Flexio { mechanism: m, chunk: c, builtin_table: false, .. }
            if *m == mechanism && chunk.is_none_or(|want| want == *c)
    )
}

/// Whether `summary` is the peer or limit named `name`.
pub(super) fn is_named(summary: &Summary, name: &str) -> bool {
    match &summary.contender {
        Contender::Peer { name: n } | Contender::Limit { name: n } => n == name,
        _ => false,
    }
}

/// One series: every summary of `scenario` whose cell passes `cell` and
/// whose contender passes `who`, at `x(summary)`, `y(summary)`; sorted by x.
pub(super) fn series(
    summaries: &[Summary],
    name: &str,
    scenario: Scenario,
    cell: impl Fn(&CellKey) -> bool,
    who: impl Fn(&Summary) -> bool,
    x: impl Fn(&Summary) -> f64,
    y: impl Fn(&Summary) -> Option<f64>,
) -> Vec<Point> {
    let mut points: Vec<Point> = summaries
        .iter()
        .filter(|s| s.cell.scenario == scenario && cell(&s.cell) && who(s))
        .filter_map(|s| Some(with_rounds(Point::new(name, x(s), y(s)?), s, &y)))
        .filter(|p| p.y.is_finite())
        .collect();
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    points
}

/// `point` with the spread of its summary's rounds: `y` evaluated at
/// the ends of their [`round_spread`](flexio_bench::stats::round_spread)
/// (the slowest and the fastest round's throughput, or with five rounds
/// or more the next ones in). A `y` that does not follow the throughput
/// (CPU, switches: only their medians are kept) gets the rounds' count
/// but no spread.
fn with_rounds(point: Point, summary: &Summary, y: &impl Fn(&Summary) -> Option<f64>) -> Point {
    let at = |bps: f64| {
        let mut round = summary.clone();
        round.median_bps = bps;
        y(&round).filter(|v| v.is_finite())
    };
    let (slow, fast) = summary
        .spread_bps
        .unwrap_or((summary.min_bps, summary.max_bps));
    match (at(slow), at(fast)) {
        (Some(low), Some(high)) if low != high || slow == fast => {
            point.with_spread(low, high, summary.runs)
        }
        _ => Point {
            rounds: Some(summary.runs),
            ..point
        },
    }
}

/// `a / b` at every x both have, as series `name`; the spread the
/// widest the two allow (a's lowest over b's highest and the reverse).
pub(super) fn ratio_series(points: &[Point], a: &str, b: &str, name: &str) -> Vec<Point> {
    combine(
        points,
        a,
        b,
        name,
        |x, y| x / y,
        |(al, ah), (bl, bh)| (al / bh, ah / bl),
    )
}

fn combine(
    points: &[Point],
    a: &str,
    b: &str,
    name: &str,
    value: impl Fn(f64, f64) -> f64,
    range: impl Fn((f64, f64), (f64, f64)) -> (f64, f64),
) -> Vec<Point> {
    let of = |series: &str, x: f64| {
        points
            .iter()
            .find(|p| p.series == series && (p.x - x).abs() <= 1e-9 * x.abs().max(1.0))
    };
    points
        .iter()
        .filter(|p| p.series == a)
        .filter_map(|pa| {
            let pb = of(b, pa.x)?;
            let y = value(pa.y, pb.y);
            if !y.is_finite() {
                return None;
            }
            let point = Point::new(name, pa.x, y);
            Some(match (pa.spread, pb.spread) {
                (Some(sa), Some(sb)) => {
                    let (low, high) = range(sa, sb);
                    let rounds = pa.rounds.unwrap_or(0).min(pb.rounds.unwrap_or(0));
                    point.with_spread(low, high, rounds)
                }
                _ => point,
            })
        })
        .collect()
}

/// Whether `a` and `b` differ by more than their spreads: the two
/// ranges (each point's round spread) do not overlap. Points
/// without a spread count as differing when their values do.
pub(super) fn differs(a: &Point, b: &Point) -> bool {
    let range = |p: &Point| p.spread.unwrap_or((p.y, p.y));
    let ((al, ah), (bl, bh)) = (range(a), range(b));
    ah < bl || bh < al
}

/// Median throughput in MB/s.
pub(super) fn mb_per_s(summary: &Summary) -> Option<f64> {
    (summary.median_bps > 0.0).then(|| summary.median_bps / MB)
}

/// Wall seconds to move the cell's bytes (one flow).
pub(super) fn wall_s(summary: &Summary) -> Option<f64> {
    (summary.median_bps > 0.0).then(|| summary.cell.size as f64 / summary.median_bps)
}

/// The cell's size in MB, the x of a by-size series.
pub(super) fn size_mb(summary: &Summary) -> f64 {
    summary.cell.size as f64 / MB
}

/// The y of `series` at `x` (the first such point).
pub(super) fn at(points: &[Point], series: &str, x: f64) -> Option<f64> {
    points
        .iter()
        .find(|p| p.series == series && (p.x - x).abs() <= 1e-9 * x.abs().max(1.0))
        .map(|p| p.y)
}

/// The smallest and the largest x of `series`.
pub(super) fn x_extent(points: &[Point], series: &str) -> Option<(f64, f64)> {
    let xs = points.iter().filter(|p| p.series == series).map(|p| p.x);
    let low = xs.clone().fold(f64::INFINITY, f64::min);
    let high = xs.fold(f64::NEG_INFINITY, f64::max);
    low.is_finite().then_some((low, high))
}

/// `a / b` at `x`, both read from `points`.
pub(super) fn ratio_at(points: &[Point], a: &str, b: &str, x: f64) -> Option<f64> {
    Some(at(points, a, x)? / at(points, b, x)?).filter(|r| r.is_finite())
}

/// The sentence for an exhibit this run measured nothing of.
pub(super) fn not_measured(ours: &[Point]) -> Option<String> {
    ours.is_empty().then(|| {
        "Not measured in this run (the cells were skipped or failed: see the notes of \
         results.json), so there is nothing to compare."
            .to_string()
    })
}

/// "the same shape" or "not the same shape".
pub(super) fn shape(same: bool) -> &'static str {
    if same {
        "the same shape"
    } else {
        "not the same shape"
    }
}
