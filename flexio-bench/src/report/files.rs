//! Writing the bench's own files (results, reports, charts).

use std::io;
use std::path::Path;

/// Writes one output file, replacing only a regular file
/// ([`flexio::write_file_replacing_regular`]: a `results.json` that is a
/// device or FIFO is refused and left alone); errors name the file.
///
/// # Errors
/// The file cannot be written, or is not a regular file.
///
/// # Examples
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("report.md");
/// flexio_bench::files::write_replacing(&path, b"# report").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"# report");
/// ```
pub fn write_replacing(path: &Path, bytes: &[u8]) -> io::Result<()> {
    flexio::write_file_replacing_regular(path, bytes)
        .map_err(|error| io::Error::new(error.kind(), format!("{}: {error}", path.display())))
}
