//! What the commands print, and how: stdout that a closed reader does not
//! turn into a panic, the one JSON document shape of every `--json`, sizes
//! and times for people, and how a successful command reports with cp's
//! and curl's habits: nothing when stdout is not a terminal (a script's
//! copy is silent), one summary line on a terminal, the full report or
//! the JSON one when asked. Only JSON reports and listings go to stdout,
//! and neither when the data itself goes there; everything else goes to
//! stderr.
//!
//! Every `--json` document carries `kind` (which result it is: `flow`,
//! `tree`, `get`, `get-mirrored`, `get-tree`, `put`, `put-tree`, `plan`,
//! `mechanisms`, `cache-sim`) and `schema_version` (the version of that
//! kind's fields), so a reader can tell a tree copy's report from a single
//! file's without guessing from its fields. Each kind's JSON Schema is
//! `docs/schemas/KIND.schema.json`.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use flexio::format_bytes;
use serde::Serialize;
use serde_json::Value;

/// Writes to stdout; a reader that went away (`flexio mechanisms | head`)
/// is not an error worth a panic.
pub(crate) fn print_stdout(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// `result` as a JSON document of `kind`, pretty-printed, with a newline.
/// A result that has no `schema_version` of its own is version 1.
pub(crate) fn document(kind: &str, result: &impl Serialize) -> String {
    let mut value = serde_json::to_value(result).expect("a report serializes");
    if let Value::Object(fields) = &mut value {
        fields.insert("kind".into(), Value::from(kind));
        fields
            .entry("schema_version")
            .or_insert_with(|| Value::from(1));
    }
    serde_json::to_string_pretty(&value).expect("a value serializes") + "\n"
}

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
        print_stdout(text);
    }
}

/// Writes `text` to stderr.
pub(crate) fn print_err(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
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
