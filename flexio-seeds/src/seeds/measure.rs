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
        .filter_map(|s| Some(Point::new(name, x(s), y(s)?)))
        .filter(|p| p.y.is_finite())
        .collect();
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    points
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

/// `a / b` at the smallest and the largest x of `a`.
pub(super) fn ratios_at_ends(points: &[Point], a: &str, b: &str) -> Option<(f64, f64, f64, f64)> {
    let (low, high) = x_extent(points, a)?;
    Some((
        low,
        ratio_at(points, a, b, low)?,
        high,
        ratio_at(points, a, b, high)?,
    ))
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
