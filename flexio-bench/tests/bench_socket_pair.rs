//! The socket-pair scenario (the OS project's master and slave): every
//! sender mechanism against every receiver mechanism moves every file
//! byte-exact over one loopback connection, and the OS project's exhibits
//! plan every combination and axis of the original.

use flexio::{EndpointKind, MechanismName};
use flexio_bench::model::{CacheState, Contender, Results};
use flexio_bench::plan::{Cell, Entrant, Plan, Scenario};
use flexio_bench::runner::{self, Observer, RunOptions};
use flexio_bench::seeds;

#[derive(Default)]
struct Notes(Vec<String>);

impl Observer for Notes {
    fn cell_started(&mut self, _: usize, _: usize, _: &str) {}
    fn run_finished(&mut self, _: usize, _: usize) {}
    fn note(&mut self, text: &str) {
        self.0.push(text.to_string());
    }
}

/// Every mechanism flexio has for one side, this kernel permitting.
fn serving(source: EndpointKind, sink: EndpointKind) -> Vec<MechanismName> {
    MechanismName::serving(source, sink)
        .into_iter()
        .filter(|m| match m.available() {
            Ok(()) => true,
            Err(why) => {
                flexio_testkit::skipped(&format!("{m} on this kernel: {why}"));
                false
            }
        })
        .collect()
}

fn run_pairs(cells: Vec<Cell>) -> (Results, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut options = RunOptions::new(dir.path());
    options.warmups = 0;
    options.rounds = 1;
    options.drop_caches = false;
    let mut notes = Notes::default();
    let results = runner::run(&Plan { cells }, &options, &mut notes).unwrap();
    (results, notes.0)
}

#[test]
fn every_sender_and_receiver_moves_every_file_byte_exact() {
    let senders = serving(EndpointKind::File, EndpointKind::Tcp);
    let receivers = serving(EndpointKind::Tcp, EndpointKind::File);
    assert!(senders.contains(&MechanismName::Mmap) && receivers.contains(&MechanismName::Mmap));
    let entrants: Vec<Entrant> = senders
        .iter()
        .flat_map(|&s| receivers.iter().map(move |&r| Entrant::pair(s, r, 4096)))
        .collect();
    // Ten small files (the first sample input), and three files whose
    // lengths differ and end mid-page, at a chunk that does not divide them.
    let cells = vec![
        Cell::new(
            Scenario::SocketPair,
            24_160,
            CacheState::NotApplicable,
            entrants.clone(),
        )
        .flows(10)
        .path("loopback"),
        Cell::new(
            Scenario::SocketPair,
            (3 << 20) + 5,
            CacheState::NotApplicable,
            entrants.clone(),
        )
        .flows(3)
        .path("loopback"),
    ];
    let sizes: Vec<(u64, u32)> = cells.iter().map(|c| (c.key.size, c.key.flows)).collect();
    let (results, notes) = run_pairs(cells);
    for (size, files) in sizes {
        for entrant in &entrants {
            let contender = entrant.contender();
            let runs: Vec<_> = results
                .runs
                .iter()
                .filter(|r| {
                    r.cell.size == size && r.cell.flows == files && r.contender == contender
                })
                .collect();
            assert_eq!(
                runs.len(),
                1,
                "{} {size} B in {files}: {notes:?}",
                contender.label()
            );
            assert_eq!(runs[0].measured.bytes, size);
            assert!(runs[0].measured.wall_ns > 0);
        }
    }
    assert!(
        notes.iter().all(|n| !n.contains("socket-pair")),
        "{notes:?}"
    );
}

#[test]
fn a_pair_in_another_scenario_is_refused_with_a_note() {
    let cell = Cell::new(
        Scenario::SocketToFile,
        1 << 16,
        CacheState::NotApplicable,
        vec![Entrant::pair(
            MechanismName::ReadWrite,
            MechanismName::Mmap,
            4096,
        )],
    )
    .path("loopback");
    let (results, notes) = run_pairs(vec![cell]);
    assert!(results.runs.is_empty());
    assert!(
        notes
            .iter()
            .any(|n| n.contains("is not a socket-to-file contender")),
        "{notes:?}"
    );
}

/// The pairs (sender, receiver, chunk) an exhibit plans, by (size, files).
fn planned(id: &str, quick: bool) -> Vec<(u64, u32, u64, MechanismName, MechanismName, u64)> {
    let exhibit = seeds::find(id).unwrap();
    assert_eq!(exhibit.status, seeds::Status::Full, "{id}");
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
