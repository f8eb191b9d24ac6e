//! The simulator against the ARC paper: Megiddo and Modha, "ARC: A
//! Self-Tuning, Low Overhead Replacement Cache", USENIX FAST 2003, Table
//! VIII, OLTP row. The traces are in the repository, `data/arc/` (their
//! README cites the paper, as their release asks).

use std::path::PathBuf;

use flexio_cache::policy::PolicyName;
use flexio_cache::sim::{simulate, simulate_all, SimPolicy, SimResult};
use flexio_cache::trace::{Trace, ARC_PAPER_OLTP};

fn arc_trace(name: &str) -> Trace {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data/arc")
        .join(name);
    Trace::read_lis(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn oltp() -> Trace {
    arc_trace("OLTP.lis.zst")
}

fn hit(results: &[SimResult], policy: SimPolicy, size: usize) -> f64 {
    results
        .iter()
        .find(|r| r.size_blocks == size && r.policy == policy)
        .expect("simulated")
        .hit_ratio_percent
}

#[test]
fn sim_lru_reproduces_the_arc_papers_oltp_column() {
    let trace = oltp();
    assert_eq!(trace.keys.len(), 914_145);
    for (size, lru, _) in ARC_PAPER_OLTP {
        let result = simulate(&trace.keys, PolicyName::Lru, size);
        assert_eq!(
            format!("{:.2}", result.hit_ratio_percent),
            format!("{lru:.2}"),
            "LRU at {size} pages"
        );
    }
}

#[test]
fn sim_default_policy_matches_or_beats_the_papers_arc_on_oltp() {
    let trace = oltp();
    let sizes: Vec<usize> = ARC_PAPER_OLTP.iter().map(|row| row.0).collect();
    let results = simulate_all(&trace.keys, &SimPolicy::all(), &sizes, 2);
    for result in &results {
        eprintln!(
            "{:>6} {:>8} {:.2}",
            result.size_blocks, result.policy, result.hit_ratio_percent
        );
    }
    let default = SimPolicy::Online(PolicyName::DEFAULT);
    let s3 = SimPolicy::Online(PolicyName::S3Fifo);
    for (size, _, arc) in ARC_PAPER_OLTP {
        let ours = hit(&results, default, size);
        assert!(
            ours >= arc - 0.005,
            "{default} at {size} pages: {ours:.2} < the paper's ARC {arc}"
        );
        let s3 = hit(&results, s3, size);
        assert!(
            ours >= s3 - 0.3,
            "{default} at {size} pages: {ours:.2} < S3-FIFO's {s3:.2} - 0.3"
        );
    }
}

#[test]
fn sim_min_on_oltp_is_the_limit_every_policy_stays_under() {
    let trace = oltp();
    let sizes: Vec<usize> = ARC_PAPER_OLTP.iter().map(|row| row.0).collect();
    let results = simulate_all(&trace.keys, &[SimPolicy::Min], &sizes, 2);
    let min: Vec<String> = sizes
        .iter()
        .map(|&size| format!("{:.1}", hit(&results, SimPolicy::Min, size)))
        .collect();
    // Belady's MIN on OLTP at 1 000 .. 15 000 blocks.
    assert_eq!(min, ["53.6", "60.4", "68.3", "73.0", "75.1"]);
}

#[test]
fn sim_default_is_never_below_lru_or_arc_on_p3() {
    let trace = arc_trace("P3.lis.zst");
    let sizes = [1024, 4096, 16384, 32768, 131072];
    let policies = [PolicyName::Lru, PolicyName::Arc, PolicyName::DEFAULT].map(SimPolicy::Online);
    let results = simulate_all(&trace.keys, &policies, &sizes, 2);
    for size in sizes {
        let lru = hit(&results, policies[0], size);
        let arc = hit(&results, policies[1], size);
        let ours = hit(&results, policies[2], size);
        assert!(
            ours >= lru.max(arc) - 0.3,
            "P3 at {size}: the default {ours:.2} < max(LRU {lru:.2}, ARC {arc:.2}) - 0.3"
        );
    }
}

#[test]
fn sim_default_keeps_up_with_s3_fifo_on_p3() {
    // At 16 384 blocks, experts of 256 or 512 frames (one key in 64 or 32)
    // ranked the settings wrongly often enough to leave the default 0.4
    // points behind S3-FIFO; experts of about 1024 frames do not.
    let trace = arc_trace("P3.lis.zst");
    let sizes = [1024, 4096, 16384, 32768, 131072];
    let policies = [PolicyName::S3Fifo, PolicyName::DEFAULT].map(SimPolicy::Online);
    let results = simulate_all(&trace.keys, &policies, &sizes, 2);
    for size in sizes {
        let s3 = hit(&results, policies[0], size);
        let ours = hit(&results, policies[1], size);
        assert!(
            ours >= s3 - 0.3,
            "P3 at {size}: the default {ours:.2} < S3-FIFO {s3:.2} - 0.3"
        );
    }
}

#[test]
fn sim_lirs_and_w_tinylfu_on_oltp_stay_short_of_the_default_and_of_halfway() {
    // The measured points of comparison for the halfway goal: LIRS, built
    // on reuse distance, and W-TinyLFU, on frequency, get no closer to MIN
    // on OLTP than the default does.
    let trace = oltp();
    let sizes: Vec<usize> = ARC_PAPER_OLTP.iter().map(|row| row.0).collect();
    let policies = [
        SimPolicy::Online(PolicyName::Lru),
        SimPolicy::Lirs,
        SimPolicy::WTinyLfu,
        SimPolicy::Online(PolicyName::DEFAULT),
        SimPolicy::Min,
    ];
    let results = simulate_all(&trace.keys, &policies, &sizes, 2);
    for &size in &sizes {
        let [lru, lirs, tiny, ours, min] = policies.map(|p| hit(&results, p, size));
        assert!(
            lirs < ours && tiny < ours && ours < lru + (min - lru) / 2.0,
            "OLTP at {size}: LRU {lru:.2}, LIRS {lirs:.2}, W-TinyLFU {tiny:.2}, the default {ours:.2}, MIN {min:.2}"
        );
    }
}

#[test]
fn sim_a_perfect_choice_of_blocks_stays_short_of_halfway_on_oltp() {
    // MIN's verdict per block, known in advance, gets further than any
    // online policy here from 2000 blocks on, yet not halfway from LRU to
    // MIN at any size: the rest of MIN's lead is in when it keeps a block,
    // which no choice of blocks gives.
    let trace = oltp();
    let sizes: Vec<usize> = ARC_PAPER_OLTP.iter().map(|row| row.0).collect();
    let policies = [
        SimPolicy::Online(PolicyName::Lru),
        SimPolicy::Online(PolicyName::DEFAULT),
        SimPolicy::MinPerBlock,
        SimPolicy::Min,
    ];
    let results = simulate_all(&trace.keys, &policies, &sizes, 2);
    for &size in &sizes {
        let [lru, ours, per_block, min] = policies.map(|p| hit(&results, p, size));
        let halfway = lru + (min - lru) / 2.0;
        assert!(
            per_block > lru && per_block < halfway && (size < 2000 || per_block > ours + 0.8),
            "OLTP at {size}: LRU {lru:.2}, the default {ours:.2}, MIN per block {per_block:.2}, MIN {min:.2}"
        );
    }
}
