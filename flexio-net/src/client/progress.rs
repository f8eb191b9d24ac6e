//! How far a get or a put has come, for a progress bar: counters the
//! streams bump as bytes move (the same counter the kernel-call loop
//! adds to, so nothing is paid per byte but one relaxed add per call) and
//! a watcher reads on its own thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bytes and files done and expected, shared between a transfer's streams
/// and whoever shows them.
///
/// # Examples
/// ```
/// let progress = std::sync::Arc::new(flexio_net::client::TransferProgress::default());
/// let options = flexio_net::client::GetOptions {
///     progress: Some(std::sync::Arc::clone(&progress)),
///     ..Default::default()
/// };
/// // get(url, None, &options) bumps it while it runs.
/// assert_eq!(progress.bytes_done(), 0);
/// assert_eq!(progress.bytes_total(), None);
/// # drop(options);
/// ```
#[derive(Debug, Default)]
pub struct TransferProgress {
    bytes_done: AtomicU64,
    bytes_total: AtomicU64,
    total_known: AtomicBool,
    files_done: AtomicU64,
    files_total: AtomicU64,
    tree: AtomicBool,
    finding: AtomicBool,
}

impl TransferProgress {
    /// Bytes moved (or found already there) so far.
    pub fn bytes_done(&self) -> u64 {
        self.bytes_done.load(Ordering::Relaxed)
    }

    /// Bytes the transfer will move, once known.
    pub fn bytes_total(&self) -> Option<u64> {
        self.total_known
            .load(Ordering::Relaxed)
            .then(|| self.bytes_total.load(Ordering::Relaxed))
    }

    /// Files done and expected, for a tree.
    pub fn files(&self) -> Option<(u64, u64)> {
        self.tree.load(Ordering::Relaxed).then(|| {
            (
                self.files_done.load(Ordering::Relaxed),
                self.files_total.load(Ordering::Relaxed),
            )
        })
    }

    /// Whether the totals are only what was found so far (a tree still
    /// read from its listings).
    pub fn still_finding(&self) -> bool {
        self.finding.load(Ordering::Relaxed)
    }

    /// The counter the byte-moving loop adds to.
    pub(crate) fn counter(&self) -> &std::sync::atomic::AtomicU64 {
        &self.bytes_done
    }

    /// `bytes` moved.
    pub(crate) fn add(&self, bytes: u64) {
        self.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    }

    /// `bytes` more to move (and `files` more, for a tree).
    pub(crate) fn expect(&self, bytes: u64, files: Option<u64>) {
        self.bytes_total.fetch_add(bytes, Ordering::Relaxed);
        self.total_known.store(true, Ordering::Relaxed);
        if let Some(files) = files {
            self.files_total.fetch_add(files, Ordering::Relaxed);
            self.tree.store(true, Ordering::Relaxed);
        }
    }

    /// `bytes` more to move, unless this file is one of a tree whose
    /// total already holds it.
    pub(crate) fn expect_file(&self, bytes: u64) {
        if !self.tree.load(Ordering::Relaxed) {
            self.expect(bytes, None);
        }
    }

    /// `files` more in a tree whose sizes are not known before each
    /// arrives (a tree read from listings).
    pub(crate) fn expect_files(&self, files: u64) {
        self.files_total.fetch_add(files, Ordering::Relaxed);
        self.tree.store(true, Ordering::Relaxed);
    }

    /// `files` done, `skipped` bytes of them found already there (not
    /// moved, so not counted by the loop).
    pub(crate) fn files_done(&self, files: u64, skipped: u64) {
        self.files_done.fetch_add(files, Ordering::Relaxed);
        self.add(skipped);
    }

    /// The totals are partial until `finding` is false again.
    pub(crate) fn finding(&self, finding: bool) {
        self.finding.store(finding, Ordering::Relaxed);
    }
}
