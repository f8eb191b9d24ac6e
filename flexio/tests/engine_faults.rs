//! Flows that must fail, and fail well: a full file system, a source that
//! shrinks or a peer that hangs up mid-flow, and flows described wrongly.
//! Each failure is an error (never a crash), names where it happened, and
//! leaves a regular-file destination as it was.

use crate::common;

use std::fs::{self, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use common::*;
use flexio::{EndpointKind, Error, Flow, MechanismName, Sink, Source};

use EndpointKind::{File as FileKind, Memory, Pipe, Tcp, Unix};

// ---------------------------------------------------------------------------
// A sink on a full file system

const FULL_SOURCE_ENV: &str = "FLEXIO_TEST_FULL_SOURCE";
const FULL_DEST_ENV: &str = "FLEXIO_TEST_FULL_DEST";

/// In a child process: the flow onto the full file system must fail with
/// ENOSPC (or, for mmap, a mapping fault), exit code 1, one line.
fn full_file_system_case(mechanism: MechanismName) {
    let source = PathBuf::from(std::env::var_os(FULL_SOURCE_ENV).expect("source path"));
    let dest = PathBuf::from(std::env::var_os(FULL_DEST_ENV).expect("dest path"));
    let error = Flow::new(Source::path(&source), Sink::path(&dest))
        .via(mechanism)
        .run()
        .expect_err("a 16 MiB flow onto a file system with 7 MiB free must fail");
    assert!(!error.is_usage(), "{error}");
    check_one_line(&error).unwrap();
    let enospc =
        matches!(&error, Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC));
    let mapping_fault =
        mechanism == MechanismName::Mmap && matches!(&error, Error::MappingFault { .. });
    assert!(
        enospc || mapping_fault,
        "expected ENOSPC from the sink, got {error:?}"
    );
    child_done();
}

#[test]
fn full_file_system_keeps_the_old_destination() {
    if let Some(mechanism) = child_mechanism() {
        return full_file_system_case(mechanism);
    }
    // 16 MiB of source and 1 MiB of old destination in 24 MiB: the copy
    // runs out of space half-way, both from a source on the same tmpfs and
    // from one on another file system.
    let Some(mount) = tmpfs("24m", "a sink on a full file system") else {
        return;
    };
    let outside = scratch_dir();
    let content = data(16 * MIB, 51);
    let old = data(MIB, 52);
    let inside_source = mount.path().join("source");
    let outside_source = outside.path().join("source");
    write_file(&inside_source, content);
    write_file(&outside_source, content);
    let dest = mount.path().join("dest");
    write_file(&dest, old);

    let mut failures = Vec::new();
    for mechanism in MechanismName::serving(FileKind, FileKind) {
        for (where_from, source) in [
            ("same tmpfs", &inside_source),
            ("other file system", &outside_source),
        ] {
            let env = [
                (FULL_SOURCE_ENV, source.as_path()),
                (FULL_DEST_ENV, dest.as_path()),
            ];
            let name = flexio_testkit::test_name(
                module_path!(),
                "full_file_system_keeps_the_old_destination",
            );
            if let Err(why) = run_in_child(&name, mechanism, &env) {
                failures.push(format!("source on the {where_from}: {why}"));
            }
            if let Err(why) = check_bytes("the old destination", &fs::read(&dest).unwrap(), old) {
                failures.push(format!("{mechanism}, source on the {where_from}: {why}"));
            }
            let leftovers = leftover_temp_files(mount.path());
            if !leftovers.is_empty() {
                failures.push(format!(
                    "{mechanism}, source on the {where_from}: left {leftovers:?}"
                ));
                for name in leftovers {
                    let _ = fs::remove_file(mount.path().join(name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------
// A source truncated during the flow

/// In a child process: a 64 MiB file streamed into a Unix (or, for a
/// mechanism that serves only TCP, a TCP) socket whose
/// reader truncates the file to 1 MiB after reading 1 MiB. The flow must
/// end with the offset where the source ran out, having delivered exactly
/// the bytes before it.
fn truncated_source_case(mechanism: MechanismName) {
    let dir = scratch_dir();
    let source = dir.path().join("source");
    let content = data(64 * MIB, 61);
    write_file(&source, content);
    // send-zc serves TCP only: the same case over a TCP pair.
    let (ours, mut theirs, label): (std::os::fd::OwnedFd, Box<dyn Read + Send>, &str) =
        if mechanism.supports(FileKind, Unix) {
            let (ours, theirs) = unix_pair();
            (ours.into(), Box::new(theirs), "unix")
        } else {
            let (ours, theirs) = tcp_pair();
            (ours.into(), Box::new(theirs), "tcp")
        };
    let (result, received) = std::thread::scope(|scope| {
        let source = &source;
        let reader = scope.spawn(move || {
            let mut first = vec![0; MIB];
            theirs.read_exact(&mut first)?;
            OpenOptions::new()
                .write(true)
                .open(source)?
                .set_len(MIB as u64)?;
            let mut rest = Vec::new();
            theirs.read_to_end(&mut rest)?;
            first.extend_from_slice(&rest);
            std::io::Result::Ok(first)
        });
        let result = Flow::new(Source::path(source), Sink::Fd(ours, label.into()))
            .via(mechanism)
            .run();
        (result, reader.join().expect("reader thread"))
    });
    let received = received
        .unwrap_or_else(|e| panic!("reading the socket failed ({e}); the flow gave {result:?}"));
    let range = MIB as u64..64 * MIB as u64;
    match result {
        Err(Error::SourceEnded {
            offset,
            end: expected,
            ..
        }) => {
            assert!(range.contains(&offset), "SourceEnded at {offset}");
            assert_eq!(expected, 64 * MIB as u64);
            assert_eq!(
                received.len() as u64,
                offset,
                "the sink got {} bytes, but the error says the source ended at byte {offset}",
                received.len()
            );
        }
        Err(Error::MappingFault { offset, .. }) if mechanism == MechanismName::Mmap => {
            assert!(range.contains(&offset), "MappingFault at {offset}");
            assert!(received.len() as u64 <= 64 * MIB as u64);
        }
        other => panic!("expected the source to end early, got {other:?}"),
    }
    // Bytes before the truncation point arrive intact. Bytes after it that
    // were already on their way may arrive as zeros: a pipe (splice,
    // sendfile) holds the page cache's pages by reference, and truncation
    // zeroes the part of a large folio past the new end. Anything else —
    // shifted, repeated or stray bytes — is wrong.
    check_bytes("the first MiB received", &received[..MIB], &content[..MIB]).unwrap();
    let stray = received[MIB..]
        .iter()
        .zip(&content[MIB..])
        .position(|(got, sent)| got != sent && *got != 0);
    assert_eq!(
        stray, None,
        "a byte past 1 MiB the source never held (index from 1 MiB)"
    );
    child_done();
}

#[test]
fn truncated_source_fails_with_its_offset() {
    if let Some(mechanism) = child_mechanism() {
        return truncated_source_case(mechanism);
    }
    // Each mechanism in a process of its own: a mapping of a file that
    // shrinks faults, and a fault must fail that mechanism, not the suite.
    let tcp_only = MechanismName::serving(FileKind, Tcp)
        .into_iter()
        .filter(|m| !m.supports(FileKind, Unix));
    let failures: Vec<String> = MechanismName::serving(FileKind, Unix)
        .into_iter()
        .chain(tcp_only)
        .filter_map(|m| {
            let name =
                flexio_testkit::test_name(module_path!(), "truncated_source_fails_with_its_offset");
            run_in_child(&name, m, &[]).err()
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------
// A peer that hangs up early

#[test]
fn peer_closing_before_length_ends_the_source() {
    let dir = scratch_dir();
    let length = 3 * MIB + 5;
    let content = data(length, 71);
    let half = length / 2;
    let dest = dir.path().join("dest");
    let old = data(4096, 72);
    let mut failures = Vec::new();
    for mechanism in MechanismName::serving(Tcp, FileKind) {
        write_file(&dest, old);
        let (ours, theirs) = tcp_pair();
        let result = std::thread::scope(|scope| {
            // Sends half and closes (the writer drops its end).
            scope.spawn(move || feed(theirs, &content[..half]));
            Flow::new(Source::Fd(ours.into(), "tcp".into()), Sink::path(&dest))
                .length(length as u64)
                .via(mechanism)
                .run()
        });
        match result {
            Err(Error::SourceEnded {
                offset,
                end: expected,
                ..
            }) if offset == half as u64 && expected == length as u64 => {}
            other => failures.push(format!(
                "{mechanism}: expected SourceEnded at {half} of {length}, got {other:?}"
            )),
        }
        if let Err(why) = check_bytes("the old destination", &fs::read(&dest).unwrap(), old) {
            failures.push(format!("{mechanism}: {why}"));
        }
    }
    assert!(leftover_temp_files(dir.path()).is_empty());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------
// Flows described wrongly: one-line errors, exit code 2, nothing touched

#[test]
fn copy_file_range_to_tcp_suggests_sendfile() {
    let dir = scratch_dir();
    let source = dir.path().join("source");
    write_file(&source, data(4096, 81));
    let (ours, _theirs) = tcp_pair();
    let error = Flow::new(Source::path(&source), Sink::Fd(ours.into(), "tcp".into()))
        .via(MechanismName::CopyFileRange)
        .run()
        .expect_err("copy-file-range cannot write to a socket");
    assert!(error.is_usage());
    check_one_line(&error).unwrap();
    let Error::UnsupportedPair {
        mechanism,
        source_kind,
        sink_kind,
        alternatives,
    } = &error
    else {
        panic!("expected UnsupportedPair, got {error:?}");
    };
    assert_eq!(*mechanism, MechanismName::CopyFileRange);
    assert_eq!((*source_kind, *sink_kind), (FileKind, Tcp));
    assert!(alternatives.contains(&MechanismName::Sendfile), "{error}");
    assert!(error.to_string().contains("sendfile"), "{error}");
}

/// A source endpoint of `kind` holding 16 bytes, with whatever must stay
/// alive beside it.
fn refused_source(kind: EndpointKind, path: &Path, bytes: &'static [u8]) -> Source<'static> {
    match kind {
        FileKind => Source::path(path),
        // The peers are gone: were the flow to run, it would read an
        // empty stream rather than wait.
        Tcp => Source::Fd(tcp_pair().0.into(), "tcp".into()),
        Unix => Source::Fd(unix_pair().0.into(), "unix".into()),
        Pipe => Source::Fd(pipe().0, "pipe".into()),
        Memory => Source::Memory(bytes),
        other => unreachable!("{other}"),
    }
}

#[test]
fn every_refused_pair_lists_what_works() {
    let dir = scratch_dir();
    let bytes = data(16, 82);
    let source_path = dir.path().join("source");
    write_file(&source_path, bytes);
    let sink_path = dir.path().join("sink");
    let kinds = [FileKind, Tcp, Unix, Pipe, Memory];
    let mut failures = Vec::new();
    let mut refused = 0;
    for source_kind in kinds {
        for sink_kind in kinds {
            for mechanism in MechanismName::CONCRETE {
                if mechanism.supports(source_kind, sink_kind) {
                    continue;
                }
                refused += 1;
                // Peers of stream sinks stay open (so that a flow that ran
                // would not fail for another reason) until the flow returns.
                let mut memory = [0u8; 16];
                let mut peers: Vec<Box<dyn std::any::Any>> = Vec::new();
                let sink = match sink_kind {
                    FileKind => Sink::path(&sink_path),
                    Tcp => {
                        let (ours, theirs) = tcp_pair();
                        peers.push(Box::new(theirs));
                        Sink::Fd(ours.into(), "tcp".into())
                    }
                    Unix => {
                        let (ours, theirs) = unix_pair();
                        peers.push(Box::new(theirs));
                        Sink::Fd(ours.into(), "unix".into())
                    }
                    Pipe => {
                        let (read, write) = pipe();
                        peers.push(Box::new(read));
                        Sink::Fd(write, "pipe".into())
                    }
                    _ => Sink::Memory(&mut memory),
                };
                let source = refused_source(source_kind, &source_path, bytes);
                let result = Flow::new(source, sink).via(mechanism).run();
                drop(peers);
                let triple = format!("{source_kind} -> {sink_kind} via {mechanism}");
                let error = match result {
                    Err(error) => error,
                    Ok(report) => {
                        failures.push(format!("{triple}: ran ({} bytes)", report.measured.bytes));
                        continue;
                    }
                };
                let serving = MechanismName::serving(source_kind, sink_kind);
                match &error {
                    Error::UnsupportedPair {
                        mechanism: m,
                        source_kind: s,
                        sink_kind: k,
                        alternatives,
                    } if (*m, *s, *k) == (mechanism, source_kind, sink_kind)
                        && *alternatives == serving
                        && !alternatives.is_empty() => {}
                    other => failures.push(format!(
                        "{triple}: expected UnsupportedPair listing {serving:?}, got {other:?}"
                    )),
                }
                let text = error.to_string();
                if !error.is_usage() || check_one_line(&error).is_err() {
                    failures.push(format!("{triple}: not a one-line usage error: {text:?}"));
                }
                if let Some(missing) = serving.iter().find(|m| !text.contains(m.as_str())) {
                    failures.push(format!("{triple}: {text:?} does not name {missing}"));
                }
                if sink_path.exists() || !leftover_temp_files(dir.path()).is_empty() {
                    failures.push(format!("{triple}: the refused flow touched the sink"));
                }
            }
        }
    }
    assert!(
        refused > 0,
        "no mechanism refuses any pair: nothing was checked"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs a flow that must be refused as a usage error: exit code 2, one line
/// naming `names`.
fn expect_usage(what: &str, flow: Flow<'_>, names: &Path) -> Result<(), String> {
    match flow.run() {
        Err(error @ Error::Usage(_)) => {
            check_one_line(&error).map_err(|why| format!("{what}: {why}"))?;
            assert!(error.is_usage());
            let text = error.to_string();
            let name = names.display().to_string();
            if !text.contains(&name) {
                return Err(format!("{what}: {text:?} does not name {name}"));
            }
            Ok(())
        }
        other => Err(format!("{what}: expected a usage error, got {other:?}")),
    }
}

#[test]
fn a_directory_source_is_a_usage_error_and_a_missing_one_a_failure() {
    let dir = scratch_dir();
    let sink = dir.path().join("sink");
    let missing = dir.path().join("missing");
    let mut failures = Vec::new();
    let flow = Flow::new(Source::path(dir.path()), Sink::path(&sink));
    if let Err(why) = expect_usage("a directory source", flow, dir.path()) {
        failures.push(why);
    }
    // A missing source is a failure at run time (exit 1), as for cp.
    match Flow::new(Source::path(&missing), Sink::path(&sink)).run() {
        Err(error @ Error::Io { .. }) => {
            assert!(!error.is_usage());
            let text = error.to_string();
            assert!(text.contains(&missing.display().to_string()), "{text}");
            assert!(text.contains("No such file"), "{text}");
        }
        other => failures.push(format!("a missing source: got {other:?}")),
    }
    assert!(!sink.exists());
    assert!(leftover_temp_files(dir.path()).is_empty());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn copying_a_file_onto_itself_is_refused() {
    let dir = scratch_dir();
    let file = dir.path().join("file");
    let content = data(100_000, 91);
    write_file(&file, content);
    let hard_link = dir.path().join("hard-link");
    fs::hard_link(&file, &hard_link).unwrap();
    let symlink = dir.path().join("symlink");
    std::os::unix::fs::symlink(&file, &symlink).unwrap();
    let cases = [
        ("the same path", &file, &file, false),
        ("the same path in place", &file, &file, true),
        ("a hard link", &file, &hard_link, false),
        ("a symlink as the sink", &file, &symlink, false),
        ("a symlink as the source", &symlink, &file, false),
        ("a symlink in place", &file, &symlink, true),
    ];
    let mut failures = Vec::new();
    for (what, source, sink, in_place) in cases {
        for mechanism in [MechanismName::Auto, MechanismName::ReadWrite] {
            let flow = Flow::new(Source::path(source), Sink::path(sink))
                .in_place(in_place)
                .via(mechanism);
            if let Err(why) = expect_usage(&format!("{what} via {mechanism}"), flow, sink) {
                failures.push(why);
            }
            if fs::read(&file).unwrap() != content {
                failures.push(format!("{what} via {mechanism}: the file changed"));
            }
        }
    }
    assert!(fs::symlink_metadata(&symlink)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(leftover_temp_files(dir.path()).is_empty());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Reads into a memory sink land in it directly; the sink's end is the
/// flow's only when the source has nothing more.
#[test]
fn a_memory_sink_takes_what_fits_and_refuses_more() {
    for (len, room) in [(4096, 4096), (4097, 4096), (100, 4096)] {
        let bytes = data(len, 91);
        let (read, write) = pipe();
        feed(std::fs::File::from(write), bytes).unwrap();
        let mut sink = vec![0u8; room];
        let result = Flow::new(Source::Fd(read, "pipe".into()), Sink::Memory(&mut sink))
            .via(MechanismName::ReadWrite)
            .run();
        match result {
            Ok(report) => {
                assert!(len <= room, "{len} bytes into {room}: {report:?}");
                assert_eq!(report.measured.bytes, len as u64);
                assert_eq!(&sink[..len], bytes);
            }
            Err(error) => {
                assert!(len > room, "{len} bytes into {room}: {error}");
                let text = error.to_string();
                assert!(text.contains("write") && text.contains("4096"), "{text}");
            }
        }
    }
}
