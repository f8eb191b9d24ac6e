//! Checking a fetched file against the server's `?manifest`: the request
//! goes out first, so the server hashes its copy while this side hashes
//! what arrived, on every core.

use super::connection::{Connection, Response, Url};
use super::GetOptions;
use crate::error::{Error, Result};
use crate::manifest::chunk_hashes_parallel;

/// Checks the file against the server's `?manifest` when the server is
/// flexio; `Ok(false)` when there is none to check against. `early` holds
/// the chunk hashes taken as the pieces arrived, when every chunk has one;
/// otherwise the file is read and hashed here.
#[allow(clippy::too_many_arguments)]
pub(super) fn verify(
    url: &Url,
    connection: Option<Connection>,
    first: &Response,
    file: std::os::fd::BorrowedFd<'_>,
    label: &str,
    total: u64,
    options: &GetOptions,
    early: Option<Vec<String>>,
) -> Result<bool> {
    if first.header("server") != Some("flexio") || url.target.contains('?') {
        return Ok(false);
    }
    let mut connection = match connection {
        Some(open) => open,
        None => Connection::open(url, options.timeout, &options.tls)?,
    };
    let target = format!("{}?manifest", url.target);
    let peer = url.with_target(target.clone()).to_string();
    connection.send_get(&target, "")?;
    // The server hashes its copy while this side hashes what arrived.
    let hashes = match early {
        Some(hashes) => hashes,
        None => {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            chunk_hashes_parallel(file, total, threads)
                .map_err(|e| Error::io("read", label, None, e))?
        }
    };
    let manifest = connection.read_manifest(&peer)?.needed(&peer)?;
    let [entry] = manifest.entries.as_slice() else {
        return Err(Error::protocol(
            peer,
            "a file's manifest must hold one entry",
        ));
    };
    if manifest.chunk_size != crate::manifest::CHUNK_SIZE || entry.size != total {
        return Err(Error::protocol(
            peer,
            format!(
                "the manifest says {} bytes in chunks of {}, the body was {total} bytes",
                entry.size, manifest.chunk_size
            ),
        ));
    }
    if let Some(chunk) =
        (0..hashes.len().max(entry.blake3.len())).find(|&i| hashes.get(i) != entry.blake3.get(i))
    {
        return Err(Error::VerifyMismatch {
            path: label.to_string(),
            chunk,
            offset: chunk as u64 * manifest.chunk_size,
        });
    }
    Ok(true)
}
