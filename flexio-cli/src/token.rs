//! The upload token of `flexio serve --token-file` and `flexio put
//! --token-file`: one file, read the same way by both ends.

use std::path::Path;

use crate::error::{Error, Result};

/// The most a token file may hold: a token is a line.
const MAX_TOKEN_FILE_BYTES: u64 = 64 << 10;

/// Reads a token file (a regular file of at most 64 KiB, so `/dev/zero` or
/// a FIFO is refused at once): its first line, trimmed.
pub(crate) fn read_token(path: &Path) -> Result<String> {
    let bytes = flexio::read_regular_file_capped(path, MAX_TOKEN_FILE_BYTES)
        .map_err(|e| Error::io("read", path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.lines().next().unwrap_or_default().trim().to_string())
}
