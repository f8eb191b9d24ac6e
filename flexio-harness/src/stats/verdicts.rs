//! The verdicts a bench run ends with: how `auto` fared against the best
//! fixed mechanism, and how flexio fared against the best peer, per
//! scenario and over the run (geometric means of the per-cell ratios).

use flexio::MechanismName;
use serde::{Deserialize, Serialize};

use super::{best_peer, median, Summary};
use crate::model::{CellKey, Contender, Scenario};

/// How `auto` fared in a set of cells (a scenario, or the whole run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoVerdict {
    /// The scenario, or `overall`.
    pub scope: String,
    /// Cells where `auto` ran beside fixed mechanisms.
    pub cells: usize,
    /// Median over those cells of `auto`'s ratio to the best fixed
    /// mechanism.
    pub median_to_best_fixed: f64,
    /// The cell where that ratio is lowest, and the ratio.
    pub worst: (CellKey, f64),
    /// The same median for `auto` without the profile (when it ran).
    pub builtin_median_to_best_fixed: Option<f64>,
    /// Median over cells of `auto`'s ratio to `auto` without the profile
    /// (when both ran).
    pub median_to_builtin: Option<f64>,
    /// Geometric mean over cells of `auto`'s ratio to the best fixed
    /// mechanism: unlike the median, it counts the cells where `auto`
    /// won or lost by much, not only the middle one.
    #[serde(default)]
    pub geomean_to_best_fixed: f64,
    /// Geometric mean over cells of `auto`'s ratio to `auto` without the
    /// profile (when both ran).
    #[serde(default)]
    pub geomean_to_builtin: Option<f64>,
}

/// The geometric mean of `ratios` (positive and finite ones only); `None`
/// when none is.
///
/// # Examples
/// ```
/// use flexio_harness::stats::geometric_mean;
/// let mean = geometric_mean(&[2.0, 0.5, 1.0]).unwrap();
/// assert!((mean - 1.0).abs() < 1e-12);
/// assert!(geometric_mean(&[]).is_none());
/// ```
pub fn geometric_mean(ratios: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|r| r.ln())
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// Per scenario (in order), then `overall`: how the profile's `auto`
/// compares with the best fixed mechanism and with the built-in table.
/// Empty when no `auto` ran beside fixed mechanisms.
pub fn auto_verdicts(summaries: &[Summary]) -> Vec<AutoVerdict> {
    let verdict = |scope: &str, rows: Vec<&Summary>| {
        let autos: Vec<&Summary> = rows
            .iter()
            .copied()
            .filter(|s| s.contender.is_profile_auto() && s.ratio_to_best_fixed.is_some())
            .collect();
        let worst = autos
            .iter()
            .map(|s| (s.cell.clone(), s.ratio_to_best_fixed.unwrap_or(f64::NAN)))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        let collect_median = |values: Vec<f64>| {
            let mut values = values;
            (!values.is_empty()).then(|| median(&mut values))
        };
        let to_fixed: Vec<f64> = autos.iter().filter_map(|s| s.ratio_to_best_fixed).collect();
        let to_builtin: Vec<f64> = autos.iter().filter_map(|s| s.ratio_to_builtin).collect();
        Some(AutoVerdict {
            scope: scope.to_string(),
            cells: autos.len(),
            geomean_to_best_fixed: geometric_mean(&to_fixed)?,
            geomean_to_builtin: geometric_mean(&to_builtin),
            median_to_best_fixed: collect_median(to_fixed)?,
            worst,
            builtin_median_to_best_fixed: collect_median(
                rows.iter()
                    .filter(|s| s.contender.is_auto() && !s.contender.is_profile_auto())
                    .filter_map(|s| s.ratio_to_best_fixed)
                    .collect(),
            ),
            median_to_builtin: collect_median(to_builtin),
        })
    };
    let mut scenarios: Vec<Scenario> = Vec::new();
    for summary in summaries {
        if !scenarios.contains(&summary.cell.scenario) {
            scenarios.push(summary.cell.scenario);
        }
    }
    let mut verdicts: Vec<AutoVerdict> = scenarios
        .iter()
        .filter_map(|scenario| {
            verdict(
                scenario.name(),
                summaries
                    .iter()
                    .filter(|s| s.cell.scenario == *scenario)
                    .collect(),
            )
        })
        .collect();
    if let Some(overall) = verdict("overall", summaries.iter().collect()) {
        verdicts.push(overall);
    }
    verdicts
}

/// `flexio copy` as a process against the fastest peer of one cell: the
/// comparison a speed claim against the standard tools is made of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerVerdict {
    /// The cell.
    pub cell: CellKey,
    /// The process contender's label.
    pub flexio: String,
    /// The fastest peer's label.
    pub peer: String,
    /// Median over rounds of flexio's throughput over the peer's.
    pub ratio: f64,
    /// The lowest and highest of those per-round ratios.
    pub rounds: (f64, f64),
    /// The median of per-round ratios to each peer of the cell.
    #[serde(default)]
    pub each_peer: Vec<(String, f64)>,
}

impl PeerVerdict {
    /// One line: `file-to-file 1 MiB warm: flexio copy (process) 0.93× cp
    /// (rounds 0.88–1.01); 1.20× dd bs=1M, 1.05× cat SRC > DST`.
    pub fn line(&self) -> String {
        let others: Vec<String> = self
            .each_peer
            .iter()
            .filter(|(peer, _)| *peer != self.peer)
            .map(|(peer, ratio)| format!("{ratio:.2}× {peer}"))
            .collect();
        let others = match others.is_empty() {
            true => String::new(),
            false => format!("; {}", others.join(", ")),
        };
        format!(
            "{}: {} {:.2}× {} (rounds {:.2}–{:.2}){}{others}",
            crate::plan::label(&self.cell),
            self.flexio,
            self.ratio,
            self.peer,
            self.rounds.0,
            self.rounds.1,
            if self.rounds.1 < 1.0 {
                ", slower in every round"
            } else if self.rounds.0 > 1.0 {
                ", faster in every round"
            } else {
                ""
            }
        )
    }
}

/// Per cell with a peer, `flexio copy` as a process against the fastest
/// peer (the `auto` process when several ran), in the order of
/// `summaries`.
pub fn peer_verdicts(summaries: &[Summary]) -> Vec<PeerVerdict> {
    summaries
        .iter()
        .filter(|s| s.contender.is_process())
        .filter(|s| {
            // One verdict per cell: `auto`, else the first process.
            let auto = |c: &Contender| matches!(c, Contender::Process { mechanism, .. } if *mechanism == MechanismName::Auto);
            auto(&s.contender)
                || !summaries
                    .iter()
                    .any(|o| o.cell == s.cell && auto(&o.contender))
        })
        .filter_map(|s| {
            let peer = best_peer(summaries, &s.cell)?;
            Some(PeerVerdict {
                cell: s.cell.clone(),
                flexio: s.contender.label(),
                peer: peer.contender.label(),
                ratio: s.ratio_to_best_peer?,
                rounds: s.best_peer_round_range?,
                each_peer: s.ratios_to_peers.clone(),
            })
        })
        .fold(Vec::new(), |mut verdicts: Vec<PeerVerdict>, verdict| {
            if !verdicts.iter().any(|v| v.cell == verdict.cell) {
                verdicts.push(verdict);
            }
            verdicts
        })
}
