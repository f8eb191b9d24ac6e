//! The workers, in two pools, so a new request never waits behind the
//! turns of long bodies. A request worker waits for a connection with
//! bytes to read, reads its request head and answers the request — with
//! its file body when that fits in one turn (`--max-chunk`) — and parks a
//! kept-alive connection again; a longer body goes to the body workers, which send it in turns
//! (see [`turns`]) at a lower CPU priority ([`BODY_WORKER_NICE`]), so the
//! request path's threads win the CPU from them when both are runnable.
//! Each worker keeps one [`Mover`], so its pipe or buffers are made once,
//! not per response.

use std::cell::RefCell;
use std::os::fd::OwnedFd;

use flexio::range::Mover;
use rustix::buffer::spare_capacity;
use rustix::event::epoll;
use rustix::io::Errno;

use super::request::{text_response, Request, ResponseHead};

use super::body::Body;
use super::turns::{self, TurnQueue, TurnReceiver};
use super::{directory, event_loop, files, Connection, Shared};
use crate::names::{split_target, BadTarget};
use crate::walk::open_beneath;

/// How much nicer than the process the body workers' threads run while
/// other bodies are sent beside theirs (the request path keeps the
/// process's nice value): nice 10 weighs about a tenth of nice 0, so a
/// long body still moves when nothing else wants the CPU but yields it to
/// a new request's threads when both are runnable.
pub(crate) const BODY_WORKER_NICE: i32 = 10;

/// A body worker's CPU priority. [`BODY_WORKER_NICE`] below the process's
/// while idle and while other bodies are sent beside its own: then bodies
/// compete with the request path for the CPUs. The process's own while
/// its body is the only one: a lone body takes at most one CPU, leaving
/// the others to the request path, and a thread at nice 10 sharing a CPU
/// with a client at nice 0 (curl on loopback) is preempted at each of the
/// client's wake-ups — measured with `perf stat` on one 1 GiB download:
/// ~12 000 involuntary switches per GiB and twice nginx's CPU per GiB,
/// against ~700 and nginx's CPU at the process's nice.
///
/// Raising a thread's own nice value needs no privilege; lowering it back
/// needs `CAP_SYS_NICE` or room under `RLIMIT_NICE`. Without them a lone
/// body stays at the nicer value, as before, and the worker stops trying.
pub(crate) struct BodyPriority {
    thread: Option<rustix::process::Pid>,
    own: i32,
    current: i32,
    may_lower: bool,
}

impl BodyPriority {
    /// Makes the calling thread nicer, relative to the process's own nice
    /// value, so a server started under `nice` keeps the same gap between
    /// its request path and its bodies.
    fn start() -> BodyPriority {
        let thread = Some(rustix::thread::gettid());
        let own = rustix::process::getpriority_process(thread).unwrap_or(0);
        let mut priority = BodyPriority {
            thread,
            own,
            current: own,
            may_lower: true,
        };
        priority.update(false);
        priority
    }

    /// The process's nice value when this worker's body is the only one
    /// being sent (`alone`), else the nicer one.
    pub fn update(&mut self, alone: bool) {
        let want = if alone && self.may_lower {
            self.own
        } else {
            (self.own + BODY_WORKER_NICE).min(19)
        };
        if want == self.current {
            return;
        }
        match rustix::process::setpriority_process(self.thread, want) {
            Ok(()) => self.current = want,
            Err(_) if want < self.current => self.may_lower = false,
            // Where even raising fails the worker runs at the process's.
            Err(_) => {}
        }
    }
}

/// A body worker: sends turns of long bodies, one body after another, at
/// the priority [`BodyPriority`] gives.
pub(crate) fn run_turns(shared: &Shared, queue: &TurnReceiver, turns: &TurnQueue) {
    let mut priority = BodyPriority::start();
    let mut mover = Mover::new();
    loop {
        let Some(connection) = queue.next() else {
            return;
        };
        turns::take_turn(shared, connection, &mut mover, turns, Some(&mut priority));
        queue.done();
        priority.update(false);
    }
}

/// A request worker: waits on the connections' epoll set itself, reads
/// the request head of a connection that has bytes (see
/// [`event_loop::read_head`]) and answers a whole request at once, sending
/// a body of one turn itself and queueing a longer one for the body
/// workers. Each worker takes one event per wait and every connection is
/// armed `EPOLLONESHOT`, so an event goes to one idle worker: a request
/// costs one wake-up, not one for the event loop and one for the worker
/// it handed the request to.
pub(crate) fn run_requests(shared: &Shared, turns: &TurnQueue) {
    let mut mover = Mover::new();
    let mut events = Vec::with_capacity(1);
    loop {
        events.clear();
        match epoll::wait(&shared.epoll, spare_capacity(&mut events), None) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(errno) => {
                // Only a broken epoll descriptor gets here: say so rather
                // than spin.
                eprintln!("flexio serve: epoll_wait in a request worker: {errno}");
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        for event in &events {
            if let Some((connection, request)) = event_loop::read_head(shared, event.data.u64()) {
                serve_request(shared, connection, &request, &mut mover, turns);
            }
        }
    }
}

/// Answers one whole request on `connection`, then parks it for the next
/// (or closes it, or leaves it to the body workers).
fn serve_request(
    shared: &Shared,
    mut connection: Connection,
    request: &Request,
    mover: &mut Mover,
    turns: &TurnQueue,
) {
    let keep_alive = match answer(shared, &connection, request, mover) {
        Ok((keep_alive, Some(body))) => {
            let one_turn = body.left <= shared.config.max_chunk.max(1);
            connection.body = Some(Body {
                keep_alive,
                request: format!("{} {}", request.method, request.target),
                ..body
            });
            if one_turn {
                turns::take_turn(shared, connection, mover, turns, None);
            } else {
                // A long body never holds a request worker: a client that
                // reads it slowly blocks a body worker instead.
                turns.push(connection);
            }
            return;
        }
        Ok((keep_alive, None)) => keep_alive,
        Err(error) => {
            // The response is cut short: the client sees the connection
            // close before Content-Length bytes, which it must treat as a
            // failure.
            eprintln!(
                "flexio serve: {} {} for {}: {error}",
                request.method, request.target, connection.peer
            );
            false
        }
    };
    turns::finish(shared, connection, keep_alive);
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
        self.send_body_in_turns(Body::file(file, label, first, length));
    }

    /// Leaves `body` to be sent in turns after this exchange.
    pub fn send_body_in_turns(&self, body: Body) {
        *self.body.borrow_mut() = Some(body);
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
            files::answer(exchange, file, &stat, &name, query)
        }
        rustix::fs::FileType::Directory => directory::answer(exchange, file, &parts, query),
        _ => exchange.text(403, "not a regular file or a directory"),
    }
}
