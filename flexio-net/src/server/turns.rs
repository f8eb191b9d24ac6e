//! File bodies sent in turns, so that many connections share the workers
//! fairly and rate limits never put a worker to sleep.
//!
//! A body worker (see [`super::worker`]) sends at most one turn of a body
//! — `max_chunk` bytes, or a burst of the connection's rate, whichever is
//! smaller (nginx's `sendfile_max_chunk`) — and puts the connection back
//! at the end of the body workers' queue, so long bodies share those
//! workers turn by turn. New requests have their own queue and workers:
//! a 4 KiB request waits for no turn at all.
//! When the connection's bucket (`--rate-per-client`) or the server's
//! (`--rate-total`) is in debt, the connection is handed to the event loop
//! instead, which queues it again when its tokens are due; the worker goes
//! on with other connections.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use flexio::range::{Mover, RangeEnd, RangeRequest};
use flexio::EndpointKind;

use super::{Connection, Shared};

/// A body still being sent.
pub(crate) struct Body {
    pub file: OwnedFd,
    /// The file's name, for messages.
    pub label: String,
    /// The next byte of the file to send.
    pub next: u64,
    /// One past the last byte to send.
    pub end: u64,
    /// Whether the connection lives on once the body is sent.
    pub keep_alive: bool,
    /// The request line, for messages.
    pub request: String,
}

/// A connection waiting for its tokens, and when they are due.
pub(crate) struct Deferred {
    pub due: Instant,
    pub connection: Connection,
}

/// The bytes the next turn may move.
fn turn_len(shared: &Shared, connection: &Connection, left: u64) -> u64 {
    let mut turn = shared.config.max_chunk.max(1);
    for bucket in [connection.rate.as_ref(), shared.total_rate.as_ref()]
        .into_iter()
        .flatten()
    {
        turn = turn.min(bucket.burst());
    }
    turn.min(left)
}

/// How long until `connection` may send its next turn (zero: now).
fn delay(shared: &Shared, connection: &Connection, now: Instant) -> Duration {
    [connection.rate.as_ref(), shared.total_rate.as_ref()]
        .into_iter()
        .flatten()
        // Out of debt is enough (see `Transfer::next_len`): the event
        // loop's late wake-ups stay credit.
        .map(|bucket| bucket.delay(now))
        .max()
        .unwrap_or(Duration::ZERO)
}

/// Sends one turn of `connection`'s body, then queues the connection again
/// (at the back, or in the event loop's deferred set when its tokens are
/// not yet due), or finishes the response.
pub(crate) fn take_turn(
    shared: &Shared,
    mut connection: Connection,
    mover: &mut Mover,
    turns: &Sender<Connection>,
) {
    let now = Instant::now();
    let wait = delay(shared, &connection, now);
    if !wait.is_zero() {
        shared.defer(Deferred {
            due: now + wait,
            connection,
        });
        return;
    }
    let body = connection
        .body
        .as_ref()
        .expect("a turn is taken for a body");
    let length = turn_len(shared, &connection, body.end - body.next);
    let source = RangeEnd::with_kind(body.file.as_fd(), EndpointKind::File, body.label.clone());
    let sink = RangeEnd::with_kind(
        connection.stream.as_fd(),
        EndpointKind::Tcp,
        connection.peer.clone(),
    );
    let mut request = RangeRequest::new(body.next, 0, Some(length)).via(shared.config.mechanism);
    request.idle_timeout = Some(shared.config.send_timeout);
    // With `--cache`, the turn is read through the block cache and written
    // from it (`cached_body`); a file it cannot take goes the usual way.
    let cached = match &shared.cache {
        Some(cache) => super::cached_body::send_range(
            cache,
            &body.file,
            &body.label,
            &connection.stream,
            body.next,
            length,
        )
        .map_err(|e| e.to_string()),
        None => Ok(false),
    };
    let moved = match cached {
        Ok(true) => Ok(length),
        Ok(false) => mover
            .move_range(&source, &sink, &request, None)
            .map(|report| {
                for fallback in &report.fallbacks {
                    eprintln!("flexio serve: {}: fell back: {fallback:?}", body.label);
                }
                report.bytes
            })
            .map_err(|e| e.to_string()),
        Err(error) => Err(error),
    };
    let bytes = match moved {
        Ok(bytes) => bytes,
        Err(error) => {
            eprintln!(
                "flexio serve: {} for {}: {error}",
                body.request, connection.peer
            );
            connection.body = None;
            shared.close(connection);
            return;
        }
    };
    let now = Instant::now();
    for bucket in [connection.rate.as_ref(), shared.total_rate.as_ref()]
        .into_iter()
        .flatten()
    {
        bucket.charge(bytes, now);
    }
    let body = connection.body.as_mut().expect("still there");
    body.next += bytes;
    if body.next >= body.end {
        let keep_alive = body.keep_alive;
        connection.body = None;
        finish(shared, connection, keep_alive);
        return;
    }
    if connection.rate.is_some() || shared.total_rate.is_some() {
        // Under a rate, every next turn goes through the event loop's
        // deferred list, in order: a connection that just sent cannot take
        // the shared tokens again before one that has been waiting.
        let due = now + delay(shared, &connection, now);
        shared.defer(Deferred { due, connection });
        return;
    }
    // Behind everything queued meanwhile; a send fails only when every
    // worker is gone.
    let _ = turns.send(connection);
}

/// Ends a response: parks a kept-alive connection for its next request,
/// else closes it.
pub(crate) fn finish(shared: &Shared, mut connection: Connection, keep_alive: bool) {
    connection.served += 1;
    if keep_alive {
        connection.since = Instant::now();
        connection.head_started = None;
        let _ = shared.park(connection);
    } else {
        shared.close(connection);
    }
}
