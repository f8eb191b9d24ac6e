//! `flexio put`: one file sent as a PUT body, file→socket with sendfile,
//! to a `flexio serve --token-file`: with the token as a bearer token on
//! loopback (and through the TLS relay), as a signed request
//! ([`crate::signing`]) over any other link.

use std::os::fd::AsFd;
use std::path::Path;
use std::time::Instant;

use flexio::pace::Pacing;
use flexio::range::{Mover, RangeEnd, RangeRequest};
use flexio::{EndpointKind, MechanismName};
use serde::Serialize;

use super::connection::{Connection, Response, Url};
use crate::error::{Error, Result};

/// What an upload did.
#[derive(Clone, Debug, Serialize)]
pub struct PutReport {
    /// The URL written.
    pub url: String,
    /// Bytes sent.
    pub bytes: u64,
    /// The HTTP status (201 created, 200 replaced).
    pub status: u16,
    /// The mechanism that moved the body.
    pub mechanism: Option<String>,
    /// Wall time from connecting to the server's answer.
    pub wall_ns: u64,
}

/// Sends `source` to `url`, authorised by `token`: as a bearer token to a
/// loopback peer, else as a signed request (the token does not cross the
/// link).
///
/// # Errors
/// [`Error::Usage`] for a source that is not a regular file;
/// [`Error::Status`] when the server refuses; I/O errors as they come.
///
/// # Examples
/// ```no_run
/// let report = flexio_net::client::put(
///     std::path::Path::new("notes.txt"),
///     "http://127.0.0.1:8080/notes.txt",
///     "a-token-of-16-chars-or-more",
///     std::time::Duration::from_secs(30),
/// )?;
/// assert_eq!(report.status, 201);
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn put(
    source: &Path,
    url: &str,
    token: &str,
    timeout: std::time::Duration,
) -> Result<PutReport> {
    put_paced(source, url, token, timeout, Pacing::default())
}

/// [`put`] with the body paced: at most `pacing.rate` bytes per second,
/// `pacing.burst` bytes per call, kept by flexio's token bucket or by the
/// kernel (`pacing.by`) — see [`flexio::pace`].
///
/// # Errors
/// As [`put`].
///
/// # Examples
/// ```no_run
/// let pacing = flexio::pace::Pacing::parse(Some("10M"), None, None).unwrap();
/// flexio_net::client::put_paced(
///     std::path::Path::new("notes.txt"),
///     "http://127.0.0.1:8080/notes.txt",
///     "a-token-of-16-chars-or-more",
///     std::time::Duration::from_secs(30),
///     pacing,
/// )?;
/// # Ok::<(), flexio_net::Error>(())
/// ```
pub fn put_paced(
    source: &Path,
    url: &str,
    token: &str,
    timeout: std::time::Duration,
    pacing: Pacing,
) -> Result<PutReport> {
    let url = Url::parse(url)?;
    let label = source.display().to_string();
    let file = std::fs::File::open(source).map_err(|e| Error::io("open", &label, None, e))?;
    let stat = rustix::fs::fstat(&file).map_err(|e| Error::io("fstat", &label, None, e))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(Error::Usage(format!("{label}: not a regular file")));
    }
    let length = stat.st_size as u64;
    let started = Instant::now();
    let mut connection = Connection::open(&url, timeout)?;
    let peer = connection
        .stream
        .peer_addr()
        .map_err(|e| Error::io("getpeername", url.to_string(), None, e))?;
    // The token itself only to a loopback peer (a local server, or the
    // TLS relay); to anyone else, a signature that is good for this one
    // request.
    let authorization = if peer.ip().is_loopback() {
        format!("Bearer {token}")
    } else {
        crate::signing::sign(token, "PUT", &url.target, length)
            .map_err(|e| Error::io("getrandom", "the request's nonce", None, e))?
    };
    connection.send_request(
        "PUT",
        &url.target,
        &format!("Authorization: {authorization}\r\nContent-Length: {length}\r\n"),
    )?;
    let mut mover = Mover::new();
    let source_end = RangeEnd::with_kind(file.as_fd(), EndpointKind::File, label.clone());
    let sink_end = RangeEnd::with_kind(
        connection.stream.as_fd(),
        EndpointKind::Tcp,
        url.to_string(),
    );
    let mut request = RangeRequest::new(0, 0, Some(length)).via(MechanismName::Auto);
    request.idle_timeout = Some(timeout);
    request.pacing = pacing;
    let moved = if length > 0 {
        match mover.move_range(&source_end, &sink_end, &request, None) {
            Ok(report) => Some(report),
            // A server that refuses early (a wrong token) answers and
            // closes while the body is still going out: its answer says
            // why, the broken pipe that follows does not.
            Err(sending) => {
                return Err(match connection.read_response() {
                    Ok(response) if !matches!(response.status, 200 | 201) => {
                        refusal(&mut connection, response, &url)
                    }
                    _ => sending.into(),
                })
            }
        }
    } else {
        None
    };
    let response = connection.read_response()?;
    if !matches!(response.status, 200 | 201) {
        return Err(refusal(&mut connection, response, &url));
    }
    Ok(PutReport {
        url: url.to_string(),
        bytes: length,
        status: response.status,
        mechanism: moved
            .and_then(|m| m.mechanism_used)
            .map(|m| m.as_str().to_string()),
        wall_ns: started.elapsed().as_nanos() as u64,
    })
}

/// The error for a server's refusal, with its short body as the reason.
fn refusal(connection: &mut Connection, response: Response, url: &Url) -> Error {
    let peer = url.to_string();
    let reason = match response.content_length(&peer) {
        Ok(Some(n)) if n <= 4096 => connection
            .read_small_body(n)
            .map(|body| String::from_utf8_lossy(&body).trim().to_string())
            .unwrap_or_else(|_| response.reason.clone()),
        _ => response.reason.clone(),
    };
    Error::Status {
        peer,
        status: response.status,
        reason,
    }
}
