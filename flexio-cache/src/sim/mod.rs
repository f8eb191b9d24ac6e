//! Replays a trace through a policy and counts hits: the simulator behind
//! `flexio cache sim`. Beside the policies a cache can run, it replays
//! Belady's MIN ([`SimPolicy::Min`]), the offline optimum, so every table
//! can say how far each policy is from the best possible, and LIRS
//! ([`SimPolicy::Lirs`]) and W-TinyLFU ([`SimPolicy::WTinyLfu`]), online
//! policies no cache here runs, as points of comparison for how far an
//! online policy gets towards it, and MIN's verdict per block
//! ([`SimPolicy::MinPerBlock`]), a second offline yardstick: how far a
//! cache that knew which blocks to keep, but not when, would get.

mod lirs;
mod min;
mod min_per_block;
mod wtinylfu;

use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use crate::policy::PolicyName;

pub use lirs::Lirs;
pub use min::next_uses;
pub use wtinylfu::WTinyLfu;

/// What the simulator replays: a policy a cache can run, or MIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimPolicy {
    /// A policy of the cache.
    Online(PolicyName),
    /// Belady's MIN: evicts the block used furthest in the future. It
    /// reads the trace ahead, so it exists only here, as the limit.
    Min,
    /// LIRS (Jiang and Zhang, SIGMETRICS 2002), replayed only here as a
    /// point of comparison: [`Lirs`].
    Lirs,
    /// W-TinyLFU with a hill-climbed window (Einziger et al., ACM ToS 2017
    /// and Middleware 2018), replayed only here as a point of comparison:
    /// [`WTinyLfu`].
    WTinyLfu,
    /// MIN's verdict per block, known in advance: the blocks MIN keeps
    /// across most of their reuses are cached by LRU, the others evicted
    /// first (the best of four shares for "most"). Offline like MIN; a
    /// second yardstick, for a cache that knew which blocks to keep but
    /// not when (`sim/min_per_block.rs`).
    MinPerBlock,
}

impl SimPolicy {
    /// Every policy of the cache, then MIN: what `--policy all` replays
    /// (LIRS and W-TinyLFU only when named).
    pub fn all() -> Vec<SimPolicy> {
        PolicyName::ALL
            .iter()
            .map(|&p| SimPolicy::Online(p))
            .chain([SimPolicy::Min])
            .collect()
    }

    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            SimPolicy::Online(policy) => policy.as_str(),
            SimPolicy::Min => "min",
            SimPolicy::Lirs => "lirs",
            SimPolicy::WTinyLfu => "w-tinylfu",
            SimPolicy::MinPerBlock => "min-per-block",
        }
    }
}

impl fmt::Display for SimPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SimPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.eq_ignore_ascii_case("min") || text.eq_ignore_ascii_case("belady") {
            return Ok(SimPolicy::Min);
        }
        if text.eq_ignore_ascii_case("min-per-block") {
            return Ok(SimPolicy::MinPerBlock);
        }
        if text.eq_ignore_ascii_case("lirs") {
            return Ok(SimPolicy::Lirs);
        }
        if text.eq_ignore_ascii_case("w-tinylfu") || text.eq_ignore_ascii_case("wtinylfu") {
            return Ok(SimPolicy::WTinyLfu);
        }
        text.parse()
            .map(SimPolicy::Online)
            .map_err(|e: String| e + ", lirs, w-tinylfu, min, min-per-block")
    }
}

impl serde::Serialize for SimPolicy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The outcome of one policy at one cache size over one trace.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SimResult {
    /// The policy.
    pub policy: SimPolicy,
    /// The cache size in blocks.
    pub size_blocks: usize,
    /// References replayed.
    pub references: u64,
    /// References that hit.
    pub hits: u64,
    /// `hits / references` in percent.
    pub hit_ratio_percent: f64,
    /// References replayed per second of this replay's wall time (for
    /// MIN, not counting the pass that finds each reference's next use).
    pub references_per_second: f64,
}

impl SimResult {
    fn new(policy: SimPolicy, size: usize, references: u64, hits: u64, seconds: f64) -> Self {
        SimResult {
            policy,
            size_blocks: size,
            references,
            hits,
            hit_ratio_percent: if references == 0 {
                0.0
            } else {
                100.0 * hits as f64 / references as f64
            },
            references_per_second: if seconds > 0.0 {
                references as f64 / seconds
            } else {
                0.0
            },
        }
    }
}

/// Replays `keys` through a fresh `policy` of `size` blocks.
///
/// # Panics
/// When `size` is 0.
///
/// # Examples
/// ```
/// use flexio_cache::{policy::PolicyName, sim::simulate};
/// let result = simulate(&[1, 2, 1, 3, 1], PolicyName::Lru, 2);
/// assert_eq!(result.hits, 2);
/// assert_eq!(result.hit_ratio_percent, 40.0);
/// ```
pub fn simulate(keys: &[u64], policy: PolicyName, size: usize) -> SimResult {
    let mut cache = policy.build(size);
    let started = Instant::now();
    let hits = replay(keys, cache.as_mut());
    let seconds = started.elapsed().as_secs_f64();
    SimResult::new(
        SimPolicy::Online(policy),
        size,
        keys.len() as u64,
        hits,
        seconds,
    )
}

/// Replays `keys` through `cache` as a reader would (a hit is recorded,
/// a miss inserted) and counts the hits: for a policy built by hand, at a
/// setting [`PolicyName`] does not name.
///
/// # Examples
/// ```
/// use flexio_cache::{policy::S3Fifo, sim::replay};
/// let mut cache = S3Fifo::with_setting(2, 500, 1);
/// assert_eq!(replay(&[1, 2, 1, 3, 1], &mut cache), 2);
/// ```
pub fn replay(keys: &[u64], cache: &mut dyn crate::policy::Policy) -> u64 {
    let mut hits = 0u64;
    for &key in keys {
        if cache.get(key).is_some() {
            hits += 1;
        } else {
            cache.insert(key);
        }
    }
    hits
}

/// Replays `keys` under Belady's MIN with `size` blocks; `next` is
/// [`next_uses`] of `keys` (computed once for every size).
///
/// # Panics
/// When `size` is 0 or `next` is not as long as `keys`.
///
/// # Examples
/// ```
/// use flexio_cache::{policy::PolicyName, sim::{next_uses, simulate, simulate_min}};
/// let keys = [1, 2, 3, 1, 2, 4, 1, 2, 3, 4];
/// let min = simulate_min(&keys, &next_uses(&keys), 3);
/// let lru = simulate(&keys, PolicyName::Lru, 3);
/// assert!(min.hits >= lru.hits);
/// ```
pub fn simulate_min(keys: &[u64], next: &[usize], size: usize) -> SimResult {
    assert!(size > 0, "a cache needs at least one frame");
    assert_eq!(keys.len(), next.len(), "one next use per reference");
    let started = Instant::now();
    let hits = min::min_hits(keys, next, size);
    let seconds = started.elapsed().as_secs_f64();
    SimResult::new(SimPolicy::Min, size, keys.len() as u64, hits, seconds)
}

/// Replays `keys` with `size` blocks under MIN's verdict per block
/// ([`SimPolicy::MinPerBlock`]); `next` is [`next_uses`] of `keys`. Its
/// rate counts MIN's replay that labels the blocks and the four replays
/// of the labelled cache.
///
/// # Panics
/// When `size` is 0 or `next` is not as long as `keys`.
///
/// # Examples
/// ```
/// use flexio_cache::policy::PolicyName;
/// use flexio_cache::sim::{next_uses, simulate, simulate_min, simulate_min_per_block};
/// // A hot pair read between the blocks of a scan, then the scan again.
/// let keys: Vec<u64> = (0..200).flat_map(|i| [1_000, 1_001, i % 100]).collect();
/// let next = next_uses(&keys);
/// let per_block = simulate_min_per_block(&keys, &next, 4).hits;
/// assert!(per_block <= simulate_min(&keys, &next, 4).hits);
/// assert!(per_block >= simulate(&keys, PolicyName::Lru, 4).hits);
/// ```
pub fn simulate_min_per_block(keys: &[u64], next: &[usize], size: usize) -> SimResult {
    assert!(size > 0, "a cache needs at least one frame");
    assert_eq!(keys.len(), next.len(), "one next use per reference");
    let started = Instant::now();
    let hits = min_per_block::min_per_block_hits(keys, next, size);
    let seconds = started.elapsed().as_secs_f64();
    SimResult::new(
        SimPolicy::MinPerBlock,
        size,
        keys.len() as u64,
        hits,
        seconds,
    )
}

/// Replays `keys` through a fresh [`Lirs`] of `size` blocks.
///
/// # Panics
/// When `size` is 0.
///
/// # Examples
/// ```
/// use flexio_cache::sim::simulate_lirs;
/// let result = simulate_lirs(&[1, 2, 1, 3, 1], 2);
/// assert_eq!(result.hits, 2);
/// ```
pub fn simulate_lirs(keys: &[u64], size: usize) -> SimResult {
    let mut cache = Lirs::new(size);
    let started = Instant::now();
    let hits = keys.iter().filter(|&&key| cache.access(key)).count() as u64;
    let seconds = started.elapsed().as_secs_f64();
    SimResult::new(SimPolicy::Lirs, size, keys.len() as u64, hits, seconds)
}

/// Replays `keys` through a fresh [`WTinyLfu`] of `size` blocks.
///
/// # Panics
/// When `size` is 0.
///
/// # Examples
/// ```
/// use flexio_cache::sim::simulate_wtinylfu;
/// let result = simulate_wtinylfu(&[1, 2, 1, 3, 1], 2);
/// assert_eq!(result.hits, 2);
/// ```
pub fn simulate_wtinylfu(keys: &[u64], size: usize) -> SimResult {
    let mut cache = WTinyLfu::new(size);
    let started = Instant::now();
    let hits = keys.iter().filter(|&&key| cache.access(key)).count() as u64;
    let seconds = started.elapsed().as_secs_f64();
    SimResult::new(SimPolicy::WTinyLfu, size, keys.len() as u64, hits, seconds)
}

/// Every policy at every size, sizes outermost; runs the pairs on up to
/// `threads` threads (each pair is independent). MIN's next-use table is
/// built once, only when MIN or MIN per block is among `policies`.
///
/// A size above the trace's distinct blocks is replayed at that many
/// (nothing is evicted either way, so every policy hits the same) and
/// reported as asked: a size of billions costs nothing.
///
/// # Examples
/// ```
/// use flexio_cache::policy::PolicyName;
/// use flexio_cache::sim::{simulate_all, SimPolicy};
/// let keys = [1, 2, 1, 3, 1];
/// let results = simulate_all(&keys, &[SimPolicy::Online(PolicyName::Lru)], &[5_000_000_000], 1);
/// assert_eq!((results[0].size_blocks, results[0].hits), (5_000_000_000, 2));
/// ```
pub fn simulate_all(
    keys: &[u64],
    policies: &[SimPolicy],
    sizes: &[usize],
    threads: usize,
) -> Vec<SimResult> {
    let next = policies
        .iter()
        .any(|p| matches!(p, SimPolicy::Min | SimPolicy::MinPerBlock))
        .then(|| next_uses(keys));
    let distinct = keys
        .iter()
        .collect::<std::collections::HashSet<_>>()
        .len()
        .max(1);
    let jobs: Vec<(usize, SimPolicy)> = sizes
        .iter()
        .flat_map(|&size| policies.iter().map(move |&policy| (size, policy)))
        .collect();
    let counter = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<SimResult>> = vec![None; jobs.len()];
    let slots = std::sync::Mutex::new(&mut results);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| loop {
                let index = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(asked, policy)) = jobs.get(index) else {
                    break;
                };
                let size = asked.min(distinct);
                let mut result = match policy {
                    SimPolicy::Online(policy) => simulate(keys, policy, size),
                    SimPolicy::Lirs => simulate_lirs(keys, size),
                    SimPolicy::WTinyLfu => simulate_wtinylfu(keys, size),
                    SimPolicy::Min => {
                        simulate_min(keys, next.as_deref().expect("built for MIN"), size)
                    }
                    SimPolicy::MinPerBlock => {
                        simulate_min_per_block(keys, next.as_deref().expect("built"), size)
                    }
                };
                result.size_blocks = asked;
                slots.lock().expect("no panics while held")[index] = Some(result);
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

/// How far `hit` (a hit ratio) lies on the way from LRU's to MIN's, in
/// percent: 0 is LRU, 100 is MIN, below 0 is worse than LRU. `None` where
/// MIN is no better than LRU (no way to go).
///
/// # Examples
/// ```
/// use flexio_cache::sim::way_from_lru_to_min;
/// assert_eq!(way_from_lru_to_min(45.0, 40.0, 50.0), Some(50.0));
/// assert_eq!(way_from_lru_to_min(45.0, 50.0, 50.0), None);
/// ```
pub fn way_from_lru_to_min(hit: f64, lru: f64, min: f64) -> Option<f64> {
    (min - lru > 1e-9).then(|| 100.0 * (hit - lru) / (min - lru))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    #[test]
    fn no_policy_evicts_before_it_is_full_so_a_size_past_the_distinct_blocks_changes_nothing() {
        // What lets simulate_all replay a larger size at the trace's
        // distinct blocks: each replay, called directly at that many
        // blocks and at three times as many, hits the same.
        // A loop reads every block again, so one evicted early shows.
        for spec in [
            "zipf:blocks=300,alpha=0.8,len=5000,seed=3",
            "loop:blocks=200,len=5000",
        ] {
            let keys = Trace::open(spec).unwrap().keys;
            let distinct = keys.iter().collect::<std::collections::HashSet<_>>().len();
            let next = next_uses(&keys);
            let replays = |size: usize| -> Vec<u64> {
                let mut hits: Vec<u64> = PolicyName::ALL
                    .iter()
                    .map(|&policy| simulate(&keys, policy, size).hits)
                    .collect();
                hits.push(simulate_lirs(&keys, size).hits);
                hits.push(simulate_wtinylfu(&keys, size).hits);
                hits.push(simulate_min(&keys, &next, size).hits);
                hits.push(simulate_min_per_block(&keys, &next, size).hits);
                hits
            };
            let at_distinct = replays(distinct);
            let compulsory = (keys.len() - distinct) as u64;
            assert!(
                at_distinct.iter().all(|&h| h == compulsory),
                "{spec}: {at_distinct:?}"
            );
            assert_eq!(at_distinct, replays(3 * distinct), "{spec}");
        }
    }
}
