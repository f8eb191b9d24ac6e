//! The table of one scenario: which columns its cells need, a row per
//! summary, and the caption that explains the marks and units (with
//! Cue's figures under the scenarios that repeat its experiments).

use super::cells::{
    cache_text, contenders_in, cost, label_among, limits_used, meter_lost_per_gib, ran_note,
    rate_range, ratio, short_size,
};
use super::{Table, BEST_MARK, LIMIT_MARK};
use crate::model::Scenario;
use crate::report::originals::Beside;
use crate::stats::{self, Summary};

/// The table of one scenario.
pub fn scenario_table(summaries: &[Summary], scenario: Scenario) -> Table {
    let rows: Vec<&Summary> = summaries
        .iter()
        .filter(|s| s.cell.scenario == scenario)
        .collect();
    let shape = Shape::of(&rows);
    let columns = shape.columns();
    let table_rows = rows
        .iter()
        .map(|summary| shape.row(summaries, &rows, summary))
        .collect();
    Table {
        title: scenario.to_string(),
        caption: caption(summaries, &rows, scenario),
        headers: columns.iter().map(|(name, _)| name.to_string()).collect(),
        right_aligned: columns.iter().map(|(_, right)| *right).collect(),
        rows: table_rows,
    }
}

/// The optional columns a scenario's rows need.
struct Shape {
    chunk_sweep: bool,
    has_path: bool,
    has_meter: bool,
    has_flows: bool,
}

impl Shape {
    fn of(rows: &[&Summary]) -> Shape {
        Shape {
            chunk_sweep: rows.iter().any(|s| s.cell.chunk != 0),
            has_path: rows.iter().any(|s| !s.cell.path.is_empty()),
            has_meter: rows.iter().any(|s| s.meter_kept.is_some()),
            has_flows: rows.iter().any(|s| s.jain.is_some()),
        }
    }

    /// Each column's header and whether it is right-aligned.
    fn columns(&self) -> Vec<(&'static str, bool)> {
        let mut columns: Vec<(&str, bool)> = vec![("size", true)];
        if self.chunk_sweep {
            columns.push(("chunk", true));
        }
        columns.extend([("cache", false), ("flows", true)]);
        if self.has_path {
            columns.push(("path", false));
        }
        columns.extend([
            ("kind", false),
            ("contender", false),
            ("runs", true),
            ("median", true),
            ("min–max", true),
            ("CPU s/GiB proc", true),
            ("CPU s/GiB host", true),
            ("ctx sw/GiB vol/invol", true),
            ("× best peer", true),
            ("× limit", true),
        ]);
        if self.has_meter {
            columns.extend([("meter kept", true), ("meter lost s/GiB", true)]);
        }
        if self.has_flows {
            columns.extend([("per flow", true), ("Jain", true)]);
        }
        columns.push(("ran", false));
        columns
    }

    /// The row of `summary`: where it ran, who, and its figures.
    fn row(&self, summaries: &[Summary], rows: &[&Summary], summary: &Summary) -> Vec<String> {
        let cell = &summary.cell;
        let mut row = vec![short_size(cell.size)];
        if self.chunk_sweep {
            row.push(if cell.chunk == 0 {
                "default".to_string()
            } else {
                short_size(cell.chunk)
            });
        }
        row.push(cache_text(cell.cache, summary.resident_percent));
        row.push(cell.flows.to_string());
        if self.has_path {
            row.push(cell.path.clone());
        }
        let best = stats::best_flexio(summaries, cell)
            .is_some_and(|best| best.contender == summary.contender);
        let mark = if best { BEST_MARK } else { " " };
        row.push(summary.contender.kind().as_str().to_string());
        row.push(format!(
            "{mark} {}",
            label_among(&summary.contender, &contenders_in(rows, cell))
        ));
        row.push(summary.runs.to_string());
        row.extend(figures(summary));
        if self.has_meter {
            row.extend(meter_figures(summary));
        }
        if self.has_flows {
            row.push(
                summary
                    .flow_median_bps
                    .map_or("-".into(), flexio::format_rate),
            );
            row.push(summary.jain.map_or("-".into(), |j| format!("{j:.3}")));
        }
        row.push(ran_note(summary));
        row
    }
}

/// Rate, spread, CPU, context switches and the two ratios of a row.
fn figures(summary: &Summary) -> Vec<String> {
    let host_cpu = match summary.host_cpu_below_resolution {
        Some(resolution) => format!("< {resolution:.2}"),
        None => cost(summary.host_cpu_s_per_gib, 3),
    };
    let switches = match summary.involuntary_per_gib {
        Some(involuntary) => format!(
            "{}/{}",
            cost((summary.switches_per_gib - involuntary).max(0.0), 0),
            cost(involuntary, 0)
        ),
        None => cost(summary.switches_per_gib, 0),
    };
    let mut to_limit = ratio(summary.ratio_to_limit);
    if summary.limit_note.is_some() {
        to_limit += LIMIT_MARK;
    }
    vec![
        flexio::format_rate(summary.median_bps),
        rate_range(summary.min_bps, summary.max_bps),
        cost(summary.cpu_s_per_gib, 3),
        host_cpu,
        switches,
        ratio(summary.ratio_to_best_peer),
        to_limit,
    ]
}

/// What the meter kept, and what it lost per GiB moved.
fn meter_figures(summary: &Summary) -> [String; 2] {
    [
        summary
            .meter_kept
            .map(|kept| format!("{:.0}%", kept * 100.0))
            .unwrap_or_else(|| "-".into()),
        meter_lost_per_gib(summary.meter_kept, summary.median_bps)
            .map(|lost| format!("{lost:.3}"))
            .unwrap_or_else(|| "-".into()),
    ]
}

/// The lines under the table: the limit, the marks, the units, Cue.
fn caption(summaries: &[Summary], rows: &[&Summary], scenario: Scenario) -> Vec<String> {
    let mut caption = Vec::new();
    let limits = limits_used(summaries, rows);
    caption.push(if limits.is_empty() {
        "× limit: no physical limit measured for this scenario".to_string()
    } else {
        format!("× limit against: {}", limits.join(", "))
    });
    caption.push(format!(
        "{BEST_MARK} fastest flexio mechanism of the cell (engine); × best peer is the median of \
         per-round ratios to the fastest peer of the cell, given only for what runs as a \
         process (flexio copy and the peers): engine rows run inside the bench, without \
         start-up, and compare mechanisms with each other"
    ));
    if rows.iter().any(|s| s.host_cpu_below_resolution.is_some()) {
        caption.push(
            "CPU s/GiB host counts /proc/stat's 10 ms ticks: \"< x\" marks a median run \
             shorter than one tick, x being one tick per GiB at that size"
                .to_string(),
        );
    }
    for summary in rows {
        if let Some(note) = &summary.limit_note {
            let cell = crate::plan::label(&summary.cell);
            caption.push(format!("{LIMIT_MARK} {cell}: {note}"));
        }
    }
    if rows.iter().any(|s| s.involuntary_per_gib.is_some()) {
        caption.push(
            "ctx sw/GiB vol/invol: voluntary (the flow blocked) and involuntary (it was \
             preempted) context switches per GiB, as Cue's Table 1 splits them"
                .to_string(),
        );
    }
    caption.extend(cue_lines(scenario));
    caption
}

/// The originals' texts registered for `place`, as caption lines.
fn originals(place: Beside) -> impl Iterator<Item = String> {
    crate::report::originals::texts(place)
        .into_iter()
        .map(str::to_string)
}

/// Cue's figures beside the scenarios that repeat its experiments.
fn cue_lines(scenario: Scenario) -> Vec<String> {
    match scenario {
        Scenario::Meter => vec![
            "meter kept: the share of its solo rate a CPU-bound co-process at normal \
             priority, on the same CPU as the transfer, kept while the transfer ran"
                .to_string(),
            "meter lost s/GiB: the seconds of its solo work the meter lost per GiB moved, \
             (1 − kept) over the median throughput: a fair scheduler gives both half the \
             CPU whatever the mechanism, so what a mechanism leaves to others shows per \
             byte, not per second"
                .to_string(),
        ]
        .into_iter()
        .chain(originals(Beside::Meter))
        .collect(),
        Scenario::Parallel => originals(Beside::Parallel).collect(),
        _ => Vec::new(),
    }
}
