//! File bodies through the block cache (`flexio serve --cache`): the range
//! is read through the server's [`FileCache`] over `O_DIRECT` in pieces,
//! each copied out of the cache's blocks into the worker's buffer and
//! written to the socket — one copy more than sendfile, in exchange for a
//! cache whose policy (S3-FIFO by default) keeps the blocks many clients
//! read while one client scans a large file, which the page cache under
//! the same memory would not.

use std::cell::RefCell;
use std::io::Write;
use std::net::TcpStream;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};

use flexio_cache::FileCache;

/// Bytes read through the cache and written per step.
const PIECE: usize = 256 << 10;

thread_local! {
    /// Each worker's piece buffer, made once.
    static PIECE_BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; PIECE]);
}

/// Whether a file that could not go through the cache was logged already
/// (one line, not one per request).
static FALLBACK_LOGGED: AtomicBool = AtomicBool::new(false);

/// Sends `length` bytes of `file` from `first` through `cache` to
/// `socket`. `Ok(false)` when the file cannot go through the cache (its
/// file system refuses `O_DIRECT`): nothing was sent, and the caller sends
/// it the usual way.
///
/// # Errors
/// Reading through the cache or writing to the client fails; the
/// response is then cut short.
pub(crate) fn send_range(
    cache: &FileCache,
    file: &OwnedFd,
    label: &str,
    mut socket: &TcpStream,
    first: u64,
    length: u64,
) -> std::io::Result<bool> {
    let cached = match cache.open(file, label) {
        Ok(cached) => cached,
        Err(error) => {
            if !FALLBACK_LOGGED.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "flexio serve: {label} cannot go through the cache ({error}); sent with the mechanism instead (logged once)"
                );
            }
            return Ok(false);
        }
    };
    PIECE_BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        let (mut at, end) = (first, first + length);
        while at < end {
            let want = (end - at).min(PIECE as u64) as usize;
            let got = cached
                .read_at(&mut buffer[..want], at)
                .map_err(std::io::Error::other)?;
            if got == 0 {
                // The file shrank after its head was sent: the response
                // cannot be completed.
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("{label} ended at byte {at}, before the {end} announced"),
                ));
            }
            // The socket's write timeout (the send timeout) bounds each
            // write that makes no progress.
            socket.write_all(&buffer[..got])?;
            at += got as u64;
        }
        Ok(true)
    })
}
