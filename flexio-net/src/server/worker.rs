//! A worker: takes a whole request from the event loop, answers it, and
//! parks a kept-alive connection again. Each worker keeps one
//! [`Mover`], so its pipe or buffers are made once, not per response.

use std::cell::RefCell;
use std::os::fd::OwnedFd;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Mutex;

use flexio::range::Mover;
use rustix::io::Errno;

use super::event_loop::Job;
use super::request::{text_response, Request, ResponseHead};

use super::turns::{self, Body};
use super::{directory, files, Connection, Shared};
use crate::names::{split_target, BadTarget};
use crate::walk::open_beneath;

pub(crate) fn run(shared: &Shared, queue: &Mutex<Receiver<Job>>, jobs: &Sender<Job>) {
    let mut mover = Mover::new();
    loop {
        let job = queue.lock().unwrap().recv();
        let (mut connection, request) = match job {
            Ok(Job::Request(connection, request)) => (connection, request),
            Ok(Job::Turn(connection)) => {
                turns::take_turn(shared, connection, &mut mover, jobs);
                continue;
            }
            Err(_) => return,
        };
        let keep_alive = match answer(shared, &connection, &request, &mut mover) {
            Ok((keep_alive, Some(body))) => {
                connection.body = Some(Body {
                    keep_alive,
                    request: format!("{} {}", request.method, request.target),
                    ..body
                });
                turns::take_turn(shared, connection, &mut mover, jobs);
                continue;
            }
            Ok((keep_alive, None)) => keep_alive,
            Err(error) => {
                // The response is cut short: the client sees the connection
                // close before Content-Length bytes, which it must treat as
                // a failure.
                eprintln!(
                    "flexio serve: {} {} for {}: {error}",
                    request.method, request.target, connection.peer
                );
                false
            }
        };
        turns::finish(shared, connection, keep_alive);
    }
}

/// What answering needs besides the request.
pub(crate) struct Exchange<'a> {
    pub shared: &'a Shared,
    pub connection: &'a Connection,
    pub request: &'a Request,
    pub keep_alive: bool,
    pub head_only: bool,
    /// A file body to send in turns once the head is out.
    pub body: RefCell<Option<Body>>,
}

impl Exchange<'_> {
    /// Leaves `length` bytes of `file` from `first` to be sent in turns
    /// after this exchange (see [`turns`]).
    pub fn send_in_turns(&self, file: OwnedFd, label: String, first: u64, length: u64) {
        if length == 0 {
            return;
        }
        *self.body.borrow_mut() = Some(Body {
            file,
            label,
            next: first,
            end: first + length,
            keep_alive: self.keep_alive,
            request: String::new(),
        });
    }

    /// Sends a short text response; returns whether the connection lives on.
    pub fn text(&self, status: u16, message: &str) -> std::io::Result<bool> {
        let (head, body) = text_response(status, message);
        self.head_and_body(head, &body)
    }

    /// Sends a head and an in-memory body (left out for HEAD).
    pub fn head_and_body(&self, head: ResponseHead, body: &[u8]) -> std::io::Result<bool> {
        let mut bytes = head.bytes(self.keep_alive);
        if !self.head_only {
            bytes.extend_from_slice(body);
        }
        let mut socket = &self.connection.stream;
        std::io::Write::write_all(&mut socket, &bytes)?;
        Ok(self.keep_alive)
    }
}

/// Answers one request; `Ok(true, _)` when the connection may carry
/// another, with the body still to send in turns, if any.
fn answer(
    shared: &Shared,
    connection: &Connection,
    request: &Request,
    mover: &mut Mover,
) -> std::io::Result<(bool, Option<Body>)> {
    let head_only = request.method == "HEAD";
    let mut exchange = Exchange {
        shared,
        connection,
        request,
        keep_alive: request.keeps_alive(),
        head_only,
        body: RefCell::new(None),
    };
    let keep_alive = respond(&mut exchange, mover)?;
    Ok((keep_alive, exchange.body.into_inner()))
}

/// Sends the response, all of it but a file body left for turns.
fn respond(exchange: &mut Exchange<'_>, mover: &mut Mover) -> std::io::Result<bool> {
    let (shared, request) = (exchange.shared, exchange.request);
    if request.method == "PUT" || request.method == "MKCOL" {
        return match split_target(&request.target) {
            Ok((parts, None)) if request.method == "MKCOL" => {
                super::upload::make_directory(exchange, &parts)
            }
            Ok((parts, None)) => super::upload::answer(exchange, &parts, mover),
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
    let file = match open_beneath(std::os::fd::AsFd::as_fd(&shared.root), &path) {
        Ok(file) => file,
        Err(error) => {
            let (status, why) = match Errno::from_io_error(&error) {
                Some(Errno::NOENT | Errno::NOTDIR) => (404, "no such file"),
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
            files::answer(exchange, file, &stat, &name, query, mover)
        }
        rustix::fs::FileType::Directory => directory::answer(exchange, file, &parts, query, mover),
        _ => exchange.text(403, "not a regular file or a directory"),
    }
}
