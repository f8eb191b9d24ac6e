//! Statistics over the raw runs: per (cell, contender) the median
//! throughput with its min and max, CPU and context switches per GiB, and the
//! two ratios a speed claim is made of — to the best peer (median of the
//! per-round ratios, so that both sides of each ratio saw the same moment of
//! a noisy machine) and to the physical limit that bounds the cell.
//!
//! Round 0 is the warm-up and never counted.
//!
//! # Which physical limit applies
//! Limits are stored as [`Contender::Limit`] runs in cells whose scenario is
//! [`Scenario::Limits`]. A cell is bounded by every resource its bytes must
//! pass through; [`limit_candidates`] lists them:
//!
//! | the cell | limit |
//! | --- | --- |
//! | network (scenario names a `socket`, or a non-empty `path`) | `iperf3-<path>` (`iperf3-loopback` when the path is empty or was not measured) |
//! | cold source | `disk-read` (the faster of O_DIRECT and a buffered read of the cold source), else `fio-read` (16 requests in flight), else `disk-direct-read` |
//! | durable sink (scenario ends in `durable`) | `disk-write` (the faster of O_DIRECT and a buffered write up to `fsync`), else `fio-write` (16 requests in flight), else `disk-write-fsync` (a durable write of zeros through the page cache), else `disk-direct-write`, else a read limit when no write limit was measured |
//! | none of the above (memory, warm files, pipes) | `memcpy` |
//!
//! A durable cold copy is thus held against the slower of reading alone
//! and writing alone: no copy can beat either, and one that overlaps its
//! reads and writes perfectly would reach it. `fio-copy` (fio reading and
//! writing at once) bounds no cell; it is printed to show how much this
//! disk's reads and writes slow each other down.
//!
//! The limit of a cell is the *slowest* of its candidates that were
//! measured. A limit run in the cell itself (`memcpy` beside flexio in the
//! memory scenario, the disk's direct read beside the contenders of a cold
//! cell) is used first, and held round by round as a peer is; else the
//! limits scenario's run at the cell's size, else at its largest size (the
//! steady state). A cell none of whose limits was measured has no ratio to
//! the limit. A ratio above 1 comes with [`limit_explanation`].

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::model::{CacheState, CellKey, Contender, Results, RunRecord, Scenario};

mod ratios;
mod verdicts;
pub use verdicts::{auto_verdicts, geometric_mean, peer_verdicts, AutoVerdict, PeerVerdict};

/// Bytes in a GiB, the unit of the per-GiB costs.
const GIB: f64 = (1u64 << 30) as f64;

/// The counted runs of one contender in one cell, summarised.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Where it ran.
    pub cell: CellKey,
    /// What ran.
    pub contender: Contender,
    /// Counted runs (the warm-up excluded).
    pub runs: usize,
    /// Median throughput, bytes per second.
    pub median_bps: f64,
    /// Slowest counted run, bytes per second.
    pub min_bps: f64,
    /// Fastest counted run, bytes per second.
    pub max_bps: f64,
    /// The spread the rounds are judged by ([`round_spread`] of their
    /// throughputs), bytes per second; absent in older results.
    #[serde(default)]
    pub spread_bps: Option<(f64, f64)>,
    /// Process CPU (user + system) seconds per GiB moved, median over runs.
    pub cpu_s_per_gib: f64,
    /// Of that, the system seconds per GiB (median over runs): Cue's
    /// tables give system time alone; absent in older results.
    #[serde(default)]
    pub sys_s_per_gib: f64,
    /// Whole-host busy CPU seconds per GiB moved, median over runs.
    pub host_cpu_s_per_gib: f64,
    /// Context switches per GiB moved, median over runs.
    pub switches_per_gib: f64,
    /// Of those, the involuntary ones per GiB (median over runs), where
    /// the runs recorded them: Cue's Table 1 splits the two, a transfer
    /// that blocks switching voluntarily, one that is preempted not.
    #[serde(default)]
    pub involuntary_per_gib: Option<f64>,
    /// Median over rounds of this contender's throughput divided by the
    /// best peer's throughput in the same round; only for what runs as a
    /// process (`flexio copy` and the peers themselves), `None` for the
    /// engine's in-process figures and where the cell has no peer (or
    /// they share no round).
    pub ratio_to_best_peer: Option<f64>,
    /// The lowest and the highest of those per-round ratios.
    #[serde(default)]
    pub best_peer_round_range: Option<(f64, f64)>,
    /// For `flexio copy` as a process: the median of per-round ratios to
    /// every peer of the cell, by the peer's label.
    #[serde(default)]
    pub ratios_to_peers: Vec<(String, f64)>,
    /// For `auto`: the median over rounds of its throughput divided by the
    /// fastest fixed flexio mechanism's (by median) in the same round.
    #[serde(default)]
    pub ratio_to_best_fixed: Option<f64>,
    /// For `auto`: the lowest and the highest of those per-round ratios,
    /// to tell a shortfall from the noise of the rounds.
    #[serde(default)]
    pub best_fixed_round_range: Option<(f64, f64)>,
    /// For `auto` with the profile: the median over rounds of its
    /// throughput divided by that of `auto` without it (the built-in table).
    #[serde(default)]
    pub ratio_to_builtin: Option<f64>,
    /// Median throughput divided by the median of the cell's physical limit
    /// (see the module documentation); `None` when it was not measured.
    pub ratio_to_limit: Option<f64>,
    /// Why `ratio_to_limit` is above 1 (see [`limit_explanation`]).
    #[serde(default)]
    pub limit_note: Option<String>,
    /// The host CPU column's resolution per GiB when this contender's
    /// median host CPU per run is below one tick of `/proc/stat` (10 ms):
    /// the figure is then "less than this", not a measurement.
    #[serde(default)]
    pub host_cpu_below_resolution: Option<f64>,
    /// The mechanism that really ran (flexio only); several, most frequent
    /// first and joined by `, `, when the runs disagree.
    pub mechanism_used: Option<String>,
    /// Median source page-cache residency at the start of the runs, percent.
    pub resident_percent: Option<f64>,
    /// Median share of the meter co-process's solo rate it kept (0..1).
    pub meter_kept: Option<f64>,
    /// Parallel cells: the median over runs of the median flow's own
    /// throughput, bytes per second.
    #[serde(default)]
    pub flow_median_bps: Option<f64>,
    /// Parallel cells: the median over runs of Jain's index over the
    /// flows' own throughputs (1: every flow got the same).
    #[serde(default)]
    pub jain: Option<f64>,
}

/// The median of `values`, sorting them in place: the middle value for an
/// odd count, the mean of the two middle values for an even count, NaN for
/// an empty slice. NaNs sort last.
///
/// # Examples
/// ```
/// use flexio_harness::stats::median;
/// assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
/// assert!(median(&mut []).is_nan());
/// ```
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

/// Rounds a point may get beyond those planned while its rounds disagree
/// (see [`another_round`]).
pub const SETTLING_ROUNDS: usize = 2;

/// The spread a point's rounds are judged by: the slowest to the fastest
/// round; with five or more rounds, the second slowest to the second
/// fastest, one disturbed round each way set aside as the median sets it
/// aside. `None` for no rounds.
///
/// # Examples
/// ```
/// use flexio_harness::stats::round_spread;
/// assert_eq!(round_spread(&[3.0, 1.0, 2.0]), Some((1.0, 3.0)));
/// assert_eq!(round_spread(&[10.0, 1.0, 2.0, 3.0, 2.5]), Some((2.0, 3.0)));
/// assert_eq!(round_spread(&[]), None);
/// ```
pub fn round_spread(values: &[f64]) -> Option<(f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let aside = usize::from(sorted.len() >= 5);
    let kept = sorted.get(aside..sorted.len().checked_sub(aside)?)?;
    Some((*kept.first()?, *kept.last()?))
}

/// Whether the [`round_spread`] of `values` is wider than `limit` times
/// their median.
///
/// # Examples
/// ```
/// use flexio_harness::stats::unsettled;
/// assert!(unsettled(&[1.0, 1.0, 3.0], 0.5));
/// assert!(!unsettled(&[1.0, 1.0, 3.0, 1.1, 0.9], 0.5));
/// ```
pub fn unsettled(values: &[f64], limit: f64) -> bool {
    let Some((low, high)) = round_spread(values) else {
        return false;
    };
    let middle = median(&mut values.to_vec()).abs();
    middle > 0.0 && (high - low) / middle > limit
}

/// Whether a point planned for `planned` rounds, `ran` of them run, gets
/// another: until the planned ones are done, then, where at least three
/// were planned, up to [`SETTLING_ROUNDS`] more while `unsettled()` says
/// its rounds still disagree (a round disturbed by the machine, not by
/// what is measured, is then one of five and set aside by
/// [`round_spread`]). A point that stays wide is reported wide.
///
/// # Examples
/// ```
/// use flexio_harness::stats::another_round;
/// assert!(another_round(2, 3, || false));
/// assert!(!another_round(3, 3, || false));
/// assert!(another_round(3, 3, || true));
/// assert!(!another_round(5, 3, || true));
/// assert!(!another_round(1, 1, || true));
/// ```
pub fn another_round(ran: usize, planned: usize, unsettled: impl FnOnce() -> bool) -> bool {
    ran < planned || (planned >= 3 && ran < planned + SETTLING_ROUNDS && unsettled())
}

/// Jain's fairness index of `shares` (per-flow throughputs, say):
/// `(Σx)² / (n · Σx²)`, 1 when every flow got the same, `1/n` when one
/// flow got everything. `None` for no flows or when all are zero.
///
/// # Examples
/// ```
/// use flexio_harness::stats::jain;
/// assert_eq!(jain(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
/// assert_eq!(jain(&[8.0, 0.0, 0.0, 0.0]), Some(0.25));
/// assert_eq!(jain(&[]), None);
/// ```
pub fn jain(shares: &[f64]) -> Option<f64> {
    let sum: f64 = shares.iter().sum();
    let squares: f64 = shares.iter().map(|x| x * x).sum();
    if shares.is_empty() || squares <= 0.0 {
        return None;
    }
    Some(sum * sum / (shares.len() as f64 * squares))
}

/// Summarises the counted runs (round ≥ 1) of `results` per (cell,
/// contender).
///
/// The order is stable and meant for reading: scenarios in the order they
/// first ran, cells sorted within a scenario (size, chunk, cache, flows,
/// path), then flexio contenders, peers and limits, each in the order they
/// first ran. Groups with only a
/// warm-up are left out.
pub fn summarize(results: &Results) -> Vec<Summary> {
    let mut scenario_order: HashMap<Scenario, usize> = HashMap::new();
    let mut contender_order: HashMap<&Contender, usize> = HashMap::new();
    let mut groups: ratios::Groups = HashMap::new();
    for run in &results.runs {
        let scenarios = scenario_order.len();
        scenario_order.entry(run.cell.scenario).or_insert(scenarios);
        let contenders = contender_order.len();
        contender_order.entry(&run.contender).or_insert(contenders);
        if run.round >= 1 {
            groups
                .entry((&run.cell, &run.contender))
                .or_default()
                .push(run);
        }
    }

    let mut keys: Vec<(&CellKey, &Contender)> = groups.keys().copied().collect();
    keys.sort_by(|a, b| {
        scenario_order[&a.0.scenario]
            .cmp(&scenario_order[&b.0.scenario])
            .then_with(|| a.0.cmp(b.0))
            .then_with(|| kind_rank(a.1).cmp(&kind_rank(b.1)))
            .then_with(|| contender_order[a.1].cmp(&contender_order[b.1]))
    });

    let mut summaries: Vec<Summary> = keys
        .iter()
        .map(|key| summarize_group(key.0, key.1, &groups[key]))
        .collect();
    ratios::fill(&mut summaries, &groups);
    summaries
}

/// The fixed flexio mechanism (not `auto`) with the highest median
/// throughput in `cell`: the one `auto` is held against.
pub fn best_fixed_flexio<'a>(summaries: &'a [Summary], cell: &CellKey) -> Option<&'a Summary> {
    summaries
        .iter()
        .filter(|s| s.contender.is_fixed_flexio() && &s.cell == cell)
        .max_by(|a, b| a.median_bps.total_cmp(&b.median_bps))
}

/// The flexio contender with the highest median throughput in `cell`.
pub fn best_flexio<'a>(summaries: &'a [Summary], cell: &CellKey) -> Option<&'a Summary> {
    summaries
        .iter()
        .filter(|s| s.contender.is_flexio() && &s.cell == cell)
        .max_by(|a, b| a.median_bps.total_cmp(&b.median_bps))
}

/// The peer with the highest median throughput in `cell`: the one every
/// ratio to the best peer is taken against.
pub fn best_peer<'a>(summaries: &'a [Summary], cell: &CellKey) -> Option<&'a Summary> {
    summaries
        .iter()
        .filter(|s| s.contender.is_peer() && &s.cell == cell)
        .max_by(|a, b| a.median_bps.total_cmp(&b.median_bps))
}

/// The names of the limits that bound `cell`, by the rule in the module
/// documentation, each entry a list of acceptable names in order of
/// preference. Empty for the limits themselves.
///
/// # Examples
/// ```
/// use flexio::profile::FlowKind;
/// use flexio_harness::model::{CacheState, CellKey, Scenario};
/// use flexio_harness::stats::limit_candidates;
/// let cell = CellKey {
///     scenario: Scenario::Flow(FlowKind::FileToFile),
///     size: 1 << 20,
///     chunk: 0,
///     cache: CacheState::Cold,
///     flows: 1,
///     path: String::new(),
///     schedule: None,
///     connection_per_file: false,
/// };
/// assert_eq!(
///     limit_candidates(&cell),
///     vec![vec!["disk-read".to_string(), "fio-read".to_string(), "disk-direct-read".to_string()]]
/// );
/// ```
pub fn limit_candidates(cell: &CellKey) -> Vec<Vec<String>> {
    if cell.scenario == Scenario::Limits {
        return Vec::new();
    }
    let mut resources = Vec::new();
    if cell.scenario.crosses_a_socket() || !cell.path.is_empty() {
        let path = if cell.path.is_empty() {
            "loopback"
        } else {
            &cell.path
        };
        let mut names = vec![format!("iperf3-{path}")];
        if path != "loopback" {
            names.push("iperf3-loopback".to_string());
        }
        resources.push(names);
    }
    if cell.cache == CacheState::Cold {
        resources.push(vec![
            "disk-read".to_string(),
            "fio-read".to_string(),
            "disk-direct-read".to_string(),
        ]);
    }
    if cell.scenario.durable() {
        // Every byte must reach the disk: fio's write with requests in
        // flight, else a durable write of zeros through the page cache,
        // else flexio's direct write, else the direct read.
        resources.push(vec![
            "disk-write".to_string(),
            "fio-write".to_string(),
            "disk-write-fsync".to_string(),
            "disk-direct-write".to_string(),
            "disk-read".to_string(),
            "disk-direct-read".to_string(),
        ]);
    }
    if resources.is_empty() {
        resources.push(vec!["memcpy".to_string()]);
    }
    resources
}

/// The summary of the physical limit that bounds `cell` (the slowest of
/// [`limit_candidates`] that was measured), if any.
pub fn limit_for<'a>(summaries: &'a [Summary], cell: &CellKey) -> Option<&'a Summary> {
    let beside = |name: &String| {
        summaries.iter().find(|s| {
            &s.cell == cell && matches!(&s.contender, Contender::Limit { name: n } if n == name)
        })
    };
    limit_candidates(cell)
        .iter()
        .filter_map(|names| {
            // Measured beside the contenders first, whatever its rank: it
            // saw the same file at the same moment.
            names.iter().find_map(beside).or_else(|| {
                names
                    .iter()
                    .find_map(|name| measured_limit(summaries, name, cell))
            })
        })
        .filter(|limit| limit.median_bps.is_finite() && limit.median_bps > 0.0)
        .min_by(|a, b| a.median_bps.total_cmp(&b.median_bps))
}

/// The limit called `name` for `cell`: measured in the cell itself (as
/// `memcpy` is beside flexio in the memory scenario), else in the limits
/// scenario at the cell's size, else there at its largest size.
fn measured_limit<'a>(summaries: &'a [Summary], name: &str, cell: &CellKey) -> Option<&'a Summary> {
    let named = |s: &&Summary| matches!(&s.contender, Contender::Limit { name: n } if n == name);
    if let Some(beside) = summaries.iter().filter(named).find(|s| &s.cell == cell) {
        return Some(beside);
    }
    let mut measured = summaries
        .iter()
        .filter(named)
        .filter(|s| s.cell.scenario == Scenario::Limits);
    let mut largest = measured.next()?;
    for limit in measured {
        if limit.cell.size == cell.size {
            return Some(limit);
        }
        if largest.cell.size != cell.size && limit.cell.size > largest.cell.size {
            largest = limit;
        }
    }
    Some(largest)
}

/// The engine's mechanisms first, then `flexio copy` as a process beside
/// the peers, then the limits.
fn kind_rank(contender: &Contender) -> crate::model::ContenderKind {
    contender.kind()
}

/// Throughput per round; a round with several runs counts their mean.
fn per_round(runs: &[&RunRecord]) -> BTreeMap<u32, f64> {
    let mut rounds: BTreeMap<u32, (f64, u32)> = BTreeMap::new();
    for run in runs {
        let entry = rounds.entry(run.round).or_insert((0.0, 0));
        entry.0 += run.throughput();
        entry.1 += 1;
    }
    rounds
        .into_iter()
        .map(|(round, (sum, count))| (round, sum / f64::from(count)))
        .collect()
}

/// Everything about one group that does not depend on other groups.
fn summarize_group(cell: &CellKey, contender: &Contender, runs: &[&RunRecord]) -> Summary {
    let mut throughput: Vec<f64> = runs.iter().map(|run| run.throughput()).collect();
    let min_bps = throughput.iter().copied().fold(f64::INFINITY, f64::min);
    let max_bps = throughput.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let per_gib = |value: fn(&RunRecord) -> f64| {
        let mut values: Vec<f64> = runs
            .iter()
            .filter(|run| run.measured.bytes > 0)
            .map(|run| value(run) / (run.measured.bytes as f64 / GIB))
            .collect();
        median(&mut values)
    };
    let optional = |value: fn(&RunRecord) -> Option<f64>| {
        let mut values: Vec<f64> = runs.iter().filter_map(|run| value(run)).collect();
        (!values.is_empty()).then(|| median(&mut values))
    };
    let spread_bps = round_spread(&throughput);
    Summary {
        cell: cell.clone(),
        contender: contender.clone(),
        runs: runs.len(),
        median_bps: median(&mut throughput),
        min_bps,
        max_bps,
        spread_bps,
        cpu_s_per_gib: per_gib(|run| {
            (run.measured.cpu_user_ns + run.measured.cpu_sys_ns) as f64 / 1e9
        }),
        sys_s_per_gib: per_gib(|run| run.measured.cpu_sys_ns as f64 / 1e9),
        host_cpu_s_per_gib: per_gib(|run| run.measured.host_cpu_busy_ns as f64 / 1e9),
        switches_per_gib: per_gib(|run| run.context_switches as f64),
        involuntary_per_gib: {
            let mut values: Vec<f64> = runs
                .iter()
                .filter(|run| run.measured.bytes > 0)
                .filter_map(|run| {
                    Some(run.involuntary_switches? as f64 / (run.measured.bytes as f64 / GIB))
                })
                .collect();
            (!values.is_empty()).then(|| median(&mut values))
        },
        ratio_to_best_peer: None,
        best_peer_round_range: None,
        ratios_to_peers: Vec::new(),
        ratio_to_best_fixed: None,
        best_fixed_round_range: None,
        ratio_to_builtin: None,
        ratio_to_limit: None,
        limit_note: None,
        host_cpu_below_resolution: host_cpu_below_resolution(runs),
        mechanism_used: mechanisms_used(runs),
        resident_percent: optional(|run| run.source_resident_percent),
        meter_kept: optional(|run| run.meter_kept),
        flow_median_bps: optional(|run| {
            (!run.flow_bytes_per_s.is_empty()).then(|| median(&mut run.flow_bytes_per_s.clone()))
        }),
        jain: optional(|run| jain(&run.flow_bytes_per_s)),
    }
}

/// One tick of the host CPU counters of `/proc/stat`, in nanoseconds.
pub fn host_cpu_tick_ns() -> f64 {
    1e9 / rustix::param::clock_ticks_per_second().max(1) as f64
}

/// The resolution per GiB of the host CPU figure when the median run
/// counted less than one tick of it; `None` when it is a measurement.
fn host_cpu_below_resolution(runs: &[&RunRecord]) -> Option<f64> {
    let mut busy: Vec<f64> = runs
        .iter()
        .map(|r| r.measured.host_cpu_busy_ns as f64)
        .collect();
    let mut bytes: Vec<f64> = runs.iter().map(|r| r.measured.bytes as f64).collect();
    let tick = host_cpu_tick_ns();
    let (busy, bytes) = (median(&mut busy), median(&mut bytes));
    (busy < tick && bytes > 0.0).then(|| tick / 1e9 / (bytes / GIB))
}

/// Why a contender's ratio to its cell's limit is above 1, in words: the
/// source was partly cached, the limit was measured apart (another size,
/// another moment of a machine that drifts), or the two overlap within
/// their runs' noise. Only a result none of these explains is said to be
/// unexplained, which means the limit is wrong for the cell.
///
/// # Examples
/// ```
/// use flexio::profile::FlowKind;
/// use flexio_harness::model::{CacheState, CellKey, Contender, Scenario};
/// use flexio_harness::stats::{limit_explanation, Summary};
/// let cell = CellKey { scenario: Scenario::Flow(FlowKind::MemoryToMemory), size: 1 << 20, chunk: 0,
///     cache: CacheState::NotApplicable, flows: 1, path: String::new(),
///     schedule: None, connection_per_file: false };
/// let summary = |contender, min: f64, median: f64, max: f64| Summary {
///     cell: cell.clone(), contender, runs: 5, median_bps: median, min_bps: min,
///     max_bps: max, spread_bps: Some((min, max)), cpu_s_per_gib: 0.0, sys_s_per_gib: 0.0, host_cpu_s_per_gib: 0.0,
///     switches_per_gib: 0.0, involuntary_per_gib: None, ratio_to_best_peer: None, best_peer_round_range: None,
///     ratios_to_peers: Vec::new(),
///     ratio_to_best_fixed: None, best_fixed_round_range: None, ratio_to_builtin: None,
///     ratio_to_limit: None, limit_note: None, host_cpu_below_resolution: None,
///     mechanism_used: None, resident_percent: None, meter_kept: None,
///     flow_median_bps: None, jain: None };
/// let memcpy = summary(Contender::Limit { name: "memcpy".into() }, 8e9, 10e9, 12e9);
/// let flow = summary(Contender::Peer { name: "x".into() }, 9e9, 11e9, 13e9);
/// let note = limit_explanation(&flow, &memcpy, 1.1);
/// assert!(note.contains("overlap"), "{note}");
/// ```
pub fn limit_explanation(summary: &Summary, limit: &Summary, ratio: f64) -> String {
    let name = limit.contender.label();
    let name = name.trim_start_matches("limit: ");
    let mut reasons = Vec::new();
    if summary.cell.cache == CacheState::Cold
        && let Some(resident) = summary.resident_percent.filter(|r| *r >= 1.0)
    {
        reasons.push(format!(
            "{resident:.0}% of the source was in the page cache at the start"
        ));
    }
    if limit.cell != summary.cell {
        reasons.push(format!(
            "{name} was measured apart ({}), not in this cell's rounds",
            crate::plan::label(&limit.cell)
        ));
    }
    if summary.min_bps <= limit.max_bps {
        reasons.push(format!(
            "within the noise: its runs ({}–{}) overlap {name}'s ({}–{})",
            flexio::format_rate(summary.min_bps),
            flexio::format_rate(summary.max_bps),
            flexio::format_rate(limit.min_bps),
            flexio::format_rate(limit.max_bps)
        ));
    }
    if reasons.is_empty() {
        reasons.push(format!(
            "not explained: every run beat every run of {name}; the limit is wrong for this cell"
        ));
    }
    format!(
        "{} {:.2}× {name}: {}",
        summary.contender.label(),
        ratio,
        reasons.join("; ")
    )
}

/// The mechanisms that really ran, most frequent first.
fn mechanisms_used(runs: &[&RunRecord]) -> Option<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for name in runs.iter().filter_map(|run| run.mechanism_used.as_deref()) {
        match counts.iter_mut().find(|(seen, _)| *seen == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    // Stable: ties keep the order of first appearance.
    counts.sort_by_key(|&(_, count)| std::cmp::Reverse(count));
    (!counts.is_empty()).then(|| {
        counts
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// Each entrant of `cells` with no result in `summaries` (no summary, or
/// one that moved nothing), in words: `cell LABEL: CONTENDER: no result`.
pub fn without_results(cells: &[crate::plan::Cell], summaries: &[Summary]) -> Vec<String> {
    let mut missing = Vec::new();
    for cell in cells {
        for entrant in &cell.entrants {
            let contender = entrant.contender();
            let ran = summaries
                .iter()
                .any(|s| s.cell == cell.key && s.contender == contender && s.median_bps > 0.0);
            if !ran {
                missing.push(format!(
                    "cell {}: {}: no result",
                    cell.label(),
                    contender.label()
                ));
            }
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use flexio::measure::Measurement;
    use flexio::profile::FlowKind;

    #[test]
    fn jain_is_one_for_equal_shares_and_falls_to_one_over_n() {
        assert_eq!(jain(&[3.0; 7]), Some(1.0));
        let two_of_four = jain(&[1.0, 1.0, 0.0, 0.0]).unwrap();
        assert!((two_of_four - 0.5).abs() < 1e-12);
        let near = jain(&[100.0, 99.0, 101.0, 100.0]).unwrap();
        assert!(near > 0.999 && near <= 1.0, "{near}");
        let skewed = jain(&[10.0, 1.0, 1.0, 1.0]).unwrap();
        assert!(skewed > 0.25 && skewed < 0.5, "{skewed}");
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    fn cell(scenario: Scenario, cache: CacheState, path: &str) -> CellKey {
        CellKey {
            scenario,
            size: 1 << 20,
            chunk: 0,
            cache,
            flows: 1,
            path: path.into(),
            schedule: None,
            connection_per_file: false,
        }
    }

    #[test]
    fn limits_follow_the_resources_a_cell_uses() {
        let names = |c: CellKey| limit_candidates(&c);
        assert_eq!(
            names(cell(
                Scenario::Flow(FlowKind::MemoryToMemory),
                CacheState::NotApplicable,
                ""
            )),
            vec![vec!["memcpy".to_string()]]
        );
        assert_eq!(
            names(cell(
                Scenario::Flow(FlowKind::FileToFile),
                CacheState::Warm,
                ""
            )),
            vec![vec!["memcpy".to_string()]]
        );
        assert_eq!(
            names(cell(
                Scenario::Flow(FlowKind::FileToSocket),
                CacheState::Warm,
                "loopback"
            )),
            vec![vec!["iperf3-loopback".to_string()]]
        );
        assert_eq!(
            names(cell(
                Scenario::Flow(FlowKind::SocketToFile),
                CacheState::NotApplicable,
                "veth"
            )),
            vec![vec![
                "iperf3-veth".to_string(),
                "iperf3-loopback".to_string()
            ]]
        );
        assert_eq!(
            names(cell(
                Scenario::Flow(FlowKind::FileToFileDurable),
                CacheState::Cold,
                ""
            )),
            vec![
                vec![
                    "disk-read".to_string(),
                    "fio-read".to_string(),
                    "disk-direct-read".to_string()
                ],
                vec![
                    "disk-write".to_string(),
                    "fio-write".to_string(),
                    "disk-write-fsync".to_string(),
                    "disk-direct-write".to_string(),
                    "disk-read".to_string(),
                    "disk-direct-read".to_string()
                ]
            ]
        );
        assert!(names(cell(Scenario::Limits, CacheState::NotApplicable, "")).is_empty());
    }

    #[test]
    fn mechanisms_used_lists_the_most_frequent_first() {
        let run = |mechanism: &str| RunRecord {
            cell: cell(
                Scenario::Flow(FlowKind::MemoryToMemory),
                CacheState::NotApplicable,
                "",
            ),
            contender: Contender::Flexio {
                mechanism: flexio::MechanismName::Auto,
                chunk: 0,
                direct: false,
                queue_depth: 32,
                pipe_size: 1 << 20,
                builtin_table: false,
                copy_kernel: Default::default(),
            },
            round: 1,
            measured: Measurement {
                bytes: 1,
                wall_ns: 1,
                ..Measurement::default()
            },
            context_switches: 0,
            involuntary_switches: None,
            source_resident_percent: None,
            mechanism_used: Some(mechanism.into()),
            decided_by: None,
            meter_kept: None,
            flow_bytes_per_s: Vec::new(),
        };
        let runs = [run("splice"), run("sendfile"), run("sendfile")];
        let refs: Vec<&RunRecord> = runs.iter().collect();
        assert_eq!(mechanisms_used(&refs).as_deref(), Some("sendfile, splice"));
        assert_eq!(mechanisms_used(&refs[1..]).as_deref(), Some("sendfile"));
    }
}
