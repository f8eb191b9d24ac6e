//! A file still arriving, served as it arrives: the chain link of `flexio
//! get --serve` ([`crate::client::Relay`]). The fetcher writes pieces into
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
//! A server with a growing file answers only `GET` and `HEAD` of that
//! one name (percent-decoded like any target): its `?manifest` at once
//! (the upstream's, so the next host checks against the same truth), and
//! the whole file or one range. Nothing beneath the root is ever opened.

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::body::{Body, Segment};
use super::exchange::Exchange;
use super::request::ResponseHead;
use crate::error::{Error, Result};
use crate::names::{split_target, BadTarget};
use crate::ranges::{resolve, RangeAnswer};

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

    /// Marks an answer now.
    fn answered(&self) {
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
    fn new(growing: &Arc<GrowingFile>, first: u64, end: u64) -> Stretch {
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

/// Answers a request to a server with a growing file: `GET` or `HEAD` of
/// its name (its manifest, the whole file or one range); anything else
/// is refused as `serve` refuses it.
pub(crate) fn answer(
    exchange: &mut Exchange<'_>,
    growing: &Arc<GrowingFile>,
) -> std::io::Result<bool> {
    growing.answered();
    let request = exchange.request;
    if request.method != "GET" && request.method != "HEAD" {
        // A body, if any, is not read: the connection cannot go on.
        exchange.keep_alive = false;
        let (head, body) = super::request::text_response(405, "a chain link only serves its file");
        return exchange.head_and_body(head.header("Allow", "GET, HEAD"), &body);
    }
    if request.has_body() {
        exchange.keep_alive = false;
        return exchange.text(400, "a GET or HEAD request may not carry a body here");
    }
    let (parts, query) = match split_target(&request.target) {
        Ok(split) => split,
        Err(BadTarget::Climbs) => {
            return exchange.text(403, "the path climbs out of the served directory with ..")
        }
        Err(BadTarget::Malformed(why)) => return exchange.text(400, why),
    };
    if parts.len() != 1 || parts[0] != growing.name {
        return exchange.text(404, "a chain link serves one file");
    }
    if query == Some("manifest") {
        let head = ResponseHead::new(200)
            .header("Content-Type", "application/json")
            .header("Content-Length", growing.manifest.len().to_string());
        return exchange.head_and_body(head, &growing.manifest);
    }
    let size = growing.size;
    let (status, first, length) = match exchange.request.header("range").map(|r| resolve(r, size)) {
        Some(RangeAnswer::Parts(parts)) if parts.len() == 1 => (206, parts[0].0, parts[0].1),
        Some(RangeAnswer::Unsatisfiable) => {
            let (head, body) =
                super::request::text_response(416, "no requested range overlaps the file");
            let head = head
                .header("Accept-Ranges", "bytes")
                .header("Content-Range", format!("bytes */{size}"));
            return exchange.head_and_body(head, &body);
        }
        // One range at a time, or the whole file.
        _ => (200, 0, size),
    };
    let mut head = ResponseHead::new(status)
        .header("Accept-Ranges", "bytes")
        .header("Content-Type", super::files::content_type(&growing.name))
        .header("X-Content-Type-Options", "nosniff");
    if status == 206 {
        head = head.header(
            "Content-Range",
            format!("bytes {first}-{}/{size}", first + length - 1),
        );
    }
    exchange.head(&head.header("Content-Length", length.to_string()));
    if !exchange.head_only && length > 0 {
        let file =
            growing.file.as_fd().try_clone_to_owned().map_err(|e| {
                std::io::Error::new(e.kind(), format!("dup {}: {e}", growing.label))
            })?;
        let stretch = Stretch::new(growing, first, first + length);
        let body = Body::new(
            VecDeque::from([Segment::Growing(stretch)]),
            Some((file, growing.label.clone())),
            None,
        );
        exchange.send_body_in_turns(body);
    }
    Ok(exchange.keep_alive)
}
