//! The range API: endpoints the caller keeps, many ranges over one
//! connection, many writers into one new file.

use crate::common;

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;

use common::scratch_dir;
use flexio::range::{Mover, NewFile, RangeEnd, RangeRequest, RangeTotals};
use flexio::{EndpointKind, MechanismName};

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64 * 2_654_435_761) >> 7) as u8 ^ seed)
        .collect()
}

#[test]
fn three_files_back_to_back_over_one_tcp_connection() {
    let dir = scratch_dir();
    let sizes = [1 << 20, 12_345, 3 << 20];
    let files: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let path = dir.path().join(format!("f{i}"));
            std::fs::write(&path, bytes(len, i as u8)).unwrap();
            path
        })
        .collect();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let total: usize = sizes.iter().sum();
    let receiver = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).unwrap();
        received
    });
    let stream = TcpStream::connect(address).unwrap();
    let sink = RangeEnd::new(stream.as_fd(), "tcp").unwrap();
    assert_eq!(sink.kind(), EndpointKind::Tcp);
    let mut mover = Mover::new();
    let mut totals = RangeTotals::default();
    let mechanisms = [
        MechanismName::Sendfile,
        MechanismName::Splice,
        MechanismName::Auto,
    ];
    for (path, mechanism) in files.iter().zip(mechanisms) {
        let file = std::fs::File::open(path).unwrap();
        let source = RangeEnd::new(file.as_fd(), path.display().to_string()).unwrap();
        let request = RangeRequest::new(0, 0, Some(file.metadata().unwrap().len())).via(mechanism);
        totals.add(mover.move_range(&source, &sink, &request, None).unwrap());
        // The connection is still open and writable after each file.
        assert!(rustix::net::getpeername(&stream).is_ok());
    }
    drop(sink);
    drop(stream);
    let received = receiver.join().unwrap();
    assert_eq!(received.len(), total);
    assert_eq!(totals.bytes, total as u64);
    assert_eq!(totals.ranges.len(), 3);
    let mut expected = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        expected.extend(bytes(len, i as u8));
    }
    assert!(received == expected, "the three files, in order");
}

#[test]
fn four_threads_write_four_ranges_of_one_new_file_and_commit_it() {
    let dir = scratch_dir();
    let source_path = dir.path().join("source");
    let data = bytes(8 << 20, 9);
    std::fs::write(&source_path, &data).unwrap();
    let destination = dir.path().join("destination");
    std::fs::write(&destination, b"old content").unwrap();
    let file = NewFile::create(&destination, 0o644).unwrap();
    let quarter = data.len() as u64 / 4;
    std::thread::scope(|scope| {
        for (i, mechanism) in [
            MechanismName::CopyFileRange,
            MechanismName::ReadWrite,
            MechanismName::Splice,
            MechanismName::IoUring,
        ]
        .into_iter()
        .enumerate()
        {
            let (file, source_path) = (&file, &source_path);
            scope.spawn(move || {
                let source = std::fs::File::open(source_path).unwrap();
                let start = i as u64 * quarter;
                let request = RangeRequest::new(start, start, Some(quarter)).via(mechanism);
                let report = Mover::new()
                    .move_range(
                        &RangeEnd::new(source.as_fd(), "source").unwrap(),
                        &file.as_end().unwrap(),
                        &request,
                        None,
                    )
                    .unwrap();
                assert_eq!(report.bytes, quarter, "{mechanism}");
            });
        }
    });
    // Before the commit the old content stands.
    assert_eq!(std::fs::read(&destination).unwrap(), b"old content");
    file.commit(data.len() as u64, true).unwrap();
    assert!(std::fs::read(&destination).unwrap() == data);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 2, "no temporary file left");
}

#[test]
fn a_new_file_missing_a_range_is_not_committed_and_leaves_nothing() {
    let dir = scratch_dir();
    let destination = dir.path().join("destination");
    let file = NewFile::create(&destination, 0o644).unwrap();
    rustix::io::pwrite(file.fd(), b"first half", 0).unwrap();
    let error = file.commit(20, false).unwrap_err();
    assert!(error.to_string().contains("not committed"), "{error}");
    assert!(!destination.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// `direct` once switched O_DIRECT on with F_SETFL, on the file description
/// every writer of a NewFile shares: four writers raced on the flag and a
/// buffered tail met EINVAL. Each now opens its own direct description.
#[test]
fn four_direct_writers_of_one_new_file_do_not_race_on_o_direct() {
    let dir = scratch_dir();
    let source_path = dir.path().join("source");
    // Quarters that end off a block boundary, so every writer has a tail.
    let quarter = (2 << 20) + 1000;
    let data = bytes(quarter * 4, 11);
    std::fs::write(&source_path, &data).unwrap();
    let destination = dir.path().join("destination");
    for round in 0..4 {
        let file = NewFile::create(&destination, 0o644).unwrap();
        std::thread::scope(|scope| {
            for i in 0..4u64 {
                let (file, source_path) = (&file, &source_path);
                let mechanism = if (i + round) % 2 == 0 {
                    MechanismName::Direct
                } else {
                    MechanismName::IoUring
                };
                scope.spawn(move || {
                    let source = std::fs::File::open(source_path).unwrap();
                    let start = i * quarter as u64;
                    let mut request =
                        RangeRequest::new(start, start, Some(quarter as u64)).via(mechanism);
                    request.params.direct = true;
                    request.strict = true;
                    let report = Mover::new()
                        .move_range(
                            &RangeEnd::new(source.as_fd(), "source").unwrap(),
                            &file.as_end().unwrap(),
                            &request,
                            None,
                        )
                        .unwrap_or_else(|e| panic!("{mechanism} range {i}: {e}"));
                    assert_eq!(report.bytes, quarter as u64);
                });
            }
        });
        file.commit(data.len() as u64, false).unwrap();
        assert!(
            std::fs::read(&destination).unwrap() == data,
            "round {round}"
        );
    }
}

/// Issue 24: a server's turn of 1 MiB from a file cut short said "ended
/// early at byte 13500416: expected 1048576 bytes" (the turn's length, not
/// where it was to end). The error names the offset the range was to
/// reach.
#[test]
fn a_range_that_ends_early_names_the_offset_it_was_to_reach() {
    let mut from = tempfile::tempfile().unwrap();
    std::io::Write::write_all(&mut from, &bytes((12 << 20) + 4096, 3)).unwrap();
    let to = tempfile::tempfile().unwrap();
    let source = RangeEnd::new(from.as_fd(), "cut-short").unwrap();
    let sink = RangeEnd::new(to.as_fd(), "out").unwrap();
    let error = Mover::new()
        .move_range(
            &source,
            &sink,
            &RangeRequest::new(12 << 20, 0, Some(1 << 20)),
            None,
        )
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains(&format!("ended early at byte {}", (12 << 20) + 4096)),
        "{message}"
    );
    assert!(
        message.contains(&format!("before byte {}", 13 << 20)),
        "{message}"
    );
}
