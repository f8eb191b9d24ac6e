//! The offload pool (nginx's thread tasks): work that may block for long —
//! hashing a file for its manifest, walking a tree, listing a large
//! directory, a ranged upload's journal — runs on a few threads of its
//! own instead of the worker's. A handler leaves it as pending work; the
//! connection hands it to the pool as a [`Job`] and waits in its own
//! phase, holding no thread; the answer comes back through its worker's
//! [`Mailbox`] (a completion list and the worker's wake eventfd).
//!
//! The pool knows nothing of requests or responses: a job is a closure
//! given the server's state (`C`) while it runs, and it posts its own
//! answer, so this module stands below everything that uses it.
//!
//! Work that keeps a CPU busy (hashing) goes in the [`Lane::Cpu`], which
//! runs at most [`ServeConfig::hash_threads`] tasks at once, half the
//! CPUs by default: a worker woken by a request must find a CPU free, not
//! wait behind a hash for the scheduler's next tick. Other tasks, mostly
//! waiting on a disk, take any free thread, so a long hash never holds an
//! upload's journal back.
//!
//! The queue is bounded: past [`ServeConfig::offload_queue`] tasks
//! waiting, a request that needs the pool is answered 503 at once. A
//! connection that goes away cancels its task: one not started is
//! dropped, one running stops at its next check (between chunks hashed
//! or files walked), and its answer is dropped.
//!
//! [`ServeConfig::offload_queue`]: super::config::ServeConfig::offload_queue
//! [`ServeConfig::hash_threads`]: super::config::ServeConfig::hash_threads

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant;

/// A job for the pool: run with the server's state `C`, it looks at the
/// cancel flag between its steps and posts its own answer.
pub(crate) type Job<C> = Box<dyn FnOnce(&C, &Cancel) + Send>;

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

/// A worker's completion list of answers `T`, and the eventfd that wakes
/// it.
pub(crate) struct Mailbox<T> {
    done: Mutex<Vec<T>>,
    wake: Arc<OwnedFd>,
}

impl<T> Mailbox<T> {
    pub fn new(wake: Arc<OwnedFd>) -> Mailbox<T> {
        Mailbox {
            done: Mutex::new(Vec::new()),
            wake,
        }
    }

    /// Adds an answer and wakes the worker.
    pub fn post(&self, done: T) {
        self.done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(done);
        // After the push: a worker that read the eventfd before it drains
        // the list after it, so no answer waits for another wake-up.
        let _ = rustix::io::write(&*self.wake, &1u64.to_ne_bytes());
    }

    /// The answers that arrived since the last call.
    pub fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.done.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What a task mostly waits for, which decides how many run at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lane {
    /// A disk or the file system (journals, walks, listings): any free
    /// thread.
    Io,
    /// The CPU (hashing): at most the pool's CPU limit at once.
    Cpu,
}

struct Task<C> {
    job: Job<C>,
    cancel: Cancel,
    lane: Lane,
}

struct Queue<C> {
    tasks: VecDeque<Task<C>>,
    closed: bool,
    /// Pool threads not ended yet.
    threads: usize,
    /// [`Lane::Cpu`] tasks running.
    cpu_running: usize,
}

/// The pool's queue, shared by the workers (who submit) and its threads.
pub(crate) struct Pool<C> {
    queue: Mutex<Queue<C>>,
    ready: Condvar,
    /// Signalled when a thread ends.
    ended: Condvar,
    capacity: usize,
    cpu_limit: usize,
}

impl<C> Pool<C> {
    /// A pool whose queue holds at most `capacity` tasks not started, and
    /// that runs at most `cpu_limit` [`Lane::Cpu`] tasks at once.
    pub fn new(capacity: usize, cpu_limit: usize) -> Pool<C> {
        Pool {
            queue: Mutex::new(Queue {
                tasks: VecDeque::new(),
                closed: false,
                threads: 0,
                cpu_running: 0,
            }),
            ready: Condvar::new(),
            ended: Condvar::new(),
            capacity: capacity.max(1),
            cpu_limit: cpu_limit.max(1),
        }
    }

    /// Queues a job made for its cancel flag in `lane`. A full (or closed)
    /// queue makes none and says how many tasks wait.
    pub fn submit(
        &self,
        lane: Lane,
        job: impl FnOnce(&Cancel) -> Job<C>,
    ) -> Result<Waiting, usize> {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.tasks.len() >= self.capacity {
            // Tasks of clients gone since hold no place.
            queue.tasks.retain(|task| !task.cancel.cancelled());
        }
        if queue.tasks.len() >= self.capacity || queue.closed {
            return Err(queue.tasks.len());
        }
        let cancel = Cancel::default();
        queue.tasks.push_back(Task {
            job: job(&cancel),
            cancel: cancel.clone(),
            lane,
        });
        drop(queue);
        // All: the one woken may be a thread that cannot take this task's
        // lane.
        self.ready.notify_all();
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

    /// The first task whose lane has room, waiting for one; `None` once
    /// the pool is closed.
    fn next(&self) -> Option<Task<C>> {
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if queue.closed {
                return None;
            }
            let cpu_free = queue.cpu_running < self.cpu_limit;
            let runnable = queue
                .tasks
                .iter()
                .position(|task| task.lane == Lane::Io || cpu_free);
            if let Some(task) = runnable.and_then(|at| queue.tasks.remove(at)) {
                if task.lane == Lane::Cpu {
                    queue.cpu_running += 1;
                }
                return Some(task);
            }
            queue = self.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Counts a task of `lane` done, letting a waiting CPU task start.
    fn done(&self, lane: Lane) {
        if lane == Lane::Cpu {
            self.queue
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .cpu_running -= 1;
            self.ready.notify_all();
        }
    }
}

/// A pool thread: runs tasks until the server is gone. It holds the
/// server's state only while a task runs, so the last worker to end
/// frees it (and closes the pool).
pub(crate) fn serve<C>(pool: Arc<Pool<C>>, context: Weak<C>) {
    let _ended = Ended(&pool);
    while let Some(task) = pool.next() {
        let _done = Done(&pool, task.lane);
        if task.cancel.cancelled() {
            continue;
        }
        let Some(context) = context.upgrade() else {
            return;
        };
        (task.job)(&context, &task.cancel);
    }
}

/// Counts a task's end, however it ends.
struct Done<'a, C>(&'a Pool<C>, Lane);

impl<C> Drop for Done<'_, C> {
    fn drop(&mut self) {
        self.0.done(self.1);
    }
}

/// Counts a pool thread's end, however it ends.
struct Ended<'a, C>(&'a Pool<C>);

impl<C> Drop for Ended<'_, C> {
    fn drop(&mut self) {
        self.0.thread_ended();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// A job that says it started, then waits until `release` says go.
    fn held(
        started: mpsc::Sender<&'static str>,
        name: &'static str,
    ) -> impl FnOnce(&Cancel) -> Job<Arc<Mutex<mpsc::Receiver<()>>>> {
        move |_| {
            Box::new(
                move |release: &Arc<Mutex<mpsc::Receiver<()>>>, _: &Cancel| {
                    started.send(name).unwrap();
                    let _ = release
                        .lock()
                        .unwrap()
                        .recv_timeout(Duration::from_secs(10));
                },
            )
        }
    }

    #[test]
    fn cpu_tasks_run_one_at_a_time_while_io_tasks_pass_them() {
        let (go, release) = mpsc::channel();
        let context = Arc::new(Arc::new(Mutex::new(release)));
        let pool = Arc::new(Pool::new(16, 1));
        for _ in 0..3 {
            pool.thread_starts();
            let (pool, context) = (Arc::clone(&pool), Arc::downgrade(&context));
            std::thread::spawn(move || serve(pool, context));
        }
        let (started, seen) = mpsc::channel();
        let _first = pool
            .submit(Lane::Cpu, held(started.clone(), "hash 1"))
            .unwrap();
        assert_eq!(seen.recv_timeout(Duration::from_secs(5)), Ok("hash 1"));
        let _second = pool
            .submit(Lane::Cpu, held(started.clone(), "hash 2"))
            .unwrap();
        let _journal = pool
            .submit(Lane::Io, held(started.clone(), "journal"))
            .unwrap();
        // The journal, queued after the second hash, starts first: the
        // second hash waits for the first, holding no thread.
        assert_eq!(seen.recv_timeout(Duration::from_secs(5)), Ok("journal"));
        assert!(seen.recv_timeout(Duration::from_millis(300)).is_err());
        go.send(()).unwrap();
        go.send(()).unwrap();
        assert_eq!(seen.recv_timeout(Duration::from_secs(5)), Ok("hash 2"));
        go.send(()).unwrap();
        pool.close();
        pool.wait_ended(Instant::now() + Duration::from_secs(5));
        assert_eq!(pool.queue.lock().unwrap().cpu_running, 0);
    }
}
