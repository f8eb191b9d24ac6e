//! `Flow::idle_timeout` through the library: a pipe whose writer stays
//! silent, or a pipe sink nobody reads, ends the flow with
//! `Error::IdleTimeout` naming the endpoint and its offset, with every
//! mechanism that serves the pair; pauses shorter than the limit do not;
//! and the caller's descriptor is left blocking (the flow used a
//! non-blocking one of its own).

use std::io::Write;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use flexio::{Error, Flow, MechanismName, Sink, Source};
use rustix::fs::OFlags;

const LIMIT: Duration = Duration::from_millis(200);

fn expect_idle(result: flexio::Result<flexio::Report>, endpoint: &str, offset: u64, what: &str) {
    match result {
        Err(Error::IdleTimeout {
            endpoint: named,
            offset: at,
            idle,
        }) => {
            assert_eq!(named, endpoint, "{what}");
            assert_eq!(at, offset, "{what}");
            assert_eq!(idle, LIMIT, "{what}");
        }
        other => panic!("{what}: expected an idle timeout, got {other:?}"),
    }
}

#[test]
fn silent_pipe_writer_ends_the_flow_at_its_offset_with_every_pipe_mechanism() {
    for via in [
        MechanismName::ReadWrite,
        MechanismName::Splice,
        MechanismName::IoUring,
        MechanismName::Direct,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (reader, writer) = rustix::pipe::pipe().unwrap();
        let mut writer = std::fs::File::from(writer);
        writer.write_all(&[3u8; 8192]).unwrap();
        let started = Instant::now();
        let result = Flow::new(
            Source::Fd(reader, "the pipe".into()),
            Sink::path(dir.path().join("out")),
        )
        .via(via)
        .idle_timeout(LIMIT)
        .run();
        let took = started.elapsed();
        expect_idle(result, "the pipe", 8192, via.as_str());
        assert!(took >= LIMIT, "{via}: gave up after {took:?}");
        assert!(took < Duration::from_secs(10), "{via}: {took:?}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{via}: {left:?}");
        drop(writer);
    }
}

#[test]
fn pipe_sink_nobody_reads_ends_the_flow_with_every_mechanism() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("src");
    std::fs::write(&source, vec![1u8; 8 << 20]).unwrap();
    for via in [
        MechanismName::ReadWrite,
        MechanismName::Mmap,
        MechanismName::Sendfile,
        MechanismName::Splice,
        MechanismName::IoUring,
        MechanismName::Direct,
    ] {
        let (reader, writer) = rustix::pipe::pipe().unwrap();
        let result = Flow::new(Source::path(&source), Sink::Fd(writer, "the pipe".into()))
            .via(via)
            .idle_timeout(LIMIT)
            .run();
        match result {
            Err(Error::IdleTimeout {
                endpoint, offset, ..
            }) => {
                assert_eq!(endpoint, "the pipe", "{via}");
                // What the pipe took before it filled up.
                assert!(offset > 0 && offset < 8 << 20, "{via}: {offset}");
            }
            other => panic!("{via}: expected an idle timeout, got {other:?}"),
        }
        drop(reader);
    }
}

#[test]
fn pauses_shorter_than_the_limit_are_not_idleness_and_the_callers_pipe_stays_blocking() {
    let (reader, writer) = rustix::pipe::pipe().unwrap();
    let kept: OwnedFd = rustix::io::dup(&reader).unwrap();
    let feeder = std::thread::spawn(move || {
        let mut writer = std::fs::File::from(writer);
        for _ in 0..4 {
            writer.write_all(&[8u8; 1000]).unwrap();
            std::thread::sleep(LIMIT / 2);
        }
    });
    let mut out = vec![0u8; 4000];
    let report = Flow::new(
        Source::Fd(reader, "the pipe".into()),
        Sink::Memory(&mut out),
    )
    .via(MechanismName::ReadWrite)
    .length(4000)
    .idle_timeout(LIMIT)
    .run()
    .unwrap();
    feeder.join().unwrap();
    assert_eq!(report.measured.bytes, 4000);
    assert_eq!(out, vec![8u8; 4000]);
    let flags = rustix::fs::fcntl_getfl(&kept).unwrap();
    assert!(!flags.contains(OFlags::NONBLOCK), "{flags:?}");
}
