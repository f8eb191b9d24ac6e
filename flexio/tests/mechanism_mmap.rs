//! The `mmap` mechanism: every byte of file → file (mapped sink), file →
//! pipe, file → memory and file → socket over ranges that start and end
//! inside pages, and a source truncated while it is being copied, which
//! must end the flow with an error naming the offset — never a short
//! success, never a crash.

use crate::common;

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use flexio::{Error, Flow, MechanismName, Params, Progress, Report, Sink, Source};

const CHUNK: usize = 64 << 10;
const MIB: u64 = 1 << 20;

/// Bytes that repeat with no period a page or a window could hide.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn params(chunk: usize) -> Params {
    Params {
        chunk,
        ..Params::default()
    }
}

/// The sizes every sink is tried with.
fn sizes() -> [usize; 6] {
    [0, 1, 4095, 4096, 4097, 3 * CHUNK + 17]
}

/// (offset, length) ranges of a source of `size` bytes: the whole of it,
/// and one that starts and ends inside a page when there is room.
fn ranges(size: usize) -> Vec<(u64, u64)> {
    let mut ranges = vec![(0, size as u64)];
    if size > 2 {
        let offset = size / 3 + 1;
        let length = size - offset - size / 7;
        ranges.push((offset as u64, length as u64));
    }
    ranges
}

fn assert_ran_mmap(report: &Report, length: u64) {
    assert_eq!(report.measured.bytes, length);
    assert_eq!(report.mechanism_used, MechanismName::Mmap);
    assert!(report.fallbacks.is_empty(), "{:?}", report.fallbacks);
}

fn source_file(dir: &Path, size: usize, seed: u64) -> (std::path::PathBuf, Vec<u8>) {
    let path = dir.join(format!("source-{size}-{seed}"));
    let data = pattern(size, seed);
    std::fs::write(&path, &data).unwrap();
    (path, data)
}

/// One flow of `range` of `from` with `mmap` at `chunk` bytes a window.
fn flow<'a>(from: &Path, sink: Sink<'a>, (offset, length): (u64, u64), chunk: usize) -> Flow<'a> {
    Flow::new(Source::path(from), sink)
        .via(MechanismName::Mmap)
        .strict(true)
        .params(params(chunk))
        .offset(offset)
        .length(length)
}

fn expected(data: &[u8], (offset, length): (u64, u64)) -> &[u8] {
    &data[offset as usize..(offset + length) as usize]
}

#[test]
fn mmap_copies_file_to_file_through_a_mapped_sink() {
    let dir = tempfile::tempdir().unwrap();
    for size in sizes() {
        let (from, data) = source_file(dir.path(), size, size as u64);
        for range in ranges(size) {
            let to = dir.path().join(format!("to-{size}-{}", range.0));
            let report = flow(&from, Sink::path(&to), range, CHUNK).run().unwrap();
            assert_ran_mmap(&report, range.1);
            assert_eq!(
                std::fs::read(&to).unwrap(),
                expected(&data, range),
                "size {size} range {range:?}"
            );
        }
    }
}

#[test]
fn mmap_copies_file_to_pipe() {
    let dir = tempfile::tempdir().unwrap();
    for size in sizes() {
        let (from, data) = source_file(dir.path(), size, 100 + size as u64);
        for range in ranges(size) {
            let (reader, writer) = rustix::pipe::pipe().unwrap();
            let drain = thread::spawn(move || {
                let mut received = Vec::new();
                File::from(reader).read_to_end(&mut received).unwrap();
                received
            });
            let report = flow(&from, Sink::Fd(writer, "pipe".into()), range, CHUNK)
                .run()
                .unwrap();
            assert_ran_mmap(&report, range.1);
            assert_eq!(
                drain.join().unwrap(),
                expected(&data, range),
                "size {size} range {range:?}"
            );
        }
    }
}

#[test]
fn mmap_copies_file_to_memory() {
    let dir = tempfile::tempdir().unwrap();
    for size in sizes() {
        let (from, data) = source_file(dir.path(), size, 200 + size as u64);
        for range in ranges(size) {
            let mut out = vec![0xA5u8; range.1 as usize];
            let report = flow(&from, Sink::Memory(&mut out), range, CHUNK)
                .run()
                .unwrap();
            assert_ran_mmap(&report, range.1);
            assert_eq!(out, expected(&data, range), "size {size} range {range:?}");
        }
    }
}

/// A chunk that is not a multiple of the page size is rounded up; windows
/// after the first are aligned whatever the offset.
#[test]
fn mmap_rounds_an_odd_chunk_up_to_whole_pages() {
    let dir = tempfile::tempdir().unwrap();
    let size = 5 * CHUNK + 333;
    let (from, data) = source_file(dir.path(), size, 7);
    for range in ranges(size) {
        let to = dir.path().join(format!("odd-{}", range.0));
        let report = flow(&from, Sink::path(&to), range, 10_000).run().unwrap();
        assert_ran_mmap(&report, range.1);
        assert_eq!(std::fs::read(&to).unwrap(), expected(&data, range));
    }
}

/// An existing sink file open for reading and writing is mapped and
/// written in place from its position; what lies past the copied range is
/// kept, not truncated.
#[test]
fn mmap_into_a_longer_read_write_file_keeps_its_tail() {
    let dir = tempfile::tempdir().unwrap();
    let size = 2 * CHUNK + 99;
    let (from, data) = source_file(dir.path(), size, 11);
    let to = dir.path().join("longer");
    let old = vec![0xEEu8; 4 * CHUNK];
    std::fs::write(&to, &old).unwrap();
    let sink = OpenOptions::new().read(true).write(true).open(&to).unwrap();
    let range = (1000, size as u64 - 1000);
    let report = flow(
        &from,
        Sink::Fd(OwnedFd::from(sink), "longer".into()),
        range,
        CHUNK,
    )
    .run()
    .unwrap();
    assert_ran_mmap(&report, range.1);
    let written = std::fs::read(&to).unwrap();
    assert_eq!(written.len(), old.len());
    assert_eq!(&written[..range.1 as usize], expected(&data, range));
    assert_eq!(&written[range.1 as usize..], &old[range.1 as usize..]);
}

/// `--in-place` opens the sink write-only, which cannot be mapped shared:
/// the window is written out of the source map at the sink offset.
#[test]
fn mmap_in_place_at_an_unaligned_seek_writes_out_of_the_map() {
    let dir = tempfile::tempdir().unwrap();
    let size = 3 * CHUNK + 17;
    let (from, data) = source_file(dir.path(), size, 13);
    let to = dir.path().join("in-place");
    let mut old = vec![0x11u8; size + 5000];
    std::fs::write(&to, &old).unwrap();
    let range = (4097, size as u64 - 4097);
    let report = flow(&from, Sink::path(&to), range, CHUNK)
        .in_place(true)
        .seek(123)
        .run()
        .unwrap();
    assert_ran_mmap(&report, range.1);
    old[123..123 + range.1 as usize].copy_from_slice(expected(&data, range));
    assert_eq!(std::fs::read(&to).unwrap(), old);
}

/// A sparse source copied into a new file: only the data segments are
/// mapped and copied, the holes read back as zeros.
#[test]
fn mmap_copies_the_data_segments_of_a_sparse_file() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("sparse");
    let mut expected = vec![0u8; 64 * CHUNK];
    let mut file = File::create(&from).unwrap();
    file.set_len(expected.len() as u64).unwrap();
    for (at, seed) in [(0usize, 1u64), (20 * CHUNK + 5, 2), (63 * CHUNK, 3)] {
        let piece = pattern(CHUNK - 5, seed);
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(at as u64)).unwrap();
        file.write_all(&piece).unwrap();
        expected[at..at + piece.len()].copy_from_slice(&piece);
    }
    drop(file);
    let to = dir.path().join("sparse-copy");
    let report = flow(&from, Sink::path(&to), (0, expected.len() as u64), CHUNK)
        .run()
        .unwrap();
    assert_ran_mmap(&report, expected.len() as u64);
    assert_eq!(std::fs::read(&to).unwrap(), expected);
}

/// Writes `size` bytes of a repeating 1 MiB pattern, returning that
/// pattern.
fn big_source(path: &Path, size: u64) -> Vec<u8> {
    let block = pattern(MIB as usize, 99);
    let mut file = File::create(path).unwrap();
    for _ in 0..size / MIB {
        file.write_all(&block).unwrap();
    }
    block
}

fn assert_ended_between(error: &Error, low: u64, high: u64) {
    let offset = match error {
        Error::SourceEnded { offset, .. } | Error::MappingFault { offset, .. } => *offset,
        other => panic!("expected the source to end early, got {other}"),
    };
    assert!(
        (low..=high).contains(&offset),
        "offset {offset} not within {low}..={high}: {error}"
    );
}

/// The source is truncated to 1 MiB by the reader of the socket, after it
/// has read that first MiB: the writes out of the map then fault.
#[test]
fn mmap_source_truncated_under_a_socket_sink_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("shrinking");
    let block = big_source(&from, 64 * MIB);
    let (sink, mut peer) = UnixStream::pair().unwrap();
    let truncate_path = from.clone();
    let reader = thread::spawn(move || {
        let mut first = vec![0u8; MIB as usize];
        peer.read_exact(&mut first).unwrap();
        assert!(first == block, "the first MiB differs from the source");
        OpenOptions::new()
            .write(true)
            .open(&truncate_path)
            .unwrap()
            .set_len(MIB)
            .unwrap();
        let mut rest = Vec::new();
        peer.read_to_end(&mut rest).unwrap();
        MIB + rest.len() as u64
    });
    let result = Flow::new(
        Source::path(&from),
        Sink::Fd(OwnedFd::from(sink), "sock".into()),
    )
    .via(MechanismName::Mmap)
    .strict(true)
    .params(params(CHUNK))
    .run();
    let received = reader.join().unwrap();
    let error = result.expect_err("a truncated source must not succeed");
    assert_ended_between(&error, MIB, 64 * MIB);
    assert!(received < 64 * MIB, "received all {received} bytes");
}

/// The same with a file sink, where both sides are mapped and the copy
/// between them touches the vanished source pages (SIGBUS, caught).
#[test]
fn mmap_source_truncated_under_a_mapped_file_sink_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("shrinking");
    big_source(&from, 256 * MIB);
    let to = dir.path().join("copy");
    let progress = Arc::new(Progress::default());
    let watched = Arc::clone(&progress);
    let over = Arc::new(AtomicBool::new(false));
    let flow_over = Arc::clone(&over);
    let truncate_path = from.clone();
    let truncater = thread::spawn(move || {
        let file = OpenOptions::new().write(true).open(&truncate_path).unwrap();
        while watched.done() <= MIB {
            if flow_over.load(Ordering::Acquire) {
                return None;
            }
            thread::yield_now();
        }
        file.set_len(MIB).unwrap();
        Some(watched.done())
    });
    let result = Flow::new(Source::path(&from), Sink::path(&to))
        .via(MechanismName::Mmap)
        .strict(true)
        .params(params(CHUNK))
        .progress(Arc::clone(&progress))
        .run();
    over.store(true, Ordering::Release);
    let done_at_truncation = truncater.join().unwrap();
    let error = result.expect_err("a truncated source must not succeed");
    assert_ended_between(&error, MIB, 256 * MIB);
    let done_at_truncation = done_at_truncation.expect("the flow ended before 1 MiB");
    assert!(done_at_truncation < 256 * MIB);
    assert!(
        !to.exists(),
        "a failed flow left a file under the final name"
    );
}

/// A small tmpfs, unmounted on drop; `None` (with the reason printed) where
/// this process may not mount one.
struct SmallTmpfs {
    dir: tempfile::TempDir,
}

impl SmallTmpfs {
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match mounted {
            Ok(output) if output.status.success() => Some(SmallTmpfs { dir }),
            Ok(output) => {
                common::skipped(&format!(
                    "cannot mount a tmpfs ({})",
                    String::from_utf8_lossy(&output.stderr).trim()
                ));
                None
            }
            Err(error) => {
                common::skipped(&format!("cannot run mount ({error})"));
                None
            }
        }
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

/// A sink file system without room: the reservation before mapping the
/// sink window fails with ENOSPC — an error, not a SIGBUS on the sink map.
/// Needs the right to mount a tmpfs (root); skipped otherwise.
#[test]
fn mmap_into_a_full_file_system_is_a_clean_enospc() {
    let Some(small) = SmallTmpfs::mount("1m") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let size = 4 * MIB as usize;
    let (from, _) = source_file(dir.path(), size, 17);
    let to = small.dir.path().join("too-big");
    let error = flow(&from, Sink::path(&to), (0, size as u64), CHUNK)
        .run()
        .expect_err("4 MiB do not fit in 1 MiB");
    match &error {
        Error::Io { op, source, .. } => {
            assert_eq!(*op, "fallocate", "{error}");
            assert_eq!(source.raw_os_error(), Some(libc::ENOSPC), "{error}");
        }
        other => panic!("expected ENOSPC from fallocate, got {other}"),
    }
    assert!(!to.exists());
    assert_eq!(std::fs::read_dir(small.dir.path()).unwrap().count(), 0);
}

/// The OS course project's memory-mapped receiver had a bug: a receiver
/// faster than its sender mapped a window and took it before the sender
/// had filled it. flexio's receiver (a socket read into a map of the sink
/// file) leaves a window only once reads have filled it: a sender that
/// trickles its bytes in small pieces with pauses still gives a file of
/// exactly its bytes, and exactly its length (the window grown past the
/// last byte is given back).
#[test]
fn mmap_receiver_never_outruns_a_slow_sender() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = pattern(3 * MIB as usize + 12_345, 41);
    for length in [None, Some(bytes.len() as u64)] {
        let (mut sender, receiver) = UnixStream::pair().unwrap();
        let sent = bytes.clone();
        let trickle = thread::spawn(move || {
            for piece in sent.chunks(300 * 1024 + 7) {
                sender.write_all(piece).unwrap();
                thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let dest = dir.path().join(format!("received-{}", length.is_some()));
        let mut flow = Flow::new(
            Source::Fd(OwnedFd::from(receiver), "socket".into()),
            Sink::path(&dest),
        )
        .via(MechanismName::Mmap)
        .strict(true)
        .params(params(MIB as usize));
        if let Some(length) = length {
            flow = flow.length(length);
        }
        let report = flow.run().unwrap();
        trickle.join().unwrap();
        assert_eq!(report.mechanism_used, MechanismName::Mmap);
        let received = std::fs::read(&dest).unwrap();
        assert_eq!(received.len(), bytes.len(), "length {length:?}");
        assert!(received == bytes, "length {length:?}: other bytes");
    }
}

/// A stream that ends before the length asked for is an error naming the
/// offset, and leaves no file behind.
#[test]
fn mmap_receiver_of_a_stream_that_ends_early_fails_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (mut sender, receiver) = UnixStream::pair().unwrap();
    let feeder = thread::spawn(move || sender.write_all(&pattern(100_000, 3)));
    let dest = dir.path().join("short");
    let error = Flow::new(
        Source::Fd(OwnedFd::from(receiver), "socket".into()),
        Sink::path(&dest),
    )
    .via(MechanismName::Mmap)
    .length(MIB)
    .run()
    .unwrap_err();
    feeder.join().unwrap().unwrap();
    assert!(
        matches!(
            error,
            Error::SourceEnded {
                offset: 100_000,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(!dest.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
