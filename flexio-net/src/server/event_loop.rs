//! The event loop: accepts connections into the connections' epoll set,
//! enforces the head deadline and the idle timeout, and hands the due
//! turns of rate-limited bodies to the body workers. The request workers
//! wait on the connections' set and read request heads without blocking
//! ([`read_head`]: peeked and consumed by [`crate::head::step`], so a body
//! or a pipelined request stays in the socket).
//!
//! A connection is registered `EPOLLONESHOT`: after an event it is owned
//! by whoever took it out of the table (a worker, or this loop's sweep)
//! until it is parked again.

use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rustix::buffer::spare_capacity;
use rustix::event::{epoll, Timespec};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};

use super::request::{closing_response, Request};
use super::turns::TurnQueue;
use super::{Connection, Shared};
use crate::error::{Error, Result};
use crate::head::{request_complete, step, Step};

/// The listener's token (connections count up from 0).
const LISTENER: u64 = u64::MAX;

/// How often deadlines are checked.
const SWEEP_EVERY: Duration = Duration::from_millis(200);

/// The wake-up eventfd's token.
const WAKE: u64 = u64::MAX - 1;

pub(crate) fn run(shared: &Shared, listener: &TcpListener, turns: &TurnQueue) -> Result<()> {
    // The loop's own set: the listener and the wake-up. Connections are in
    // `shared.epoll`, which the request workers wait on.
    let control = epoll::create(epoll::CreateFlags::CLOEXEC)
        .map_err(|e| Error::io("epoll_create", "event loop", None, e))?;
    epoll::add(
        &control,
        listener,
        epoll::EventData::new_u64(LISTENER),
        epoll::EventFlags::IN,
    )
    .map_err(|e| Error::io("epoll_ctl", "listener", None, e))?;
    epoll::add(
        &control,
        &shared.wake,
        epoll::EventData::new_u64(WAKE),
        epoll::EventFlags::IN,
    )
    .map_err(|e| Error::io("epoll_ctl", "eventfd", None, e))?;
    let mut events = Vec::with_capacity(4);
    let mut last_sweep = Instant::now();
    loop {
        events.clear();
        let next_due = requeue_due(shared, turns);
        let wait = next_due.map_or(SWEEP_EVERY, |due| due.min(SWEEP_EVERY));
        let tick = Timespec::try_from(wait).expect("a small duration fits a timespec");
        match epoll::wait(&control, spare_capacity(&mut events), Some(&tick)) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(errno) => return Err(Error::io("epoll_wait", "event loop", None, errno)),
        }
        for event in &events {
            match event.data.u64() {
                LISTENER => accept_all(shared, listener),
                _ => {
                    let mut count = [0u8; 8];
                    let _ = rustix::io::read(&shared.wake, &mut count);
                }
            }
        }
        if last_sweep.elapsed() >= SWEEP_EVERY {
            sweep(shared);
            last_sweep = Instant::now();
        }
    }
}

/// Queues again every deferred connection whose tokens are due; returns
/// how long until the next one is.
fn requeue_due(shared: &Shared, turns: &TurnQueue) -> Option<Duration> {
    let now = Instant::now();
    let mut deferred = shared.deferred.lock().unwrap();
    for due in deferred.extract_if(.., |waiting| waiting.due <= now) {
        turns.push(due.connection);
    }
    deferred
        .iter()
        .map(|waiting| waiting.due.saturating_duration_since(now))
        .min()
}

/// Accepts every pending connection; past the limit, answers 503 and
/// closes.
fn accept_all(shared: &Shared, listener: &TcpListener) {
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(error) => {
                // Out of descriptors or memory: say so and let the backlog
                // wait rather than spin on a level-triggered listener.
                eprintln!("flexio serve: accept: {error}");
                std::thread::sleep(Duration::from_millis(50));
                return;
            }
        };
        if shared.live.load(Ordering::Relaxed) >= shared.config.max_connections {
            let bytes = closing_response(503, "too many connections; try again shortly");
            let _ = rustix::net::send(&stream, &bytes, SendFlags::DONTWAIT | SendFlags::NOSIGNAL);
            continue;
        }
        let _ = stream.set_nodelay(true);
        // Bodies (sendfile out, splice in) block in the kernel at most this
        // long without progress; the event loop never blocks (DONTWAIT).
        if stream
            .set_write_timeout(Some(shared.config.send_timeout))
            .and_then(|()| stream.set_read_timeout(Some(shared.config.send_timeout)))
            .is_err()
        {
            continue;
        }
        let connection = shared.connection(stream, peer);
        let token = connection.token;
        let mut parked = shared.parked.lock().unwrap();
        let entry = parked.entry(token).insert_entry(connection);
        if epoll::add(
            &shared.epoll,
            &entry.get().stream,
            epoll::EventData::new_u64(token),
            epoll::EventFlags::IN | epoll::EventFlags::RDHUP | epoll::EventFlags::ONESHOT,
        )
        .is_err()
        {
            entry.remove();
        }
    }
}

/// Reads what arrived of `token`'s request head (in a request worker,
/// which an event on the connection woke): a whole head is returned with
/// its connection to be answered; a partial one waits for more.
pub(crate) fn read_head(shared: &Shared, token: u64) -> Option<(Connection, Request)> {
    let mut connection = shared.parked.lock().unwrap().remove(&token)?;
    let fd = std::os::fd::AsFd::as_fd(&connection.stream);
    if connection.closing {
        if drain(fd) {
            let _ = shared.park(connection);
        }
        return None;
    }
    let outcome = step(fd, &mut connection.head, request_complete, true);
    match outcome {
        Ok(Step::Complete) => {
            let head = std::mem::take(&mut connection.head);
            match Request::parse(&head) {
                Ok(request) => return Some((connection, request)),
                Err(why) => send_and_close(shared, connection, 400, &why),
            }
        }
        Ok(Step::Partial | Step::WouldBlock) => {
            connection.head_started.get_or_insert_with(Instant::now);
            let _ = shared.park(connection);
        }
        Ok(Step::TooLarge) => send_and_close(
            shared,
            connection,
            431,
            &format!(
                "the request head is over {} bytes or {} header lines",
                crate::head::MAX_HEAD,
                crate::head::MAX_HEADERS
            ),
        ),
        Ok(Step::Malformed(why)) => send_and_close(
            shared,
            connection,
            400,
            &format!("malformed request head: {why}"),
        ),
        // Closed, or an error: drop the connection (closing it, which also
        // takes it out of the epoll set).
        Ok(Step::Closed) | Err(_) => {}
    }
    None
}

/// Closes connections past their deadline: a head still incomplete after
/// the head timeout gets 408; an idle one is closed silently.
fn sweep(shared: &Shared) {
    let config = &shared.config;
    let expired: Vec<Connection> = shared
        .parked
        .lock()
        .unwrap()
        .extract_if(|_, connection| match connection.head_started {
            _ if connection.closing => connection.since.elapsed() > config.head_timeout,
            Some(started) => started.elapsed() > config.head_timeout,
            None if connection.served == 0 => connection.since.elapsed() > config.head_timeout,
            None => connection.since.elapsed() > config.idle_timeout,
        })
        .map(|(_, connection)| connection)
        .collect();
    for connection in expired {
        if !connection.closing && (connection.head_started.is_some() || connection.served == 0) {
            send_and_close(
                shared,
                connection,
                408,
                &format!(
                    "the request head did not arrive within {:?}",
                    config.head_timeout
                ),
            );
        }
    }
}

/// Sends a short closing response without waiting, then closes
/// gracefully.
fn send_and_close(shared: &Shared, connection: Connection, status: u16, message: &str) {
    let bytes = closing_response(status, message);
    let _ = rustix::net::send(
        &connection.stream,
        &bytes,
        SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
    );
    shared.close(connection);
}

/// Reads and drops what a closing connection's client still sends;
/// whether to keep waiting (false once it closed, failed, or sent more
/// than a closing connection may).
fn drain(socket: std::os::fd::BorrowedFd<'_>) -> bool {
    let mut scratch = [0u8; 16 * 1024];
    for _ in 0..16 {
        match rustix::net::recv(socket, &mut scratch, RecvFlags::DONTWAIT) {
            Ok((0, _)) => return false,
            Ok(_) => {}
            Err(Errno::AGAIN) => return true,
            Err(Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    // 256 KiB in one go: not a client finishing a request; cut it.
    false
}
