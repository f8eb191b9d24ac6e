//! The simulator against the ARC paper: Megiddo and Modha, "ARC: A
//! Self-Tuning, Low Overhead Replacement Cache", USENIX FAST 2003, Table
//! VIII, OLTP row. The trace ships in `shared/data/arc/` beside the
//! repository.

use std::path::PathBuf;

use flexio_cache::policy::PolicyName;
use flexio_cache::sim::{simulate, simulate_all};
use flexio_cache::trace::{Trace, ARC_PAPER_OLTP};

fn oltp() -> Option<Trace> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/arc/OLTP.lis.zst");
    if !path.exists() {
        eprintln!("skipped: no ARC OLTP trace at {}", path.display());
        return None;
    }
    Some(Trace::read_lis(&path).expect("the OLTP trace reads"))
}

#[test]
fn sim_lru_reproduces_the_arc_papers_oltp_column() {
    let Some(trace) = oltp() else { return };
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
    let Some(trace) = oltp() else { return };
    let sizes: Vec<usize> = ARC_PAPER_OLTP.iter().map(|row| row.0).collect();
    let results = simulate_all(&trace.keys, &PolicyName::ALL, &sizes, 2);
    for result in &results {
        eprintln!(
            "{:>6} {:>8} {:.2}",
            result.size_blocks, result.policy, result.hit_ratio_percent
        );
    }
    for (size, _, arc) in ARC_PAPER_OLTP {
        let default = results
            .iter()
            .find(|r| r.size_blocks == size && r.policy == PolicyName::DEFAULT)
            .unwrap();
        assert!(
            default.hit_ratio_percent >= arc - 0.005,
            "{} at {size} pages: {:.2} < the paper's ARC {arc}",
            PolicyName::DEFAULT,
            default.hit_ratio_percent
        );
    }
}
