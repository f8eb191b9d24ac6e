//! Ranged uploads' journal locks, one per partial file: a journal is read,
//! merged and rewritten (or the file renamed into place) by one task at a
//! time, while uploads of other files go on at once on other threads of
//! the offload pool.

use std::collections::HashSet;
use std::sync::{Condvar, Mutex};

/// A partial file: its directory (device, inode) and its name there.
pub(crate) type UploadKey = (u64, u64, String);

/// The partial files whose journal is being worked on.
#[derive(Default)]
pub(crate) struct UploadLocks {
    held: Mutex<HashSet<UploadKey>>,
    released: Condvar,
}

/// Holds one partial file's lock until dropped.
pub(crate) struct UploadGuard<'a> {
    locks: &'a UploadLocks,
    key: Option<UploadKey>,
}

impl UploadLocks {
    /// Waits until nobody else works on `key`'s journal, then holds it.
    pub fn lock(&self, key: UploadKey) -> UploadGuard<'_> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        while held.contains(&key) {
            held = self.released.wait(held).unwrap_or_else(|p| p.into_inner());
        }
        held.insert(key.clone());
        UploadGuard {
            locks: self,
            key: Some(key),
        }
    }
}

impl Drop for UploadGuard<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.locks
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
            self.locks.released.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    fn key(name: &str) -> UploadKey {
        (1, 2, name.to_string())
    }

    #[test]
    fn two_files_are_held_at_once_and_one_file_waits_for_its_holder() {
        let locks = UploadLocks::default();
        let first = locks.lock(key("a"));
        // Another file's journal is not behind the first.
        let other = locks.lock(key("b"));
        let second_got_it = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _again = locks.lock(key("a"));
                second_got_it.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(
                !second_got_it.load(Ordering::SeqCst),
                "one file's lock was taken twice"
            );
            drop(first);
        });
        assert!(second_got_it.load(Ordering::SeqCst));
        drop(other);
        assert!(
            locks.held.lock().unwrap().is_empty(),
            "a lock outlived its guard"
        );
    }
}
