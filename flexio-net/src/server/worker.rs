//! A worker: one thread with its own epoll set and the connections it
//! accepted, which it alone drives for their whole life (see
//! [`super::connection`]). The listener is in every worker's set with
//! `EPOLLEXCLUSIVE`, so a new connection wakes one worker, and one that is
//! busy is not woken, and it hands a connection to a worker holding
//! fewer ([`super::spread`]); connections are registered edge-triggered
//! for reading and writing once, never re-armed. Deadlines and paced sends
//! wait in the worker's timer wheel ([`super::timers`]). Each worker keeps
//! one upload buffer, made once.

use std::collections::{HashMap, VecDeque};
use std::net::TcpListener;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::buffer::spare_capacity;
use rustix::event::{epoll, Timespec};
use rustix::io::Errno;

use super::access_log::WorkerLog;
use super::affinity;
use super::connection::{Connection, Done, Next, Tools};
use super::growing::{Waiter, Waker};
use super::offload::Mailbox;
use super::shared::Shared;
use super::timers::Wheel;
use super::trace::{Kind, Trace};

/// The listener's token (connections count up from 0).
const LISTENER: u64 = u64::MAX;

/// The wake-up eventfd's token.
const WAKE: u64 = u64::MAX - 1;

/// Connections accepted per wake-up before the others get a turn.
const ACCEPT_BATCH: usize = 64;

/// Bytes of an upload read per `recv`.
const UPLOAD_BUFFER: usize = 256 << 10;

/// The first pause after an accept or epoll_wait error; it doubles up to
/// [`MAX_BACKOFF`] while the error lasts.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Connections past the cap that are answered 503 (and drained) at once,
/// at most; more are closed without a word.
fn refusals(max_connections: usize) -> usize {
    max_connections / 8 + 64
}

/// One worker's state.
pub(crate) struct Worker {
    /// Its place among the server's workers.
    index: usize,
    /// The connections it last said it holds.
    published: usize,
    shared: Arc<Shared>,
    /// Dropped when the server stops: the last worker to let go closes
    /// it, so new clients are refused rather than left in the backlog.
    listener: Option<Arc<TcpListener>>,
    wake: Arc<OwnedFd>,
    /// Where the offload pool leaves answers for this worker's
    /// connections (and wakes it with `wake`).
    mailbox: Arc<Mailbox<Done>>,
    epoll: OwnedFd,
    connections: HashMap<u64, Connection>,
    next_token: u64,
    /// Connections to drive again after this wake-up's events.
    ready: VecDeque<u64>,
    wheel: Wheel,
    scratch: Vec<u8>,
    stopping: bool,
    /// While accepting failed: when to listen again, and the next pause.
    accept_paused: Option<Instant>,
    backoff: Duration,
    /// Its access log lines, handed on once per loop turn.
    log: Option<WorkerLog>,
    /// Connections woken from outside (a growing file's next piece).
    waker: Arc<Waker>,
    /// Its event trace, with `FLEXIO_SERVE_TRACE`.
    trace: Option<Trace>,
    /// When to look again at where its clients' packets arrive, and
    /// what its last looks named.
    follow_at: Instant,
    streak: affinity::Streak,
}

impl Worker {
    /// Worker `index` on `listener`, woken by `wake` when the server
    /// stops or another worker hands it a connection.
    pub fn new(
        index: usize,
        shared: Arc<Shared>,
        listener: Arc<TcpListener>,
        wake: Arc<OwnedFd>,
        log: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    ) -> std::io::Result<Worker> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        epoll::add(
            &epoll,
            &*wake,
            epoll::EventData::new_u64(WAKE),
            epoll::EventFlags::IN,
        )?;
        let waker = Arc::new(Waker::new(Arc::clone(&wake)));
        let worker = Worker {
            index,
            published: 0,
            shared,
            listener: Some(listener),
            mailbox: Arc::new(Mailbox::new(Arc::clone(&wake))),
            wake,
            epoll,
            connections: HashMap::new(),
            next_token: 0,
            ready: VecDeque::new(),
            wheel: Wheel::new(Instant::now()),
            scratch: vec![0; UPLOAD_BUFFER],
            stopping: false,
            accept_paused: None,
            backoff: FIRST_BACKOFF,
            log: log.map(WorkerLog::new),
            waker,
            trace: None,
            follow_at: Instant::now(),
            streak: affinity::Streak::default(),
        };
        worker.listen()?;
        Ok(worker)
    }

    /// The worker recording `trace`, if one.
    pub fn traced(mut self, trace: Option<Trace>) -> Worker {
        self.trace = trace;
        self
    }

    fn note(&mut self, kind: Kind, token: u64, arg: u64) {
        if let Some(trace) = self.trace.as_mut() {
            trace.note(kind, token, arg);
        }
    }

    fn listen(&self) -> std::io::Result<()> {
        let Some(listener) = &self.listener else {
            return Ok(());
        };
        Ok(epoll::add(
            &self.epoll,
            &**listener,
            epoll::EventData::new_u64(LISTENER),
            epoll::EventFlags::IN | epoll::EventFlags::EXCLUSIVE,
        )?)
    }

    /// Serves until the server stops and this worker's connections are
    /// done (or the grace has passed: what is left is dropped).
    pub fn run(mut self) {
        let mut events = Vec::with_capacity(256);
        let mut due = Vec::new();
        let mut wait_failures = 0u32;
        loop {
            let now = Instant::now();
            if let Some(by) = self.shared.stop_by() {
                if !self.stopping {
                    self.stop();
                }
                if self.connections.is_empty() || now >= by {
                    break;
                }
            }
            self.resume_accepting(now);
            if now >= self.follow_at {
                self.follow_clients(now);
            }
            let timeout = self.timeout(now);
            let tick = timeout.map(|t| Timespec::try_from(t).expect("a short wait fits"));
            events.clear();
            let waits = timeout.map_or(u64::MAX, |t| t.as_micros() as u64);
            self.note(Kind::Wait, 0, waits);
            match epoll::wait(&self.epoll, spare_capacity(&mut events), tick.as_ref()) {
                Ok(_) => wait_failures = 0,
                Err(Errno::INTR) => {}
                Err(errno) => {
                    // ENOMEM, or a broken set: say so once, back off, and
                    // go on: the connections and deadlines are all here.
                    if wait_failures == 0 {
                        eprintln!("flexio serve: epoll_wait: {errno}; retrying (logged once)");
                    }
                    wait_failures += 1;
                    std::thread::sleep(FIRST_BACKOFF * wait_failures.min(100));
                }
            }
            self.note(Kind::Woke, 0, events.len() as u64);
            for event in &events {
                let token = event.data.u64();
                let flags = event.flags;
                self.note(Kind::Event, token, u64::from(flags.bits()));
                match token {
                    LISTENER => self.accept_all(),
                    WAKE => {
                        let mut count = [0u8; 8];
                        let _ = rustix::io::read(&*self.wake, &mut count);
                        self.deliver();
                        self.woken();
                        for (stream, peer) in self.shared.spread.take(self.index) {
                            self.adopt(stream, peer);
                        }
                        self.publish();
                    }
                    token => {
                        self.note(Kind::Drive, token, 0);
                        self.with(token, Connection::drive)
                    }
                }
            }
            for _ in 0..self.ready.len() {
                let Some(token) = self.ready.pop_front() else {
                    break;
                };
                if let Some(connection) = self.connections.get_mut(&token) {
                    connection.queued = false;
                }
                self.note(Kind::Drive, token, 1);
                self.with(token, Connection::drive);
            }
            let now = Instant::now();
            self.wheel.expire(now, &mut due);
            for (at, token) in due.drain(..) {
                if let Some(connection) = self.connections.get_mut(&token)
                    && connection.armed == Some(at)
                {
                    connection.armed = None;
                }
                self.note(Kind::Drive, token, 2);
                self.with(token, |connection, tools| connection.expire(now, tools));
            }
            if let Some(log) = self.log.as_mut() {
                log.flush();
            }
        }
        if let Some(mut log) = self.log.take() {
            // Answers cut by the end of the grace are logged as far as
            // they got.
            for connection in self.connections.values_mut() {
                connection.log_entry(Some(&mut log.lines));
            }
            log.close();
        }
        if let Some(trace) = self.trace.take() {
            trace.write();
        }
    }

    /// Hands the offload pool's answers to the connections that wait for
    /// them (one gone since has cancelled its task; a late answer is
    /// dropped).
    fn deliver(&mut self) {
        for done in self.mailbox.take() {
            let Done {
                token,
                request,
                response,
            } = done;
            self.with(token, move |connection, tools| {
                connection.resume(response, request, tools)
            });
        }
    }

    /// How long the next wait may last.
    fn timeout(&self, now: Instant) -> Option<Duration> {
        if !self.ready.is_empty() {
            return Some(Duration::ZERO);
        }
        [
            self.wheel.timeout(now),
            self.accept_paused
                .map(|at| at.saturating_duration_since(now)),
            self.shared
                .stop_by()
                .map(|at| at.saturating_duration_since(now)),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Stops accepting and closes the connections waiting for a request;
    /// the others finish what they are doing and close.
    fn stop(&mut self) {
        self.stopping = true;
        if let Some(listener) = self.listener.take() {
            let _ = epoll::delete(&self.epoll, &*listener);
        }
        self.accept_paused = None;
        let idle: Vec<u64> = self
            .connections
            .iter()
            .filter(|(_, connection)| connection.idle())
            .map(|(token, _)| *token)
            .collect();
        for token in idle {
            self.connections.remove(&token);
        }
        self.publish();
    }

    /// Drives connection `token` with `step` and does what it says next.
    fn with(&mut self, token: u64, step: impl FnOnce(&mut Connection, &mut Tools<'_>) -> Next) {
        let Some(connection) = self.connections.get_mut(&token) else {
            return;
        };
        let served = connection.served();
        let mut tools = Tools {
            shared: &self.shared,
            token,
            mailbox: &self.mailbox,
            scratch: &mut self.scratch,
            stopping: self.stopping,
            log: self.log.as_mut().map(|log| &mut log.lines),
            waiter: Some(Waiter {
                waker: &self.waker,
                token,
            }),
        };
        let next = step(connection, &mut tools);
        if let Some(trace) = self.trace.as_mut() {
            if connection.served() != served {
                trace.note(Kind::Served, token, connection.served());
            }
            trace.note(Kind::Next, token, next as u64);
        }
        match next {
            Next::Wait => {
                if connection.armed.is_none_or(|at| at > connection.deadline) {
                    connection.armed = Some(connection.deadline);
                    self.wheel.add(connection.deadline, token);
                }
            }
            Next::Yield => {
                if !connection.queued {
                    connection.queued = true;
                    self.ready.push_back(token);
                }
            }
            // Closing the descriptor takes it out of the epoll set.
            Next::Close => {
                connection.log_entry(self.log.as_mut().map(|log| &mut log.lines));
                drop(self.connections.remove(&token));
                self.publish();
            }
        }
    }

    /// Queues the connections woken from outside to be driven this turn.
    fn woken(&mut self) {
        for token in self.waker.take() {
            if let Some(connection) = self.connections.get_mut(&token)
                && !connection.queued
            {
                connection.queued = true;
                self.ready.push_back(token);
            }
        }
    }

    /// Pins the worker to its clients' CPU, or lets it float
    /// ([`super::affinity`]).
    fn follow_clients(&mut self, now: Instant) {
        self.follow_at = now + affinity::FOLLOW_EVERY;
        let Some(affinity) = &self.shared.affinity else {
            return;
        };
        let arrivals: Vec<usize> = self
            .connections
            .values()
            .take(affinity::SAMPLED)
            .filter_map(|c| rustix::net::sockopt::socket_incoming_cpu(&c.stream).ok())
            .map(|cpu| cpu as usize)
            .collect();
        if let Some(place) = affinity.choose(self.index, &arrivals, &mut self.streak) {
            // Refused (a CPU gone offline): recorded floating, and
            // looked at again next time.
            let _ = affinity.apply(self.index, place);
        }
    }

    /// Listens again once a pause after an accept error is over.
    fn resume_accepting(&mut self, now: Instant) {
        if self.accept_paused.is_some_and(|at| at <= now) && !self.stopping {
            self.accept_paused = None;
            if self.listen().is_err() {
                self.pause_accepting(now);
            }
        }
    }

    fn pause_accepting(&mut self, now: Instant) {
        if let Some(listener) = &self.listener {
            let _ = epoll::delete(&self.epoll, &**listener);
        }
        self.accept_paused = Some(now + self.backoff);
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Accepts pending connections; past the cap, answers 503.
    fn accept_all(&mut self) {
        for _ in 0..ACCEPT_BATCH {
            let Some(listener) = &self.listener else {
                return;
            };
            let (stream, peer) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(error) => {
                    let errno = Errno::from_io_error(&error);
                    if matches!(errno, Some(Errno::CONNABORTED | Errno::INTR)) {
                        continue;
                    }
                    // Out of descriptors or memory: say so once, stop
                    // listening for a while rather than spin on a
                    // level-triggered listener, and listen again.
                    if !self.shared.accept_failing.swap(true, Ordering::Relaxed) {
                        eprintln!(
                            "flexio serve: accept: {error}; backing off until it recovers (logged once)"
                        );
                    }
                    self.pause_accepting(Instant::now());
                    return;
                }
            };
            self.backoff = FIRST_BACKOFF;
            if self.shared.accept_failing.swap(false, Ordering::Relaxed) {
                eprintln!("flexio serve: accept works again");
            }
            match self.shared.spread.place(self.index) {
                Some(to) => {
                    if let Some((stream, peer)) = self.shared.spread.hand(to, (stream, peer)) {
                        self.adopt(stream, peer);
                    }
                }
                None => self.adopt(stream, peer),
            }
            self.publish();
        }
    }

    /// Says how many connections it holds, for the others' hand-overs
    /// and the server handle's count by worker.
    fn publish(&mut self) {
        let now = self.connections.len();
        self.shared.spread.count(self.index, self.published, now);
        self.published = now;
    }

    fn adopt(&mut self, stream: std::net::TcpStream, peer: std::net::SocketAddr) {
        let max = self.shared.config.max_connections;
        let Some(admission) = self.shared.admit(max, refusals(max)) else {
            return;
        };
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        let _ = stream.set_nodelay(true);
        let token = self.next_token;
        self.next_token += 1;
        let connection = Connection::new(stream, peer, &self.shared, Instant::now(), admission);
        let flags = epoll::EventFlags::IN
            | epoll::EventFlags::OUT
            | epoll::EventFlags::RDHUP
            | epoll::EventFlags::ET;
        if epoll::add(
            &self.epoll,
            &connection.stream,
            epoll::EventData::new_u64(token),
            flags,
        )
        .is_err()
        {
            return;
        }
        self.connections.insert(token, connection);
        self.with(token, Connection::drive);
    }
}
