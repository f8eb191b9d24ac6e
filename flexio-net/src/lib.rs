//! flexio host to host: an HTTP/1.1 file server ([`server`]) and client
//! ([`client`]) on the library's range API ([`flexio::range`]).
//!
//! What pushes what:
//! - [`head`] reads a request or response head off a socket with
//!   `httparse`, peeking so that not one body byte is taken with it;
//! - the server is a few workers, each a thread with its own epoll set
//!   that accepts connections and drives them alone for their whole life,
//!   without blocking; a handler returns a response (a head and a body
//!   description) instead of writing, and the worker sends it a share per
//!   wake-up — file→socket with sendfile, or staged bytes where the body
//!   passes through the block cache, `O_DIRECT` or a mapping — while what
//!   may block for long runs on an offload pool; a growing file (a chain
//!   link of `flexio get --serve`) is served as it arrives;
//! - the client moves bodies socket→file with splice into one
//!   [`flexio::range::NewFile`], from one connection or from several
//!   ranged ones at once, and commits it only when every byte arrived (and
//!   matched the server's manifest, when it has one);
//! - [`names`], [`walk`] and [`ranges`] hold the rules for untrusted names,
//!   paths beneath the served directory and byte ranges; [`manifest`] and
//!   [`tar_stream`] the two tree formats.
//!
//! The server, file by file (`src/server/`; a test keeps this list and
//! the folder the same):
//! - the threads: `server/worker.rs` (a worker's accept and event loop),
//!   `server/spread.rs` (a new connection handed to the worker holding
//!   the fewest), `server/affinity.rs` (a worker pinned to the CPU its
//!   clients' packets arrive on),
//!   `server/connection.rs` (one connection's state machine),
//!   `server/timers.rs` (the worker's timer wheel: deadlines, paced
//!   sends), `server/offload.rs` (the offload pool: hashing, tree walks,
//!   large listings, ranged uploads' journals), `server/shared.rs` (what
//!   every worker reads), `server/config.rs` (`ServeConfig`),
//!   `server/trace.rs` (`FLEXIO_SERVE_TRACE`);
//! - the bytes on the way: `server/wire.rs` (plain socket or TLS
//!   session), `server/request.rs` (a parsed head, response heads),
//!   `server/exchange.rs` (a request and its handler's answer),
//!   `server/body.rs` (a body as resumable segments, sent a share at a
//!   time), `server/staged.rs` (bytes in hand: buffered, `O_DIRECT`,
//!   mapped), `server/cached_body.rs` (bodies through the block cache),
//!   `server/schedule.rs` (Cue's chunk-and-pause schedule),
//!   `server/access_log.rs` (`--access-log`);
//! - the answers: `server/respond.rs` (the handler by method and target),
//!   `server/files.rs` (one file, its ranges), `server/directory.rs`
//!   (listing, `?manifest`, `?tar`), `server/validators.rs` and
//!   `server/preconditions.rs` (ETag, Last-Modified, `If-*`),
//!   `server/hash_cache.rs` (chunk hashes kept while a file is unchanged),
//!   `server/growing.rs` and `server/growing_answer.rs` (a file served as
//!   it arrives);
//! - uploads: `server/upload.rs` (`PUT` into a new file),
//!   `server/intake.rs` (an upload's body read a share at a time),
//!   `server/chunked.rs` (strict chunked decoding),
//!   `server/upload_ranges.rs` and `server/upload_locks.rs` (`PUT` with
//!   `Content-Range`: pieces in any order, resumed, their journals),
//!   `server/upload_meta.rs` (the mode and mtime a `PUT` asks to keep).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod client;
mod deadline;
pub mod error;
mod head;
pub mod manifest;
pub mod names;
pub mod ranges;
pub mod server;
pub mod shard;
pub mod signing;
pub mod tar_stream;
pub mod tls;
pub mod walk;

pub use error::{Error, Result};
pub use head::{MAX_HEAD, MAX_HEADERS};

/// Cases per fuzz-style property of the parsers' unit tests (tar header
/// fields, Content-Range, the ranges journal, signed authorisations): a
/// few thousand in `cargo test`; `FLEXIO_FUZZ_CASES=1000000 cargo test
/// --release -p flexio-net fuzz` for a long run.
#[cfg(test)]
pub(crate) fn fuzz_cases(default: u32) -> u32 {
    std::env::var("FLEXIO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The proptest configuration of those properties: [`fuzz_cases`] cases,
/// and room for the few inputs a property skips (a changed character
/// that reads the same) however many cases run.
#[cfg(test)]
pub(crate) fn fuzz_config(default: u32) -> proptest::test_runner::Config {
    let cases = fuzz_cases(default);
    proptest::test_runner::Config {
        cases,
        max_local_rejects: cases,
        max_global_rejects: cases,
        ..proptest::test_runner::Config::default()
    }
}
