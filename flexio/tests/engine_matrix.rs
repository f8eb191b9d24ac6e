//! Every (source kind, sink kind, mechanism) triple the engine supports, over
//! the same cases, expecting the same bytes; flows past 4 GiB; ranges on block
//! devices and files written in place.

use crate::common;

use std::fs::{self, File};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use common::*;
use flexio::{EndpointKind, Flow, MechanismName, Params, Sink, Source};

use EndpointKind::{BlockDevice, File as FileKind, Memory, Pipe, Tcp, Unix};

#[test]
fn file_source_to_every_sink() {
    EngineTester::new().sources(&[FileKind]).test();
}

#[test]
fn block_device_source_to_every_sink() {
    if !require_root("block device sources") {
        return;
    }
    EngineTester::new().sources(&[BlockDevice]).test();
}

#[test]
fn tcp_source_to_every_sink() {
    EngineTester::new().sources(&[Tcp]).test();
}

#[test]
fn unix_source_to_every_sink() {
    EngineTester::new().sources(&[Unix]).test();
}

#[test]
fn pipe_source_to_every_sink() {
    EngineTester::new().sources(&[Pipe]).test();
}

#[test]
fn memory_source_to_every_sink() {
    EngineTester::new().sources(&[Memory]).test();
}

// ---------------------------------------------------------------------------
// 5 GiB: more than one 2 GiB system call, offsets past 4 GiB, holes kept.

const FIVE_GIB: u64 = 5 << 30;

/// A sparse file of 5 GiB: 1 MiB of data at each end, a hole between.
struct SparseFile {
    head: &'static [u8],
    tail: &'static [u8],
}

impl SparseFile {
    fn new() -> Self {
        SparseFile {
            head: data(MIB, 11),
            tail: data(MIB, 12),
        }
    }

    fn tail_offset(&self) -> u64 {
        FIVE_GIB - self.tail.len() as u64
    }

    /// Writes the file; `Err` when the file system keeps no holes.
    fn create(&self, path: &Path) -> Result<(), String> {
        let file = File::create(path).unwrap();
        file.write_all_at(self.head, 0).unwrap();
        file.write_all_at(self.tail, self.tail_offset()).unwrap();
        file.set_len(FIVE_GIB).unwrap();
        let allocated = file.metadata().unwrap().blocks() * 512;
        if allocated > 64 * MIB as u64 {
            return Err(format!(
                "the scratch file system allocated {allocated} bytes for a sparse file"
            ));
        }
        Ok(())
    }

    /// The expected bytes at `offset` (zeros in the hole).
    fn expected(&self, offset: u64, buf: &mut [u8]) {
        buf.fill(0);
        for (start, bytes) in [(0, self.head), (self.tail_offset(), self.tail)] {
            let end = start + bytes.len() as u64;
            let from = offset.max(start);
            let to = (offset + buf.len() as u64).min(end);
            if from < to {
                buf[(from - offset) as usize..(to - offset) as usize]
                    .copy_from_slice(&bytes[(from - start) as usize..(to - start) as usize]);
            }
        }
    }

    /// BLAKE3 of all 5 GiB.
    fn hash(&self) -> blake3::Hash {
        let mut hasher = blake3::Hasher::new();
        let zeros = vec![0u8; MIB];
        hasher.update(self.head);
        for _ in 0..(FIVE_GIB as usize - 2 * MIB) / MIB {
            hasher.update(&zeros);
        }
        hasher.update(self.tail);
        hasher.finalize()
    }

    /// Checks a copy: its length, that it is still sparse, and every byte —
    /// the bytes of its data segments and of ours are read and compared;
    /// everything else is a hole in the copy (zeros) and zeros in ours.
    fn check_copy(&self, path: &Path) -> Result<(), String> {
        let file = File::open(path).map_err(|e| format!("open the copy: {e}"))?;
        let meta = file.metadata().unwrap();
        if meta.len() != FIVE_GIB {
            return Err(format!("the copy is {} bytes, not {FIVE_GIB}", meta.len()));
        }
        let allocated = meta.blocks() * 512;
        if allocated > 64 * MIB as u64 {
            return Err(format!(
                "the copy is not sparse: {allocated} bytes allocated for 2 MiB of data"
            ));
        }
        let mut ranges = data_segments(&file);
        ranges.push((0, self.head.len() as u64));
        ranges.push((self.tail_offset(), self.tail.len() as u64));
        let (mut actual, mut expected) = (vec![0u8; MIB], vec![0u8; MIB]);
        for (start, len) in ranges {
            let mut at = start;
            while at < start + len {
                let n = (start + len - at).min(MIB as u64) as usize;
                file.read_exact_at(&mut actual[..n], at)
                    .map_err(|e| format!("read the copy at {at}: {e}"))?;
                self.expected(at, &mut expected[..n]);
                if let Some(i) = first_difference(&actual[..n], &expected[..n]) {
                    return Err(format!("the copy differs at byte {}", at + i as u64));
                }
                at += n as u64;
            }
        }
        Ok(())
    }
}

#[test]
fn sparse_5gib_file_to_file_with_every_mechanism() {
    let dir = scratch_dir();
    let sparse = SparseFile::new();
    let source = dir.path().join("sparse");
    if !require_feature("sparse 5 GiB flows", sparse.create(&source)) {
        return;
    }
    let sink = dir.path().join("copy");
    let mut failures = Vec::new();
    for mechanism in MechanismName::serving(FileKind, FileKind) {
        let _ = fs::remove_file(&sink);
        let outcome = Flow::new(Source::path(&source), Sink::path(&sink))
            .via(mechanism)
            .run()
            .map_err(|e| format!("flow failed: {e}"))
            .and_then(|report| {
                check_report(&report, mechanism, FIVE_GIB)?;
                let holes = FIVE_GIB - 2 * MIB as u64;
                if report.sparse_hole_bytes != holes {
                    return Err(format!(
                        "report.sparse_hole_bytes {} != {holes}",
                        report.sparse_hole_bytes
                    ));
                }
                sparse.check_copy(&sink)
            });
        if let Err(why) = outcome {
            failures.push(format!("{mechanism}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn sparse_5gib_file_to_tcp_with_sendfile_and_splice() {
    let dir = scratch_dir();
    let sparse = SparseFile::new();
    let source = dir.path().join("sparse");
    if !require_feature("sparse 5 GiB flows", sparse.create(&source)) {
        return;
    }
    let expected = sparse.hash();
    for mechanism in [MechanismName::Sendfile, MechanismName::Splice] {
        assert!(mechanism.supports(FileKind, Tcp));
        let (ours, theirs) = tcp_pair();
        let (result, received) = std::thread::scope(|scope| {
            let reader = scope.spawn(move || drain_and_hash(theirs));
            let result = Flow::new(Source::path(&source), Sink::Fd(ours.into(), "tcp".into()))
                .via(mechanism)
                .run();
            (result, reader.join().expect("reader thread"))
        });
        let report = result.unwrap_or_else(|e| panic!("{mechanism}: {e}"));
        check_report(&report, mechanism, FIVE_GIB).unwrap_or_else(|e| panic!("{mechanism}: {e}"));
        let (count, actual) = received.expect("read the socket");
        assert_eq!(count, FIVE_GIB, "{mechanism}: bytes received");
        assert_eq!(actual, expected, "{mechanism}: the bytes received differ");
    }
}

// ---------------------------------------------------------------------------
// Ranges: --offset and --length on a block device source, --seek on a block
// device sink, and files written in place.

/// `base` with `patch` written over it at `at` (extended with zeros if
/// `at` lies past its end).
fn patched(base: &[u8], at: usize, patch: &[u8]) -> Vec<u8> {
    let mut out = base.to_vec();
    if out.len() < at + patch.len() {
        out.resize(at + patch.len(), 0);
    }
    out[at..at + patch.len()].copy_from_slice(patch);
    out
}

#[test]
fn block_device_offset_length_and_seek() {
    let dir = scratch_dir();
    let size = 8 * MIB;
    let reason = "block device ranges";
    let Some(a) = loop_device(dir.path(), "a.img", size as u64, reason) else {
        return;
    };
    let Some(b) = loop_device(dir.path(), "b.img", size as u64, reason) else {
        return;
    };
    let content = data(size, 21);
    let sentinel = data(size, 22);
    write_range(a.path(), 0, content);
    let file_source = dir.path().join("source");
    write_file(&file_source, content);
    let (offset, length, seek) = (12_345usize, MIB + 3, 54_321usize);
    let range = &content[offset..offset + length];
    let params = Params {
        chunk: 64 * KIB,
        ..Params::default()
    };
    let mut failures = Vec::new();

    let pairs = [
        (BlockDevice, BlockDevice),
        (FileKind, BlockDevice),
        (BlockDevice, FileKind),
    ];
    for (source_kind, sink_kind) in pairs {
        for mechanism in MechanismName::serving(source_kind, sink_kind) {
            let source = match source_kind {
                BlockDevice => Source::path(a.path()),
                _ => Source::path(&file_source),
            };
            let copy = dir.path().join("copy");
            let _ = fs::remove_file(&copy);
            let mut flow = match sink_kind {
                BlockDevice => {
                    write_range(b.path(), 0, sentinel);
                    Flow::new(source, Sink::path(b.path())).seek(seek as u64)
                }
                _ => Flow::new(source, Sink::path(&copy)),
            };
            flow = flow
                .offset(offset as u64)
                .length(length as u64)
                .via(mechanism)
                .params(params.clone());
            let outcome = flow
                .run()
                .map_err(|e| format!("flow failed: {e}"))
                .and_then(|report| {
                    check_report(&report, mechanism, length as u64)?;
                    match sink_kind {
                        BlockDevice => check_bytes(
                            "the device",
                            &read_range(b.path(), 0, size),
                            &patched(sentinel, seek, range),
                        ),
                        _ => check_bytes("the copy", &fs::read(&copy).unwrap(), range),
                    }
                });
            if let Err(why) = outcome {
                failures.push(format!(
                    "{source_kind} -> {sink_kind} via {mechanism}: {why}"
                ));
            }
        }
    }

    // Ranges that do not fit are usage errors, and nothing is written.
    write_range(b.path(), 0, sentinel);
    let misfits = [
        ("offset past the end", size as u64 + 1, None, 0),
        ("length past the end", size as u64 - 10, Some(11), 0),
        ("seek past the capacity", 0, Some(4096), size as u64 - 4095),
    ];
    for (what, offset, length, seek) in misfits {
        let mut flow = Flow::new(Source::path(a.path()), Sink::path(b.path()))
            .offset(offset)
            .seek(seek)
            .via(MechanismName::ReadWrite);
        if let Some(length) = length {
            flow = flow.length(length);
        }
        match flow.run() {
            Err(e) if e.is_usage() => {
                if let Err(why) = check_one_line(&e) {
                    failures.push(format!("{what}: {why}"));
                }
            }
            other => failures.push(format!("{what}: expected a usage error, got {other:?}")),
        }
    }
    if let Err(why) = check_bytes(
        "the device after refused flows",
        &read_range(b.path(), 0, size),
        sentinel,
    ) {
        failures.push(why);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn in_place_file_sink_with_offset_length_and_seek() {
    let dir = scratch_dir();
    let old = data(MIB, 31);
    let content = data(2 * MIB, 32);
    let source = dir.path().join("source");
    write_file(&source, content);
    let sink = dir.path().join("sink");
    // (offset, length, seek): inside the old file, running past its end,
    // starting past its end (a gap of zeros), and empty.
    let cases = [
        (4097usize, 300_001usize, 65_537usize),
        (0, MIB + 5, MIB - 3),
        (77, 4096, MIB + 8192),
        (5, 0, 100),
    ];
    let params = Params {
        chunk: 64 * KIB,
        ..Params::default()
    };
    let mut failures = Vec::new();
    for mechanism in MechanismName::serving(FileKind, FileKind) {
        for (offset, length, seek) in cases {
            write_file(&sink, old);
            let outcome = Flow::new(Source::path(&source), Sink::path(&sink))
                .in_place(true)
                .offset(offset as u64)
                .length(length as u64)
                .seek(seek as u64)
                .via(mechanism)
                .params(params.clone())
                .run()
                .map_err(|e| format!("flow failed: {e}"))
                .and_then(|report| {
                    check_report(&report, mechanism, length as u64)?;
                    let expected = if length == 0 {
                        old.to_vec()
                    } else {
                        patched(old, seek, &content[offset..offset + length])
                    };
                    check_bytes("the file", &fs::read(&sink).unwrap(), &expected)
                });
            if let Err(why) = outcome {
                failures.push(format!(
                    "{mechanism}, offset {offset}, length {length}, seek {seek}: {why}"
                ));
            }
        }
    }
    // In place needs a file that exists; seeking a new file needs in place.
    let missing = dir.path().join("missing");
    for (what, in_place) in [
        ("--in-place on a missing file", true),
        ("--seek without --in-place", false),
    ] {
        let result = Flow::new(Source::path(&source), Sink::path(&missing))
            .in_place(in_place)
            .seek(10)
            .run();
        match result {
            Err(e) if e.is_usage() => {}
            other => failures.push(format!("{what}: expected a usage error, got {other:?}")),
        }
        if missing.exists() {
            failures.push(format!("{what}: created {}", missing.display()));
        }
    }
    assert!(leftover_temp_files(dir.path()).is_empty());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
