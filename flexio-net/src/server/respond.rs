//! From a request head to a [`Response`]: the handler by method and
//! target (a file, a directory, an upload), and the second half of an
//! upload once its body has all arrived. Nothing here touches the socket.

use rustix::io::Errno;

use super::exchange::{Exchange, Response};
use super::intake::{Finish, Intake};
use super::request::Request;
use super::shared::Shared;
use super::{directory, files, upload, upload_ranges};
use crate::names::{split_target, BadTarget};

/// Who asks: the client's name for messages, and whether it is on
/// loopback or TLS (bearer tokens are taken over those only).
pub(crate) struct Peer<'a> {
    pub name: &'a str,
    pub private: bool,
}

/// The answer to `request`. A handler's failure (a file that cannot be
/// read, say) becomes a 500 that closes the connection, nothing having
/// been sent yet.
pub(crate) fn answer(shared: &Shared, request: &Request, peer: &Peer<'_>) -> Response {
    let mut exchange = Exchange::new(shared, request, peer.private);
    match respond(&mut exchange) {
        Ok(keep_alive) => exchange.into_response(keep_alive),
        Err(error) => failed(shared, request, peer, &error),
    }
}

/// The answer to an upload whose body has all arrived.
pub(crate) fn finish_upload(
    shared: &Shared,
    request: &Request,
    peer: &Peer<'_>,
    intake: Intake,
) -> Response {
    let mut exchange = Exchange::new(shared, request, peer.private);
    let finished = match intake.finish {
        Finish::Whole { .. } => upload::finish(&mut exchange, intake),
        // The journal is read and rewritten on the offload pool.
        Finish::Piece { .. } => {
            exchange.offload(Box::new(move |exchange, _| {
                upload_ranges::finish(exchange, intake)
            }));
            Ok(exchange.keep_alive)
        }
    };
    match finished {
        Ok(keep_alive) => exchange.into_response(keep_alive),
        Err(error) => failed(shared, request, peer, &error),
    }
}

/// A 500 saying what failed, logged too.
pub(crate) fn failed(
    shared: &Shared,
    request: &Request,
    peer: &Peer<'_>,
    error: &std::io::Error,
) -> Response {
    eprintln!(
        "flexio serve: {} {} for {}: {error}",
        request.method, request.target, peer.name
    );
    let mut exchange = Exchange::new(shared, request, peer.private);
    exchange.keep_alive = false;
    let _ = exchange.text(500, &format!("the answer failed: {error}"));
    exchange.into_response(false)
}

/// Answers by method and target: the handler's answer, and whether the
/// connection may carry another request.
fn respond(exchange: &mut Exchange<'_>) -> std::io::Result<bool> {
    let (shared, request) = (exchange.shared, exchange.request);
    if let Some(growing) = &shared.growing {
        return super::growing_answer::answer(exchange, growing);
    }
    if request.method == "PUT" || request.method == "MKCOL" {
        return match split_target(&request.target) {
            Ok((parts, None)) if request.method == "MKCOL" => {
                super::upload::make_directory(exchange, &parts)
            }
            Ok((parts, None)) => super::upload::answer(exchange, &parts),
            Ok((_, Some(_))) => {
                exchange.keep_alive = false;
                exchange.text(400, &format!("{} takes no query", request.method))
            }
            Err(BadTarget::Climbs) => {
                exchange.keep_alive = false;
                exchange.text(403, "the path climbs out of the served directory with ..")
            }
            Err(BadTarget::Malformed(why)) => {
                exchange.keep_alive = false;
                exchange.text(400, why)
            }
        };
    }
    if request.method != "GET" && request.method != "HEAD" {
        // The body, if any, is not read: the connection cannot go on.
        exchange.keep_alive = false;
        return super::upload::refuse_method(exchange);
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
    let path = parts.join(&b'/');
    let follow = shared.config.follow_symlinks;
    let file = match shared.open_target(&path) {
        Ok(file) => file,
        Err(error) => {
            let (status, why) = match Errno::from_io_error(&error) {
                Some(Errno::NOENT | Errno::NOTDIR) => (404, "no such file"),
                Some(Errno::LOOP) if follow => (403, "too many symbolic links"),
                Some(Errno::LOOP) => (403, "symbolic links are not followed"),
                Some(Errno::XDEV) => (403, "the path leads out of the served directory"),
                Some(Errno::ACCESS | Errno::PERM) => (403, "permission denied"),
                Some(Errno::NAMETOOLONG) => (400, "the path is too long"),
                _ => (500, "the file cannot be opened"),
            };
            return exchange.text(status, why);
        }
    };
    let stat = rustix::fs::fstat(&file)?;
    match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
        rustix::fs::FileType::RegularFile => {
            let name = parts.last().cloned().unwrap_or_default();
            files::answer(exchange, file, &stat, &name, query)
        }
        rustix::fs::FileType::Directory => directory::answer(exchange, file, &parts, query),
        _ => exchange.text(403, "not a regular file or a directory"),
    }
}
