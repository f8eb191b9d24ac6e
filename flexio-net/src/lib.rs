//! flexio host to host: an HTTP/1.1 file server ([`server`]) and client
//! ([`client`]) on the library's range API ([`flexio::range`]).
//!
//! What pushes what:
//! - [`head`] reads a request or response head off a socket with
//!   `httparse`, peeking so that not one body byte is taken with it;
//! - the server's event loop reads heads under deadlines and hands whole
//!   requests to a fixed pool of workers, which answer with heads written
//!   plainly and bodies moved file→socket by a [`flexio::range::Mover`]
//!   (sendfile);
//! - the client moves bodies socket→file with splice into one
//!   [`flexio::range::NewFile`], from one connection or from several
//!   ranged ones at once, and commits it only when every byte arrived (and
//!   matched the server's manifest, when it has one);
//! - [`names`], [`walk`] and [`ranges`] hold the rules for untrusted names,
//!   paths beneath the served directory and byte ranges; [`manifest`] and
//!   [`tar_stream`] the two tree formats.

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
