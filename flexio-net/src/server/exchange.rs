//! One request and what its handler answers: handlers never touch the
//! socket. They leave the bytes to send first (a head, a short body), a
//! body to send after them ([`Body`]: file ranges, made bytes, tar
//! members) and, for an upload, the body still to read ([`Intake`]); the
//! connection's worker sends and reads them without blocking. Work that
//! may block for long is left for the offload pool instead ([`Work`]),
//! which answers through an exchange of its own.

use std::cell::RefCell;
use std::os::fd::OwnedFd;

use super::body::Body;
use super::intake::Intake;
use super::offload::{Cancel, Lane};
use super::request::{text_response, Request, ResponseHead};
use super::shared::Shared;

/// Work for the offload pool: it answers through the exchange, as a
/// handler does, and looks at the cancel flag between steps.
pub(crate) type Work = Box<dyn FnOnce(&mut Exchange<'_>, &Cancel) -> std::io::Result<bool> + Send>;

/// What answering needs besides the request, and what it collects.
pub(crate) struct Exchange<'a> {
    pub shared: &'a Shared,
    pub request: &'a Request,
    /// Whether a bearer token may be taken: the client is on loopback
    /// or speaks TLS.
    pub private: bool,
    pub keep_alive: bool,
    pub head_only: bool,
    out: RefCell<Vec<u8>>,
    body: RefCell<Option<Body>>,
    intake: RefCell<Option<Intake>>,
    pending: RefCell<Option<(Lane, Work)>>,
}

/// A handler's answer, for the worker to carry out.
pub(crate) struct Response {
    /// Bytes to send first.
    pub out: Vec<u8>,
    /// The body to send after them.
    pub body: Option<Body>,
    /// The request body to read before the rest of the answer.
    pub intake: Option<Intake>,
    /// Work for the offload pool in its lane, whose answer replaces this
    /// one.
    pub pending: Option<(Lane, Work)>,
    pub keep_alive: bool,
}

impl<'a> Exchange<'a> {
    pub fn new(shared: &'a Shared, request: &'a Request, private: bool) -> Self {
        Exchange {
            shared,
            request,
            private,
            keep_alive: request.keeps_alive(),
            head_only: request.method == "HEAD",
            out: RefCell::new(Vec::new()),
            body: RefCell::new(None),
            intake: RefCell::new(None),
            pending: RefCell::new(None),
        }
    }

    /// Leaves `length` bytes of `file` from `first` to send after the head.
    pub fn send_in_turns(&self, file: OwnedFd, label: String, first: u64, length: u64) {
        if length == 0 {
            return;
        }
        self.send_body_in_turns(Body::file(file, label, first, length));
    }

    /// Leaves `body` to send after the head.
    pub fn send_body_in_turns(&self, body: Body) {
        *self.body.borrow_mut() = Some(body);
    }

    /// Leaves a request body to read (an upload) before answering, with
    /// `100 Continue` first when the client waits for it.
    pub fn read_body(&self, intake: Intake) {
        self.continue_if_expected();
        *self.intake.borrow_mut() = Some(intake);
    }

    /// Leaves `work`, which mostly waits on a disk, for the offload pool:
    /// its answer is the response.
    pub fn offload(&self, work: Work) {
        *self.pending.borrow_mut() = Some((Lane::Io, work));
    }

    /// Leaves `work` that keeps a CPU busy (hashing) for the offload
    /// pool's CPU lane: its answer is the response.
    pub fn offload_hashing(&self, work: Work) {
        *self.pending.borrow_mut() = Some((Lane::Cpu, work));
    }

    /// Leaves bytes to send as they are (`100 Continue`).
    pub fn raw(&self, bytes: &[u8]) {
        self.out.borrow_mut().extend_from_slice(bytes);
    }

    /// Leaves `100 Continue` before an upload's body, when the client
    /// waits for it.
    fn continue_if_expected(&self) {
        if self
            .request
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
        {
            self.raw(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
    }

    /// Leaves a head whose body (if any) is left apart.
    pub fn head(&self, head: &ResponseHead) {
        self.raw(&head.bytes(self.keep_alive));
    }

    /// A short text response; returns whether the connection lives on.
    pub fn text(&self, status: u16, message: &str) -> std::io::Result<bool> {
        let (head, body) = text_response(status, message);
        self.head_and_body(head, &body)
    }

    /// A head and an in-memory body (left out for HEAD).
    pub fn head_and_body(&self, head: ResponseHead, body: &[u8]) -> std::io::Result<bool> {
        self.head(&head);
        if !self.head_only {
            self.raw(body);
        }
        Ok(self.keep_alive)
    }

    /// `value` as a JSON body.
    pub fn json(&self, value: &impl serde::Serialize) -> std::io::Result<bool> {
        let body = serde_json::to_vec(value).map_err(std::io::Error::other)?;
        let head = ResponseHead::new(200)
            .header("Content-Type", "application/json")
            .header("Content-Length", body.len().to_string());
        self.head_and_body(head, &body)
    }

    /// What was answered, with whether the connection lives on.
    pub fn into_response(self, keep_alive: bool) -> Response {
        Response {
            out: self.out.into_inner(),
            body: self.body.into_inner(),
            intake: self.intake.into_inner(),
            pending: self.pending.into_inner(),
            keep_alive,
        }
    }
}
