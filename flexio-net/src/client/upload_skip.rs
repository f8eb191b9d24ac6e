//! Whether a tree `put` can leave a file out: `flexio serve` already
//! holds it with the source's size and mtime (rsync's quick check, to the
//! nanosecond). Asked with a HEAD, whose ETag `flexio serve` makes of the
//! file's inode, size and mtime (`"INO-SIZE-SECONDS.NANOSECONDS"`, hex);
//! a server whose ETag says none of that never matches, and its files
//! are sent.

use super::connection::{Connection, Url};
use crate::error::Result;

/// The size and mtime (seconds, nanoseconds) an ETag of `flexio serve`
/// gives; `None` for any other ETag.
pub(super) fn served_version(etag: &str) -> Option<(u64, i64, u64)> {
    let inner = etag.strip_prefix('"')?.strip_suffix('"')?;
    let mut fields = inner.split('-');
    let (_inode, size, time) = (fields.next()?, fields.next()?, fields.next()?);
    if fields.next().is_some() {
        return None;
    }
    let (seconds, nanoseconds) = time.split_once('.')?;
    let hex = |text: &str| {
        (!text.is_empty() && text.len() <= 16)
            .then(|| u64::from_str_radix(text, 16).ok())
            .flatten()
    };
    // The seconds are written as their two's complement when negative.
    Some((hex(size)?, hex(seconds)? as i64, hex(nanoseconds)?))
}

/// Whether the server at `target` holds a file with `stat`'s size and
/// mtime, asked on `connection` (opened when `None`; left `None` when the
/// server closes it).
///
/// # Errors
/// Those of opening the connection, sending the HEAD and reading its
/// answer.
pub(super) fn held_already(
    connection: &mut Option<Connection>,
    target: &Url,
    stat: &rustix::fs::Stat,
    (timeout, tls): (std::time::Duration, &crate::tls::client::TlsClient),
) -> Result<bool> {
    let open = match connection {
        Some(open) => open,
        None => connection.insert(Connection::open(target, timeout, tls)?),
    };
    open.send_request("HEAD", &target.target, "")?;
    let response = open.read_response()?;
    if response.closes() {
        *connection = None;
    }
    let served = response.header("etag").and_then(served_version);
    Ok(response.status == 200
        && served == Some((stat.st_size as u64, stat.st_mtime, stat.st_mtime_nsec)))
}

#[cfg(test)]
mod tests {
    use super::served_version;

    #[test]
    fn flexio_etags_give_size_and_mtime_and_others_nothing() {
        assert_eq!(
            served_version("\"1a-6-5e0be100.7b\""),
            Some((6, 1_577_836_800, 123))
        );
        assert_eq!(
            served_version("\"1-0-fffffffffffffffb.0\""),
            Some((0, -5, 0))
        );
        for other in [
            "W/\"1-2-3.4\"",
            "\"0-6614ee4d77452\"",
            "\"1-2-3\"",
            "1-2-3.4",
            "\"1-2-3.4-5\"",
            "",
        ] {
            assert_eq!(served_version(other), None, "{other}");
        }
    }
}
