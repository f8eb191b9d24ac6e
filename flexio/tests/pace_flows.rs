//! Pacing on real flows: the rate kept (by the kernel for TCP, by the
//! token bucket otherwise) as the receiver's clock sees it, the burst as
//! the per-call bound for every mechanism, a schedule's pauses, and no
//! pause or wait after a flow's end.
//!
//! Rates are modest and flows short (about a second); bounds are computed
//! from the rate, the burst and the bytes, with room for a loaded machine
//! only on the slow side (a paced flow may run late, never early).

use std::io::Read;
use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

use flexio::pace::{PaceBy, PacedBy, Pacing};
use flexio::{Flow, MechanismName, Report, Sink, Source};

/// What a receiver saw: bytes, and when the first and last arrived.
struct Received {
    bytes: u64,
    /// Bytes the first read returned: they arrived before `first` (how
    /// long before, the receiver cannot tell), so rates leave them out.
    first_bytes: u64,
    first: Instant,
    last: Instant,
}

fn receive(mut stream: impl Read) -> Received {
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    let mut first = None;
    let mut first_bytes = 0;
    let mut last = Instant::now();
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                last = Instant::now();
                if first.is_none() {
                    first = Some(last);
                    first_bytes = n as u64;
                }
                bytes += n as u64;
            }
        }
    }
    Received {
        bytes,
        first_bytes,
        first: first.unwrap_or(last),
        last,
    }
}

fn file_of(dir: &tempfile::TempDir, bytes: usize) -> std::path::PathBuf {
    let path = dir.path().join(format!("source-{bytes}"));
    std::fs::write(
        &path,
        (0..bytes).map(|i| (i % 251) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    path
}

/// Checks a paced flow against the receiver's clock: never faster than
/// the rate allows (`rate × time + what may be queued ahead`: a busy
/// machine only makes a flow slower, so this bound holds however loaded it
/// is), not throttled to half the rate, and the report's achieved rate the
/// one the receiver saw. The last two are generous bounds: a loaded
/// 2-core machine delays the receiver and the sender by tens of
/// milliseconds, never by half of a flow that lasts seconds.
fn check_rate(report: &Report, received: &Received, rate: u64, ahead: u64) {
    let pacing = report
        .pacing
        .as_ref()
        .expect("a paced flow reports its pacing");
    assert_eq!(received.bytes, report.measured.bytes);
    let span = (received.last - received.first).as_secs_f64();
    let counted = received.bytes - received.first_bytes;
    let most = rate as f64 * span + ahead as f64;
    assert!(
        counted as f64 <= most,
        "{counted} bytes in {span:.3} s is faster than {rate} B/s allows (at most {most:.0})"
    );
    let seen = counted as f64 / span;
    assert!(
        seen >= rate as f64 * 0.5,
        "{seen:.0} B/s for a rate of {rate}"
    );
    // The report's accounting: bytes over its own clock, which starts
    // before the first byte and ends with the last call; the receiver's
    // span differs by the bytes that may be ahead of it.
    let achieved = pacing.achieved_bytes_per_s as f64;
    let slack = ahead as f64 / received.bytes as f64 + 0.25;
    assert!(
        (achieved - seen).abs() <= seen * slack,
        "the report says {achieved:.0} B/s, the receiver saw {seen:.0} B/s"
    );
    assert_eq!(pacing.target_bytes_per_s, Some(rate));
}

#[test]
fn a_file_to_tcp_copy_paced_by_the_kernel_keeps_its_rate_by_the_receivers_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (rate, bytes) = (8u64 << 20, 12usize << 20);
    let source = file_of(&dir, bytes);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("tcp://{}", listener.local_addr().unwrap());
    let receiver = std::thread::spawn(move || receive(listener.accept().unwrap().0));
    let pacing = Pacing {
        by: PaceBy::Kernel,
        ..Pacing::parse(Some("8M"), None, None).unwrap()
    };
    let report = Flow::new(Source::path(&source), Sink::parse(&address).unwrap())
        .via(MechanismName::Sendfile)
        .pacing(pacing)
        .run()
        .unwrap();
    let received = receiver.join().unwrap();
    let pacing_report = report.pacing.as_ref().unwrap();
    assert_eq!(pacing_report.paced_by, PacedBy::Kernel, "{report}");
    // The kernel may hold the not-yet-sent low-water mark (a burst) ahead
    // of the sender's clock, the first calls go at once, and TCP sends its
    // initial window (10 segments of up to 64 KiB on loopback) unpaced.
    let burst = pacing.burst_bytes().unwrap();
    check_rate(&report, &received, rate, 3 * burst + 640 * 1024);
}

#[test]
fn a_tcp_sink_is_paced_by_the_token_bucket_unless_the_kernel_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_of(&dir, 4 << 20);
    for (by, rate) in [("bucket", "8M"), ("auto", "16M")] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = format!("tcp://{}", listener.local_addr().unwrap());
        let receiver = std::thread::spawn(move || receive(listener.accept().unwrap().0));
        let pacing = Pacing {
            by: by.parse().unwrap(),
            ..Pacing::parse(Some(rate), None, None).unwrap()
        };
        let report = Flow::new(Source::path(&source), Sink::parse(&address).unwrap())
            .via(MechanismName::Sendfile)
            .pacing(pacing)
            .run()
            .unwrap();
        let received = receiver.join().unwrap();
        assert_eq!(
            report.pacing.as_ref().unwrap().paced_by,
            PacedBy::TokenBucket,
            "{by} {rate}"
        );
        let rate = pacing.rate.unwrap().bytes_per_second();
        check_rate(
            &report,
            &received,
            rate,
            2 * pacing.burst_bytes().unwrap() + (640 << 10),
        );
    }
}

#[test]
fn a_paced_file_to_unix_socket_copy_keeps_its_rate_with_the_token_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let (rate, bytes) = (8u64 << 20, 10usize << 20);
    let source = file_of(&dir, bytes);
    let socket = dir.path().join("socket");
    let listener = UnixListener::bind(&socket).unwrap();
    let receiver = std::thread::spawn(move || receive(listener.accept().unwrap().0));
    let pacing = Pacing::parse(Some("8M"), Some("64K"), None).unwrap();
    let report = Flow::new(
        Source::path(&source),
        Sink::parse(&format!("unix://{}", socket.display())).unwrap(),
    )
    .via(MechanismName::Splice)
    .pacing(pacing)
    .run()
    .unwrap();
    let received = receiver.join().unwrap();
    assert_eq!(
        report.pacing.as_ref().unwrap().paced_by,
        PacedBy::TokenBucket
    );
    // The bucket starts full (a burst at once) and a call may go as soon
    // as it is out of debt (one burst more).
    check_rate(&report, &received, rate, 2 * (64 << 10));
}

#[test]
fn calls_never_move_more_than_the_burst_whatever_the_mechanism() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = 1usize << 20;
    let burst = 48u64 << 10;
    let source = file_of(&dir, bytes);
    for mechanism in [
        MechanismName::ReadWrite,
        MechanismName::Mmap,
        MechanismName::Sendfile,
        MechanismName::Splice,
        MechanismName::CopyFileRange,
        MechanismName::IoUring,
    ] {
        let sink = dir.path().join(format!("sink-{mechanism}"));
        let pacing = Pacing::parse(Some("64M"), Some("48K"), None).unwrap();
        let report = Flow::new(Source::path(&source), Sink::path(&sink))
            .via(mechanism)
            .pacing(pacing)
            .run()
            .unwrap();
        let pacing = report.pacing.as_ref().unwrap();
        assert!(
            pacing.largest_call_bytes <= burst,
            "{mechanism}: a call moved {} bytes, the burst is {burst}",
            pacing.largest_call_bytes
        );
        assert!(
            pacing.calls >= (bytes as u64).div_ceil(burst),
            "{mechanism}: {} calls",
            pacing.calls
        );
        assert_eq!(std::fs::read(&sink).unwrap().len(), bytes, "{mechanism}");
    }
}

#[test]
fn a_schedules_pauses_show_in_time_and_voluntary_context_switches() {
    let dir = tempfile::tempdir().unwrap();
    let source = file_of(&dir, 1 << 20);
    let (chunk, pause) = (64u64 << 10, Duration::from_millis(25));
    let chunks = (1u64 << 20) / chunk;
    let pauses = (chunks - 1) / 4; // after every 4th chunk but the last
    let started = Instant::now();
    let report = Flow::new(Source::path(&source), Sink::path(dir.path().join("sink")))
        .via(MechanismName::ReadWrite)
        .pacing(Pacing::parse(None, Some("64K"), Some("4,25")).unwrap())
        .run()
        .unwrap();
    let elapsed = started.elapsed();
    let pacing = report.pacing.as_ref().unwrap();
    assert_eq!(pacing.paced_by, PacedBy::Schedule);
    assert_eq!(pacing.pauses, pauses, "{report}");
    assert!(elapsed >= pause * pauses as u32, "{elapsed:?}");
    assert!(pacing.waited_ns >= (pause * pauses as u32).as_nanos() as u64);
    // Each pause is a sleep: the process gives up the CPU each time.
    assert!(
        report.context_switches_voluntary >= pauses,
        "{} voluntary switches for {pauses} pauses",
        report.context_switches_voluntary
    );
}

#[test]
fn pacing_stops_at_once_when_the_flow_ends() {
    let dir = tempfile::tempdir().unwrap();
    // 768 KiB at 1 MiB/s with a 256 KiB burst: the full bucket's burst
    // and one more go at once, the third after 250 ms, and nothing is
    // waited after it (the whole 768 KiB "owed" would be 750 ms).
    let source = file_of(&dir, 768 << 10);
    // Each bound where load cannot break it: the flow takes at least the
    // 250 ms (a busy machine only makes it slower), and the pacer's own
    // sleeps stay under what was owed (a busy machine only shortens them:
    // time lost elsewhere refills the bucket).
    let started = Instant::now();
    let report = Flow::new(Source::path(&source), Sink::path(dir.path().join("a")))
        .via(MechanismName::ReadWrite)
        .pacing(Pacing::parse(Some("1M"), Some("256K"), None).unwrap())
        .run()
        .unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(240), "{elapsed:?}");
    let waited = Duration::from_nanos(report.pacing.as_ref().unwrap().waited_ns);
    assert!(waited < Duration::from_millis(600), "{waited:?}: {report}");

    // Two chunks under "2 chunks, then 400 ms": the pause would follow the
    // last chunk, so it is never taken.
    let small = file_of(&dir, 128 << 10);
    let report = Flow::new(Source::path(&small), Sink::path(dir.path().join("b")))
        .via(MechanismName::ReadWrite)
        .pacing(Pacing::parse(None, Some("64K"), Some("2,400")).unwrap())
        .run()
        .unwrap();
    let pacing = report.pacing.as_ref().unwrap();
    assert_eq!((pacing.pauses, pacing.waited_ns), (0, 0), "{report}");

    // A reader that goes away in the middle of a long wait ends the flow
    // then, not when the wait would have ended.
    let socket = dir.path().join("socket");
    let listener = UnixListener::bind(&socket).unwrap();
    let reader = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut first = vec![0u8; 64 << 10];
        stream.read_exact(&mut first).unwrap();
        drop(stream);
        Instant::now()
    });
    let error = Flow::new(
        Source::path(&source),
        Sink::parse(&format!("unix://{}", socket.display())).unwrap(),
    )
    .via(MechanismName::ReadWrite)
    .pacing(Pacing::parse(Some("4K"), Some("64K"), None).unwrap())
    .run()
    .unwrap_err();
    let hung_up = reader.join().unwrap();
    // The next call was 16 s away (64 KiB owed at 4 KiB/s): half of that
    // is a bound no load reaches, and still tells an ended wait from one
    // sat out.
    assert!(
        hung_up.elapsed() < Duration::from_secs(8),
        "the flow ended {:?} after the reader left: {error}",
        hung_up.elapsed()
    );
}

/// One file -> TCP flow over loopback, the receiver draining it on a
/// thread; the report and the bytes received.
fn to_tcp(
    source: &std::path::Path,
    mechanism: MechanismName,
    chunk: usize,
    pacing: Pacing,
) -> (Report, u64) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let receiver = std::thread::spawn(move || receive(listener.accept().unwrap().0).bytes);
    let stream = std::net::TcpStream::connect(address).unwrap();
    let report = Flow::new(
        Source::path(source),
        Sink::Fd(stream.into(), format!("tcp://{address}")),
    )
    .via(mechanism)
    .params(flexio::Params {
        chunk,
        ..flexio::Params::default()
    })
    .pacing(pacing)
    .run()
    .unwrap();
    (report, receiver.join().unwrap())
}

#[test]
fn chunks_are_counted_alike_with_and_without_a_schedule_and_sendfile_keeps_to_its_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, chunk) = (512u64 << 10, 8usize << 10);
    let source = file_of(&dir, bytes as usize);
    let least = bytes / chunk as u64;
    for mechanism in [MechanismName::Sendfile, MechanismName::ReadWrite] {
        // Unpaced: every call asks for at most a chunk, so a socket with
        // room for megabytes still takes 8 KiB a call (Cue's block).
        let (plain, received) = to_tcp(&source, mechanism, chunk, Pacing::default());
        assert_eq!(received, bytes, "{mechanism}");
        assert!(
            plain.chunks >= least,
            "{mechanism}: {} chunks for {least} of 8 KiB: a call moved more than its chunk",
            plain.chunks
        );
        assert!(plain.syscalls >= plain.chunks, "{mechanism}: {plain}");
        // Scheduled (8 chunks, then 1 ms): the pacer's calls are the
        // report's chunks, and as many as without the schedule.
        let schedule = Pacing::parse(None, None, Some("8,1")).unwrap();
        let (paced, received) = to_tcp(&source, mechanism, chunk, schedule);
        assert_eq!(received, bytes, "{mechanism}");
        let pacing = paced.pacing.as_ref().unwrap();
        assert_eq!(pacing.calls, paced.chunks, "{mechanism}: {paced}");
        assert!(pacing.largest_call_bytes <= chunk as u64, "{mechanism}");
        assert!(paced.chunks >= least, "{mechanism}: {}", paced.chunks);
        // A short call (a socket that took less than a chunk) adds one;
        // over loopback with a draining receiver they are few.
        let (a, b) = (plain.chunks as f64, paced.chunks as f64);
        assert!(a.max(b) <= 1.5 * a.min(b), "{mechanism}: {a} against {b}");
    }
}
