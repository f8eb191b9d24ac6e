//! One way to run a product scenario of `flexio bench` (anything behind
//! [`flexio_bench::Scenario`]): run it, remove its work directory, print
//! its table, and write `NAME.json`, `NAME.md` and its charts into the
//! output directory.

use std::path::{Path, PathBuf};

use flexio_bench::Scenario;

use crate::error::{Error, Result};
use crate::output::print_stdout;

/// Runs `S` with `options`, removes `work` whether it ran or not, then
/// prints its table and writes `S::NAME.json`, `S::NAME.md` and its charts
/// into `out`, each said on stderr. `name` is the scenario as
/// `--scenario` took it.
///
/// # Errors
/// [`Error::Bench`] when the scenario fails or a chart cannot be written;
/// [`Error::Io`] when `out` or a file in it cannot be written.
pub(super) fn run<S: Scenario>(
    name: &'static str,
    options: &S::Options,
    work: &Path,
    out: &Path,
) -> Result<()> {
    let ran = S::run(options);
    let _ = std::fs::remove_dir_all(work);
    let bench = |source| Error::Bench {
        scenario: name,
        source,
    };
    let results = ran.map_err(bench)?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    std::fs::create_dir_all(out).map_err(|e| Error::io("mkdir", out, e))?;
    let report = S::report(options, &results, out, &command).map_err(bench)?;
    print_stdout(&report.table);
    let document = S::document(options, &results, &command).map_err(bench)?;
    let json_path = out.join(format!("{}.json", S::NAME));
    let json = serde_json::to_vec_pretty(&document)
        .map_err(|e| Error::io("write", &json_path, e.into()))?;
    let markdown = format!(
        "# flexio bench --scenario {name}\n\n`{command}`\n\n```text\n{}```\n",
        report.table
    );
    let written = [
        write(json_path, &json)?,
        write(out.join(format!("{}.md", S::NAME)), markdown.as_bytes())?,
    ];
    for path in written.iter().chain(&report.charts) {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// Writes `bytes` to `path` (replacing a regular file, refusing anything
/// else there).
fn write(path: PathBuf, bytes: &[u8]) -> Result<PathBuf> {
    flexio::write_file_replacing_regular(&path, bytes).map_err(|e| Error::io("write", &path, e))?;
    Ok(path)
}
