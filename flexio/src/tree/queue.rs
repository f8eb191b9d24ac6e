//! The work between the walker and the workers: files to copy, the largest
//! first, so that the copy does not end waiting on one big file started
//! last.

use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex};

/// One regular file to copy.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct FileJob {
    /// Its size as the walker saw it: the order of work, nothing more.
    pub size: u64,
    pub source: PathBuf,
    pub target: PathBuf,
    /// The target's directory was made by this copy, so nothing can be in
    /// the target's place (one `stat` per file saved).
    pub in_new_directory: bool,
    /// The target is inside a staging directory of this copy (see
    /// `staging.rs`): made under its own name, no temporary of its own.
    pub staged: bool,
}

impl Ord for FileJob {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.size
            .cmp(&other.size)
            .then_with(|| other.source.cmp(&self.source))
    }
}

impl PartialOrd for FileJob {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Files waiting for a worker; closed when the walker is done.
#[derive(Default)]
pub(crate) struct Queue {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Default)]
struct State {
    jobs: BinaryHeap<FileJob>,
    closed: bool,
    /// Workers asleep on `ready`: a wake-up is a system call, made only
    /// when someone sleeps (the walker queues 20 000 small files of a tree
    /// in a few milliseconds).
    sleeping: usize,
}

impl Queue {
    /// Queues the files of one directory.
    pub fn push_all(&self, jobs: impl IntoIterator<Item = FileJob>) {
        let mut state = self.state.lock().expect("queue lock");
        state.jobs.extend(jobs);
        if state.sleeping > 0 {
            self.ready.notify_all();
        }
    }

    /// No more files will come.
    pub fn close(&self) {
        self.state.lock().expect("queue lock").closed = true;
        self.ready.notify_all();
    }

    /// Up to `most` files, the largest waiting first; empty once the queue
    /// is closed and drained. Taking several small files at once keeps the
    /// workers from meeting at the lock once per 4 KiB file.
    pub fn take(&self, most: usize, into: &mut Vec<FileJob>) {
        let mut state = self.state.lock().expect("queue lock");
        loop {
            if !state.jobs.is_empty() {
                while into.len() < most {
                    match state.jobs.pop() {
                        Some(job) => {
                            let large = job.size >= LARGE;
                            into.push(job);
                            if large {
                                break;
                            }
                        }
                        None => break,
                    }
                }
                return;
            }
            if state.closed {
                return;
            }
            state.sleeping += 1;
            state = self.ready.wait(state).expect("queue lock");
            state.sleeping -= 1;
        }
    }
}

/// A file this large is taken alone.
const LARGE: u64 = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    fn job(size: u64, name: &str) -> FileJob {
        FileJob {
            size,
            source: name.into(),
            target: name.into(),
            in_new_directory: true,
            staged: false,
        }
    }

    #[test]
    fn the_largest_file_goes_first_and_small_ones_in_batches() {
        let queue = Queue::default();
        queue.push_all(
            [(10, "a"), (5 << 20, "big"), (20, "b"), (30, "c")].map(|(size, name)| job(size, name)),
        );
        queue.close();
        let mut taken = Vec::new();
        queue.take(8, &mut taken);
        assert_eq!(taken, [job(5 << 20, "big")]);
        taken.clear();
        queue.take(2, &mut taken);
        assert_eq!(taken, [job(30, "c"), job(20, "b")]);
        taken.clear();
        queue.take(8, &mut taken);
        assert_eq!(taken, [job(10, "a")]);
        taken.clear();
        queue.take(8, &mut taken);
        assert!(taken.is_empty(), "closed and drained");
    }
}
