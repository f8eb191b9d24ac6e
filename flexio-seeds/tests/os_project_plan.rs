//! The OS project's exhibits plan every combination and axis of the
//! original: sender and receiver mechanisms, sample inputs, file counts,
//! buffer and map sizes.

use flexio::MechanismName;
use flexio_bench::model::{CacheState, Contender};
use flexio_bench::plan::Scenario;
use flexio_seeds::seeds;

/// The pairs (sender, receiver, chunk) an exhibit plans, by (size, files).
fn planned(id: &str, quick: bool) -> Vec<(u64, u32, u64, MechanismName, MechanismName, u64)> {
    let exhibit = seeds::find(id).unwrap();
    let mut pairs = Vec::new();
    for cell in (exhibit.cells)(quick) {
        assert_eq!(cell.key.scenario, Scenario::SocketPair, "{id}");
        for entrant in &cell.entrants {
            let Contender::Pair {
                sender,
                receiver,
                chunk,
            } = entrant.contender()
            else {
                panic!("{id}: {entrant:?} is not a pair");
            };
            pairs.push((
                cell.key.size,
                cell.key.flows,
                cell.key.chunk,
                sender,
                receiver,
                chunk,
            ));
        }
    }
    pairs
}

const METHODS: [MechanismName; 2] = [MechanismName::ReadWrite, MechanismName::Mmap];

fn has_all_combinations(
    pairs: &[(u64, u32, u64, MechanismName, MechanismName, u64)],
    size: u64,
    files: u32,
) -> bool {
    METHODS.iter().all(|&master| {
        METHODS
            .iter()
            .all(|&slave| pairs.contains(&(size, files, 0, master, slave, 4096)))
    })
}

#[test]
fn figure_4_plans_both_sample_inputs_in_all_four_combinations() {
    let pairs = planned("os-fig-4", true);
    assert!(has_all_combinations(&pairs, 24_160, 10));
    assert!(has_all_combinations(&pairs, 11 << 20, 1));
    assert_eq!(pairs.len(), 8);
}

#[test]
fn figure_5_plans_one_five_and_ten_files_of_the_same_total() {
    for (quick, total) in [(true, 250u64 << 20), (false, 1000 << 20)] {
        let pairs = planned("os-fig-5", quick);
        for files in [1, 5, 10] {
            assert!(has_all_combinations(&pairs, total, files), "{files} files");
        }
        assert_eq!(pairs.len(), 12);
    }
}

#[test]
fn figure_5_connects_once_per_file_with_cold_sources_as_the_original_did() {
    for quick in [true, false] {
        let cells = (seeds::find("os-fig-5").unwrap().cells)(quick);
        assert_eq!(cells.len(), 3);
        for cell in cells {
            assert!(cell.key.connection_per_file, "{}", cell.label());
            assert_eq!(cell.key.cache, CacheState::Cold, "{}", cell.label());
        }
    }
    assert!(seeds::find("os-fig-5").unwrap().gaps.is_empty());
    // Figure 4's sample inputs keep the one connection.
    for cell in (seeds::find("os-fig-4").unwrap().cells)(true) {
        assert!(!cell.key.connection_per_file, "{}", cell.label());
    }
}

#[test]
fn figure_6_sweeps_buffer_and_map_size_on_both_sides() {
    let pairs = planned("os-fig-6", true);
    for chunk in [4u64 << 10, 64 << 10, 1 << 20, 8 << 20] {
        for m in METHODS {
            assert!(
                pairs
                    .iter()
                    .any(|p| p.2 == chunk && p.3 == m && p.4 == m && p.5 == chunk),
                "{m} at {chunk}"
            );
        }
    }
}

#[test]
fn figure_7_has_sync_and_io_uring_with_file_io_and_with_mmap_on_each_side() {
    use MechanismName::{IoUring, Mmap, ReadWrite};
    let pairs: Vec<(MechanismName, MechanismName)> = planned("os-fig-7", true)
        .into_iter()
        .map(|p| (p.3, p.4))
        .collect();
    for pair in [
        (ReadWrite, ReadWrite),
        (IoUring, IoUring),
        (Mmap, ReadWrite),
        (Mmap, IoUring),
        (ReadWrite, Mmap),
        (IoUring, Mmap),
    ] {
        assert!(pairs.contains(&pair), "{pair:?}");
    }
}
