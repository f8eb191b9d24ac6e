//! The work between the walker and the workers: files to copy, the largest
//! first, so that the copy does not end waiting on one big file started
//! last.

use std::collections::BinaryHeap;
use std::os::unix::ffi::OsStrExt;
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

impl FileJob {
    /// Large files by size, the largest first; small ones all alike, so
    /// that they come out in path order, where the files of one directory
    /// are next to each other (a set of names with one prefix is one run
    /// in byte order).
    fn rank(&self) -> u64 {
        match self.size >= LARGE {
            true => self.size,
            false => 0,
        }
    }
}

impl Ord for FileJob {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank()).then_with(|| {
            other
                .source
                .as_os_str()
                .as_bytes()
                .cmp(self.source.as_os_str().as_bytes())
        })
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

    /// A large file alone (the largest waiting), or up to `most` small
    /// files of one directory; empty once the queue is closed and drained.
    /// Taking several small files at once keeps the workers from meeting at
    /// the lock once per 4 KiB file; taking them from one directory keeps
    /// them from meeting at that directory's lock in the kernel, which
    /// every file made in it takes (on a 2-core VM, ext4: 4% of the CPU of
    /// a 20 000-file tree spun there when two workers shared directories).
    pub fn take(&self, most: usize, into: &mut Vec<FileJob>) {
        let mut state = self.state.lock().expect("queue lock");
        loop {
            if let Some(first) = state.jobs.pop() {
                let small = first.size < LARGE;
                let start = into.len();
                into.push(first);
                while small && into.len() < most {
                    let same_directory = state.jobs.peek().is_some_and(|next| {
                        next.size < LARGE && next.source.parent() == into[start].source.parent()
                    });
                    if !same_directory {
                        break;
                    }
                    into.extend(state.jobs.pop());
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
    fn the_largest_file_goes_first_and_small_ones_in_batches_of_one_directory() {
        let queue = Queue::default();
        queue.push_all(
            [
                (10, "x/a"),
                (5 << 20, "big"),
                (6 << 20, "bigger"),
                (20, "x/b"),
                (30, "x/c"),
                (40, "y/a"),
                (50, "x-other/a"),
            ]
            .map(|(size, name)| job(size, name)),
        );
        queue.close();
        let mut taken = Vec::new();
        let mut take = |most| {
            taken.clear();
            queue.take(most, &mut taken);
            taken
                .iter()
                .map(|j| j.source.display().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(take(8), ["bigger"]);
        assert_eq!(take(8), ["big"]);
        assert_eq!(take(8), ["x-other/a"]);
        assert_eq!(take(2), ["x/a", "x/b"]);
        assert_eq!(take(8), ["x/c"]);
        assert_eq!(take(8), ["y/a"]);
        assert!(take(8).is_empty(), "closed and drained");
    }
}
