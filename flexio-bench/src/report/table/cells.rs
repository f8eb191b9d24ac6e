//! The text of a table's cells: sizes, rates, costs and ratios, the cache
//! state, a contender's label among its neighbours, what ran, and the
//! limits a scenario is compared with.

use std::collections::BTreeSet;

use flexio::MechanismName;

use crate::model::{CacheState, CellKey, Contender};
use crate::stats::{self, Summary};

/// The contenders of `rows` that ran in `cell`.
pub(super) fn contenders_in<'a>(rows: &[&'a Summary], cell: &CellKey) -> Vec<&'a Contender> {
    rows.iter()
        .filter(|s| &s.cell == cell)
        .map(|s| &s.contender)
        .collect()
}

/// The label of `contender`, with its `--chunk` added when another of
/// `others` has the same label but a different chunk (two read-write
/// contenders, say, that differ only in their buffer size).
pub fn label_among(contender: &Contender, others: &[&Contender]) -> String {
    let label = contender.label();
    let Contender::Flexio { chunk, .. } = contender else {
        return label;
    };
    let ambiguous = others.iter().any(|other| {
        matches!(other, Contender::Flexio { chunk: c, .. } if c != chunk) && other.label() == label
    });
    if ambiguous && *chunk != 0 {
        format!("{label} --chunk {}", short_size(*chunk))
    } else {
        label
    }
}

/// `cold`, `warm` or `n/a`, with the measured residency when known.
pub fn cache_text(cache: CacheState, resident_percent: Option<f64>) -> String {
    let state = match cache {
        CacheState::NotApplicable => "n/a",
        cache => cache_name(cache),
    };
    match resident_percent {
        Some(percent) => format!("{state} {percent:.0}%"),
        None => state.to_string(),
    }
}

/// The kebab-case name of a cache state, as in `results.json`.
pub fn cache_name(cache: CacheState) -> &'static str {
    match cache {
        CacheState::Cold => "cold",
        CacheState::Warm => "warm",
        CacheState::NotApplicable => "not-applicable",
    }
}

/// A size in binary units without needless decimals: `4 KiB`, `1.5 MiB`.
///
/// # Examples
/// ```
/// use flexio_bench::table::short_size;
/// assert_eq!(short_size(4096), "4 KiB");
/// assert_eq!(short_size(3 << 19), "1.5 MiB");
/// assert_eq!(short_size(100), "100 B");
/// ```
pub fn short_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {}", UNITS[unit])
}

/// `min–max` with the unit written once when both share it.
pub(super) fn rate_range(min: f64, max: f64) -> String {
    let low = flexio::format_rate(min);
    let high = flexio::format_rate(max);
    match (low.split_once(' '), high.split_once(' ')) {
        (Some((low_value, low_unit)), Some((_, high_unit))) if low_unit == high_unit => {
            format!("{low_value}–{high}")
        }
        _ => format!("{low}–{high}"),
    }
}

pub(super) fn cost(value: f64, decimals: usize) -> String {
    if value.is_finite() {
        format!("{value:.decimals$}")
    } else {
        "-".to_string()
    }
}

pub(super) fn ratio(value: Option<f64>) -> String {
    match value {
        Some(value) => format!("{value:.2}×"),
        None => "-".to_string(),
    }
}

/// For flexio rows whose mechanism that ran is not the one asked for: what
/// ran (`auto` resolved, or a fallback).
pub(super) fn ran_note(summary: &Summary) -> String {
    let (Contender::Flexio { mechanism, .. } | Contender::Process { mechanism, .. }) =
        &summary.contender
    else {
        return String::new();
    };
    match &summary.mechanism_used {
        Some(used) if used != mechanism.as_str() && *mechanism == MechanismName::Auto => {
            format!("→ {used}")
        }
        Some(used) if used != mechanism.as_str() => format!("fallback → {used}"),
        _ => String::new(),
    }
}

/// The limits the rows of one scenario are compared with, e.g.
/// `memcpy (warm)`.
pub(super) fn limits_used(summaries: &[Summary], rows: &[&Summary]) -> Vec<String> {
    let cells: BTreeSet<&CellKey> = rows.iter().map(|s| &s.cell).collect();
    let mut used: Vec<String> = Vec::new();
    for cell in cells {
        if let Some(limit) = stats::limit_for(summaries, cell) {
            let name = limit.contender.label();
            let name = name.trim_start_matches("limit: ");
            if &limit.cell == cell {
                let text = format!("{name}, measured in each cell");
                if !used.contains(&text) {
                    used.push(text);
                }
                continue;
            }
            let when = match cell.cache {
                CacheState::Cold => " (cold)",
                CacheState::Warm => " (warm)",
                CacheState::NotApplicable => "",
            };
            let text = format!("{name} = {}{when}", flexio::format_rate(limit.median_bps));
            if !used.contains(&text) {
                used.push(text);
            }
        }
    }
    used
}

/// Seconds of the meter's solo work lost per GiB the transfer moved: the
/// share it lost over the median throughput (the transfer held it back
/// for as long as it ran).
pub(super) fn meter_lost_per_gib(kept: Option<f64>, bytes_per_s: f64) -> Option<f64> {
    let kept = kept?;
    let gib_per_s = bytes_per_s / (1u64 << 30) as f64;
    (gib_per_s > 0.0).then(|| (1.0 - kept).max(0.0) / gib_per_s)
}

#[cfg(test)]
mod tests {
    use super::meter_lost_per_gib;

    #[test]
    fn the_meter_loses_less_per_gib_to_a_faster_transfer_at_the_same_share() {
        const GIB: f64 = (1u64 << 30) as f64;
        // Half its work lost while 2 GiB/s moved: 0.25 s per GiB.
        assert_eq!(meter_lost_per_gib(Some(0.5), 2.0 * GIB), Some(0.25));
        assert!(
            meter_lost_per_gib(Some(0.5), 1.3 * GIB).unwrap()
                > meter_lost_per_gib(Some(0.5), 1.9 * GIB).unwrap()
        );
        assert_eq!(meter_lost_per_gib(None, GIB), None);
        assert_eq!(meter_lost_per_gib(Some(0.5), 0.0), None);
    }
}
