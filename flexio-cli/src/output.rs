//! What `flexio copy` says when it succeeds, with cp's and curl's habits:
//! nothing when stdout is not a terminal (a script's copy is silent), one
//! summary line on a terminal, `-v` lists what was copied as `cp -v`
//! does, `--report` prints the full report and `--json` the JSON one.
//! Only the JSON report and `-v`'s list go to stdout, and neither when
//! the data itself goes there; everything else goes to stderr.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use flexio::format_bytes;

/// How a successful copy reports, as the flags and stdout choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Telling {
    /// `--quiet`, or stdout is not a terminal and nothing was asked for.
    Nothing,
    /// On a terminal: one line.
    Summary,
    /// `--report` (`--stats`): today's full report, on stderr.
    Report,
    /// `--json`: the JSON report.
    Json,
}

impl Telling {
    /// The choice for `--quiet`, `--json` and `--report` when stdout is or
    /// is not a terminal.
    pub(crate) fn choose(quiet: bool, json: bool, report: bool, stdout_terminal: bool) -> Self {
        match (quiet, json, report, stdout_terminal) {
            (true, ..) => Telling::Nothing,
            (false, true, ..) => Telling::Json,
            (false, false, true, _) => Telling::Report,
            (false, false, false, true) => Telling::Summary,
            (false, false, false, false) => Telling::Nothing,
        }
    }

    /// Whether what is told carries CPU, fault and cache counters (the
    /// summary line is bytes, time and mechanism): the flow reads them only
    /// then.
    pub(crate) fn shows_counters(self) -> bool {
        matches!(self, Telling::Report | Telling::Json)
    }

    /// [`Telling::choose`] for this process's stdout.
    pub(crate) fn for_this_process(quiet: bool, json: bool, report: bool) -> Self {
        Self::choose(quiet, json, report, std::io::stdout().is_terminal())
    }
}

/// Writes `text` to stdout, or to stderr when the data went to stdout.
pub(crate) fn print_out(text: &str, data_on_stdout: bool) {
    if data_on_stdout {
        let _ = std::io::stderr().write_all(text.as_bytes());
    } else {
        crate::print_stdout(text);
    }
}

/// Writes `text` to stderr.
pub(crate) fn print_err(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// `'SRC' -> 'DST'`, as `cp -v` lists a copy.
pub(crate) fn listed(source: &str, sink: &str) -> String {
    format!("'{source}' -> '{sink}'\n")
}

/// A count with its noun, singular for one: `1 file`, `3 files`.
pub(crate) fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// A size for people: `6 bytes`, `1 byte`, then binary units (`4.00 KiB`).
pub(crate) fn size(bytes: u64) -> String {
    if bytes < 1024 {
        count(bytes, "byte", "bytes")
    } else {
        format_bytes(bytes)
    }
}

/// A time for people: `850 µs`, `12 ms`, `1.25 s`, `2 min 5 s`.
pub(crate) fn elapsed(time: Duration) -> String {
    let seconds = time.as_secs_f64();
    if seconds < 1e-3 {
        format!("{} µs", time.as_micros())
    } else if seconds < 1.0 {
        format!("{} ms", time.as_millis())
    } else if seconds < 120.0 {
        format!("{seconds:.2} s")
    } else {
        format!("{} min {} s", time.as_secs() / 60, time.as_secs() % 60)
    }
}

/// The rate, when the copy was long enough for one to mean something
/// (a millisecond copy's "rate" is mostly process start-up).
pub(crate) fn rate(bytes: u64, time: Duration) -> Option<String> {
    (bytes >= 1 << 20 && time >= Duration::from_millis(10))
        .then(|| flexio::format_rate(bytes as f64 / time.as_secs_f64()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_unless_asked_or_on_a_terminal() {
        assert_eq!(
            Telling::choose(false, false, false, false),
            Telling::Nothing
        );
        assert_eq!(Telling::choose(false, false, false, true), Telling::Summary);
        assert_eq!(Telling::choose(false, false, true, false), Telling::Report);
        assert_eq!(Telling::choose(false, true, true, false), Telling::Json);
        assert_eq!(Telling::choose(true, true, true, true), Telling::Nothing);
    }

    #[test]
    fn units_and_plurals_fit_the_size() {
        assert_eq!(size(1), "1 byte");
        assert_eq!(size(6), "6 bytes");
        assert_eq!(size(4096), "4.00 KiB");
        assert_eq!(count(1, "file", "files"), "1 file");
        assert_eq!(count(0, "file", "files"), "0 files");
        assert_eq!(elapsed(Duration::from_micros(850)), "850 µs");
        assert_eq!(elapsed(Duration::from_millis(12)), "12 ms");
        assert_eq!(elapsed(Duration::from_millis(1250)), "1.25 s");
        assert_eq!(elapsed(Duration::from_secs(125)), "2 min 5 s");
        assert_eq!(rate(6, Duration::from_secs(1)), None);
        assert_eq!(
            rate(2 << 20, Duration::from_secs(1)).as_deref(),
            Some("2.00 MiB/s")
        );
    }
}
