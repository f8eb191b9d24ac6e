//! Answering for a directory: an HTML listing, `?manifest` (JSON with
//! chunk hashes) or `?tar` (the subtree as a ustar stream: headers and
//! padding made here, file bodies sent with the mechanism between them,
//! all in turns like any long body). The walks, and the listing of a
//! directory of more than [`LARGE_LISTING`] entries, run on the offload
//! pool: a large tree takes long to walk and hash.

use std::os::fd::{AsFd, OwnedFd};

use super::body::{Body, Segment};
use super::exchange::Exchange;
use super::offload::Cancel;
use super::request::ResponseHead;
use crate::manifest::{describe, Manifest, CHUNK_SIZE, MANIFEST_SCHEMA_VERSION};
use crate::names::{html_escape, percent_encode};
use crate::tar_stream::{plan, Piece};
use crate::walk::{open_beneath, walk, EntryKind};

/// Answers GET or HEAD for a directory.
pub(crate) fn answer(
    exchange: &Exchange<'_>,
    dir: OwnedFd,
    parts: &[Vec<u8>],
    query: Option<&str>,
) -> std::io::Result<bool> {
    let raw_path = exchange
        .request
        .target
        .split_once('?')
        .map_or(exchange.request.target.as_str(), |(path, _)| path);
    if !raw_path.ends_with('/') {
        let location = match query {
            Some(query) => format!("{raw_path}/?{query}"),
            None => format!("{raw_path}/"),
        };
        let head = ResponseHead::new(301)
            .header("Location", location)
            .header("Content-Length", "0");
        return exchange.head_and_body(head, b"");
    }
    use super::preconditions::{evaluate, Current, Verdict};
    match evaluate(exchange.request, &Current::Untagged) {
        Verdict::Proceed => {}
        Verdict::NotModified => return exchange.head_and_body(ResponseHead::new(304), b""),
        Verdict::Failed(condition) => return super::files::failed(exchange, condition),
    }
    // `?tar=` and `?manifest=` are what the listing's forms submit.
    let parts = parts.to_vec();
    match query.map(|query| query.strip_suffix('=').unwrap_or(query)) {
        Some("manifest") => {
            exchange.offload(Box::new(move |exchange, cancel| {
                manifest(exchange, &dir, cancel)
            }));
        }
        Some("tar") => exchange.offload(Box::new(move |exchange, _| tar(exchange, dir, &parts))),
        _ if is_large(&dir) => {
            exchange.offload(Box::new(move |exchange, _| listing(exchange, &dir, &parts)));
        }
        _ => return listing(exchange, &dir, &parts),
    }
    Ok(exchange.keep_alive)
}

/// Entries past which a listing (a `stat` of each) is made on the
/// offload pool.
pub(crate) const LARGE_LISTING: usize = 256;

/// Whether `dir` has more than [`LARGE_LISTING`] entries (one
/// `getdents` or two, no `stat`). One that cannot be read is listed here,
/// which says why.
fn is_large(dir: &OwnedFd) -> bool {
    rustix::fs::Dir::read_from(dir)
        .map(|entries| entries.take(LARGE_LISTING + 1).count() > LARGE_LISTING)
        .unwrap_or(false)
}

/// Walk errors become a clear 500 or 413 rather than a cut connection.
fn walk_or_answer(
    exchange: &Exchange<'_>,
    dir: &OwnedFd,
) -> std::io::Result<Result<Vec<crate::walk::Entry>, bool>> {
    match walk(dir.as_fd()) {
        Ok(entries) => Ok(Ok(entries)),
        Err(error) if error.raw_os_error() == Some(rustix::io::Errno::TOOBIG.raw_os_error()) => {
            Ok(Err(exchange.text(
                413,
                &format!("the tree has over {} entries", crate::walk::MAX_ENTRIES),
            )?))
        }
        Err(error) => Ok(Err(
            exchange.text(500, &format!("cannot walk the tree: {error}"))?
        )),
    }
}

fn manifest(exchange: &Exchange<'_>, dir: &OwnedFd, cancel: &Cancel) -> std::io::Result<bool> {
    let entries = match walk_or_answer(exchange, dir)? {
        Ok(entries) => entries,
        Err(keep_alive) => return Ok(keep_alive),
    };
    let mut described = Vec::with_capacity(entries.len());
    for entry in &entries {
        if cancel.cancelled() {
            return Err(Cancel::error());
        }
        let hashes = match entry.kind {
            // The walk's version of the file, when its hashes are held:
            // nothing to open. Else opened beneath the directory (a file
            // swapped for a symlink since is refused) and hashed.
            EntryKind::File => match exchange.shared.hashes.cached(&entry.key) {
                Some(hashes) => hashes.to_vec(),
                None => {
                    let file = open_beneath(dir.as_fd(), &entry.path)?;
                    let stat = rustix::fs::fstat(&file)?;
                    exchange
                        .shared
                        .hashes
                        .hashes(file.as_fd(), &stat, cancel)?
                        .to_vec()
                }
            },
            _ => Vec::new(),
        };
        described.push(describe(entry, &entry.path, hashes));
    }
    exchange.json(&Manifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        chunk_size: CHUNK_SIZE,
        entries: described,
    })
}

/// `DIR?tar`: the head now, the stream — headers and padding made here,
/// members opened beneath `dir` when their turn comes — in turns.
fn tar(exchange: &Exchange<'_>, dir: OwnedFd, parts: &[Vec<u8>]) -> std::io::Result<bool> {
    let entries = match walk_or_answer(exchange, &dir)? {
        Ok(entries) => entries,
        Err(keep_alive) => return Ok(keep_alive),
    };
    let (pieces, total) = plan(&entries);
    let name = parts.last().map_or("root".to_string(), |name| {
        String::from_utf8_lossy(name).into_owned()
    });
    let head = ResponseHead::new(200)
        .header("Content-Type", "application/x-tar")
        .header("Content-Length", total.to_string())
        .header(
            "Content-Disposition",
            format!(
                "attachment; filename=\"{}.tar\"",
                percent_encode(name.as_bytes())
            ),
        );
    if exchange.head_only {
        exchange.head(&head);
        return Ok(exchange.keep_alive);
    }
    // Never empty: the stream ends with two zero blocks at least.
    exchange.head(&head);
    let segments = pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Bytes(bytes) => Segment::Bytes { bytes, at: 0 },
            Piece::Body { path, size } => Segment::Member { path, size },
        })
        .collect();
    exchange.send_body_in_turns(Body::new(segments, None, Some(dir)));
    Ok(exchange.keep_alive)
}

fn listing(exchange: &Exchange<'_>, dir: &OwnedFd, parts: &[Vec<u8>]) -> std::io::Result<bool> {
    let mut rows = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes().to_vec();
        // Only what a GET can fetch is listed (not `.`, `..`, nor a name
        // with a control character, which no request target may carry).
        if !crate::names::is_safe_component(&name) {
            continue;
        }
        if rows.len() >= crate::walk::MAX_ENTRIES {
            return exchange.text(413, "the directory has too many entries to list");
        }
        let stat = rustix::fs::statat(
            dir,
            std::ffi::OsStr::from_bytes(&name),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )?;
        rows.push((
            name,
            EntryKind::of(&stat),
            stat.st_size as u64,
            stat.st_mtime,
        ));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let title: Vec<String> = parts
        .iter()
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect();
    let title = html_escape(&format!("/{}", title.join("/")));
    // The tar and manifest are buttons of forms, not links: a crawler
    // (`wget -r`) follows every link, and links to them made it fetch
    // every file once more in a tar of each directory above it.
    let mut html = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of {title}</title></head>\n<body><h1>Index of {title}</h1>\n\
         <form method=\"get\"><button name=\"tar\">this directory as tar</button> <button name=\"manifest\">manifest</button></form>\n<ul>\n"
    );
    if !parts.is_empty() {
        html.push_str("<li><a href=\"../\">../</a></li>\n");
    }
    for (name, kind, size, mtime) in &rows {
        let suffix = if *kind == EntryKind::Directory {
            "/"
        } else {
            ""
        };
        let shown = html_escape(&String::from_utf8_lossy(name));
        let detail = match kind {
            EntryKind::File => flexio::format_bytes(*size),
            other => other.as_str().to_string(),
        };
        let modified = httpdate::fmt_http_date(super::validators::system_time(*mtime));
        html.push_str(&format!(
            "<li><a href=\"./{}{suffix}\">{shown}{suffix}</a> — {detail}, {modified}</li>\n",
            percent_encode(name)
        ));
    }
    html.push_str("</ul></body></html>\n");
    let head = ResponseHead::new(200)
        .header("Content-Type", "text/html; charset=utf-8")
        .header("Content-Length", html.len().to_string())
        .header("X-Content-Type-Options", "nosniff");
    exchange.head_and_body(head, html.as_bytes())
}

use std::os::unix::ffi::OsStrExt;
