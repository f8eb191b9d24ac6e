//! `PUT`: a file written from the request body into a
//! [`NewFile`] made in the target's directory (held open beneath the
//! served root, and named through `/proc/self/fd` so no path component can
//! be swapped for a symlink meanwhile), read by the connection's worker
//! without blocking ([`super::intake`]), and linked in only when every
//! byte of Content-Length arrived; with `Content-Range`, a piece of a file
//! sent in pieces ([`super::upload_ranges`]). Only with a token (`--token-file`): as a
//! bearer token (checked in constant time) from loopback peers or over TLS
//! ([`super::wire`]) — or as a signed request
//! ([`crate::signing`]) from any peer, so that the token never crosses a
//! plain link.

use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;

use flexio::range::NewFile;
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use super::exchange::Exchange;
use super::files::failed;
use super::intake::{Finish, Intake};
use super::preconditions::{evaluate, evaluate_at, Current, Verdict};
use super::request::ResponseHead;
use super::upload_meta::Kept;
use super::upload_ranges;
use super::validators::Validators;
use crate::signing::{verify, Refusal, SignedRequest, SCHEME};
use crate::walk::open_beneath;

/// Whether `given` equals `expected`, taking the same time wherever they
/// differ.
fn same_token(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = given.len() ^ expected.len();
    for (i, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(i).copied().unwrap_or(0));
    }
    difference == 0
}

/// Answers a PUT of `parts` (the decoded path). The connection carries on
/// only when the whole body was taken.
pub(crate) fn answer(exchange: &mut Exchange<'_>, parts: &[Vec<u8>]) -> std::io::Result<bool> {
    let request = exchange.request;
    let Some(token) = exchange.shared.config.token.as_deref() else {
        exchange.keep_alive = false;
        return refuse_method(exchange);
    };
    // The body is unread until the checks pass: any refusal ends the
    // connection (closed gracefully, the body drained and dropped).
    exchange.keep_alive = false;
    let chunked = match request.chunked() {
        Ok(chunked) => chunked,
        Err((status, why)) => return exchange.text(status, &why),
    };
    let signed = request
        .header("authorization")
        .is_some_and(|given| given.trim().starts_with(SCHEME));
    if chunked && (signed || request.header("content-range").is_some()) {
        return exchange.text(
            411,
            "a signed or ranged PUT needs a Content-Length (the signature and the range cover it); a chunked body is taken with a bearer token, whole",
        );
    }
    // Signed with the request: read before the authorisation. A chunked
    // body's length is known at its end; 0 until then.
    let length = match request
        .header("content-length")
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(length) => length,
        None if chunked => 0,
        None => return exchange.text(411, "PUT needs a Content-Length or a chunked body"),
    };
    if let Err(refusal) = authorise(exchange, token, length) {
        return refuse(exchange, refusal);
    }
    if let Err(why) = Kept::of(request) {
        return exchange.text(400, &why);
    }
    let range =
        match request.header("content-range") {
            None => None,
            Some(value) => match upload_ranges::parse_content_range(value) {
                Some(range) => Some(range),
                None => return exchange.text(
                    400,
                    "Content-Range must be bytes START-END/TOTAL (END < TOTAL) or bytes */TOTAL",
                ),
            },
        };
    let Some((name, parents)) = parts.split_last() else {
        return exchange.text(409, "PUT of the served directory itself");
    };
    let parent = match open_beneath(exchange.shared.root.as_fd(), &parents.join(&b'/')) {
        Ok(parent) => parent,
        Err(error) => {
            let status = match Errno::from_io_error(&error) {
                Some(Errno::NOENT) => 404,
                Some(Errno::NOTDIR) => 409,
                _ => 403,
            };
            return exchange.text(
                status,
                "the target's directory cannot be opened beneath the root",
            );
        }
    };
    if FileType::from_raw_mode(rustix::fs::fstat(&parent)?.st_mode) != FileType::Directory {
        return exchange.text(409, "the target's parent is not a directory");
    }
    let existing = rustix::fs::statat(
        &parent,
        std::ffi::OsStr::from_bytes(name),
        AtFlags::SYMLINK_NOFOLLOW,
    );
    let verdict = match &existing {
        Ok(stat) => evaluate(request, &Current::Tagged(&Validators::of(stat))),
        Err(_) => evaluate(request, &Current::Missing),
    };
    if let Verdict::Failed(condition) = verdict {
        return failed(exchange, condition);
    }
    let replaces = match existing {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
            return exchange.text(
                409,
                "a directory is there; PUT does not replace directories",
            );
        }
        Ok(_) => true,
        Err(_) => false,
    };
    let free = rustix::fs::fstatvfs(&parent)
        .map(|s| s.f_bavail.saturating_mul(s.f_frsize))
        .unwrap_or(0);
    if length > free {
        return exchange.text(507, &format!("{length} bytes announced, {free} free"));
    }
    if let Some(range) = range {
        return upload_ranges::answer(exchange, parent, name, range, length);
    }
    let mut destination = PathBuf::from(format!("/proc/self/fd/{}", parent.as_raw_fd()));
    destination.push(std::ffi::OsStr::from_bytes(name));
    let file = match NewFile::create(&destination, 0o644) {
        Ok(file) => file,
        Err(error) => return exchange.text(500, &format!("cannot make the file: {error}")),
    };
    let label = String::from_utf8_lossy(&parts.join(&b'/')).into_owned();
    let whole = Finish::Whole {
        file,
        parent,
        name: name.clone(),
        replaces,
    };
    if chunked {
        // The cap of a body announced with Content-Length: the free space.
        exchange.read_body(Intake::chunked(whole, free, label));
        return Ok(false);
    }
    let intake = Intake::new(whole, 0, length, label);
    if length == 0 {
        return finish(exchange, intake);
    }
    exchange.read_body(intake);
    Ok(false)
}

/// Answers a whole-file upload whose body has all arrived: links the
/// file in.
pub(crate) fn finish(exchange: &mut Exchange<'_>, intake: Intake) -> std::io::Result<bool> {
    // The parent stays open until the file is linked through it.
    let Finish::Whole {
        file,
        parent,
        name,
        replaces,
    } = intake.finish
    else {
        unreachable!("upload::finish is given whole files only")
    };
    let (label, length) = (intake.label, intake.length);
    // What is there may have changed while the body arrived.
    if let Verdict::Failed(condition) = evaluate_at(exchange.request, &parent, &name) {
        drop(file);
        exchange.keep_alive = exchange.request.keeps_alive();
        return failed(exchange, condition);
    }
    // Checked when the request came; given before the name, so the file
    // appears with them.
    let kept = Kept::of(exchange.request).unwrap_or_default();
    if let Err(error) = kept.apply(file.fd()) {
        exchange.keep_alive = false;
        return exchange.text(500, &format!("setting its mode or mtime failed: {error}"));
    }
    if let Err(error) = file.commit(length, false) {
        exchange.keep_alive = false;
        return exchange.text(500, &format!("linking the file in failed: {error}"));
    }
    exchange.keep_alive = exchange.request.keeps_alive();
    let status = if replaces { 200 } else { 201 };
    exchange.text(status, &format!("{label}: {length} bytes written"))
}

/// Answers a refused authorisation (401 says which schemes are taken).
fn refuse(exchange: &Exchange<'_>, (status, why): (u16, String)) -> std::io::Result<bool> {
    let (_, body) = super::request::text_response(status, &why);
    let mut head = ResponseHead::new(status);
    if status == 401 {
        head = head.header("WWW-Authenticate", format!("Bearer, {SCHEME}"));
    }
    let head = head
        .header("Content-Type", "text/plain; charset=utf-8")
        .header("Content-Length", body.len().to_string());
    exchange.head_and_body(head, &body)
}

/// `MKCOL`: makes one directory (mode 0755 less the umask) beneath the
/// root, authorised as a PUT is; 201, or 405 when something is there
/// already, 409 when its parent is missing, as WebDAV has it. A tree
/// upload makes its directories this way, then PUTs its files.
pub(crate) fn make_directory(
    exchange: &mut Exchange<'_>,
    parts: &[Vec<u8>],
) -> std::io::Result<bool> {
    let request = exchange.request;
    let Some(token) = exchange.shared.config.token.as_deref() else {
        exchange.keep_alive = false;
        return refuse_method(exchange);
    };
    if request.has_body() {
        exchange.keep_alive = false;
        return exchange.text(415, "MKCOL takes no body");
    }
    if let Err(refusal) = authorise(exchange, token, 0) {
        exchange.keep_alive = false;
        return refuse(exchange, refusal);
    }
    let Some((name, parents)) = parts.split_last() else {
        return exchange.text(405, "the served directory is there already");
    };
    let parent = match open_beneath(exchange.shared.root.as_fd(), &parents.join(&b'/')) {
        Ok(parent) => parent,
        Err(error) => {
            let status = match Errno::from_io_error(&error) {
                Some(Errno::NOENT | Errno::NOTDIR) => 409,
                _ => 403,
            };
            return exchange.text(
                status,
                "the new directory's parent cannot be opened beneath the root",
            );
        }
    };
    if let Verdict::Failed(condition) = evaluate_at(request, &parent, name) {
        return failed(exchange, condition);
    }
    let label = String::from_utf8_lossy(&parts.join(&b'/')).into_owned();
    match rustix::fs::mkdirat(
        &parent,
        std::ffi::OsStr::from_bytes(name),
        rustix::fs::Mode::from_raw_mode(0o755),
    ) {
        Ok(()) => exchange.text(201, &format!("{label}/: made")),
        Err(Errno::EXIST) => exchange.text(405, &format!("{label}: something is there already")),
        Err(Errno::NOTDIR) => exchange.text(409, "the new directory's parent is not a directory"),
        Err(error) => exchange.text(500, &format!("{label}: mkdir failed: {error}")),
    }
}

/// Whether a write (PUT, MKCOL) is authorised: a bearer token from a loopback peer
/// or over TLS, or a signed request
/// ([`crate::signing`]) from any peer. `Err` holds the status (401, or
/// 503 when too many signed requests are remembered) and why.
fn authorise(exchange: &Exchange<'_>, token: &str, length: u64) -> Result<(), (u16, String)> {
    let request = exchange.request;
    let given = request.header("authorization").unwrap_or_default().trim();
    if let Some(bearer) = given.strip_prefix("Bearer ") {
        if !exchange.private {
            return Err((
                401,
                "a bearer token is taken on loopback or over TLS only, never over a plain link; sign the request (flexio put does)".into(),
            ));
        }
        return if same_token(bearer.trim().as_bytes(), token.as_bytes()) {
            Ok(())
        } else {
            Err((401, "the bearer token is not the server's".into()))
        };
    }
    if given.starts_with(SCHEME) {
        let signed = SignedRequest {
            method: &request.method,
            authority: request.header("host").unwrap_or_default().trim(),
            target: &request.target,
            length,
            content_range: request.header("content-range").unwrap_or_default(),
            upload: request.header("flexio-upload").unwrap_or_default(),
        };
        let seen = &exchange.shared.nonces;
        return verify(token, given, &signed, seen).map_err(|refusal| {
            let status = if refusal == Refusal::Busy { 503 } else { 401 };
            (status, refusal.to_string())
        });
    }
    Err((
        401,
        format!(
            "{} needs Authorization: Bearer <token> (loopback, TLS) or a {SCHEME} signed request (flexio put)",
            request.method
        ),
    ))
}

/// 405 for a write on a server without a token, saying why.
pub(crate) fn refuse_method(exchange: &Exchange<'_>) -> std::io::Result<bool> {
    let (_, body) = super::request::text_response(
        405,
        &format!(
            "{} is not served: this server is read-only (start it with --token-file to take PUT uploads)",
            exchange.request.method
        ),
    );
    let head = ResponseHead::new(405)
        .header("Allow", "GET, HEAD")
        .header("Content-Type", "text/plain; charset=utf-8")
        .header("Content-Length", body.len().to_string());
    exchange.head_and_body(head, &body)
}

use std::os::unix::ffi::OsStrExt;

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_compare_whole() {
        assert!(super::same_token(b"abc", b"abc"));
        assert!(!super::same_token(b"ab", b"abc"));
        assert!(!super::same_token(b"abcd", b"abc"));
        assert!(!super::same_token(b"abd", b"abc"));
        assert!(!super::same_token(b"", b"abc"));
    }
}
