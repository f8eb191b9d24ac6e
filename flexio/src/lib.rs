//! flexio moves bytes between files, block devices, sockets, pipes and
//! memory with the mechanism that suits the flow, and reports what really
//! happened.
//!
//! # Layers
//!
//! A reader meets them top to bottom; each imports only those below it
//! (`flexio-testkit/tests/architecture.rs` fails on any loop).
//!
//! [`tree`] copies many files with a pool of workers, each file a range.
//! A [`Flow`] names a [`Source`] and a [`Sink`] (the *endpoints*), a byte
//! range, a [`MechanismName`] and its [`Params`]. [`Flow::run`] opens and
//! classifies both endpoints ([`EndpointKind`]), checks the pair and the
//! range before anything is bound or connected, decides what `auto` means
//! (the [`profile`] this machine was tuned to, or the built-in table) and
//! hands the opened flow to the *engine*. Beside `Flow`, [`range`] moves a
//! range between descriptors the caller opened and keeps, through the same
//! engine. The engine measures the source's page-cache state, takes a
//! [`measure::Sample`], moves the bytes — falling back to the next
//! mechanism when the kernel refuses one, and saying so — takes a second
//! sample and returns a [`Report`]: a [`measure::Measurement`] (bytes,
//! wall time, CPU) and what ran.
//!
//! ```text
//! tree/             cp's grammar over a walker and workers (copy -r, -a, ...)
//! flow.rs           Flow (builder) and its run; flow/checks.rs: what is
//!                   refused before opening; flow/decide.rs: what auto means
//! profile/          the profile auto reads: flow kinds, ranges, fingerprint
//! range.rs          Mover, RangeEnd, NewFile: ranges between kept descriptors
//! engine.rs         one opened flow or range: time, segments, fallbacks, finish
//! verify.rs         BLAKE3 of both sides after a flow
//! report.rs         the Report and its human and JSON forms
//! kernel_pacing.rs  a TCP sink's rate handed to the kernel
//! writeback.rs      early writeback for durable flows
//! mechanism/        one file and one Descriptor per mechanism (io_uring/pump.rs:
//!                   its slots in flight); the shared kernel-copy loop;
//!                   Transfer, the state a mechanism moves
//! endpoint/         addresses, opening, fstat classification, temp-file sinks
//! device/           a GPU as an endpoint: gpu:N@OFFSET+LEN, file to device
//!                   memory and back by TPIL's modes (pageable, pinned, staged,
//!                   registered)
//! cleanup.rs        paths to remove when a signal ends the process
//! measure/          Measurement; rusage and /proc/stat deltas, cachestat/mincore, holes
//! pace/             Rate, Schedule, TokenBucket, Pacer: rates and pauses
//! duration.rs       durations as people type them (30s, 500ms)
//! size.rs           sizes as people type and read them (64K, 1 GiB)
//! params.rs         Params and the one set of bounds flags and profiles keep
//! progress.rs       bytes moved so far, for a watcher
//! error.rs          Error: operation, endpoint and offset; usage or failure
//! names.rs          EndpointKind, MechanismName: the ground floor
//! sys/              the system calls, all from flexio-sys (the one audited
//!                   layer): mmap, mincore, cachestat, getrusage, SIGBUS
//!                   guard, io_uring, aligned buffers
//! plain_file.rs     flexio's own files (profile, bench outputs): regular
//!                   files only, replaced atomically, read with a cap
//! ```
//!
//! # State kept across flows
//!
//! Whatever outlives one flow or one range — a [`range::Mover`]'s pipe,
//! io_uring ring and buffers, a server's connection, the block cache's
//! frames — is either proven empty and idle after an error or dropped and
//! rebuilt, so the next flow carries only its own bytes. The engine keeps
//! this rule in one place: a mechanism run that stops for any reason
//! discards everything it kept (`Scratch::discard`); a ring still waiting
//! on the kernel cancels its requests before it is freed. A connection
//! whose request body was not read is closed, never read on. The tests
//! `range_reuse` (every mechanism, every failure, then a second range on
//! the same mover) and flexio-net's `net_serve_reuse` hold it.
//!
//! # Example
//! ```
//! use flexio::{Flow, MechanismName, Sink, Source};
//! let dir = tempfile::tempdir().unwrap();
//! let (from, to) = (dir.path().join("a"), dir.path().join("b"));
//! std::fs::write(&from, vec![42u8; 1 << 20]).unwrap();
//! let report = Flow::new(Source::path(&from), Sink::path(&to))
//!     .via(MechanismName::Sendfile)
//!     .verify(true)
//!     .run()
//!     .unwrap();
//! assert_eq!(report.measured.bytes, 1 << 20);
//! assert_eq!(std::fs::read(&to).unwrap(), vec![42u8; 1 << 20]);
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod cleanup;
pub mod device;
mod duration;
mod endpoint;
mod engine;
mod error;
mod flow;
mod kernel_pacing;
pub mod measure;
mod mechanism;
mod names;
pub mod pace;
mod params;
mod plain_file;
pub mod profile;
mod progress;
pub mod range;
mod report;
mod size;
mod sys;
pub mod tree;
mod verify;
mod writeback;

pub use duration::parse_duration;
pub use endpoint::{Address, EndpointKind, Sink, SocketBuffers, Source};
pub use error::{Error, Result};
pub use flow::{Flow, Progress};
pub use mechanism::{builtin_choice, CopyKernel, Descriptor, MechanismName, Reads};
pub use names::UnknownMechanism;
pub use params::{Bound, Params};
pub use plain_file::{
    check_file_replaceable, read_regular_file_capped, write_file_replacing_regular,
};
pub use report::{Fallback, Report, Verification, ZeroCopy, REPORT_SCHEMA_VERSION};
pub use size::{format_bytes, format_rate, parse_size};
