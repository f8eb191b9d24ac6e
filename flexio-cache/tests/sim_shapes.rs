//! The generated shapes that break fixed policies, each with the ordering
//! it must show: MIN above everything, LRU and ARC at nothing on a loop a
//! little over the cache, LRU ahead of S3-FIFO where blocks come back once
//! or twice, and the adaptive default never far behind the best of them.

use flexio_cache::policy::PolicyName;
use flexio_cache::sim::{simulate_all, SimPolicy, SimResult};
use flexio_cache::trace::Trace;

fn replay(spec: &str, sizes: &[usize]) -> Vec<SimResult> {
    let trace = Trace::open(spec).expect("a generator spec");
    let mut policies = SimPolicy::all();
    policies.extend([SimPolicy::Lirs, SimPolicy::WTinyLfu]);
    simulate_all(&trace.keys, &policies, sizes, 2)
}

fn hit(results: &[SimResult], policy: SimPolicy, size: usize) -> f64 {
    results
        .iter()
        .find(|r| r.policy == policy && r.size_blocks == size)
        .expect("simulated")
        .hit_ratio_percent
}

fn online(results: &[SimResult], policy: PolicyName, size: usize) -> f64 {
    hit(results, SimPolicy::Online(policy), size)
}

#[test]
fn sim_min_is_above_every_policy_on_every_shape() {
    let sizes = [50, 400, 1500];
    for spec in [
        "loop:blocks=1100,len=30000",
        "zipf+scan:blocks=3000,len=60000,scan=0.3",
        "shift:blocks=1000,phase=2000,len=60000",
        "zipf-shift:blocks=5000,alpha=1.0,to=0.7,len=60000",
    ] {
        let results = replay(spec, &sizes);
        for result in &results {
            let min = hit(&results, SimPolicy::Min, result.size_blocks);
            assert!(
                result.hit_ratio_percent <= min + 1e-9,
                "{spec}: {} at {} hits {:.2} % > MIN's {min:.2} %",
                result.policy,
                result.size_blocks,
                result.hit_ratio_percent
            );
        }
    }
}

#[test]
fn sim_a_loop_a_little_over_the_cache_beats_lru_and_arc_not_the_default() {
    let results = replay("loop:blocks=1100,len=200000", &[1050]);
    assert_eq!(online(&results, PolicyName::Lru, 1050), 0.0);
    assert_eq!(online(&results, PolicyName::Arc, 1050), 0.0);
    let default = online(&results, PolicyName::DEFAULT, 1050);
    assert!(default > 80.0, "the default hits {default:.2} %");
}

#[test]
fn sim_a_shifting_working_set_is_lrus_case_and_the_default_follows_it() {
    // At 250 blocks the blocks come back after more than twice any small
    // queue near S3-FIFO's: only a setting far from it (most of the cache,
    // left after one read) keeps them.
    let results = replay(
        "shift:blocks=1000,phase=2000,len=400000",
        &[250, 1000, 2000],
    );
    for size in [250, 1000, 2000] {
        let lru = online(&results, PolicyName::Lru, size);
        let s3 = online(&results, PolicyName::S3Fifo, size);
        let default = online(&results, PolicyName::DEFAULT, size);
        let lead = if size == 250 { 3.0 } else { 10.0 };
        assert!(lru > s3 + lead, "at {size}: LRU {lru:.2}, S3-FIFO {s3:.2}");
        assert!(
            default >= lru - 0.3,
            "at {size}: the default {default:.2} < LRU {lru:.2} - 0.3"
        );
    }
}

#[test]
fn sim_a_scan_through_a_hot_set_and_a_changing_skew_leave_the_default_ahead() {
    for (spec, sizes) in [
        (
            "zipf+scan:blocks=10000,len=500000,scan=0.3",
            [100, 1000, 8000],
        ),
        (
            "zipf-shift:blocks=20000,alpha=1.0,to=0.7,len=1000000",
            [100, 1000, 8000],
        ),
    ] {
        let results = replay(spec, &sizes);
        for size in sizes {
            let lru = online(&results, PolicyName::Lru, size);
            let arc = online(&results, PolicyName::Arc, size);
            let s3 = online(&results, PolicyName::S3Fifo, size);
            let default = online(&results, PolicyName::DEFAULT, size);
            assert!(
                default >= lru.max(arc) - 0.3 && default >= s3 - 0.3,
                "{spec} at {size}: the default {default:.2}, LRU {lru:.2}, ARC {arc:.2}, S3-FIFO {s3:.2}"
            );
        }
    }
}

/// The README's sizes for the generated shapes.
const README_SIZES: [usize; 6] = [250, 500, 1000, 1050, 2000, 8000];

/// Asserts the default within 0.3 points of LRU and of S3-FIFO (or ahead)
/// on `spec` at each of `sizes`.
fn assert_default_keeps_up_with_lru_and_s3_fifo(spec: &str, sizes: &[usize]) {
    let trace = Trace::open(spec).expect("a generator spec");
    let policies =
        [PolicyName::Lru, PolicyName::S3Fifo, PolicyName::DEFAULT].map(SimPolicy::Online);
    let results = simulate_all(&trace.keys, &policies, sizes, 2);
    for &size in sizes {
        let lru = online(&results, PolicyName::Lru, size);
        let s3 = online(&results, PolicyName::S3Fifo, size);
        let default = online(&results, PolicyName::DEFAULT, size);
        assert!(
            default >= lru - 0.3 && default >= s3 - 0.3,
            "{spec} at {size}: the default {default:.2}, LRU {lru:.2}, S3-FIFO {s3:.2}"
        );
    }
}

#[test]
fn sim_the_default_keeps_up_with_lru_and_s3_fifo_on_a_loop() {
    assert_default_keeps_up_with_lru_and_s3_fifo("loop:blocks=1100,len=200000", &README_SIZES);
}

#[test]
fn sim_the_default_keeps_what_fits_of_loops_over_the_cache() {
    // The guarded return's expert (policy/adaptive.rs): the main queue
    // keeps its blocks through the loop, as MIN keeps what fits, where
    // S3-FIFO's sweep lets most of them go once a lap. It used to trail
    // S3-FIFO by up to 1.8 points on some of these loops, and hit nothing
    // where the loop is two to four times the cache.
    for (spec, sizes) in [
        (
            "loop:blocks=1100,len=200000",
            &[940, 950, 960, 970, 980, 990, 1000, 1010, 1020, 1030, 1040][..],
        ),
        (
            "loop:blocks=550,len=100000",
            &[470, 480, 490, 500, 510, 520],
        ),
        (
            "loop:blocks=2200,len=400000",
            &[1880, 1920, 1960, 2000, 2040, 2080],
        ),
        (
            "loop:blocks=5500,len=1000000",
            &[4700, 4800, 4900, 5000, 5100],
        ),
        // Far over the cache: S3-FIFO and LRU hit nothing, MIN 22.5 and
        // 45.2 %.
        ("loop:blocks=1100,len=200000", &[250, 500]),
    ] {
        let trace = Trace::open(spec).expect("a generator spec");
        let policies = [
            SimPolicy::Online(PolicyName::S3Fifo),
            SimPolicy::Online(PolicyName::DEFAULT),
            SimPolicy::Min,
        ];
        let results = simulate_all(&trace.keys, &policies, sizes, 2);
        for &size in sizes {
            let [s3, default, min] = policies.map(|p| hit(&results, p, size));
            assert!(
                default >= s3 + 7.0 && default >= min - 1.0,
                "{spec} at {size}: the default {default:.2}, S3-FIFO {s3:.2}, MIN {min:.2}"
            );
        }
    }
}

#[test]
fn sim_the_default_keeps_up_with_lru_and_s3_fifo_on_a_scan_through_a_hot_set() {
    assert_default_keeps_up_with_lru_and_s3_fifo(
        "zipf+scan:blocks=10000,len=500000,scan=0.3",
        &README_SIZES,
    );
}

#[test]
fn sim_the_default_keeps_up_with_lru_and_s3_fifo_on_a_shifting_working_set_where_it_holds() {
    // Not at 500 blocks, where the default is 0.4 points behind LRU (the
    // README says so).
    assert_default_keeps_up_with_lru_and_s3_fifo(
        "shift:blocks=1000,phase=2000,len=400000",
        &[250, 1000, 1050, 2000, 8000],
    );
}

#[test]
fn sim_the_default_keeps_up_with_lru_and_s3_fifo_when_the_skew_changes() {
    assert_default_keeps_up_with_lru_and_s3_fifo(
        "zipf-shift:blocks=20000,alpha=1.0,to=0.7,len=1000000",
        &README_SIZES,
    );
}
