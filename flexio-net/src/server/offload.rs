//! The offload pool (nginx's thread tasks): work that may block for long —
//! hashing a file for its manifest, walking a tree, listing a large
//! directory, a ranged upload's journal — runs on a few threads of its
//! own instead of the worker's. A handler leaves it as pending [`Work`];
//! the connection hands it to the pool and waits in its own phase,
//! holding no thread; the answer comes back through its worker's
//! [`Mailbox`] (a completion list and the worker's wake eventfd).
//!
//! The queue is bounded: past [`ServeConfig::offload_queue`] tasks
//! waiting, a request that needs the pool is answered 503 at once. A
//! connection that goes away cancels its task: one not started is
//! dropped, one running stops at its next check (between chunks hashed
//! or files walked), and its answer is dropped.
//!
//! [`ServeConfig::offload_queue`]: super::ServeConfig::offload_queue

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant;

use super::exchange::{Exchange, Response};
use super::request::Request;
use super::respond::{failed, Peer};
use super::shared::Shared;

/// Work for the pool: it answers through the exchange, as a handler does,
/// and looks at the cancel flag between steps.
pub(crate) type Work = Box<dyn FnOnce(&mut Exchange<'_>, &Cancel) -> std::io::Result<bool> + Send>;

/// Set once the connection that asked is gone.
#[derive(Clone, Default)]
pub(crate) struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// Whether nobody waits for the answer any more.
    pub fn cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// An error for work that stopped because it was cancelled.
    pub fn error() -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "stopped: nobody waits for the answer",
        )
    }
}

/// Held by the connection waiting for its task: dropping it (the
/// connection closed, or the answer came) cancels the task.
pub(crate) struct Waiting(Cancel);

impl Drop for Waiting {
    fn drop(&mut self) {
        (self.0).0.store(true, Ordering::Relaxed);
    }
}

/// A finished task's answer, for connection `token` of the worker.
pub(crate) struct Done {
    pub token: u64,
    pub request: Request,
    pub response: Response,
}

/// A worker's completion list, and the eventfd that wakes it.
pub(crate) struct Mailbox {
    done: Mutex<Vec<Done>>,
    wake: Arc<OwnedFd>,
}

impl Mailbox {
    pub fn new(wake: Arc<OwnedFd>) -> Mailbox {
        Mailbox {
            done: Mutex::new(Vec::new()),
            wake,
        }
    }

    fn post(&self, done: Done) {
        self.done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(done);
        // After the push: a worker that read the eventfd before it drains
        // the list after it, so no answer waits for another wake-up.
        let _ = rustix::io::write(&*self.wake, &1u64.to_ne_bytes());
    }

    /// The answers that arrived since the last call.
    pub fn take(&self) -> Vec<Done> {
        std::mem::take(&mut *self.done.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What the connection hands over with its work.
pub(crate) struct Ask {
    pub request: Request,
    pub private: bool,
    pub peer: String,
    pub token: u64,
    pub mailbox: Arc<Mailbox>,
}

struct Task {
    work: Work,
    ask: Ask,
    cancel: Cancel,
}

struct Queue {
    tasks: VecDeque<Task>,
    closed: bool,
    /// Pool threads not ended yet.
    threads: usize,
}

/// The pool's queue, shared by the workers (who submit) and its threads.
pub(crate) struct Pool {
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Signalled when a thread ends.
    ended: Condvar,
    capacity: usize,
}

impl Pool {
    /// A pool whose queue holds at most `capacity` tasks not started.
    pub fn new(capacity: usize) -> Pool {
        Pool {
            queue: Mutex::new(Queue {
                tasks: VecDeque::new(),
                closed: false,
                threads: 0,
            }),
            ready: Condvar::new(),
            ended: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    /// Queues `work`; the answer goes to `ask.mailbox`. A full queue gives
    /// the request back, with the number of tasks waiting.
    pub fn submit(&self, work: Work, ask: Ask) -> Result<Waiting, (Request, usize)> {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.tasks.len() >= self.capacity {
            // Tasks of clients gone since hold no place.
            queue.tasks.retain(|task| !task.cancel.cancelled());
        }
        if queue.tasks.len() >= self.capacity || queue.closed {
            return Err((ask.request, queue.tasks.len()));
        }
        let cancel = Cancel::default();
        queue.tasks.push_back(Task {
            work,
            ask,
            cancel: cancel.clone(),
        });
        drop(queue);
        self.ready.notify_one();
        Ok(Waiting(cancel))
    }

    /// Ends the threads once the queue is empty of live tasks.
    pub fn close(&self) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        queue.closed = true;
        queue.tasks.clear();
        drop(queue);
        self.ready.notify_all();
    }

    /// Counts a thread about to start (before it does, so that
    /// [`Self::wait_ended`] cannot miss it).
    pub fn thread_starts(&self) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).threads += 1;
    }

    /// Counts a thread that ended (or never started).
    pub fn thread_ended(&self) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).threads -= 1;
        self.ended.notify_all();
    }

    /// Waits until every thread ended, or `by` passed (one may be stuck
    /// in a read that never returns: a journal on a hung disk).
    pub fn wait_ended(&self, by: Instant) {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        while queue.threads > 0 {
            let left = by.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            queue = self
                .ended
                .wait_timeout(queue, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn next(&self) -> Option<Task> {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if queue.closed {
                return None;
            }
            if let Some(task) = queue.tasks.pop_front() {
                return Some(task);
            }
            queue = self.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// A pool thread: runs tasks until the server is gone. It holds the
/// server's state only while a task runs, so the last worker to end
/// frees it (and closes the pool).
pub(crate) fn serve(pool: Arc<Pool>, shared: Weak<Shared>) {
    let _ended = Ended(&pool);
    while let Some(task) = pool.next() {
        if task.cancel.cancelled() {
            continue;
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let Task { work, ask, cancel } = task;
        let response = run(&shared, work, &ask, &cancel);
        if let Some(response) = response.filter(|_| !cancel.cancelled()) {
            ask.mailbox.post(Done {
                token: ask.token,
                request: ask.request,
                response,
            });
        }
    }
}

/// Counts a pool thread's end, however it ends.
struct Ended<'a>(&'a Pool);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.0.thread_ended();
    }
}

/// Runs one task as a handler runs: its answer, or a 500 saying what
/// failed (a panic too, which must not take the thread with it); `None`
/// when it stopped because nobody waits for it.
fn run(shared: &Shared, work: Work, ask: &Ask, cancel: &Cancel) -> Option<Response> {
    let peer = Peer {
        name: &ask.peer,
        private: ask.private,
    };
    let answered = catch_unwind(AssertUnwindSafe(|| {
        let mut exchange = Exchange::new(shared, &ask.request, ask.private);
        work(&mut exchange, cancel).map(|keep_alive| exchange.into_response(keep_alive))
    }));
    Some(match answered {
        Ok(Ok(response)) => response,
        Ok(Err(_)) if cancel.cancelled() => return None,
        Ok(Err(error)) => failed(shared, &ask.request, &peer, &error),
        Err(_) => failed(
            shared,
            &ask.request,
            &peer,
            &std::io::Error::other("the offloaded work panicked"),
        ),
    })
}
