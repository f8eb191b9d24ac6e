//! `direct`, `io-uring` and `io-uring --direct`: the engine tester over
//! every size around the block and chunk boundaries, unaligned offsets,
//! stream shapes, queue depths and chunk sizes (every byte checked); then
//! what only they do — writing in place at any alignment, non-blocking
//! sockets, sparse segments on one ring, O_DIRECT refused, restored and
//! out of space.
//!
//! Tests that need io_uring probe for it (`IoUring::new(2)`) and skip with
//! a printed reason when the kernel lacks it, unless
//! `FLEXIO_TEST_PRIVILEGED=1` makes a skip a failure.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::thread;

use flexio::{EndpointKind, Flow, MechanismName, Params, Report, Sink, Source};

use crate::common;
use common::{Case, EngineTester};
use rustix::fs::OFlags;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// Deterministic bytes that do not repeat at any power-of-two period, so a
/// piece written at the wrong offset cannot look right.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            // xorshift64*
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// Whether the kernel lets this process make an io_uring; prints why not.
fn uring_available(test: &str) -> bool {
    let probe = io_uring::IoUring::new(2)
        .map(drop)
        .map_err(|error| format!("io_uring unavailable ({error})"));
    common::require_feature(test, probe)
}

/// One way of running a flow.
#[derive(Clone, Copy, Debug)]
struct Variant {
    mechanism: MechanismName,
    direct: bool,
    queue_depth: u32,
}

impl Variant {
    fn params(self, chunk: usize) -> Params {
        Params {
            chunk,
            queue_depth: self.queue_depth,
            direct: self.direct,
            ..Params::default()
        }
    }

    fn uses_direct(self) -> bool {
        self.direct || self.mechanism == MechanismName::Direct
    }
}

/// `direct`, then `io-uring` and `io-uring --direct` at queue depths 1, 2
/// and 32 (the io_uring ones only when the kernel has io_uring).
fn variants(with_uring: bool) -> Vec<Variant> {
    let mut all = vec![Variant {
        mechanism: MechanismName::Direct,
        direct: false,
        queue_depth: 32,
    }];
    if with_uring {
        for direct in [false, true] {
            for queue_depth in [1, 2, 32] {
                all.push(Variant {
                    mechanism: MechanismName::IoUring,
                    direct,
                    queue_depth,
                });
            }
        }
    }
    all
}

/// The sizes every endpoint pair is tried with for a chunk size.
fn sizes(chunk: usize) -> Vec<usize> {
    let mut sizes = vec![
        0,
        1,
        4095,
        4096,
        4097,
        chunk - 1,
        chunk,
        chunk + 1,
        3 * chunk + 17,
        8 * MIB,
    ];
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// A report must say what ran: the mechanism asked for, or a fallback with
/// its reason — and only a refusal of `O_DIRECT` may cause one here.
fn check_report(report: &Report, variant: Variant, size: usize, case: &str) {
    assert_eq!(report.measured.bytes, size as u64, "{case}: report.bytes");
    assert_eq!(report.mechanism_requested, variant.mechanism, "{case}");
    if report.fallbacks.is_empty() {
        assert_eq!(
            report.mechanism_used, variant.mechanism,
            "{case}: silent switch"
        );
        if variant.mechanism == MechanismName::IoUring && size > 0 {
            assert!(report.ring_entries > 0, "{case}: no ring entries counted");
            assert!(report.syscalls > 0, "{case}: no io_uring_enter counted");
        }
    } else {
        assert!(
            variant.uses_direct(),
            "{case}: unexpected fallback {:?}",
            report.fallbacks
        );
        assert_eq!(report.fallbacks[0].from, variant.mechanism, "{case}");
        assert_eq!(report.mechanism_used, MechanismName::ReadWrite, "{case}");
    }
}

fn run_flow(flow: Flow<'_>, variant: Variant, chunk: usize, case: &str) -> Report {
    flow.via(variant.mechanism)
        .params(variant.params(chunk))
        .run()
        .unwrap_or_else(|error| panic!("{case}: {error}"))
}

fn write_file(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap();
}

/// `direct` and `io-uring` driven by the engine tester over every size
/// around the 4 KiB and 1 MiB chunk edges, io-uring with each of the
/// tester's configurations (queue depths 1, 2 and 32, with and without
/// O_DIRECT: `thorough`): files whole, at unaligned offsets with bytes after them and
/// read to their end (the last direct read comes back short); streams
/// written at once and in odd pieces, read to the close and with their
/// length given; into files, pipes and sockets.
#[test]
fn direct_and_io_uring_over_every_size_offset_and_stream_shape() {
    let mut mechanisms = vec![MechanismName::Direct];
    if uring_available("direct_and_io_uring_over_every_size_offset_and_stream_shape") {
        mechanisms.push(MechanismName::IoUring);
    }
    let mut cases = Vec::new();
    for chunk in [4 * KIB, MIB] {
        for size in sizes(chunk) {
            let case = Case::new(size, chunk);
            cases.push(case);
            for offset in [1, 4096, 12345] {
                cases.push(case.within_file(offset, 777));
                cases.push(case.within_file(offset, 0));
            }
            cases.push(case.streamed(1000, true));
            cases.push(case.streamed(65536, false));
        }
    }
    EngineTester::new()
        .sources(&[EndpointKind::File, EndpointKind::Unix, EndpointKind::Pipe])
        .sinks(&[EndpointKind::File, EndpointKind::Pipe, EndpointKind::Unix])
        .mechanisms(&mechanisms)
        .cases(cases)
        .thorough()
        .test();
}

/// Writing into an existing file at aligned and unaligned positions, from
/// aligned and unaligned source offsets: the sink is direct only when it
/// starts aligned, and the source's position within a block may differ
/// from the sink's. Bytes around the written range stay as they were.
#[test]
fn file_into_existing_file_at_every_alignment() {
    let with_uring = uring_available("file_into_existing_file_at_every_alignment");
    let dir = tempfile::tempdir().unwrap();
    let source_bytes = pattern(3 * MIB, 2);
    let source = dir.path().join("source");
    write_file(&source, &source_bytes);
    let before = pattern(4 * MIB, 3);
    let chunk = 64 * KIB;
    for (offset, seek) in [(0, 4096), (12345, 4096), (4096, 777), (1, 1), (12345, 0)] {
        for size in [1, 4095, 4097, chunk + 1, 3 * chunk + 17, 2 * MIB + 5] {
            for variant in variants(with_uring) {
                let case = format!("in place {variant:?} size {size} offset {offset} seek {seek}");
                let sink = dir.path().join("existing");
                write_file(&sink, &before);
                let flow = Flow::new(Source::path(&source), Sink::path(&sink))
                    .offset(offset as u64)
                    .length(size as u64)
                    .seek(seek as u64)
                    .in_place(true);
                let report = run_flow(flow, variant, chunk, &case);
                check_report(&report, variant, size, &case);
                let mut want = before.clone();
                want[seek..seek + size].copy_from_slice(&source_bytes[offset..offset + size]);
                let got = fs::read(&sink).unwrap();
                assert!(got == want, "{case}: sink differs");
            }
        }
    }
}

/// A thread writes `bytes` into one end of a Unix socket pair in pieces of
/// `piece` bytes (so that reads come back short), then closes it.
fn socket_feeder(bytes: Vec<u8>, piece: usize) -> (OwnedFd, thread::JoinHandle<()>) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let writer = thread::spawn(move || {
        let mut theirs = theirs;
        for part in bytes.chunks(piece.max(1)) {
            theirs.write_all(part).unwrap();
        }
    });
    (ours.into(), writer)
}

/// A non-blocking socket source is fine for both: io_uring polls it, and
/// `direct` waits for it.
#[test]
fn nonblocking_socket_to_file() {
    let with_uring = uring_available("nonblocking_socket_to_file");
    let dir = tempfile::tempdir().unwrap();
    let size = 3 * MIB + 17;
    let all = pattern(size, 6);
    for variant in variants(with_uring) {
        let case = format!("nonblocking socket->file {variant:?}");
        let (fd, writer) = socket_feeder(all.clone(), 4096);
        let flags = rustix::fs::fcntl_getfl(&fd).unwrap();
        rustix::fs::fcntl_setfl(&fd, flags | OFlags::NONBLOCK).unwrap();
        let sink = dir.path().join("sink");
        let flow = Flow::new(Source::Fd(fd, "unix".into()), Sink::path(&sink));
        let report = run_flow(flow, variant, 256 * KIB, &case);
        writer.join().unwrap();
        check_report(&report, variant, size, &case);
        assert!(fs::read(&sink).unwrap() == all, "{case}: sink differs");
    }
}

/// A sparse file is moved one data segment per run: the ring and the
/// aligned buffer made for the first segment serve the next ones, and the
/// holes stay holes.
#[test]
fn sparse_file_segments_share_one_ring() {
    let with_uring = uring_available("sparse_file_segments_share_one_ring");
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("sparse");
    let pieces = [(0, 64 * KIB + 3), (MIB, 5000), (3 * MIB, 200 * KIB + 1)];
    let file = File::create(&source).unwrap();
    let mut want = vec![0u8; 3 * MIB + 200 * KIB + 1];
    for (index, &(at, len)) in pieces.iter().enumerate() {
        let bytes = pattern(len, 10 + index as u64);
        file.write_all_at(&bytes, at as u64).unwrap();
        want[at..at + len].copy_from_slice(&bytes);
    }
    drop(file);
    for variant in variants(with_uring) {
        let case = format!("sparse {variant:?}");
        let sink = dir.path().join("copy");
        let flow = Flow::new(Source::path(&source), Sink::path(&sink));
        let report = run_flow(flow, variant, 64 * KIB, &case);
        check_report(&report, variant, want.len(), &case);
        assert!(fs::read(&sink).unwrap() == want, "{case}: sink differs");
        // A direct sink is reserved segment by segment, never across a
        // hole: the copy holds about the 270 KiB of data, not 3.2 MiB.
        let allocated = rustix::fs::stat(&sink).unwrap().st_blocks as usize * 512;
        assert!(allocated < MIB, "{case}: {allocated} bytes allocated");
    }
}

/// A sink written with `O_DIRECT` is reserved (`fallocate`) before the
/// first write — so that ext4 runs the writes side by side instead of one
/// extending write at a time — and a file system without room says so
/// then, naming the sink at the flow's first byte, and keeps nothing.
/// Needs a tmpfs that does direct I/O (Linux 6.6) and the right to mount
/// it (root).
#[test]
fn a_direct_sink_on_a_full_file_system_fails_at_its_reservation() {
    let test = "a_direct_sink_on_a_full_file_system_fails_at_its_reservation";
    let with_uring = uring_available(test);
    let Some(small) = common::tmpfs("1m", test) else {
        return;
    };
    let probe = small.path().join("probe");
    let direct = OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .map_err(|error| format!("this tmpfs refuses O_DIRECT ({error})"));
    if !common::require_feature(test, direct.map(drop)) {
        return;
    }
    fs::remove_file(&probe).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    write_file(&source, &pattern(4 * MIB, 9));
    for variant in variants(with_uring).into_iter().filter(|v| v.uses_direct()) {
        let case = format!("full {variant:?}");
        let sink = small.path().join("too-big");
        let error = Flow::new(Source::path(&source), Sink::path(&sink))
            .via(variant.mechanism)
            .params(variant.params(256 * KIB))
            .strict(true)
            .run()
            .expect_err("4 MiB do not fit in 1 MiB");
        match &error {
            flexio::Error::Io {
                op, source, offset, ..
            } => {
                assert_eq!(*op, "fallocate", "{case}: {error}");
                assert_eq!(source.raw_os_error(), Some(libc::ENOSPC), "{case}");
                assert_eq!(*offset, Some(0), "{case}: {error}");
            }
            other => panic!("{case}: expected ENOSPC from fallocate, got {other}"),
        }
        assert_eq!(fs::read_dir(small.path()).unwrap().count(), 0, "{case}");
    }
}

/// The engine's descriptors come back without `O_DIRECT`: a duplicate
/// shares the file description, so its flags show what the flow left.
#[test]
fn direct_flag_is_restored_after_the_flow() {
    let with_uring = uring_available("direct_flag_is_restored_after_the_flow");
    let dir = tempfile::tempdir().unwrap();
    let bytes = pattern(MIB + 3, 7);
    let source = dir.path().join("source");
    write_file(&source, &bytes);
    for variant in variants(with_uring).into_iter().filter(|v| v.uses_direct()) {
        let case = format!("flags {variant:?}");
        let sink_path = dir.path().join("sink");
        write_file(&sink_path, &[]);
        let source_file = File::open(&source).unwrap();
        let sink_file = OpenOptions::new().write(true).open(&sink_path).unwrap();
        let source_dup = source_file.try_clone().unwrap();
        let sink_dup = sink_file.try_clone().unwrap();
        let flow = Flow::new(
            Source::Fd(source_file.into(), "source".into()),
            Sink::Fd(sink_file.into(), "sink".into()),
        );
        let report = run_flow(flow, variant, 128 * KIB, &case);
        check_report(&report, variant, bytes.len(), &case);
        for file in [&source_dup, &sink_dup] {
            let flags = rustix::fs::fcntl_getfl(file.as_fd()).unwrap();
            assert!(!flags.contains(OFlags::DIRECT), "{case}: O_DIRECT left on");
        }
        assert!(
            fs::read(&sink_path).unwrap() == bytes,
            "{case}: sink differs"
        );
    }
}

/// tmpfs and overlayfs may or may not do direct I/O (tmpfs does since
/// Linux 6.6): either the bytes move direct, or the report names the
/// fallback to read-write — never a silent switch.
#[test]
fn direct_on_tmpfs_or_overlay_works_or_reports_a_fallback() {
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    const OVERLAYFS_MAGIC: u64 = 0x794c_7630;
    let with_uring = uring_available("direct_on_tmpfs_or_overlay_works_or_reports_a_fallback");
    let candidates = [
        PathBuf::from("/dev/shm"),
        PathBuf::from("/run/user"),
        std::env::temp_dir(),
        PathBuf::from("/"),
    ];
    let mut tried = 0;
    for base in candidates {
        let Ok(stat) = rustix::fs::statfs(&base) else {
            continue;
        };
        let kind = stat.f_type as u64;
        if kind != TMPFS_MAGIC && kind != OVERLAYFS_MAGIC {
            continue;
        }
        let Ok(dir) = tempfile::tempdir_in(&base) else {
            continue;
        };
        tried += 1;
        let bytes = pattern(2 * MIB + 4097, 8);
        let source = dir.path().join("source");
        write_file(&source, &bytes);
        for variant in variants(with_uring).into_iter().filter(|v| v.uses_direct()) {
            let case = format!("{} {variant:?}", base.display());
            let sink = dir.path().join("sink");
            let flow = Flow::new(Source::path(&source), Sink::path(&sink)).offset(1);
            let report = run_flow(flow, variant, 256 * KIB, &case);
            check_report(&report, variant, bytes.len() - 1, &case);
            eprintln!(
                "{case}: used {}, fallbacks {:?}",
                report.mechanism_used, report.fallbacks
            );
            assert!(
                fs::read(&sink).unwrap() == bytes[1..],
                "{case}: sink differs"
            );
        }
    }
    if tried == 0 {
        common::skipped("no writable tmpfs or overlay mount found");
    }
}

/// A file whose filesystem refuses `O_DIRECT` (sysfs: opening it again with
/// `O_DIRECT` gives EINVAL) makes `direct` and `io-uring --direct` fall back
/// to read-write, and the report says where and why.
#[test]
fn refused_o_direct_falls_back_and_says_so() {
    let with_uring = uring_available("refused_o_direct_falls_back_and_says_so");
    let path = Path::new("/sys/devices/system/cpu/possible");
    let Ok(content) = fs::read(path) else {
        common::skipped(&format!("no {}", path.display()));
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for variant in variants(with_uring).into_iter().filter(|v| v.uses_direct()) {
        let case = format!("sysfs {variant:?}");
        let sink = dir.path().join("sink");
        let flow = Flow::new(Source::path(path), Sink::path(&sink)).length(content.len() as u64);
        let report = run_flow(flow, variant, 64 * KIB, &case);
        check_report(&report, variant, content.len(), &case);
        let [fallback] = &report.fallbacks[..] else {
            panic!("{case}: expected one fallback, got {:?}", report.fallbacks);
        };
        assert_eq!(fallback.operation, "open(O_DIRECT)", "{case}");
        assert_eq!(fallback.at_byte, 0, "{case}");
        assert_eq!(fs::read(&sink).unwrap(), content, "{case}: sink differs");
    }
}
