//! Replays a trace through a policy and counts hits: the simulator behind
//! `flexio cache sim`.

use crate::policy::PolicyName;

/// The outcome of one policy at one cache size over one trace.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SimResult {
    /// The policy.
    pub policy: PolicyName,
    /// The cache size in blocks.
    pub size_blocks: usize,
    /// References replayed.
    pub references: u64,
    /// References that hit.
    pub hits: u64,
    /// `hits / references` in percent.
    pub hit_ratio_percent: f64,
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
    let mut hits = 0u64;
    for &key in keys {
        if cache.get(key).is_some() {
            hits += 1;
        } else {
            cache.insert(key);
        }
    }
    let references = keys.len() as u64;
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
    }
}

/// Every policy at every size, sizes outermost; runs the pairs on up to
/// `threads` threads (each pair is independent).
pub fn simulate_all(
    keys: &[u64],
    policies: &[PolicyName],
    sizes: &[usize],
    threads: usize,
) -> Vec<SimResult> {
    let jobs: Vec<(usize, PolicyName)> = sizes
        .iter()
        .flat_map(|&size| policies.iter().map(move |&policy| (size, policy)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<SimResult>> = vec![None; jobs.len()];
    let slots = std::sync::Mutex::new(&mut results);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(size, policy)) = jobs.get(index) else {
                    break;
                };
                let result = simulate(keys, policy, size);
                slots.lock().expect("no panics while held")[index] = Some(result);
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}
