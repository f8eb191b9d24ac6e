//! Eviction policies behind one trait.
//!
//! A policy owns the index of a fixed number of *frames* (slots for one
//! block each, numbered `0..capacity`): it maps a block key to the frame that
//! holds it, decides which key leaves when a new one comes, and hands the
//! freed frame to the newcomer. It never touches block data: the cache keeps
//! the bytes of frame `f` at `f * block_size` in its arena, and the
//! simulator keeps no bytes at all. Every operation is O(1) (amortised for
//! CLOCK, SIEVE and S3-FIFO, whose hands sweep), and the metadata is a few
//! `Vec`s indexed by frame — intrusive lists linked by `u32` indices, not a
//! `Box` per node — so a policy for millions of blocks is a handful of
//! allocations.
//!
//! | policy | source |
//! | --- | --- |
//! | [`Lru`] | least recently used |
//! | [`Clock`] | second chance over a ring (Corbató 1968) |
//! | [`Sieve`] | Zhang et al., "SIEVE is Simpler than LRU", NSDI 2024 |
//! | [`S3Fifo`] | Yang et al., "FIFO queues are all you need for cache eviction", SOSP 2023 |
//! | [`Arc`](self::Arc) | Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST 2003 |
//! | [`AdaptiveS3Fifo`] (the default) | S3-FIFO whose setting (small-queue share, reads to promote, whether a return from the ghost is guarded) follows the best of five miniature simulations of itself: Waldspurger et al., "Cache Modeling and Optimization using Miniature Simulations", USENIX ATC 2017 |

mod adaptive;
mod arc;
mod clock;
mod experts;
mod hit_marks;
pub(crate) mod list;
mod lru;
mod map;
mod s3fifo;
mod sieve;

pub use self::arc::Arc;
pub use adaptive::AdaptiveS3Fifo;
pub use clock::Clock;
pub use hit_marks::HitMarks;
pub use lru::Lru;
pub use s3fifo::S3Fifo;
pub use sieve::Sieve;

pub(crate) use map::{key_map, mix, KeyMap};

use std::fmt;
use std::str::FromStr;

/// The key of a block: its number in the file or device (byte offset
/// divided by the block size).
pub type Key = u64;

/// A frame index, `0..capacity`.
pub type Frame = u32;

/// What [`Policy::insert`] did to make room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inserted {
    /// The frame the new key now owns.
    pub frame: Frame,
    /// The key that lived in `frame` before and was evicted, if the cache
    /// was full. Its bytes are still in the frame when `insert` returns, so
    /// a write-back cache can write them out before reusing it.
    pub evicted: Option<Key>,
}

/// An eviction policy over a fixed number of frames.
///
/// # Examples
/// ```
/// use flexio_cache::policy::{Policy, PolicyName};
/// let mut lru = PolicyName::Lru.build(2);
/// assert_eq!(lru.get(7), None); // a miss: the caller loads the block...
/// let first = lru.insert(7); //    ...and inserts it
/// assert_eq!(first.evicted, None);
/// assert_eq!(lru.get(7), Some(first.frame)); // a hit
/// ```
pub trait Policy: Send {
    /// The policy's name.
    fn name(&self) -> PolicyName;
    /// How many frames (blocks) it holds when full.
    fn capacity(&self) -> usize;
    /// How many keys are resident.
    fn len(&self) -> usize;
    /// Whether no key is resident.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Looks `key` up and, when resident, records the access (a hit) and
    /// returns its frame. A miss changes nothing: the caller then loads the
    /// block and calls [`insert`](Policy::insert).
    fn get(&mut self, key: Key) -> Option<Frame> {
        let frame = self.peek(key)?;
        self.touch(frame);
        Some(frame)
    }
    /// Looks `key` up without counting an access.
    fn peek(&self, key: Key) -> Option<Frame>;
    /// Records an access to the resident block in `frame`: [`get`](Policy::get)
    /// is [`peek`](Policy::peek) then this. The cache calls the two apart to
    /// let the first read of a read-ahead block count as its arrival rather
    /// than as a second access, which would make every scanned block look
    /// popular.
    fn touch(&mut self, frame: Frame);
    /// Makes `key` resident, evicting one key when full.
    ///
    /// # Panics
    /// When `key` is already resident (call [`get`](Policy::get) first).
    fn insert(&mut self, key: Key) -> Inserted;
    /// The key resident in `frame`, if any.
    fn key_of(&self, frame: Frame) -> Option<Key>;
    /// The marks a hit sets, when a hit is nothing more than bumping its
    /// frame's mark (CLOCK's and SIEVE's bit, S3-FIFO's counter): a cache
    /// may then record a hit without the policy, so without its lock.
    /// `None` for policies whose hit moves the block (LRU, ARC).
    fn hit_marks(&self) -> Option<&HitMarks> {
        None
    }
}

/// The policies this crate implements, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyName {
    /// Least recently used.
    Lru,
    /// CLOCK (second chance).
    Clock,
    /// SIEVE.
    Sieve,
    /// S3-FIFO.
    S3Fifo,
    /// ARC.
    Arc,
    /// S3-FIFO with its small queue's share tuned as it runs.
    Adaptive,
}

impl PolicyName {
    /// Every policy, in the order tables print them.
    pub const ALL: [PolicyName; 6] = [
        PolicyName::Lru,
        PolicyName::Clock,
        PolicyName::Sieve,
        PolicyName::S3Fifo,
        PolicyName::Arc,
        PolicyName::Adaptive,
    ];

    /// The default policy of the cache: the adaptive S3-FIFO.
    ///
    /// S3-FIFO at its paper's fixed 10 % small queue beats the ARC paper's
    /// ARC on its OLTP trace (Megiddo and Modha, FAST 2003, Table VIII),
    /// but falls far behind LRU where blocks come back only once or twice
    /// after a while (`shift:` traces, and some of that paper's other
    /// traces). The adaptive one runs at the setting (small-queue share,
    /// reads to promote, whether a return from the ghost is guarded)
    /// whose miniature simulation scores best, so it keeps S3-FIFO's scan
    /// resistance and cheap hits, follows LRU where LRU is right and keeps
    /// what fits of a loop longer than the cache
    /// (`tests/sim_shapes.rs`, `tests/sim_arc_paper.rs`; the tables are in
    /// the crate's README).
    pub const DEFAULT: PolicyName = PolicyName::Adaptive;

    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyName::Lru => "lru",
            PolicyName::Clock => "clock",
            PolicyName::Sieve => "sieve",
            PolicyName::S3Fifo => "s3-fifo",
            PolicyName::Arc => "arc",
            PolicyName::Adaptive => "adaptive",
        }
    }

    /// A policy of this kind with room for `capacity` blocks.
    ///
    /// # Panics
    /// When `capacity` is 0 or does not fit a `u32` frame index.
    pub fn build(self, capacity: usize) -> Box<dyn Policy> {
        match self {
            PolicyName::Lru => Box::new(Lru::new(capacity)),
            PolicyName::Clock => Box::new(Clock::new(capacity)),
            PolicyName::Sieve => Box::new(Sieve::new(capacity)),
            PolicyName::S3Fifo => Box::new(S3Fifo::new(capacity)),
            PolicyName::Arc => Box::new(Arc::new(capacity)),
            PolicyName::Adaptive => Box::new(AdaptiveS3Fifo::new(capacity)),
        }
    }
}

impl fmt::Display for PolicyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PolicyName {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let lower = text.to_ascii_lowercase();
        let name = match lower.as_str() {
            "lru" => PolicyName::Lru,
            "clock" => PolicyName::Clock,
            "sieve" => PolicyName::Sieve,
            "s3-fifo" | "s3fifo" => PolicyName::S3Fifo,
            "arc" => PolicyName::Arc,
            "adaptive" => PolicyName::Adaptive,
            _ => {
                return Err(format!(
                    "unknown policy {text:?}; known: {}",
                    PolicyName::ALL.map(PolicyName::as_str).join(", ")
                ))
            }
        };
        Ok(name)
    }
}

/// Checks a capacity once for every policy: at least one frame, and frame
/// indices (plus the list sentinel) fit a `u32`.
fn checked_capacity(capacity: usize) -> u32 {
    assert!(capacity > 0, "a cache needs at least one frame");
    u32::try_from(capacity)
        .ok()
        .filter(|&c| c < list::NIL)
        .expect("at most u32::MAX - 1 frames")
}
