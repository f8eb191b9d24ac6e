//! What a server with a growing file ([`super::growing`], a chain
//! link's) answers: only `GET` and `HEAD` of its one name (percent-decoded
//! like any target) — its `?manifest` at once (the upstream's, so the
//! next host checks against the same truth), the whole file or one range
//! as a body that waits for the pieces not there yet. Anything else is
//! refused as `serve` refuses it; nothing beneath the root is ever opened.

use std::collections::VecDeque;
use std::sync::Arc;

use super::body::{Body, Segment};
use super::exchange::Exchange;
use super::growing::{GrowingFile, Stretch};
use super::request::ResponseHead;
use crate::names::{split_target, BadTarget};
use crate::ranges::{resolve, RangeAnswer};

/// Answers a request to a server with a growing file: `GET` or `HEAD` of
/// its name (its manifest, the whole file or one range); anything else
/// is refused as `serve` refuses it.
pub(crate) fn answer(
    exchange: &mut Exchange<'_>,
    growing: &Arc<GrowingFile>,
) -> std::io::Result<bool> {
    growing.answered();
    let request = exchange.request;
    if request.method != "GET" && request.method != "HEAD" {
        // A body, if any, is not read: the connection cannot go on.
        exchange.keep_alive = false;
        let (head, body) = super::request::text_response(405, "a chain link only serves its file");
        return exchange.head_and_body(head.header("Allow", "GET, HEAD"), &body);
    }
    if request.has_body() {
        exchange.keep_alive = false;
        return exchange.text(400, "a GET or HEAD request may not carry a body here");
    }
    let (parts, query) = match split_target(&request.target) {
        Ok(split) => split,
        Err(BadTarget::Climbs) => {
            return exchange.text(403, "the path climbs out of the served directory with ..")
        }
        Err(BadTarget::Malformed(why)) => return exchange.text(400, why),
    };
    if parts.len() != 1 || parts[0] != growing.name() {
        return exchange.text(404, "a chain link serves one file");
    }
    if query == Some("manifest") {
        let head = ResponseHead::new(200)
            .header("Content-Type", "application/json")
            .header("Content-Length", growing.manifest().len().to_string());
        return exchange.head_and_body(head, growing.manifest());
    }
    let size = growing.size();
    let (status, first, length) = match exchange.request.header("range").map(|r| resolve(r, size)) {
        Some(RangeAnswer::Parts(parts)) if parts.len() == 1 => (206, parts[0].0, parts[0].1),
        Some(RangeAnswer::Unsatisfiable) => {
            let (head, body) =
                super::request::text_response(416, "no requested range overlaps the file");
            let head = head
                .header("Accept-Ranges", "bytes")
                .header("Content-Range", format!("bytes */{size}"));
            return exchange.head_and_body(head, &body);
        }
        // One range at a time, or the whole file.
        _ => (200, 0, size),
    };
    let mut head = ResponseHead::new(status)
        .header("Accept-Ranges", "bytes")
        .header("Content-Type", super::files::content_type(growing.name()))
        .header("X-Content-Type-Options", "nosniff");
    if status == 206 {
        head = head.header(
            "Content-Range",
            format!("bytes {first}-{}/{size}", first + length - 1),
        );
    }
    exchange.head(&head.header("Content-Length", length.to_string()));
    if !exchange.head_only && length > 0 {
        let file = growing.reopen()?;
        let stretch = Stretch::new(growing, first, first + length);
        let body = Body::new(
            VecDeque::from([Segment::Growing(stretch)]),
            Some((file, growing.label().to_string())),
            None,
        );
        exchange.send_body_in_turns(body);
    }
    Ok(exchange.keep_alive)
}
