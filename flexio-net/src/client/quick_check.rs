//! rsync's quick check against an HTTP server: a file already at the
//! destination is the server's when it has the server's size and
//! Last-Modified, so a rerun fetches nothing for it. The size comes from
//! the HEAD's Content-Length; where the HEAD has none — Apache's answer
//! for an empty file leaves it out — one ranged GET of the first byte
//! asks again, and its Content-Range (or, where the range is ignored, its
//! Content-Length) gives the size.

use super::connection::{Connection, Response};
use super::listing::unix_seconds;
use crate::error::Result;
use crate::ranges::parse_content_range;
use crate::tls::client::TlsClient;

/// The most body bytes read off an answer to the size probe to keep its
/// connection; a longer body closes the connection instead.
const MAX_SKIPPED_BODY: u64 = 64 << 10;

/// Whether the server's file at `target` has `size` and `mtime` (the
/// HEAD's Last-Modified exactly, and its size as [`served_size`] finds
/// it). A server that does not answer HEAD with `200` is taken as
/// different. `connection` is ready for the next request afterwards:
/// opened again (through `tls`) where the server closed it.
///
/// # Errors
/// Those of sending the requests, reading the answers and opening a
/// connection again.
pub(super) fn same_as_served(
    connection: &mut Connection,
    target: &str,
    peer: &str,
    (size, mtime): (u64, i64),
    tls: &TlsClient,
) -> Result<bool> {
    connection.send_request("HEAD", target, "")?;
    let response = connection.read_response()?;
    let closes = response.closes();
    let same_time = response.header("last-modified").and_then(unix_seconds) == Some(mtime);
    let head_size = response.content_length(peer)?;
    if closes {
        reopen(connection, tls)?;
    }
    if response.status != 200 || !same_time {
        return Ok(false);
    }
    let served = match head_size {
        Some(length) => Some(length),
        None => served_size(connection, target, peer, tls)?,
    };
    Ok(served == Some(size))
}

/// The size of the file at `target` from a GET of its first byte: the
/// total of a `206` or `416` answer's Content-Range, or the Content-Length
/// of a `200` (a server that ignores the range; an empty file on Apache);
/// `None` for any other answer. The body is read off when short, else the
/// connection is opened again.
///
/// # Errors
/// Those of sending the request, reading the answer and opening a
/// connection again.
fn served_size(
    connection: &mut Connection,
    target: &str,
    peer: &str,
    tls: &TlsClient,
) -> Result<Option<u64>> {
    connection.send_get(target, "Range: bytes=0-0\r\n")?;
    let response = connection.read_response()?;
    let size = match response.status {
        206 | 416 => response
            .header("content-range")
            .and_then(parse_content_range)
            .and_then(|(_, total)| total),
        200 => response.content_length(peer)?,
        _ => None,
    };
    if !skip_body(connection, &response, peer)? {
        reopen(connection, tls)?;
    }
    Ok(size)
}

/// Reads off `response`'s body when it is short and framed by its
/// Content-Length and the connection stays open; whether it did.
fn skip_body(connection: &mut Connection, response: &Response, peer: &str) -> Result<bool> {
    if response.closes() || response.header("transfer-encoding").is_some() {
        return Ok(false);
    }
    match response.content_length(peer)? {
        Some(length) if length <= MAX_SKIPPED_BODY => {
            connection.read_small_body(length)?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// A new connection to `connection`'s server in its place.
fn reopen(connection: &mut Connection, tls: &TlsClient) -> Result<()> {
    *connection = Connection::open(&connection.url, connection.timeout, tls)?;
    Ok(())
}
