//! `flexio get`: fetch one file over HTTP/1.1 into a [`NewFile`] — from one
//! connection, or from several kept-alive connections each asking for the
//! next piece by `Range` — with body bytes spliced socket→file. The file
//! takes its name only when every byte arrived and, when the server offers
//! a manifest (`flexio serve`), each 1 MiB chunk matched its BLAKE3.

mod connection;
mod crawl;
mod listing;
mod mirror;
mod mirror_tree;
mod pieces;
mod progress;
mod quick_check;
mod relay;
mod report;
mod resume;
mod shard_get;
mod shard_put;
mod single;
mod sink;
mod tar_fetch;
mod transport;
mod tree;
mod tree_dest;
mod upload;
mod upload_skip;
mod upload_tree;
mod verify;

#[cfg(test)]
mod hostile_input;

use std::path::PathBuf;
use std::time::Duration;

use flexio::MechanismName;
use serde::Serialize;

pub use connection::Url;
pub use listing::ListingFormat;
pub use mirror::{get_mirrored, MirroredReport};
pub use mirror_tree::get_tree_mirrored;
pub use progress::TransferProgress;
pub use relay::Relay;
pub use report::{ListingReport, MirrorReport, ShardPart, ShardReport, TreeReport};
pub use shard_get::get_tree_sharded;
pub use single::get;
pub use tree::get_tree;
pub use upload::{put, put_paced, put_with, PutOptions, PutReport};
pub use upload_tree::{put_tree, put_tree_sharded, PutTreeReport};

use std::sync::Arc;

use flexio::pace::{Rate, TokenBucket};

use crate::tls::client::TlsClient;

/// The instant `timeout` from now, or as far ahead as the clock reaches
/// when that is past it: a wait asked to be endless (`--timeout
/// 10000000000000000000s`) is one, not a panic (`Instant + Duration`
/// overflows).
pub(crate) fn deadline_after(timeout: Duration) -> std::time::Instant {
    crate::deadline::after(std::time::Instant::now(), timeout)
}

/// How to fetch.
#[derive(Clone, Debug)]
pub struct GetOptions {
    /// Connections to fetch pieces over at once (1: a plain GET).
    pub streams: usize,
    /// Bytes one ranged request asks for.
    pub piece_size: u64,
    /// Deadline for connecting, for a response head, and for any stretch
    /// of a body without progress.
    pub timeout: Duration,
    /// Check the server's manifest when it has one.
    pub verify: bool,
    /// The socket→file mechanism (`auto` is splice).
    pub mechanism: MechanismName,
    /// fsync before the file takes its name.
    pub fsync: bool,
    /// Keep what arrived in a partial file and journal beside the
    /// destination, fetch only the missing pieces when run again, and
    /// fetch nothing when the destination already holds the server's file
    /// (its size and Last-Modified). `flexio get` does by default.
    pub resume: bool,
    /// The most bytes per second, over all streams together.
    pub rate: Option<Rate>,
    /// The bucket that keeps `rate`, shared by the streams (and by several
    /// gets, when the caller passes one); made from `rate` when `None`.
    pub rate_bucket: Option<Arc<TokenBucket>>,
    /// How `https://` servers are trusted (the system's store unless
    /// told otherwise).
    pub tls: TlsClient,
    /// Counters a progress bar reads (none: nothing counted).
    pub progress: Option<Arc<TransferProgress>>,
}

impl GetOptions {
    /// These options with the bucket for `rate` made, so that every stream
    /// shares it.
    pub(crate) fn with_rate_bucket(&self) -> GetOptions {
        let mut options = self.clone();
        if let (Some(rate), None) = (options.rate, &options.rate_bucket) {
            options.rate_bucket = Some(Arc::new(TokenBucket::new(
                rate,
                rate.default_burst(),
                std::time::Instant::now(),
            )));
        }
        options
    }
}

impl Default for GetOptions {
    fn default() -> Self {
        GetOptions {
            streams: 1,
            piece_size: 16 << 20,
            timeout: Duration::from_secs(30),
            verify: true,
            mechanism: MechanismName::Auto,
            fsync: false,
            resume: false,
            rate: None,
            rate_bucket: None,
            tls: TlsClient::default(),
            progress: None,
        }
    }
}

/// What a fetch did.
#[derive(Clone, Debug, Serialize)]
pub struct GetReport {
    /// The URL fetched.
    pub url: String,
    /// Where the file now is.
    pub destination: PathBuf,
    /// Its length.
    pub bytes: u64,
    /// Bytes an earlier, stopped run had fetched (`--resume`).
    pub resumed_bytes: u64,
    /// Connections used.
    pub streams: usize,
    /// Whether the server answered ranges (so pieces were fetched).
    pub ranged: bool,
    /// Why fewer streams than asked were used, when so.
    pub note: Option<String>,
    /// Requests sent for the body.
    pub requests: u64,
    /// System calls that moved body bytes.
    pub syscalls: u64,
    /// The mechanisms that moved the body.
    pub mechanisms: Vec<String>,
    /// Wall time from the first connection to the last body byte.
    pub transfer_ns: u64,
    /// Whether the manifest was checked (and matched).
    pub verified: bool,
    /// Time spent fetching the manifest and hashing.
    pub verify_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::deadline_after;
    use std::time::{Duration, Instant};

    #[test]
    fn a_deadline_past_the_clock_is_far_ahead_not_a_panic() {
        let now = Instant::now();
        assert!(deadline_after(Duration::MAX) > now + Duration::from_secs(3600 * 24 * 365));
        assert!(deadline_after(Duration::from_secs(10_000_000_000_000_000_000)) > now);
        let soon = deadline_after(Duration::from_secs(5));
        assert!(soon > now && soon <= Instant::now() + Duration::from_secs(5));
    }
}
