//! The report directory of a bench run:
//!
//! - `results.json`: [`Results`] as is (schema version, machine, every raw
//!   run, warm-ups included), pretty-printed; [`read_results`] reads it back;
//! - `results.csv`: one line per raw run, every [`RunRecord`] field
//!   flattened, for spreadsheets and pandas;
//! - one SVG chart or more per scenario ([`crate::report::charts`]);
//! - `report.md`: the machine, the command, the tables, the charts, the
//!   missing peers and the notes.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::model::{CellSummary, Contender, ContenderSummary, Results, RunRecord, SCHEMA_VERSION};
use crate::report::charts;
use crate::report::files::write_replacing;
use crate::report::table;
use crate::stats;

/// File name of the raw results.
pub const RESULTS_JSON: &str = "results.json";
/// File name of the raw runs as CSV.
pub const RESULTS_CSV: &str = "results.csv";
/// File name of the Markdown report.
pub const REPORT_MD: &str = "report.md";

/// The columns of `results.csv`, in order.
pub const CSV_HEADER: [&str; 24] = [
    "scenario",
    "size",
    "chunk",
    "cache",
    "flows",
    "path",
    "contender_type",
    "contender_label",
    "contender_name",
    "contender_chunk",
    "contender_direct",
    "round",
    "counted",
    "bytes",
    "wall_ns",
    "cpu_user_ns",
    "cpu_sys_ns",
    "host_cpu_busy_ns",
    "context_switches",
    "involuntary_switches",
    "source_resident_percent",
    "mechanism_used",
    "meter_kept",
    "throughput_bytes_per_s",
];

/// Writes `results.json`, `results.csv`, the charts and `report.md` into
/// `dir` (created if missing) and returns the paths written, in that order.
///
/// # Errors
/// Creating the directory or writing a file fails.
pub fn write_all(dir: &Path, results: &Results) -> io::Result<Vec<PathBuf>> {
    fs::create_dir_all(dir)?;
    let summaries = stats::summarize(results);
    let mut written = Vec::new();

    let json_path = dir.join(RESULTS_JSON);
    let with_summary = Results {
        summary: cell_summaries(&summaries),
        ..results.clone()
    };
    let mut json = serde_json::to_string_pretty(&with_summary).map_err(io::Error::other)?;
    json.push('\n');
    write_replacing(&json_path, json.as_bytes())?;
    written.push(json_path);

    let csv_path = dir.join(RESULTS_CSV);
    write_replacing(&csv_path, csv(results).as_bytes())?;
    written.push(csv_path);

    let charts = charts::write_scenario_charts(dir, results, &summaries)?;
    let report_path = dir.join(REPORT_MD);
    write_replacing(
        &report_path,
        report(results, &summaries, &charts).as_bytes(),
    )?;
    written.extend(charts);
    written.push(report_path);
    Ok(written)
}

/// The per-cell summary of `results.json`: every contender's median, min
/// and max with its kind, and the verdict of `flexio copy` as a process
/// against the fastest peer, in the order of `summaries`.
pub fn cell_summaries(summaries: &[stats::Summary]) -> Vec<CellSummary> {
    let verdicts = stats::peer_verdicts(summaries);
    let mut cells: Vec<CellSummary> = Vec::new();
    for summary in summaries {
        let entry = ContenderSummary {
            contender: summary.contender.label(),
            kind: summary.contender.kind(),
            runs: summary.runs,
            median_bytes_per_s: summary.median_bps,
            min_bytes_per_s: summary.min_bps,
            max_bytes_per_s: summary.max_bps,
            ratio_to_best_peer: summary.ratio_to_best_peer,
            ratio_to_limit: summary.ratio_to_limit,
            limit_note: summary.limit_note.clone(),
        };
        match cells.iter_mut().find(|c| c.cell == summary.cell) {
            Some(cell) => cell.contenders.push(entry),
            None => cells.push(CellSummary {
                cell: summary.cell.clone(),
                label: crate::plan::label(&summary.cell),
                contenders: vec![entry],
                verdict: verdicts
                    .iter()
                    .find(|v| v.cell == summary.cell)
                    .map(stats::PeerVerdict::line),
            }),
        }
    }
    cells
}

/// Reads a `results.json` written by [`write_all`].
///
/// # Errors
/// The file cannot be read, is not the JSON of [`Results`]
/// ([`io::ErrorKind::InvalidData`]), or was written by a newer flexio with
/// a schema this one does not know.
pub fn read_results(path: &Path) -> io::Result<Results> {
    let text = fs::read_to_string(path)?;
    let results: Results = serde_json::from_str(&text).map_err(|error| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: not bench results: {error}", path.display()),
        )
    })?;
    if results.schema_version > SCHEMA_VERSION {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: schema_version {} is newer than this flexio knows ({SCHEMA_VERSION})",
                path.display(),
                results.schema_version
            ),
        ));
    }
    Ok(results)
}

/// `results.csv`: [`CSV_HEADER`], then one line per raw run.
pub fn csv(results: &Results) -> String {
    let mut out = CSV_HEADER.join(",");
    out.push('\n');
    for run in &results.runs {
        let fields = csv_fields(run);
        let quoted: Vec<String> = fields.iter().map(|field| csv_field(field)).collect();
        out.push_str(&quoted.join(","));
        out.push('\n');
    }
    out
}

fn csv_fields(run: &RunRecord) -> Vec<String> {
    let cell = &run.cell;
    let (kind, name, chunk, direct) = match &run.contender {
        Contender::Flexio {
            mechanism,
            chunk,
            direct,
            builtin_table,
            ..
        } => (
            "flexio",
            // The two autos of a run with a profile must not read alike.
            if *builtin_table {
                format!("{mechanism} (built-in)")
            } else {
                mechanism.to_string()
            },
            chunk.to_string(),
            direct.to_string(),
        ),
        Contender::Process {
            mechanism,
            chunk,
            direct,
            ..
        } => (
            "process",
            mechanism.to_string(),
            chunk.to_string(),
            direct.to_string(),
        ),
        Contender::Pair {
            sender,
            receiver,
            chunk,
        } => (
            "engine",
            format!("{sender}->{receiver}"),
            chunk.to_string(),
            false.to_string(),
        ),
        Contender::Peer { name } => ("peer", name.clone(), String::new(), String::new()),
        Contender::Limit { name } => ("limit", name.clone(), String::new(), String::new()),
    };
    let optional = |value: Option<f64>| value.map(|v| v.to_string()).unwrap_or_default();
    vec![
        cell.scenario.name().to_string(),
        cell.size.to_string(),
        cell.chunk.to_string(),
        table::cache_name(cell.cache).to_string(),
        cell.flows.to_string(),
        cell.path.clone(),
        kind.to_string(),
        run.contender.label(),
        name,
        chunk,
        direct,
        run.round.to_string(),
        (run.round >= 1).to_string(),
        run.measured.bytes.to_string(),
        run.measured.wall_ns.to_string(),
        run.measured.cpu_user_ns.to_string(),
        run.measured.cpu_sys_ns.to_string(),
        run.measured.host_cpu_busy_ns.to_string(),
        run.context_switches.to_string(),
        run.involuntary_switches
            .map_or(String::new(), |n| n.to_string()),
        optional(run.source_resident_percent),
        run.mechanism_used.clone().unwrap_or_default(),
        optional(run.meter_kept),
        format!("{:.0}", run.throughput()),
    ]
}

/// RFC 4180: a field with a comma, quote or line break is quoted, its
/// quotes doubled.
fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// `report.md`: the machine, the command, the method, then per scenario
/// its table and charts, the limits, the missing peers and the notes.
pub fn report(results: &Results, summaries: &[stats::Summary], charts: &[PathBuf]) -> String {
    let machine = &results.fingerprint;
    let mut out = String::from("# flexio bench\n\n## Verdicts\n\n");
    let _ = writeln!(out, "{}\n", table::provenance_line(results));
    for line in table::verdict_lines(summaries) {
        match line.strip_prefix("  ") {
            Some(cell) => {
                let _ = writeln!(out, "  - {}", cell.replace('*', "\\*"));
            }
            None => {
                let _ = writeln!(out, "- {}", line.replace('*', "\\*"));
            }
        }
    }
    out.push('\n');
    out.push_str("| machine | |\n| --- | --- |\n");
    for (what, value) in [
        ("CPU", format!("{} × {}", machine.cpus, machine.cpu_model)),
        ("memory", table::short_size(machine.memory_bytes)),
        ("kernel", machine.kernel.clone()),
        ("file system", machine.filesystem.clone()),
        ("device", machine.device.clone()),
    ] {
        let _ = writeln!(out, "| {what} | {} |", value.replace('|', "\\|"));
    }
    let _ = writeln!(out, "\n```text\n{}\n```\n", results.command);
    let rounds = results.runs.iter().map(|run| run.round).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "Method: round 0 is a warm-up and not counted; rounds 1–{rounds} run every contender \
         of a cell in turn (A B C A B C …). Kinds: *engine* rows are flexio mechanisms run \
         inside the bench process (no start-up, buffers warm from the run before), for \
         comparing mechanisms with each other; *process* rows are `flexio copy` started as a \
         process for every run, timed by the same harness as the *peers* (start-up included, \
         one copy per run); *limit* rows are physical limits. Throughput is the median with \
         min–max; costs are medians per GiB moved; × best peer is the median of the per-round \
         ratios to the fastest peer of the cell, for process and peer rows only; × limit is \
         the median divided by the median of the physical limit that bounds the cell \
         (round by round when the limit ran in the cell itself), measured in the same run, \
         and a ratio above 1 is explained under its table ({LIMIT_MARK}). Raw runs and the \
         per-cell summary: [{RESULTS_JSON}]({RESULTS_JSON}), [{RESULTS_CSV}]({RESULTS_CSV}).\n",
        LIMIT_MARK = table::LIMIT_MARK
    );

    let file_name = |path: &PathBuf| {
        path.file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    for table in table::tables(summaries) {
        out.push_str(&table.to_markdown());
        out.push('\n');
        let prefix = format!("{}-", table.title);
        for chart in charts {
            let name = file_name(chart);
            let rest = name.strip_prefix(&prefix).unwrap_or_default();
            // `file-to-file-size.svg` belongs to `file-to-file`, not to
            // `file-to-file-durable`, whose charts are `…-durable-size.svg`.
            let rest = rest
                .strip_prefix("warm-")
                .or_else(|| rest.strip_prefix("cold-"))
                .unwrap_or(rest);
            if matches!(
                rest,
                "size.svg"
                    | "chunk.svg"
                    | "scaling.svg"
                    | "contenders.svg"
                    | "kept.svg"
                    | "fairness.svg"
                    | "per-flow.svg"
                    | "cpu.svg"
            ) {
                let stem = name.trim_end_matches(".svg");
                let _ = writeln!(out, "![{stem}]({name})\n");
            }
        }
    }
    // Charts whose scenario name did not survive as a file name.
    let embedded = out.clone();
    for chart in charts {
        let name = file_name(chart);
        if !embedded.contains(&format!("]({name})")) {
            let stem = name.trim_end_matches(".svg");
            let _ = writeln!(out, "![{stem}]({name})\n");
        }
    }
    if summaries.is_empty() {
        out.push_str("No counted runs.\n\n");
    }
    out.push_str(&table::notes_markdown(results));
    out
}
