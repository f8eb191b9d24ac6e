//! Answering for one file: validators (ETag, Last-Modified), conditional
//! requests, ranges (one as 206, several as multipart/byteranges) and the
//! body itself, left to the connection's worker ([`super::body`]): sent
//! file→socket with sendfile unless the server was told otherwise, or
//! through the block cache.

use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::time::SystemTime;

use rustix::fs::Stat;

use super::body::{Body, Segment};
use super::exchange::Exchange;
use super::preconditions::{evaluate, Current, Verdict};
use super::request::ResponseHead;
use super::validators::{system_time, Validators};
use crate::manifest::{describe, Manifest, CHUNK_SIZE, MANIFEST_SCHEMA_VERSION};
use crate::ranges::{resolve, RangeAnswer};
use crate::walk::{Entry, EntryKind};

impl Validators {
    /// `If-Range` (strong comparison, or an exact date) allows the range.
    fn range_allowed(&self, exchange: &Exchange<'_>) -> bool {
        match exchange.request.header("if-range").map(str::trim) {
            None => true,
            Some(tag) if tag.starts_with('"') => tag == self.etag,
            Some(tag) if tag.starts_with("W/") => false,
            Some(date) => {
                httpdate::parse_http_date(date).is_ok_and(|date| date == system_time(self.mtime))
            }
        }
    }
}

/// A content type from the name's extension, for browsers.
pub(crate) fn content_type(name: &[u8]) -> &'static str {
    let extension = name
        .rsplit(|&b| b == b'.')
        .next()
        .filter(|ext| ext.len() < name.len())
        .map(|ext| ext.to_ascii_lowercase());
    match extension.as_deref() {
        Some(b"html" | b"htm") => "text/html; charset=utf-8",
        Some(b"txt" | b"md" | b"rs" | b"toml" | b"log") => "text/plain; charset=utf-8",
        Some(b"css") => "text/css",
        Some(b"js") => "text/javascript",
        Some(b"json") => "application/json",
        Some(b"png") => "image/png",
        Some(b"jpg" | b"jpeg") => "image/jpeg",
        Some(b"gif") => "image/gif",
        Some(b"svg") => "image/svg+xml",
        Some(b"pdf") => "application/pdf",
        Some(b"tar") => "application/x-tar",
        Some(b"gz") => "application/gzip",
        Some(b"zip") => "application/zip",
        _ => "application/octet-stream",
    }
}

/// Answers GET or HEAD for a regular file.
pub(crate) fn answer(
    exchange: &Exchange<'_>,
    file: OwnedFd,
    stat: &Stat,
    name: &[u8],
    query: Option<&str>,
) -> std::io::Result<bool> {
    let size = stat.st_size as u64;
    let validators = Validators::of(stat);
    let common = |head: ResponseHead| {
        head.header("ETag", validators.etag.clone())
            .header("Last-Modified", validators.last_modified.clone())
            .header("Accept-Ranges", "bytes")
    };
    match evaluate(exchange.request, &Current::Tagged(&validators)) {
        Verdict::Proceed => {}
        Verdict::NotModified => return exchange.head_and_body(common(ResponseHead::new(304)), b""),
        Verdict::Failed(condition) => return failed(exchange, condition),
    }
    if query == Some("manifest") {
        return manifest(exchange, file, stat, name);
    }
    let ranges = match exchange.request.header("range") {
        Some(header) if validators.range_allowed(exchange) => resolve(header, size),
        _ => RangeAnswer::Whole,
    };
    let kind = content_type(name);
    let label = String::from_utf8_lossy(name).into_owned();
    // Merged ranges hold no byte twice, but many small ones cost a part
    // head each: a multipart body larger than the file is answered with
    // the file itself, which is smaller and holds every range asked.
    let (ranges, multiparts) = match ranges {
        RangeAnswer::Parts(parts) if parts.len() > 1 => {
            let boundary = boundary(&validators);
            let (segments, length) = multipart_segments(&boundary, kind, size, &parts);
            if length > size {
                (RangeAnswer::Whole, None)
            } else {
                (RangeAnswer::Parts(parts), Some((boundary, segments)))
            }
        }
        ranges => (ranges, None),
    };
    match ranges {
        RangeAnswer::Whole => {
            let head = common(ResponseHead::new(200))
                .header("Content-Type", kind)
                .header("Content-Length", size.to_string())
                .header("X-Content-Type-Options", "nosniff");
            exchange.head(&head);
            if !exchange.head_only {
                exchange.send_in_turns(file, label, 0, size);
            }
        }
        RangeAnswer::Parts(parts) if parts.len() == 1 => {
            let (first, length) = parts[0];
            let head = common(ResponseHead::new(206))
                .header("Content-Type", kind)
                .header("Content-Length", length.to_string())
                .header(
                    "Content-Range",
                    format!("bytes {first}-{}/{size}", first + length - 1),
                );
            exchange.head(&head);
            if !exchange.head_only {
                exchange.send_in_turns(file, label, first, length);
            }
        }
        RangeAnswer::Parts(_) => {
            let (boundary, segments) = multiparts.unwrap_or_default();
            multipart(exchange, file, label, &boundary, segments, &validators);
        }
        RangeAnswer::Unsatisfiable => {
            let (_, body) =
                super::request::text_response(416, "no requested range overlaps the file");
            let head = common(ResponseHead::new(416))
                .header("Content-Range", format!("bytes */{size}"))
                .header("Content-Type", "text/plain; charset=utf-8")
                .header("Content-Length", body.len().to_string());
            return exchange.head_and_body(head, &body);
        }
    }
    Ok(exchange.keep_alive)
}

/// 412: `condition` does not hold for what is there now.
pub(crate) fn failed(exchange: &Exchange<'_>, condition: &str) -> std::io::Result<bool> {
    exchange.text(
        412,
        &format!("{condition} does not hold for what is there now"),
    )
}

/// A `multipart/byteranges` boundary that does not occur in the body: a
/// hash of the validator and the clock, as long as the MIME limit allows,
/// makes that practically certain.
fn boundary(validators: &Validators) -> String {
    let seed = format!("{}{:?}", validators.etag, SystemTime::now());
    format!("flexio-{}", &blake3::hash(seed.as_bytes()).to_hex()[..40])
}

/// The body of several ranges as `multipart/byteranges` — each part's
/// head, each part's bytes from the file, the closing boundary — and its
/// length.
fn multipart_segments(
    boundary: &str,
    kind: &str,
    size: u64,
    parts: &[(u64, u64)],
) -> (VecDeque<Segment>, u64) {
    let mut segments = VecDeque::with_capacity(2 * parts.len() + 1);
    let mut length = 0u64;
    for (first, part) in parts {
        let part_head = format!(
            "\r\n--{boundary}\r\nContent-Type: {kind}\r\nContent-Range: bytes {first}-{}/{size}\r\n\r\n",
            first + part - 1
        );
        length += part_head.len() as u64 + part;
        segments.push_back(Segment::Bytes {
            bytes: part_head.into_bytes(),
            at: 0,
        });
        segments.push_back(Segment::Range {
            first: *first,
            end: first + part,
        });
    }
    let closing = format!("\r\n--{boundary}--\r\n");
    length += closing.len() as u64;
    segments.push_back(Segment::Bytes {
        bytes: closing.into_bytes(),
        at: 0,
    });
    (segments, length)
}

/// Several ranges as `multipart/byteranges`: the head written now, the
/// body (`segments`) left to be sent in turns.
fn multipart(
    exchange: &Exchange<'_>,
    file: OwnedFd,
    label: String,
    boundary: &str,
    segments: VecDeque<Segment>,
    validators: &Validators,
) {
    let body = Body::new(segments, Some((file, label)), None);
    let head = ResponseHead::new(206)
        .header("ETag", validators.etag.clone())
        .header("Last-Modified", validators.last_modified.clone())
        .header("Accept-Ranges", "bytes")
        .header(
            "Content-Type",
            format!("multipart/byteranges; boundary={boundary}"),
        )
        .header("Content-Length", body.left.to_string());
    exchange.head(&head);
    if !exchange.head_only {
        exchange.send_body_in_turns(body);
    }
}

/// `FILE?manifest`: the manifest of one file, at once when its hashes
/// are held, else hashed on the offload pool (a large file takes
/// seconds).
fn manifest(
    exchange: &Exchange<'_>,
    file: OwnedFd,
    stat: &Stat,
    name: &[u8],
) -> std::io::Result<bool> {
    if let Some(hashes) = exchange.shared.hashes.cached(&crate::walk::file_key(stat)) {
        return manifest_of(exchange, stat, name, hashes.to_vec());
    }
    let (stat, name) = (*stat, name.to_vec());
    exchange.offload_hashing(Box::new(move |exchange, cancel| {
        let hashes = exchange.shared.hashes.hashes(file.as_fd(), &stat, cancel)?;
        manifest_of(exchange, &stat, &name, hashes.to_vec())
    }));
    Ok(exchange.keep_alive)
}

/// The manifest of one file whose chunk hashes are `hashes`.
fn manifest_of(
    exchange: &Exchange<'_>,
    stat: &Stat,
    name: &[u8],
    hashes: Vec<String>,
) -> std::io::Result<bool> {
    let entry = Entry {
        path: Vec::new(),
        kind: EntryKind::File,
        size: stat.st_size as u64,
        mode: stat.st_mode & 0o7777,
        mtime: stat.st_mtime,
        mtime_nsec: stat.st_mtime_nsec as u32,
        uid: stat.st_uid,
        gid: stat.st_gid,
        link_target: None,
        key: crate::walk::file_key(stat),
    };
    let described = describe(&entry, name, hashes);
    let manifest = Manifest {
        schema_version: MANIFEST_SCHEMA_VERSION,
        chunk_size: CHUNK_SIZE,
        entries: vec![described],
    };
    exchange.json(&manifest)
}
