//! The ratios of a summary to the other contenders of its cell: to the
//! best peer, to each peer, `auto` to the best fixed mechanism and to
//! itself without the profile, and to the physical limit. Each is the
//! median of per-round ratios where both sides ran in the same rounds, so
//! that both saw the same moment of a noisy machine.

use std::collections::HashMap;

use super::{best_fixed_flexio, limit_explanation, limit_for, median, per_round, Summary};
use crate::model::{CellKey, Contender, ContenderKind, RunRecord};

/// The counted runs of each (cell, contender).
pub(super) type Groups<'a> = HashMap<(&'a CellKey, &'a Contender), Vec<&'a RunRecord>>;

/// A median ratio and the range of the per-round ratios it came from.
type RoundRatio = (Option<f64>, Option<(f64, f64)>);

/// Fills in every ratio of `summaries` from the runs in `groups`.
pub(super) fn fill(summaries: &mut [Summary], groups: &Groups) {
    let ratios = Ratios { groups };
    let best_peer = best_peers(summaries);
    let computed: Vec<_> = summaries
        .iter()
        .map(|summary| {
            (
                ratios.to_best_peer(summary, best_peer.get(&summary.cell)),
                ratios.to_each_peer(summaries, summary),
                ratios.to_best_fixed(summaries, summary),
                ratios.to_builtin(summaries, summary),
                ratios.to_limit(summaries, summary),
            )
        })
        .collect();
    for (summary, (peer, peers, fixed, builtin, limit)) in summaries.iter_mut().zip(computed) {
        (summary.ratio_to_best_peer, summary.best_peer_round_range) = peer;
        summary.ratios_to_peers = peers;
        (summary.ratio_to_best_fixed, summary.best_fixed_round_range) = fixed;
        summary.ratio_to_builtin = builtin;
        (summary.ratio_to_limit, summary.limit_note) = limit;
    }
}

/// Per cell, the peer with the highest median.
fn best_peers(summaries: &[Summary]) -> HashMap<CellKey, Contender> {
    let mut best: HashMap<&CellKey, (&Contender, f64)> = HashMap::new();
    for summary in summaries.iter().filter(|s| s.contender.is_peer()) {
        let entry = best
            .entry(&summary.cell)
            .or_insert((&summary.contender, summary.median_bps));
        if summary.median_bps > entry.1 {
            *entry = (&summary.contender, summary.median_bps);
        }
    }
    best.into_iter()
        .map(|(cell, (contender, _))| (cell.clone(), contender.clone()))
        .collect()
}

struct Ratios<'g, 'a> {
    groups: &'g Groups<'a>,
}

impl Ratios<'_, '_> {
    /// The per-round ratios of a summary to another contender of its
    /// cell: both sides of each ratio saw the same moment.
    fn round_ratios(&self, summary: &Summary, other: &Contender) -> Vec<f64> {
        let Some(own) = self.groups.get(&(&summary.cell, &summary.contender)) else {
            return Vec::new();
        };
        let own = per_round(own);
        let Some(theirs) = self
            .groups
            .get(&(&summary.cell, other))
            .map(|g| per_round(g))
        else {
            return Vec::new();
        };
        own.iter()
            .filter_map(|(round, bps)| Some(bps / theirs.get(round)?))
            .filter(|ratio| ratio.is_finite())
            .collect()
    }

    fn round_ratio(&self, summary: &Summary, other: &Contender) -> Option<f64> {
        let mut ratios = self.round_ratios(summary, other);
        (!ratios.is_empty()).then(|| median(&mut ratios))
    }

    /// The median and range of the per-round ratios to `other`.
    fn with_range(&self, summary: &Summary, other: &Contender) -> RoundRatio {
        let mut ratios = self.round_ratios(summary, other);
        if ratios.is_empty() {
            return (None, None);
        }
        let range = (
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        (Some(median(&mut ratios)), Some(range))
    }

    /// Only what runs as a process is held against a peer: the engine's
    /// figures have no start-up and warm buffers (see `ContenderKind`).
    fn to_best_peer(&self, summary: &Summary, best: Option<&Contender>) -> RoundRatio {
        match best {
            Some(best) if summary.contender.runs_as_process() => self.with_range(summary, best),
            _ => (None, None),
        }
    }

    /// `flexio copy` as a process against each peer of its cell.
    fn to_each_peer(&self, summaries: &[Summary], summary: &Summary) -> Vec<(String, f64)> {
        if !summary.contender.is_process() {
            return Vec::new();
        }
        summaries
            .iter()
            .filter(|p| p.cell == summary.cell && p.contender.is_peer())
            .filter_map(|p| {
                Some((
                    p.contender.label(),
                    self.round_ratio(summary, &p.contender)?,
                ))
            })
            .collect()
    }

    /// `auto` against the fastest fixed mechanism of its cell.
    fn to_best_fixed(&self, summaries: &[Summary], summary: &Summary) -> RoundRatio {
        match best_fixed_flexio(summaries, &summary.cell) {
            Some(fixed) if summary.contender.is_auto() => {
                self.with_range(summary, &fixed.contender)
            }
            _ => (None, None),
        }
    }

    /// `auto` with the tuned profile against `auto (built-in)`.
    fn to_builtin(&self, summaries: &[Summary], summary: &Summary) -> Option<f64> {
        if !summary.contender.is_profile_auto() {
            return None;
        }
        let twin = summaries.iter().find(|s| {
            s.cell == summary.cell && s.contender.is_auto() && !s.contender.is_profile_auto()
        })?;
        self.round_ratio(summary, &twin.contender)
    }

    /// A limit measured in the cell itself ran in the same rounds: held
    /// round by round, as a peer is; one measured apart, by medians.
    fn to_limit(&self, summaries: &[Summary], summary: &Summary) -> (Option<f64>, Option<String>) {
        let Some(limit) = limit_for(summaries, &summary.cell) else {
            return (None, None);
        };
        // A limit is not held against another limit of its cell.
        if summary.contender.kind() == ContenderKind::Limit && summary.contender != limit.contender
        {
            return (None, None);
        }
        let ratio = if limit.cell == summary.cell {
            self.round_ratio(summary, &limit.contender)
        } else {
            Some(summary.median_bps / limit.median_bps).filter(|r| r.is_finite())
        };
        let note = ratio
            .filter(|r| *r > 1.0 && summary.contender != limit.contender)
            .map(|r| limit_explanation(summary, limit, r));
        (ratio, note)
    }
}
