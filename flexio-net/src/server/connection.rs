//! One connection, as a state machine its worker drives on every event:
//! reading a request head, reading an upload's body, waiting for the
//! offload pool's answer (holding no thread), sending a response
//! (the bytes the handler left, then its body), draining what the client
//! still sends before closing. Every call on the socket is non-blocking;
//! [`Connection::drive`] goes on until the socket says `EAGAIN` (then it
//! waits for the next edge or its deadline), the connection's share of
//! this wake-up is spent (`--max-chunk`: it yields to the others), a
//! keep-alive response is done (the next request is read on its next
//! turn, after the worker's other ready connections), its
//! rate's tokens are not due yet, its schedule pauses it, or it is closed.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::Instant;

use flexio::pace::TokenBucket;
use rustix::io::Errno;

use super::access_log::Entry;
use super::body::{Body, Turn};
use super::exchange::{Exchange, Response, Work};
use super::intake::{Intake, IntakeError, Pumped};
use super::offload::{Cancel, Mailbox, Waiting};
use super::request::{closing_response, Request};
use super::respond::{self, Peer};
use super::schedule::Scheduled;
use super::shared::{Admission, Shared};
use super::wire::{Link, Wire};
use crate::deadline::after;
use crate::head::{request_complete, step_from, Step};

/// Where a connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for (the rest of) a request head.
    Head,
    /// Reading an upload's body.
    Upload,
    /// Waiting for the offload pool's answer: the client is only watched
    /// for closing (which cancels the work).
    Offloaded,
    /// Sending a response.
    Send,
    /// The last response is sent and our side shut down: what the client
    /// still sends is read and dropped until it closes (or the head
    /// deadline passes), so closing never resets a connection whose
    /// response the client has not read yet.
    Drain,
}

/// What the worker does with a connection after driving it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Wait for the next event on it or its deadline.
    Wait,
    /// Drive it again after the others ready now.
    Yield,
    /// Close it.
    Close,
}

/// What driving needs from the worker.
pub(crate) struct Tools<'a> {
    pub shared: &'a Shared,
    /// The connection's token in its worker.
    pub token: u64,
    /// Where the offload pool answers the worker's connections.
    pub mailbox: &'a Arc<Mailbox<Done>>,
    /// Uploads are read through it; empty whenever a call returns.
    pub scratch: &'a mut [u8],
    /// The server is stopping: no connection is kept alive.
    pub stopping: bool,
    /// The worker's access log lines, with `--access-log`.
    pub log: Option<&'a mut Vec<u8>>,
    /// How the connection is woken from outside its worker (a growing
    /// file's next piece).
    pub waiter: Option<super::growing::Waiter<'a>>,
}

/// A client connection, owned by one worker for its whole life.
pub(crate) struct Connection {
    pub stream: TcpStream,
    /// Plain or TLS.
    wire: Wire,
    peer: String,
    remote: IpAddr,
    /// The access log's entry of the response under way, with
    /// `--access-log`.
    entry: Option<Entry>,
    logging: bool,
    /// What sends its bodies after the head, as the log names it.
    body_mechanism: &'static str,
    /// A bearer token may be taken on it: a loopback peer, or TLS.
    private: bool,
    phase: Phase,
    /// Head bytes consumed so far.
    head: Vec<u8>,
    /// When the first byte of the current head arrived.
    head_started: Option<Instant>,
    /// When the connection started, last finished a response or last
    /// moved a byte.
    since: Instant,
    /// Responses sent on it.
    served: u64,
    /// Bytes to send before the body (a head, a short body).
    out: Vec<u8>,
    out_at: usize,
    body: Option<Body>,
    intake: Option<(Intake, Request)>,
    /// Its task in the offload pool, cancelled when dropped.
    waiting: Option<Waiting>,
    keep_alive: bool,
    /// Its bucket for `rate_per_connection`.
    rate: Option<Arc<TokenBucket>>,
    /// Its place in `config.schedule`.
    schedule: Option<Scheduled>,
    /// Waiting for its rate's tokens or its schedule's pause (until
    /// `deadline`), not the socket.
    paced: bool,
    /// When the current wait ends.
    pub deadline: Instant,
    /// The earliest time it is in its worker's timer wheel for.
    pub armed: Option<Instant>,
    /// In its worker's queue of connections to drive again.
    pub queued: bool,
    _admission: Admission,
}

impl Connection {
    /// A connection just accepted (non-blocking already) in the place
    /// `admission` holds; a refused one is answered 503 and closed.
    pub fn new(
        stream: TcpStream,
        peer: SocketAddr,
        shared: &Shared,
        now: Instant,
        admission: Admission,
    ) -> Self {
        let refused = admission.refused;
        let config = &shared.config;
        let wire = Wire::new(config.tls.as_ref().map(|identity| &identity.config));
        let failed = wire.is_err();
        let wire = wire.unwrap_or_else(|_| Wire::plain());
        wire.ready_socket(&stream);
        let mechanism = body_mechanism(shared, wire.is_tls());
        let mut connection = Connection {
            stream,
            private: peer.ip().is_loopback() || wire.is_tls(),
            wire,
            peer: format!("client {peer}"),
            remote: peer.ip(),
            entry: None,
            logging: config.access_log.is_some(),
            body_mechanism: mechanism,
            phase: Phase::Head,
            head: Vec::new(),
            head_started: None,
            since: now,
            served: 0,
            out: Vec::new(),
            out_at: 0,
            body: None,
            intake: None,
            waiting: None,
            keep_alive: true,
            rate: config
                .rate_per_connection
                .map(|rate| Arc::new(super::shared::rate_bucket(rate, config.max_chunk, now))),
            schedule: config.schedule.map(|schedule| {
                let chunk = config.chunk.unwrap_or(super::body::DEFAULT_READ);
                Scheduled::new(schedule, chunk as u64)
            }),
            paced: false,
            deadline: after(now, config.head_timeout),
            armed: None,
            queued: false,
            _admission: admission,
        };
        if refused {
            connection.refuse(503, "too many connections; try again shortly");
        }
        if failed {
            // rustls refused to start a session: nothing can be said to
            // this client in plaintext.
            eprintln!(
                "flexio serve: {}: no TLS session could be made",
                connection.peer
            );
            connection.phase = Phase::Drain;
            connection.deadline = now;
        }
        connection
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }

    fn link(&mut self) -> Link<'_> {
        Link {
            stream: &self.stream,
            wire: &mut self.wire,
        }
    }

    /// Answers `status` with `message` and closes (gracefully).
    pub fn refuse(&mut self, status: u16, message: &str) {
        if self.logging && self.entry.is_none() && !self.head.is_empty() {
            self.entry = Some(Entry::unparsed(self.remote, &self.head));
        }
        self.out = closing_response(status, message);
        if let Some(entry) = self.entry.as_mut() {
            entry.response(&self.out);
        }
        self.out_at = 0;
        self.body = None;
        self.intake = None;
        self.keep_alive = false;
        self.phase = Phase::Send;
    }

    /// Responses sent on it.
    pub fn served(&self) -> u64 {
        self.served
    }

    /// Whether it waits for a request that has not begun: closed at once
    /// when the server stops.
    pub fn idle(&self) -> bool {
        self.phase == Phase::Head && self.head.is_empty()
    }

    /// Moves it on as far as it goes now.
    pub fn drive(&mut self, tools: &mut Tools<'_>) -> Next {
        loop {
            let next = match self.phase {
                Phase::Head => self.read_head(tools),
                Phase::Upload => self.read_upload(tools),
                Phase::Offloaded => self.await_offload(tools.shared),
                Phase::Send => self.send(tools),
                Phase::Drain => self.drain(tools.shared),
            };
            if let Some(next) = next {
                return next;
            }
        }
    }

    /// Its deadline passed (or not yet: the wheel's entry was stale).
    pub fn expire(&mut self, now: Instant, tools: &mut Tools<'_>) -> Next {
        if now < self.deadline {
            return Next::Wait;
        }
        if self.paced {
            return self.drive(tools);
        }
        match self.phase {
            // The pool's work has no deadline of its own (a large file
            // hashes for as long as it takes); the client's closing ends
            // the wait.
            Phase::Offloaded => {
                let send_timeout = tools.shared.config.send_timeout;
                self.wait_until(after(now, send_timeout))
                    .unwrap_or(Next::Wait)
            }
            // A TLS handshake not done by the head deadline: nothing can
            // be said to that client.
            Phase::Head | Phase::Send if self.wire.handshaking() => Next::Close,
            Phase::Head if self.head_started.is_some() || self.served == 0 => {
                let timeout = tools.shared.config.head_timeout;
                self.refuse(
                    408,
                    &format!("the request head did not arrive within {timeout:?}"),
                );
                self.since = now;
                self.drive(tools)
            }
            // A deadline set for something else passed: a pace's wait the
            // connection went on from when the socket woke it first. It is
            // idle only when nothing has moved for the whole limit.
            Phase::Upload | Phase::Send
                if now < after(self.since, tools.shared.config.send_timeout) =>
            {
                self.drive(tools)
            }
            Phase::Upload | Phase::Send => {
                eprintln!(
                    "flexio serve: {}: nothing moved for {:?}; cut",
                    self.peer, tools.shared.config.send_timeout
                );
                Next::Close
            }
            Phase::Head | Phase::Drain => Next::Close,
        }
    }

    /// Waits until `at` at most.
    fn wait_until(&mut self, at: Instant) -> Option<Next> {
        self.deadline = at;
        Some(Next::Wait)
    }

    fn read_head(&mut self, tools: &mut Tools<'_>) -> Option<Next> {
        if tools.stopping && self.head.is_empty() {
            return Some(Next::Close);
        }
        let config = &tools.shared.config;
        let mut link = Link {
            stream: &self.stream,
            wire: &mut self.wire,
        };
        match step_from(&mut link, &mut self.head, request_complete) {
            Ok(Step::Complete) => {
                let mut head = std::mem::take(&mut self.head);
                self.head_started = None;
                match Request::parse(&head) {
                    Ok(request) => {
                        if self.logging {
                            self.entry = Some(Entry::new(self.remote, &request));
                        }
                        let peer = Peer {
                            name: &self.peer,
                            private: self.private,
                        };
                        let response = respond::answer(tools.shared, &request, &peer);
                        self.take(response, request, tools);
                    }
                    Err(why) => {
                        if self.logging {
                            self.entry = Some(Entry::unparsed(self.remote, &head));
                        }
                        self.refuse(400, &why)
                    }
                }
                // Its room is the next request's.
                head.clear();
                self.head = head;
                None
            }
            Ok(Step::Partial) => {
                self.head_started.get_or_insert_with(Instant::now);
                None
            }
            Ok(Step::WouldBlock) => {
                if self.head.is_empty() {
                    // The wire reads with room for a whole head: an idle
                    // connection gives its buffers back (10 000 idle
                    // connections would hold 160 MiB).
                    self.head = Vec::new();
                    self.wire.shrink();
                }
                let deadline = match self.head_started {
                    Some(started) => after(started, config.head_timeout),
                    None if self.served == 0 => after(self.since, config.head_timeout),
                    None => after(self.since, config.idle_timeout),
                };
                self.wait_until(deadline)
            }
            Ok(Step::TooLarge) => {
                self.refuse(
                    431,
                    &format!(
                        "the request head is over {} bytes or {} header lines",
                        crate::head::MAX_HEAD,
                        crate::head::MAX_HEADERS
                    ),
                );
                None
            }
            Ok(Step::Malformed(why)) => {
                self.refuse(400, &format!("malformed request head: {why}"));
                None
            }
            Ok(Step::Closed) | Err(_) => Some(Next::Close),
        }
    }

    /// Takes a handler's answer: work for the offload pool, an upload's
    /// body to read first, or the response to send.
    fn take(&mut self, mut response: Response, request: Request, tools: &mut Tools<'_>) {
        if let Some((lane, work)) = response.pending.take() {
            let ask = Ask {
                request,
                private: self.private,
                peer: self.peer.clone(),
                token: tools.token,
                mailbox: Arc::clone(tools.mailbox),
            };
            match tools.shared.offload.submit(lane, |_| ask.job(work)) {
                Ok(waiting) => {
                    self.waiting = Some(waiting);
                    self.since = Instant::now();
                    self.phase = Phase::Offloaded;
                }
                Err(queued) => self.refuse(
                    503,
                    &format!(
                        "the server is busy: {queued} long tasks (manifests, tar walks, listings, upload journals) wait already; try again shortly"
                    ),
                ),
            }
            return;
        }
        let stopping = tools.stopping;
        self.out = response.out;
        self.out_at = 0;
        self.body = response.body;
        if let Some(entry) = self.entry.as_mut() {
            if response.intake.is_some() {
                // Only `100 Continue` so far: no status, no body.
                entry.head_length = usize::MAX;
            } else {
                entry.response(&self.out);
                entry.mechanism = self.body.as_ref().map(|_| self.body_mechanism);
            }
        }
        if let Some(schedule) = self.schedule.as_mut() {
            schedule.start_body();
        }
        self.keep_alive = response.keep_alive && !stopping;
        self.since = Instant::now();
        match response.intake {
            Some(intake) => {
                self.intake = Some((intake, request));
                self.phase = Phase::Upload;
            }
            None => self.phase = Phase::Send,
        }
    }

    fn read_upload(&mut self, tools: &mut Tools<'_>) -> Option<Next> {
        let send_timeout = tools.shared.config.send_timeout;
        match self.flush_out(false) {
            Err(_) => return Some(Next::Close),
            Ok(false) => return self.wait_until(after(self.since, send_timeout)),
            Ok(true) => {}
        }
        let budget = tools.shared.config.max_chunk.max(1);
        let (intake, _) = self.intake.as_mut().expect("an upload has its intake");
        let before = intake.at;
        let mut link = Link {
            stream: &self.stream,
            wire: &mut self.wire,
        };
        let pumped = intake.pump(&mut link, tools.scratch, budget);
        if intake.at > before {
            self.since = Instant::now();
        }
        match pumped {
            Ok(Pumped::Done) => {
                let (intake, request) = self.intake.take().expect("taken once");
                let peer = Peer {
                    name: &self.peer,
                    private: self.private,
                };
                let response = respond::finish_upload(tools.shared, &request, &peer, intake);
                self.take(response, request, tools);
                None
            }
            Ok(Pumped::Blocked) => self.wait_until(after(self.since, send_timeout)),
            Ok(Pumped::TurnOver) => Some(Next::Yield),
            Err(IntakeError::Client(why)) => {
                if let Some((intake, request)) = &self.intake {
                    eprintln!(
                        "flexio serve: {} {} for {}: {why}; {} not written",
                        request.method, request.target, self.peer, intake.label
                    );
                }
                Some(Next::Close)
            }
            Err(IntakeError::Write(status, why)) => {
                // What is left of the body is drained after the answer.
                self.refuse(status, &why);
                None
            }
        }
    }

    /// The offload pool's answer: sent as a handler's would be.
    pub fn resume(&mut self, response: Response, request: Request, tools: &mut Tools<'_>) -> Next {
        if self.phase != Phase::Offloaded {
            return Next::Wait;
        }
        self.waiting = None;
        self.take(response, request, tools);
        self.drive(tools)
    }

    /// While the pool works: a client that closed cancels the work (its
    /// `Waiting` goes with the connection); bytes it sent ahead (a next
    /// request) wait in the socket, or the wire's buffer, for the head to
    /// be read.
    fn await_offload(&mut self, shared: &Shared) -> Option<Next> {
        if self.wire.holds_ahead() {
            return self.wait_until(after(Instant::now(), shared.config.send_timeout));
        }
        let mut probe = [0u8; 1];
        let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
        loop {
            match rustix::net::recv(self.fd(), &mut probe, flags) {
                Ok((0, _)) => return Some(Next::Close),
                Ok(_) | Err(Errno::AGAIN) => {
                    return self.wait_until(after(Instant::now(), shared.config.send_timeout))
                }
                Err(Errno::INTR) => {}
                Err(_) => return Some(Next::Close),
            }
        }
    }

    /// Sends the bytes left before the body; whether all are out. With a
    /// body after them, with `MSG_MORE`, so that TCP sends a head in one
    /// segment with the body's first bytes (nginx's `tcp_nopush`): for a
    /// 4 KiB file that halves the segments and the reader's wake-ups.
    fn flush_out(&mut self, more: bool) -> std::io::Result<bool> {
        while self.out_at < self.out.len() {
            let mut link = Link {
                stream: &self.stream,
                wire: &mut self.wire,
            };
            match link.send(&self.out[self.out_at..], more) {
                Ok(n) => {
                    if let Some(entry) = self.entry.as_mut() {
                        entry.sent_out(self.out_at, self.out_at + n);
                    }
                    self.out_at += n;
                    self.since = Instant::now();
                }
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => return Ok(false),
                Err(errno) => return Err(errno.into()),
            }
        }
        self.out.clear();
        self.out_at = 0;
        Ok(true)
    }

    fn send(&mut self, tools: &mut Tools<'_>) -> Option<Next> {
        let shared = tools.shared;
        let now = Instant::now();
        let rate = self.rate.clone();
        let buckets = [rate.as_deref(), shared.total_rate.as_deref()];
        if self.body.is_some() {
            if let Some(ends) = self.schedule_pause(shared, now) {
                self.paced = true;
                return self.wait_until(ends);
            }
            // Out of debt is enough (see `Transfer::next_len`): a late
            // wake-up stays credit.
            let wait = buckets.iter().flatten().map(|b| b.delay(now)).max();
            if let Some(wait) = wait.filter(|wait| !wait.is_zero()) {
                self.paced = true;
                return self.wait_until(after(now, wait));
            }
        }
        self.paced = false;
        let send_timeout = shared.config.send_timeout;
        match self.flush_out(self.body.is_some()) {
            Err(_) => return Some(Next::Close),
            Ok(false) => return self.wait_until(after(self.since, send_timeout)),
            Ok(true) => {}
        }
        if let Some(body) = self.body.as_mut() {
            let mut budget = shared.config.max_chunk.max(1);
            for bucket in buckets.iter().flatten() {
                budget = budget.min(bucket.burst());
            }
            if let Some(schedule) = &self.schedule {
                budget = budget.min(schedule.room());
            }
            let mut link = Link {
                stream: &self.stream,
                wire: &mut self.wire,
            };
            let sent = body.send_turn(shared, &mut link, &self.peer, budget, tools.waiter);
            let (bytes, turn) = match sent {
                Ok(sent) => sent,
                Err(error) => {
                    // The response is cut short: the client sees the
                    // connection close before Content-Length bytes.
                    eprintln!("flexio serve: {}: {error}", self.peer);
                    return Some(Next::Close);
                }
            };
            if bytes > 0 {
                if let Some(entry) = self.entry.as_mut() {
                    entry.sent_body(bytes);
                }
                let now = Instant::now();
                self.since = now;
                for bucket in buckets.iter().flatten() {
                    bucket.charge(bytes, now);
                }
            }
            if let Some(schedule) = self.schedule.as_mut() {
                let done = turn == Turn::Done;
                if let Some(ends) = schedule.sent(bytes, done, Instant::now(), &shared.scheduled) {
                    self.paced = true;
                    return self.wait_until(ends);
                }
            }
            match turn {
                Turn::Done => self.body = None,
                Turn::Blocked => return self.wait_until(after(self.since, send_timeout)),
                Turn::Over => return Some(Next::Yield),
            }
        }
        // Over TLS the last records leave the session (and close_notify
        // with them when closing) before the response counts as sent and
        // before the socket is shut down.
        let closing = !self.keep_alive || tools.stopping;
        let flushed = if closing {
            self.link().close()
        } else {
            self.link().flush()
        };
        match flushed {
            Ok(()) => {}
            Err(Errno::AGAIN) => return self.wait_until(after(self.since, send_timeout)),
            Err(_) => return Some(Next::Close),
        }
        self.served += 1;
        self.since = Instant::now();
        self.log_entry(tools.log.as_deref_mut());
        if closing {
            if rustix::net::shutdown(self.fd(), rustix::net::Shutdown::Write).is_err() {
                return Some(Next::Close);
            }
            self.phase = Phase::Drain;
        } else {
            // The next request is read on the connection's next turn, after
            // the worker's other connections ready now, as nginx reads
            // one only on its socket's next event. Read at once, a client
            // on the other core whose next request is always there by
            // then keeps the worker for itself: traced at 4 KiB × 4, one
            // drive served 10 responses or more in a row for milliseconds
            // while the worker's other connection waited (the p99 tail).
            self.phase = Phase::Head;
            return Some(Next::Yield);
        }
        None
    }

    /// Appends the access log's line of the response under way, if one
    /// (one cut short says the bytes it got to).
    pub fn log_entry(&mut self, lines: Option<&mut Vec<u8>>) {
        if let (Some(entry), Some(lines)) = (self.entry.take(), lines) {
            entry.write(lines, std::time::SystemTime::now());
        }
    }

    /// When its schedule's pause ends, if one is in force at `now`; once
    /// it is over, the send timeout counts from `now` (the pause was the
    /// server's, not the client's).
    fn schedule_pause(&mut self, shared: &Shared, now: Instant) -> Option<Instant> {
        let schedule = self.schedule.as_mut()?;
        let was_paused = self.paced;
        let ends = schedule.paused_until(now, &shared.scheduled);
        if ends.is_none() && was_paused {
            self.since = now;
        }
        ends
    }

    /// Reads and drops what a closing connection's client still sends.
    fn drain(&mut self, shared: &Shared) -> Option<Next> {
        let mut scratch = [0u8; 16 * 1024];
        for _ in 0..16 {
            match self.link().recv(&mut scratch) {
                Ok(0) => return Some(Next::Close),
                Ok(_) => {}
                Err(Errno::AGAIN) => {
                    return self.wait_until(after(self.since, shared.config.head_timeout))
                }
                Err(Errno::INTR) => {}
                Err(_) => return Some(Next::Close),
            }
        }
        // 256 KiB in one go: not a client finishing a request; cut it.
        Some(Next::Close)
    }
}

/// What sends a body after its head: rustls over TLS (whatever `--via`),
/// the block cache with `--cache`, else the mechanism.
fn body_mechanism(shared: &Shared, tls: bool) -> &'static str {
    if tls {
        "rustls"
    } else if shared.cache.is_some() {
        "cache"
    } else {
        match shared.config.mechanism {
            flexio::MechanismName::Auto => "sendfile",
            other => other.as_str(),
        }
    }
}

/// An offloaded task's answer, for connection `token` of the worker.
pub(crate) struct Done {
    pub token: u64,
    pub request: Request,
    pub response: Response,
}

/// What a connection hands the offload pool with its work.
struct Ask {
    request: Request,
    private: bool,
    peer: String,
    token: u64,
    mailbox: Arc<Mailbox<Done>>,
}

impl Ask {
    /// The pool's job: runs `work` as a handler runs and posts its answer
    /// to the worker's mailbox, unless nobody waits for it any more.
    fn job(self, work: Work) -> super::offload::Job<Shared> {
        Box::new(move |shared: &Shared, cancel: &Cancel| {
            if let Some(response) = self.run(shared, work, cancel)
                && !cancel.cancelled()
            {
                self.mailbox.post(Done {
                    token: self.token,
                    request: self.request,
                    response,
                });
            }
        })
    }

    /// Runs `work`: its answer, or a 500 saying what failed (a panic too,
    /// which must not take the pool's thread with it); `None` when it
    /// stopped because nobody waits for it.
    fn run(&self, shared: &Shared, work: Work, cancel: &Cancel) -> Option<Response> {
        use std::panic::{catch_unwind, AssertUnwindSafe};
        let peer = Peer {
            name: &self.peer,
            private: self.private,
        };
        let answered = catch_unwind(AssertUnwindSafe(|| {
            let mut exchange = Exchange::new(shared, &self.request, self.private);
            work(&mut exchange, cancel).map(|keep_alive| exchange.into_response(keep_alive))
        }));
        Some(match answered {
            Ok(Ok(response)) => response,
            Ok(Err(_)) if cancel.cancelled() => return None,
            Ok(Err(error)) => respond::failed(shared, &self.request, &peer, &error),
            Err(_) => respond::failed(
                shared,
                &self.request,
                &peer,
                &std::io::Error::other("the offloaded work panicked"),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::TcpListener;
    use std::time::Duration;

    use super::*;
    use crate::server::config::ServeConfig;

    /// A connection just accepted from a client over loopback, serving
    /// `dir`: the connection, its client, and what the worker would lend it.
    fn connected(dir: &std::path::Path) -> (Connection, TcpStream, Shared) {
        let root = rustix::fs::open(
            dir,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let shared = Shared::new(ServeConfig::new(dir.into()), root, None, None);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (stream, peer) = listener.accept().unwrap();
        stream.set_nonblocking(true).unwrap();
        let admission = shared.admit(1, 0).unwrap();
        let connection = Connection::new(stream, peer, &shared, Instant::now(), admission);
        (connection, client, shared)
    }

    /// A connection in the middle of sending `out`, its client, and what
    /// the worker would lend it.
    fn sending(out: &[u8]) -> (Connection, TcpStream, Shared) {
        let dir = tempfile::tempdir().unwrap();
        let (mut connection, client, shared) = connected(dir.path());
        connection.phase = Phase::Send;
        connection.out = out.to_vec();
        connection.keep_alive = false;
        (connection, client, shared)
    }

    /// Runs `step` on `connection` with what its worker would lend it.
    fn with_tools(
        connection: &mut Connection,
        shared: &Shared,
        step: impl FnOnce(&mut Connection, &mut Tools<'_>) -> Next,
    ) -> Next {
        let mut scratch = [0u8; 64];
        let mailbox = Arc::new(Mailbox::new(Arc::new(
            rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).unwrap(),
        )));
        let mut tools = Tools {
            shared,
            token: 0,
            mailbox: &mailbox,
            scratch: &mut scratch,
            stopping: false,
            log: None,
            waiter: None,
        };
        step(connection, &mut tools)
    }

    fn expire(connection: &mut Connection, shared: &Shared, now: Instant) -> Next {
        with_tools(connection, shared, |connection, tools| {
            connection.expire(now, tools)
        })
    }

    #[test]
    fn a_keep_alive_connection_gives_its_worker_back_after_each_response() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("small.bin"), vec![7u8; 4096]).unwrap();
        let (mut connection, mut client, shared) = connected(dir.path());
        // A client whose next request is always there when a response
        // ends (here: three at once) must not hold the worker from its
        // other connections: one response per turn.
        let request = b"GET /small.bin HTTP/1.1\r\nHost: x\r\n\r\n";
        std::io::Write::write_all(&mut client, &request.repeat(3)).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        for served in 1..=3 {
            let next = with_tools(&mut connection, &shared, Connection::drive);
            assert_eq!(next, Next::Yield, "after response {served}");
            assert_eq!(connection.served(), served);
        }
        let next = with_tools(&mut connection, &shared, Connection::drive);
        assert_eq!(next, Next::Wait, "nothing more asked");
        assert_eq!(connection.served(), 3);
    }

    #[test]
    fn a_stale_deadline_does_not_cut_a_connection_that_moved_within_its_limit() {
        let response = b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
        let (mut connection, mut client, shared) = sending(response);
        let now = Instant::now();
        // A pace's wait that passed while the socket woke the connection
        // first; its last bytes moved just now.
        connection.deadline = now - Duration::from_millis(1);
        connection.since = now;
        let next = expire(&mut connection, &shared, now);
        assert!(!matches!(next, Next::Close), "cut while moving");
        let mut received = Vec::new();
        client.read_to_end(&mut received).unwrap();
        assert_eq!(received, response, "the response went on and ended");
    }

    #[test]
    fn a_connection_that_moved_nothing_for_its_limit_is_cut() {
        let (mut connection, _client, shared) = sending(b"HTTP/1.1 204 No Content\r\n\r\n");
        let now = Instant::now();
        connection.since = now - shared.config.send_timeout - Duration::from_millis(1);
        connection.deadline = after(connection.since, shared.config.send_timeout);
        assert!(matches!(expire(&mut connection, &shared, now), Next::Close));
    }
}
