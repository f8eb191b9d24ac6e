//! Writing the bench's own files (results, reports, charts).

use std::io;
use std::path::Path;

/// Writes one output file, replacing only a regular file
/// ([`flexio::write_file_replacing_regular`]: a `results.json` that is a
/// device or FIFO is refused and left alone); errors name the file.
pub(crate) fn write_replacing(path: &Path, bytes: &[u8]) -> io::Result<()> {
    flexio::write_file_replacing_regular(path, bytes)
        .map_err(|error| io::Error::new(error.kind(), format!("{}: {error}", path.display())))
}
