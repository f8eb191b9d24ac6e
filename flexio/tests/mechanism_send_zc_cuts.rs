//! `send-zc` flows whose peer stopped reading or went away (issue 39): a
//! failed flow gives back its file mappings and their SIGBUS guard slots
//! when it returns, so cut connections cannot use up the process's 256
//! slots — after which `send-zc` was refused (and `serve --via send-zc`
//! fell back to `sendfile`) for good.

use crate::common;

use std::thread;
use std::time::{Duration, Instant};

use common::*;
use flexio::{Error, Flow, MechanismName, Params, Sink, Source};

fn available() -> bool {
    require_feature("zero-copy send", MechanismName::SendZc.available())
}

/// Mappings of `path` this process holds.
fn mappings_of(path: &std::path::Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let name = path.to_str().unwrap();
    maps.lines().filter(|line| line.ends_with(name)).count()
}

/// A send-zc flow of `path` to a peer that never reads: an idle timeout.
/// The peer is closed only after the flow returned.
fn cut_flow(path: &std::path::Path, idle: Duration) {
    let (ours, theirs) = tcp_pair();
    let result = Flow::new(Source::path(path), Sink::Fd(ours.into(), "tcp".into()))
        .via(MechanismName::SendZc)
        .strict(true)
        .params(Params {
            chunk: 256 << 10,
            ..Params::default()
        })
        .idle_timeout(idle)
        .run();
    match result {
        Err(Error::IdleTimeout { .. }) => {}
        other => panic!("expected an idle timeout, got {other:?}"),
    }
    drop(theirs);
}

#[test]
fn cut_flows_give_back_their_mappings_and_send_zc_stays_usable() {
    if !available() {
        return;
    }
    let dir = scratch_dir();
    let path = dir.path().join("source-of-cut-flows");
    write_file(&path, data(32 * MIB, 3));
    // One alone: back as it returns, and no later than the idle timeout
    // and the cancellation of its request allow.
    let idle = Duration::from_millis(300);
    let started = Instant::now();
    cut_flow(&path, idle);
    let took = started.elapsed();
    assert_eq!(mappings_of(&path), 0, "a cut flow left its mapping");
    assert!(took < idle + Duration::from_millis(1500), "took {took:?}");
    // More flows cut than the process has guard slots (256), a wave of
    // them at a time.
    for _ in 0..5 {
        let wave: Vec<_> = (0..60)
            .map(|_| {
                let path = path.clone();
                thread::spawn(move || cut_flow(&path, idle))
            })
            .collect();
        for flow in wave {
            flow.join().unwrap();
        }
        assert_eq!(mappings_of(&path), 0, "cut flows left their mappings");
    }
    // A flow after them still goes by send-zc (strict: no fallback).
    let (ours, theirs) = tcp_pair();
    let reader = thread::spawn(move || drain_and_hash(theirs));
    let report = Flow::new(Source::path(&path), Sink::Fd(ours.into(), "tcp".into()))
        .via(MechanismName::SendZc)
        .strict(true)
        .run()
        .expect("send-zc after the cut flows");
    check_report(&report, MechanismName::SendZc, 32 * MIB as u64).unwrap();
    let (count, _) = reader.join().unwrap().unwrap();
    assert_eq!(count, 32 * MIB as u64);
    assert_eq!(mappings_of(&path), 0);
}
