//! A file still arriving, served as it arrives: the chain link of `flexio
//! get --serve` (the client's `Relay`). The fetcher writes pieces into
//! the file and marks each one once it is whole and checked
//! ([`GrowingFile::arrived`]); a response body's [`Stretch`] sends the
//! bytes of the pieces already there and, at the first one missing,
//! leaves its connection waiting — holding no thread, bounded by the send
//! timeout — until the fetcher marks that piece and wakes the
//! connection's worker (its [`Waker`]: the token on the worker's list and
//! a write to its wake eventfd). Bytes not marked are never sent; a fetch
//! that fails wakes every waiting response to end it with a cut
//! connection.
//!
//! What a server with a growing file answers is decided beside this
//! file, in `growing_answer.rs`.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// A file being fetched, shared by its fetcher and the server that
/// serves it onward.
pub struct GrowingFile {
    /// The one name served (decoded).
    name: Vec<u8>,
    size: u64,
    piece: u64,
    manifest: Vec<u8>,
    file: OwnedFd,
    label: String,
    state: Mutex<State>,
    /// Signalled when an answer ends or starts (for [`Self::wait_quiet`]).
    quiet: Condvar,
}

/// What changes as the file arrives and is served.
struct State {
    pieces: Vec<bool>,
    failed: bool,
    /// Responses waiting for a piece: woken (all) at the next mark.
    waiters: Vec<(Arc<Waker>, u64)>,
    /// Bodies being sent.
    busy: usize,
    /// When an answer last started or a body last ended.
    last_answer: Option<Instant>,
}

/// A worker's list of connections woken from outside it, and its wake
/// eventfd: a token put on the list is driven again at the worker's next
/// turn.
pub(crate) struct Waker {
    wake: Arc<OwnedFd>,
    woken: Mutex<Vec<u64>>,
}

/// Who waits: the worker's waker and the connection's token there.
#[derive(Clone, Copy)]
pub(crate) struct Waiter<'a> {
    pub waker: &'a Arc<Waker>,
    pub token: u64,
}

impl Waker {
    pub fn new(wake: Arc<OwnedFd>) -> Waker {
        Waker {
            wake,
            woken: Mutex::new(Vec::new()),
        }
    }

    /// Puts `token` on the list and wakes the worker.
    fn wake(&self, token: u64) {
        lock(&self.woken).push(token);
        // A full counter (never, at 2^64 - 2) or a closed worker: either
        // way the worker has a wake-up pending or needs none.
        let _ = rustix::io::write(&*self.wake, &1u64.to_ne_bytes());
    }

    /// The tokens woken since the last call.
    pub fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *lock(&self.woken))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl GrowingFile {
    /// `file` (`size` bytes once whole, marked in pieces of `piece`
    /// bytes) served as `name`, with `manifest` as its `?manifest`;
    /// `label` names it in messages.
    ///
    /// # Errors
    /// [`Error::Usage`] for a piece size of 0; the descriptor cannot be
    /// duplicated.
    ///
    /// # Examples
    /// ```
    /// let file = tempfile::tempfile().unwrap();
    /// let growing = flexio_net::server::GrowingFile::new(
    ///     b"f", 10, 4, b"{}".to_vec(), std::os::fd::AsFd::as_fd(&file), "f".into(),
    /// ).unwrap();
    /// growing.arrived(0);
    /// ```
    pub fn new(
        name: &[u8],
        size: u64,
        piece: u64,
        manifest: Vec<u8>,
        file: BorrowedFd<'_>,
        label: String,
    ) -> Result<Arc<GrowingFile>> {
        if piece == 0 {
            return Err(Error::Usage("a growing file's piece size is 0".into()));
        }
        let file = file
            .try_clone_to_owned()
            .map_err(|e| Error::io("dup", label.clone(), None, e))?;
        Ok(Arc::new(GrowingFile {
            name: name.to_vec(),
            size,
            piece,
            manifest,
            file,
            label,
            state: Mutex::new(State {
                pieces: vec![false; size.div_ceil(piece) as usize],
                failed: false,
                waiters: Vec::new(),
                busy: 0,
                last_answer: None,
            }),
            quiet: Condvar::new(),
        }))
    }

    /// The piece holding byte `offset` is whole and checked: responses
    /// waiting for it go on.
    pub fn arrived(&self, offset: u64) {
        let mut state = lock(&self.state);
        if let Some(whole) = state.pieces.get_mut((offset / self.piece) as usize) {
            *whole = true;
        }
        wake_all(&mut state);
    }

    /// The fetch failed: responses waiting for a piece end with a cut
    /// connection, and so do those that reach a missing one later.
    pub fn fail(&self) {
        let mut state = lock(&self.state);
        state.failed = true;
        wake_all(&mut state);
    }

    /// Returns once no body has been sending for `linger` and no request
    /// was answered in that time (idle connections do not count), waking
    /// when an answer ends rather than polling.
    pub fn wait_quiet(&self, linger: Duration) {
        let whole_at = Instant::now();
        let mut state = lock(&self.state);
        loop {
            if state.busy > 0 {
                state = self.quiet.wait(state).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            let since = state.last_answer.map_or(whole_at, |at| at.max(whole_at));
            let until = crate::deadline::after(since, linger);
            let now = Instant::now();
            if now >= until {
                return;
            }
            state = self
                .quiet
                .wait_timeout(state, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The name it is served as, its size, its manifest, its label.
    pub(crate) fn name(&self) -> &[u8] {
        &self.name
    }

    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    pub(crate) fn manifest(&self) -> &[u8] {
        &self.manifest
    }

    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// The file, for one response body.
    pub(crate) fn reopen(&self) -> std::io::Result<OwnedFd> {
        self.file
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| std::io::Error::new(e.kind(), format!("dup {}: {e}", self.label)))
    }

    /// Marks an answer now.
    pub(crate) fn answered(&self) {
        lock(&self.state).last_answer = Some(Instant::now());
        self.quiet.notify_all();
    }

    /// Where the bytes from `first` that are there end (at most `end`):
    /// `Ok(None)` when byte `first` is not there yet, `waiter` then
    /// being woken when a piece arrives (or the fetch fails).
    fn ready(
        &self,
        first: u64,
        end: u64,
        waiter: Option<Waiter<'_>>,
    ) -> Result<Option<u64>, String> {
        let mut state = lock(&self.state);
        let mut index = (first / self.piece) as usize;
        while state.pieces.get(index) == Some(&true) && (index as u64) * self.piece < end {
            index += 1;
        }
        let upto = ((index as u64) * self.piece).min(end);
        if upto > first {
            return Ok(Some(upto));
        }
        if state.failed {
            return Err(format!(
                "{}: the fetch failed before byte {first} arrived",
                self.label
            ));
        }
        let Some(waiter) = waiter else {
            return Err(format!(
                "{}: byte {first} is not here and nothing can wait",
                self.label
            ));
        };
        let present = state
            .waiters
            .iter()
            .any(|(waker, token)| *token == waiter.token && Arc::ptr_eq(waker, waiter.waker));
        if !present {
            state.waiters.push((Arc::clone(waiter.waker), waiter.token));
        }
        Ok(None)
    }
}

fn wake_all(state: &mut State) {
    for (waker, token) in state.waiters.drain(..) {
        waker.wake(token);
    }
}

/// Bytes `first..end` of a growing file still to send, counted busy
/// while they are (so the link does not end under them).
pub(crate) struct Stretch {
    growing: Arc<GrowingFile>,
    pub first: u64,
    pub end: u64,
}

impl Stretch {
    pub fn new(growing: &Arc<GrowingFile>, first: u64, end: u64) -> Stretch {
        lock(&growing.state).busy += 1;
        Stretch {
            growing: Arc::clone(growing),
            first,
            end,
        }
    }

    /// Where the bytes there from `first` end: `None` when none are, the
    /// connection then waiting for the next piece — its socket pushed
    /// first, so what was sent before the wait is not held back.
    pub fn ready(
        &self,
        socket: BorrowedFd<'_>,
        waiter: Option<Waiter<'_>>,
    ) -> Result<Option<u64>, String> {
        let ready = self.growing.ready(self.first, self.end, waiter)?;
        if ready.is_none() {
            // A head sent with MSG_MORE is corked until pushed: setting
            // TCP_NODELAY (already set) pushes it (tcp(7)).
            let _ = rustix::net::sockopt::set_tcp_nodelay(socket, true);
        }
        Ok(ready)
    }

    pub fn len(&self) -> u64 {
        self.end - self.first
    }
}

impl Drop for Stretch {
    fn drop(&mut self) {
        {
            let mut state = lock(&self.growing.state);
            state.busy -= 1;
            state.last_answer = Some(Instant::now());
        }
        self.growing.quiet.notify_all();
    }
}
