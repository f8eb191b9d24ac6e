//! What a successful copy says: `cp -v`'s listing, the summary line of one
//! flow, the summary line of a tree copy.

use std::time::Duration;

use crate::output::{count, elapsed, rate, size};

/// `'SRC' -> 'DST'`, as `cp -v` lists a copy.
pub(crate) fn listed(source: &str, sink: &str) -> String {
    format!("'{source}' -> '{sink}'\n")
}

/// The summary line of one flow: `a -> b: 6 bytes in 2 ms (sendfile)`.
pub(crate) fn flow_summary(report: &flexio::Report) -> String {
    let time = Duration::from_nanos(report.measured.wall_ns);
    let bytes = report.measured.bytes;
    let mut line = format!(
        "{} -> {}: {} in {}",
        report.source,
        report.sink,
        size(bytes),
        elapsed(time)
    );
    if let Some(rate) = rate(bytes, time) {
        line += &format!(", {rate}");
    }
    line += &format!(" ({}", report.mechanism_used);
    if !report.fallbacks.is_empty() {
        line += &format!(
            ", after {}",
            count(report.fallbacks.len() as u64, "fallback", "fallbacks")
        );
    }
    line + ")\n"
}

/// The summary line of a tree copy: `a -> b: 3 files, 1 directory, 12.00
/// KiB in 4 ms`.
pub(crate) fn tree_summary(
    sources: &str,
    destination: &str,
    report: &flexio::tree::TreeReport,
) -> String {
    let time = Duration::from_nanos(report.wall_ns);
    let mut parts = vec![count(report.files, "file", "files")];
    if report.directories > 0 {
        parts.push(count(report.directories, "directory", "directories"));
    }
    if report.symlinks > 0 {
        parts.push(count(report.symlinks, "symlink", "symlinks"));
    }
    if report.skipped > 0 {
        parts.push(format!("{} skipped", report.skipped));
    }
    let mut line = format!(
        "{sources} -> {destination}: {}, {} in {}",
        parts.join(", "),
        size(report.bytes),
        elapsed(time)
    );
    if let Some(rate) = rate(report.bytes, time) {
        line += &format!(", {rate}");
    }
    line + "\n"
}
