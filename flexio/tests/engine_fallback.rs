//! Every fallback the engine takes when the kernel refuses a mechanism, as
//! the report shows it — and `strict`, which turns each into an error.
//!
//! The refusals are real ones: copy_file_range(2) across two file systems
//! (EXDEV), and sendfile(2), splice(2) and copy_file_range(2) into a file
//! opened with O_APPEND (EINVAL, EINVAL, EBADF).

use crate::common;

use std::fs::{self, File, OpenOptions};
use std::path::Path;

use common::*;
use flexio::{Error, Fallback, Flow, MechanismName, Report, Sink, Source};
use rustix::io::Errno;

use MechanismName::{CopyFileRange, ReadWrite, Sendfile, Splice};

/// The reason text a report gives for `errno`.
fn reason(errno: Errno) -> String {
    std::io::Error::from(errno).to_string()
}

/// Checks the fallbacks of a report, in order: (from, to, operation,
/// errno); where each happened is checked by the caller.
fn check_fallbacks(
    report: &Report,
    expected: &[(MechanismName, MechanismName, &str, Errno)],
) -> Result<(), String> {
    let actual: Vec<_> = report
        .fallbacks
        .iter()
        .map(|f| (f.from, f.to, f.operation.clone(), f.reason.clone()))
        .collect();
    let wanted: Vec<_> = expected
        .iter()
        .map(|(from, to, op, errno)| (*from, *to, op.to_string(), reason(*errno)))
        .collect();
    if actual != wanted {
        return Err(format!(
            "fallbacks {actual:?}, expected {wanted:?} (report: {report:?})"
        ));
    }
    let last = expected.last().map_or(report.mechanism_requested, |f| f.1);
    if report.mechanism_used != last {
        return Err(format!(
            "mechanism_used {} after the fallbacks, expected {last}",
            report.mechanism_used
        ));
    }
    Ok(())
}

/// An empty file opened for appending, as a sink descriptor.
fn append_only_sink(path: &Path) -> Sink<'static> {
    File::create(path).unwrap();
    let file = OpenOptions::new().append(true).open(path).unwrap();
    Sink::Fd(file.into(), path.display().to_string())
}

// ---------------------------------------------------------------------------
// copy_file_range across file systems

/// What copy_file_range(2) says between a file on `from` and one on `to`.
fn probe_copy_file_range(from: &Path, to: &Path) -> Result<usize, Errno> {
    let probe_from = from.join(".probe");
    let probe_to = to.join(".probe-copy");
    fs::write(&probe_from, [7u8; 4096]).unwrap();
    let source = File::open(&probe_from).unwrap();
    let sink = File::create(&probe_to).unwrap();
    let result = rustix::fs::copy_file_range(&source, None, &sink, None, 4096);
    fs::remove_file(&probe_from).unwrap();
    fs::remove_file(&probe_to).unwrap();
    result
}

#[test]
fn copy_file_range_between_file_systems_falls_back_to_sendfile() {
    let Some(mount) = tmpfs("64m", "copy_file_range across file systems") else {
        return;
    };
    let disk = scratch_dir();
    let content = data(3 * MIB + 7, 101);
    let mut failures = Vec::new();
    for (from, to) in [(disk.path(), mount.path()), (mount.path(), disk.path())] {
        let source = from.join("source");
        write_file(&source, content);
        let sink = to.join("copy");
        let probe = probe_copy_file_range(from, to);
        let report = Flow::new(Source::path(&source), Sink::path(&sink))
            .via(CopyFileRange)
            .run()
            .unwrap_or_else(|e| panic!("{} -> {}: {e}", from.display(), to.display()));
        let outcome = match probe {
            Err(errno) if errno == Errno::XDEV || errno == Errno::INVAL => check_fallbacks(
                &report,
                &[(CopyFileRange, Sendfile, "copy_file_range", errno)],
            )
            .and_then(|()| match report.fallbacks[0].at_byte {
                0 => Ok(()),
                at => Err(format!("fell back at byte {at}, not 0")),
            }),
            Ok(_) => {
                eprintln!(
                    "note: this kernel copies {} -> {} with copy_file_range natively",
                    from.display(),
                    to.display()
                );
                check_fallbacks(&report, &[])
            }
            Err(errno) => panic!("copy_file_range probe across file systems: {errno}"),
        };
        let outcome = outcome
            .and_then(|()| check_bytes("the copy", &fs::read(&sink).unwrap(), content))
            .and_then(|()| match report.measured.bytes == content.len() as u64 {
                true => Ok(()),
                false => Err(format!("report.bytes {}", report.measured.bytes)),
            });
        if let Err(why) = outcome {
            failures.push(format!("{} -> {}: {why}", from.display(), to.display()));
        }
        assert_eq!(report.mechanism_first, CopyFileRange);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn strict_forbids_the_fallback_across_file_systems() {
    let Some(mount) = tmpfs("64m", "copy_file_range across file systems") else {
        return;
    };
    let disk = scratch_dir();
    let source = disk.path().join("source");
    write_file(&source, data(MIB, 102));
    let sink = mount.path().join("copy");
    let probe = probe_copy_file_range(disk.path(), mount.path());
    let result = Flow::new(Source::path(&source), Sink::path(&sink))
        .via(CopyFileRange)
        .strict(true)
        .run();
    match (probe, result) {
        (
            Err(errno),
            Err(
                ref error @ Error::StrictRefusal {
                    mechanism,
                    op,
                    ref reason,
                },
            ),
        ) => {
            assert_eq!((mechanism, op), (CopyFileRange, "copy_file_range"));
            assert_eq!(*reason, self::reason(errno));
            assert!(!error.is_usage());
            check_one_line(error).unwrap();
            assert!(!sink.exists(), "a refused flow left the destination");
            assert!(leftover_temp_files(mount.path()).is_empty());
        }
        (Ok(_), Ok(report)) => check_fallbacks(&report, &[]).unwrap(),
        (probe, result) => panic!("probe {probe:?}, flow {result:?}"),
    }
}

// ---------------------------------------------------------------------------
// Sinks opened with O_APPEND

#[test]
fn sendfile_into_an_append_only_file_falls_back_through_splice_to_read_write() {
    let dir = scratch_dir();
    let content = data(3 * MIB + 7, 103);
    let source = dir.path().join("source");
    write_file(&source, content);
    let sink = dir.path().join("log");
    let report = Flow::new(Source::path(&source), append_only_sink(&sink))
        .via(Sendfile)
        .run()
        .unwrap();
    check_fallbacks(
        &report,
        &[
            (Sendfile, Splice, "sendfile", Errno::INVAL),
            (Splice, ReadWrite, "splice", Errno::INVAL),
        ],
    )
    .unwrap();
    // sendfile refused before moving a byte; splice filled its pipe from
    // the source, was refused by the sink, and drained the pipe through a
    // buffer before handing over.
    assert_eq!(report.fallbacks[0].at_byte, 0);
    let drained = report.fallbacks[1].at_byte;
    assert!(drained > 0 && drained <= content.len() as u64, "{drained}");
    assert_eq!(report.measured.bytes, content.len() as u64);
    check_bytes("the appended file", &fs::read(&sink).unwrap(), content).unwrap();
}

#[test]
fn splice_refused_by_the_sink_drains_its_pipe_then_falls_back() {
    let dir = scratch_dir();
    let content = data(3 * MIB + 7, 104);
    let source = dir.path().join("source");
    write_file(&source, content);

    // A file source goes through splice's own pipe: the refusal comes with
    // bytes in it, which must reach the sink before read-write takes over.
    let sink = dir.path().join("from-file");
    let report = Flow::new(Source::path(&source), append_only_sink(&sink))
        .via(Splice)
        .run()
        .unwrap();
    check_fallbacks(&report, &[(Splice, ReadWrite, "splice", Errno::INVAL)]).unwrap();
    let drained = report.fallbacks[0].at_byte;
    assert!(drained > 0 && drained <= content.len() as u64, "{drained}");
    check_bytes("the file-fed sink", &fs::read(&sink).unwrap(), content).unwrap();

    // A pipe source is spliced straight to the sink: refused at byte 0.
    let sink = dir.path().join("from-pipe");
    let (read, write) = pipe();
    let report = std::thread::scope(|scope| {
        scope.spawn(move || feed(File::from(write), content));
        Flow::new(Source::Fd(read, "pipe".into()), append_only_sink(&sink))
            .via(Splice)
            .run()
            .unwrap()
    });
    check_fallbacks(&report, &[(Splice, ReadWrite, "splice", Errno::INVAL)]).unwrap();
    assert_eq!(report.fallbacks[0].at_byte, 0);
    assert_eq!(report.measured.bytes, content.len() as u64);
    check_bytes("the pipe-fed sink", &fs::read(&sink).unwrap(), content).unwrap();
}

#[test]
fn strict_turns_a_sendfile_fallback_into_an_error() {
    let dir = scratch_dir();
    let source = dir.path().join("source");
    write_file(&source, data(MIB, 105));
    let sink = dir.path().join("log");
    let error = Flow::new(Source::path(&source), append_only_sink(&sink))
        .via(Sendfile)
        .strict(true)
        .run()
        .expect_err("strict forbids the fallback from sendfile");
    match &error {
        Error::StrictRefusal {
            mechanism: Sendfile,
            op: "sendfile",
            reason,
        } if *reason == self::reason(Errno::INVAL) => {}
        other => panic!("expected StrictRefusal of sendfile (EINVAL), got {other:?}"),
    }
    assert!(!error.is_usage());
    check_one_line(&error).unwrap();
    assert_eq!(
        fs::metadata(&sink).unwrap().len(),
        0,
        "sendfile wrote nothing"
    );
}

/// Regression: copy_file_range(2) into a file opened with O_APPEND fails
/// with EBADF, which the engine took for a broken flow, so appending a file
/// to stdout (`flexio copy a - >>log`, where auto picks copy-file-range
/// between two files) failed instead of falling back.
#[test]
fn copy_file_range_ebadf_on_append_only_sink_is_a_refusal() {
    let dir = scratch_dir();
    let content = data(MIB + 3, 106);
    let source = dir.path().join("source");
    write_file(&source, content);
    for requested in [CopyFileRange, MechanismName::Auto] {
        let sink = dir.path().join(format!("log-{requested}"));
        let report = Flow::new(Source::path(&source), append_only_sink(&sink))
            .via(requested)
            .run()
            .unwrap_or_else(|e| panic!("{requested}: {e}"));
        let fallbacks: Vec<(MechanismName, MechanismName)> =
            report.fallbacks.iter().map(|f| (f.from, f.to)).collect();
        assert_eq!(
            fallbacks,
            [
                (CopyFileRange, Sendfile),
                (Sendfile, Splice),
                (Splice, ReadWrite)
            ],
            "{requested}: {:?}",
            report.fallbacks
        );
        let first: &Fallback = &report.fallbacks[0];
        assert_eq!(
            (first.operation.as_str(), first.at_byte),
            ("copy_file_range", 0)
        );
        assert_eq!(first.reason, reason(Errno::BADF));
        assert_eq!(report.mechanism_used, ReadWrite);
        check_bytes("the appended file", &fs::read(&sink).unwrap(), content).unwrap();
    }
}

/// sysfs has no mmap (`ENODEV`): `mmap` falls back to read-write at byte 0
/// and the report says so.
#[test]
fn mmap_on_a_file_system_without_mmap_falls_back_to_read_write() {
    let path = Path::new("/sys/devices/system/cpu/possible");
    let Ok(content) = fs::read(path) else {
        common::skipped(&format!(
            "no {} to read (sysfs not mounted)",
            path.display()
        ));
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sink = dir.path().join("sink");
    let report = Flow::new(Source::path(path), Sink::path(&sink))
        .length(content.len() as u64)
        .via(MechanismName::Mmap)
        .run()
        .expect("mmap falls back");
    assert_eq!(report.mechanism_used, MechanismName::ReadWrite);
    let [fallback] = &report.fallbacks[..] else {
        panic!("expected one fallback, got {:?}", report.fallbacks);
    };
    assert_eq!(
        (fallback.from, fallback.to),
        (MechanismName::Mmap, MechanismName::ReadWrite)
    );
    assert_eq!(fallback.operation, "mmap");
    assert_eq!(fallback.at_byte, 0);
    assert_eq!(fs::read(&sink).unwrap(), content);
}
