//! The adaptive default: S3-FIFO whose small queue's share is chosen, and
//! chosen again as the workload changes, by miniature simulations.
//!
//! S3-FIFO's one knob is how much of the cache the small queue holds. At
//! the paper's 10 % a block must be read again within a short window to
//! stay, which is right for a trace with frequent blocks among one-time
//! reads and a scan, and wrong for one whose blocks come back once or
//! twice after a while: there LRU hits more (the share should be most of
//! the cache), and a loop a little larger than the cache wants it small.
//! No fixed share is right for every trace and size.
//!
//! So the policy tunes the share the way Waldspurger, Saemundsson, Ahmad
//! and Park tune caches in "Cache Modeling and Optimization using
//! Miniature Simulations" (USENIX ATC 2017): one key in `R` (picked by
//! hash, which keeps each sampled key's whole reuse pattern, as in SHARDS,
//! Waldspurger et al., FAST 2015) also goes through three small S3-FIFOs of
//! `capacity / R` frames whose shares are half, equal to and twice the
//! cache's own. Every `2 × capacity / R` sampled references the cache takes
//! the share of the one that hit most (the current one on a tie), and the
//! three are set around it again. The share moves between 1 % and 99 %.
//! The search is local: where blocks come back only after more than twice
//! the small queue, none of the three hits them and the share stays (a
//! rule that moved up on such ties did worse on the ARC paper's P3).
//!
//! Cost: a reference that is not sampled costs what S3-FIFO's does; a
//! sampled one (one in 8 to 64) replays in three caches a fraction of
//! the size, and its hits take the shard's lock so the policy sees them
//! ([`HitMarks::policy_sees`]). The experts' metadata is `3 / R` of the
//! cache's (at most 3/8 more): about 21 bytes per cached block on top of
//! S3-FIFO's 56 (key 8, links 8, mark 1, map entry about 18, ghost about
//! 0.9 × 24). A cache of fewer than `16 × 8` frames has no room for
//! experts and stays at 10 %, which is S3-FIFO.

use super::hit_marks::sampled_key;
use super::{Frame, HitMarks, Inserted, Key, Policy, PolicyName, S3Fifo};

/// The small queue's share to start from, in thousandths: the paper's.
const START_SHARE: u32 = 100;

/// The share's bounds, in thousandths.
const SHARE_RANGE: (u32, u32) = (10, 990);

/// Fewer frames than this in each expert and there are no experts.
const MIN_EXPERT_FRAMES: usize = 16;

/// Sampled references per decision, as a multiple of an expert's size.
const PERIOD_PER_FRAME: u64 = 2;

/// The adaptive S3-FIFO over `capacity` frames: the cache's default.
///
/// # Examples
/// ```
/// use flexio_cache::policy::{AdaptiveS3Fifo, PolicyName};
/// use flexio_cache::{sim::simulate, trace::Trace};
/// // A working set that moves on: each block is read a few times, then
/// // never again. S3-FIFO's 10 % small queue lets most blocks go before
/// // their second read; the adaptive share grows and keeps them.
/// let trace = Trace::open("shift:blocks=1000,phase=2000,len=200000").unwrap();
/// let fixed = simulate(&trace.keys, PolicyName::S3Fifo, 1000);
/// let adaptive = simulate(&trace.keys, PolicyName::Adaptive, 1000);
/// assert!(adaptive.hit_ratio_percent > fixed.hit_ratio_percent + 10.0);
///
/// let mut cache = AdaptiveS3Fifo::new(1000);
/// for &key in &trace.keys {
///     if flexio_cache::policy::Policy::get(&mut cache, key).is_none() {
///         flexio_cache::policy::Policy::insert(&mut cache, key);
///     }
/// }
/// assert!(cache.small_share_permille() > 100);
/// ```
pub struct AdaptiveS3Fifo {
    cache: S3Fifo,
    tuner: Option<Tuner>,
    capacity: usize,
}

/// The miniature simulations and what they decided.
struct Tuner {
    /// One key in `mask + 1` is sampled.
    mask: u64,
    /// Half, equal to and twice the cache's share.
    experts: [S3Fifo; 3],
    shares: [u32; 3],
    hits: [u64; 3],
    expert_frames: usize,
    sampled: u64,
    period: u64,
}

impl AdaptiveS3Fifo {
    /// An empty adaptive S3-FIFO with room for `capacity` blocks.
    ///
    /// # Panics
    /// When `capacity` is 0 or does not fit a `u32`.
    pub fn new(capacity: usize) -> Self {
        let mut cache = S3Fifo::with_small_target(capacity, share_of(capacity, START_SHARE));
        // One key in 8 for small caches, in up to 64 for large ones, so an
        // expert holds about 256 frames where it can.
        let rate = (capacity / 256).next_power_of_two().clamp(8, 64);
        let expert_frames = capacity / rate;
        let tuner = (expert_frames >= MIN_EXPERT_FRAMES).then(|| {
            let mask = rate as u64 - 1;
            cache.observe_sampled_hits(mask);
            let shares = around(START_SHARE);
            Tuner {
                mask,
                experts: shares.map(|share| {
                    S3Fifo::with_small_target(expert_frames, share_of(expert_frames, share))
                }),
                shares,
                hits: [0; 3],
                expert_frames,
                sampled: 0,
                period: PERIOD_PER_FRAME * expert_frames as u64,
            }
        });
        AdaptiveS3Fifo {
            cache,
            tuner,
            capacity,
        }
    }

    /// The small queue's share now, in thousandths of the capacity.
    pub fn small_share_permille(&self) -> u32 {
        self.tuner.as_ref().map_or(START_SHARE, |t| t.shares[1])
    }

    /// Replays a reference to `key` in the experts, if it is sampled.
    fn observe(&mut self, key: Key) {
        let Some(tuner) = &mut self.tuner else {
            return;
        };
        if !sampled_key(key, tuner.mask) {
            return;
        }
        for (expert, hits) in tuner.experts.iter_mut().zip(&mut tuner.hits) {
            *hits += u64::from(expert.access(key));
        }
        tuner.sampled += 1;
        if tuner.sampled >= tuner.period {
            let share = tuner.decide();
            self.cache.set_small_target(share_of(self.capacity, share));
        }
    }
}

impl Tuner {
    /// Takes the share of the expert that hit most (the middle one on a
    /// tie with it), sets the experts around it, and starts a new period.
    fn decide(&mut self) -> u32 {
        let best = [1, 0, 2]
            .into_iter()
            .max_by_key(|&i| (self.hits[i], i == 1))
            .expect("three experts");
        let share = self.shares[best];
        self.shares = around(share);
        for (expert, &share) in self.experts.iter_mut().zip(&self.shares) {
            expert.set_small_target(share_of(self.expert_frames, share));
        }
        self.hits = [0; 3];
        self.sampled = 0;
        share
    }
}

/// Half, equal to and twice `share`, within [`SHARE_RANGE`].
fn around(share: u32) -> [u32; 3] {
    let (low, high) = SHARE_RANGE;
    [
        (share / 2).clamp(low, high),
        share,
        (share * 2).clamp(low, high),
    ]
}

/// `share` thousandths of `frames`, at least one frame.
fn share_of(frames: usize, share: u32) -> usize {
    (frames * share as usize / 1000).max(1)
}

impl Policy for AdaptiveS3Fifo {
    fn name(&self) -> PolicyName {
        PolicyName::Adaptive
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.cache.len()
    }

    fn peek(&self, key: Key) -> Option<Frame> {
        self.cache.peek(key)
    }

    fn touch(&mut self, frame: Frame) {
        self.cache.touch(frame);
        self.observe(self.cache.key_in(frame));
    }

    fn insert(&mut self, key: Key) -> Inserted {
        let inserted = self.cache.insert(key);
        self.observe(key);
        inserted
    }

    fn key_of(&self, frame: Frame) -> Option<Key> {
        self.cache.key_of(frame)
    }

    fn hit_marks(&self) -> Option<&HitMarks> {
        self.cache.hit_marks()
    }
}
