//! Answering for a directory: its `index.html` where it holds one (as
//! nginx's `index`), else or with `?list` an HTML listing, `?manifest`
//! (JSON with chunk hashes) or `?tar` (the subtree as a ustar stream: headers and
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
    if let Some((index, stat)) = index_to_serve(exchange, parts, query) {
        return super::files::answer(exchange, index, &stat, INDEX, None);
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
            exchange.offload_hashing(Box::new(move |exchange, cancel| {
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

/// The page a directory answers with, where it holds one.
const INDEX: &[u8] = b"index.html";

/// The directory's `index.html`, opened as a GET of its path would open it,
/// when it is a regular file and the query asks for no listing, manifest
/// or tar (`?list` is the listing however the directory is made).
fn index_to_serve(
    exchange: &Exchange<'_>,
    parts: &[Vec<u8>],
    query: Option<&str>,
) -> Option<(OwnedFd, rustix::fs::Stat)> {
    let asked = query.map(|query| query.strip_suffix('=').unwrap_or(query));
    if matches!(asked, Some("list" | "manifest" | "tar")) {
        return None;
    }
    let mut path = parts.join(&b'/');
    if !path.is_empty() {
        path.push(b'/');
    }
    path.extend_from_slice(INDEX);
    let file = exchange.shared.open_target(&path).ok()?;
    let stat = rustix::fs::fstat(&file).ok()?;
    (EntryKind::of(&stat) == EntryKind::File).then_some((file, stat))
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
        // Not `.` nor `..`; a name with a control character is linked
        // percent-encoded like any other.
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
        let served = served_as(exchange, parts, name, *kind, *size);
        let shown = html_escape(&String::from_utf8_lossy(name));
        let modified = httpdate::fmt_http_date(super::validators::system_time(*mtime));
        html.push_str(&match served {
            Some((served, size)) => {
                let suffix = if served == EntryKind::Directory {
                    "/"
                } else {
                    ""
                };
                let detail = match (kind, served) {
                    (EntryKind::Symlink, EntryKind::File) => {
                        format!("symlink to a file of {}", flexio::format_bytes(size))
                    }
                    (EntryKind::Symlink, _) => "symlink to a directory".to_string(),
                    (_, EntryKind::File) => flexio::format_bytes(size),
                    (other, _) => other.as_str().to_string(),
                };
                format!(
                    "<li><a href=\"./{}{suffix}\">{shown}{suffix}</a> — {detail}, {modified}</li>\n",
                    percent_encode(name)
                )
            }
            // Shown, not linked: a crawler that followed the link would
            // get a 403 (wget -r exits 8 on one).
            None => format!(
                "<li>{shown} — {}, not served, {modified}</li>\n",
                kind.as_str()
            ),
        });
    }
    html.push_str("</ul></body></html>\n");
    let head = ResponseHead::new(200)
        .header("Content-Type", "text/html; charset=utf-8")
        .header("Content-Length", html.len().to_string())
        .header("X-Content-Type-Options", "nosniff");
    exchange.head_and_body(head, html.as_bytes())
}

/// What a GET of the listed entry `name` answers with — a file (of this
/// size) or a directory — or `None` where it answers 403: a FIFO or
/// device, a symlink unless `--follow-symlinks`, and then one that leads
/// out of the root or to neither file nor directory.
fn served_as(
    exchange: &Exchange<'_>,
    parts: &[Vec<u8>],
    name: &[u8],
    kind: EntryKind,
    size: u64,
) -> Option<(EntryKind, u64)> {
    match kind {
        EntryKind::File | EntryKind::Directory => Some((kind, size)),
        EntryKind::Other => None,
        EntryKind::Symlink if !exchange.shared.config.follow_symlinks => None,
        EntryKind::Symlink => {
            let mut path = parts.join(&b'/');
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name);
            let stat = rustix::fs::fstat(exchange.shared.open_target(&path).ok()?).ok()?;
            match EntryKind::of(&stat) {
                served @ (EntryKind::File | EntryKind::Directory) => {
                    Some((served, stat.st_size as u64))
                }
                _ => None,
            }
        }
    }
}

use std::os::unix::ffi::OsStrExt;
