//! File bodies through the block cache (`flexio serve --cache`): the range
//! is read through the server's [`FileCache`] over `O_DIRECT` in pieces,
//! each copied out of the cache's blocks into the body's buffer and
//! sent from there — one copy more than sendfile, in exchange for a
//! cache whose policy (an adaptive S3-FIFO by default) keeps the blocks many clients
//! read while one client scans a large file, which the page cache under
//! the same memory would not.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};

use flexio_cache::FileCache;

/// Bytes read through the cache per step.
pub(crate) const PIECE: usize = 256 << 10;

/// Whether a file that could not go through the cache was logged already
/// (one line, not one per request).
static FALLBACK_LOGGED: AtomicBool = AtomicBool::new(false);

/// Reads bytes of `file` from `first` through `cache` into `buffer` (as
/// many as it holds); returns how many. `Ok(None)` when the file cannot go
/// through the cache (its file system refuses `O_DIRECT`): the caller
/// sends it the usual way.
///
/// # Errors
/// Reading through the cache fails, or the file ends before `first`
/// (it shrank after its head was sent): the response is cut short.
pub(crate) fn read_range(
    cache: &FileCache,
    file: &OwnedFd,
    label: &str,
    first: u64,
    buffer: &mut [u8],
) -> std::io::Result<Option<usize>> {
    let cached = match cache.open(file, label) {
        Ok(cached) => cached,
        Err(error) => {
            if !FALLBACK_LOGGED.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "flexio serve: {label} cannot go through the cache ({error}); sent with the mechanism instead (logged once)"
                );
            }
            return Ok(None);
        }
    };
    let got = cached
        .read_at(buffer, first)
        .map_err(std::io::Error::other)?;
    if got == 0 && !buffer.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("{label} ended at byte {first}, before the end announced"),
        ));
    }
    Ok(Some(got))
}
