//! The `send-zc` mechanism (zero-copy send with io_uring `SEND_ZC`): every
//! byte of file → TCP over ranges that start and end inside pages and
//! span several map windows; the file's pages still belong to the socket
//! until the flow returns (overwriting the file afterwards never changes
//! what the peer gets); a peer that reads nothing is an idle timeout; and
//! every pair it cannot move is refused, naming those that can. The engine
//! tester (engine_matrix) runs it over its standard cases too; a source
//! truncated under it is in engine_faults.

use crate::common;

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use flexio::{EndpointKind, Error, Flow, MechanismName, Params, Sink, Source};

fn available() -> bool {
    require_feature("zero-copy send", MechanismName::SendZc.available())
}

fn params(chunk: usize) -> Params {
    Params {
        chunk,
        ..Params::default()
    }
}

#[test]
fn file_to_tcp_is_byte_exact_over_pages_and_windows() {
    if !available() {
        return;
    }
    let dir = scratch_dir();
    let mut failures = Vec::new();
    // 20 MiB + 3 spans three 8 MiB map windows.
    for (size, chunk) in [
        (1, 4096),
        (4095, 4096),
        (4097, 4096),
        (3 * 65536 + 17, 65536),
        (20 * MIB + 3, 256 * KIB),
        (20 * MIB + 3, 16 * MIB),
    ] {
        let whole = data(size + 8191, size);
        let path = dir.path().join(format!("source-{size}-{chunk}"));
        write_file(&path, whole);
        for (offset, length) in [(0, size), (4095, size), (4097, size.saturating_sub(5))] {
            let (ours, theirs) = tcp_pair();
            let reader = thread::spawn(move || drain_and_hash(theirs));
            let result = Flow::new(Source::path(&path), Sink::Fd(ours.into(), "tcp".into()))
                .via(MechanismName::SendZc)
                .strict(true)
                .params(params(chunk))
                .offset(offset as u64)
                .length(length as u64)
                .run();
            let (count, hash) = reader.join().unwrap().unwrap();
            let label = format!("{length} bytes at {offset}, chunk {chunk}");
            let expected = &whole[offset..offset + length];
            match result {
                Ok(report) => {
                    if let Err(why) = check_report(&report, MechanismName::SendZc, length as u64) {
                        failures.push(format!("{label}: {why}"));
                    }
                    // One notification per request at least; on loopback
                    // the kernel copies on receive and says so.
                    let requests = length.div_ceil(chunk) as u64;
                    match report.zero_copy {
                        Some(zc)
                            if zc.notifications >= requests && zc.copied <= zc.notifications => {}
                        None if length == 0 => {}
                        other => failures.push(format!("{label}: zero-copy report {other:?}")),
                    }
                }
                Err(e) => failures.push(format!("{label}: {e}")),
            }
            if count != length as u64 || hash != common::hash(expected) {
                failures.push(format!(
                    "{label}: the peer got {count} bytes, not those sent"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The flow returns only after the kernel's notifications: the socket no
/// longer refers to the file's pages, so writing the file afterwards does
/// not change what the peer receives, even though the peer started
/// reading only after the flow returned — its narrow receive buffer kept
/// most bytes waiting in the sender's queue while the flow ran.
#[test]
fn the_peer_gets_the_bytes_of_the_file_as_it_was_sent() {
    if !available() {
        return;
    }
    let dir = scratch_dir();
    let size = 4 * MIB;
    let content = data(size, 7);
    let path = dir.path().join("source");
    write_file(&path, content);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    rustix::net::sockopt::set_socket_recv_buffer_size(&listener, 4096).unwrap();
    let ours = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut theirs, _) = listener.accept().unwrap();
    let reader = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        let mut got = Vec::new();
        theirs.read_to_end(&mut got).map(|_| got)
    });
    let report = Flow::new(Source::path(&path), Sink::Fd(ours.into(), "tcp".into()))
        .via(MechanismName::SendZc)
        .strict(true)
        .run()
        .unwrap();
    assert_eq!(report.measured.bytes, size as u64);
    // The same page-cache pages the socket pointed at while it sent.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&vec![0xee; size], 0).unwrap();
    let got = reader.join().unwrap().unwrap();
    check_bytes("what the peer received", &got, content).unwrap();
}

#[test]
fn a_last_partial_segment_does_not_wait_for_the_peers_delayed_acknowledgement() {
    if !available() {
        return;
    }
    // The flow ends when the kernel lets go of its last pages, that is
    // when the peer acknowledges them. Nagle's algorithm held a last
    // partial segment until the bytes before it were acknowledged, and a
    // peer that delays that acknowledgement held the flow 40 ms or more:
    // about one flow in fifty here (8 of 400), where each takes a
    // millisecond or two, with a peer that reads as fast as it can.
    let dir = scratch_dir();
    let size = MIB + 1000;
    let path = dir.path().join("source");
    write_file(&path, data(size, 5));
    let mut stalled = Vec::new();
    for round in 0..600 {
        let (ours, mut theirs) = tcp_pair();
        let socket = ours.try_clone().unwrap();
        let reader = thread::spawn(move || {
            let mut buffer = vec![0u8; 256 * KIB];
            let mut count = 0;
            loop {
                match theirs.read(&mut buffer)? {
                    0 => return Ok::<_, std::io::Error>(count),
                    n => count += n,
                }
            }
        });
        let started = Instant::now();
        let report = Flow::new(Source::path(&path), Sink::Fd(ours.into(), "tcp".into()))
            .via(MechanismName::SendZc)
            .strict(true)
            .run()
            .unwrap();
        let took = started.elapsed();
        assert_eq!(report.measured.bytes, size as u64);
        // The socket's own setting is put back.
        assert!(!rustix::net::sockopt::tcp_nodelay(&socket).unwrap());
        drop(socket);
        assert_eq!(reader.join().unwrap().unwrap(), size);
        if took >= Duration::from_millis(40) {
            stalled.push(format!("flow {round}: {took:?}"));
        }
    }
    // A busy machine may stall a flow or three by itself.
    assert!(stalled.len() <= 3, "{stalled:?}");
}

#[test]
fn a_peer_that_reads_nothing_is_an_idle_timeout() {
    if !available() {
        return;
    }
    let dir = scratch_dir();
    let path = dir.path().join("source");
    write_file(&path, data(64 * MIB, 9));
    let (ours, theirs) = tcp_pair();
    let started = Instant::now();
    let result = Flow::new(Source::path(&path), Sink::Fd(ours.into(), "tcp".into()))
        .via(MechanismName::SendZc)
        .strict(true)
        .idle_timeout(Duration::from_millis(300))
        .run();
    match result {
        Err(Error::IdleTimeout { offset, .. }) => assert!(offset < 64 * MIB as u64),
        other => panic!("expected an idle timeout, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(20));
    drop(theirs);
}

/// The idle timeout is kept as the other mechanisms keep it: once, not
/// once per request the stalled socket took a little of, and not again
/// while the sender waits for the pages the peer never acknowledged.
#[test]
fn a_peer_that_reads_nothing_stops_the_flow_after_one_idle_timeout() {
    if !available() {
        return;
    }
    let dir = scratch_dir();
    let path = dir.path().join("source");
    write_file(&path, data(64 * MIB, 9));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    rustix::net::sockopt::set_socket_recv_buffer_size(&listener, 4096).unwrap();
    let ours = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (theirs, _) = listener.accept().unwrap();
    let idle = Duration::from_secs(1);
    let started = Instant::now();
    let result = Flow::new(Source::path(&path), Sink::Fd(ours.into(), "tcp".into()))
        .via(MechanismName::SendZc)
        .strict(true)
        .idle_timeout(idle)
        .run();
    let took = started.elapsed();
    match result {
        Err(Error::IdleTimeout { offset, .. }) => assert!(offset < 64 * MIB as u64),
        other => panic!("expected an idle timeout, got {other:?}"),
    }
    // read-write and sendfile take the timeout and a few tenths.
    assert!(
        took < idle + Duration::from_millis(900),
        "gave up after {took:?} for an idle timeout of {idle:?}"
    );
    drop(theirs);
}

/// `--chunk 1` moves a page a request, not a byte: a round trip and a
/// notification per byte made a large file look hung.
#[test]
fn a_one_byte_chunk_sends_a_page_a_request() {
    if !available() {
        return;
    }
    let dir = scratch_dir();
    let size = MIB;
    let path = dir.path().join("source");
    write_file(&path, data(size, 13));
    let (ours, theirs) = tcp_pair();
    let reader = thread::spawn(move || drain_and_hash(theirs));
    let report = Flow::new(Source::path(&path), Sink::Fd(ours.into(), "tcp".into()))
        .via(MechanismName::SendZc)
        .strict(true)
        .params(params(1))
        .idle_timeout(Duration::from_secs(30))
        .run()
        .unwrap();
    let (count, hash) = reader.join().unwrap().unwrap();
    assert_eq!((count, hash), (size as u64, common::hash(data(size, 13))));
    let pages = size.div_ceil(rustix::param::page_size()) as u64;
    assert!(
        report.ring_entries <= pages,
        "{} requests for {pages} pages",
        report.ring_entries
    );
}

#[test]
fn pairs_it_cannot_move_are_refused_naming_those_that_can() {
    use EndpointKind::*;
    let dir = scratch_dir();
    let path = dir.path().join("source");
    write_file(&path, data(4096, 11));
    let cases: Vec<(Source<'_>, Sink<'_>, EndpointKind, EndpointKind)> = vec![
        (
            Source::path(&path),
            Sink::path(dir.path().join("sink")),
            File,
            File,
        ),
        (
            Source::path(&path),
            Sink::Fd(unix_pair().0.into(), "unix".into()),
            File,
            Unix,
        ),
        (
            Source::Fd(tcp_pair().0.into(), "tcp".into()),
            Sink::path(dir.path().join("sink2")),
            Tcp,
            File,
        ),
    ];
    for (source, sink, source_kind, sink_kind) in cases {
        let error = Flow::new(source, sink)
            .via(MechanismName::SendZc)
            .run()
            .expect_err("send-zc serves file -> tcp only");
        assert!(error.is_usage(), "{error}");
        match &error {
            Error::UnsupportedPair {
                mechanism,
                source_kind: s,
                sink_kind: d,
                alternatives,
            } => {
                assert_eq!(*mechanism, MechanismName::SendZc);
                assert_eq!((*s, *d), (source_kind, sink_kind));
                assert!(alternatives.contains(&MechanismName::ReadWrite));
            }
            other => panic!("expected an unsupported pair, got {other:?}"),
        }
        let text = error.to_string();
        assert!(text.starts_with("send-zc cannot move"), "{text}");
    }
}

/// `auto` takes send-zc only from a measured profile that names it for
/// file -> socket, and then only where it can run: the same profile
/// sends a file to a Unix socket by the built-in table, and says why.
#[test]
fn auto_takes_it_from_a_profile_only_where_it_serves() {
    use flexio::profile::{Fingerprint, FlowKind, FlowProfile, Profile, RangeEntry};
    if !available() {
        return;
    }
    let dir = scratch_dir();
    let path = dir.path().join("source");
    let content = data(3 * MIB, 13);
    write_file(&path, content);
    let mut profile = Profile::new(Fingerprint::of_this_machine(dir.path()), dir.path());
    let defaults = Params::default();
    profile.flows.push(FlowProfile {
        kind: FlowKind::FileToSocket,
        ranges: vec![RangeEntry {
            min_bytes: 0,
            max_bytes: None,
            mechanism: MechanismName::SendZc,
            chunk: defaults.chunk,
            queue_depth: defaults.queue_depth,
            pipe_size: defaults.pipe_size,
            direct: false,
            throughput_bytes_per_s: 1_000_000_000,
            spread: 0.0,
            copy_kernel: Default::default(),
            measured_at: vec![1 << 30],
        }],
        curves: Vec::new(),
    });
    let (ours, theirs) = tcp_pair();
    let reader = thread::spawn(move || drain_and_hash(theirs));
    let report = Flow::new(Source::path(&path), Sink::Fd(ours.into(), "tcp".into()))
        .profile(Some(&profile))
        .run()
        .unwrap();
    assert_eq!(report.mechanism_used, MechanismName::SendZc);
    assert_eq!(reader.join().unwrap().unwrap().1, common::hash(content));

    let (ours, theirs) = unix_pair();
    let reader = thread::spawn(move || drain_and_hash(theirs));
    let report = Flow::new(Source::path(&path), Sink::Fd(ours.into(), "unix".into()))
        .profile(Some(&profile))
        .run()
        .unwrap();
    assert_eq!(report.mechanism_used, MechanismName::Sendfile);
    assert!(
        report
            .decided_by
            .contains("names send-zc, which cannot move file -> unix"),
        "{}",
        report.decided_by
    );
    assert_eq!(reader.join().unwrap().unwrap().1, common::hash(content));
}
