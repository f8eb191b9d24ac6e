//! Bodies sent in turns, so that many connections share the workers
//! fairly and rate limits never put a worker to sleep.
//!
//! A body worker (see [`super::worker`]) sends at most one turn of a body
//! — `max_chunk` bytes, or a burst of the connection's rate, whichever is
//! smaller (nginx's `sendfile_max_chunk`) — and puts the connection back
//! at the end of the body workers' queue, so long bodies share those
//! workers turn by turn — when another connection waits there; while none
//! does, it goes on with the next turn itself. New requests have their own
//! workers: a 4 KiB request waits for no turn at all. A body is a list of
//! segments ([`super::body`]): a file's range, or a multipart answer's
//! part heads and ranges, or a `?tar` stream's headers and members, each
//! sent on from where the last turn stopped.
//! When the connection's bucket (`--rate-per-client`) or the server's
//! (`--rate-total`) is in debt, the connection is handed to the event loop
//! instead, which queues it again when its tokens are due; the worker goes
//! on with other connections.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flexio::range::Mover;

use super::worker::BodyPriority;
use super::{Connection, Shared};

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

/// The body workers' queue of turns, counting the connections in it so a
/// body worker can tell whether any other waits for a turn.
#[derive(Clone)]
pub(crate) struct TurnQueue {
    sender: Sender<Connection>,
    waiting: Arc<AtomicUsize>,
    /// Body workers taking turns now.
    busy: Arc<AtomicUsize>,
}

/// The body workers' end of the [`TurnQueue`].
pub(crate) struct TurnReceiver {
    receiver: Mutex<Receiver<Connection>>,
    waiting: Arc<AtomicUsize>,
    busy: Arc<AtomicUsize>,
}

impl TurnQueue {
    /// A queue and the end the body workers take turns from.
    pub fn new() -> (TurnQueue, TurnReceiver) {
        let (sender, receiver) = std::sync::mpsc::channel();
        let (waiting, busy) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        (
            TurnQueue {
                sender,
                waiting: Arc::clone(&waiting),
                busy: Arc::clone(&busy),
            },
            TurnReceiver {
                receiver: Mutex::new(receiver),
                waiting,
                busy,
            },
        )
    }

    /// Queues `connection`'s next turn at the back.
    pub fn push(&self, connection: Connection) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        // Fails only when every body worker is gone.
        if self.sender.send(connection).is_err() {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Whether no connection waits for a turn.
    fn nobody_waits(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) == 0
    }

    /// Whether one body worker alone is taking turns (the caller's) and
    /// none waits.
    fn one_body_alone(&self) -> bool {
        self.busy.load(Ordering::SeqCst) == 1 && self.nobody_waits()
    }
}

impl TurnReceiver {
    /// The next connection whose turn it is, waiting for one; `None` when
    /// the queue is gone. The caller counts as busy until [`Self::done`].
    pub fn next(&self) -> Option<Connection> {
        let connection = self.receiver.lock().unwrap().recv().ok()?;
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        Some(connection)
    }

    /// The caller is done with the connection [`Self::next`] gave it.
    pub fn done(&self) {
        self.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sends turns of `connection`'s body: one, then queues the connection
/// again (at the back, or in the event loop's deferred set when its tokens
/// are not yet due), or finishes the response. While no other connection
/// waits for a turn (every one that wants a turn has a body worker), the
/// next turn follows at once on this worker: handing it over costs a
/// wake-up, a switch and a thread's cold caches per turn — a thousand per
/// GiB — for no one's benefit. A body worker passes its `priority`, set
/// before each turn by whether its body is the only one being sent.
pub(crate) fn take_turn(
    shared: &Shared,
    mut connection: Connection,
    mover: &mut Mover,
    turns: &TurnQueue,
    mut priority: Option<&mut BodyPriority>,
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
    let mut body = connection.body.take().expect("a turn is taken for a body");
    loop {
        if let Some(priority) = priority.as_deref_mut() {
            priority.update(turns.one_body_alone());
        }
        let budget = turn_len(shared, &connection, body.left);
        let sent = body.send_turn(shared, &connection.stream, &connection.peer, mover, budget);
        let bytes = match sent {
            Ok(bytes) => bytes,
            Err(error) => {
                eprintln!(
                    "flexio serve: {} for {}: {error}",
                    body.request, connection.peer
                );
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
        if body.left == 0 {
            finish(shared, connection, body.keep_alive);
            return;
        }
        if connection.rate.is_some() || shared.total_rate.is_some() {
            // Under a rate, every next turn goes through the event loop's
            // deferred list, in order: a connection that just sent cannot
            // take the shared tokens again before one that has been waiting.
            connection.body = Some(body);
            let due = now + delay(shared, &connection, now);
            shared.defer(Deferred { due, connection });
            return;
        }
        if !turns.nobody_waits() {
            // Behind everything queued meanwhile.
            connection.body = Some(body);
            turns.push(connection);
            return;
        }
    }
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
