//! Tables of the summaries: fixed-width text for the terminal and Markdown
//! for `report.md`, built from the same [`Table`] so that both say the same.
//!
//! One table per scenario (the limits scenario gets its own short table),
//! then the peers that were missing and the notes of the run.

use crate::model::{Contender, Results, Scenario};
use crate::stats::{self, Summary};

mod cells;
mod scenario;
pub use cells::{cache_name, cache_text, label_among, short_size};
use cells::{rate_range, ratio};
pub use scenario::scenario_table;

/// The mark of the fastest flexio contender of a cell.
pub const BEST_MARK: &str = "*";

/// The mark of a ratio to the limit above 1, explained under the table.
pub const LIMIT_MARK: &str = "†";

/// A titled table of strings with per-column alignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// The scenario (or `limits`) the table is about.
    pub title: String,
    /// Lines printed under the title (which limit applies, legends).
    pub caption: Vec<String>,
    /// Column headers.
    pub headers: Vec<String>,
    /// Whether each column is right-aligned (numbers).
    pub right_aligned: Vec<bool>,
    /// The cells, row by row, as many as `headers`.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Fixed-width text: the title, the caption, headers, a rule, the rows.
    pub fn to_text(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|column| {
                std::iter::once(&self.headers[column])
                    .chain(self.rows.iter().map(|row| &row[column]))
                    .map(|text| text.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut line = String::new();
            for (column, text) in cells.iter().enumerate() {
                if column > 0 {
                    line.push_str("  ");
                }
                let pad = " ".repeat(widths[column] - text.chars().count());
                if self.right_aligned[column] {
                    line.push_str(&pad);
                    line.push_str(text);
                } else {
                    line.push_str(text);
                    line.push_str(&pad);
                }
            }
            line.truncate(line.trim_end().len());
            line.push('\n');
            line
        };
        let mut out = format!("== {} ==\n", self.title);
        for caption in &self.caption {
            out.push_str(caption);
            out.push('\n');
        }
        out.push_str(&line(&self.headers));
        let rule_width = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
        out.push_str(&"-".repeat(rule_width));
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }

    /// A GitHub-flavoured Markdown table under a `##` heading.
    pub fn to_markdown(&self) -> String {
        // `|` would end a cell; `*` could start a list or emphasis.
        let escape = |text: &str| text.replace('|', "\\|").replace('*', "\\*");
        let mut out = format!("## {}\n\n", self.title);
        for caption in &self.caption {
            out.push_str(&escape(caption));
            out.push_str("  \n");
        }
        if !self.caption.is_empty() {
            out.push('\n');
        }
        let row = |cells: &[String]| {
            let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
            format!("| {} |\n", cells.join(" | "))
        };
        out.push_str(&row(&self.headers));
        let rule: Vec<String> = self
            .right_aligned
            .iter()
            .map(|right| if *right { "---:" } else { "---" }.to_string())
            .collect();
        out.push_str(&format!("| {} |\n", rule.join(" | ")));
        for cells in &self.rows {
            out.push_str(&row(cells));
        }
        out
    }
}

/// The terminal output of a bench run: one table per scenario, the limits,
/// the missing peers and the notes.
pub fn render(results: &Results, summaries: &[Summary]) -> String {
    let mut out = String::new();
    for table in tables(summaries) {
        out.push_str(&table.to_text());
        out.push('\n');
    }
    if summaries.is_empty() {
        out.push_str("no counted runs\n\n");
    }
    out.push_str(&missing_and_notes(results, "", "  "));
    out.push_str("== verdicts ==\n");
    out.push_str(&provenance_line(results));
    out.push('\n');
    for line in verdict_lines(summaries) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
    out
}

/// Where the run came from, in one line: version, commit, start, what
/// `auto` consulted.
pub fn provenance_line(results: &Results) -> String {
    let p = &results.provenance;
    if p.flexio_version.is_empty() {
        return "provenance: not recorded (results of an older flexio)".to_string();
    }
    format!(
        "flexio {} (commit {}), started {}; auto consulted {}",
        p.flexio_version,
        p.git_commit,
        p.started_at,
        match &p.auto_profile {
            Some(path) => format!("the tuned profile {path}"),
            None => "no tuned profile (the built-in table)".to_string(),
        }
    )
}

/// The verdicts of a run, one line each: `flexio copy` as a process
/// against the fastest peer per cell and overall, how many results went
/// past their limit, and `auto` against the best fixed mechanism (engine,
/// in-process).
pub fn verdict_lines(summaries: &[Summary]) -> Vec<String> {
    let mut lines = Vec::new();
    let verdicts = stats::peer_verdicts(summaries);
    if verdicts.is_empty() {
        lines.push(
            "flexio copy as a process ran beside no peer: no comparison with the standard tools"
                .to_string(),
        );
    } else {
        let mut ratios: Vec<f64> = verdicts.iter().map(|v| v.ratio).collect();
        let faster = ratios.iter().filter(|r| **r >= 1.0).count();
        // The median cell, not a mean one noisy cell can move: each cell's
        // ratio is listed under it.
        lines.push(format!(
            "flexio copy as a process against the fastest peer (timed alike, median of \
             per-round ratios): median cell {:.2}× over {} cells (each below), at least as fast \
             in {faster}, slower in {}",
            stats::median(&mut ratios),
            verdicts.len(),
            verdicts.len() - faster
        ));
        lines.extend(verdicts.iter().map(|v| format!("  {}", v.line())));
    }
    let past: Vec<&Summary> = summaries
        .iter()
        .filter(|s| s.limit_note.is_some())
        .collect();
    if past.is_empty() {
        lines.push("no result went past the physical limit of its cell".to_string());
    } else {
        let unexplained = past
            .iter()
            .filter(|s| {
                s.limit_note
                    .as_deref()
                    .is_some_and(|n| n.contains("not explained"))
            })
            .count();
        lines.push(format!(
            "{} results above the limit of their cell, each explained under its table \
             ({LIMIT_MARK}){}",
            past.len(),
            if unexplained > 0 {
                format!("; {unexplained} not explained")
            } else {
                String::new()
            }
        ));
    }
    if let Some(overall) = stats::auto_verdicts(summaries)
        .into_iter()
        .find(|v| v.scope == "overall")
    {
        lines.push(format!(
            "auto against the best fixed mechanism (engine, in-process): median cell {:.2}× \
             over {} cells (each in the auto table), lowest {:.2}× ({})",
            overall.median_to_best_fixed,
            overall.cells,
            overall.worst.1,
            crate::plan::label(&overall.worst.0)
        ));
    }
    lines
}

/// The few lines a bench run prints first (`flexio bench` without `-v`
/// prints nothing else): how `flexio copy` fared against the fastest peer
/// (median cell, best and worst cell), `auto` against the best fixed
/// mechanism, results past a limit, the missing peers. Every cell's line
/// and the tables are in `report.md`.
pub fn short_verdict(results: &Results, summaries: &[Summary]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut verdicts = stats::peer_verdicts(summaries);
    if verdicts.is_empty() {
        lines.push("flexio copy ran beside no peer: no comparison with the standard tools".into());
    } else {
        let mut ratios: Vec<f64> = verdicts.iter().map(|v| v.ratio).collect();
        let faster = ratios.iter().filter(|r| **r >= 1.0).count();
        lines.push(format!(
            "flexio copy against the fastest peer: {:.2}× in the median cell (above 1: flexio \
             faster); at least as fast in {faster} of {} cells",
            stats::median(&mut ratios),
            verdicts.len()
        ));
        verdicts.sort_by(|a, b| a.ratio.total_cmp(&b.ratio));
        let describe = |v: &stats::PeerVerdict| {
            format!("{} {:.2}× {}", crate::plan::label(&v.cell), v.ratio, v.peer)
        };
        if let (Some(worst), Some(best)) = (verdicts.first(), verdicts.last()) {
            lines.push(format!(
                "  best: {}; worst: {}",
                describe(best),
                describe(worst)
            ));
        }
    }
    if let Some(overall) = stats::auto_verdicts(summaries)
        .into_iter()
        .find(|v| v.scope == "overall")
    {
        lines.push(format!(
            "auto against the best fixed mechanism: {:.2}× in the median cell, lowest {:.2}× ({})",
            overall.median_to_best_fixed,
            overall.worst.1,
            crate::plan::label(&overall.worst.0)
        ));
    }
    let past = summaries.iter().filter(|s| s.limit_note.is_some()).count();
    if past > 0 {
        lines.push(format!(
            "{past} results above their cell's physical limit, each explained in the report"
        ));
    }
    if !results.missing_peers.is_empty() {
        lines.push(format!(
            "missing peers (not run): {}",
            results.missing_peers.join(", ")
        ));
    }
    lines
}

/// The missing peers and the notes of a run as Markdown sections.
pub fn notes_markdown(results: &Results) -> String {
    missing_and_notes(results, "## ", "- ")
}

/// The same as [`render`] in Markdown, for `report.md` (no charts).
pub fn render_markdown(results: &Results, summaries: &[Summary]) -> String {
    let mut out = String::new();
    for table in tables(summaries) {
        out.push_str(&table.to_markdown());
        out.push('\n');
    }
    out.push_str(&notes_markdown(results));
    out
}

/// One table per scenario in the order of `summaries`, the limits last.
pub fn tables(summaries: &[Summary]) -> Vec<Table> {
    let mut tables: Vec<Table> = scenarios(summaries)
        .into_iter()
        .filter(|&scenario| scenario != Scenario::Limits)
        .map(|scenario| scenario_table(summaries, scenario))
        .collect();
    if let Some(auto) = auto_table(summaries) {
        tables.push(auto);
    }
    if summaries
        .iter()
        .any(|s| s.cell.scenario == Scenario::Limits)
    {
        tables.push(limits_table(summaries));
    }
    tables
}

/// `auto` against the fastest fixed flexio mechanism of each cell (and,
/// with a profile, against `auto` without it), with a verdict per scenario
/// and overall in the caption. `None` when no `auto` ran beside fixed
/// mechanisms.
pub fn auto_table(summaries: &[Summary]) -> Option<Table> {
    let verdicts = stats::auto_verdicts(summaries);
    if verdicts.is_empty() {
        return None;
    }
    let twin_ran = summaries
        .iter()
        .any(|s| s.contender.is_auto() && !s.contender.is_profile_auto());
    let mut headers = vec![
        "cell",
        "auto ran",
        "best fixed",
        "× best fixed",
        "rounds ranged",
    ];
    if twin_ran {
        headers.extend(["built-in ran", "built-in × best fixed", "× built-in"]);
    }
    let ran = |s: &Summary| s.mechanism_used.clone().unwrap_or_else(|| "-".into());
    let rows = summaries
        .iter()
        .filter(|s| s.contender.is_profile_auto() && s.ratio_to_best_fixed.is_some())
        .map(|auto| {
            let best = stats::best_fixed_flexio(summaries, &auto.cell);
            let contenders: Vec<&Contender> = summaries
                .iter()
                .filter(|s| s.cell == auto.cell)
                .map(|s| &s.contender)
                .collect();
            let mut row = vec![
                crate::plan::label(&auto.cell),
                ran(auto),
                best.map_or_else(
                    || "-".into(),
                    |b| label_among(&b.contender, &contenders).replacen("flexio ", "", 1),
                ),
                ratio(auto.ratio_to_best_fixed),
                auto.best_fixed_round_range
                    .map_or_else(|| "-".into(), |(low, high)| format!("{low:.2}–{high:.2}")),
            ];
            if twin_ran {
                let twin = summaries.iter().find(|s| {
                    s.cell == auto.cell && s.contender.is_auto() && !s.contender.is_profile_auto()
                });
                row.push(twin.map_or_else(|| "-".into(), ran));
                row.push(ratio(twin.and_then(|t| t.ratio_to_best_fixed)));
                row.push(ratio(auto.ratio_to_builtin));
            }
            row
        })
        .collect();
    let mut caption = vec![
        "× best fixed: the median over rounds of auto's throughput over the best fixed \
         mechanism's in the same round; rounds ranged: the lowest and highest of those ratios"
            .to_string(),
    ];
    caption.extend(verdicts.iter().map(|v| {
        let mut line = format!(
            "{}: auto × best fixed median {:.2}× (geometric mean {:.2}×) over {} cells, \
             lowest {:.2}× ({})",
            v.scope,
            v.median_to_best_fixed,
            v.geomean_to_best_fixed,
            v.cells,
            v.worst.1,
            crate::plan::label(&v.worst.0)
        );
        if let Some(builtin) = v.builtin_median_to_best_fixed {
            line += &format!("; built-in × best fixed median {builtin:.2}×");
        }
        if let Some(to_builtin) = v.median_to_builtin {
            line += &format!("; auto × built-in median {to_builtin:.2}×");
        }
        if let Some(to_builtin) = v.geomean_to_builtin {
            line += &format!(" (geometric mean {to_builtin:.2}×)");
        }
        line
    }));
    Some(Table {
        title: "auto".to_string(),
        caption,
        right_aligned: headers
            .iter()
            .map(|h| h.starts_with('×') || h.contains(" × ") || h.starts_with("rounds"))
            .collect(),
        headers: headers.iter().map(|h| h.to_string()).collect(),
        rows,
    })
}

/// The scenarios of `summaries` in their order, each once.
pub fn scenarios(summaries: &[Summary]) -> Vec<Scenario> {
    let mut seen: Vec<Scenario> = Vec::new();
    for summary in summaries {
        if !seen.contains(&summary.cell.scenario) {
            seen.push(summary.cell.scenario);
        }
    }
    seen
}

/// The short table of physical limits.
pub fn limits_table(summaries: &[Summary]) -> Table {
    let headers = ["limit", "size", "runs", "median", "min–max"];
    let rows = summaries
        .iter()
        .filter(|s| s.cell.scenario == Scenario::Limits)
        .map(|summary| {
            let name = match &summary.contender {
                Contender::Limit { name } => name.clone(),
                other => other.label(),
            };
            vec![
                name,
                short_size(summary.cell.size),
                summary.runs.to_string(),
                flexio::format_rate(summary.median_bps),
                rate_range(summary.min_bps, summary.max_bps),
            ]
        })
        .collect();
    Table {
        title: Scenario::Limits.name().to_string(),
        caption: vec![
            "physical limits of this machine, measured in the same run".to_string(),
            "disk-direct-read/-write send 1 MiB O_DIRECT requests, 16 in flight; the kernel's \
             readahead and writeback send up to the device's largest request, so a buffered \
             way can beat them (disk-write-fsync past disk-direct-write): disk-read and \
             disk-write, the faster of both ways, are the limits cells are held against"
                .to_string(),
        ],
        headers: headers.iter().map(|h| h.to_string()).collect(),
        right_aligned: vec![false, true, true, true, true],
        rows,
    }
}

fn missing_and_notes(results: &Results, heading: &str, bullet: &str) -> String {
    let mut out = String::new();
    if !results.missing_peers.is_empty() {
        out.push_str(&format!("{heading}missing peers (not installed)\n"));
        if !heading.is_empty() {
            out.push('\n');
        }
        for peer in &results.missing_peers {
            out.push_str(&format!("{bullet}{peer}\n"));
        }
        out.push('\n');
    }
    if !results.notes.is_empty() {
        out.push_str(&format!("{heading}notes\n"));
        if !heading.is_empty() {
            out.push('\n');
        }
        for note in &results.notes {
            out.push_str(&format!("{bullet}{note}\n"));
        }
        out.push('\n');
    }
    out
}
