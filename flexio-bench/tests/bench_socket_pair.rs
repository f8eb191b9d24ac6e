//! The socket-pair scenario (the OS project's master and slave): every
//! sender mechanism against every receiver mechanism moves every file
//! byte-exact over one loopback connection (the OS project's exhibits'
//! plans are tested with them in flexio-seeds).

use flexio::profile::FlowKind;
use flexio::{EndpointKind, MechanismName};
use flexio_bench::model::{CacheState, Results};
use flexio_bench::plan::{Cell, Entrant, Plan, Scenario};
use flexio_bench::runner::{self, Observer, RunOptions};

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
        Scenario::Flow(FlowKind::SocketToFile),
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

#[test]
fn a_cold_pair_with_a_connection_per_file_reads_sources_out_of_the_page_cache() {
    let entrants = vec![Entrant::pair(
        MechanismName::ReadWrite,
        MechanismName::Mmap,
        4096,
    )];
    let cell = |cache| {
        Cell::new(Scenario::SocketPair, 3 << 20, cache, entrants.clone())
            .flows(3)
            .path("loopback")
            .connection_per_file()
    };
    let cold = cell(CacheState::Cold);
    assert!(
        cold.label().ends_with("a connection per file"),
        "{}",
        cold.label()
    );
    let (results, notes) = run_pairs(vec![cold, cell(CacheState::NotApplicable)]);
    let resident = |cache| {
        let run = results
            .runs
            .iter()
            .find(|r| r.cell.cache == cache)
            .unwrap_or_else(|| panic!("{cache:?}: {notes:?}"));
        assert!(run.cell.connection_per_file);
        assert_eq!(run.measured.bytes, 3 << 20);
        run.source_resident_percent.expect("residency known")
    };
    // Dropped before the run (fsync and DONTNEED), cached otherwise.
    assert!(resident(CacheState::Cold) < 50.0, "{notes:?}");
    assert!(resident(CacheState::NotApplicable) > 99.0, "{notes:?}");
}
